// The ends of a captured graph: placeholders for the example inputs, the
// output node for what the function returned.
#include "recorder.h"

namespace fx::capture_detail {

Node* Recorder::placeholder(const std::string& name, const at::Tensor& t, size_t position) {
  if (!t.defined())
    fail("input " + std::to_string(position) + " ('" + name +
         "') is an undefined tensor; pass a defined one");
  Node* n = graph_->placeholder(name);
  // The same tensor passed twice stands for the later placeholder, as in
  // make_fx, which tracks tensors by identity.
  bind(t, n);
  return n;
}

void Recorder::add_inputs(const std::vector<std::string>& names, const std::vector<c10::IValue>& inputs) {
  PyTreeInfo info{{}, TreeSpec{TreeSpec::Kind::tuple, {}, {}}, std::nullopt};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string& name = names[i];
    const c10::IValue& v = inputs[i];
    info.orig_args.push_back(name);
    TreeSpec& spec = info.in_spec.children.emplace_back();
    if (v.isTensor()) {
      placeholder(name + "_1", v.toTensor(), i);
      continue;
    }
    if (!v.isList() && !v.isTuple())
      fail("input " + std::to_string(i) + " ('" + name + "') is a " + v.tagKind() +
           "; capture takes tensors and lists or tuples of tensors. Capture a function that closes over the "
           "other values instead");
    structured_ = true;
    spec.kind = v.isList() ? TreeSpec::Kind::list : TreeSpec::Kind::tuple;
    c10::ArrayRef<c10::IValue> elements = v.isList() ? v.toListRef() : v.toTupleRef().elements();
    int count = 0;
    for (const c10::IValue& e : elements) {
      if (!e.isTensor())
        fail("input " + std::to_string(i) + " ('" + name + "'), element " + std::to_string(count) +
             ", is a " + e.tagKind() + "; lists and tuples of inputs hold tensors only");
      spec.children.push_back(TreeSpec::leaf());
      placeholder(name + "_" + std::to_string(++count), e.toTensor(), i);
    }
  }
  if (structured_) graph_->set_pytree_info(std::move(info));
}

Argument Recorder::output_argument(const c10::IValue& v, std::vector<Argument>* leaves, TreeSpec* spec) {
  // With structured inputs the graph returns the flat leaves and keeps the
  // structure in out_spec, as torch.fx's pytree code generation does.
  if (leaves && (v.isList() || v.isTuple())) {
    spec->kind = v.isList() ? TreeSpec::Kind::list : TreeSpec::Kind::tuple;
    c10::ArrayRef<c10::IValue> elements = v.isList() ? v.toListRef() : v.toTupleRef().elements();
    for (const c10::IValue& e : elements) output_argument(e, leaves, &spec->children.emplace_back());
    return None;
  }
  if (leaves && v.isGenericDict()) {
    spec->kind = TreeSpec::Kind::dict;
    for (const auto& item : v.toGenericDict()) {
      if (!item.key().isString())
        fail("the function returns a dict whose keys are not strings; FX's output dicts have string keys");
      spec->keys.push_back(item.key().toStringRef());
      output_argument(item.value(), leaves, &spec->children.emplace_back());
    }
    return None;
  }
  if (leaves) {
    leaves->push_back(output_argument(v, nullptr, nullptr));
    return None;
  }
  if (v.isGenericDict()) {
    Dict out;
    for (const auto& item : v.toGenericDict()) {
      if (!item.key().isString())
        fail("the function returns a dict whose keys are not strings; FX's output dicts have string keys");
      out.items.emplace_back(item.key().toStringRef(), output_argument(item.value(), nullptr, nullptr));
    }
    return out;
  }
  if (v.isTuple()) {
    Tuple out;
    for (const c10::IValue& e : v.toTupleRef().elements())
      out.items.push_back(output_argument(e, nullptr, nullptr));
    return out;
  }
  if (v.isList()) {
    List out;
    for (const c10::IValue& e : v.toListRef()) out.items.push_back(output_argument(e, nullptr, nullptr));
    return out;
  }
  return to_argument(v, nullptr);
}

void Recorder::finish(const c10::IValue& result,
                      const std::vector<std::pair<std::string, at::Tensor>>* grads) {
  // The outputs are read (and, under functionalize, synced) before the
  // updated inputs are written back, as functionalize(f) does.
  if (structured_) {
    if (grads) fail("a training step's inputs must be tensors (its output adds a dict of gradients)");
    std::vector<Argument> leaves;
    PyTreeInfo info = *graph_->pytree_info();
    info.out_spec = TreeSpec();
    output_argument(result, &leaves, &*info.out_spec);
    graph_->set_pytree_info(std::move(info));
    write_back_mutations();
    graph_->output(List{std::move(leaves)});
    return;
  }
  Argument out = output_argument(result, nullptr, nullptr);
  if (grads) {
    Dict by_path;
    for (const auto& [path, grad] : *grads) by_path.items.emplace_back(path, tensor_argument(grad));
    out = Tuple{{std::move(out), std::move(by_path)}};
  }
  write_back_mutations();
  graph_->output(std::move(out));
}

}  // namespace fx::capture_detail
