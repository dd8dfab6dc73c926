// Golden texts of the graph printout, python_code and print_tabular. The
// expected strings are what torch.fx 2.14 prints for the same graph (with
// print_tabular's function objects spelled by their qualified names).
#include <fx/fx.h>
#include <gtest/gtest.h>

namespace {

// x[(:2, None, ..., 0)].shape, x.to(...), math.sqrt, a placeholder named like
// the math.sqrt global, an in-place add, and a dict output.
struct KitchenSink {
  fx::Graph g;
  KitchenSink() {
    fx::Node* x = g.placeholder("x", std::nullopt, "torch.Tensor");
    g.placeholder("y", fx::Argument("a'b"));
    fx::Node* i = g.call_function(
        "operator.getitem", {x, fx::tuple({fx::slice(fx::None, 2, fx::None), fx::None, fx::Ellipsis, 0})});
    fx::Node* s = g.call_function("builtins.getattr", {i, "shape"});
    fx::Node* d = g.call_method("to", {x},
                                {{"dtype", c10::ScalarType::Half},
                                 {"device", c10::Device(c10::DeviceType::CUDA, 1)},
                                 {"memory_format", c10::MemoryFormat::ChannelsLast},
                                 {"layout", c10::Layout::Strided}});
    fx::Node* m = g.call_function("math.sqrt", {s});
    fx::Node* ms = g.placeholder("math_sqrt");
    fx::Node* ia = g.call_function("operator.iadd", {x, 1});
    g.output(fx::dict({{"a", fx::list({i, s})},
                       {"b", fx::tuple({d})},
                       {"c", m},
                       {"e", ms},
                       {"f", ia},
                       {"inf", std::numeric_limits<double>::infinity()}}));
  }
};

TEST(Printing, GraphTextMatchesTorchFx) {
  KitchenSink k;
  EXPECT_EQ(k.g.to_string(), R"(graph():
    %x : torch.Tensor [num_users=3] = placeholder[target=x]
    %y : [num_users=0] = placeholder[target=y](default=a'b)
    %getitem : [num_users=2] = call_function[target=operator.getitem](args = (%x, (slice(None, 2, None), None, Ellipsis, 0)), kwargs = {})
    %getattr_1 : [num_users=2] = call_function[target=builtins.getattr](args = (%getitem, shape), kwargs = {})
    %to : [num_users=1] = call_method[target=to](args = (%x,), kwargs = {dtype: torch.float16, device: cuda:1, memory_format: torch.channels_last, layout: torch.strided})
    %sqrt : [num_users=1] = call_function[target=math.sqrt](args = (%getattr_1,), kwargs = {})
    %math_sqrt : [num_users=1] = placeholder[target=math_sqrt]
    %iadd : [num_users=1] = call_function[target=operator.iadd](args = (%x, 1), kwargs = {})
    return {'a': [getitem, getattr_1], 'b': (to,), 'c': sqrt, 'e': math_sqrt, 'f': iadd, 'inf': inf})");
}

TEST(Printing, PythonCodeMatchesTorchFx) {
  KitchenSink k;
  EXPECT_EQ(k.g.python_code().src, R"(


def forward(self, x : torch.Tensor, y = "a'b", math_sqrt):
    getitem = x[(slice(None, 2, None), None, Ellipsis, 0)]
    getattr_1 = getitem.shape
    to = x.to(dtype = torch.float16, device = device(type='cuda', index=1), memory_format = torch.channels_last, layout = torch.strided)
    sqrt = math_sqrt(getattr_1)
    math_sqrt_1 = math_sqrt
    x += 1;  iadd = x;  x = None
    return {'a': [getitem, getattr_1], 'b': (to,), 'c': sqrt, 'e': math_sqrt_1, 'f': iadd, 'inf': inf}
    )");
}

// torch.fx indents every line of the body, the lines inside a statement
// too: an argument whose repr spans two lines (what torch.fx 2.14 prints for
// `torch.add(x, A())` where repr(A()) is "A(\n1)").
TEST(Printing, PythonCodeIndentsEachLineOfAStatement) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  g.output(g.call_function("torch.add", {x, fx::Opaque{"A(\n1)", nullptr}}));
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, x):\n    add = torch.add(x, A(\n    1));  x = None\n    return add\n    ");
}

TEST(Printing, PythonCodeListsItsGlobals) {
  KitchenSink k;
  auto globals = k.g.python_code().globals;
  auto has = [&](const std::string& name, const std::string& what) {
    for (const auto& [n, w] : globals)
      if (n == name && w == what) return true;
    return false;
  };
  EXPECT_TRUE(has("math_sqrt", "math.sqrt"));
  EXPECT_TRUE(has("getattr", "builtins.getattr"));
  EXPECT_TRUE(has("torch", "torch"));
}

TEST(Printing, TabularMatchesTabulateSimpleFormat) {
  KitchenSink k;
  EXPECT_EQ(
      k.g.print_tabular(),
      R"(opcode         name       target            args                                                                                          kwargs
-------------  ---------  ----------------  --------------------------------------------------------------------------------------------  -------------------------------------------------------------------------------------------------------------------------------
placeholder    x          x                 ()                                                                                            {}
placeholder    y          y                 ("a'b",)                                                                                      {}
call_function  getitem    operator.getitem  (x, (slice(None, 2, None), None, Ellipsis, 0))                                                {}
call_function  getattr_1  builtins.getattr  (getitem, 'shape')                                                                            {}
call_method    to         to                (x,)                                                                                          {'dtype': torch.float16, 'device': device(type='cuda', index=1), 'memory_format': torch.channels_last, 'layout': torch.strided}
call_function  sqrt       math.sqrt         (getattr_1,)                                                                                  {}
placeholder    math_sqrt  math_sqrt         ()                                                                                            {}
call_function  iadd       operator.iadd     (x, 1)                                                                                        {}
output         output     output            ({'a': [getitem, getattr_1], 'b': (to,), 'c': sqrt, 'e': math_sqrt, 'f': iadd, 'inf': inf},)  {})");
}

TEST(Printing, SeedTutorialExample) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  fx::Node* param = g.get_attr("param");
  fx::Node* add = g.call_function("operator.add", {x, param});
  fx::Node* linear = g.call_module("linear", {add});
  g.output(g.call_method("clamp", {linear}, {{"min", 0.0}, {"max", 1.0}}));
  EXPECT_EQ(g.to_string(), R"(graph():
    %x : [num_users=1] = placeholder[target=x]
    %param : [num_users=1] = get_attr[target=param]
    %add : [num_users=1] = call_function[target=operator.add](args = (%x, %param), kwargs = {})
    %linear : [num_users=1] = call_module[target=linear](args = (%add,), kwargs = {})
    %clamp : [num_users=1] = call_method[target=clamp](args = (%linear,), kwargs = {min: 0.0, max: 1.0})
    return clamp)");
  EXPECT_EQ(g.python_code().src,
            "\n\n\ndef forward(self, x):\n    param = self.param\n    add = x + param;  x = param = None\n"
            "    linear = self.linear(add);  add = None\n"
            "    clamp = linear.clamp(min = 0.0, max = 1.0);  linear = None\n    return clamp\n    ");
  std::ostringstream os;
  os << *add;
  EXPECT_EQ(os.str(), add->format_node());
}

}  // namespace
