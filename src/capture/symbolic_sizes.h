#pragma once
// Dynamic dimensions for fx::capture (CaptureOptions::dynamic_shapes).
//
// In C++ a size is a plain int64_t: `x.size(0) * 2` leaves no trace of
// where its value came from, so the dispatcher sees only numbers. The
// function is therefore captured again at other sizes of the dynamic
// dimensions (dynamic_dims.cpp picks them and makes the inputs), and every
// integer of the graph that changes with them is written as what it equals
// at all of those sizes: the size of a tensor the graph already has
// (`sym_size.int`), or SymInt arithmetic on such sizes (symbolic_sizes.cpp).

#include <fx/capture.h>
#include <fx/graph_module.h>

#include <ATen/core/ivalue.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace torch::nn {
class Module;
}

namespace fx::capture_detail {

// One symbol: the dynamic dimensions that share a Dim.
struct Symbol {
  std::string name;  // s0, s1, ...
  Dim dim;
  int64_t example = 0;                             // its size in the example inputs
  std::vector<std::pair<size_t, int64_t>> places;  // (input, dimension), dimensions non-negative
};

// The symbols of options.dynamic_shapes, checked against the inputs: each
// marked input is a tensor, each dimension exists, each example size lies in
// its Dim's range and is at least 2, and dimensions sharing a name have the
// same size and range. Throws fx::Error naming the input and dimension.
std::vector<Symbol> symbols_of(const std::vector<c10::IValue>& inputs, const std::vector<std::string>& names,
                               const CaptureOptions& options);

// The sizes of each capture: sizes[r][k] is symbol k's size in capture r.
// Capture 0 is the example; capture k+1 changes symbol k alone; the last
// changes them all. Other sizes are multiples of the example first, which
// keep whatever divisibility the code needs.
std::vector<std::vector<int64_t>> capture_sizes(const std::vector<Symbol>& symbols);

// The inputs with each symbol's dimensions at `sizes`, their data the
// example's repeated along those dimensions (token ids stay valid ids).
std::vector<c10::IValue> inputs_at(const std::vector<c10::IValue>& inputs, const std::vector<Symbol>& symbols,
                                   const std::vector<int64_t>& sizes);

// "dimension 0 of input 'x' (s0)".
std::string describe(const Symbol& s, const std::vector<std::string>& names);

// Rewrites `base` (captured at sizes[0]) so that each integer that differs
// in `others` (the same function captured at sizes[1], ...) is computed from
// the sizes of tensors, and records each placeholder's sizes as strings
// (`sym_sizes`: "s0", "16"). Throws fx::TraceError naming the node where a
// graph differs in more than its integers.
void make_sizes_symbolic(GraphModule& base, const std::vector<const GraphModule*>& others,
                         const std::vector<Symbol>& symbols, const std::vector<std::vector<int64_t>>& sizes,
                         const std::vector<std::string>& names);

using CaptureAt = std::function<std::unique_ptr<GraphModule>(const std::vector<c10::IValue>&)>;

// capture_at(inputs) with options.dynamic_shapes made symbolic. The buffers
// of `root` (running statistics) are as one capture leaves them.
std::unique_ptr<GraphModule> capture_dynamic(const CaptureAt& capture_at,
                                             const std::vector<c10::IValue>& inputs,
                                             const std::vector<std::string>& names,
                                             const CaptureOptions& options, torch::nn::Module* root);

}  // namespace fx::capture_detail
