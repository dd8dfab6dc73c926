// The runtime against real torch: every call of cases.py, evaluated by
// oracle.py with torch 2.14, is resolved and called with fxcpp's runtime and
// must give the same values of the same Python types.
//
// Inputs go through fx::Argument and fx::to_ivalue (tensors as placeholder
// nodes whose values are substituted), as an Interpreter would pass them.

#include <fx/graph.h>
#include <fx/runtime.h>
#include <fx/torchvision.h>

#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <torch/serialize.h>

#include <chrono>
#include <cmath>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>

namespace {

using json = nlohmann::json;

std::vector<char> read_bytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

const std::map<std::string, c10::ScalarType>& dtypes() {
  static const std::map<std::string, c10::ScalarType> m = {
      {"uint8", at::kByte},      {"int8", at::kChar},         {"int16", at::kShort},
      {"int32", at::kInt},       {"int64", at::kLong},        {"float16", at::kHalf},
      {"float32", at::kFloat},   {"float64", at::kDouble},    {"complex64", at::kComplexFloat},
      {"complex128", at::kComplexDouble}, {"bool", at::kBool}, {"bfloat16", at::kBFloat16},
  };
  return m;
}

double special_float(const std::string& s) {
  if (s == "inf") return INFINITY;
  if (s == "-inf") return -INFINITY;
  return NAN;
}

struct Inputs {
  fx::Graph graph;
  std::map<const fx::Node*, at::Tensor> values;
  const std::vector<at::Tensor>* tensors;

  fx::Argument decode(const json& j) {
    if (j.is_null()) return fx::None;
    if (j.is_boolean()) return j.get<bool>();
    if (j.is_number_integer()) return j.get<int64_t>();
    if (j.is_number_float()) return j.get<double>();
    if (j.is_string()) return j.get<std::string>();
    if (j.is_array()) {
      fx::List l;
      for (const auto& e : j) l.items.push_back(decode(e));
      return l;
    }
    if (j.contains("tensor")) {
      fx::Node* n = graph.placeholder("t");
      values[n] = tensors->at(j["tensor"].get<size_t>());
      return n;
    }
    if (j.contains("tuple")) {
      fx::Tuple t;
      for (const auto& e : j["tuple"]) t.items.push_back(decode(e));
      return t;
    }
    if (j.contains("float")) return special_float(j["float"].get<std::string>());
    if (j.contains("dict")) {
      fx::Dict d;
      for (const auto& kv : j["dict"]) d.items.emplace_back(kv[0].get<std::string>(), decode(kv[1]));
      return d;
    }
    if (j.contains("dtype")) return dtypes().at(j["dtype"].get<std::string>());
    if (j.contains("device")) return c10::Device(j["device"].get<std::string>());
    if (j.contains("slice")) return fx::slice(decode(j["slice"][0]), decode(j["slice"][1]), decode(j["slice"][2]));
    if (j.contains("ellipsis")) return fx::Ellipsis;
    throw std::runtime_error("cannot decode " + j.dump());
  }

  c10::IValue value(const json& j) {
    return fx::to_ivalue(decode(j), [this](const fx::Node* n) { return c10::IValue(values.at(n)); });
  }
};

// Empty when `got` is what Python returned; otherwise what differs.
std::string compare(const c10::IValue& got, const json& want, const std::vector<at::Tensor>& tensors, double rtol,
                    const std::string& path = "result") {
  auto fail = [&](const std::string& what) {
    return path + ": " + what + " (got " + fx::python_type_name(got) + ", want " + want.dump() + ")";
  };
  if (want.is_null()) return got.isNone() ? "" : fail("expected None");
  if (want.is_boolean()) return got.isBool() && got.toBool() == want.get<bool>() ? "" : fail("expected a bool");
  if (want.is_number_integer())
    return got.isInt() && got.toInt() == want.get<int64_t>() ? "" : fail("expected this int");
  auto close = [&](double a, double b) {
    if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b)) return a == b;
    return std::fabs(a - b) <= 1e-9 + 1e-9 * std::fabs(b);
  };
  if (want.is_number_float())
    return got.isDouble() && close(got.toDouble(), want.get<double>()) ? "" : fail("expected this float");
  if (want.is_string())
    return got.isString() && got.toStringRef() == want.get<std::string>() ? "" : fail("expected this str");
  if (want.is_array() || want.contains("tuple") || want.contains("size")) {
    const json& items = want.is_array() ? want : want.contains("tuple") ? want["tuple"] : want["size"];
    const bool tuple = want.is_object() && want.contains("tuple");
    if (tuple && !got.isTuple()) return fail("expected a tuple");
    if (!tuple && !got.isList()) return fail("expected a list");
    if (want.is_object() && want.contains("size") && !got.isIntList()) return fail("expected an int list (torch.Size)");
    std::vector<c10::IValue> g = tuple ? std::vector<c10::IValue>(got.toTupleRef().elements().begin(),
                                                                  got.toTupleRef().elements().end())
                                       : got.toListRef().vec();
    if (g.size() != items.size()) return fail("length " + std::to_string(g.size()));
    for (size_t i = 0; i < g.size(); ++i) {
      std::string e = compare(g[i], items[i], tensors, rtol, path + "[" + std::to_string(i) + "]");
      if (!e.empty()) return e;
    }
    if (tuple && want.contains("names") && !want["names"].empty()) {
      const auto& t = got.toTupleRef();
      if (!t.type() || !t.type()->schema()) return fail("expected a named tuple");
      const auto& args = t.type()->schema()->arguments();
      for (size_t i = 0; i < args.size(); ++i)
        if (args[i].name() != want["names"][i].get<std::string>()) return fail("field " + args[i].name());
    }
    return "";
  }
  if (want.contains("float")) {
    return got.isDouble() && close(got.toDouble(), special_float(want["float"].get<std::string>())) ? ""
                                                                                                     : fail("expected this float");
  }
  if (want.contains("complex")) {
    if (!got.isComplexDouble()) return fail("expected a complex");
    auto c = got.toComplexDouble();
    return std::abs(c.real() - want["complex"][0].get<double>()) < 1e-9 &&
                   std::abs(c.imag() - want["complex"][1].get<double>()) < 1e-9
               ? ""
               : fail("expected this complex");
  }
  if (want.contains("dtype"))
    return fx::dtype_of(got) == dtypes().at(want["dtype"].get<std::string>())
               ? ""
               : fail("expected this dtype");
  if (want.contains("device"))
    return got.isDevice() && got.toDevice().str() == want["device"].get<std::string>() ? "" : fail("expected this device");
  if (want.contains("tensor")) {
    if (!got.isTensor()) return fail("expected a Tensor");
    const at::Tensor& w = tensors.at(want["tensor"].get<size_t>());
    const at::Tensor& g = got.toTensor();
    if (g.scalar_type() != w.scalar_type())
      return fail(std::string("dtype ") + c10::toString(g.scalar_type()) + " vs " + c10::toString(w.scalar_type()));
    if (g.sizes() != w.sizes()) {
      std::ostringstream os;
      os << "shape " << g.sizes() << " vs " << w.sizes();
      return fail(os.str());
    }
    bool ok = (w.is_floating_point() || w.is_complex()) ? at::allclose(g, w, rtol, 1e-6, /*equal_nan=*/true)
                                                        : at::equal(g, w);
    if (!ok) {
      std::ostringstream os;
      os << "values differ:\n" << g << "\nvs\n" << w;
      return fail(os.str());
    }
    return "";
  }
  return fail("cannot compare");
}

TEST(RuntimeOracle, AllCases) {
  fx::torchvision::register_functions();
  json expected;
  {
    std::ifstream f(FXCPP_RUNTIME_EXPECTED "/expected.json");
    ASSERT_TRUE(f) << "run the fx_runtime_oracle test first (it writes expected.json)";
    f >> expected;
  }
  std::vector<at::Tensor> tensors;
  const c10::IValue loaded = torch::pickle_load(read_bytes(FXCPP_RUNTIME_EXPECTED "/tensors.pt"));
  for (const auto& v : loaded.toTupleRef().elements()) tensors.push_back(v.toTensor());

  std::map<std::string, std::pair<int, int>> by_family;  // passed, total
  int failures = 0;
  for (const auto& c : expected["cases"]) {
    const std::string name = c["name"];
    const std::string family = c["family"];
    by_family[family].second++;
    std::string problem;
    try {
      Inputs in;
      in.tensors = &tensors;
      std::vector<c10::IValue> args;
      for (const auto& a : c["args"]) args.push_back(in.value(a));
      fx::IValueKwargs kwargs;
      for (const auto& kv : c["kwargs"]) kwargs.emplace_back(kv[0].get<std::string>(), in.value(kv[1]));
      c10::IValue self = args.empty() ? c10::IValue() : args[0];
      // in-place cases work on a copy of self, as the oracle did
      if (c.contains("self_after") && self.isTensor()) {
        self = self.toTensor().clone();
        args[0] = self;
      }
      const std::string target = c["target"];
      std::shared_ptr<const fx::Callable> fn;
      if (c.contains("error")) {
        try {
          fn = c["kind"] == "method" ? fx::resolve_method(target) : fx::resolve_function(target);
          c10::IValue r = fn->call(args, kwargs);
          problem = "expected an fx::Error (Python raised " + c["error"].get<std::string>() + "), got a " +
                    fx::python_type_name(r);
        } catch (const fx::Error& e) {
          if (std::string(e.what()).find(target) == std::string::npos)
            problem = std::string("the error does not name the target: ") + e.what();
        }
      } else {
        fn = c["kind"] == "method" ? fx::resolve_method(target) : fx::resolve_function(target);
        const double rtol = c["rtol"].get<double>();
        c10::IValue r = fn->call(args, kwargs);
        problem = compare(r, c["result"], tensors, rtol);
        if (problem.empty() && c.contains("self_after"))
          problem = compare(self, c["self_after"], tensors, rtol, "self after the call");
        if (problem.empty()) {  // a second call takes the cached overload and must agree
          std::vector<c10::IValue> args2;
          for (const auto& a : c["args"]) args2.push_back(in.value(a));
          if (!c.contains("self_after")) problem = compare(fn->call(args2, kwargs), c["result"], tensors, rtol, "second call");
        }
      }
    } catch (const fx::Error& e) {
      problem = std::string("fx::Error: ") + e.what();
    } catch (const std::exception& e) {
      problem = std::string("NOT an fx::Error: ") + e.what();
    }
    if (problem.empty()) {
      by_family[family].first++;
    } else {
      ++failures;
      ADD_FAILURE() << name << ": " << problem;
    }
  }
  for (const auto& [f, pt] : by_family) std::cout << "  " << f << ": " << pt.first << "/" << pt.second << "\n";
  EXPECT_EQ(failures, 0);
  EXPECT_GE(expected["cases"].size(), 150u);
}

}  // namespace
