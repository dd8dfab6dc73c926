#include <fx/fx.h>
#include <gtest/gtest.h>

#include "../../src/ir/repr.h"

namespace {

TEST(Argument, KindsAreDistinct) {
  EXPECT_TRUE(fx::Argument().is_none());
  EXPECT_TRUE(fx::Argument(true).is<bool>());
  EXPECT_TRUE(fx::Argument(3).is<int64_t>());
  EXPECT_TRUE(fx::Argument(size_t{3}).is<int64_t>());
  EXPECT_TRUE(fx::Argument(3.0f).is<double>());
  EXPECT_TRUE(fx::Argument("s").is<std::string>());
  EXPECT_FALSE(fx::Argument(fx::tuple({1})) == fx::Argument(fx::list({1})));
  EXPECT_EQ(fx::Argument(fx::tuple({1, "a"})), fx::Argument(fx::tuple({1, "a"})));
  EXPECT_EQ(fx::Argument(1).kind_name(), "int");
  EXPECT_EQ(fx::Argument(c10::Device("cpu")).kind_name(), "torch.device");
}

TEST(Argument, WrongKindThrowsFxError) {
  fx::Argument a(1);
  EXPECT_EQ(a.get<int64_t>(), 1);
  try {
    a.get<std::string>();
    FAIL();
  } catch (const fx::Error& e) {
    EXPECT_STREQ(e.what(), "argument is a int, not a str");
  }
  EXPECT_THROW(fx::Argument(static_cast<fx::Node*>(nullptr)), fx::GraphError);
}

TEST(Argument, MapArgVisitsNodesInFxOrder) {
  fx::Graph g;
  fx::Node* a = g.placeholder("a");
  fx::Node* b = g.placeholder("b");
  fx::Argument arg = fx::tuple({a, fx::list({b, fx::dict({{"k", a}})}), fx::slice(b, fx::None)});
  std::vector<std::string> seen;
  fx::for_each_node(arg, [&](fx::Node* n) { seen.push_back(n->name()); });
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "a", "b"}));
  fx::Argument swapped = fx::map_arg(arg, [&](fx::Node* n) -> fx::Argument { return n == a ? b : a; });
  EXPECT_EQ(swapped,
            fx::Argument(fx::tuple({b, fx::list({a, fx::dict({{"k", b}})}), fx::slice(a, fx::None)})));
}

// Expected values are Python 3.11's repr().
TEST(Repr, FloatsLikePython) {
  using fx::detail::repr_float;
  EXPECT_EQ(repr_float(1e-05), "1e-05");
  EXPECT_EQ(repr_float(1e16), "1e+16");
  EXPECT_EQ(repr_float(1e15), "1000000000000000.0");
  EXPECT_EQ(repr_float(0.0001), "0.0001");
  EXPECT_EQ(repr_float(123.456), "123.456");
  EXPECT_EQ(repr_float(-0.0), "-0.0");
  EXPECT_EQ(repr_float(1e100), "1e+100");
  EXPECT_EQ(repr_float(0.1 + 0.2), "0.30000000000000004");
  EXPECT_EQ(repr_float(5e-324), "5e-324");
  EXPECT_EQ(repr_float(1.5e-7), "1.5e-07");
  EXPECT_EQ(repr_float(1180591620717411303424.0), "1.1805916207174113e+21");
  EXPECT_EQ(repr_float(100.0), "100.0");
  EXPECT_EQ(repr_float(12345678901234567.0), "1.2345678901234568e+16");
  EXPECT_EQ(repr_float(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(repr_float(std::nan("")), "nan");
}

TEST(Repr, StringsLikePython) {
  using fx::detail::repr_string;
  EXPECT_EQ(repr_string("abc"), "'abc'");
  EXPECT_EQ(repr_string("a'b"), "\"a'b\"");
  EXPECT_EQ(repr_string("a'b\"c"), "'a\\'b\"c'");
  EXPECT_EQ(repr_string("tab\tnew\nline\\"), "'tab\\tnew\\nline\\\\'");
  EXPECT_EQ(repr_string(std::string("\x01", 1)), "'\\x01'");
}

TEST(Repr, TorchConstants) {
  EXPECT_EQ(fx::detail::repr_dtype(c10::ScalarType::Long), "torch.int64");
  EXPECT_EQ(fx::detail::repr_dtype(c10::ScalarType::BFloat16), "torch.bfloat16");
  EXPECT_EQ(fx::detail::repr_device(c10::Device("cpu")), "device(type='cpu')");
  EXPECT_EQ(fx::detail::str_device(c10::Device("cuda:0")), "cuda:0");
  EXPECT_EQ(fx::detail::repr_layout(c10::Layout::Sparse), "torch.sparse_coo");
  EXPECT_EQ(fx::detail::repr_memory_format(c10::MemoryFormat::Preserve), "torch.preserve_format");
}

TEST(Meta, TypedValuesInInsertionOrder) {
  fx::Meta m;
  m.set("b", 1);
  m.set("a", std::string("x"));
  m.set("b", 2);
  ASSERT_NE(m.get<int>("b"), nullptr);
  EXPECT_EQ(*m.get<int>("b"), 2);
  EXPECT_EQ(m.get<double>("b"), nullptr);  // wrong type
  EXPECT_EQ(m.get<int>("zz"), nullptr);
  EXPECT_EQ(m.begin()->first, "b");
  EXPECT_TRUE(m.erase("b"));
  EXPECT_FALSE(m.contains("b"));
  EXPECT_EQ(m.size(), 1u);
}

}  // namespace
