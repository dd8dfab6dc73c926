// to_folder: GraphModule.to_folder of torch.fx 2.14 (torch/fx/graph_module.py),
// with constructors where torch.fx pickles modules.
#include <fx/codegen/to_folder.h>
#include <fx/error.h>
#include <fx/nn/attention.h>

#include <caffe2/serialize/inline_container.h>

#include <filesystem>
#include <fstream>
#include <string_view>
#include <vector>

#include "../ir/repr.h"
#include "../module/module_dicts.h"
#include "../serialize/torch_load.h"
#include "write_file.h"

namespace fx {

namespace {

namespace fs = std::filesystem;

bool is_identifier(std::string_view s) {
  static constexpr std::string_view keywords[] = {
      "False", "None",     "True",  "and",    "as",   "assert", "async",  "await",    "break",
      "class", "continue", "def",   "del",    "elif", "else",   "except", "finally",  "for",
      "from",  "global",   "if",    "import", "in",   "is",     "lambda", "nonlocal", "not",
      "or",    "pass",     "raise", "return", "try",  "while",  "with",   "yield"};
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  for (auto k : keywords)
    if (s == k) return false;
  return true;
}

// str(pathlib.Path(dir)): no repeated separators, no `.` components, no
// trailing separator (torch.fx prints the folder through Path).
std::string path_str(const std::string& dir) {
  bool absolute = !dir.empty() && dir[0] == '/';
  std::string out;
  size_t start = 0;
  while (start <= dir.size()) {
    size_t slash = dir.find('/', start);
    std::string part = dir.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    if (!part.empty() && part != ".") out += (out.empty() ? "" : "/") + part;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  if (absolute) return "/" + out;
  return out.empty() ? "." : out;
}

std::string shape_list(const at::Tensor& t) {
  std::string out = "[";
  for (int64_t i = 0; i < t.dim(); ++i) out += (i ? ", " : "") + std::to_string(t.size(i));
  return out + "]";
}

std::string empty_decl(const at::Tensor& t) {
  return "torch.empty(" + shape_list(t) + ", dtype=" + detail::repr_dtype(t.scalar_type()) + ")";
}

// Writes the lines of module.py's __init__ that build the module tree.
class ModuleWriter {
 public:
  explicit ModuleWriter(std::string& out) : out_(out) {}

  // `setattr(self, '<name>', <expr>)` for a child of the GraphModule (torch.fx's
  // line, which also takes a name that is no identifier), then its subtree.
  void top_level(const std::string& name, const torch::nn::Module& m) {
    out_ += "        setattr(self, " + detail::repr_string(name) + ", " + constructor(m, name) + ")\n";
    subtree(m, name);
  }

  // The tensors of a container (torch.fx registers them on the module made
  // for the dotted path), after its children exist.
  void tensors(const torch::nn::Module& m, const std::string& path) {
    std::string self = path.empty() ? "self" : "self.get_submodule(" + detail::repr_string(path) + ")";
    for (const auto& b : m.named_buffers(false))
      if (b.value().defined())
        out_ += "        " + self + ".register_buffer(" + detail::repr_string(b.key()) + ", " +
                empty_decl(b.value()) + ")\n";
    if (const auto* fm = dynamic_cast<const Module*>(&m))
      for (const auto& [name, t] : fm->attributes())
        out_ += "        " + self + ".register_buffer(" + detail::repr_string(name) + ", " + empty_decl(t) +
                ")\n";
    for (const auto& p : m.named_parameters(false))
      if (p.value().defined()) {
        std::string ctor = "torch.nn.Parameter(" + empty_decl(p.value()) + ")";
        if (path.empty())  // torch.fx's own line for the GraphModule's parameters
          out_ += "        setattr(self, " + detail::repr_string(p.key()) + ", " + ctor + ")\n";
        else
          out_ +=
              "        " + self + ".register_parameter(" + detail::repr_string(p.key()) + ", " + ctor + ")\n";
      }
  }

 private:
  static bool is_container(const torch::nn::Module& m) {
    const auto* fm = dynamic_cast<const Module*>(&m);
    if (!fm || fm->is_standard_leaf()) return false;
    return detail::is_container_type(fm->type_name());
  }

  // A Python expression that constructs `m` (a container: an empty one).
  static std::string constructor(const torch::nn::Module& m, const std::string& path) {
    const auto* fm = dynamic_cast<const Module*>(&m);
    if (is_container(m)) return fm->type_name().substr(std::string("torch.nn.").size()) + "()";
    if (!fm || !fm->is_standard_leaf() || fm->type_name().rfind("torch.nn.", 0) != 0)
      throw Error("to_folder: the submodule at '" + path + "' (" + detail::type_of(m) +
                  ") has no PyTorch equivalent that module.py could construct; only fx::nn modules "
                  "and containers of them can be written (replace it by fx::nn modules, or trace "
                  "through it)");
    if (const auto* mha = dynamic_cast<const nn::MultiheadAttention*>(fm)) {
      // Its repr lists out_proj as a child: spell the constructor instead.
      auto b = [](bool v) { return std::string(v ? "True" : "False"); };
      return "MultiheadAttention(" + std::to_string(mha->embed_dim) + ", " + std::to_string(mha->num_heads) +
             ", dropout=" + detail::repr_float(mha->dropout) + ", bias=" + b(mha->in_proj_bias.defined()) +
             ", add_bias_kv=" + b(mha->bias_k.defined()) + ", add_zero_attn=" + b(mha->add_zero_attn) +
             ", kdim=" + std::to_string(mha->kdim) + ", vdim=" + std::to_string(mha->vdim) +
             ", batch_first=" + b(mha->batch_first) + ")";
    }
    if (!m.children().empty())
      throw Error("to_folder: the submodule at '" + path + "' (" + fm->type_name() +
                  ") has children, so its repr is no constructor, and fxcpp knows no other spelling "
                  "for it");
    return fm->repr();
  }

  // The children of `m` (at `path`) and their tensors, depth first.
  void subtree(const torch::nn::Module& m, const std::string& path) {
    if (!is_container(m)) return;  // a leaf's constructor made its whole state
    for (const auto& c : m.named_children()) {
      std::string child = path + "." + c.key();
      out_ += "        self.get_submodule(" + detail::repr_string(path) + ").add_module(" +
              detail::repr_string(c.key()) + ", " + constructor(*c.value(), child) + ")\n";
      subtree(*c.value(), child);
    }
    tensors(m, path);
  }

  std::string& out_;
};

// Module.state_dict() as torch.fx's GraphModule has it: tensor attributes are
// buffers there (torch.fx's _copy_attr registers them so).
void collect(const torch::nn::Module& m, const std::string& prefix, c10::Dict<std::string, at::Tensor>& out) {
  for (const auto& p : m.named_parameters(false))
    if (p.value().defined()) out.insert(prefix + p.key(), p.value().detach());
  for (const auto& b : m.named_buffers(false))
    if (b.value().defined()) out.insert(prefix + b.key(), b.value().detach());
  if (const auto* fm = dynamic_cast<const Module*>(&m))
    for (const auto& [name, t] : fm->attributes()) out.insert(prefix + name, t.detach());
  for (const auto& c : m.named_children()) collect(*c.value(), prefix + c.key() + ".", out);
}

// torch.save's archive of `value`, as fx::save_state_dict writes one: plain
// containers, which torch.load's weights_only default (torch >= 2.6) accepts,
// and module.py calls torch.load so.
std::string save_untagged(const c10::IValue& value) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* bytes, size_t n) {
    out.append(static_cast<const char*>(bytes), n);
    return n;
  });
  detail::write_torch_save(value, writer);
  writer.writeEndOfFile();
  return out;
}

}  // namespace

void to_folder(const GraphModule& gm, const std::string& dir, const std::string& module_name) {
  if (!is_identifier(module_name))
    throw Error("to_folder: module_name '" + module_name +
                "' is not a Python identifier, so `from <folder> import " + module_name +
                "` could not name it; pick a name like 'FxModule'");
  const std::string folder = path_str(dir);

  // Build everything first: a module with no PyTorch spelling writes nothing.
  std::string model = "\nimport torch\n";
  model +=
      "from math import inf\nfrom math import nan\nNoneType = type(None)\nimport torch\n"
      "from torch import device\nimport torch.fx._pytree as fx_pytree\n"
      "import torch.utils._pytree as pytree\n";
  model += "\nfrom torch.nn import *\nclass " + module_name +
           "(torch.nn.Module):\n    def __init__(self):\n        super().__init__()\n";
  ModuleWriter writer(model);
  for (const auto& c : gm.named_children()) writer.top_level(c.key(), *c.value());
  writer.tensors(gm, "");
  model += "        self.load_state_dict(torch.load(r'" + folder + "/state_dict.pt'))\n";
  model += detail::add_indent(gm.code(), 4) + "\n";
  c10::Dict<std::string, at::Tensor> state;
  collect(gm, "", state);

  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error("to_folder: cannot create the folder '" + dir + "'" + (ec ? " (" + ec.message() + ")" : "") +
                "; its parent must exist and be writable");
  detail::write_file(fs::path(dir) / "state_dict.pt", save_untagged(state), "to_folder");
  detail::write_file(fs::path(dir) / "module.py", model, "to_folder");
  detail::write_file(fs::path(dir) / "__init__.py", "from .module import *", "to_folder");
}

}  // namespace fx
