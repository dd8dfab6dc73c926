// fx::compile: guards, the phases in order (phases.h), and the GraphModule
// that runs a specialization, with each kernel as one call_function node.
#include <fx/compile.h>

#include "autograd_program.h"
#include "phases.h"

#include "../ir/repr.h"
#include "../passes/md5.h"

#include <fx/error.h>
#include <fx/passes/cse.h>
#include <fx/runtime.h>

#include <ATen/ATen.h>
#include <ATen/EmptyTensor.h>
#include <ATen/Parallel.h>
#include <c10/util/SmallVector.h>
#include <torch/nn/module.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <sstream>
#include <string_view>
#include <tuple>
#include <unordered_set>

namespace fx {

namespace cd = compile_detail;

namespace {

// A kernel of element type S, as codegen_cpp.cpp declares it.
template <class S>
using KernelFn = void (*)(const S* const*, S* const*, const int64_t*);

// What a kernel node does when the GraphModule runs it: its arguments are
// the kernel's input tensors and then the shape it loops over. It checks
// that the inputs have the form the kernel was written for (copying one
// that an ATen call laid out otherwise this time), allocates the outputs,
// and calls the kernel with the sizes and strides of this call: one
// registered kernel serves every size of its form. The kernel loops over
// the shape in its order (Kernel::order): sizes and strides are permuted so,
// and its outputs are laid out so. Its inputs and outputs have the type it
// computes in (S), or are bool (masks), each as `types` says.
struct KernelTypes {
  at::ScalarType compute;
  std::vector<at::ScalarType> inputs, outputs;
};
class KernelCall : public Callable {
 public:
  // `built_sizes`, `built_strides`: those of each input the kernel was
  // generated for, which a static kernel has in its source.
  KernelCall(std::string name, void* fn, KernelTypes types, cd::KernelForm form, std::vector<int64_t> order,
             std::vector<std::vector<int64_t>> built_sizes, std::vector<std::vector<int64_t>> built_strides)
      : name_(std::move(name)),
        fn_(fn),
        types_(std::move(types)),
        form_(std::move(form)),
        order_(std::move(order)),
        built_sizes_(std::move(built_sizes)),
        built_strides_(std::move(built_strides)) {
    for (size_t d = 0; d < order_.size(); ++d)
      row_major_ = row_major_ && order_[d] == static_cast<int64_t>(d);
  }

  c10::IValue call(std::vector<c10::IValue> args, IValueKwargs kwargs) const override {
    const size_t n = form_.scalar.size();
    std::optional<size_t> reuse;
    for (const auto& [key, value] : kwargs) {
      if (key != "reuse_input" || !value.isInt() || value.toInt() < 0 ||
          static_cast<size_t>(value.toInt()) >= n)
        throw Error(name_ + ": takes one keyword argument, reuse_input=<an input's index>, got " + key);
      reuse = static_cast<size_t>(value.toInt());
    }
    if (args.size() != n + 1 || !args.back().isIntList())
      throw Error(name_ + ": takes " + std::to_string(n) + " tensors and the shape it loops over, got " +
                  std::to_string(args.size()) + " arguments");
    // A call allocates nothing but its outputs: the sizes and strides go
    // into this thread's vectors, which keep their capacity between calls.
    thread_local Scratch scratch;
    std::vector<int64_t>& shape = scratch.shape;
    shape.clear();
    for (const c10::IValue& d : args.back().toListRef()) shape.push_back(d.toInt());
    c10::SmallVector<at::Tensor, 8> in(n);
    std::vector<std::vector<int64_t>>& read = scratch.read;
    read.resize(n);
    for (size_t i = 0; i < n; ++i) {
      if (!args[i].isTensor()) throw Error(name_ + ": input " + std::to_string(i) + " is not a tensor");
      in[i] = std::move(args[i]).toTensor();
      if (in[i].scalar_type() != types_.inputs[i] || !in[i].device().is_cpu())
        throw Error(name_ + ": input " + std::to_string(i) + " is " + c10::toString(in[i].scalar_type()) +
                    " on " + in[i].device().str() + "; the kernel takes a " +
                    fx::detail::repr_dtype(types_.inputs[i]) + " CPU tensor there");
      if (!cd::read_strides(in[i].sizes(), in[i].strides(), shape, read[i]))
        throw Error(name_ + ": input " + std::to_string(i) + " of sizes " + c10::str(in[i].sizes()) +
                    " does not broadcast to the kernel's shape " + c10::str(c10::IntArrayRef(shape)));
      if (!row_major_) read[i] = cd::permuted(read[i], order_);
    }
    const std::vector<int64_t> permuted_shape =
        row_major_ ? std::vector<int64_t>() : cd::permuted(shape, order_);
    const c10::IntArrayRef loop_shape =
        row_major_ ? c10::IntArrayRef(shape) : c10::IntArrayRef(permuted_shape);
    std::vector<int64_t>& dims = scratch.dims;
    if (!cd::kernel_dims(form_, layout_, loop_shape, read, dims)) {
      // An ATen call (or a kernel, which lays out its outputs as its first
      // input) chose another layout than the capture saw: read copies of
      // the inputs, laid out as a static kernel was built for them, or
      // dense in the kernel's order.
      for (size_t i = 0; i < n; ++i) {
        const std::vector<int64_t>& sizes = built_sizes_[i];
        const std::vector<int64_t>& strides = built_strides_[i];
        if (!form_.baked.empty() && in[i].sizes() == c10::IntArrayRef(sizes)) {
          if (in[i].strides() != c10::IntArrayRef(strides))
            in[i] = at::empty_strided(sizes, strides, in[i].options()).copy_(in[i]);
        } else if (in[i].sizes() == c10::IntArrayRef(shape)) {
          if (cd::dense_order(in[i].sizes(), in[i].strides()) == order_) continue;
          in[i] = at::empty_strided(shape, cd::dense_strides(shape, order_), in[i].options()).copy_(in[i]);
        } else if (!in[i].is_contiguous()) {
          in[i] = in[i].contiguous();
        }
        read[i] = cd::permuted(*cd::read_strides(in[i].sizes(), in[i].strides(), shape), order_);
      }
      if (!cd::kernel_dims(form_, layout_, loop_shape, read, dims))
        throw Error(name_ + ": its inputs at shape " + c10::str(c10::IntArrayRef(shape)) + " are not " +
                    (form_.baked.empty()
                         ? "laid out as the kernel was written for"
                         : "of the sizes and layout the kernel was built for (a static kernel)") +
                    "; compile again");
    }
    const size_t outputs = form_.full_outputs.size();
    c10::SmallVector<at::Tensor, 4> out(outputs);
    for (size_t o = 0; o < outputs; ++o) {
      if (o == 0 && reuse && form_.full_outputs[0] && in[*reuse].scalar_type() == types_.outputs[0] &&
          owns_its_buffer(in[*reuse], shape)) {
        out[0] = in[*reuse];
        continue;
      }
      // The kernel writes every element: ATen's empty on the CPU, without
      // the dispatcher in between.
      const at::ScalarType dtype = types_.outputs[o];
      if (!form_.full_outputs[o]) {
        std::vector<int64_t>& per_row = scratch.per_row;
        per_row.assign(shape.begin(), shape.end());
        if (!per_row.empty()) per_row.back() = 1;
        out[o] = at::Tensor(at::detail::empty_cpu(per_row, dtype));
      } else if (row_major_) {
        out[o] = at::Tensor(at::detail::empty_cpu(shape, dtype));
      } else {
        out[o] = at::Tensor(at::detail::empty_strided_cpu(shape, cd::dense_strides(shape, order_), dtype));
      }
    }
    if (types_.compute == at::kDouble)
      run<double>(in, out, dims);
    else if (types_.compute == at::kLong)
      run<int64_t>(in, out, dims);
    else if (types_.compute == at::kInt)
      run<int32_t>(in, out, dims);
    else
      run<float>(in, out, dims);
    if (out.size() == 1) return std::move(out[0]);
    return c10::ivalue::Tuple::create(std::vector<c10::IValue>(out.begin(), out.end()));
  }
  std::string describe() const override { return "fx::compile kernel " + name_; }

 private:
  // The first output may be written into the input marked reuse_input (the
  // compiled graph's last read of a value no one else holds): each element
  // is read before it is written, at the same place. At run time the input
  // must also be the only tensor on its storage, cover all of it, and be
  // laid out as the output would be; otherwise a new output is allocated.
  template <class S>
  void run(c10::ArrayRef<at::Tensor> in, c10::ArrayRef<at::Tensor> out,
           const std::vector<int64_t>& dims) const {
    c10::SmallVector<const S*, 16> in_ptrs(in.size());
    // A bool tensor's data is passed as an S pointer: the kernel reads and
    // writes it as bool (codegen_cpp.cpp's load_mask and store_mask).
    for (size_t i = 0; i < in.size(); ++i) in_ptrs[i] = static_cast<const S*>(in[i].const_data_ptr());
    c10::SmallVector<S*, 4> out_ptrs(out.size());
    for (size_t o = 0; o < out.size(); ++o) out_ptrs[o] = static_cast<S*>(out[o].mutable_data_ptr());
    reinterpret_cast<KernelFn<S>>(fn_)(in_ptrs.data(), out_ptrs.data(), dims.data());
  }

  bool owns_its_buffer(const at::Tensor& t, const std::vector<int64_t>& shape) const {
    const c10::Storage& storage = t.storage();
    return storage.use_count() == 1 && t.storage_offset() == 0 && t.sizes() == c10::IntArrayRef(shape) &&
           storage.nbytes() == static_cast<size_t>(t.numel()) * t.element_size() &&
           cd::dense_order(t.sizes(), t.strides()) == order_;
  }

  // A call's sizes and strides, one per thread (see call()).
  struct Scratch {
    std::vector<int64_t> shape, per_row, dims;
    std::vector<std::vector<int64_t>> read;
  };

  std::string name_;
  void* fn_;  // a KernelFn<S> of S the type of types_.compute
  KernelTypes types_;
  cd::KernelForm form_;
  cd::DimsLayout layout_ = cd::dims_layout(form_);  // where its `dims` go
  std::vector<int64_t> order_;
  std::vector<std::vector<int64_t>> built_sizes_, built_strides_;
  bool row_major_ = true;
};

// The guard of one call: what a specialization assumed about its inputs,
// as bytes (compared on every call, so built without formatting). A walk
// over the inputs puts them into a Sink: KeyWriter appends them to a key,
// KeyMatcher compares them with a key in place, which lets a call that
// repeats the last one's guard allocate and hash nothing.
struct KeyWriter {
  std::string& key;
  template <class T>
  void put(T v) {
    key.append(reinterpret_cast<const char*>(&v), sizeof v);
  }
  void put_bytes(std::string_view b) { key += b; }
};
struct KeyMatcher {
  const char* p;
  const char* end;
  bool ok = true;
  // Of a fixed size, which the compiler turns into one comparison.
  template <class T>
  void put(T v) {
    // Bytes, not values: a NaN (or -0.0) input matches the key it wrote.
    // NOLINTNEXTLINE(bugprone-suspicious-memory-comparison)
    ok = ok && static_cast<size_t>(end - p) >= sizeof v && std::memcmp(p, &v, sizeof v) == 0;
    if (ok) p += sizeof v;
  }
  void put_bytes(std::string_view b) {
    ok = ok && static_cast<size_t>(end - p) >= b.size() &&
         (b.empty() || std::memcmp(p, b.data(), b.size()) == 0);
    if (ok) p += b.size();
  }
};

template <class Sink>
void guard_key(const c10::IValue& v, Sink& key, size_t index) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    key.put('T');
    key.put(static_cast<int8_t>(t.scalar_type()));
    key.put(static_cast<int8_t>(t.device().type()));
    key.put(static_cast<int8_t>(t.device().index()));
    key.put(static_cast<int8_t>(t.requires_grad()));
    key.put(static_cast<int32_t>(t.dim()));
    for (c10::IntArrayRef a : {t.sizes(), t.strides()})
      key.put_bytes(std::string_view(reinterpret_cast<const char*>(a.data()), a.size() * sizeof(int64_t)));
  } else if (v.isInt()) {
    key.put('i');
    key.put(v.toInt());
  } else if (v.isDouble()) {
    key.put('d');
    key.put(v.toDouble());
  } else if (v.isBool()) {
    key.put(v.toBool() ? 'B' : 'b');
  } else if (v.isNone()) {
    key.put('N');
  } else if (v.isString()) {
    key.put('s');
    key.put(v.toStringRef().size());
    key.put_bytes(v.toStringRef());
  } else if (v.isList() || v.isTuple()) {
    const auto items = v.isList() ? v.toListRef().vec() : v.toTupleRef().elements().vec();
    key.put(v.isList() ? 'L' : 'U');
    key.put(items.size());
    for (const auto& item : items) guard_key(item, key, index);
  } else {
    throw Error("fx::compile: input " + std::to_string(index) + " is a " + python_type_name(v) +
                "; a compiled module takes tensors, numbers, strings, None, and lists and tuples of them");
  }
}

// What a capture assumed about the module besides the inputs: each
// module's training flag (dropout and batch norm capture differently in
// each mode) and, while grad mode is on, which parameters require grad
// (those are the gradients its graph computes).
struct ModuleState {
  const std::vector<const torch::nn::Module*>& modules;
  const std::vector<at::Tensor>& parameters;
};

template <class Sink>
void guard_key(const std::vector<c10::IValue>& inputs, const ModuleState& state, Sink& key) {
  for (size_t i = 0; i < inputs.size(); ++i) guard_key(inputs[i], key, i);
  const bool grad = at::GradMode::is_enabled();
  key.put(grad ? 'G' : 'g');
  for (const torch::nn::Module* m : state.modules) key.put(m->is_training() ? 'M' : 'm');
  if (grad)
    for (const at::Tensor& p : state.parameters) key.put(p.requires_grad() ? 'P' : 'p');
}

std::string guard_key(const std::vector<c10::IValue>& inputs, const ModuleState& state) {
  std::string key;
  key.reserve(64 * inputs.size() + state.modules.size() + state.parameters.size());
  KeyWriter writer{key};
  guard_key(inputs, state, writer);
  return key;
}

// Whether `key` is the guard of `inputs` and the module's state.
bool guards(const std::string& key, const std::vector<c10::IValue>& inputs, const ModuleState& state) {
  KeyMatcher matcher{key.data(), key.data() + key.size()};
  guard_key(inputs, state, matcher);
  return matcher.ok && matcher.p == matcher.end;
}

// The module and its submodules, as pointers: the guard reads their flags
// at every call.
std::vector<const torch::nn::Module*> module_tree(torch::nn::Module* root) {
  std::vector<const torch::nn::Module*> out;
  if (!root) return out;
  out.push_back(root);
  // modules(include_self=false): the root need not be held by a shared_ptr.
  for (const auto& m : root->modules(/*include_self=*/false)) out.push_back(m.get());
  return out;
}

// Whether no tensor but `t` (and its base, held by `t` alone, when it is
// a view) reads or writes its memory.
bool alone_in_its_memory(const at::Tensor& t) {
  if (!t.is_view()) return t.storage().use_count() == 1;
  return t.storage().use_count() == 2 && t._base().use_count() == 1;
}

// Adds a training step's gradients (path -> tensor) to the .grad() of
// root's parameters, as loss.backward() does: a parameter without one takes
// the tensor's memory when nothing else holds it and it is laid out as the
// parameter (no copy), a copy so laid out otherwise; one with a gradient
// adds to it in place.
void accumulate_gradients(torch::nn::Module& root, const c10::impl::GenericDict& grads) {
  at::NoGradGuard no_grad;
  auto parameters = root.named_parameters(/*recurse=*/true);
  std::vector<std::pair<at::Tensor, at::Tensor>> pairs;
  for (const auto& entry : grads) {
    const std::string& path = entry.key().toStringRef();
    at::Tensor* p = parameters.find(path);
    if (!p)
      throw Error(
          "fx::compile_training_step: the step computed a gradient for '" + path +
          "', which is no parameter of the module any more; compile the step again for the new module");
    pairs.emplace_back(*p, entry.value().toTensor());
  }
  for (auto& [p, g] : pairs) {
    if (p.grad().defined()) {
      p.mutable_grad().add_(g);
    } else if (alone_in_its_memory(g) && g.strides() == p.strides() && g.is_non_overlapping_and_dense()) {
      // The same memory in a tensor that is no view: g's base (a matrix
      // product's result, of which g is a transpose of a transpose) dies with g.
      p.mutable_grad() =
          at::empty({0}, g.options()).set_(g.storage(), g.storage_offset(), g.sizes(), g.strides());
    } else {
      p.mutable_grad() = at::empty_like(p).copy_(g);
    }
  }
}

// A training step's result and gradients, as its graph returns them.
c10::IValue step_result(torch::nn::Module& root, const c10::IValue& out) {
  if (!out.isTuple() || out.toTupleRef().elements().size() != 2 ||
      !out.toTupleRef().elements()[1].isGenericDict())
    throw Error("fx::compile_training_step: the compiled step returned a " + python_type_name(out) +
                ", not its (result, gradients) pair");
  const auto& items = out.toTupleRef().elements();
  accumulate_gradients(root, items[1].toGenericDict());
  return items[0];
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
  std::vector<std::string> kernels;   // "name: member member ..."
  std::vector<cd::KernelSite> sites;  // each kernel node's, for export_cpp
};

// How the kernel node of `k` calls it at the sizes it was compiled for:
// its inputs laid out as their tensor_meta says, `dims` as generated for them.
cd::KernelSite kernel_site(const std::string& target, const cd::Kernel& k, const cd::KernelForm& form,
                           std::vector<int64_t> dims) {
  cd::KernelSite site{target, k.name, k.dtype, {}, {}, {}, {}, {}, {}, std::move(dims)};
  for (Node* in : k.inputs) {
    const passes::TensorMetadata* m = cd::tensor_meta(*in);
    site.input_dtypes.push_back(m->dtype);
    site.input_sizes.push_back(m->shape);
    site.input_strides.push_back(m->stride);
  }
  for (Node* out : k.outputs) site.output_dtypes.push_back(cd::tensor_meta(*out)->dtype);
  std::vector<int64_t> per_row = k.shape;
  if (!per_row.empty()) per_row.back() = 1;
  for (bool full : form.full_outputs) {
    site.output_sizes.push_back(full ? k.shape : per_row);
    site.output_strides.push_back(cd::dense_strides(full ? k.shape : per_row, k.order));  // rows: row-major
  }
  return site;
}

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

// Tensors of the operands' sizes, strides and dtypes: a branch's example inputs.
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
// `may_build(source)` is asked before each library is built or loaded.
// `dynamic`: kernels that take their sizes as arguments, else static ones.
// `use` decides what may change the graph's layouts and weights:
// - the layout pass runs on all but a forward under autograd, whose outputs
//   the backward reads as captured (it would copy each one back);
// - a training step reads other weights at every call, so a weight copied
//   to channels_last is copied on each call;
// - only inference packs weights for MKL and oneDNN (pack_weights.cpp),
//   in a static program: a product's packing serves one row count, and
//   weights that change at every step would be packed again at every step.
enum class GraphUse : uint8_t { inference, training_step, autograd_forward, autograd_backward };

std::unique_ptr<GraphModule> compile_graph(GraphModule& captured, const std::vector<Value>& inputs,
                                           const CompileOptions& options, CompileReport& report,
                                           std::vector<GraphSource>& sources, const std::string& label,
                                           const std::function<void(const std::string&)>& may_build,
                                           bool dynamic, GraphUse use) {
  Phases& phase = report.phase_ms;
  auto t = std::chrono::steady_clock::now();
  Graph& graph = captured.graph();
  // Captured code often computes a value twice (x.t() in two expressions):
  // a kernel then reads one input instead of two.
  passes::cse(graph);
  add_phase(phase, "cse", ms_since(t));
  // The sizes, strides and dtypes the phases read are fx::capture's: it
  // records each node's tensor_meta from the tensor it saw, as ShapeProp
  // would (running the graph again, a second forward, only to find them).
  if (use != GraphUse::autograd_forward)
    cd::channels_last_convolutions(captured, inputs, /*weights_kept=*/use != GraphUse::training_step);
  add_phase(phase, "layout", ms_since(t));
  cd::decompose(graph);
  add_phase(phase, "decompose", ms_since(t));
  std::unordered_map<const Node*, cd::PointwiseOp> lowered;
  for (Node* n : graph.nodes())
    if (auto op = cd::lower(*n)) lowered.emplace(n, std::move(*op));
  add_phase(phase, "lower", ms_since(t));
  std::vector<cd::Kernel> kernels = cd::schedule(graph, lowered);
  cd::order_loops(kernels);
  add_phase(phase, "schedule", ms_since(t));
  const cd::GeneratedSource generated = cd::generate_cpp(kernels, lowered, options.threads, dynamic);
  const std::string& source = generated.source;
  add_phase(phase, "codegen", ms_since(t));
  std::shared_ptr<const cd::Library> library;
  if (!kernels.empty()) {
    may_build(source);
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
                                                report, sources, where, may_build, dynamic, use));
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
                    {},
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
  std::vector<std::tuple<Node*, const cd::Kernel*, const cd::KernelForm*>> kernel_calls;
  for (Node* n : graph.nodes()) {
    if (!fused.count(n)) {
      map[n] = g->node_copy(*n, mapped);
      if (n->op() == Op::call_function) ++report.extern_nodes;
      continue;
    }
    auto it = runs_at.find(n);
    if (it == runs_at.end()) continue;
    const cd::Kernel& k = *it->second;
    Args args;
    for (Node* in : k.inputs) args.push_back(map.at(in));
    std::vector<Argument> shape;
    for (int64_t d : k.shape) shape.emplace_back(d);
    args.push_back(list(std::move(shape)));
    const Target target("fxcpp.compiled.k" + library->hash.substr(0, 12) + "." + k.name);
    const size_t index = &k - kernels.data();
    const cd::KernelForm& form = generated.forms[index];
    cd::KernelSite site = kernel_site(target.str(), k, form, generated.dims[index]);
    register_function(
        target, std::make_shared<KernelCall>(k.name, library->symbol(k.name),
                                             KernelTypes{k.dtype, site.input_dtypes, site.output_dtypes},
                                             form, k.order, site.input_sizes, site.input_strides));
    sources[slot].sites.push_back(std::move(site));
    Node* call = g->call_function(target, std::move(args));
    kernel_calls.emplace_back(call, &k, &form);
    if (k.outputs.size() == 1) {
      map[k.outputs[0]] = call;
    } else {
      for (size_t o = 0; o < k.outputs.size(); ++o)
        map[k.outputs[o]] = g->call_function("operator.getitem", {call, static_cast<int64_t>(o)});
    }
  }
  // A tensor of one number that only kernels read is a constant in them
  // (lower.cpp): nothing reads its `full` any more.
  for (Node* n : g->find_nodes(Op::call_function, Target("torch.ops.aten.full.default")))
    if (n->num_users() == 0) {
      g->erase_node(n);
      --report.extern_nodes;
    }
  for (const auto& [call, k, form] : kernel_calls) cd::mark_reuse(*call, *k, *form);
  cd::sink_weight_computations(*g);
  g->set_pytree_info(graph.pytree_info());
  report.kernels += kernels.size();
  auto compiled = std::make_unique<GraphModule>(captured, std::move(g), "CompiledGraphModule");
  for (auto& [path, branch] : branches) compiled->add_submodule(path, branch);
  // ATen calls moved into kept weight values run once, not on each call.
  auto aten_calls = [&] {
    size_t n = 0;
    for (const Node* node : compiled->graph().nodes())
      n += node->op() == Op::call_function && node->target().str().rfind("fxcpp.compiled.", 0) != 0 &&
           node->target().str() != "operator.getitem";
    return n;
  };
  const size_t calls_before = aten_calls();
  bool changed = use == GraphUse::inference && !dynamic && cd::pack_weights(*compiled) > 0;
  changed = cd::cache_weight_computations(*compiled) > 0 || changed;
  report.extern_nodes = report.extern_nodes + aten_calls() - calls_before;
  if (changed || !branches.empty()) compiled->recompile();
  add_phase(phase, "wrap", ms_since(t));
  return compiled;
}

// A joint graph of a forward and its backward (cd::joint_function's),
// split and compiled as two programs; `inputs` are example values of its
// placeholders.
std::shared_ptr<const cd::AutogradProgram> compile_autograd(
    std::unique_ptr<GraphModule> joint, const cd::JointLayout& layout, const std::vector<Value>& inputs,
    const CompileOptions& options, CompileReport& report, std::vector<GraphSource>& sources,
    const std::function<void(const std::string&)>& may_build, bool dynamic) {
  auto program = std::make_shared<cd::AutogradProgram>();
  program->layout = layout;
  cd::JointPartition parts = cd::partition_joint(*joint, layout.outputs, layout.tangents);
  std::vector<Node*> backward_inputs;
  for (Node* n : parts.backward->graph().nodes())
    if (n->op() == Op::placeholder) backward_inputs.push_back(n);
  // example_inputs throws for a placeholder without tensor_meta.
  const std::vector<Value> backward_examples = example_inputs(backward_inputs, "backward");
  for (size_t i = parts.num_saved; i < backward_inputs.size(); ++i)
    program->tangents.push_back(*cd::tensor_meta(*backward_inputs[i]));
  for (size_t i = 0; i < parts.num_saved; ++i) program->saved_names.push_back(backward_inputs[i]->name());
  // The backward was captured for the layouts the forward saved: the
  // forward keeps them.
  program->forward = compile_graph(*parts.forward, inputs, options, report, sources, "", may_build, dynamic,
                                   GraphUse::autograd_forward);
  program->backward = compile_graph(*parts.backward, backward_examples, options, report, sources, "backward",
                                    may_build, dynamic, GraphUse::autograd_backward);
  program->joint = std::move(joint);
  program->captured_forward = std::move(parts.forward);
  program->captured_backward = std::move(parts.backward);
  return program;
}

void write_debug_files(const std::string& debug_dir, const GraphModule& compiled, const GraphModule* backward,
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
  if (backward) graph_txt << "\nbackward:\n" << backward->graph().to_string();
  std::ofstream phases_txt(dir + "/phases.txt");
  for (const auto& [name, ms] : phases) phases_txt << name << " " << ms << " ms\n";
}

// The inputs a specialization's graph takes: tensors, and lists and tuples
// (of tensors). A number, string, bool or None is part of the guard, and
// the graph is captured with its value as a constant.
bool graph_input(const c10::IValue& v) { return v.isTensor() || v.isList() || v.isTuple(); }

std::vector<c10::IValue> graph_inputs(const std::vector<c10::IValue>& inputs) {
  std::vector<c10::IValue> out;
  for (const c10::IValue& v : inputs)
    if (graph_input(v)) out.push_back(v);
  return out;
}

}  // namespace

struct CompiledModule::Specialization {
  std::string key;
  bool constants = false;                 // some inputs are values captured as constants, not graph inputs
  std::unique_ptr<GraphModule> captured;  // owns the attributes the compiled graph reads
  std::unique_ptr<GraphModule> compiled;  // nullptr, and no autograd: these inputs run the original code
  // A forward and backward compiled apart, for calls that autograd sees.
  std::shared_ptr<const cd::AutogradProgram> autograd;
  bool runs_compiled() const { return compiled || autograd; }
  GraphModule& runs() const { return autograd ? *autograd->forward : *compiled; }
  CompileReport report;
  // What export_cpp writes: each graph's kernel source and kernel nodes,
  // the top graph's first.
  std::vector<cd::KernelSource> sources;
};

namespace {
// Thrown by may_build when a specialization needs a program past
// kMaxPrograms; the specialization then runs the original code.
struct TooManyPrograms {};
}  // namespace

CompiledModule::CompiledModule(torch::nn::Module* root, Function fn, CompileOptions options,
                               bool training_step)
    : root_(root),
      fn_(std::move(fn)),
      options_(std::move(options)),
      training_step_(training_step),
      modules_(module_tree(root)) {
  if (training_step_ && !root_)
    throw Error("fx::compile_training_step: the step needs the module whose parameters it trains");
  if (root_) parameters_ = root_->parameters(/*recurse=*/true);
  if (options_.cache_dir.empty()) options_.cache_dir = default_cache_dir();
  if (options_.compiler.empty()) options_.compiler = default_compiler();
  if (options_.debug_dir.empty()) options_.debug_dir = env("FXCPP_COMPILE_DEBUG");
  if (options_.threads <= 0) options_.threads = at::get_num_threads();
}

CompiledModule::~CompiledModule() = default;

size_t CompiledModule::num_specializations() const {
  std::lock_guard<std::mutex> lock(mu_);
  return specializations_.size();
}

size_t CompiledModule::num_programs() const {
  std::lock_guard<std::mutex> lock(mu_);
  return programs_.size();
}

GraphModule& CompiledModule::compiled_graph() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_) throw Error("fx::CompiledModule::compiled_graph: nothing is compiled before the first run()");
  return last_->runs();
}

GraphModule& CompiledModule::compiled_backward_graph() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_)
    throw Error("fx::CompiledModule::compiled_backward_graph: nothing is compiled before the first run()");
  if (!last_->autograd)
    throw Error(
        "fx::CompiledModule::compiled_backward_graph: the last compiled call has no backward: it ran "
        "without autograd (under NoGradGuard, or with nothing that requires grad)");
  return *last_->autograd->backward;
}

const CompileReport& CompiledModule::report() const {
  std::lock_guard<std::mutex> lock(mu_);
  if (!last_) throw Error("fx::CompiledModule::report: nothing is compiled before the first run()");
  return last_->report;
}

namespace {

// A compiled graph as an exported project runs it: keeping no values between
// calls (its products read the weights as they are), and so each branch.
std::unique_ptr<GraphModule> standalone(GraphModule& compiled) {
  std::unique_ptr<GraphModule> program = cd::inline_weight_caches(compiled);
  cd::unpack_weights(program->graph());
  for (const Node* n : program->graph().nodes())
    for (Node* attr : branch_call(*n).graphs)
      if (auto* branch = dynamic_cast<GraphModule*>(compiled.get_submodule(attr->target().str())))
        program->add_submodule(attr->target().str(), standalone(*branch));
  program->recompile();
  return program;
}

}  // namespace

void CompiledModule::export_cpp(const std::string& dir, const CppExportOptions& options) const {
  std::shared_ptr<Specialization> s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!last_) throw Error("fx::CompiledModule::export_cpp: nothing is compiled before the first run()");
    s = last_;
  }
  if (s->autograd)
    throw Error(
        "fx::CompiledModule::export_cpp: the last call was compiled for autograd (grad mode on and "
        "something requiring grad), as a forward and a backward; export a call made under "
        "torch::NoGradGuard");
  cd::export_project(*standalone(*s->compiled), s->sources, dir, options);
}

c10::IValue CompiledModule::run(const std::vector<c10::IValue>& inputs) {
  if (training_step_ && !at::GradMode::is_enabled())
    throw Error(
        "fx::compile_training_step: called with grad mode off (a NoGradGuard); the step runs "
        "loss.backward(), which needs it");
  // The graph of a training step gives the gradients of root's parameters
  // only: a step whose inputs require grad too runs as it is.
  if (training_step_) {
    for (const auto& v : inputs)
      if (any_requires_grad(v)) return fn_(inputs);
  }
  // Autograd must see the call: the forward and the backward are compiled
  // apart (autograd_program.h).
  bool autograd = false;
  if (!training_step_ && at::GradMode::is_enabled()) {
    for (const auto& v : inputs) autograd = autograd || any_requires_grad(v);
    for (const auto& p : parameters_) autograd = autograd || p.requires_grad();
  }
  std::shared_ptr<Specialization> s;
  std::optional<c10::IValue> captured_result;
  {
    std::lock_guard<std::mutex> lock(mu_);  // threads share specializations; each runs its own call
    s = specialize(inputs, captured_result, autograd);
  }
  // Capturing ran the code on these inputs: that run is this call's, and
  // running it again would repeat what it did to its inputs and buffers.
  if (captured_result && !training_step_) return std::move(*captured_result);
  if (captured_result) {
    std::lock_guard<std::mutex> lock(mu_);  // gradients are added one call at a time
    return step_result(*root_, *captured_result);
  }
  // `s` keeps the specialization alive while it runs, should another
  // thread's call evict it meanwhile.
  if (!s->runs_compiled()) return fn_(inputs);
  if (s->autograd) return cd::run_autograd(s->autograd, parameters_, graph_inputs(inputs));
  if (!training_step_) return s->compiled->run(s->constants ? graph_inputs(inputs) : inputs);
  // The graph computes the gradients itself: autograd records none of it.
  c10::IValue out;
  {
    at::NoGradGuard no_grad;
    out = s->compiled->run(s->constants ? graph_inputs(inputs) : inputs);
  }
  std::lock_guard<std::mutex> lock(mu_);
  return step_result(*root_, out);
}

std::shared_ptr<CompiledModule::Specialization> CompiledModule::specialize(
    const std::vector<c10::IValue>& inputs, std::optional<c10::IValue>& captured_result, bool autograd) {
  // Calls with one guard, one after another, are the common case.
  if (!specializations_.empty() &&
      guards(specializations_.front()->key, inputs, ModuleState{modules_, parameters_})) {
    if (specializations_.front()->runs_compiled()) last_ = specializations_.front();
    return specializations_.front();
  }
  const std::string key = guard_key(inputs, ModuleState{modules_, parameters_});
  if (auto it = by_key_.find(key); it != by_key_.end()) {
    specializations_.splice(specializations_.begin(), specializations_, it->second);  // most recent first
    if ((*it->second)->runs_compiled()) last_ = *it->second;
    return *it->second;
  }

  auto s = std::make_shared<Specialization>();
  s->key = key;
  auto& phase = s->report.phase_ms;
  auto t = std::chrono::steady_clock::now();

  CaptureOptions capture_options;
  capture_options.functionalize = true;
  // The code runs once, for real, while it is captured: keep what it returns.
  // The graph's inputs are the tensors; the other inputs are these values.
  const std::vector<c10::IValue> tensors = graph_inputs(inputs);
  s->constants = tensors.size() != inputs.size();
  auto recorded = [&](const std::vector<c10::IValue>& in) {
    std::vector<c10::IValue> all = inputs;
    for (size_t i = 0, k = 0; i < all.size() && k < in.size(); ++i)
      if (graph_input(all[i])) all[i] = in[k++];
    c10::IValue out = fn_(all);
    if (!captured_result) {
      captured_result = out;
      // A training step's capture gives the parameters back their
      // gradients afterwards: keep this step's, which the call adds to them.
      if (training_step_) {
        c10::impl::GenericDict grads(c10::StringType::get(), c10::TensorType::get());
        for (const auto& p : root_->named_parameters(/*recurse=*/true))
          if (p.value().grad().defined()) grads.insert(p.key(), p.value().grad());
        captured_result = c10::ivalue::Tuple::create({out, grads});
      }
    }
    return out;
  };
  cd::JointLayout layout;
  const CaptureFunction to_capture = autograd ? cd::joint_function(recorded, parameters_, layout) : recorded;
  s->captured = training_step_ ? capture_training_step(*root_, recorded, tensors, capture_options)
                : root_        ? capture(*root_, to_capture, tensors, capture_options)
                               : capture(to_capture, tensors, capture_options);
  phase.emplace_back("capture", ms_since(t));
  std::vector<GraphSource> sources;
  // A program (a kernel source) this module has built serves every size
  // that generates it; each new one costs a build, so their number is
  // bounded: inputs whose kernels keep changing would build at every call.
  auto may_build = [this](const std::string& source) {
    const auto digest = passes::detail::md5(source);
    const std::string id(digest.begin(), digest.end());
    if (programs_.count(id)) return;
    if (programs_.size() == kMaxPrograms) throw TooManyPrograms{};
    programs_.insert(id);
  };
  // Automatic: the first sizes get static kernels; once a second comes,
  // kernels take their sizes as arguments and serve every size of their
  // form (torch.compile's automatic dynamic shapes).
  using Dynamic = CompileOptions::Dynamic;
  const bool dynamic =
      options_.dynamic == Dynamic::on || (options_.dynamic == Dynamic::automatic && !programs_.empty());
  // A result that requires grad though neither the inputs nor root's
  // parameters do comes from tensors the code holds itself (a closure's):
  // autograd must see those calls, and the compiled ones it does not.
  const bool hidden_grad = !autograd && !training_step_ && at::GradMode::is_enabled() && captured_result &&
                           any_requires_grad(*captured_result);
  try {
    const std::vector<Value> examples(tensors.begin(), tensors.end());
    if (hidden_grad)
      s->captured.reset();
    else if (!autograd)
      s->compiled = compile_graph(*s->captured, examples, options_, s->report, sources, "", may_build,
                                  dynamic, training_step_ ? GraphUse::training_step : GraphUse::inference);
    else if (layout.supported)
      s->autograd = compile_autograd(std::move(s->captured), layout, examples, options_, s->report, sources,
                                     may_build, dynamic);
  } catch (const TooManyPrograms&) {
    if (!warned_) {
      TORCH_WARN("fx::compile: ", kMaxPrograms,
                 " kernel programs built (the layouts, dtypes or values of the inputs keep changing); inputs "
                 "that need another one run the original code");
    }
    warned_ = true;
    s->captured.reset();
  }
  if (s->runs_compiled()) {
    // The report's library is the top graph's (a branch's when it has
    // none); a cache hit means every library was found built.
    bool any = false, all_hit = true;
    for (const GraphSource& src : sources) {
      if (src.library.empty()) continue;
      if (!any) s->report.library = src.library;
      any = true;
      all_hit = all_hit && src.cache_hit;
    }
    s->report.cache_hit = any && all_hit;
    if (!options_.debug_dir.empty())
      write_debug_files(options_.debug_dir, s->runs(), s->autograd ? s->autograd->backward.get() : nullptr,
                        sources, phase);
    for (GraphSource& src : sources)
      s->sources.push_back(cd::KernelSource{src.label, std::move(src.source), std::move(src.sites)});
    last_ = s;
  }
  specializations_.push_front(s);
  by_key_[key] = specializations_.begin();
  if (specializations_.size() > kMaxSpecializations) {
    by_key_.erase(specializations_.back()->key);
    specializations_.pop_back();
  }
  return s;
}

std::unique_ptr<CompiledModule> compile(torch::nn::Module& root, CaptureFunction fn, CompileOptions options) {
  return std::make_unique<CompiledModule>(&root, std::move(fn), std::move(options));
}

std::unique_ptr<CompiledModule> compile_training_step(torch::nn::Module& root, CaptureFunction step,
                                                      CompileOptions options) {
  return std::make_unique<CompiledModule>(&root, std::move(step), std::move(options), /*training_step=*/true);
}

std::unique_ptr<CompiledModule> compile(CaptureFunction fn, CompileOptions options) {
  return std::make_unique<CompiledModule>(nullptr, std::move(fn), std::move(options));
}

std::unique_ptr<CompiledModule> compile(GraphModule& gm, CompileOptions options) {
  return std::make_unique<CompiledModule>(
      &gm, [&gm](const std::vector<c10::IValue>& in) { return gm.run(in); }, std::move(options));
}

}  // namespace fx
