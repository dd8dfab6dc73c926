// call_module of fx::nn leaves in C++: the functional form of each module
// (what its forward calls), as the module's traits write it
// (fx/nn/module_traits.h), with the call's arguments and the module's
// tensors supplied here.
#include <fx/error.h>
#include <fx/nn/module_traits.h>

#include <optional>

#include "cpp_emit.h"

namespace fx::codegen {

namespace {

// One call_module node, as a module's emit_cpp sees it.
class ModuleCallWriter final : public nn::CppModuleCall {
 public:
  ModuleCallWriter(Emitter& e, const Node* n, const Module& m)
      : e_(e), n_(n), m_(m), path_(n->target().str()) {
    bind();
  }

  std::string input() override {
    for (size_t i = 1; i < args_.size(); ++i)
      if (args_[i])
        fail("passes '" + m_.forward_params()[i].name + "', which export_cpp does not translate for " +
             m_.type_name());
    CppValue x = passed(0);
    if (x.kind != Kind::tensor)
      fail("passes a " + std::string(x.kind == Kind::none ? "None" : "non-tensor") + " input");
    return x.expr;
  }
  std::optional<std::string> argument(size_t i) override {
    if (i >= args_.size() || !args_[i] || args_[i]->is_none()) return std::nullopt;
    return e_.value(*args_[i]).expr;
  }
  std::string tensor_argument(size_t i) override {
    CppValue x = passed(i);
    if (x.kind != Kind::tensor) fail("passes '" + m_.forward_params()[i].name + "' that is not a tensor");
    return x.expr;
  }
  std::string weight(const std::string& name) override { return e_.weight(path_ + "." + name); }
  void line(const std::string& statement) override { e_.line(statement); }
  std::string temp(const std::string& base) override { return e_.temp(path_ + "_" + base); }
  [[noreturn]] void fail(const std::string& why) override { Emitter::fail(n_, why); }
  std::string real(double d) override { return cpp_double(d); }
  std::string str(const std::string& s) override { return cpp_string(s); }
  std::string int_list(const std::vector<std::string>& items) override { return cpp_int_list(items); }

 private:
  // The call's arguments bound to forward's parameters (nullopt: not passed).
  void bind() {
    const auto& params = m_.forward_params();
    args_.assign(params.size(), std::nullopt);
    if (n_->args().size() > params.size())
      fail("passes more arguments than " + m_.type_name() + ".forward takes");
    for (size_t i = 0; i < n_->args().size(); ++i) args_[i] = n_->args()[i];
    for (const auto& [k, a] : n_->kwargs()) {
      size_t i = 0;
      while (i < params.size() && params[i].name != k) ++i;
      if (i == params.size()) fail("passes '" + k + "', which " + m_.type_name() + ".forward does not take");
      args_[i] = a;
    }
  }
  CppValue passed(size_t i) {
    if (i >= args_.size())
      fail("passes no argument " + std::to_string(i) + " to " + m_.type_name() + ".forward");
    if (!args_[i]) fail("does not pass '" + m_.forward_params()[i].name + "'");
    return e_.value(*args_[i]);
  }

  Emitter& e_;
  const Node* n_;
  const Module& m_;
  std::string path_;
  std::vector<std::optional<Argument>> args_;
};

}  // namespace

CppValue emit_module_call(Emitter& e, const Node* n, const torch::nn::Module& module) {
  const auto* m = dynamic_cast<const Module*>(&module);
  const nn::ModuleTraits* traits = m ? nn::find_module_traits(m->type_name()) : nullptr;
  const bool writable = traits && traits->emit_cpp;
  if (!m || (!m->is_standard_leaf() && !writable))
    e.fail(n, "calls a module that is no fx::nn leaf (" + (m ? m->type_name() : module.name()) +
                  "); export_cpp writes fx::nn modules only (trace through the module instead)");
  if (!writable) e.fail(n, "calls " + m->type_name() + ", which export_cpp does not translate");
  std::string repr = m->repr();
  e.line("// " + n->target().str() + ": " + (repr.find('\n') == std::string::npos ? repr : m->type_name()));
  ModuleCallWriter writer(e, n, *m);
  nn::CppCall call = traits->emit_cpp(writer, *m);
  if (call.tuple_size == 0) return CppValue{std::move(call.expr), Kind::tensor, {}};
  return CppValue{std::move(call.expr), Kind::tuple, std::vector<Kind>(call.tuple_size, Kind::tensor)};
}

}  // namespace fx::codegen
