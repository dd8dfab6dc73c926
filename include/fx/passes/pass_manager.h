#pragma once
// fx::passes::PassManager: runs passes over a GraphModule in order, by name
// or as functions, checking the graph after each one (torch.fx's
// passes.infra.pass_manager.PassManager, with the checks fxcpp users want):
//
//   fx::passes::PassManager pm({"remove_dropout", "fuse", "cse", "dce"});
//   pm.run_checks_after_each_pass = true;  // lint after every pass
//   pm.example_inputs = {x};                // what shape_prop and the check run on
//   pm.check_equivalence = true;            // outputs must stay allclose
//   fx::passes::PassResult r = pm(*gm);     // r.modified: did anything change
//
// A failed check throws fx::PassError naming the pass that broke the graph
// (lint) or changed the outputs (equivalence), and what it broke.
#include <fx/error.h>
#include <fx/passes/pass_registry.h>

#include <ATen/core/ivalue.h>

#include <optional>
#include <string>
#include <vector>

namespace fx {
class GraphModule;
}

namespace fx::passes {

// A check after a pass failed: lint, or outputs no longer allclose.
class PassError : public Error {
 public:
  using Error::Error;
};

struct PassResult {
  bool modified = false;
};

class PassManager {
 public:
  PassManager() = default;
  // The registered passes of these names, in order; an unknown name throws
  // fx::Error listing the known ones.
  explicit PassManager(const std::vector<std::string>& names);

  PassManager& add_pass(const std::string& name);
  PassManager& add_pass(Pass pass);

  // Runs every pass in order, `steps` times or until a round changes nothing
  // (torch.fx's steps), then recompiles gm.
  PassResult operator()(GraphModule& gm) const;

  // The inputs of passes that run the module (shape_prop) and of the
  // equivalence check.
  std::vector<c10::IValue> example_inputs;

  // After each pass, gm.graph().lint() (and gm.recompile(), so that a pass
  // that leaves a graph the runtime cannot run is caught there too).
  bool run_checks_after_each_pass = false;
  // Rounds over the pass list; stops early after a round with no change.
  int steps = 1;

  // Runs gm on example_inputs before the first pass and after each one;
  // outputs must stay allclose(rtol, atol) to the first run's, or PassError
  // names the pass and the first output that changed. Implies the checks
  // above.
  bool check_equivalence = false;
  double rtol = 1e-5;
  double atol = 1e-6;

  const std::vector<Pass>& passes() const { return passes_; }

 private:
  std::vector<Pass> passes_;
};

// Where two results differ beyond allclose(rtol, atol): a description such as
// "output[1]: max |a - b| = 0.25 at shape [2, 3]", or nullopt when they agree.
// Results are tensors, numbers, or tuples/lists of them, compared leaf by leaf.
std::optional<std::string> first_difference(const c10::IValue& expected, const c10::IValue& actual,
                                            double rtol, double atol);

}  // namespace fx::passes
