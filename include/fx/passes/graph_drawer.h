#pragma once
// fx::passes::FxGraphDrawer: a GraphModule as a Graphviz graph, as
// torch/fx/passes/graph_drawer.py draws it with torch.fx 2.14 and pydot 4:
// one record per node (name, opcode, target, the args/kwargs that are not
// nodes, the number of users; for call_module the module's class and
// constants; after ShapeProp the dtype, shape, requires_grad and stride of
// its value), one Salmon record per parameter and buffer of each called
// module, an edge from each node to each of its users. Colours are FX's:
// fixed per opcode, and for call_function / call_method one of 16 picked by
// the MD5 of the target's name.
//
//   fx::passes::ShapeProp(*gm).propagate({torch::randn({1, 3, 224, 224})});
//   fx::passes::FxGraphDrawer drawer(*gm, "resnet18");
//   std::string dot = drawer.get_dot_graph().to_string();   // pydot's to_string()
//   drawer.get_dot_graph().write("resnet18.svg", "svg");     // runs Graphviz's `dot`
//
// A call_module of a GraphModule gets a graph of its own too, named
// "<name>_<target>" (get_dot_graph(target)).

#include <fx/graph_module.h>

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::passes {

// A graph in Graphviz's DOT language (what FX's pydot.Dot holds), and how to
// render it with Graphviz.
class DotGraph {
 public:
  DotGraph(std::string name, std::string text) : name_(std::move(name)), text_(std::move(text)) {}
  const std::string& name() const { return name_; }
  // The DOT text, as pydot's Dot.to_string() prints it.
  const std::string& to_string() const { return text_; }

  // Runs `prog -T<format>` (Graphviz) on the text and returns its output:
  // the bytes of an SVG, PNG, PDF... Throws fx::Error when the program
  // cannot be run (Graphviz not installed) or fails (with its stderr).
  std::string create(std::string_view format, const std::string& prog = "dot") const;
  std::string create_svg() const { return create("svg"); }
  std::string create_png() const { return create("png"); }
  // Writes the rendering to `path`; format "raw" writes the DOT text itself
  // (pydot's write). Throws fx::Error when the file cannot be written.
  void write(const std::string& path, std::string_view format = "raw", const std::string& prog = "dot") const;

 private:
  std::string name_;
  std::string text_;
};

class FxGraphDrawer {
 public:
  // Throws fx::Error naming the node whose call_module target the module
  // lacks.
  FxGraphDrawer(const GraphModule& graph_module, std::string name, bool ignore_getattr = false,
                bool ignore_parameters_and_buffers = false, bool skip_node_names_in_args = true);

  // The main graph, or (with a call_module target, or the path of a cond or
  // while_loop branch: `true_graph_0`) that submodule's graph; throws
  // fx::Error for a target that is neither a called GraphModule nor a branch.
  const DotGraph& get_dot_graph(std::optional<std::string_view> submod_name = std::nullopt) const;
  const DotGraph& get_main_dot_graph() const { return graphs_.front().second; }
  const DotGraph& get_submod_dot_graph(std::string_view submod_name) const;
  // Every graph by name, the main one first.
  const std::vector<std::pair<std::string, DotGraph>>& get_all_dot_graphs() const { return graphs_; }

 private:
  DotGraph to_dot(const GraphModule& gm, const std::string& name) const;

  std::string name_;
  bool ignore_getattr_, ignore_parameters_and_buffers_, skip_node_names_in_args_;
  std::vector<std::pair<std::string, DotGraph>> graphs_;
};

}  // namespace fx::passes
