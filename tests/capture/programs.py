"""The Python originals of the programs tests/capture/capture_test.cpp
captures in C++: make_fx(fn)(*inputs) for each is the oracle. Every program
is deterministic in shape (weights are random; graph text does not depend on
them). Each entry: name -> (root module or None, function, example inputs)."""
import torch
import torch.nn as nn
import torchvision.models as tvm


def training_step(m, output=lambda y: y):
    """forward, the sum of the output as the loss, and the gradients of the
    parameters (what the C++ side's loss_and_grads does)."""
    def step(x):
        loss = output(m(x)).sum()
        return loss, list(torch.autograd.grad(loss, list(m.parameters())))
    return step


def functional():
    def f(x, y):
        z = torch.add(x, y, alpha=2)
        w = torch.cat([z, x], 1).softmax(-1)
        return w * y.sum(), [z.view(-1), torch.tanh(z).transpose(0, 1)]
    return None, f, (torch.randn(2, 3), torch.randn(2, 3))


def mlp():
    return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 4))


def mlp_forward():
    m = mlp()
    return m, lambda x: m(x), (torch.randn(3, 8),)


def mlp_grad():
    m = mlp()
    return m, training_step(m), (torch.randn(3, 8),)


def resnet18_eval():
    m = tvm.resnet18().eval()
    return m, lambda x: m(x), (torch.randn(1, 3, 64, 64),)


def resnet18_grad():
    m = tvm.resnet18().train()
    return m, training_step(m), (torch.randn(2, 3, 64, 64),)


def mobilenet_v2_eval():
    m = tvm.mobilenet_v2().eval()
    return m, lambda x: m(x), (torch.randn(1, 3, 64, 64),)


def mobilenet_v2_grad():
    m = tvm.mobilenet_v2().train()
    return m, training_step(m), (torch.randn(2, 3, 32, 32),)


def encoder_layer_eval():
    m = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True).eval()
    return m, lambda x: m(x), (torch.randn(2, 5, 16),)


def encoder_layer_grad():
    m = nn.TransformerEncoderLayer(16, 4, dim_feedforward=32, dropout=0.0, batch_first=True).train()
    return m, training_step(m), (torch.randn(2, 5, 16),)


def lstm_grad():
    m = nn.LSTM(8, 16, num_layers=1, batch_first=True)
    return m, training_step(m, lambda y: y[0]), (torch.randn(2, 5, 8),)


def lstm_forward():
    m = nn.LSTM(8, 16, num_layers=1, batch_first=True)
    return m, lambda x: m(x)[0], (torch.randn(2, 5, 8),)


# In-place updates of views: make_fx(functionalize(f)) is the oracle.
def update_through_select():
    def f(x):
        y = x * 2
        y.select(0, 0).add_(1)
        return y
    return None, f, (torch.randn(4, 3),)


def update_input_through_view():
    def f(x):
        x.view(-1).mul_(2)
        return x + 1
    return None, f, (torch.randn(4, 3),)


def view_after_base_update():
    def f(x):
        y = x * 1
        y.add_(1)
        z = y[0]
        y.mul_(3)
        return z
    return None, f, (torch.randn(4, 3),)


def split_and_nested_views():
    def f(x):
        y = x.clone()
        p, q = y.split(2)
        q.zero_()
        y.unsqueeze(0).squeeze(0).mul_(2)
        return y
    return None, f, (torch.randn(4, 3),)


def read_updated_view():
    def f(x):
        y = x.clone()
        a = y[0]
        a.add_(1)
        return a * 2, y
    return None, f, (torch.randn(4, 3),)


def output_alias_of_updated_base():
    def f(x):
        y = x.clone()
        a = y.transpose(0, 1)
        a[1:].add_(1)
        return y, a
    return None, f, (torch.randn(4, 3),)


def cond_one_output():
    """torch.cond with a data-dependent predicate (fx::cond in C++)."""
    def f(x):
        return torch.cond(x.sum() > 0, lambda x: x.sin(), lambda x: x.cos() + 1, (x,))
    return None, f, (torch.randn(3, 4),)


def cond_two_outputs():
    def f(x, y):
        a, b = torch.cond(x.mean() < y.mean(), lambda x, y: (x + y, x * y), lambda x, y: (x - y, x / y), (x, y))
        return a.relu(), b
    return None, f, (torch.randn(3, 4), torch.randn(3, 4))


def while_loop_counter():
    """torch.while_loop (fx::while_loop in C++): double x until the counter reaches 5."""
    from torch._higher_order_ops.while_loop import while_loop

    def f(x, y):
        n, z = while_loop(lambda i, v: i < 5, lambda i, v: (i + 1, v * 2), (x, y))
        return n, z.sum()
    return None, f, (torch.tensor(0), torch.randn(3))


def dynamic_batch():
    """A dynamic batch (dimension 0 of x): the batch read as a size, and
    SymInt arithmetic on it. (The weight is an input: make_fx's symbolic
    mode leaves an unused alias node after an addmm of a real weight.)"""
    def f(x, w):
        b = x.size(0)
        h = torch.nn.functional.linear(x, w).view(b, 2, 4)
        z = torch.tanh(h.reshape(b * 2, 4))
        return z, torch.ops.aten.slice.Tensor(x, 0, 0, b - 1), x.unsqueeze(0).expand(3, b, 16)
    return None, f, (torch.randn(6, 16), torch.randn(8, 16))


def dynamic_conv_flatten():
    """Dynamic batch, height and width: the sizes after a strided convolution
    are read from the convolution's result."""
    conv = nn.Conv2d(3, 4, 3, stride=2)

    def f(x):
        c = conv(x)
        B, C, H, W = c.shape
        return c.view(B, C, H * W).transpose(1, 2)
    return conv, f, (torch.randn(2, 3, 9, 11),)


def dynamic_two_dims():
    """Two dynamic dimensions: their product and a quotient."""
    def f(y):
        t = y.size(1)
        return y.reshape(y.size(0) * t), torch.ops.aten.slice.Tensor(y, 1, 0, t // 2)
    return None, f, (torch.randn(4, 6),)


# Captured with make_fx(tracing_mode="symbolic"); the C++ side marks the
# dimensions the docstrings name dynamic.
DYNAMIC = [dynamic_batch, dynamic_conv_flatten, dynamic_two_dims]

CONTROL_FLOW = [cond_one_output, cond_two_outputs, while_loop_counter]

FUNCTIONALIZED = [update_through_select, update_input_through_view, view_after_base_update,
                  split_and_nested_views, read_updated_view, output_alias_of_updated_base]

PROGRAMS = {f.__name__: f for f in [functional, mlp_forward, mlp_grad, resnet18_eval, resnet18_grad,
                                    mobilenet_v2_eval, mobilenet_v2_grad, encoder_layer_eval, encoder_layer_grad,
                                    lstm_forward, lstm_grad] + FUNCTIONALIZED + CONTROL_FLOW + DYNAMIC}
