#!/usr/bin/env python3
"""torch.fx 2.14's answers for tests/passes/subgraph_rewriter_test.cpp.

Each REWRITES case is a model, a pattern and a replacement (most ported from
pytorch's test/fx/test_subgraph_rewriter.py); the oracle runs
torch.fx.replace_pattern on symbolic_trace(model) and records the graph text,
the code and the number of matches. The FILTERED cases run torch.fx 2.x's
replace_pattern_with_filters as ported below (the port dates from the 1.13
oracle, which lacked it) on 2.14's matcher. The MATCHER cases run 2.14's
SubgraphMatcher with its options and record every match as (pattern node,
matched value) names. Writes JSON to argv[1].
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'conformance'))

try:
    import torch
    import torch.fx
    from torch.fx import subgraph_rewriter
    from torch.fx.passes.utils.matcher_utils import SubgraphMatcher
except ImportError:
    print('torch is not importable; skipping', file=sys.stderr)
    sys.exit(77)

import normalizations  # noqa: E402

F = torch.nn.functional


# ---- replace_pattern cases -------------------------------------------------

class SingleMatch(torch.nn.Module):
    def forward(self, x):
        val = torch.neg(x) + torch.relu(x)
        return torch.add(val, val)


def neg_plus_relu(x):
    return torch.neg(x) + torch.relu(x)


def relu(x):
    return torch.relu(x)


class MultipleMatch(torch.nn.Module):
    def forward(self, x, w1, w2):
        m1 = torch.cat([w1, w2]).sum()
        m2 = torch.cat([w1, w2]).sum()
        return x + torch.max(m1) + torch.max(m2)


def cat_sum(w1, w2):
    return torch.cat([w1, w2]).sum()


def stack(w1, w2):
    return torch.stack([w1, w2])


def sigmoid4(x):
    x = torch.sigmoid(x)
    x = torch.sigmoid(x)
    x = torch.sigmoid(x)
    return torch.sigmoid(x)


def sigmoid3(x):
    x = torch.sigmoid(x)
    x = torch.sigmoid(x)
    return torch.sigmoid(x)


def sigmoid_sigmoid(x):
    x = torch.sigmoid(x)
    x = torch.sigmoid(x)
    return x


def neg(x):
    return torch.neg(x)


def sigmoid(x):
    return torch.sigmoid(x)


def exp(x):
    return torch.exp(x)


class InternalEscapes(torch.nn.Module):
    def forward(self, x, w1, w2, b1, b2):
        m0 = torch.cat([w1, w2])  # noqa: F841
        m1 = torch.cat([w1, w2])
        m2 = torch.cat([x, b2])
        t0 = torch.addmm(b1, m1, m2.t())  # noqa: F841
        t1 = torch.sum(w1, 1)
        t2 = torch.addmm(b1, m1, m2.t())
        return torch.sum(t1), torch.sum(t2)


def cat_addmm(x, w1, w2, b1, b2):
    m1 = torch.cat([w1, w2])
    m2 = torch.cat([x, b2])
    return torch.addmm(b1, m1, m2.t())


def cat3(x, w1, w2, b1, b2):
    return torch.cat([x, w1, w2])


class CorrectOutput(torch.nn.Module):
    def forward(self, x, y):
        val = torch.neg(y) + torch.relu(x)
        return torch.add(val, val)


class OutputHasOtherUsers(torch.nn.Module):
    def forward(self, x):
        y = torch.relu(x)
        return torch.neg(y) - y


def sigmoid_plus_relu(x):
    y = torch.sigmoid(x)
    z = torch.relu(x)
    return y + z


def sigmoid_and_relu(a):
    b = torch.sigmoid(a)
    c = torch.relu(a)
    return b, c


def exp_and_abs(x):
    return torch.exp(x), torch.abs(x)


def sub_sigmoid_relu(x1, x2):
    x = x1 - x2
    y = torch.sigmoid(x)
    z = torch.relu(x)
    return y + z


def sub_pattern(a1, a2):
    a = a1 - a2
    b = torch.sigmoid(a)
    c = torch.relu(a)
    return b, c, a


def duplicated_replacement(x1, x2):
    y1 = torch.exp(x1)
    y2 = torch.abs(x2)
    return y2, y2, y1


class UnusedArgs(torch.nn.Module):
    def forward(self, x, y, z):
        return x + y


def add(x, y):
    return x + y


def sub(x, y):
    return x - y


class CallMethod(torch.nn.Module):
    def forward(self, x):
        x = x.dequantize()
        x = x.sigmoid()
        x = x.to(torch.float16)
        return x


def dequant_sigmoid_to(x):
    x = x.dequantize()
    x = x.sigmoid()
    x = x.to(torch.float16)
    return x


def identity(x):
    return x


class PlaceholderMatchesNode(torch.nn.Module):
    def forward(self, x):
        x = x + 3
        x = x.dequantize()
        x = torch.sigmoid(x)
        return x.to(torch.float16)


def dequant_fn_sigmoid_to(x):
    x = x.dequantize()
    x = torch.sigmoid(x)
    x = x.to(torch.float16)
    return x


class PlaceholderMatchesGetAttrAndLiteral(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.rand(3, 4))

    def forward(self, x):
        a = torch.relu(x + self.w)
        b = torch.relu(x + 3)
        return a * b


def add_relu(a, b):
    return torch.relu(a + b)


def sigmoid_sub(a, b):
    return torch.sigmoid(a - b)


class Literals(torch.nn.Module):
    def forward(self, x):
        a = torch.add(x, 2)
        b = torch.add(x, 3)
        c = a.clamp(min=0.0)
        d = b.clamp(min=1.0)
        return c + d


def add2_clamp(x):
    return torch.add(x, 2).clamp(min=0.0)


def mul2(x):
    return torch.mul(x, 2)


class Submodules(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sigmoid = torch.nn.Sigmoid()
        self.submod = torch.nn.ReLU()

    def forward(self, x):
        x = x + 1
        return self.submod(self.sigmoid(x))


class SubmodulesPattern(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.sigmoid = torch.nn.Sigmoid()
        self.submod = torch.nn.ReLU()

    def forward(self, x):
        return self.submod(self.sigmoid(x))


class SubmodulesReplacement(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.tanh = torch.nn.Tanh()
        self.submod = torch.nn.ReLU()

    def forward(self, x):
        return self.submod(self.tanh(x))


class Kwargs(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.w0 = torch.nn.Parameter(torch.rand(4, 4))
        self.b0 = torch.nn.Parameter(torch.rand(4))

    def forward(self, in0):
        lin_res = F.linear(in0, self.w0, bias=self.b0)
        mul_res = in0 * lin_res
        sum_res = mul_res + in0
        return sum_res


def linear_mul(a, b, bias):
    lin_res = F.linear(a, b, bias=bias)
    mul_res = a * lin_res
    return lin_res, mul_res


def matmul_mul(a, b, bias):
    lin_res = torch.matmul(a, b.t()) + bias
    return lin_res, torch.mul(lin_res, a)


class LocalRevert(torch.nn.Module):
    def __init__(self):
        super().__init__()
        for i in range(5):
            setattr(self, f'w{i}', torch.nn.Parameter(torch.rand(4, 4)))
            setattr(self, f'b{i}', torch.nn.Parameter(torch.rand(4)))

    def forward(self, in0, in1):
        lin_res_1 = F.linear(in1, self.w0, bias=self.b0)
        lin_res_2 = F.linear(lin_res_1, self.w1, bias=self.b1)
        mul_res_1 = in1 * lin_res_2
        sum_res_1 = mul_res_1 + in1
        lin_res_3 = F.linear(sum_res_1, self.w2, bias=self.b2)
        sigmoid_res_1 = torch.sigmoid(lin_res_3)
        mul_res_2 = lin_res_3 * sigmoid_res_1
        lin_res_4 = F.linear(in0, self.w3, bias=self.b3)
        lin_res_5 = F.linear(lin_res_4, self.w4, bias=self.b4)
        mul_res_3 = in0 * lin_res_5
        sum_res_2 = mul_res_3 + in0
        return torch.cat([mul_res_2, sum_res_2], dim=1)


def linear_mul_with_c(a, b, bias, c):
    lin_res = F.linear(a, b, bias=bias)
    mul_res = c * lin_res
    return lin_res, mul_res


def linear_mul_with_c_replacement(a, b, bias, c):
    lin_res = F.linear(a, b, bias=bias)
    return lin_res, torch.mul(lin_res, c)


def traced(fn):
    return lambda: torch.fx.symbolic_trace(fn)


# name: (model, pattern, replacement)
REWRITES = {
    'traced_as_graph_modules': (SingleMatch, traced(neg_plus_relu), traced(sigmoid)),
    'single_match': (SingleMatch, neg_plus_relu, relu),
    'same_pattern_and_replacement': (SingleMatch, neg_plus_relu, neg_plus_relu),
    'multiple_matches': (MultipleMatch, cat_sum, stack),
    'overlapping_matches': (lambda: sigmoid4, sigmoid_sigmoid, neg),
    'consecutive_matches': (lambda: sigmoid3, sigmoid, exp),
    'internal_node_escapes': (InternalEscapes, cat_addmm, cat3),
    'correct_output_replacement': (CorrectOutput, relu, neg),
    'output_has_other_users': (OutputHasOtherUsers, relu, sigmoid),
    'multiple_outputs': (lambda: sigmoid_plus_relu, sigmoid_and_relu, exp_and_abs),
    'duplicated_outputs': (lambda: sub_sigmoid_relu, sub_pattern, duplicated_replacement),
    'unused_args': (UnusedArgs, add, sub),
    'call_method': (CallMethod, dequant_sigmoid_to, identity),
    'placeholder_matches_node': (PlaceholderMatchesNode, dequant_fn_sigmoid_to, identity),
    'placeholder_matches_get_attr_and_literal': (PlaceholderMatchesGetAttrAndLiteral, add_relu, sigmoid_sub),
    'literals': (Literals, add2_clamp, mul2),
    'call_module': (Submodules, SubmodulesPattern, SubmodulesReplacement),
    'kwargs': (Kwargs, linear_mul, matmul_mul),
    'local_revert': (LocalRevert, linear_mul_with_c, linear_mul_with_c_replacement),
}


class TwoUsersOutOfOrder(torch.nn.Module):
    def forward(self, x, y):
        a1 = torch.relu(x)
        a2 = torch.relu(y)
        u2 = a2 * 2
        u1 = a1 * 3
        return u1 + u2


def tanh(x):
    return torch.tanh(x)


# name: (model, [(pattern, replacement), ...]) applied in turn. The first pass
# inserts its second replacement before its first, so the second pass must
# take candidates in graph order, not in the order nodes were created.
SEQUENTIAL = {
    'second_pass_graph_order': (TwoUsersOutOfOrder, [(relu, neg), (neg, tanh)]),
}


# ---- torch.fx 2.x's replace_pattern_with_filters, ported --------------------

class LiteralsMatcher(SubgraphMatcher):
    """The matcher with 2.x's ignore_literals: a literal of the pattern matches any value.

    2.14's matcher reads self.ignore_literals itself; it never calls the
    _match_args below (its own is local to _match_nodes)."""

    def __init__(self, pattern, ignore_literals):
        super().__init__(pattern, match_output=False, match_placeholder=False, remove_overlapping_matches=True)
        self.ignore_literals = ignore_literals

    def _match_args(self, pn, gn, match):
        return super()._match_args(pn, gn, match) or (self.ignore_literals and not isinstance(pn, torch.fx.Node))


def replace_pattern_with_filters(gm, pattern, replacement, match_filters, ignore_literals=False):
    """torch/fx/subgraph_rewriter.py's _replace_pattern of torch 2.x (functions only)."""
    graph = gm.graph
    pattern_graph = torch.fx.symbolic_trace(pattern).graph
    replacement_graph = torch.fx.symbolic_trace(replacement).graph
    matches = LiteralsMatcher(pattern_graph, ignore_literals).match(graph)
    matches = [m for m in matches if all(f(m, graph, pattern_graph) for f in match_filters)]
    replacement_placeholders = [n for n in replacement_graph.nodes if n.op == 'placeholder']
    changed = {}
    out = []
    for match in matches:
        val_map = {}
        for i, (rn, gn) in enumerate(zip(replacement_placeholders, match.placeholder_nodes)):
            val_map[rn] = changed.get(gn, gn) if isinstance(gn, torch.fx.Node) else gn
            if val_map[rn] is not gn:  # 2.x points the match at the node that replaced gn
                match.placeholder_nodes[i] = val_map[rn]
                match.nodes_map[[n for n in pattern_graph.nodes if n.op == 'placeholder'][i]] = val_map[rn]
        users = {u for n in match.returning_nodes for u in n.users}
        first_user = next(n for n in graph.nodes if n in users)
        with graph.inserting_before(first_user):
            copied = graph.graph_copy(replacement_graph, val_map)
        if isinstance(copied, torch.fx.Node):
            copied = (copied,)
        replacements = [v for v in val_map.values() if v not in match.placeholder_nodes]
        for gn, c in zip(match.returning_nodes, copied):
            gn.replace_all_uses_with(c)
            changed[gn] = c
        for node in reversed(pattern_graph.nodes):
            if node.op not in ('placeholder', 'output'):
                graph.erase_node(match.nodes_map[node])
        out.append([n.name for n in replacements])
    gm.recompile()
    return out


class Quantized(torch.nn.Module):
    def forward(self, x, scale, zero_point):
        x = x.dequantize()
        x = torch.add(x, 2)
        x = x.relu()
        x = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
        y = x + 1
        x = x.dequantize()
        x = torch.add(x, y)
        x = x.relu()
        x = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
        return x


def binary_op_scalar_relu(x, num, scale, zero_point):
    x = x.dequantize()
    x = torch.add(x, num)
    x = x.relu()
    x = torch.quantize_per_tensor(x, scale, zero_point, torch.quint8)
    return x


def binary_op_scalar_relu_replacement(x, num, scale, zero_point):
    return torch.mul(x, num)


def second_input_is_scalar(match, original_graph, pattern_graph):
    num = [n for n in pattern_graph.nodes if n.op == 'placeholder'][1]
    return isinstance(match.nodes_map[num], (int, float))


class IgnoreLiterals(torch.nn.Module):
    def forward(self, x):
        a = torch.add(x, 2).relu()
        b = torch.add(x, 5).relu()
        return a - b


def add1_relu(x):
    return torch.add(x, 1).relu()


def gelu(x):
    return F.gelu(x)


# name: (model, pattern, replacement, filters, ignore_literals)
FILTERED = {
    'filters_none': (Quantized, binary_op_scalar_relu, binary_op_scalar_relu_replacement, [], False),
    'filters_scalar': (Quantized, binary_op_scalar_relu, binary_op_scalar_relu_replacement,
                       [second_input_is_scalar], False),
    'ignore_literals_off': (IgnoreLiterals, add1_relu, gelu, [], False),
    'ignore_literals_on': (IgnoreLiterals, add1_relu, gelu, [], True),
}


# ---- SubgraphMatcher options ----------------------------------------------

class Chain(torch.nn.Module):
    def forward(self, x, y):
        a = torch.relu(x)
        b = torch.relu(a)
        c = torch.relu(b)
        return c + y


def relu_relu(x):
    return torch.relu(torch.relu(x))


def relu_add(x, y):
    return torch.relu(x) + y


def relu_of_input(x):
    return torch.relu(x)


# name: (model, pattern, match_output, match_placeholder, remove_overlapping_matches)
MATCHER = {
    'matcher_default': (Chain, relu_relu, False, False, True),
    'matcher_keep_overlapping': (Chain, relu_relu, False, False, False),
    'matcher_match_output': (Chain, relu_add, True, False, True),
    'matcher_match_output_no_match': (Chain, relu_of_input, True, False, True),
    'matcher_match_placeholder': (Chain, relu_of_input, False, True, True),
}


def value_name(v):
    return v.name if isinstance(v, torch.fx.Node) else repr(v)


def main():
    pairs = normalizations.normalizations(normalizations.functional_targets())

    def norm(text):
        return normalizations.apply(text, pairs)

    out = {}
    for name, (model, pattern, replacement) in REWRITES.items():
        torch.manual_seed(0)
        gm = torch.fx.symbolic_trace(model())
        p = pattern() if isinstance(pattern, type) or pattern.__name__ == '<lambda>' else pattern
        r = replacement() if isinstance(replacement, type) or replacement.__name__ == '<lambda>' else replacement
        matches = subgraph_rewriter.replace_pattern(gm, p, r)
        gm.graph.lint()
        out[name] = {'graph': norm(str(gm.graph)), 'code': norm(gm.code), 'matches': len(matches),
                     'anchors': [m.anchor.name for m in matches],
                     'submodules': sorted(n for n, _ in gm.named_children())}
    for name, (model, passes) in SEQUENTIAL.items():
        gm = torch.fx.symbolic_trace(model())
        counts = [len(subgraph_rewriter.replace_pattern(gm, p, r)) for p, r in passes]
        out[name] = {'graph': norm(str(gm.graph)), 'code': norm(gm.code), 'matches': sum(counts)}
    for name, (model, pattern, replacement, filters, ignore) in FILTERED.items():
        gm = torch.fx.symbolic_trace(model())
        replacements = replace_pattern_with_filters(gm, pattern, replacement, filters, ignore)
        out[name] = {'graph': norm(str(gm.graph)), 'code': norm(gm.code), 'matches': len(replacements),
                     'replacements': replacements}
    for name, (model, pattern, match_output, match_placeholder, remove_overlapping) in MATCHER.items():
        graph = torch.fx.symbolic_trace(model()).graph
        matcher = SubgraphMatcher(torch.fx.symbolic_trace(pattern).graph, match_output, match_placeholder,
                                  remove_overlapping)
        out[name] = {'matches': [{'nodes_map': sorted([pn.name, value_name(gn)] for pn, gn in m.nodes_map.items()),
                                  'placeholder_nodes': [value_name(v) for v in m.placeholder_nodes],
                                  'returning_nodes': [v.name for v in m.returning_nodes]}
                                 for m in matcher.match(graph)]}
    with open(sys.argv[1], 'w') as f:
        json.dump(out, f, indent=1, sort_keys=True)


if __name__ == '__main__':
    main()
