// python_code(): statements torch.fx generates. Expected texts were printed
// by torch.fx 1.13 for the same graphs.
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

TEST(PythonCode, EmptyBodyIsPass) {
  fx::Graph g;
  g.placeholder("x");
  EXPECT_EQ(g.python_code().src, "\n\n\ndef forward(self, x):\n    pass\n    ");
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
