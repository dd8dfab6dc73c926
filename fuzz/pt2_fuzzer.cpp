// libFuzzer target for fx::load_exported (docs/export.md, "Fuzzing"). Every
// input must either load or throw fx::LoadError; anything else that escapes,
// and every crash, leak or undefined behaviour (ASan and UBSan), is a
// finding. pt2_inputs.h says what an input stands for. A program that loads
// is also run on zeros of its inputs' sizes, where they are static: running a
// malformed but loadable graph must throw fx::Error, not crash.
#include <fx/error.h>
#include <fx/exported_program.h>
#include <fx/passes/shape_prop.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

#include "pt2_inputs.h"

namespace {

// Zeros shaped as each user input's static tensor_meta; false when an input
// has none (symbolic sizes, a non-tensor).
bool zero_inputs(fx::ExportedProgram& ep, std::vector<c10::IValue>& out) {
  for (fx::Node* n : ep.graph().nodes()) {
    if (n->op() != fx::Op::placeholder) continue;
    bool user = false;
    for (const auto& s : ep.graph_signature().input_specs)
      user = user || (s.name == n->name() && s.kind == fx::InputSpec::Kind::user_input);
    if (!user) continue;
    const auto* m = n->meta().get<fx::passes::TensorMetadata>("tensor_meta");
    if (!m) return false;
    int64_t numel = 1;
    for (int64_t s : m->shape) numel *= s;
    if (numel > (1 << 16)) return false;
    out.emplace_back(at::zeros(m->shape, at::TensorOptions().dtype(m->dtype)));
  }
  return true;
}

// Loads and runs each valid program once. LibTorch and the runtime build
// their tables on first use (the operator index, each operator's kernels);
// done inside the first inputs, those allocations would make libFuzzer's
// leak check run after them.
void warm_up() {
  for (const auto& program : fx::fuzz::pt2_programs()) {
    fx::ExportedProgram ep = fx::load_exported_from_bytes(fx::fuzz::write_records(program.records), program.name);
    std::vector<c10::IValue> inputs;
    if (zero_inputs(ep, inputs)) ep.run_flat(inputs);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  warm_up();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string file;
  try {
    file = fx::fuzz::pt2_file_from_input(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fx::fuzz::NotAnInput&) {
    return -1;
  }
  try {
    fx::ExportedProgram ep = fx::load_exported_from_bytes(file, "fuzz.pt2");
    std::vector<c10::IValue> inputs;
    if (zero_inputs(ep, inputs)) {
      try {
        ep.run_flat(inputs);
      } catch (const fx::Error&) {
      }
    }
  } catch (const fx::LoadError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fx::load_exported let %s escape: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
