// fx::save / fx::load: GraphModule files (docs/format.md).
#include <fx/graph_module_file.h>
#include <fx/module_spec.h>
#include <fx/nn/init.h>
#include <fx/state_dict.h>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/istream_adapter.h>
#include <torch/serialize.h>

#include <fstream>
#include <set>
#include <sstream>
#include <unordered_map>

#include "../ir/repr.h"
#include "../module/module_dicts.h"
#include "allocation_budget.h"
#include "argument_json.h"
#include "graph_json.h"
#include "torch_load.h"
#include "zip_reader.h"

namespace fx {

namespace {

using detail::Json;

constexpr const char* kFormat = "fxcpp.GraphModule";
constexpr int kVersion = 1;
constexpr const char* kGraphModuleType = "torch.fx.GraphModule";

// ---- save ------------------------------------------------------------------

class FileWriter {
 public:
  void module_tree(const torch::nn::Module& m, const std::string& prefix) {
    for (const auto& p : detail::parameters_of(m))
      if (p.value().defined()) tensor(prefix + p.key(), "parameter", p.value());
    for (const auto& b : detail::buffers_of(m))
      if (b.value().defined()) tensor(prefix + b.key(), "buffer", b.value());
    if (const auto* fm = dynamic_cast<const Module*>(&m))
      for (const auto& [name, t] : fm->attributes()) tensor(prefix + name, "attribute", t);
    for (const auto& c : detail::children_of(m)) {
      const std::string path = prefix + c.key();
      if (const auto* gm = dynamic_cast<const GraphModule*>(c.value().get())) {
        // A GraphModule below the root (a branch of cond or while_loop, a
        // submodule of split_module): its graph, then its tensors and
        // children as a container's.
        modules_.push_back(Json{{"path", path},
                                {"type", kGraphModuleType},
                                {"kwargs", Json::object()},
                                {"training", gm->is_training()},
                                {"class_name", gm->type_name()},
                                {"graph", detail::graph_to_json(gm->graph())}});
        module_tree(*gm, path + ".");
        continue;
      }
      ModuleSpec spec;
      const auto* fm = dynamic_cast<const Module*>(c.value().get());
      try {
        // A container's own tensors are in the tensor list: it needs no constructor arguments.
        spec = fm && detail::is_container_type(fm->type_name()) ? ModuleSpec{fm->type_name(), {}}
                                                                : module_spec(*c.value());
      } catch (const Error& e) {
        throw Error("fx::save: the submodule '" + path + "' has no file form: " + e.what());
      }
      Json kwargs = Json::object();
      for (const auto& [k, v] : spec.kwargs)
        kwargs[k] = detail::argument_to_json(v, "module '" + path + "' " + k);
      modules_.push_back(Json{{"path", path},
                              {"type", spec.type},
                              {"kwargs", std::move(kwargs)},
                              {"training", c.value()->is_training()}});
      if (detail::is_container_type(spec.type)) {
        module_tree(*c.value(), path + ".");
      } else {
        std::set<std::string> params;
        for (const auto& p : c.value()->named_parameters(/*recurse=*/true)) params.insert(p.key());
        for (const auto& [key, t] : state_dict(*c.value()))
          tensor(path + "." + key, params.count(key) ? "parameter" : "buffer", t);
      }
    }
  }

  Json modules() { return std::move(modules_); }
  Json tensors() { return std::move(tensors_); }
  const c10::Dict<std::string, at::Tensor>& data() const { return data_; }

 private:
  void tensor(const std::string& path, const char* kind, const at::Tensor& t) {
    tensors_.push_back(Json{{"path", path},
                            {"kind", kind},
                            {"dtype", detail::repr_dtype(t.scalar_type())},
                            {"shape", t.sizes().vec()},
                            {"requires_grad", t.requires_grad()}});
    data_.insert(path, t.detach());
  }

  Json modules_ = Json::array();
  Json tensors_ = Json::array();
  c10::Dict<std::string, at::Tensor> data_;
};

// ---- load ------------------------------------------------------------------

// The root the loaded GraphModule is made from, and the containers of the
// module tree.
class LoadedContainer final : public Module {
 public:
  LoadedContainer() : Module("torch.nn.Module", {}) {}
  Value forward(const std::vector<Value>&) override {
    throw Error("a container module of a GraphModule file has no forward");
  }
};

class FileReader {
 public:
  explicit FileReader(std::string name) : name_(std::move(name)) {}

  std::unique_ptr<GraphModule> read(caffe2::serialize::PyTorchStreamReader& archive) {
    Json top = parse(archive);
    check_header(top);
    StateDict stored;
    try {
      stored = detail::read_state_dict(archive, name_);
    } catch (const Error& e) {
      fail("tensors", e.what());
    }
    for (auto& [path, t] : stored) stored_.emplace(path, std::move(t));
    auto root = std::make_shared<LoadedContainer>();
    modules_[""] = {root, true};
    read_declarations(array_field(top, "tensors", ""));
    read_modules(array_field(top, "modules", ""));
    place_tensors();
    make_graph_modules();
    std::unique_ptr<Graph> graph;
    try {
      graph = detail::graph_from_json(field(top, "graph", ""));
    } catch (const LoadError& e) {
      throw LoadError(name_ + ": " + e.what());
    }
    const Json& class_name = field(top, "class_name", "");
    if (!class_name.is_string()) fail("class_name", "expected a string");
    const Json& training = field(top, "training", "");
    if (!training.is_boolean()) fail("training", "expected true or false");
    root->train(training.get<bool>());
    for (const auto& [m, flag] : training_) m->train(flag);  // preorder: a parent first, then its children
    try {
      return std::make_unique<GraphModule>(*root, std::move(graph), class_name.get<std::string>());
    } catch (const Error& e) {
      throw LoadError(name_ + ": the graph does not make a GraphModule: " + e.what());
    }
  }

 private:
  struct Entry {
    std::shared_ptr<torch::nn::Module> module;
    bool container;
  };
  struct Declared {
    std::string path, kind;
    at::Tensor tensor;
    bool requires_grad;
    std::string where;
  };

  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw LoadError(name_ + ": " + where + ": " + what);
  }

  const Json& field(const Json& obj, const char* key, const std::string& where) const {
    auto it = obj.find(key);
    if (it == obj.end()) fail(where.empty() ? "graph.json" : where, std::string("missing \"") + key + "\"");
    return *it;
  }
  const Json& array_field(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_array()) fail(where.empty() ? key : where + "." + key, "expected an array");
    return v;
  }
  const std::string& string_field(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_string()) fail(where + "." + key, "expected a string, got " + std::string(v.type_name()));
    return v.get_ref<const std::string&>();
  }

  Json parse(caffe2::serialize::PyTorchStreamReader& archive) const {
    at::DataPtr data;
    size_t size = 0;
    try {
      if (!archive.hasRecord("graph.json"))
        fail("graph.json",
             "no such record: a torch.save file, but not a GraphModule file (write one with fx::save or "
             "python3 -m fxcpp export)");
      std::tie(data, size) = archive.getRecord("graph.json");
    } catch (const c10::Error& e) {
      fail("graph.json", std::string("cannot read the record: ") + e.what_without_backtrace());
    }
    const char* p = static_cast<const char*>(data.get());
    try {
      return Json::parse(p, p + size);
    } catch (const Json::parse_error& e) {
      fail("graph.json", std::string("not valid JSON: ") + e.what());
    }
  }

  void check_header(const Json& top) const {
    if (!top.is_object()) fail("graph.json", "expected a JSON object at the top");
    const Json& format = field(top, "format", "");
    if (format != kFormat) fail("format", "expected \"" + std::string(kFormat) + "\", got " + format.dump());
    const Json& version = field(top, "version", "");
    if (!version.is_number_integer() || version.get<int64_t>() < 1)
      fail("version", "expected a positive integer, got " + version.dump());
    if (version.get<int64_t>() > kVersion)
      fail("version", "the file is version " + version.dump() + "; this fxcpp reads version " +
                          std::to_string(kVersion) + " and older: update fxcpp");
  }

  void read_modules(const Json& modules) {
    for (size_t i = 0; i < modules.size(); ++i) {
      std::string where = "modules[" + std::to_string(i) + "]";
      const Json& mj = modules[i];
      if (!mj.is_object()) fail(where, "expected an object");
      const std::string& path = string_field(mj, "path", where);
      where += " ('" + path + "')";
      auto [parent_path, name] = detail::split_path(path);
      if (name.empty()) fail(where, "a module path is a dotted path of non-empty names");
      if (modules_.count(path)) fail(where, "a second module at '" + path + "'");
      auto parent = modules_.find(parent_path);
      if (parent == modules_.end())
        fail(where,
             "its parent '" + parent_path + "' is not listed before it (modules are listed parents first)");
      if (!parent->second.container)
        fail(where,
             "its parent '" + parent_path + "' is a leaf module, whose constructor makes its children");
      ModuleSpec spec{string_field(mj, "type", where), {}};
      const Json& kwargs = field(mj, "kwargs", where);
      if (!kwargs.is_object()) fail(where + ".kwargs", "expected an object");
      detail::NodeLookup no_nodes = [&](const std::string&, const std::string& w) -> Node* {
        throw LoadError(w + ": a constructor argument cannot be a node");
      };
      try {
        for (auto it = kwargs.begin(); it != kwargs.end(); ++it)
          spec.kwargs.emplace_back(
              it.key(), detail::argument_from_json(it.value(), where + ".kwargs." + it.key(), no_nodes));
      } catch (const LoadError& e) {
        throw LoadError(name_ + ": " + e.what());
      }
      std::shared_ptr<torch::nn::Module> m;
      const bool graph_module = spec.type == kGraphModuleType;
      if (spec.type == "torch.nn.Module" || graph_module) {
        if (!spec.kwargs.empty()) fail(where, spec.type + " takes no constructor arguments");
        // A GraphModule is made once its tensors and children are in place
        // (make_graph_modules); until then it holds them as a container.
        m = std::make_shared<LoadedContainer>();
        if (graph_module) {
          const Json& class_name = field(mj, "class_name", where);
          if (!class_name.is_string()) fail(where + ".class_name", "expected a string");
          graph_modules_.push_back({path, where, class_name.get<std::string>(), &field(mj, "graph", where)});
        }
      } else {
        try {
          // Its parameters, plus room for what initialising them takes.
          auto bytes = bytes_under_.find(path);
          detail::AllocationBudget budget(4 * (bytes == bytes_under_.end() ? 0 : bytes->second) + (16u << 20),
                                          "the " + spec.type + " at '" + path + "'");
          // Every tensor of the module is replaced by the file's (place_tensors
          // checks): drawing random values first is wasted work.
          fx::nn::SkipInit skip;
          m = make_module(spec);
        } catch (const LoadError& e) {
          fail(where, e.what());
        } catch (const Error& e) {
          fail(where, e.what());
        } catch (const c10::Error& e) {
          fail(where, e.what_without_backtrace());
        }
      }
      if (auto t = mj.find("training"); t != mj.end()) {
        if (!t->is_boolean()) fail(where + ".training", "expected true or false");
        training_.emplace_back(m, t->get<bool>());
      }
      parent->second.module->register_module(name, m);
      modules_[path] = {m, graph_module || detail::is_container_type(spec.type)};
    }
  }

  // Each GraphModule of the module tree made from its container, children
  // before parents (the list is parents first), and put in its place.
  void make_graph_modules() {
    for (auto it = graph_modules_.rbegin(); it != graph_modules_.rend(); ++it) {
      std::unique_ptr<Graph> graph;
      try {
        graph = detail::graph_from_json(*it->graph);
      } catch (const LoadError& e) {
        fail(it->where, e.what());
      }
      Entry& entry = modules_.at(it->path);
      std::shared_ptr<GraphModule> gm;
      try {
        gm = std::make_shared<GraphModule>(dynamic_cast<Module&>(*entry.module), std::move(graph),
                                           it->class_name);
      } catch (const Error& e) {
        fail(it->where, std::string("the graph does not make a GraphModule: ") + e.what());
      }
      auto [parent_path, name] = detail::split_path(it->path);
      modules_.at(parent_path).module->replace_module(name, gm);
      for (auto& [m, flag] : training_)
        if (m == entry.module) m = gm;
      entry.module = gm;
    }
  }

  // The tensors list, checked against the stored tensors.
  void read_declarations(const Json& tensors) {
    for (size_t i = 0; i < tensors.size(); ++i) {
      std::string where = "tensors[" + std::to_string(i) + "]";
      const Json& tj = tensors[i];
      if (!tj.is_object()) fail(where, "expected an object");
      const std::string& path = string_field(tj, "path", where);
      where += " ('" + path + "')";
      if (!declared_paths_.insert(path).second) fail(where, "a second tensor at '" + path + "'");
      const std::string& kind = string_field(tj, "kind", where);
      auto stored = stored_.find(path);
      if (stored == stored_.end())
        fail(where, "declared in graph.json but missing from the tensors (data.pkl)");
      const at::Tensor& t = stored->second;
      const auto dtype = detail::dtype_from_name(string_field(tj, "dtype", where), where + ".dtype");
      std::vector<int64_t> shape;
      const Json& sj = field(tj, "shape", where);
      if (!sj.is_array()) fail(where + ".shape", "expected an array of integers");
      for (const Json& d : sj) {
        if (!d.is_number_integer()) fail(where + ".shape", "expected an array of integers");
        shape.push_back(d.get<int64_t>());
      }
      if (t.scalar_type() != dtype || t.sizes().vec() != shape)
        fail(where, "declared " + detail::repr_dtype(dtype) + c10::str(c10::IntArrayRef(shape)) +
                        " but the stored tensor is " + detail::repr_dtype(t.scalar_type()) +
                        c10::str(t.sizes()));
      const Json& rg = field(tj, "requires_grad", where);
      if (!rg.is_boolean()) fail(where + ".requires_grad", "expected true or false");
      declared_.push_back({path, kind, t, rg.get<bool>(), where});
      // What a module's constructor may allocate: the bytes of the tensors under it.
      for (std::string prefix = detail::split_path(path).first; !prefix.empty();
           prefix = detail::split_path(prefix).first)
        bytes_under_[prefix] += t.nbytes();
    }
    for (const auto& [path, t] : stored_)
      if (!declared_paths_.count(path))
        fail("tensors", "the stored tensor '" + path + "' is not declared in graph.json");
  }

  void place_tensors() {
    for (const Declared& d : declared_) place(d.path, d.kind, d.tensor, d.requires_grad, d.where);
    for (const auto& [path, entry] : modules_) {
      if (entry.container) continue;
      for (const auto& [key, t] : state_dict(*entry.module))
        if (!declared_paths_.count(path + "." + key))
          fail("tensors",
               "the module '" + path + "' has the tensor '" + key + "', which the file does not hold");
    }
  }

  // Registers a container's tensor, or copies a leaf module's tensor into it.
  void place(const std::string& path, const std::string& kind, const at::Tensor& t, bool requires_grad,
             const std::string& where) {
    // The deepest listed module on the path owns it.
    std::string owner = path;
    std::string name;
    while (true) {
      auto [parent, last] = detail::split_path(owner);
      name = name.empty() ? last : last + "." + name;
      owner = parent;
      if (modules_.count(owner)) break;  // the root "" always is
    }
    Entry& e = modules_.at(owner);
    if (!e.container) {
      at::Tensor dst;  // a handle: it shares the module's storage
      for (auto& p : e.module->named_parameters(true))
        if (p.key() == name) dst = p.value();
      for (auto& b : e.module->named_buffers(true))
        if (b.key() == name) dst = b.value();
      if (!dst.defined())
        fail(where, "the " + detail::type_of(*e.module) + " at '" + owner + "' has no tensor '" + name + "'");
      if (dst.sizes() != t.sizes() || dst.scalar_type() != t.scalar_type())
        fail(where, "the " + detail::type_of(*e.module) + " at '" + owner + "' has '" + name + "' of " +
                        detail::repr_dtype(dst.scalar_type()) + c10::str(dst.sizes()) + ", the file " +
                        detail::repr_dtype(t.scalar_type()) + c10::str(t.sizes()));
      dst.set_data(t);  // the module's tensor now uses the file's storage: no copy
      return;
    }
    if (name.find('.') != std::string::npos)
      fail(where, "no module '" + path.substr(0, path.rfind('.')) + "' is listed to hold it");
    if (kind == "parameter")
      e.module->register_parameter(name, t, requires_grad);
    else if (kind == "buffer")
      e.module->register_buffer(name, t);
    else if (auto* fm = dynamic_cast<Module*>(e.module.get()); fm && kind == "attribute")
      fm->register_attribute(name, t);
    else
      fail(where + ".kind", "expected \"parameter\", \"buffer\" or \"attribute\", got \"" + kind + "\"");
  }

  std::string name_;
  std::unordered_map<std::string, at::Tensor> stored_;
  std::unordered_map<std::string, Entry> modules_;
  std::vector<Declared> declared_;
  std::set<std::string> declared_paths_;
  std::unordered_map<std::string, size_t> bytes_under_;
  std::vector<std::pair<std::shared_ptr<torch::nn::Module>, bool>> training_;
  struct GraphModuleEntry {
    std::string path, where, class_name;
    const Json* graph;  // in the parsed graph.json, which outlives read()
  };
  std::vector<GraphModuleEntry> graph_modules_;
};

// `source` is a stream or bytes (detail::open_zip).
template <class Source>
std::unique_ptr<GraphModule> load_archive(Source&& source, const std::string& name) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  try {
    archive = detail::open_zip(source);
  } catch (const c10::Error& e) {
    throw LoadError(name + ": not a GraphModule file (not a zip archive torch.save could have written): " +
                    e.what_without_backtrace());
  }
  try {
    return FileReader(name).read(*archive);
  } catch (const LoadError&) {
    throw;
  } catch (const c10::Error& e) {  // a corrupted record of the archive
    throw LoadError(name + ": " + e.what_without_backtrace());
  } catch (const Json::exception& e) {
    throw LoadError(name + ": graph.json: " + e.what());
  } catch (const Error& e) {
    throw LoadError(name + ": " + e.what());
  }
}

}  // namespace

namespace {

// Writes the archive through `sink` record by record, as torch.save lays it
// out ("data.pkl", a "data/<i>" record per tensor storage, "byteorder"), plus
// graph.json. The pickler only references the tensors' storages, so the
// tensor bytes go from the module to the sink without a copy in between.
void write_archive(const GraphModule& gm, const std::function<size_t(const void*, size_t)>& sink) {
  FileWriter w;
  w.module_tree(gm, "");
  Json top = Json::object();
  top["format"] = kFormat;
  top["version"] = kVersion;
  top["class_name"] = gm.type_name();
  top["training"] = gm.is_training();
  top["modules"] = w.modules();
  top["tensors"] = w.tensors();
  top["graph"] = detail::graph_to_json(gm.graph());
  const std::string json = top.dump(1);

  caffe2::serialize::PyTorchStreamWriter writer(sink);
  detail::write_torch_save(w.data(), writer);
  writer.writeRecord("graph.json", json.data(), json.size());
  writer.writeEndOfFile();
}

}  // namespace

std::string save_to_bytes(const GraphModule& gm) {
  std::string out;
  write_archive(gm, [&](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  return out;
}

void save(const GraphModule& gm, const std::string& path) {
  std::ofstream file(path, std::ios::binary);
  if (!file) throw Error("fx::save: cannot open " + path + " for writing (is the folder writable?)");
  try {
    write_archive(gm, [&](const void* p, size_t n) -> size_t {
      file.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
      return file ? n : 0;  // PyTorchStreamWriter throws on a short write
    });
    file.flush();
  } catch (const c10::Error& e) {
    throw Error("fx::save: writing " + path + " failed (disk full?): " + e.what_without_backtrace());
  }
  if (!file) throw Error("fx::save: writing " + path + " failed (disk full?)");
}

std::unique_ptr<GraphModule> load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path + ": cannot open the file");
  return load_archive(in, path);
}

std::unique_ptr<GraphModule> load_from_bytes(std::string_view bytes, const std::string& name) {
  return load_archive(bytes, name);
}

}  // namespace fx
