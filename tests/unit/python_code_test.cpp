// python_code(): statements torch.fx generates. Expected texts are what
// torch.fx 2.14 prints for the same graphs.
#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

TEST(PythonCode, OperatorsMethodsModulesAndAttributes) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* y = g.placeholder("y", fx::Argument(fx::None));
  fx::Node* w = g.get_attr("layers.0.weight");
  fx::Node* m = g.call_module("layers.0", {x});
  fx::Node* neg = g.call_function("operator.neg", {m});
  fx::Node* mm = g.call_function("operator.matmul", {neg, w});
  fx::Node* v = g.call_method("view", {mm, -1}, {{"dtype", c10::ScalarType::Float}});
  fx::Node* ga = g.call_function("builtins.getattr", {v, "not-an-identifier"});
  fx::Node* ga3 = g.call_function("builtins.getattr", {v, "shape", fx::None});
  fx::Node* cat = g.call_function("torch.cat", {fx::list({v, ga, ga3})}, {{"dim", 1}});
  g.output(fx::tuple({cat, y}));
  EXPECT_EQ(g.python_code().src, R"(


def forward(self, x, y = None):
    layers_0_weight = getattr(self.layers, "0").weight
    layers_0 = getattr(self.layers, "0")(x);  x = None
    neg = -layers_0;  layers_0 = None
    matmul = neg @ layers_0_weight;  neg = layers_0_weight = None
    view = matmul.view(-1, dtype = torch.float32);  matmul = None
    getattr_1 = getattr(view, 'not-an-identifier')
    getattr_2 = getattr(view, 'shape', None)
    cat = torch.cat([view, getattr_1, getattr_2], dim = 1);  view = getattr_1 = getattr_2 = None
    return (cat, y)
    )");
}

TEST(PythonCode, WrappedFunctionsAndTypes) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x", std::nullopt, "torch.Tensor");
  fx::Node* f = g.call_function("my_lib.ops.fused_gelu", {x}, {}, "torch.Tensor");
  f->meta().set("is_wrapped", true);
  fx::Node* n = g.call_function("builtins.len", {f}, {}, "int");
  g.output(fx::list({f, n}), "typing.List[torch.Tensor]");
  EXPECT_EQ(g.python_code().src, R"(
torch.fx._symbolic_trace.wrap("my_lib_ops_fused_gelu")

def forward(self, x : torch.Tensor) -> typing_List[torch.Tensor]:
    fused_gelu : torch.Tensor = my_lib_ops_fused_gelu(x);  x = None
    len_1 : int = len(fused_gelu)
    return [fused_gelu, len_1]
    )");
}

// A global takes the name of a node emitted before it and is renamed; a node
// named like a global emitted before it is renamed, and so is the node whose
// name the renamed one took.
TEST(PythonCode, NodesAndGlobalsShareOneNamespaceInEmissionOrder) {
  fx::Graph g;
  const fx::Op call = fx::Op::call_function;
  fx::Node* x = g.placeholder("x");
  fx::Node* a = g.create_node(call, "torch.relu", {x}, {}, "mymod_foo");
  fx::Node* b = g.create_node(call, "mymod.foo", {a});
  fx::Node* c = g.create_node(call, "torch.relu", {b}, {}, "mymod_foo_1");
  fx::Node* d = g.create_node(call, "mymod.foo", {c});
  fx::Node* e = g.create_node(call, "torch.relu", {d}, {}, "mymod_foo_2");
  fx::Node* f = g.create_node(call, "builtins.getattr", {e, "shape"}, {}, "getattr_1");
  g.output(fx::tuple({e, f, a}));
  std::vector<std::string> names;
  for (fx::Node* n : g.nodes()) names.push_back(n->name());
  EXPECT_EQ(names, (std::vector<std::string>{"x", "mymod_foo", "foo", "mymod_foo_1", "foo_1", "mymod_foo_2",
                                             "getattr_1", "output"}));
  const std::string expected = R"(


def forward(self, x):
    mymod_foo = torch.relu(x);  x = None
    foo = mymod_foo_1(mymod_foo)
    mymod_foo_2 = torch.relu(foo);  foo = None
    foo_1 = mymod_foo_1(mymod_foo_2);  mymod_foo_2 = None
    mymod_foo_3 = torch.relu(foo_1);  foo_1 = None
    getattr_1 = mymod_foo_3.shape
    return (mymod_foo_3, getattr_1, mymod_foo)
    )";
  EXPECT_EQ(g.python_code().src, expected);
  EXPECT_EQ(g.python_code().src, expected);  // the graph's names are untouched by generating code
}

TEST(PythonCode, GivenOrderAndLastUsesMustMatch) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  g.output(g.call_function("torch.relu", {x}));
  std::vector<fx::Node*> order = g.nodes().to_vector();
  const auto uses = g.last_uses(order);
  EXPECT_EQ(g.python_code("self", order, uses).src, g.python_code().src);
  order.pop_back();
  EXPECT_THROW(g.python_code("self", order, uses), fx::Error);
}

// torch.fx 2.14 writes `pass` only for a graph without nodes: placeholders
// leave a (later deleted) counter line in its body.
TEST(PythonCode, EmptyBodyIsPass) {
  fx::Graph g;
  EXPECT_EQ(g.python_code().src, "\n\n\ndef forward(self):\n    pass\n    ");
  g.placeholder("x");
  EXPECT_EQ(g.python_code().src, "\n\n\ndef forward(self, x):\n    ");
}

TEST(PythonCode, AtenOverloadsKeepTheirQualifiedName) {
  fx::Graph g;
  fx::Node* a = g.placeholder("a");
  fx::Node* b = g.placeholder("b");
  fx::Node* c = g.placeholder("c");
  fx::Node* mm = g.call_function("torch.ops.aten.addmm.default", {a, b, c}, {{"beta", 0.5}});
  g.output(mm);
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, a, b, c):\n"
            "    addmm_default = torch.ops.aten.addmm.default(a, b, c, beta = 0.5);  a = b = c = None\n"
            "    return addmm_default\n    ");
}

TEST(PythonCode, MagicMethodWithTooFewArgumentsIsAnError) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  g.output(g.call_function("operator.add", {x}));
  try {
    g.python_code();
    FAIL();
  } catch (const fx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'add'"), std::string::npos) << e.what();
  }
}

}  // namespace
