// fx::capture on plain LibTorch code: a stock torch::nn MLP's training step
// (forward, loss, torch::autograd::grad) becomes one ATen-level graph, which
// prints as make_fx prints, runs, and gives the same loss and gradients.
#include <fx/capture.h>
#include <torch/torch.h>

#include <iostream>

int main() {
  torch::manual_seed(0);
  torch::nn::Sequential mlp(torch::nn::Linear(8, 16), torch::nn::ReLU(), torch::nn::Linear(16, 4));
  auto step = [&](const std::vector<c10::IValue>& in) -> c10::IValue {
    at::Tensor loss = mlp->forward(in[0].toTensor()).pow(2).mean();
    auto grads = torch::autograd::grad({loss}, mlp->parameters());
    return c10::ivalue::Tuple::create({loss, c10::List<at::Tensor>(grads)});
  };
  fx::CaptureOptions options;
  options.input_names = {"x"};
  at::Tensor x = torch::randn({3, 8});
  auto gm = fx::capture(*mlp.ptr(), step, {x}, options);
  std::cout << gm->code() << "\n";

  at::Tensor other = torch::randn({3, 8});
  auto captured = gm->run({other}).toTupleRef().elements();
  auto eager = step({other}).toTupleRef().elements();
  std::cout << "loss, captured graph: " << captured[0].toTensor().item<float>()
            << "\nloss, eager code:     " << eager[0].toTensor().item<float>() << "\n";
}
