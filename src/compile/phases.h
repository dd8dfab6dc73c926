#pragma once
// The phases of fx::compile, one file each, in the order they run. Each
// takes the previous one's result and can be run and tested alone.
//
//   channels_last_convolutions(graph)         layout.cpp (with meta_prop.cpp)
//   decompose(graph)                          decompose.cpp
//   lower(node) -> PointwiseOp?               lower.cpp
//   schedule(graph, lowered) -> kernels       schedule.cpp
//   generate_cpp(kernels, ...) -> source      codegen_cpp.cpp
//   build_library(source, ...) -> library     build.cpp
//   mark_reuse, sink_weight_computations      memory_plan.cpp (on the graph that runs)
//   cache_weight_computations(compiled)       weight_cache.cpp (on the GraphModule that runs)
//   partition_joint(joint) -> forward, backward  partition.cpp (before the others, under autograd)
//   export_project(compiled, ...) -> files    export_project.cpp (on request)
//
// Between them the graph carries meta["tensor_meta"] on every node, as
// fx::capture records it (and ShapeProp would): lowering and scheduling read
// sizes, strides and dtypes from it. A phase that adds nodes gives them theirs.

#include <fx/codegen/cpp_export.h>
#include <fx/graph.h>
#include <fx/graph_module.h>
#include <fx/passes/shape_prop.h>

#include <c10/util/ArrayRef.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fx::compile_detail {

// ---- layout.cpp ------------------------------------------------------------
// Makes 2-d float32 convolutions read channels_last (NHWC) tensors and
// weights, which oneDNN runs faster, where there are two or more and their
// inputs hold more elements than the weights copied on every call (all of
// them unless `weights_kept`; else those that are not get_attr nodes, which
// cache_weight_computations keeps): the row-major input and weight of each
// are copied to channels_last, and what follows keeps that layout.
// Propagates the new layouts (ShapeProp on meta tensors) when it changed
// anything, and copies a graph output whose layout changed back to its
// layout before. Returns the copies it added.
size_t channels_last_convolutions(GraphModule& gm, const std::vector<Value>& inputs, bool weights_kept);

// ---- meta_prop.cpp ---------------------------------------------------------
// Records each node's tensor_meta for `inputs` as ShapeProp does, running
// every operator on meta tensors (sizes, strides and dtype, no data); where
// one cannot run so, runs the graph for real.
void propagate_tensor_meta(GraphModule& gm, const std::vector<Value>& inputs);

// ---- decompose.cpp ---------------------------------------------------------
// Rewrites operators into the smaller set the lowering knows: addmm(b, x, w)
// becomes add(mm(x, w), b), so that the bias and what follows it fuse into
// one loop after the matrix product, where its one user is pointwise. It
// runs on the graph's tensor_meta and gives the nodes it makes theirs.
// Returns how many nodes it rewrote.
size_t decompose(Graph& graph);

// ---- lower.cpp -------------------------------------------------------------
// A float32, float64, int64, bfloat16 or float16 pointwise ATen node whose
// tensor operands have its type, as an expression over at::vec::Vectorized<S> (named V, its element
// type S): `format` refers to the node's tensor operands as {0}, {1}, ...
// (in the order of `inputs`) and has its scalar arguments baked in as
// constants of type S. Bool values are masks, V's lanes all ones or all
// zeros: comparisons of S values make them, logical operators combine
// them, and where and masked_fill (of S values) select by them.
// A reduction over the last dimension with keepdim (sum, mean, amax, amin)
// is lowered too: `format` is then the value it reduces, and the kernel
// that holds it is a row kernel.
enum class Reduction : uint8_t { none, sum, mean, amax, amin };
struct PointwiseOp {
  std::vector<Node*> inputs;
  std::string format;
  Reduction reduction = Reduction::none;
  // The type its kernel computes in (S): float32, float64 or int64, or bool
  // for a logical operator on masks, which any kernel can compute.
  c10::ScalarType compute = c10::kFloat;
};
// The node's expression, or nothing when it is not a pointwise operator
// the lowering knows on float32 or float64 values and masks (it then stays
// an ATen call).
std::optional<PointwiseOp> lower(const Node& node);

// The float types kernels compute in, with every operator the lowering
// knows: float32 and float64.
inline bool fusable_type(c10::ScalarType t) { return t == c10::kFloat || t == c10::kDouble; }
// All types kernels compute in: the float ones, and int64 and int32 with
// the operators exact on integers (lower.cpp's kExactOnIntegers).
inline bool compute_type(c10::ScalarType t) { return fusable_type(t) || t == c10::kLong || t == c10::kInt; }
// The half-precision types, bfloat16 and float16: a kernel computes their
// values in float32, as ATen's kernels of one operator do, loading them
// into float lanes and rounding each output when it stores it. Unlike a
// chain of ATen calls, it does not round the values in between.
inline bool half_type(c10::ScalarType t) { return t == c10::kBFloat16 || t == c10::kHalf; }
// The type a kernel computes values of type `t` in.
inline c10::ScalarType compute_of(c10::ScalarType t) { return half_type(t) ? c10::kFloat : t; }
// The C++ element type of a kernel computing in `t` (a compute_type):
// "float", "double", "int64_t" or "int32_t". The generated source, the kernel node's
// call and an exported project all spell it from here.
const char* element_type(c10::ScalarType t);
// A number argument's value (a Python int or float), or nothing for any
// other kind of argument.
std::optional<double> number(const Argument& a);
// The single tensor's metadata of a node (its tensor_meta), or nullptr.
const passes::TensorMetadata* tensor_meta(const Node& node);
// Whether `node` calls an ATen view: an operator whose result aliases an
// input it does not write (`t`, `view`, `expand`, `select`, ...).
bool is_view(const Node& node);
// `m` with the strides at::empty gives its shape.
passes::TensorMetadata contiguous(passes::TensorMetadata m);
// `m` with `strides` (and the memory format they make).
passes::TensorMetadata with_strides(passes::TensorMetadata m, std::vector<int64_t> strides);

// ---- schedule.cpp ----------------------------------------------------------
// A loop over one iteration space, computing `members` in order. It reads
// `inputs` (tensors made outside it, broadcast to `shape`) and writes
// `outputs` (its members that something outside it uses), each contiguous.
// A row kernel holds reductions over the last dimension of `shape`: its
// members are of `shape` or of `shape` with the last dimension 1 (a value
// per row), and it runs one row at a time.
struct Kernel {
  std::string name;  // cpp_fused_<ops>_<i>
  std::vector<int64_t> shape;
  // The dimensions of `shape` from the outermost loop to the innermost: the
  // order its outputs are laid out in (order_loops).
  std::vector<int64_t> order;
  bool row = false;
  // S, the type it computes in: every member, input and output has it, but
  // masks (bool), which are V's lanes of all ones or zeros in the loop and
  // bool tensors outside it.
  c10::ScalarType dtype = c10::kFloat;
  std::vector<Node*> members;  // in graph order
  std::vector<Node*> inputs;
  std::vector<Node*> outputs;
};
// Groups the lowered nodes into kernels. A node joins the open kernel of its
// operands when their iteration spaces and types are equal (a reduction's is its
// input's shape; a value per row joins its row kernel); a kernel closes when a node
// outside it uses one of its values, so that running each kernel where its
// last member was keeps every value computed before it is read. Kernels with
// nothing to fuse (one member) are dropped: ATen runs those as well.
std::vector<Kernel> schedule(const Graph& graph, const std::unordered_map<const Node*, PointwiseOp>& lowered);
// Gives each kernel its loop order, as ATen's TensorIterator orders a
// pointwise operator's: the memory order of its first input of the
// kernel's shape when that input is dense in some order (a channels_last
// tensor: N, H, W, C), else row-major; always row-major for a row kernel.
// The kernel writes its outputs dense in that order, as eager would, and
// runs as one flat loop over such inputs. Sets each output's tensor_meta to
// the layout the kernel writes, so that the kernels reading it are
// generated for it: call it on kernels in the order they run.
void order_loops(std::vector<Kernel>& kernels);

// ---- kernel_form.cpp -------------------------------------------------------
// What a kernel's source bakes in: its rank; one flat loop over all
// elements (every input dense in the kernel's order, or one value), rows
// (a row kernel), or nested loops (an outer loop over all dimensions but
// the last); which inputs are read with stride 0 along which dimensions
// (broadcast); which are read with vector loads along the last dimension;
// which outputs are of the kernel's shape (else a value per row). Sizes and
// strides are not in it: they are the kernel's `dims` argument.
enum class Loop : uint8_t { flat, nested, rows };
struct KernelForm {
  Loop loop = Loop::flat;
  size_t rank = 0;
  std::vector<bool> scalar;             // per input: one value (every stride 0)
  std::vector<std::vector<bool>> zero;  // per input, per dimension: read with stride 0 (not flat)
  std::vector<bool> inner_contiguous;   // per input: the last dimension's stride is 1 (not flat)
  std::vector<bool> full_outputs;       // per output
  // A static kernel's sizes and strides, in its source: its `dims` must be
  // these. Empty for a dynamic kernel, which takes any.
  std::vector<int64_t> baked;
};
// The strides by which a tensor of `sizes` and `strides` is read over a
// kernel's `shape` (broadcast dimensions, missing or of size 1, with stride
// 0); nothing when it does not broadcast to `shape`.
std::optional<std::vector<int64_t>> read_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides,
                                                 c10::IntArrayRef shape);
// The same into `s` (whose capacity a kernel call reuses); false for nothing.
bool read_strides(c10::IntArrayRef sizes, c10::IntArrayRef strides, c10::IntArrayRef shape,
                  std::vector<int64_t>& s);
// `v` in `order`: v[order[0]], v[order[1]], ...
std::vector<int64_t> permuted(c10::IntArrayRef v, c10::IntArrayRef order);
// The strides of a dense tensor of `shape` laid out in `order` (outermost
// dimension first).
std::vector<int64_t> dense_strides(c10::IntArrayRef shape, c10::IntArrayRef order);
// The order a tensor of `shape` and `strides` is dense in (row-major when
// it is contiguous), or nothing when it has gaps or overlaps.
std::optional<std::vector<int64_t>> dense_order(c10::IntArrayRef shape, c10::IntArrayRef strides);
// The form of a kernel over `shape` whose inputs are read with `read`.
KernelForm kernel_form(bool row, c10::IntArrayRef shape, const std::vector<std::vector<int64_t>>& read,
                       std::vector<bool> full_outputs);
// Where a nested or row kernel reads its sizes in `dims`: [0] the number of
// rows, [1] the row's length, then each dimension but the last (`shape`),
// then each input's non-zero strides (`stride`, nothing where the stride is
// 0). A flat kernel's `dims` is [numel] alone (an empty layout). The code
// generator names these places and kernel_dims fills them: one order.
struct DimsLayout {
  std::vector<size_t> shape;
  std::vector<std::vector<std::optional<size_t>>> stride;  // per input, per dimension
  size_t size = 1;
};
DimsLayout dims_layout(const KernelForm& form);
// Writes into `dims` the kernel's `dims` for `shape` and inputs read with
// `read`, where `layout` (the form's dims_layout, which the caller keeps)
// places them. False when an input does not have the form (another layout
// than the kernel was written for) or, for a static kernel, when they are
// not the sizes it was built for.
bool kernel_dims(const KernelForm& form, const DimsLayout& layout, c10::IntArrayRef shape,
                 const std::vector<std::vector<int64_t>>& read, std::vector<int64_t>& dims);

// ---- codegen_cpp.cpp -------------------------------------------------------
// One C++ source with an `extern "C" void <kernel.name>(const S* const* in,
// S* const* out, const int64_t* dims)` per kernel, S its element type (float,
// double, int64_t or int32_t), the main loop over at::vec::Vectorized<S> and a partial vector
// for the tail, OpenMP over
// the outer loop with `threads` threads. A `dynamic` kernel reads its sizes
// and strides from `dims`, so that the same program at other sizes is the
// same source: one built kernel serves every size whose loops have the same
// form (see codegen_cpp.cpp). A static one has them in its source as
// constants (form.baked), which the compiler folds into its loops.
struct GeneratedSource {
  std::string source;
  std::vector<KernelForm> forms;           // each kernel's, in the order of `kernels`
  std::vector<std::vector<int64_t>> dims;  // each kernel's `dims` at the sizes it was generated for
};
GeneratedSource generate_cpp(const std::vector<Kernel>& kernels,
                             const std::unordered_map<const Node*, PointwiseOp>& lowered, int threads,
                             bool dynamic);

// ---- build.cpp -------------------------------------------------------------
// A built kernel library, loaded into this process for good (kernels are
// registered as call_function targets, which outlive any one module).
struct Library {
  std::string path;
  std::string hash;  // of the source and the command that built it
  bool cache_hit = false;
  void* handle = nullptr;
  void* symbol(const std::string& name) const;  // fx::Error when absent
};
// Builds `source` in `cache_dir` with `compiler` unless a library of the
// same hash (of the source, the flags, the compiler and what its --version
// says) is there already, and loads it. fx::Error when the compiler is
// missing or fails (naming the source and the log).
std::shared_ptr<const Library> build_library(const std::string& source, const std::string& cache_dir,
                                             const std::string& compiler);
// An instruction set kernels are built for, as ATen builds its own
// (CPU_CAPABILITY): its name, the compiler's -m flags and the macros ATen's
// vector headers read. build.cpp and an exported project's CMakeLists.txt
// both spell them from this one table: AVX512, AVX2, DEFAULT.
struct InstructionSet {
  const char* name;
  std::vector<const char*> flags;
  std::vector<const char*> definitions;
};
const std::vector<InstructionSet>& instruction_sets();
// The one of them this processor runs best: "AVX512" where it has the
// subsets ATen's AVX512 vectors use, else "AVX2" with FMA, else "DEFAULT"
// (ATen's portable vectors).
std::string host_isa();

// ---- memory_plan.cpp -------------------------------------------------------
// On the graph a specialization runs, after its kernel nodes are made:
// marks the kernel node `call` of `k` to write its first output into the
// buffer of an input that dies there (reuse_input=i, which the kernel node
// checks at each call), as eager's in-place `out += identity` does.
void mark_reuse(Node& call, const Kernel& k, const KernelForm& form);
// Moves each pure computation on weights alone (batch norm's rsqrt(var +
// eps), a parameter's view) to just before its first reader, so that it
// lives only while it is needed.
void sink_weight_computations(Graph& graph);

// ---- weight_cache.cpp ------------------------------------------------------
// On the GraphModule a specialization runs: each value computed from the
// weights alone (a convolution weight copied to channels_last, a batch
// norm's scale) becomes a submodule `cached_<node>` that computes it on the
// first call and again only when a weight it reads has changed (another
// tensor, another layout or a write: its version). Call recompile() after.
// Returns the submodules made.
size_t cache_weight_computations(GraphModule& compiled);
// The same program with each such submodule's computation inlined again,
// for export_cpp.
std::unique_ptr<GraphModule> inline_weight_caches(GraphModule& compiled);

// ---- pack_weights.cpp ------------------------------------------------------
// In a static inference program, weights packed once for the library that
// multiplies them: each float32 `mm(x, t(w))` or `addmm(b, x, t(w))` of a
// CPU weight and at least 2 rows through MKL's packed GEMM
// (`_mkl_reorder_linear_weight`, `_mkl_linear`), and each float32 2-D
// convolution through oneDNN's packed one (`_reorder_convolution_weight`,
// `_convolution_pointwise`). cache_weight_computations then keeps each
// packing. Nothing where LibTorch lacks MKL or oneDNN. Returns the calls
// rewritten; the caller recompiles.
size_t pack_weights(GraphModule& gm);
// Each packed call a plain one again, and its packing gone when nothing
// else reads it: for a program that keeps no values between calls.
void unpack_weights(Graph& graph);

// ---- partition.cpp ---------------------------------------------------------
// A joint graph (autograd_program.cpp captures one) returns a flat tuple:
// the forward's `num_outputs` values, then `num_tangents` tangents (each a
// node standing for the gradient of one differentiable output, which the
// capture made as ones_like), then the gradients. partition_joint splits it
// as AOTAutograd's min-cut partition does: the forward graph computes what
// its outputs and effects need and returns its outputs and then the values
// it saves (`num_saved`, parameters excepted, which the backward reads
// itself), the fewest bytes from which the backward can compute what it
// reads, computing pointwise operators and views again; the backward graph
// takes those, then the tangents, and returns the gradients. Each graph's
// dead code is removed: the tangents' ones_like, and saved values only dead
// code read.
struct JointPartition {
  std::unique_ptr<GraphModule> forward, backward;
  size_t num_saved = 0;
};
JointPartition partition_joint(GraphModule& joint, size_t num_outputs, size_t num_tangents);

// ---- export_project.cpp ----------------------------------------------------
// A kernel node as a standalone program calls it: the layouts of its inputs
// when it was compiled, the sizes of its outputs, and its `dims` for them.
struct KernelSite {
  std::string target;                         // the kernel node's
  std::string name;                           // the kernel's function
  c10::ScalarType dtype = c10::kFloat;        // S, the type it computes in
  std::vector<c10::ScalarType> input_dtypes;  // S or bool, each
  std::vector<std::vector<int64_t>> input_sizes, input_strides;
  std::vector<c10::ScalarType> output_dtypes;
  std::vector<std::vector<int64_t>> output_sizes, output_strides;
  std::vector<int64_t> dims;
};
// The kernels of one graph of a compiled program: the top graph's (label
// "") or a cond or while_loop branch's (label "true_graph_0"), each branch's
// a library of its own.
struct KernelSource {
  std::string label;
  std::string source;
  std::vector<KernelSite> sites;  // its kernel nodes'
};
// Writes export_cpp's project (fx/codegen/cpp_export.h) for `compiled`, a
// graph (with its branches) whose kernel nodes are the sources' sites: the
// top graph's source is kernels.cpp, a branch's kernels_<label>.cpp, and
// forward calls each kernel directly on its tensors' data. fx::Error, before
// anything is written, for a node the project cannot spell.
void export_project(const GraphModule& compiled, const std::vector<KernelSource>& sources,
                    const std::string& dir, const CppExportOptions& options);

}  // namespace fx::compile_detail
