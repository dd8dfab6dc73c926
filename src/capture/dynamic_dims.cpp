// The symbols of CaptureOptions::dynamic_shapes, the sizes the function is
// captured at, and the inputs at those sizes (symbolic_sizes.h).

#include "symbolic_sizes.h"

#include <fx/error.h>

#include <ATen/ATen.h>
#include <c10/core/GradMode.h>

namespace fx::capture_detail {

namespace {

std::string input_text(size_t i, const std::vector<std::string>& names) {
  return std::string("input ") + std::to_string(i) + " ('" + names[i] + "')";
}

std::string range_text(const Dim& d) {
  return std::string("[") + std::to_string(d.min) + ", " +
         (d.max == std::numeric_limits<int64_t>::max() ? std::string("int_oo") : std::to_string(d.max)) + "]";
}

}  // namespace

std::string describe(const Symbol& s, const std::vector<std::string>& names) {
  const auto& [input, dim] = s.places.front();
  std::string text = std::string("dimension ") + std::to_string(dim) + " of input '" + names[input] + "' (";
  if (!s.dim.name.empty()) text += "Dim '" + s.dim.name + "', ";
  return text + s.name + ")";
}

std::vector<Symbol> symbols_of(const std::vector<c10::IValue>& inputs, const std::vector<std::string>& names,
                               const CaptureOptions& options) {
  if (options.dynamic_shapes.size() > inputs.size())
    throw Error(std::string("capture: dynamic_shapes has ") + std::to_string(options.dynamic_shapes.size()) +
                " entries for " + std::to_string(inputs.size()) +
                " example inputs; give at most one per input");
  std::vector<Symbol> symbols;
  for (size_t i = 0; i < options.dynamic_shapes.size(); ++i) {
    if (options.dynamic_shapes[i].empty()) continue;
    if (!inputs[i].isTensor())
      throw Error("capture: dynamic_shapes marks dimensions of " + input_text(i, names) + ", which is a " +
                  inputs[i].tagKind() + "; only tensor inputs have dynamic dimensions");
    const at::Tensor& t = inputs[i].toTensor();
    for (const auto& [given, dim] : options.dynamic_shapes[i]) {
      const std::string where =
          std::string("dimension ") + std::to_string(given) + " of " + input_text(i, names);
      if (given < -t.dim() || given >= t.dim())
        throw Error("capture: dynamic_shapes marks " + where + ", which has " + std::to_string(t.dim()) +
                    " dimensions");
      const int64_t d = given < 0 ? given + t.dim() : given;
      const int64_t size = t.size(d);
      for (const Symbol& s : symbols)
        for (const auto& [input, seen] : s.places)
          if (input == i && seen == d)
            throw Error("capture: dynamic_shapes marks dimension " + std::to_string(d) + " of " +
                        input_text(i, names) + " twice");
      if (dim.min > dim.max)
        throw Error("capture: the Dim of " + where + " has min " + std::to_string(dim.min) + " above max " +
                    std::to_string(dim.max));
      if (size < dim.min || size > dim.max)
        throw Error("capture: " + where + " is " + std::to_string(size) +
                    " in the example, outside its Dim's range " + range_text(dim) +
                    "; give an example inside the range");
      if (size < 2)
        throw Error("capture: " + where + " is " + std::to_string(size) +
                    " in the example; a size of 0 or 1 is a program of its own (it broadcasts), so give an "
                    "example of at least 2 for a dynamic dimension");
      Symbol* same = nullptr;
      if (!dim.name.empty())
        for (auto& s : symbols)
          if (s.dim.name == dim.name) same = &s;
      if (!same) {
        symbols.push_back(Symbol{std::string("s") + std::to_string(symbols.size()), dim, size, {}});
        same = &symbols.back();
      } else {
        const auto& [first_input, first_dim] = same->places.front();
        const std::string first =
            std::string("dimension ") + std::to_string(first_dim) + " of " + input_text(first_input, names);
        if (same->example != size)
          throw Error("capture: " + where + " and " + first + " are both Dim '" + dim.name + "' but are " +
                      std::to_string(size) + " and " + std::to_string(same->example) +
                      " in the example; one Dim is one size");
        if (same->dim.min != dim.min || same->dim.max != dim.max)
          throw Error("capture: " + where + " and " + first + " are both Dim '" + dim.name +
                      "' with different ranges " + range_text(dim) + " and " + range_text(same->dim));
      }
      same->places.emplace_back(i, d);
    }
  }
  return symbols;
}

std::vector<std::vector<int64_t>> capture_sizes(const std::vector<Symbol>& symbols) {
  std::vector<int64_t> example, first, second;
  for (const Symbol& s : symbols) {
    const int64_t h = s.example, lo = std::max<int64_t>(s.dim.min, 2), hi = s.dim.max;
    std::vector<int64_t> picked;
    auto consider = [&](int64_t factor, int64_t offset) {
      int64_t v;
      if (__builtin_mul_overflow(h, factor, &v) || __builtin_add_overflow(v, offset, &v)) return;
      if (v < lo || v > hi || v == h) return;
      for (int64_t p : picked)
        if (p == v) return;
      picked.push_back(v);
    };
    for (auto [factor, offset] :
         {std::pair<int64_t, int64_t>{2, 0}, {3, 0}, {1, 1}, {1, 2}, {1, -1}, {1, -2}})
      consider(factor, offset);
    if (picked.empty())
      throw Error("capture: the Dim of " + s.name + " allows no size but the example's " + std::to_string(h) +
                  "; leave the dimension static");
    example.push_back(h);
    first.push_back(picked[0]);
    second.push_back(picked.size() > 1 ? picked[1] : picked[0]);
  }
  std::vector<std::vector<int64_t>> sizes{example};
  for (size_t k = 0; k < symbols.size(); ++k) {
    sizes.push_back(example);
    sizes.back()[k] = first[k];
  }
  sizes.push_back(second);
  return sizes;
}

std::vector<c10::IValue> inputs_at(const std::vector<c10::IValue>& inputs, const std::vector<Symbol>& symbols,
                                   const std::vector<int64_t>& sizes) {
  // Copies, so that code which updates its inputs in place leaves the
  // caller's examples as one capture leaves them.
  std::vector<c10::IValue> out;
  c10::AutoGradMode no_grad(false);
  c10::IValue::HashIdentityIValueMap copies;  // an example given twice stays one tensor
  for (const auto& v : inputs) out.push_back(v.deepcopy(copies));
  for (size_t k = 0; k < symbols.size(); ++k)
    for (const auto& [input, dim] : symbols[k].places) {
      at::Tensor t = out[input].toTensor();  // already a copy
      at::Tensor index = at::arange(sizes[k], at::kLong).remainder_(t.size(dim));
      out[input] = t.index_select(dim, index).contiguous(t.suggest_memory_format());
    }
  for (size_t i = 0; i < out.size(); ++i)
    if (inputs[i].isTensor() && inputs[i].toTensor().requires_grad() && !out[i].toTensor().requires_grad())
      out[i] = out[i].toTensor().requires_grad_(true);
  return out;
}

}  // namespace fx::capture_detail
