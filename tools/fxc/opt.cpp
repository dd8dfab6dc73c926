// fxc opt FILE -p dce,cse,... -o OUT [--verify --inputs IN.pt]
#include <fx/graph_module_file.h>
#include <fx/passes/pass_manager.h>

#include <iostream>
#include <sstream>

#include "commands.h"

namespace fxc {

int opt(const CommandLine& cl) {
  auto gm = load_module(cl.positional(0));
  std::vector<std::string> names;
  std::stringstream list(cl.option("-p"));
  for (std::string name; std::getline(list, name, ',');)
    if (!name.empty()) names.push_back(name);
  if (names.empty()) throw UsageError("-p takes a comma-separated list of passes; see fxc opt --help");
  fx::passes::PassManager pm(names);
  pm.run_checks_after_each_pass = true;
  if (cl.has("--inputs")) pm.example_inputs = read_inputs(*gm, cl.option("--inputs"));
  if (cl.has("--verify")) {
    if (!cl.has("--inputs")) throw UsageError("--verify runs the module: give it --inputs IN.pt");
    pm.check_equivalence = true;
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
