// fxc run FILE --inputs IN.pt [--output OUT.pt]: FILE a GraphModule file or a .pt2
#include <fx/runtime.h>
#include <fx/state_dict.h>
#include <torch/torch.h>

#include <iostream>
#include <sstream>

#include "../../src/ir/repr.h"
#include "commands.h"

namespace fxc {

namespace {

// One line per output: a tensor by dtype, shape and mean; any other value
// as Python prints it, with tensors inside it summarized.
void describe(std::ostream& os, const c10::IValue& v) {
  if (v.isTensor()) {
    const at::Tensor& t = v.toTensor();
    os << fx::detail::repr_dtype(t.scalar_type()) << t.sizes();
    if (!t.is_complex())
      os << ", mean " << t.to(at::kDouble).mean().item<double>();
  } else if (v.isNone()) {
    os << "None";
  } else if (v.isBool()) {
    os << (v.toBool() ? "True" : "False");
  } else if (v.isString()) {
    os << "'" << v.toStringRef() << "'";
  } else if (auto d = fx::dtype_of(v)) {
    os << fx::detail::repr_dtype(*d);
  } else if (v.isTuple() || v.isList()) {
    const bool tuple = v.isTuple();
    const auto items = tuple ? v.toTupleRef().elements().vec() : v.toListRef().vec();
    os << (tuple ? "(" : "[");
    for (size_t i = 0; i < items.size(); ++i) {
      if (i) os << ", ";
      describe(os, items[i]);
    }
    os << (tuple && items.size() == 1 ? ",)" : tuple ? ")" : "]");
  } else if (v.isGenericDict()) {
    os << "{";
    bool first = true;
    for (const auto& kv : v.toGenericDict()) {
      os << (first ? "" : ", ");
      first = false;
      describe(os, kv.key());
      os << ": ";
      describe(os, kv.value());
    }
    os << "}";
  } else {
    os << v;
  }
}

}  // namespace

int run(const CommandLine& cl) {
  Program program = load_program(cl.positional(0));
  std::vector<c10::IValue> inputs = program.read_inputs(cl.option("--inputs"));
  torch::NoGradGuard no_grad;
  std::vector<c10::IValue> outputs = output_values(program.run(inputs));
  if (cl.has("--output")) {
    fx::save_values(outputs, cl.option("--output"));
  } else {
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::cout << "output " << i << ": ";
      describe(std::cout, outputs[i]);
      std::cout << "\n";
    }
  }
  return 0;
}

}  // namespace fxc
