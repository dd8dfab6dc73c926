// fxc show FILE [--graph|--code|--tabular|--cpp]
#include <fx/codegen/cpp_export.h>
#include <fx/passes/print_tabular.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "commands.h"

namespace fxc {

namespace {

// The forward.cpp that fxc export-cpp would write.
std::string cpp_forward(const fx::GraphModule& gm) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("fxc-show-" + std::to_string(::getpid()));
  struct Cleanup {
    fs::path dir;
    ~Cleanup() {
      std::error_code ec;
      fs::remove_all(dir, ec);
    }
  } cleanup{dir};
  fx::export_cpp(gm, dir.string());
  std::ifstream in(dir / "forward.cpp");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace

int show(const CommandLine& cl) {
  int chosen = cl.has("--graph") + cl.has("--code") + cl.has("--tabular") + cl.has("--cpp");
  if (chosen > 1) throw UsageError("fxc show prints one of --graph, --code, --tabular, --cpp");
  Program program = load_program(cl.positional(0));
  const auto& gm = program.module;
  if (cl.has("--graph"))
    std::cout << gm->graph().to_string() << "\n";
  else if (cl.has("--code"))
    std::cout << gm->code();
  else if (cl.has("--tabular"))
    std::cout << fx::passes::print_tabular(gm->graph()) << "\n";
  else if (cl.has("--cpp"))
    std::cout << cpp_forward(*gm);
  else
    std::cout << gm->to_string() << "\n";
  if (program.exported && !chosen) {
    // As torch prints an ExportedProgram after its module.
    std::cout << "Graph signature:" << program.exported->graph_signature().to_string() << "Range constraints: {";
    bool first = true;
    for (const auto& [symbol, r] : program.exported->range_constraints()) {
      std::cout << (first ? "" : ", ") << symbol << ": VR[" << (r.min_val ? std::to_string(*r.min_val) : "-int_oo")
                << ", " << (r.max_val ? std::to_string(*r.max_val) : "int_oo") << "]";
      first = false;
    }
    std::cout << "}\n";
  }
  return 0;
}

}  // namespace fxc
