// concrete_args: specializing forward parameters, compared with torch.fx 2.14
// tracing the Python originals in models.py with the same concrete_args.
#include "models.h"

#include <fx/fx.h>
#include <fx/tracer.h>
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <fstream>
#include <nlohmann/json.hpp>

namespace {

using fxcpp_test::expected;
using fx::Value;

// models.py: Specialized
struct Specialized : fx::Module {
  Specialized() : fx::Module("Specialized", {"x", {"flag", true}, {"bias", fx::None}, {"n", 2}}) {}
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0];
    if (in[1]) x = x.relu();
    if (!in[2].is_none()) x = x + in[2];
    return x * in[3];
  }
};

// models.py: Paired
struct Paired : fx::Module {
  Paired() : fx::Module("Paired", {"x", "flag", "pair"}) {}
  Value forward(const std::vector<Value>& in) override {
    Value x = in[0];
    if (in[1]) x = x.relu();
    const Value& pair = in[2];
    return Value::tuple({x + pair[0], Value::list({x * pair[1], x})});
  }
};

// models.py: Routed
struct Routed : fx::Module {
  Routed() : fx::Module("Routed", {"x", "feats"}) {}
  Value forward(const std::vector<Value>& in) override {
    const Value& x = in[0];
    const Value& feats = in[1];
    return Value::dict({{"sum", x + feats["a"]}, {"parts", Value::list({feats["b"] * x, feats["a"]})}});
  }
};

std::unique_ptr<fx::GraphModule> expect_same_trace(fx::Module& m, const std::string& name,
                                                   const fx::ConcreteArgs& concrete_args) {
  auto gm = fx::symbolic_trace(m, concrete_args);
  if (expected().is_null()) return gm;
  EXPECT_EQ(gm->graph().to_string(), expected().at(name).at("graph").get<std::string>()) << name;
  EXPECT_EQ(gm->code(), expected().at(name).at("code").get<std::string>()) << name;
  return gm;
}

TEST(ConcreteArgs, SpecializedValuesAreAssertedInputs) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  Specialized m;
  auto gm = expect_same_trace(m, "specialized_flags", {{"flag", false}, {"bias", fx::None}, {"n", 3}});
  expect_same_trace(m, "specialized_float", {{"flag", true}, {"n", 2.5}});

  at::Tensor x = torch::randn({2, 3});
  // The specialized values are checked when the module runs, as in torch.fx.
  EXPECT_TRUE(gm->run({x, false, c10::IValue(), 3}).toTensor().equal(x * 3));
  // The placeholders keep forward's defaults, which flag's specialization refuses.
  EXPECT_THROW(gm->run({x}), fx::Error);
  try {
    gm->run({x, true, c10::IValue(), 3});
    FAIL() << "no assertion";
  } catch (const fx::Error& e) {
    EXPECT_NE(
        std::string(e.what()).find("flag has been specialized to have value False but got another value"),
        std::string::npos)
        << e.what();
  }
  try {
    gm->run({x, false, x, 3});
    FAIL() << "no assertion";
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("bias has been specialized to have value None"), std::string::npos)
        << e.what();
  }
}

TEST(ConcreteArgs, StructuresAreFlattenedIntoPlaceholders) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  Paired m;
  auto gm =
      expect_same_trace(m, "paired_ph", {{"flag", false}, {"pair", fx::ConcreteArg::list({fx::PH, fx::PH})}});
  expect_same_trace(m, "paired_mixed", {{"flag", true}, {"pair", fx::ConcreteArg::tuple({fx::PH, 2.0})}});

  // The module takes the structure; the graph its leaves.
  ASSERT_TRUE(gm->graph().pytree_info().has_value());
  at::Tensor x = torch::randn({2, 3}), a = torch::randn({2, 3}), b = torch::randn({2, 3});
  Value out = (*gm)(x, false, Value::list({a, b}));
  ASSERT_TRUE(out.is_tuple());
  std::vector<Value> items = out.items();
  ASSERT_EQ(items.size(), 2u);
  EXPECT_TRUE(items[0].tensor().equal(x + a));
  ASSERT_TRUE(items[1].is_list());
  std::vector<Value> inner = items[1].items();
  ASSERT_EQ(inner.size(), 2u);
  EXPECT_TRUE(inner[0].tensor().equal(x * b));
  EXPECT_TRUE(inner[1].tensor().equal(x));

  // Arguments of another structure are refused with a message, not misread.
  EXPECT_THROW((*gm)(x, false, Value::list({a})), fx::Error);
  EXPECT_THROW((*gm)(x, false, a), fx::Error);
}

TEST(ConcreteArgs, DictsAreFlattenedInTheirKeysOrder) {
  if (expected().is_null()) GTEST_SKIP() << "the torch.fx oracle did not run";
  Routed m;
  // feats_1 is b, feats_2 is a: the order of the keys given, as pytree's.
  auto gm = expect_same_trace(m, "routed_dict", {{"feats", fx::ConcreteArg::dict({{"b", fx::PH}, {"a", fx::PH}})}});
  const auto& info = gm->graph().pytree_info();
  ASSERT_TRUE(info && info->out_spec);
  EXPECT_EQ(info->out_spec->kind, fx::TreeSpec::Kind::dict);
  EXPECT_EQ(info->out_spec->keys, (std::vector<std::string>{"sum", "parts"}));

  at::Tensor x = torch::randn({2, 3}), a = torch::randn({2, 3}), b = torch::randn({2, 3});
  // The dict's values are read by key (tree_flatten_spec): another order, or
  // one more key, reads the same values.
  for (const Value& feats : {Value::dict({{"b", b}, {"a", a}}), Value::dict({{"a", a}, {"c", x}, {"b", b}})}) {
    Value out = (*gm)(x, feats);
    ASSERT_TRUE(out.is_dict());
    EXPECT_EQ(out.keys(), (std::vector<std::string>{"sum", "parts"}));
    EXPECT_TRUE(out["sum"].tensor().equal(x + a));
    EXPECT_TRUE(out["parts"][0].tensor().equal(b * x));
    EXPECT_TRUE(out["parts"][1].tensor().equal(a));
  }
  // A missing key, or a list for the dict, is an error that names the argument.
  for (const Value& feats : {Value::dict({{"a", a}}), Value::list({a, b})}) {
    try {
      (*gm)(x, feats);
      FAIL() << "no error";
    } catch (const fx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("Routed.forward: feats"), std::string::npos) << e.what();
    }
  }
}

TEST(ConcreteArgs, ValueDictsAreStructuresToo) {
  Routed m;
  auto gm = fx::symbolic_trace(m, {{"feats", Value::dict({{"a", 2.0}, {"b", 3.0}})}});
  // Two specialized leaves: two asserts, and the values as constants.
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_function, fx::Target("torch._assert")).size(), 2u);
  at::Tensor x = torch::randn({2});
  Value out = (*gm)(x, Value::dict({{"a", 2.0}, {"b", 3.0}}));
  EXPECT_TRUE(out["sum"].tensor().equal(x + 2.0));
  EXPECT_TRUE(out["parts"][0].tensor().equal(3.0 * x));
  EXPECT_THROW((*gm)(x, Value::dict({{"a", 2.0}, {"b", 4.0}})), fx::Error);
}

TEST(ConcreteArgs, ValueListsAreStructuresToo) {
  Paired m;
  auto gm = fx::symbolic_trace(m, {{"flag", false}, {"pair", Value::list({1.5, 2.5})}});
  // Two specialized leaves: two asserts, then x + 1.5 and x * 2.5 with constants.
  EXPECT_EQ(gm->graph().find_nodes(fx::Op::call_function, fx::Target("torch._assert")).size(), 3u);
  at::Tensor x = torch::randn({2});
  Value out = (*gm)(x, false, Value::list({1.5, 2.5}));
  EXPECT_TRUE(out.items()[0].tensor().equal(x + 1.5));
  EXPECT_THROW((*gm)(x, false, Value::list({1.5, 3.0})), fx::Error);
}

TEST(ConcreteArgs, UnknownParameterIsATraceError) {
  Specialized m;
  try {
    fx::symbolic_trace(m, {{"flags", false}});
    FAIL() << "no TraceError";
  } catch (const fx::TraceError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("'flags'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Specialized.forward(x, flag, bias, n)"), std::string::npos) << msg;
  }
}

TEST(ConcreteArgs, WithoutThemControlFlowOnAnInputFails) {
  Specialized m;
  EXPECT_THROW(fx::symbolic_trace(m), fx::TraceError);
}

}  // namespace
