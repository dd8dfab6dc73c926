// fxc draw FILE -o graph.svg|png|dot
#include <fx/passes/graph_drawer.h>

#include "commands.h"

namespace fxc {

int draw(const CommandLine& cl) {
  const std::string output = cl.option("-o");
  const size_t dot = output.rfind('.');
  const std::string ext = dot == std::string::npos ? "" : output.substr(dot + 1);
  if (ext != "svg" && ext != "png" && ext != "dot")
    throw UsageError("fxc draw writes .svg, .png or .dot files, not '" + output + "'");
  auto gm = load_module(cl.positional(0));
  fx::passes::FxGraphDrawer drawer(*gm, gm->type_name());
  drawer.get_dot_graph().write(output, ext == "dot" ? "raw" : ext);
  return 0;
}

}  // namespace fxc
