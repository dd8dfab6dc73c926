// fxc opt FILE -p dce,cse,... -o OUT [--verify --inputs IN.pt [--rtol R] [--atol A]]
#include <fx/graph_module_file.h>
#include <fx/passes/pass_manager.h>

#include <iostream>
#include <sstream>
#include <string>

#include "commands.h"

namespace fxc {

namespace {

double tolerance(const CommandLine& cl, const std::string& name, const std::string& fallback) {
  const std::string v = cl.option_or(name, fallback);
  try {
    size_t used = 0;
    double d = std::stod(v, &used);
    if (used == v.size() && d >= 0) return d;
  } catch (const std::exception&) {
  }
  throw UsageError(name + " takes a non-negative number, got '" + v + "'");
}

}  // namespace

int opt(const CommandLine& cl) {
  auto gm = load_module(cl.positional(0));
  std::vector<std::string> names;
  std::stringstream list(cl.option("-p"));
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) names.push_back(name);
  if (names.empty()) throw UsageError("-p takes a comma-separated list of passes; see fxc opt --help");
  fx::passes::PassManager pm(names);
  pm.run_checks_after_each_pass = true;
  if (cl.has("--inputs")) pm.example_inputs = Program{gm, nullptr}.read_inputs(cl.option("--inputs"));
  if (cl.has("--verify")) {
    if (!cl.has("--inputs")) throw UsageError("--verify runs the module: give it --inputs IN.pt");
    pm.check_equivalence = true;
    // Folding BatchNorm into a convolution changes rounding: looser than
    // PassManager's defaults, as torch.testing's float32 allclose is.
    pm.rtol = tolerance(cl, "--rtol", "1e-4");
    pm.atol = tolerance(cl, "--atol", "1e-5");
  }
  const size_t before = gm->graph().size();
  const std::string output = cl.option("-o");
  fx::passes::PassResult r = pm(*gm);
  fx::save(*gm, output);
  std::cout << cl.option("-p") << ": " << (r.modified ? "modified" : "unchanged") << ", " << before << " -> "
            << gm->graph().size() << " nodes" << (pm.check_equivalence ? ", outputs unchanged" : "") << "\n";
  return 0;
}

}  // namespace fxc
