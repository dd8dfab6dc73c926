#pragma once
// The phases of fx::compile, one file each, in the order they run. Each
// takes the previous one's result and can be run and tested alone.
//
//   decompose(graph)                          decompose.cpp
//   lower(node) -> PointwiseOp?               lower.cpp
//   schedule(graph, lowered) -> kernels       schedule.cpp
//   generate_cpp(kernels, ...) -> source      codegen_cpp.cpp
//   build_library(source, ...) -> library     build.cpp
//
// Between them the graph carries meta["tensor_meta"] (ShapeProp) on every
// node: lowering and scheduling read sizes, strides and dtypes from it.

#include <fx/graph.h>
#include <fx/passes/shape_prop.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

namespace fx::compile_detail {

// ---- decompose.cpp ---------------------------------------------------------
// Rewrites operators into the smaller set the lowering knows: addmm(b, x, w)
// becomes add(mm(x, w), b), so that the bias and what follows it fuse into
// one loop after the matrix product, where its one user is pointwise. It
// runs after ShapeProp and gives the nodes it makes their tensor_meta.
// Returns how many nodes it rewrote.
size_t decompose(Graph& graph);

// ---- lower.cpp -------------------------------------------------------------
// A float32 pointwise ATen node as an expression over at::vec::Vectorized:
// `format` refers to the node's tensor operands as {0}, {1}, ... (in the
// order of `inputs`) and has its scalar arguments baked in as constants.
// A reduction over the last dimension with keepdim (sum, mean, amax, amin)
// is lowered too: `format` is then the value it reduces, and the kernel
// that holds it is a row kernel.
enum class Reduction : uint8_t { none, sum, mean, amax, amin };
struct PointwiseOp {
  std::vector<Node*> inputs;
  std::string format;
  Reduction reduction = Reduction::none;
};
// The node's expression, or nothing when it is not a float32 pointwise
// operator the lowering knows (it then stays an ATen call).
std::optional<PointwiseOp> lower(const Node& node);

// The single tensor's metadata of a node after ShapeProp, or nullptr.
const passes::TensorMetadata* tensor_meta(const Node& node);
// `m` with the strides at::empty gives its shape (what kernels write).
passes::TensorMetadata contiguous(passes::TensorMetadata m);

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
  bool row = false;
  std::vector<Node*> members;  // in graph order
  std::vector<Node*> inputs;
  std::vector<Node*> outputs;
};
// Groups the lowered nodes into kernels. A node joins the open kernel of its
// operands when their iteration spaces are equal (a reduction's is its
// input's shape; a value per row joins its row kernel); a kernel closes when a node
// outside it uses one of its values, so that running each kernel where its
// last member was keeps every value computed before it is read. Kernels with
// nothing to fuse (one member) are dropped: ATen runs those as well.
std::vector<Kernel> schedule(const Graph& graph, const std::unordered_map<const Node*, PointwiseOp>& lowered);

// ---- codegen_cpp.cpp -------------------------------------------------------
// One C++ source with an `extern "C" void <kernel.name>(const float* const*
// in, float* const* out)` per kernel, sizes and strides baked in, the main
// loop over at::vec::Vectorized<float> and a partial vector for the tail,
// OpenMP over the outer loop with `threads` threads.
std::string generate_cpp(const std::vector<Kernel>& kernels,
                         const std::unordered_map<const Node*, PointwiseOp>& lowered, int threads);

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
// same hash is there already, and loads it. fx::Error when the compiler is
// missing or fails (naming the source and the log).
std::shared_ptr<const Library> build_library(const std::string& source, const std::string& cache_dir,
                                             const std::string& compiler);

}  // namespace fx::compile_detail
