// fx::compile: guards, the phases in order (phases.h), and the GraphModule
// that runs a specialization, with each kernel as one call_function node.
#include <fx/compile.h>

#include "phases.h"

#include <fx/error.h>
#include <fx/passes/cse.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/nn/module.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>
#include <unordered_set>

namespace fx {

namespace cd = compile_detail;

namespace {

using KernelFn = void (*)(const float* const*, float* const*);

// What a kernel node does when the GraphModule runs it: checks its inputs
// against the sizes it was built for, allocates its outputs, calls it.
class KernelCall : public Callable {
 public:
  KernelCall(std::string name, KernelFn fn, std::vector<passes::TensorMetadata> inputs,
             std::vector<std::vector<int64_t>> outputs)
      : name_(std::move(name)), fn_(fn), inputs_(std::move(inputs)), outputs_(std::move(outputs)) {}

  c10::IValue call(std::vector<c10::IValue> args, IValueKwargs) const override {
    if (args.size() != inputs_.size())
      throw Error(name_ + ": takes " + std::to_string(inputs_.size()) + " tensors, got " +
                  std::to_string(args.size()));
    std::vector<at::Tensor> keep(args.size());
    std::vector<const float*> in(args.size());
    for (size_t i = 0; i < args.size(); ++i) {
      const passes::TensorMetadata& want = inputs_[i];
      if (!args[i].isTensor()) throw Error(name_ + ": input " + std::to_string(i) + " is not a tensor");
      at::Tensor t = args[i].toTensor();
      if (t.scalar_type() != at::kFloat || !t.device().is_cpu() || t.sizes() != at::IntArrayRef(want.shape)) {
        std::ostringstream got;
        got << c10::toString(t.scalar_type()) << " " << t.device() << " " << t.sizes();
        throw Error(name_ + ": input " + std::to_string(i) + " is " + got.str() +
                    ", the kernel was built for float32 CPU tensors of its specialization's sizes");
      }
      // Strides other than the specialization's (an ATen op that chose
      // another layout this time): read a copy in the expected layout.
      if (t.numel() > 1 && t.strides() != at::IntArrayRef(want.stride))
        t = at::empty_strided(want.shape, want.stride, t.options()).copy_(t);
      keep[i] = t;
      in[i] = t.data_ptr<float>();
    }
    std::vector<at::Tensor> out(outputs_.size());
    std::vector<float*> out_ptrs(outputs_.size());
    for (size_t o = 0; o < outputs_.size(); ++o) {
      out[o] = at::empty(outputs_[o], at::TensorOptions().dtype(at::kFloat));
      out_ptrs[o] = out[o].data_ptr<float>();
    }
    fn_(in.data(), out_ptrs.data());
    if (out.size() == 1) return out[0];
    return c10::ivalue::Tuple::create(std::vector<c10::IValue>(out.begin(), out.end()));
  }
  std::string describe() const override { return "fx::compile kernel " + name_; }

 private:
  std::string name_;
  KernelFn fn_;
  std::vector<passes::TensorMetadata> inputs_;
  std::vector<std::vector<int64_t>> outputs_;  // sizes, each written contiguous
};

// The guard of one call: what a specialization assumed about its inputs,
// as bytes (compared on every call, so built without formatting).
template <class T>
void append(std::string& key, T v) {
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

void guard_key(const c10::IValue& v, std::string& key, size_t index) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    key += 'T';
    append(key, static_cast<int8_t>(t.scalar_type()));
    append(key, static_cast<int8_t>(t.device().type()));
    append(key, static_cast<int8_t>(t.device().index()));
    append(key, static_cast<int8_t>(t.requires_grad()));
    append(key, static_cast<int32_t>(t.dim()));
    for (int64_t d : t.sizes()) append(key, d);
    for (int64_t s : t.strides()) append(key, s);
  } else if (v.isInt()) {
    key += 'i';
    append(key, v.toInt());
  } else if (v.isDouble()) {
    key += 'd';
    append(key, v.toDouble());
  } else if (v.isBool()) {
    key += v.toBool() ? 'B' : 'b';
  } else if (v.isNone()) {
    key += 'N';
  } else if (v.isString()) {
    key += 's';
    append(key, v.toStringRef().size());
    key += v.toStringRef();
  } else if (v.isList() || v.isTuple()) {
    const auto items = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
    key += v.isList() ? 'L' : 'U';
    append(key, items.size());
    for (const auto& item : items) guard_key(item, key, index);
  } else {
    throw Error("fx::compile: input " + std::to_string(index) + " is a " + python_type_name(v) +
                "; a compiled module takes tensors, numbers, strings, None, and lists and tuples of them");
  }
}

std::string guard_key(const std::vector<c10::IValue>& inputs) {
  std::string key;
  key.reserve(64 * inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) guard_key(inputs[i], key, i);
  key += at::GradMode::is_enabled() ? 'G' : 'g';
  return key;
}

bool any_requires_grad(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().requires_grad();
  if (v.isList())
    for (const auto& item : v.toListRef())
      if (any_requires_grad(item)) return true;
  if (v.isTuple())
    for (const auto& item : v.toTupleRef().elements())
      if (any_requires_grad(item)) return true;
  return false;
}

double ms_since(std::chrono::steady_clock::time_point& t) {
  auto now = std::chrono::steady_clock::now();
  double ms = std::chrono::duration<double, std::milli>(now - t).count();
  t = now;
  return ms;
}

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

// CompileOptions' defaults, from the environment.
std::string default_cache_dir() {
  if (std::string d = env("FXCPP_CACHE_DIR"); !d.empty()) return d;
  // A folder of its own beside what else fxcpp keeps in its cache (the
  // Python environment of scripts/setup.sh).
  if (std::string d = env("XDG_CACHE_HOME"); !d.empty()) return d + "/fxcpp/kernels";
  if (std::string d = env("HOME"); !d.empty()) return d + "/.cache/fxcpp/kernels";
  return "/tmp/fxcpp-kernels";
}

std::string default_compiler() {
  std::string c = env("CXX");
  return c.empty() ? "c++" : c;
}

// What one graph's compilation wrote, for the debug files.
struct GraphSource {
  std::string label;    // "" for the top graph, else the branch's path ("true_graph_0")
  std::string hash;     // of its library; "" when it has no kernels
  std::string library;  // its path
  bool cache_hit = false;
  std::string source;
  std::vector<std::string> kernels;  // "name: member member ..."
};

using Phases = std::vector<std::pair<std::string, double>>;

void add_phase(Phases& phases, const std::string& name, double ms) {
  for (auto& [n, total] : phases)
    if (n == name) {
      total += ms;
      return;
    }
  phases.emplace_back(name, ms);
}

// The operands a higher-order node passes its branches (cond's operands,
// while_loop's carried and additional inputs), and the get_attr nodes of
// those branches; empty for any other node.
struct BranchCall {
  std::vector<Node*> graphs;
  std::vector<Node*> operands;
};
BranchCall branch_call(const Node& n) {
  BranchCall b;
  if (n.op() != Op::call_function) return b;
  const std::string& t = n.target().str();
  const bool is_cond = t == "torch.ops.higher_order.cond";
  if (!is_cond && t != "torch.ops.higher_order.while_loop") return b;
  const Args& args = n.args();
  const size_t first_graph = is_cond ? 1 : 0;
  for (size_t i = first_graph; i < first_graph + 2 && i < args.size(); ++i)
    if (Node* g = args[i].node()) b.graphs.push_back(g);
  for (size_t i = first_graph + 2; i < args.size(); ++i) {
    const Argument& a = args[i];
    const std::vector<Argument>* items = a.is<Tuple>()  ? &a.get<Tuple>().items
                                         : a.is<List>() ? &a.get<List>().items
                                                        : nullptr;
    if (!items) continue;
    for (const Argument& item : *items)
      if (Node* x = item.node()) b.operands.push_back(x);
  }
  return b;
}

// Tensors of the operands' sizes, strides and dtypes, for ShapeProp of a branch.
std::vector<Value> example_inputs(const std::vector<Node*>& operands, const std::string& where) {
  std::vector<Value> out;
  for (Node* x : operands) {
    const passes::TensorMetadata* m = cd::tensor_meta(*x);
    if (!m) throw Error("fx::compile: " + where + ": operand '" + x->name() + "' has no tensor metadata");
    out.emplace_back(at::empty_strided(m->shape, m->stride, at::TensorOptions().dtype(m->dtype)).zero_());
  }
  return out;
}

// The phases of phases.h on one captured graph, `inputs` being example
// values of its placeholders, and the GraphModule that runs the result:
// every fused node replaced by its kernel's call, at the place of the
// kernel's last member. The branches of its cond and while_loop nodes are
// compiled the same way (each on zeros shaped as its operands) and replace
// the submodules they came from.
std::unique_ptr<GraphModule> compile_graph(GraphModule& captured, const std::vector<Value>& inputs,
                                           const CompileOptions& options, CompileReport& report,
                                           std::vector<GraphSource>& sources, const std::string& label) {
  Phases& phase = report.phase_ms;
  auto t = std::chrono::steady_clock::now();
  Graph& graph = captured.graph();
  // Captured code often computes a value twice (x.t() in two expressions):
  // a kernel then reads one input instead of two.
  passes::cse(graph);
  add_phase(phase, "cse", ms_since(t));
  passes::ShapeProp(captured).propagate(inputs);
  add_phase(phase, "shape_prop", ms_since(t));
  cd::decompose(graph);
  add_phase(phase, "decompose", ms_since(t));
  std::unordered_map<const Node*, cd::PointwiseOp> lowered;
  for (Node* n : graph.nodes())
    if (auto op = cd::lower(*n)) lowered.emplace(n, std::move(*op));
  add_phase(phase, "lower", ms_since(t));
  std::vector<cd::Kernel> kernels = cd::schedule(graph, lowered);
  // Kernels write their outputs contiguous: kernels that read them read them so.
  for (const cd::Kernel& k : kernels)
    for (Node* out : k.outputs) out->meta().set("tensor_meta", cd::contiguous(*cd::tensor_meta(*out)));
  add_phase(phase, "schedule", ms_since(t));
  const std::string source = cd::generate_cpp(kernels, lowered, options.threads);
  add_phase(phase, "codegen", ms_since(t));
  std::shared_ptr<const cd::Library> library;
  if (!kernels.empty()) {
    library = cd::build_library(source, options.cache_dir, options.compiler);
  }
  add_phase(phase, "build", ms_since(t));

  const size_t slot = sources.size();  // this graph's, before its branches'
  sources.emplace_back();
  std::vector<std::pair<std::string, std::shared_ptr<GraphModule>>> branches;
  for (Node* n : graph.nodes()) {
    BranchCall call = branch_call(*n);
    for (Node* attr : call.graphs) {
      const std::string& path = attr->target().str();
      auto* branch = dynamic_cast<GraphModule*>(captured.get_submodule(path));
      if (!branch) continue;
      const std::string where = (label.empty() ? "" : label + ".") + path;
      // while_loop's condition and body both take the carried values.
      branches.emplace_back(path, compile_graph(*branch, example_inputs(call.operands, where), options,
                                                report, sources, where));
    }
  }
  t = std::chrono::steady_clock::now();  // the branches counted their own phases

  auto g = std::make_unique<Graph>();
  std::unordered_map<const Node*, Node*> map;
  std::unordered_map<const Node*, const cd::Kernel*> runs_at;
  std::unordered_set<const Node*> fused;
  GraphSource debug{label,
                    library ? library->hash.substr(0, 12) : "",
                    library ? library->path : "",
                    library && library->cache_hit,
                    source,
                    {}};
  for (const cd::Kernel& k : kernels) {
    runs_at[k.members.back()] = &k;
    fused.insert(k.members.begin(), k.members.end());
    report.fused_nodes += k.members.size();
    std::string line = k.name + ":";
    for (Node* m : k.members) line += " " + m->name();
    debug.kernels.push_back(std::move(line));
  }
  sources[slot] = std::move(debug);
  auto mapped = [&](Node* x) -> Argument { return map.at(x); };
  for (Node* n : graph.nodes()) {
    if (!fused.count(n)) {
      map[n] = g->node_copy(*n, mapped);
      if (n->op() == Op::call_function) ++report.extern_nodes;
      continue;
    }
    auto it = runs_at.find(n);
    if (it == runs_at.end()) continue;
    const cd::Kernel& k = *it->second;
    std::vector<passes::TensorMetadata> metas;
    std::vector<std::vector<int64_t>> output_sizes;
    for (Node* out : k.outputs) output_sizes.push_back(cd::tensor_meta(*out)->shape);
    Args args;
    for (Node* in : k.inputs) {
      metas.push_back(*cd::tensor_meta(*in));
      args.push_back(map.at(in));
    }
    const Target target("fxcpp.compiled.k" + library->hash.substr(0, 12) + "." + k.name);
    register_function(
        target, std::make_shared<KernelCall>(k.name, reinterpret_cast<KernelFn>(library->symbol(k.name)),
                                             std::move(metas), std::move(output_sizes)));
    Node* call = g->call_function(target, std::move(args));
    if (k.outputs.size() == 1) {
      map[k.outputs[0]] = call;
    } else {
      for (size_t o = 0; o < k.outputs.size(); ++o)
        map[k.outputs[o]] = g->call_function("operator.getitem", {call, static_cast<int64_t>(o)});
    }
  }
  g->set_pytree_info(graph.pytree_info());
  report.kernels += kernels.size();
  auto compiled = std::make_unique<GraphModule>(captured, std::move(g), "CompiledGraphModule");
  if (!branches.empty()) {
    for (auto& [path, branch] : branches) compiled->add_submodule(path, branch);
    compiled->recompile();
  }
  add_phase(phase, "wrap", ms_since(t));
  return compiled;
}

void write_debug_files(const std::string& debug_dir, const GraphModule& compiled,
                       const std::vector<GraphSource>& sources, const Phases& phases) {
  const std::string& hash = sources.front().hash;
  const std::string dir = debug_dir + "/" + (hash.empty() ? "no_kernels" : hash);
  std::filesystem::create_directories(dir);
  std::ofstream source_cpp(dir + "/source.cpp");
  std::ofstream kernels_txt(dir + "/kernels.txt");
  for (const GraphSource& s : sources) {
    // A branch's kernels are in a library of their own.
    if (!s.label.empty()) source_cpp << "\n// ---- " << s.label << " (library " << s.hash << ")\n";
    source_cpp << s.source;
    for (const std::string& k : s.kernels) kernels_txt << (s.label.empty() ? "" : s.label + ".") << k << "\n";
  }
  std::ofstream graph_txt(dir + "/graph.txt");
  graph_txt << compiled.graph().to_string();
  for (const GraphSource& s : sources)
    if (!s.label.empty())
      if (auto* branch = dynamic_cast<const GraphModule*>(compiled.get_submodule(s.label)))
        graph_txt << "\n" << s.label << ":\n" << branch->graph().to_string();
  std::ofstream phases_txt(dir + "/phases.txt");
  for (const auto& [name, ms] : phases) phases_txt << name << " " << ms << " ms\n";
}

}  // namespace

struct CompiledModule::Specialization {
  std::string key;
  std::unique_ptr<GraphModule> captured;  // owns the attributes the compiled graph reads
  std::unique_ptr<GraphModule> compiled;
  CompileReport report;
};

CompiledModule::CompiledModule(torch::nn::Module* root, Function fn, CompileOptions options)
    : root_(root), fn_(std::move(fn)), options_(std::move(options)) {
  if (options_.cache_dir.empty()) options_.cache_dir = default_cache_dir();
  if (options_.compiler.empty()) options_.compiler = default_compiler();
  if (options_.debug_dir.empty()) options_.debug_dir = env("FXCPP_COMPILE_DEBUG");
  if (options_.threads <= 0) options_.threads = at::get_num_threads();
}

CompiledModule::~CompiledModule() = default;

size_t CompiledModule::num_specializations() const { return specializations_.size(); }

GraphModule& CompiledModule::compiled_graph() const {
  if (!last_) throw Error("fx::CompiledModule::compiled_graph: nothing is compiled before the first run()");
  return *last_->compiled;
}

const CompileReport& CompiledModule::report() const {
  if (!last_) throw Error("fx::CompiledModule::report: nothing is compiled before the first run()");
  return last_->report;
}

c10::IValue CompiledModule::run(const std::vector<c10::IValue>& inputs) {
  if (at::GradMode::is_enabled()) {
    bool grad = false;
    for (const auto& v : inputs) grad = grad || any_requires_grad(v);
    if (root_)
      for (const auto& p : root_->parameters()) grad = grad || p.requires_grad();
    if (grad) return fn_(inputs);  // autograd must see every operator: not compiled yet
  }
  GraphModule* compiled;
  {
    std::lock_guard<std::mutex> lock(mu_);  // threads share specializations; each runs its own call
    Specialization* s = specialize(inputs);
    if (!s) return fn_(inputs);
    compiled = s->compiled.get();
  }
  return compiled->run(inputs);
}

CompiledModule::Specialization* CompiledModule::specialize(const std::vector<c10::IValue>& inputs) {
  const std::string key = guard_key(inputs);
  if (last_ && last_->key == key) return last_;
  for (auto& s : specializations_)
    if (s->key == key) return last_ = s.get();
  if (specializations_.size() == kMaxSpecializations) {
    // Inputs that change at every call would compile at every call.
    if (!warned_)
      TORCH_WARN(
          "fx::compile: ", kMaxSpecializations,
          " specializations compiled (sizes, strides or dtypes keep changing); calls that fit none of them "
          "run the original code");
    warned_ = true;
    return nullptr;
  }

  auto s = std::make_unique<Specialization>();
  s->key = key;
  auto& phase = s->report.phase_ms;
  auto t = std::chrono::steady_clock::now();

  CaptureOptions capture_options;
  capture_options.functionalize = true;
  s->captured = root_ ? capture(*root_, fn_, inputs, capture_options) : capture(fn_, inputs, capture_options);
  phase.emplace_back("capture", ms_since(t));
  std::vector<GraphSource> sources;
  s->compiled = compile_graph(*s->captured, std::vector<Value>(inputs.begin(), inputs.end()), options_,
                              s->report, sources, "");
  // The report's library is the top graph's (a branch's when it has none);
  // a cache hit means every library was found built.
  bool any = false, all_hit = true;
  for (const GraphSource& src : sources) {
    if (src.library.empty()) continue;
    if (!any) s->report.library = src.library;
    any = true;
    all_hit = all_hit && src.cache_hit;
  }
  s->report.cache_hit = any && all_hit;
  if (!options_.debug_dir.empty()) write_debug_files(options_.debug_dir, *s->compiled, sources, phase);
  specializations_.push_back(std::move(s));
  return last_ = specializations_.back().get();
}

std::unique_ptr<CompiledModule> compile(torch::nn::Module& root, CaptureFunction fn, CompileOptions options) {
  return std::make_unique<CompiledModule>(&root, std::move(fn), std::move(options));
}

std::unique_ptr<CompiledModule> compile(CaptureFunction fn, CompileOptions options) {
  return std::make_unique<CompiledModule>(nullptr, std::move(fn), std::move(options));
}

std::unique_ptr<CompiledModule> compile(GraphModule& gm, CompileOptions options) {
  return std::make_unique<CompiledModule>(
      &gm, [&gm](const std::vector<c10::IValue>& in) { return gm.run(in); }, std::move(options));
}

}  // namespace fx
