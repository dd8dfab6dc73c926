// fx::replace_pattern, fx::replace_pattern_with_filters and
// fx::passes::SubgraphMatcher, compared with what torch.fx does to the same
// models (subgraph_rewriter_oracle.py writes its answers), and the rewritten
// modules compared numerically with the computation they should now perform.
#include "oracle.h"

#include <fx/fx.h>
#include <fx/models/resnet.h>
#include <fx/passes/subgraph_matcher.h>
#include <fx/subgraph_rewriter.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace {

using fx::kw;
using fx::Pattern;
using fx::Value;

using passes_test::expected;

Value op(const char* fn, Value a) { return fx::call(fn, std::move(a)); }

// A model written as a function (Python's symbolic_trace(f)).
std::shared_ptr<fx::GraphModule> trace(std::vector<fx::Module::Param> params, Pattern::Function fn) {
  return Pattern(std::move(params), std::move(fn)).resolve().traced;
}

void expect_torch_fx_text(const fx::GraphModule& gm, const std::string& name, size_t matches) {
  const auto& e = expected().at(name);
  ASSERT_TRUE(e.is_object()) << name;
  EXPECT_EQ(gm.graph().to_string(), e["graph"].get<std::string>()) << name;
  EXPECT_EQ(gm.code(), e["code"].get<std::string>()) << name;
  EXPECT_EQ(matches, e["matches"].get<size_t>()) << name;
}

void expect_anchors(const std::vector<fx::Match>& matches, const std::string& name) {
  std::vector<std::string> names;
  for (const auto& m : matches) names.push_back(m.anchor->name());
  EXPECT_EQ(names, expected().at(name).at("anchors").get<std::vector<std::string>>()) << name;
}

// gm(inputs) == reference(inputs), run eagerly on the same tensors.
void expect_same_outputs(fx::GraphModule& gm, const Pattern::Function& reference,
                         std::vector<at::Tensor> inputs) {
  std::vector<Value> vin(inputs.begin(), inputs.end());
  Value want = reference(vin);
  Value got = gm.forward(vin);
  std::vector<Value> w = want.is_sequence() || want.is_tuple() ? want.items() : std::vector<Value>{want};
  std::vector<Value> g = got.is_sequence() || got.is_tuple() ? got.items() : std::vector<Value>{got};
  ASSERT_EQ(w.size(), g.size());
  for (size_t i = 0; i < w.size(); ++i) EXPECT_TRUE(torch::allclose(w[i].tensor(), g[i].tensor())) << i;
}

// ---- the cases of torch.fx's test_subgraph_rewriter.py ---------------------

// C++ leaves the order of an operator's operands unspecified: the models
// name their intermediate values so that nodes come in Python's order.
Value neg_plus_relu(Value x) {
  Value n = op("torch.neg", x);
  return n + op("torch.relu", x);
}

TEST(ReplacePattern, SingleMatch) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value val = neg_plus_relu(a[0]);
    return fx::call("torch.add", val, val);
  });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, neg_plus_relu),
                                     Pattern({"x"}, [](Value x) { return op("torch.relu", x); }));
  expect_torch_fx_text(*gm, "single_match", matches.size());
  expect_anchors(matches, "single_match");
  gm->graph().lint();
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        Value r = op("torch.relu", a[0]);
                        return r + r;
                      },
                      {torch::randn({1, 3})});
}

// test_subgraph_rewriter_traced_as_callable: a GraphModule pattern, and here
// a bare Graph replacement (torch.fx 2.x takes Graphs too).
TEST(ReplacePattern, GraphModuleAndGraphPatterns) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value val = neg_plus_relu(a[0]);
    return fx::call("torch.add", val, val);
  });
  auto pattern = trace({"x"}, [](const std::vector<Value>& a) { return neg_plus_relu(a[0]); });
  fx::Graph replacement;
  replacement.output(replacement.call_function("torch.sigmoid", {replacement.placeholder("x")}));
  auto matches = fx::replace_pattern(*gm, *pattern, replacement);
  expect_torch_fx_text(*gm, "traced_as_graph_modules", matches.size());
  EXPECT_EQ(matches.at(0).pattern_graph.get(), &pattern->graph());
  EXPECT_EQ(&matches.at(0).anchor->graph(), &pattern->graph());
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        Value s = op("torch.sigmoid", a[0]);
                        return s + s;
                      },
                      {torch::randn({3, 4})});
}

TEST(ReplacePattern, SamePatternAndReplacementKeepsLogic) {
  SKIP_WITHOUT_ORACLE();
  auto model = [](const std::vector<Value>& a) {
    Value val = neg_plus_relu(a[0]);
    return fx::call("torch.add", val, val);
  };
  auto gm = trace({"x"}, model);
  Pattern p({"x"}, neg_plus_relu);
  auto matches = fx::replace_pattern(*gm, p, p);
  expect_torch_fx_text(*gm, "same_pattern_and_replacement", matches.size());
  expect_same_outputs(*gm, model, {torch::randn({1, 3})});
}

TEST(ReplacePattern, MultipleMatches) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x", "w1", "w2"}, [](const std::vector<Value>& a) {
    Value m1 = fx::call("torch.cat", Value::list({a[1], a[2]})).sum();
    Value m2 = fx::call("torch.cat", Value::list({a[1], a[2]})).sum();
    Value s = a[0] + op("torch.max", m1);
    return s + op("torch.max", m2);
  });
  auto matches = fx::replace_pattern(*gm,
                                     Pattern({"w1", "w2"},
                                             [](Value w1, Value w2) {
                                               return fx::call("torch.cat", Value::list({w1, w2})).sum();
                                             }),
                                     Pattern({"w1", "w2"}, [](Value w1, Value w2) {
                                       return fx::call("torch.stack", Value::list({w1, w2}));
                                     }));
  expect_torch_fx_text(*gm, "multiple_matches", matches.size());
  expect_anchors(matches, "multiple_matches");
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        Value m = fx::call("torch.stack", Value::list({a[1], a[2]}));
                        return a[0] + op("torch.max", m) + op("torch.max", m);
                      },
                      {torch::rand({1, 3}), torch::rand({1, 3}), torch::rand({1, 3})});
}

Value sigmoids(Value x, int n) {
  for (int i = 0; i < n; ++i) x = op("torch.sigmoid", x);
  return x;
}

TEST(ReplacePattern, OverlappingMatchesReplaceTheFirst) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) { return sigmoids(a[0], 4); });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return sigmoids(x, 2); }),
                                     Pattern({"x"}, [](Value x) { return op("torch.neg", x); }));
  expect_torch_fx_text(*gm, "overlapping_matches", matches.size());
  expect_anchors(matches, "overlapping_matches");
  expect_same_outputs(*gm, [](const std::vector<Value>& a) { return op("torch.neg", op("torch.neg", a[0])); },
                      {torch::randn({3, 4})});
}

TEST(ReplacePattern, ConsecutiveMatches) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) { return sigmoids(a[0], 3); });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return op("torch.sigmoid", x); }),
                                     Pattern({"x"}, [](Value x) { return op("torch.exp", x); }));
  expect_torch_fx_text(*gm, "consecutive_matches", matches.size());
  expect_same_outputs(
      *gm,
      [](const std::vector<Value>& a) { return op("torch.exp", op("torch.exp", op("torch.exp", a[0]))); },
      {torch::randn({3, 4})});
}

TEST(ReplacePattern, InternalNodeUsedOutsideIsNotReplaced) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x", "w1", "w2", "b1", "b2"}, [](const std::vector<Value>& a) {
    fx::call("torch.cat", Value::list({a[1], a[2]}));
    Value m1 = fx::call("torch.cat", Value::list({a[1], a[2]}));
    Value m2 = fx::call("torch.cat", Value::list({a[0], a[4]}));
    fx::call("torch.addmm", a[3], m1, m2.t());
    Value t1 = fx::call("torch.sum", a[1], 1);
    Value t2 = fx::call("torch.addmm", a[3], m1, m2.t());
    return Value::tuple({op("torch.sum", t1), op("torch.sum", t2)});
  });
  std::string before = gm->code();
  auto matches = fx::replace_pattern(*gm,
                                     Pattern({"x", "w1", "w2", "b1", "b2"},
                                             [](const std::vector<Value>& a) {
                                               Value m1 = fx::call("torch.cat", Value::list({a[1], a[2]}));
                                               Value m2 = fx::call("torch.cat", Value::list({a[0], a[4]}));
                                               return fx::call("torch.addmm", a[3], m1, m2.t());
                                             }),
                                     Pattern({"x", "w1", "w2", "b1", "b2"}, [](const std::vector<Value>& a) {
                                       return fx::call("torch.cat", Value::list({a[0], a[1], a[2]}));
                                     }));
  EXPECT_TRUE(matches.empty());
  EXPECT_EQ(gm->code(), before);
  expect_torch_fx_text(*gm, "internal_node_escapes", matches.size());
}

TEST(ReplacePattern, CorrectOutputReplacement) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x", "y"}, [](const std::vector<Value>& a) {
    Value n = op("torch.neg", a[1]);
    Value val = n + op("torch.relu", a[0]);
    return fx::call("torch.add", val, val);
  });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return op("torch.relu", x); }),
                                     Pattern({"x"}, [](Value x) { return op("torch.neg", x); }));
  expect_torch_fx_text(*gm, "correct_output_replacement", matches.size());
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        Value val = op("torch.neg", a[1]) + op("torch.neg", a[0]);
                        return val + val;
                      },
                      {torch::randn({4, 4}), torch::randn({4, 4})});
}

TEST(ReplacePattern, ReturnedNodeMayHaveUsersOutsideTheMatch) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value y = op("torch.relu", a[0]);
    return op("torch.neg", y) - y;
  });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return op("torch.relu", x); }),
                                     Pattern({"x"}, [](Value x) { return op("torch.sigmoid", x); }));
  expect_torch_fx_text(*gm, "output_has_other_users", matches.size());
}

TEST(ReplacePattern, MultipleOutputs) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value s = op("torch.sigmoid", a[0]);
    return s + op("torch.relu", a[0]);
  });
  auto matches =
      fx::replace_pattern(*gm,
                          Pattern({"a"},
                                  [](Value a) {
                                    return Value::tuple({op("torch.sigmoid", a), op("torch.relu", a)});
                                  }),
                          Pattern({"x"}, [](Value x) {
                            return Value::tuple({op("torch.exp", x), op("torch.abs", x)});
                          }));
  expect_torch_fx_text(*gm, "multiple_outputs", matches.size());
  expect_same_outputs(
      *gm, [](const std::vector<Value>& a) { return op("torch.exp", a[0]) + op("torch.abs", a[0]); },
      {torch::randn({3, 4})});
}

TEST(ReplacePattern, DuplicatedOutputs) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x1", "x2"}, [](const std::vector<Value>& a) {
    Value x = a[0] - a[1];
    Value s = op("torch.sigmoid", x);
    return s + op("torch.relu", x);
  });
  auto matches =
      fx::replace_pattern(*gm,
                          Pattern({"a1", "a2"},
                                  [](Value a1, Value a2) {
                                    Value a = a1 - a2;
                                    return Value::tuple({op("torch.sigmoid", a), op("torch.relu", a), a});
                                  }),
                          Pattern({"x1", "x2"}, [](Value x1, Value x2) {
                            Value y1 = op("torch.exp", x1);
                            Value y2 = op("torch.abs", x2);
                            return Value::tuple({y2, y2, y1});
                          }));
  expect_torch_fx_text(*gm, "duplicated_outputs", matches.size());
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        Value y2 = op("torch.abs", a[1]);
                        return y2 + y2;
                      },
                      {torch::randn({3, 4}), torch::randn({3, 4})});
}

TEST(ReplacePattern, UnusedArgs) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x", "y", "z"}, [](const std::vector<Value>& a) { return a[0] + a[1]; });
  auto matches = fx::replace_pattern(*gm, Pattern({"x", "y"}, [](Value x, Value y) { return x + y; }),
                                     Pattern({"x", "y"}, [](Value x, Value y) { return x - y; }));
  expect_torch_fx_text(*gm, "unused_args", matches.size());
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::placeholder, "z").size(), 1u);
}

Value dequant_sigmoid_to(Value x, bool method_sigmoid) {
  x = x.call_method("dequantize");
  x = method_sigmoid ? x.sigmoid() : op("torch.sigmoid", x);
  return x.to(c10::kHalf);
}

TEST(ReplacePattern, CallMethodWithIdentityReplacement) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) { return dequant_sigmoid_to(a[0], true); });
  auto matches = fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return dequant_sigmoid_to(x, true); }),
                                     Pattern({"x"}, [](Value x) { return x; }));
  expect_torch_fx_text(*gm, "call_method", matches.size());
  expect_anchors(matches, "call_method");
  at::Tensor x = torch::randn({3, 4});
  EXPECT_TRUE(torch::equal(gm->run({x}).toTensor(), x));
}

TEST(ReplacePattern, PlaceholderMatchesANode) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) { return dequant_sigmoid_to(a[0] + 3, false); });
  auto matches =
      fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return dequant_sigmoid_to(x, false); }),
                          Pattern({"x"}, [](Value x) { return x; }));
  expect_torch_fx_text(*gm, "placeholder_matches_node", matches.size());
  expect_same_outputs(*gm, [](const std::vector<Value>& a) { return a[0] + 3; }, {torch::randn({3, 4})});
}

struct GetAttrAndLiteral : fx::Module {
  at::Tensor w;
  GetAttrAndLiteral() : fx::Module("PlaceholderMatchesGetAttrAndLiteral") {
    w = register_parameter("w", torch::rand({3, 4}));
  }
  Value forward(const std::vector<Value>& in) override {
    Value a = op("torch.relu", in[0] + w);
    Value b = op("torch.relu", in[0] + 3);
    return a * b;
  }
};

TEST(ReplacePattern, PlaceholdersMatchGetAttrAndLiterals) {
  SKIP_WITHOUT_ORACLE();
  GetAttrAndLiteral model;
  auto gm = fx::symbolic_trace(model);
  auto matches =
      fx::replace_pattern(*gm, Pattern({"a", "b"}, [](Value a, Value b) { return op("torch.relu", a + b); }),
                          Pattern({"a", "b"}, [](Value a, Value b) { return op("torch.sigmoid", a - b); }));
  expect_torch_fx_text(*gm, "placeholder_matches_get_attr_and_literal", matches.size());
  ASSERT_EQ(matches.size(), 2u);
  // The second match bound the pattern's `b` to the literal 3.
  const fx::Graph& pg = *matches[1].pattern_graph;
  const fx::Node* b = pg.find_nodes(fx::Op::placeholder, "b").at(0);
  EXPECT_EQ(matches[1].nodes_map.at(b), fx::Argument(3));
  at::Tensor x = torch::randn({3, 4});
  at::Tensor want = torch::sigmoid(x - model.w) * torch::sigmoid(x - 3);
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want));
}

TEST(ReplacePattern, LiteralsMustBeEqual) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value c = fx::call("torch.add", a[0], 2).clamp(kw("min", 0.0));
    Value d = fx::call("torch.add", a[0], 3).clamp(kw("min", 1.0));
    return c + d;
  });
  auto matches = fx::replace_pattern(
      *gm, Pattern({"x"}, [](Value x) { return fx::call("torch.add", x, 2).clamp(kw("min", 0.0)); }),
      Pattern({"x"}, [](Value x) { return fx::call("torch.mul", x, 2); }));
  expect_torch_fx_text(*gm, "literals", matches.size());
  expect_same_outputs(*gm,
                      [](const std::vector<Value>& a) {
                        return fx::call("torch.mul", a[0], 2) +
                               fx::call("torch.add", a[0], 3).clamp(kw("min", 1.0));
                      },
                      {torch::randn({3, 4})});
}

struct SigmoidRelu : fx::Module {
  std::shared_ptr<fx::Module> first;
  std::shared_ptr<fx::nn::ReLU> submod;
  SigmoidRelu(const std::string& type, bool tanh, bool add_one) : fx::Module(type), add_one_(add_one) {
    if (tanh)
      first = register_module("tanh", std::make_shared<fx::nn::Tanh>());
    else
      first = register_module("sigmoid", std::make_shared<fx::nn::Sigmoid>());
    submod = register_module("submod", std::make_shared<fx::nn::ReLU>());
  }
  Value forward(const std::vector<Value>& in) override {
    Value x = add_one_ ? in[0] + 1 : in[0];
    return (*submod)((*first)(x));
  }
  bool add_one_;
};

TEST(ReplacePattern, CallModuleCopiesReplacementSubmodules) {
  SKIP_WITHOUT_ORACLE();
  SigmoidRelu model("M", false, true), pattern("Pattern", false, false),
      replacement("Replacement", true, false);
  auto gm = fx::symbolic_trace(model);
  auto matches = fx::replace_pattern(*gm, pattern, replacement);
  expect_torch_fx_text(*gm, "call_module", matches.size());
  ASSERT_NE(gm->get_submodule("tanh"), nullptr);
  // The GraphModule's own `submod` takes precedence over the replacement's.
  EXPECT_EQ(gm->get_submodule("submod"), model.submod.get());
  at::Tensor x = torch::randn({3, 4});
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), torch::relu(torch::tanh(x + 1))));
}

struct LinearModel : fx::Module {
  std::vector<at::Tensor> w, b;
  explicit LinearModel(int n) : fx::Module("M", {"in0", "in1"}) {
    for (int i = 0; i < n; ++i) {
      w.push_back(register_parameter("w" + std::to_string(i), torch::rand({4, 4})));
      b.push_back(register_parameter("b" + std::to_string(i), torch::rand({4})));
    }
  }
  Value linear(Value x, int i) { return fx::call("torch.nn.functional.linear", x, w[i], kw("bias", b[i])); }
};

struct Kwargs : LinearModel {
  Kwargs() : LinearModel(1) { set_forward_params({"in0"}); }
  Value forward(const std::vector<Value>& in) override { return in[0] * linear(in[0], 0) + in[0]; }
};

TEST(ReplacePattern, NodesWithKwargs) {
  SKIP_WITHOUT_ORACLE();
  Kwargs model;
  auto gm = fx::symbolic_trace(model);
  auto matches = fx::replace_pattern(*gm,
                                     Pattern({"a", "b", "bias"},
                                             [](Value a, Value b, Value bias) {
                                               Value lin = fx::call("torch.nn.functional.linear", a, b,
                                                                    kw("bias", bias));
                                               return Value::tuple({lin, a * lin});
                                             }),
                                     Pattern({"a", "b", "bias"}, [](Value a, Value b, Value bias) {
                                       Value lin = fx::call("torch.matmul", a, b.t()) + bias;
                                       return Value::tuple({lin, fx::call("torch.mul", lin, a)});
                                     }));
  expect_torch_fx_text(*gm, "kwargs", matches.size());
  at::Tensor x = torch::randn({2, 4});
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), model.forward({x}).tensor()));
}

struct LocalRevert : LinearModel {
  LocalRevert() : LinearModel(5) {}
  Value forward(const std::vector<Value>& in) override {
    Value in0 = in[0], in1 = in[1];
    Value l2 = linear(linear(in1, 0), 1);
    Value s1 = in1 * l2 + in1;
    Value l3 = linear(s1, 2);
    Value m2 = l3 * op("torch.sigmoid", l3);
    Value l5 = linear(linear(in0, 3), 4);
    Value s2 = in0 * l5 + in0;
    return fx::call("torch.cat", Value::list({m2, s2}), kw("dim", 1));
  }
};

TEST(ReplacePattern, LocalRevertOfAFailedAnchor) {
  SKIP_WITHOUT_ORACLE();
  LocalRevert model;
  auto gm = fx::symbolic_trace(model);
  auto matches = fx::replace_pattern(
      *gm,
      Pattern({"a", "b", "bias", "c"},
              [](const std::vector<Value>& a) {
                Value lin = fx::call("torch.nn.functional.linear", a[0], a[1], kw("bias", a[2]));
                return Value::tuple({lin, a[3] * lin});
              }),
      Pattern({"a", "b", "bias", "c"}, [](const std::vector<Value>& a) {
        Value lin = fx::call("torch.nn.functional.linear", a[0], a[1], kw("bias", a[2]));
        return Value::tuple({lin, fx::call("torch.mul", lin, a[3])});
      }));
  expect_torch_fx_text(*gm, "local_revert", matches.size());
  expect_anchors(matches, "local_revert");
  at::Tensor x0 = torch::randn({2, 4}), x1 = torch::randn({2, 4});
  EXPECT_TRUE(torch::allclose(gm->run({x0, x1}).toTensor(), model.forward({x0, x1}).tensor()));
}

TEST(ReplacePattern, SecondPassTakesCandidatesInGraphOrder) {
  SKIP_WITHOUT_ORACLE();
  auto gm = trace({"x", "y"}, [](const std::vector<Value>& a) {
    Value a1 = op("torch.relu", a[0]);
    Value a2 = op("torch.relu", a[1]);
    Value u2 = a2 * 2;
    Value u1 = a1 * 3;
    return u1 + u2;
  });
  Pattern relu({"x"}, [](Value x) { return op("torch.relu", x); });
  Pattern neg({"x"}, [](Value x) { return op("torch.neg", x); });
  Pattern tanh({"x"}, [](Value x) { return op("torch.tanh", x); });
  size_t n = fx::replace_pattern(*gm, relu, neg).size();
  n += fx::replace_pattern(*gm, neg, tanh).size();
  expect_torch_fx_text(*gm, "second_pass_graph_order", n);
}

// torch.fx 2.x's test_replacement_with_attrs (1.13 fails on it: its
// _replace_submodules looks tensors up as submodules). The replacement's
// tensor attribute `c` is copied into the GraphModule; `b` stays its own.
struct Attrs : fx::Module {
  std::vector<std::string> names;
  Attrs(std::string type, std::vector<std::pair<std::string, int64_t>> attrs, bool sub_b)
      : fx::Module(std::move(type)), sub_b_(sub_b) {
    for (auto& [name, v] : attrs) {
      register_attribute(name, torch::tensor({v}));
      names.push_back(name);
    }
  }
  Value forward(const std::vector<Value>& in) override {
    const auto& t = attributes();
    if (names.size() == 2) return in[0] + t[0].second - t[1].second;  // M: x + a - b
    return sub_b_ ? in[0] - t[0].second : in[0] + t[0].second;
  }
  bool sub_b_;
};

TEST(ReplacePattern, ReplacementTensorAttributesAreCopied) {
  Attrs model("M", {{"a", 1}, {"b", 2}}, false), pattern("Pattern", {{"a", 1}}, false),
      replacement("Replacement", {{"c", 3}}, true);
  auto gm = fx::symbolic_trace(model);
  auto matches = fx::replace_pattern(*gm, pattern, replacement);
  EXPECT_EQ(matches.size(), 1u);
  EXPECT_TRUE(gm->has_attribute("c"));
  EXPECT_TRUE(torch::equal(gm->get_tensor("c"), torch::tensor({3})));
  EXPECT_NE(gm->get_tensor("c").data_ptr(), replacement.attributes()[0].second.data_ptr());
  at::Tensor x = torch::tensor({10});
  EXPECT_TRUE(torch::equal(gm->run({x}).toTensor(), torch::tensor({10 - 3 - 2})));
}

// ---- replace_pattern_with_filters (torch.fx 2.x) ---------------------------

Value binary_op_scalar_relu(const std::vector<Value>& a) {
  Value x = a[0].call_method("dequantize");
  x = fx::call("torch.add", x, a[1]).relu();
  return fx::call("torch.quantize_per_tensor", x, a[2], a[3], c10::kQUInt8);
}

std::shared_ptr<fx::GraphModule> quantized() {
  return trace({"x", "scale", "zero_point"}, [](const std::vector<Value>& a) {
    Value x = binary_op_scalar_relu({a[0], 2, a[1], a[2]});
    Value y = x + 1;
    return binary_op_scalar_relu({x, y, a[1], a[2]});
  });
}

void expect_filtered(const std::string& name, const std::vector<fx::MatchFilter>& filters,
                     bool ignore_literals, const std::shared_ptr<fx::GraphModule>& gm, const Pattern& p,
                     const Pattern& r) {
  auto replaced = fx::replace_pattern_with_filters(*gm, p, r, filters, ignore_literals);
  expect_torch_fx_text(*gm, name, replaced.size());
  std::vector<std::vector<std::string>> names;
  for (const auto& rp : replaced) {
    names.emplace_back();
    for (const fx::Node* n : rp.replacements) names.back().push_back(n->name());
  }
  EXPECT_EQ(names, expected().at(name).at("replacements").get<std::vector<std::vector<std::string>>>()) << name;
}

TEST(ReplacePatternWithFilters, Filters) {
  SKIP_WITHOUT_ORACLE();
  std::vector<fx::Module::Param> params = {"x", "num", "scale", "zero_point"};
  Pattern pattern(params, binary_op_scalar_relu);
  Pattern replacement(params, [](const std::vector<Value>& a) { return fx::call("torch.mul", a[0], a[1]); });
  expect_filtered("filters_none", {}, false, quantized(), pattern, replacement);
  fx::MatchFilter second_input_is_scalar = [](const fx::passes::InternalMatch& m, const fx::Graph&,
                                              const fx::Graph&) {
    const fx::Argument& num = m.placeholder_nodes.at(1);
    return num.is<int64_t>() || num.is<double>();
  };
  expect_filtered("filters_scalar", {second_input_is_scalar}, false, quantized(), pattern, replacement);
}

TEST(ReplacePatternWithFilters, IgnoreLiterals) {
  SKIP_WITHOUT_ORACLE();
  auto model = [](const std::vector<Value>& a) {
    Value r = fx::call("torch.add", a[0], 2).relu();
    return r - fx::call("torch.add", a[0], 5).relu();
  };
  Pattern pattern({"x"}, [](Value x) { return fx::call("torch.add", x, 1).relu(); });
  Pattern replacement({"x"}, [](Value x) { return fx::call("torch.nn.functional.gelu", x); });
  expect_filtered("ignore_literals_off", {}, false, trace({"x"}, model), pattern, replacement);
  expect_filtered("ignore_literals_on", {}, true, trace({"x"}, model), pattern, replacement);
}

// ---- SubgraphMatcher and its options ---------------------------------------

std::string value_name(const fx::Argument& a) {
  if (a.is_node()) return a.node()->name();
  return std::to_string(a.get<int64_t>());
}

void expect_matcher(const std::string& name, Pattern::Function pattern_fn,
                    std::vector<fx::Module::Param> params, fx::passes::SubgraphMatcherOptions options) {
  auto gm = trace({"x", "y"}, [](const std::vector<Value>& a) {
    return op("torch.relu", op("torch.relu", op("torch.relu", a[0]))) + a[1];
  });
  auto pattern = trace(std::move(params), std::move(pattern_fn));
  fx::passes::SubgraphMatcher matcher(pattern->graph(), options);
  nlohmann::json got = nlohmann::json::array();
  for (const auto& m : matcher.match(gm->graph())) {
    std::vector<std::vector<std::string>> nodes_map;
    for (const auto& [pn, gn] : m.nodes_map) nodes_map.push_back({pn->name(), value_name(gn)});
    std::sort(nodes_map.begin(), nodes_map.end());
    std::vector<std::string> placeholders, returning;
    for (const auto& a : m.placeholder_nodes) placeholders.push_back(value_name(a));
    for (const auto* n : m.returning_nodes) returning.push_back(n->name());
    got.push_back(
        {{"nodes_map", nodes_map}, {"placeholder_nodes", placeholders}, {"returning_nodes", returning}});
  }
  EXPECT_EQ(got, expected().at(name).at("matches")) << name;
}

TEST(SubgraphMatcher, Options) {
  SKIP_WITHOUT_ORACLE();
  auto relu_relu = [](const std::vector<Value>& a) { return op("torch.relu", op("torch.relu", a[0])); };
  auto relu_add = [](const std::vector<Value>& a) { return op("torch.relu", a[0]) + a[1]; };
  auto relu = [](const std::vector<Value>& a) { return op("torch.relu", a[0]); };
  expect_matcher("matcher_default", relu_relu, {"x"}, {});
  expect_matcher("matcher_keep_overlapping", relu_relu, {"x"}, {false, false, false, false});
  expect_matcher("matcher_match_output", relu_add, {"x", "y"}, {true, false, true, false});
  expect_matcher("matcher_match_output_no_match", relu, {"x"}, {true, false, true, false});
  expect_matcher("matcher_match_placeholder", relu, {"x"}, {false, true, true, false});
}

// ---- a corpus model, and scale ------------------------------------------------

struct ReluModule : fx::Module {
  std::shared_ptr<fx::nn::ReLU> relu;
  ReluModule() : fx::Module("Pattern") {
    relu = register_module("relu", std::make_shared<fx::nn::ReLU>(true));
  }
  Value forward(const std::vector<Value>& in) override { return (*relu)(in[0]); }
};

TEST(ReplacePattern, Resnet18StaysNumericallyEqual) {
  torch::manual_seed(0);
  auto model = fx::models::resnet18();
  model->eval();
  auto gm = fx::symbolic_trace(*model);
  at::Tensor x = torch::randn({1, 3, 64, 64});
  at::Tensor want = gm->run({x}).toTensor();

  // The residual `out += identity` (operator.add) as torch.add, and the
  // stem's ReLU module (call_module `relu`) as torch.relu.
  auto adds =
      fx::replace_pattern(*gm, Pattern({"x", "y"}, [](Value a, Value b) { return a + b; }),
                          Pattern({"x", "y"}, [](Value a, Value b) { return fx::call("torch.add", a, b); }));
  EXPECT_EQ(adds.size(), 8u);
  ReluModule relu;
  auto relus = fx::replace_pattern(*gm, relu, Pattern({"x"}, [](Value a) { return op("torch.relu", a); }));
  EXPECT_EQ(relus.size(), 1u);
  gm->graph().lint();
  EXPECT_TRUE(gm->graph().find_nodes(fx::Op::call_function, "operator.add").empty());
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_function, "torch.add").size(), 8u);
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_module, "relu").size(), 0u);
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want, 1e-5, 1e-6));
}

// A 20k-node chain, 10k matches: where a per-match scan of the graph (FX's
// first-user search and cycle check) would be quadratic and recurse 20k
// deep (the timing is bench/passes_bench.cpp's).
TEST(ReplacePattern, LongChain) {
  constexpr int n = 20000;
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    Value x = a[0];
    for (int i = 0; i < n / 2; ++i) x = op("torch.relu", op("torch.sigmoid", x));
    return x;
  });
  auto matches = fx::replace_pattern(
      *gm, Pattern({"x"}, [](Value x) { return op("torch.relu", op("torch.sigmoid", x)); }),
      Pattern({"x"}, [](Value x) { return op("torch.tanh", x); }));
  EXPECT_EQ(matches.size(), static_cast<size_t>(n / 2));
  EXPECT_EQ(gm->graph().size(), static_cast<size_t>(n / 2 + 2));
  at::Tensor x = torch::randn({3});
  at::Tensor want = x;
  for (int i = 0; i < n / 2; ++i) want = torch::tanh(want);
  EXPECT_TRUE(torch::allclose(gm->run({x}).toTensor(), want));
}

// A multi-anchor pattern on a wide graph: later anchors' candidates are the
// users of what the first anchor matched, not every node of their kind.
TEST(SubgraphMatcher, MultiAnchorPatternOnAWideGraph) {
  constexpr int n = 5000;
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    std::vector<Value> outs;
    for (int i = 0; i < n; ++i) {
      Value y = a[0] * i;
      Value s = op("torch.sigmoid", y);
      outs.push_back(s + op("torch.relu", y));
    }
    return Value::tuple(outs);
  });
  auto pattern = trace({"a"}, [](const std::vector<Value>& a) {
    Value s = op("torch.sigmoid", a[0]);
    return Value::tuple({s, op("torch.relu", a[0])});
  });
  auto matches = fx::passes::SubgraphMatcher(pattern->graph()).match(gm->graph());
  ASSERT_EQ(matches.size(), static_cast<size_t>(n));
  EXPECT_EQ(matches[7].placeholder_nodes[0].node()->name(), "mul_7");
}

// ---- bad input ----------------------------------------------------------------

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "(no fx::Error)";
}

TEST(ReplacePattern, BadInputThrowsBeforeChangingAnything) {
  auto gm = trace({"x"}, [](const std::vector<Value>& a) { return op("torch.relu", a[0]) + 1; });
  std::string before = gm->code();
  Pattern relu({"x"}, [](Value x) { return op("torch.relu", x); });

  fx::Graph no_output;
  no_output.call_function("torch.relu", {no_output.placeholder("x")});
  EXPECT_NE(error_of([&] { fx::passes::SubgraphMatcher m(no_output); }).find("no output node"),
            std::string::npos);
  EXPECT_NE(error_of([&] { fx::replace_pattern(*gm, no_output, relu); }).find("no output node"),
            std::string::npos);

  fx::Graph empty;
  EXPECT_NE(error_of([&] { fx::passes::SubgraphMatcher m(empty); }).find("empty"), std::string::npos);

  fx::Graph dead;
  fx::Node* x = dead.placeholder("x");
  dead.call_function("torch.neg", {x});
  dead.output(dead.call_function("torch.relu", {x}));
  EXPECT_NE(error_of([&] { fx::passes::SubgraphMatcher m(dead); }).find("'neg' has no users"),
            std::string::npos);

  std::string unused = error_of([&] {
    fx::replace_pattern(*gm, Pattern({"x", "y"}, [](Value a, Value) { return op("torch.relu", a); }), relu);
  });
  EXPECT_NE(unused.find("pattern node 'y' has no users"), std::string::npos) << unused;

  std::string inputs = error_of([&] {
    fx::replace_pattern(*gm, relu, Pattern({"x", "y"}, [](Value a, Value b) { return a + b; }));
  });
  EXPECT_NE(inputs.find("takes 2 input(s) but the pattern takes 1"), std::string::npos) << inputs;

  std::string outputs = error_of([&] {
    fx::replace_pattern(*gm, relu, Pattern({"x"}, [](Value a) { return Value::tuple({a, a}); }));
  });
  EXPECT_NE(outputs.find("returns 2 value(s) but the pattern returns 1"), std::string::npos) << outputs;

  std::string literal =
      error_of([&] { fx::replace_pattern(*gm, relu, Pattern({"x"}, [](Value) { return Value(1); })); });
  EXPECT_NE(literal.find("not a node"), std::string::npos) << literal;

  std::string arity = error_of([&] { Pattern p({"x", "y"}, [](Value a) { return a; }); });
  EXPECT_NE(arity.find("takes 1 fx::Value(s) but 2 parameter name(s)"), std::string::npos) << arity;

  std::string filter =
      error_of([&] { fx::replace_pattern_with_filters(*gm, relu, relu, {fx::MatchFilter()}); });
  EXPECT_NE(filter.find("match filter 0 is empty"), std::string::npos) << filter;

  EXPECT_NE(error_of([&] {
              fx::Graph rep;
              fx::Node* p = rep.placeholder("x");
              rep.output(rep.call_function("operator.add", {p, rep.get_attr("missing")}));
              fx::replace_pattern(*gm, relu, rep);
            }).find("refers to 'missing'"),
            std::string::npos);

  EXPECT_EQ(gm->code(), before);
  gm->graph().lint();
}

TEST(ReplacePattern, CapturedTensorsOfGraphModuleAndReplacementDoNotMix) {
  at::Tensor mine = torch::full({3}, 2.0), theirs = torch::full({3}, 5.0);
  auto gm = trace({"x"}, [mine](const std::vector<Value>& a) { return op("torch.relu", a[0] * mine); });
  ASSERT_TRUE(gm->has_attribute("_tensor_constant0"));
  std::string before = gm->code();
  Pattern relu({"x"}, [](Value x) { return op("torch.relu", x); });
  std::string e = error_of([&] {
    fx::replace_pattern(*gm, relu,
                        Pattern({"x"}, [theirs](Value x) { return op("torch.sigmoid", x + theirs); }));
  });
  EXPECT_NE(e.find("constant '_tensor_constant0'"), std::string::npos) << e;
  EXPECT_EQ(gm->code(), before);

  // Without a clash, the replacement's constant is copied in.
  auto plain = trace({"x"}, [](const std::vector<Value>& a) { return op("torch.relu", a[0]); });
  fx::replace_pattern(*plain, relu,
                      Pattern({"x"}, [theirs](Value x) { return op("torch.sigmoid", x + theirs); }));
  at::Tensor x = torch::randn({3});
  EXPECT_TRUE(torch::allclose(plain->run({x}).toTensor(), torch::sigmoid(x + theirs)));
}

TEST(ReplacePattern, DeadMatchIsAnError) {
  auto gm = trace({"x"}, [](const std::vector<Value>& a) {
    op("torch.relu", a[0]);  // dead: nothing uses it
    return a[0] + 1;
  });
  std::string before = gm->code();
  std::string e = error_of([&] {
    fx::replace_pattern(*gm, Pattern({"x"}, [](Value x) { return op("torch.relu", x); }),
                        Pattern({"x"}, [](Value x) { return op("torch.neg", x); }));
  });
  EXPECT_NE(e.find("eliminate_dead_code"), std::string::npos) << e;
  EXPECT_EQ(gm->code(), before);
}

}  // namespace
