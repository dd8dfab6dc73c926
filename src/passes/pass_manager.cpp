#include <fx/graph_module.h>
#include <fx/passes/pass_manager.h>

#include <ATen/ATen.h>

#include <sstream>

namespace fx::passes {

PassManager::PassManager(const std::vector<std::string>& names) {
  for (const std::string& n : names) add_pass(n);
}

PassManager& PassManager::add_pass(const std::string& name) {
  passes_.push_back(find_pass(name));
  return *this;
}

PassManager& PassManager::add_pass(Pass pass) {
  if (!pass.run) throw Error("PassManager::add_pass: pass '" + pass.name + "' has no function to run");
  passes_.push_back(std::move(pass));
  return *this;
}

namespace {

std::string describe_shape(const at::Tensor& t) {
  std::ostringstream os;
  os << t.sizes();
  return os.str();
}

std::optional<std::string> difference(const c10::IValue& a, const c10::IValue& b, double rtol, double atol,
                                      const std::string& where) {
  if (a.isTensor() && b.isTensor()) {
    const at::Tensor& x = a.toTensor();
    const at::Tensor& y = b.toTensor();
    if (x.sizes() != y.sizes())
      return where + ": shape " + describe_shape(y) + " instead of " + describe_shape(x);
    if (x.scalar_type() != y.scalar_type())
      return where + ": dtype " + std::string(c10::toString(y.scalar_type())) + " instead of " +
             c10::toString(x.scalar_type());
    if (x.numel() == 0 || at::allclose(x, y, rtol, atol)) return std::nullopt;
    if (!x.is_floating_point() && !x.is_complex()) return where + ": values differ";
    double diff = (x.to(at::kDouble) - y.to(at::kDouble)).abs().max().item<double>();
    std::ostringstream os;
    os << where << ": max |expected - actual| = " << diff << " (shape " << describe_shape(x) << ", rtol "
       << rtol << ", atol " << atol << ")";
    return os.str();
  }
  if ((a.isTuple() || a.isList()) && (b.isTuple() || b.isList())) {
    auto items = [](const c10::IValue& v) {
      return v.isTuple() ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    };
    std::vector<c10::IValue> xs = items(a), ys = items(b);
    if (xs.size() != ys.size())
      return where + ": " + std::to_string(ys.size()) + " items instead of " + std::to_string(xs.size());
    for (size_t i = 0; i < xs.size(); ++i)
      if (auto d = difference(xs[i], ys[i], rtol, atol, where + "[" + std::to_string(i) + "]")) return d;
    return std::nullopt;
  }
  if (a.isDouble() && b.isDouble()) {
    double x = a.toDouble(), y = b.toDouble();
    if (std::abs(x - y) <= atol + rtol * std::abs(y)) return std::nullopt;
    return where + ": " + std::to_string(y) + " instead of " + std::to_string(x);
  }
  if (a.tagKind() != b.tagKind()) return where + ": a " + b.tagKind() + " instead of a " + a.tagKind();
  if (a == b) return std::nullopt;
  std::ostringstream os;
  os << where << ": " << b << " instead of " << a;
  return os.str();
}

}  // namespace

std::optional<std::string> first_difference(const c10::IValue& expected, const c10::IValue& actual,
                                            double rtol, double atol) {
  return difference(expected, actual, rtol, atol, "output");
}

PassResult PassManager::operator()(GraphModule& gm) const {
  if (steps < 1) throw Error("PassManager: steps must be at least 1, not " + std::to_string(steps));
  const bool check = run_checks_after_each_pass || check_equivalence;
  PassContext context{example_inputs};
  if (check_equivalence && example_inputs.empty())
    throw Error("PassManager: check_equivalence needs example_inputs to run the module on");

  c10::IValue reference;
  if (check_equivalence) reference = gm.run(example_inputs);

  PassResult result;
  for (int step = 0; step < steps; ++step) {
    bool changed = false;
    for (const Pass& pass : passes_) {
      bool modified = pass.run(gm, context);
      changed = changed || modified;
      if (!check) continue;
      try {
        gm.graph().lint();
        gm.recompile();
      } catch (const Error& e) {
        throw PassError("after pass '" + pass.name + "': the graph is broken: " + e.what());
      }
      if (!check_equivalence) continue;
      c10::IValue out;
      try {
        out = gm.run(example_inputs);
      } catch (const std::exception& e) {
        throw PassError("after pass '" + pass.name +
                        "': the module no longer runs on the example inputs: " + e.what());
      }
      if (auto d = first_difference(reference, out, rtol, atol))
        throw PassError("pass '" + pass.name + "' changed the module's outputs: " + *d);
    }
    result.modified = result.modified || changed;
    if (!changed) break;
  }
  gm.recompile();
  return result;
}

}  // namespace fx::passes
