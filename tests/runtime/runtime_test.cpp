// Unit tests of the runtime: resolution errors, argument conversion, overload
// choice and its cache, named results, thread safety.

#include <fx/graph.h>
#include <fx/operator_overloads.h>
#include <fx/runtime.h>
#include <fx/runtime_args.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <torch/library.h>

#include <thread>

namespace {

using fx::resolve_function;
using fx::resolve_method;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const fx::Error& e) {
    return e.what();
  }
  return "<no fx::Error>";
}

TEST(Resolve, UnknownFunctionNamesTheTarget) {
  std::string e = error_of([] { resolve_function("torch.frobnicate"); });
  EXPECT_NE(e.find("torch.frobnicate is not a known function"), std::string::npos) << e;
  EXPECT_NE(e.find("aten::frobnicate"), std::string::npos) << e;
  e = error_of([] { resolve_function("torch.nn.functional.frobnicate"); });
  EXPECT_NE(e.find("torch.nn.functional.frobnicate"), std::string::npos) << e;
  e = error_of([] { resolve_function("mymodule.myfn"); });
  EXPECT_NE(e.find("mymodule.myfn"), std::string::npos) << e;
}

// The runtime knows torch; torchvision's functions come with fxcpp::torchvision,
// which this binary does not link (the runtime oracle runs them).
TEST(Resolve, TorchvisionFunctionsNameTheLibraryThatHasThem) {
  const std::string e = error_of([] { resolve_function("torchvision.ops.stochastic_depth.stochastic_depth"); });
  EXPECT_NE(e.find("torchvision.ops.stochastic_depth.stochastic_depth is not a known function"), std::string::npos)
      << e;
  EXPECT_NE(e.find("fx::torchvision::register_functions()"), std::string::npos) << e;
}

TEST(Resolve, UnknownOperatorOverloadAndMethod) {
  std::string e = error_of([] { resolve_function("torch.ops.aten.add.NoSuchOverload"); });
  EXPECT_NE(e.find("torch.ops.aten.add.NoSuchOverload"), std::string::npos) << e;
  e = error_of([] { resolve_function("torch.ops.nons.op"); });
  EXPECT_NE(e.find("nons::op"), std::string::npos) << e;
  e = error_of([] { resolve_method("frobnicate"); });
  EXPECT_NE(e.find("Tensor.frobnicate"), std::string::npos) << e;
}

TEST(Resolve, SameCallableForSameName) {
  EXPECT_EQ(resolve_function("torch.relu"), resolve_function("torch.relu"));
  EXPECT_EQ(resolve_method("view"), resolve_method("view"));
  EXPECT_NE(resolve_function("torch.add")->describe().find("aten::add.Tensor"), std::string::npos);
}

TEST(Resolve, OperatorsRegisteredLaterAreFoundAndRemovedOnesGone) {
  EXPECT_FALSE(fx::operator_overloads("aten::add").empty());  // the index exists before the library
  EXPECT_TRUE(fx::operator_overloads("fxcpp_test::twice").empty());
  {
    torch::Library lib(torch::Library::DEF, "fxcpp_test", std::nullopt, __FILE__, __LINE__);
    lib.def("twice(Tensor x) -> Tensor", [](const at::Tensor& x) { return x * 2; });
    lib.def("twice.scaled(Tensor x, float s) -> Tensor", [](const at::Tensor& x, double s) { return x * 2 * s; });
    const auto ops = fx::operator_overloads("fxcpp_test::twice");
    ASSERT_EQ(ops.size(), 2u);
    EXPECT_EQ(ops[0].schema().overload_name(), "");  // in the order they were registered
    EXPECT_EQ(ops[1].schema().overload_name(), "scaled");
    const c10::IValue y = resolve_function("torch.ops.fxcpp_test.twice")->call({at::ones({2}), 3.0}, {});
    EXPECT_TRUE(y.toTensor().equal(at::full({2}, 6.0)));
  }
  EXPECT_TRUE(fx::operator_overloads("fxcpp_test::twice").empty());
}

TEST(Call, WrongArgumentTypesListCandidates) {
  auto add = resolve_function("torch.add");
  std::string e = error_of([&] { add->call({at::ones({2}), c10::IValue("a")}, {}); });
  EXPECT_NE(e.find("torch.add"), std::string::npos) << e;
  EXPECT_NE(e.find("(Tensor, str)"), std::string::npos) << e;
  EXPECT_NE(e.find("aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1)"), std::string::npos) << e;
  e = error_of([&] { add->call({at::ones({2}), at::ones({2})}, {{"beta", 1}}); });
  EXPECT_NE(e.find("beta=int"), std::string::npos) << e;
}

TEST(Call, AtenErrorsBecomeFxErrorsNamingTheTarget) {
  auto mm = resolve_function("torch.mm");
  std::string e = error_of([&] { mm->call({at::ones({2, 3}), at::ones({2, 3})}, {}); });
  EXPECT_NE(e.find("torch.mm"), std::string::npos) << e;
  EXPECT_NE(e.find("cannot be multiplied"), std::string::npos) << e;
  auto relu = resolve_function("torch.nn.functional.relu");
  e = error_of([&] { relu->call({}, {}); });
  EXPECT_NE(e.find("torch.nn.functional.relu"), std::string::npos) << e;
  e = error_of([&] { resolve_function("operator.matmul")->call({at::ones({2, 3}), at::ones({2, 3})}, {}); });
  EXPECT_EQ(e.rfind("operator.matmul", 0), 0u) << e;
  e = error_of([&] { resolve_method("view")->call({at::ones({2, 3}), int64_t{4}}, {}); });
  EXPECT_NE(e.find("Tensor.view"), std::string::npos) << e;
  e = error_of([&] { resolve_function("operator.getitem")->call({at::ones({2}), int64_t{7}}, {}); });
  EXPECT_NE(e.find("operator.getitem"), std::string::npos) << e;
}

TEST(Call, KeywordOnlyArgumentsOnlyByKeyword) {
  auto add = resolve_function("torch.add");
  // alpha is keyword-only in aten::add.Tensor; aten::add.Scalar takes it positionally but needs a Scalar other
  std::string e = error_of([&] { add->call({at::ones({2}), at::ones({2}), int64_t{2}}, {}); });
  EXPECT_NE(e.find("no overload"), std::string::npos) << e;
  auto r = add->call({at::ones({2}), at::ones({2})}, {{"alpha", int64_t{2}}});
  EXPECT_TRUE(at::equal(r.toTensor(), at::full({2}, 3.0)));
}

TEST(Call, TutorialClampWithMinMaxKwargs) {
  auto clamp = resolve_method("clamp");
  auto r = clamp->call({at::tensor({-1.0, 0.5, 2.0})}, {{"min", 0.0}, {"max", 1.0}});
  EXPECT_TRUE(at::equal(r.toTensor(), at::tensor({0.0, 0.5, 1.0})));
}

TEST(Call, OverloadChoiceIsCachedPerSignature) {
  auto view = resolve_method("view");
  at::Tensor x = at::arange(6);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(view->call({x, int64_t{2}, int64_t{3}}, {}).toTensor().sizes(), at::IntArrayRef({2, 3}));
    EXPECT_EQ(view->call({x, c10::List<int64_t>({3, 2})}, {}).toTensor().sizes(), at::IntArrayRef({3, 2}));
  }
}

TEST(Call, ConcurrentCalls) {
  auto add = resolve_function("operator.add");
  std::vector<std::thread> threads;
  std::atomic<int> bad{0};
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 200; ++i) {
        c10::IValue r = (i % 2) ? add->call({at::ones({2}), int64_t{t}}, {}) : add->call({int64_t{t}, int64_t{i}}, {});
        if ((i % 2) ? r.toTensor()[0].item<float>() != 1.0f + static_cast<float>(t) : r.toInt() != t + i) ++bad;
      }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Call, NamedResultsAndGetattr) {
  auto max = resolve_function("torch.max");
  c10::IValue r = max->call({at::tensor({1.0, 5.0, 7.0, 2.0}).view({2, 2}), int64_t{1}}, {});
  ASSERT_TRUE(r.isTuple());
  auto getattr = resolve_function("builtins.getattr");
  EXPECT_TRUE(at::equal(getattr->call({r, std::string("values")}, {}).toTensor(), at::tensor({5.0, 7.0})));
  EXPECT_TRUE(at::equal(getattr->call({r, std::string("indices")}, {}).toTensor(), at::tensor({1, 0})));
  EXPECT_EQ(getattr->call({r, std::string("nope"), int64_t{3}}, {}).toInt(), 3);
}

TEST(Call, PythonIntOverflowIsAnError) {
  auto mul = resolve_function("operator.mul");
  std::string e = error_of([&] { mul->call({int64_t{1} << 62, int64_t{4}}, {}); });
  EXPECT_NE(e.find("overflow"), std::string::npos) << e;
}

TEST(Call, RegisterFunction) {
  fx::register_function("mylib.twice", fx::make_callable("mylib.twice", [](auto& args, auto&) {
                          return resolve_function("operator.mul")->call({args.at(0), int64_t{2}}, {});
                        }));
  EXPECT_EQ(resolve_function("mylib.twice")->call({int64_t{21}}, {}).toInt(), 42);
}

// F.* and torch's other Python functions bind by torch 2.14's signatures
// (fx/python_function.h's table) with torch.fx's binder, fast_bind, whose
// TypeErrors the messages quote.
TEST(Bind, PythonFunctionsBindByTorchsSignatures) {
  const std::string F = "torch.nn.functional.";
  const at::Tensor x = at::tensor({-2.0, 3.0});
  auto leaky = resolve_function(F + "leaky_relu");
  EXPECT_TRUE(at::allclose(leaky->call({x}, {}).toTensor(), at::tensor({-0.02, 3.0})));  // the table's 0.01
  EXPECT_TRUE(at::allclose(leaky->call({x}, {{"negative_slope", 0.5}}).toTensor(), at::tensor({-1.0, 3.0})));
  std::string e = error_of([&] { resolve_function(F + "softmax")->call({x}, {{"dimm", int64_t{0}}}); });
  EXPECT_NE(e.find(F + "softmax: TypeError: Got an unexpected keyword argument 'dimm'"), std::string::npos) << e;
  e = error_of([&] { resolve_function(F + "relu")->call({x, false, true}, {}); });
  EXPECT_NE(e.find("TypeError: Too many positional arguments: expected max 2, got 3"), std::string::npos) << e;
  e = error_of([&] { resolve_function(F + "relu")->call({x, false}, {{"inplace", true}}); });
  EXPECT_NE(e.find("TypeError: Multiple values for argument 'inplace'"), std::string::npos) << e;
  e = error_of([&] { resolve_function(F + "batch_norm")->call({x}, {}); });
  EXPECT_NE(e.find("TypeError: Missing required argument 'running_mean'"), std::string::npos) << e;
  // torch 2.x added mse_loss's weight; the list written for 1.13 did not have it.
  const at::Tensor w = at::tensor({1.0, 3.0});
  auto mse = resolve_function(F + "mse_loss")->call({x, at::zeros({2})}, {{"weight", w}}).toTensor();
  EXPECT_TRUE(at::allclose(mse, at::tensor((4.0 + 27.0) / 4.0))) << mse;
}

TEST(Bind, PythonParamsComeFromTorchsTable) {
  auto params = fx::runtime::python_params("torch.nn.functional.dropout");
  ASSERT_EQ(params.size(), 4u);
  EXPECT_EQ(params[2].name, "training");
  ASSERT_TRUE(params[2].default_value);
  EXPECT_TRUE(params[2].default_value->toBool());
  EXPECT_FALSE(params[0].default_value);
  // A builtin's are its ATen schema's, as torch.fx reads them: gelu's
  // approximate is keyword-only.
  auto gelu = fx::runtime::python_params("torch.nn.functional.gelu");
  ASSERT_EQ(gelu.size(), 2u);
  EXPECT_TRUE(gelu[1].kwonly);
  EXPECT_EQ(gelu[1].default_value->toStringRef(), "none");
  // Not in the table, or with *args: an error that names the function.
  std::string e = error_of([] { fx::runtime::python_params("torch.frobnicate"); });
  EXPECT_NE(e.find("torch.frobnicate"), std::string::npos) << e;
  e = error_of([] { fx::runtime::python_params("torch.einsum"); });
  EXPECT_NE(e.find("torch.einsum"), std::string::npos) << e;
}

TEST(ToIValue, Scalars) {
  EXPECT_TRUE(fx::to_ivalue(fx::None).isNone());
  EXPECT_EQ(fx::to_ivalue(true).toBool(), true);
  EXPECT_EQ(fx::to_ivalue(3).toInt(), 3);
  EXPECT_EQ(fx::to_ivalue(2.5).toDouble(), 2.5);
  EXPECT_EQ(fx::to_ivalue("s").toStringRef(), "s");
  // A dtype is a value of its own, the same one each time (Python's `is`).
  const c10::IValue f32 = fx::to_ivalue(c10::ScalarType::Float);
  EXPECT_EQ(fx::dtype_of(f32), c10::ScalarType::Float);
  EXPECT_FALSE(f32.isInt());
  EXPECT_TRUE(f32.isSameIdentity(fx::dtype_ivalue(c10::ScalarType::Float)));
  EXPECT_EQ(fx::python_type_name(f32), "dtype");
  EXPECT_EQ(fx::dtype_of(c10::IValue(int64_t{6})), std::nullopt);
  EXPECT_EQ(fx::to_ivalue(c10::MemoryFormat::ChannelsLast).toInt(), static_cast<int64_t>(c10::MemoryFormat::ChannelsLast));
  EXPECT_EQ(fx::to_ivalue(c10::Layout::Strided).toInt(), 0);
  EXPECT_EQ(fx::to_ivalue(c10::Device("cpu")).toDevice(), c10::Device("cpu"));
}

TEST(ToIValue, Containers) {
  EXPECT_TRUE(fx::to_ivalue(fx::list({1, 2})).isIntList());
  EXPECT_TRUE(fx::to_ivalue(fx::list({})).isIntList());
  EXPECT_TRUE(fx::to_ivalue(fx::list({1.0, 2.0})).isDoubleList());
  EXPECT_TRUE(fx::to_ivalue(fx::list({true})).isBoolList());
  c10::IValue mixed = fx::to_ivalue(fx::list({1, 2.0, "a"}));
  EXPECT_TRUE(mixed.isList() && !mixed.isIntList() && !mixed.isDoubleList());
  c10::IValue t = fx::to_ivalue(fx::tuple({1, fx::list({2})}));
  ASSERT_TRUE(t.isTuple());
  EXPECT_TRUE(t.toTupleRef().elements()[1].isIntList());
  c10::IValue d = fx::to_ivalue(fx::dict({{"a", 1}, {"b", 2.5}}));
  ASSERT_TRUE(d.isGenericDict());
  EXPECT_EQ(d.toGenericDict().at("b").toDouble(), 2.5);
}

TEST(ToIValue, NodesSlicesEllipsisOpaque) {
  fx::Graph g;
  fx::Node* x = g.placeholder("x");
  std::string e = error_of([&] { fx::to_ivalue(fx::Argument(x)); });
  EXPECT_NE(e.find("%x"), std::string::npos) << e;
  c10::IValue l = fx::to_ivalue(fx::list({x, x}), [](const fx::Node*) { return c10::IValue(at::ones({1})); });
  EXPECT_TRUE(l.isTensorList());
  c10::IValue s = fx::to_ivalue(fx::slice(1, fx::None, 2));
  ASSERT_TRUE(fx::is_slice(s));
  EXPECT_EQ(fx::slice_parts(s)[0].toInt(), 1);
  EXPECT_TRUE(fx::slice_parts(s)[1].isNone());
  EXPECT_EQ(fx::python_type_name(s), "slice");
  EXPECT_TRUE(fx::is_ellipsis(fx::to_ivalue(fx::Ellipsis)));
  EXPECT_FALSE(fx::is_slice(fx::to_ivalue(fx::tuple({1, 2, 3}))));
  at::Tensor c = at::arange(3);
  c10::IValue o = fx::to_ivalue(fx::make_opaque(c, "tensor([0, 1, 2])"));
  EXPECT_TRUE(o.isTensor() && o.toTensor().is_same(c));
  e = error_of([] { fx::to_ivalue(fx::Opaque{"<object>", std::make_shared<int>(3)}); });
  EXPECT_NE(e.find("<object>"), std::string::npos) << e;
}

TEST(Getitem, SlicesFromArguments) {
  auto getitem = resolve_function("operator.getitem");
  at::Tensor x = at::arange(12).view({3, 4});
  c10::IValue idx = fx::to_ivalue(fx::tuple({fx::Ellipsis, fx::slice(fx::None, fx::None, 2)}));
  EXPECT_TRUE(at::equal(getitem->call({x, idx}, {}).toTensor(), x.slice(1, 0, 4, 2)));
}

}  // namespace
