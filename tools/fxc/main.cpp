// fxc: GraphModule files from the command line (docs/fxc.md).
#include <fx/error.h>
#include <fx/passes/pass_registry.h>
#include <fx/torchvision.h>

#include <c10/util/Exception.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <string>
#include <vector>

#include "commands.h"

namespace {

using fxc::CommandSpec;

struct Command {
  CommandSpec spec;
  std::function<int(const fxc::CommandLine&)> run;
};

std::string pass_list() {
  std::string s;
  for (const auto& p : fx::passes::registered_passes()) s += "  " + p.name + std::string(p.name.size() < 16 ? 16 - p.name.size() : 1, ' ') + p.description + "\n";
  return s;
}

const std::vector<Command>& commands() {
  static const std::vector<Command> c = {
      {{"show", "show FILE [--graph|--code|--tabular|--cpp]",
        "Prints the GraphModule (its module tree and code, as str(gm) does; for a .pt2 also the graph\n"
        "signature and range constraints), or only its graph, its generated Python code, the graph as\n"
        "a table, or the C++ forward that export-cpp writes.",
        1, {}, {"--graph", "--code", "--tabular", "--cpp"}},
       fxc::show},
      {{"run", "run FILE --inputs IN.pt [--output OUT.pt]",
        "Runs forward on the tensors of IN.pt (torch.save([x, ...], 'IN.pt') in Python) and writes\n"
        "the outputs to OUT.pt as a list of tensors (torch.load reads it), or prints their shapes.\n"
        "A .pt2 runs as torch.export's ep.module() does: IN.pt holds the user inputs flattened\n"
        "(torch.utils._pytree.tree_leaves((args, kwargs))); state comes from the file.",
        1, {"--inputs", "--output"}, {}},
       fxc::run},
      {{"opt", "opt FILE -p PASS[,PASS...] -o OUT [--inputs IN.pt] [--verify [--rtol R] [--atol A]]",
        "Runs the passes in order (linting after each) and writes the result to OUT. --verify\n"
        "checks after each pass that the outputs on IN.pt stay allclose (rtol 1e-4, atol 1e-5 by\n"
        "default), and names the pass that changed them. shape_prop needs --inputs. The passes:\n",
        1, {"-p", "-o", "--inputs", "--rtol", "--atol"}, {"--verify"}},
       fxc::opt},
      {{"draw", "draw FILE -o GRAPH.svg|png|dot",
        "Draws the graph with Graphviz (FxGraphDrawer's picture; shapes when the file has tensor_meta).",
        1, {"-o"}, {}},
       fxc::draw},
      {{"export-cpp", "export-cpp FILE DIR [--class-name NAME]",
        "Writes a standalone LibTorch C++ project of forward into DIR (docs/export.md).", 2, {"--class-name"}, {}},
       fxc::export_cpp},
      {{"export-py", "export-py FILE DIR [--module-name NAME]",
        "Writes a Python package of the module into DIR, as torch.fx's GraphModule.to_folder does.", 2,
        {"--module-name"}, {}},
       fxc::export_py},
      {{"bench", "bench FILE --inputs IN.pt [-n RUNS] [--warmup N] [--threads N]",
        "Times forward on IN.pt: min, median and max over RUNS runs (default 100) after N warm-up\n"
        "runs (default 5), on N intra-op threads (default: LibTorch's), and the time loading took.",
        1, {"--inputs", "-n", "--warmup", "--threads"}, {}},
       fxc::bench},
      {{"compile",
        "compile FILE --inputs IN.pt [--output OUT.pt] [--debug DIR] [--emit DIR [--class-name N]] [-n RUNS]",
        "Compiles forward with fx::compile (fused C++ kernels, docs/compile.md) for the tensors of\n"
        "IN.pt, checks its outputs against the module's, prints what was fused and the time of each\n"
        "phase, and times both (median of RUNS runs, default 20). --debug writes the generated source.\n"
        "--emit writes the compiled program as a standalone C++ project (kernels, forward, weights,\n"
        "CMakeLists.txt) that builds against LibTorch: docs/compile.md, Exporting.",
        1, {"--inputs", "--output", "--debug", "--emit", "--class-name", "-n"}, {}},
       fxc::compile},
  };
  return c;
}

void usage(std::FILE* out) {
  std::fprintf(out, "usage: fxc COMMAND [ARGS]\n\nGraphModule files (fx::save, python3 -m fxcpp export) and torch.export programs\n(torch.export.save, .pt2) from the command line.\n\ncommands:\n");
  for (const auto& c : commands()) std::fprintf(out, "  fxc %s\n", c.spec.usage.c_str());
  std::fprintf(out, "\nfxc COMMAND --help describes one.\n");
}

// One line: the message with its line breaks folded.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& ch : s)
    if (ch == '\n' || ch == '\t') ch = ' ';
  return s;
}

int fail(const std::string& message, int code) {
  const bool colour = fxc::is_terminal(2);
  std::fprintf(stderr, "%sfxc: error:%s %s\n", colour ? "\033[1;31m" : "", colour ? "\033[0m" : "",
               one_line(message).c_str());
  return code;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    usage(args.empty() ? stderr : stdout);
    return args.empty() ? 2 : 0;
  }
  for (const auto& c : commands()) {
    if (c.spec.name != args[0]) continue;
    std::vector<std::string> rest(args.begin() + 1, args.end());
    for (const auto& a : rest)
      if (a == "--help" || a == "-h") {
        std::cout << "usage: fxc " << c.spec.usage << "\n\n" << c.spec.help << "\n";
        if (c.spec.name == "opt") std::cout << pass_list();
        return 0;
      }
    try {
      // Files traced in Python from torchvision models call its wrapped functions.
      fx::torchvision::register_functions();
      return c.run(fxc::CommandLine(c.spec, rest));
    } catch (const fxc::UsageError& e) {
      return fail(e.what(), 2);
    } catch (const fx::Error& e) {
      return fail(e.what(), 1);
    } catch (const c10::Error& e) {
      return fail(e.what_without_backtrace(), 1);
    } catch (const std::exception& e) {
      return fail(e.what(), 1);
    }
  }
  return fail("no command '" + args[0] + "'; the commands are show, run, opt, draw, export-cpp, export-py, bench (fxc --help)", 2);
}
