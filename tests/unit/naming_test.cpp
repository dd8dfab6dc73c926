// Node names follow torch.fx's _Namespace rules exactly; expected names are
// what torch.fx 2.14 gives for the same sequence of calls.
#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

std::vector<std::string> node_names(const fx::Graph& g) {
  std::vector<std::string> out;
  for (fx::Node* n : g.nodes()) out.push_back(n->name());
  return out;
}

TEST(Naming, RepeatedTargetsCountUp) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("operator.add", {x, 1});
  fx::Node* b = g.call_function("operator.add", {a, 1});
  g.call_function("operator.add", {b, 1});
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"x", "add", "add_1", "add_2"}));
}

TEST(Naming, ExplicitSuffixesAreRespectedAndSkipped) {
  fx::Graph g;
  g.create_node(fx::Op::placeholder, "a", {}, {}, "add_1");
  g.call_function("operator.add", {1, 2});                   // add
  g.call_function("operator.add", {1, 2});                   // add_1 is taken -> add_2
  g.create_node(fx::Op::placeholder, "b", {}, {}, "x_007");  // a legal name is kept as it is (FX 2.x)
  g.create_node(fx::Op::placeholder, "c", {}, {}, "x_7");    // free: x_007 is another name
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"add_1", "add", "add_2", "x_007", "x_7"}));
}

// Nodes named after their target count up from the base's count, however
// it was set: by an explicit suffix, also one beyond 64 bits (Python's ints
// have no limit). The names are torch.fx 2.14's for the same calls.
TEST(Naming, TargetNamesCountUpFromAnExplicitSuffixOfAnySize) {
  fx::Graph g;
  g.placeholder("a");
  g.create_node(fx::Op::placeholder, "b", {}, {}, "add_18446744073709551614");
  for (int i = 0; i < 3; ++i) g.call_function("operator.add", {1, 2});
  g.create_node(fx::Op::placeholder, "c", {}, {}, "mul_5");
  for (int i = 0; i < 2; ++i) g.call_function("operator.mul", {1, 2});
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"a", "add_18446744073709551614", "add",
                                                     "add_18446744073709551615", "add_18446744073709551616",
                                                     "mul_5", "mul", "mul_6"}));
}

// A long target path (59 characters) counts up as a short one does.
TEST(Naming, LongTargetNamesCountUp) {
  fx::Graph g;
  fx::Node* prev = g.placeholder("x");
  const std::string path = "encoder.layers.0.self_attention.out_projection_linear_layer";
  for (int i = 0; i < 3; ++i) prev = g.call_module(path, {prev});
  const std::string base = "encoder_layers_0_self_attention_out_projection_linear_layer";
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"x", base, base + "_1", base + "_2"}));
}

TEST(Naming, SanitizesLikeFx) {
  fx::Graph g;
  g.placeholder("my-input");
  g.placeholder("1st");
  g.call_module("layer1.0.conv", {});
  g.call_module("MyBlock", {});
  g.call_method("__add__", {1});
  g.call_function("torch.ops.aten.addmm.default", {});
  g.create_node(fx::Op::placeholder, "z", {}, {}, "a  b..c");
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"my_input", "_1st", "layer1_0_conv", "my_block", "add",
                                                     "addmm_default", "a_b_c"}));
}

TEST(Naming, AvoidsKeywordsBuiltinsAndFxGlobals) {
  fx::Graph g;
  for (const char* n : {"sum", "max", "input", "list", "class", "lambda", "torch", "device", "inf", "print"})
    g.placeholder(n);
  g.call_function("torch.sum", {1});
  EXPECT_EQ(node_names(g),
            (std::vector<std::string>{"sum_1", "max_1", "input_1", "list_1", "class_1", "lambda_1", "torch_1",
                                      "device_1", "inf_1", "print_1", "sum_2"}));
}

TEST(Naming, TargetHintsThatAreTakenOrIllegalCountUp) {
  // A target's hint is settled once (normal form, legal or not); a taken or
  // illegal one still takes FX's search, from its base's count (torch.fx 2.14
  // prints these names for the same calls).
  fx::Graph g;
  g.placeholder("_0");
  for (const char* t : {"0", "1", "seq.007", "seq.7", "0"}) g.call_module(t, {});
  g.call_function("torch.relu", {});
  g.call_function("torch.relu", {});
  g.call_method("if", {});
  g.call_method("getattr", {});
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"_0", "_0_1", "_1", "seq_007", "seq_7", "_0_2", "relu",
                                                     "relu_1", "if_1", "getattr_1"}));
}

TEST(Naming, ReservingRoomChangesNoName) {
  fx::Graph g;
  fx::Node* prev = g.placeholder("x");
  g.reserve(1000);
  for (int i = 0; i < 3; ++i) prev = g.call_function("operator.add", {prev, 1});
  g.reserve(10);  // room beyond the names taken so far
  g.call_module("0", {prev});
  EXPECT_EQ(node_names(g), (std::vector<std::string>{"x", "add", "add_1", "add_2", "_0"}));
}

TEST(Naming, ManySharedNamesStayLinear) {
  // 200k nodes named `add`: the count per base keeps this linear.
  fx::Graph g;
  fx::Node* prev = g.placeholder("x");
  for (int i = 0; i < 200000; ++i) prev = g.call_function("operator.add", {prev, 1});
  EXPECT_EQ(prev->name(), "add_199999");
}

TEST(Naming, CodegenRenamesNodesThatCollideWithGlobals) {
  fx::Graph g;
  fx::Node* getattr_node = g.placeholder("getattr");  // a builtin: the graph names it getattr_1
  fx::Node* s = g.call_function("math.sqrt", {getattr_node});
  fx::Node* clash = g.create_node(fx::Op::call_function, "torch.relu", {s}, {}, "math_sqrt_1");
  g.output(clash);
  EXPECT_EQ(getattr_node->name(), "getattr_1");
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, getattr):\n    getattr_1 = getattr\n"
            "    sqrt = math_sqrt(getattr_1);  getattr_1 = None\n"
            "    math_sqrt_1 = torch.relu(sqrt);  sqrt = None\n    return math_sqrt_1\n    ");
}

TEST(Naming, SetNameIsExactAndChecked) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.placeholder("y");
  y->set_name("renamed");
  EXPECT_EQ(y->name(), "renamed");
  EXPECT_THROW(y->set_name("x"), fx::GraphError);      // taken
  EXPECT_THROW(y->set_name("class"), fx::GraphError);  // a keyword
  EXPECT_THROW(y->set_name("a-b"), fx::GraphError);    // not an identifier
  EXPECT_THROW(y->set_name(""), fx::GraphError);
  EXPECT_EQ(g.create_node(fx::Op::placeholder, "t", {}, {}, "")->name(), "_unnamed");  // as FX 2.x names it
  EXPECT_EQ(x->name(), "x");
}

// torch.fx lets node.name be a builtin's name; the code renames it (expected
// text printed by torch.fx 2.14 for the same graph, the names assigned to
// node.name). torch.export names placeholders so (`input`, Sequential's).
TEST(Naming, SetNameToABuiltinRenamesItInTheCode) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.call_function("torch.relu", {x});
  g.output(y);
  y->set_name("sum");
  EXPECT_EQ(g.python_code().src, "\n\n\ndef forward(self, x):\n    sum_1 = torch.relu(x);  x = None\n    return sum_1\n    ");
  x->set_name("input");
  EXPECT_EQ(g.to_string(),
            "graph():\n    %input : [num_users=1] = placeholder[target=x]\n"
            "    %sum : [num_users=1] = call_function[target=torch.relu](args = (%input,), kwargs = {})\n"
            "    return sum");
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, x):\n    input_1 = x\n    sum_1 = torch.relu(input_1);  input_1 = None\n"
            "    return sum_1\n    ");
}

// A name set by hand need not be in the form FX's namespace gives: the
// code spells it as torch.fx 2.14 does (expected text printed by it for the
// same graph, the names assigned to node.name): legal ASCII names are kept,
// others sanitized.
TEST(Naming, CodeRespellsNamesSetByHand) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.call_function("operator.add", {x, 1});
  a->set_name("add_007");  // kept: FX 2.x no longer re-prints the suffix
  fx::Node* b = g.call_function("operator.mul", {a, a});
  b->set_name("add_7");
  fx::Node* c = g.call_function("torch.relu", {b});
  c->set_name("caf\u00e9");  // an identifier, but not ASCII
  g.output(c);
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, x):\n    add_007 = x + 1;  x = None\n"
            "    add_7 = add_007 * add_007;  add_007 = None\n    caf_ = torch.relu(add_7);  add_7 = None\n"
            "    return caf_\n    ");
}

// The first and last of each table, the shortest and longest, and names
// one letter off them: the tables are searched behind a filter on the
// first letter and the length.
TEST(Naming, EveryKeywordIsRefusedAndEveryBuiltinRenamedInTheCode) {
  fx::Graph g;
  fx::Node* y = g.placeholder("y");
  g.output(y);
  for (const char* keyword : {"False", "yield", "as", "nonlocal"})
    EXPECT_THROW(y->set_name(keyword), fx::GraphError) << keyword;
  for (const char* builtin : {"ArithmeticError", "zip", "id", "PendingDeprecationWarning", "ConnectionRefusedError",
                              "__build_class__", "__debug__", "NotImplemented", "NotImplementedError", "breakpoint"}) {
    y->set_name(builtin);
    EXPECT_EQ(y->name(), builtin);
    EXPECT_NE(g.python_code().src.find(std::string("    ") + builtin + "_1 = y\n"), std::string::npos) << builtin;
  }
  for (const char* free_name : {"zips", "ids", "yields", "Ass", "PendingDeprecationWarnings", "__build_class",
                                "NotImplementedErro", "break_point"}) {
    y->set_name(free_name);
    EXPECT_EQ(y->name(), free_name);
    EXPECT_NE(g.python_code().src.find(std::string("    ") + free_name + " = y\n"), std::string::npos) << free_name;
  }
}

}  // namespace
