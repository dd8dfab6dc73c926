// CaptureOptions::functionalize: in-place and out= operators recorded as
// their out-of-place equivalents, updates of inputs and attributes written
// back with copy_ once the outputs are read. Updates through views: views.cpp.
#include "recorder.h"

#include <fx/operator_overloads.h>

#include <mutex>
#include <unordered_map>

namespace fx::capture_detail {

namespace {

// The arguments an out-of-place equivalent takes: all of them for an
// in-place operator (`self` is read, then written), all but the keyword-only
// outputs for an out= operator.
std::vector<const c10::Argument*> read_arguments(const c10::FunctionSchema& s) {
  std::vector<const c10::Argument*> out;
  for (const auto& a : s.arguments())
    if (!(writes(a) && a.kwarg_only())) out.push_back(&a);
  return out;
}

bool has_writes(const c10::FunctionSchema& s) {
  for (const auto& a : s.arguments())
    if (writes(a)) return true;
  return false;
}

bool same_arguments(const std::vector<const c10::Argument*>& read, const c10::FunctionSchema& candidate) {
  const auto& args = candidate.arguments();
  if (args.size() != read.size()) return false;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].name() != read[i]->name() || *args[i].type() != *read[i]->type()) return false;
  return true;
}

}  // namespace

const c10::OperatorHandle* functional_variant(const c10::OperatorHandle& op) {
  static std::mutex mutex;
  static std::unordered_map<c10::OperatorName, std::optional<c10::OperatorHandle>> found;
  std::lock_guard<std::mutex> lock(mutex);

  const c10::FunctionSchema& s = op.schema();
  auto [it, inserted] = found.try_emplace(op.operator_name());
  if (!inserted) return it->second ? &*it->second : nullptr;

  // add_ -> add (not _foo, whose underscore is a prefix); add.out -> add.
  std::string base = s.name();
  const size_t colons = base.find("::");
  const bool inplace = base.back() == '_' && base.size() > colons + 3;
  if (inplace) base.pop_back();
  const auto read = read_arguments(s);
  for (const c10::OperatorHandle& handle : operator_overloads(base)) {
    if (!handle.hasSchema() || has_writes(handle.schema())) continue;
    if (!same_arguments(read, handle.schema())) continue;
    // An in-place operator's own overload name first (add_.Tensor -> add.Tensor).
    if (!it->second || handle.operator_name().overload_name == s.overload_name()) it->second = handle;
  }
  return it->second ? &*it->second : nullptr;
}

bool Recorder::record_functionalized(const c10::OperatorHandle& op, c10::DispatchKeySet keys,
                                     torch::jit::Stack* stack, size_t first) {
  const c10::FunctionSchema& s = op.schema();
  const auto& formals = s.arguments();
  std::vector<size_t> written;
  for (size_t i = 0; i < formals.size(); ++i)
    if (writes(formals[i]) && (*stack)[first + i].isTensor()) written.push_back(i);
  if (written.empty()) return false;

  const c10::OperatorHandle* functional = functional_variant(op);
  const std::string name = operator_name(op);
  if (!functional)
    fail(name + " updates its argument '" + formals[written[0]].name() +
         "' in place and has no out-of-place overload to record instead; functionalize cannot record it");
  if (functional->schema().returns().size() != written.size())
    fail(name + " writes " + std::to_string(written.size()) +
         " tensors but its out-of-place overload returns " +
         std::to_string(functional->schema().returns().size()) + "; functionalize cannot pair them");

  // Which tensors get updated, and what the tensor owning each one's
  // storage (itself, or the base of a view) stood for before the update.
  struct Update {
    at::Tensor tensor;
    at::Tensor base;
    Node* before;
  };
  std::vector<Update> updates;
  for (size_t i : written) {
    const at::Tensor& t = (*stack)[first + i].toTensor();
    const at::Tensor& base = base_of(t);
    updates.push_back({t, base, node_of(base)});
  }

  // The out-of-place call on the same arguments, matched by name.
  torch::jit::Stack call;
  for (const auto& a : functional->schema().arguments())
    for (size_t i = 0; i < formals.size(); ++i)
      if (formals[i].name() == a.name()) call.push_back((*stack)[first + i]);
  Node* node = create_call(*functional, call, 0);

  redispatch(op, keys, stack);  // the real update, so that eager values stay right

  for (size_t k = 0; k < updates.size(); ++k) {
    const Update& u = updates[k];
    const c10::TensorImpl* impl = u.base.unsafeGetTensorImpl();
    if (!mutated_set_.count(impl)) {
      // An input or an attribute: its final value is written back.
      if (u.before && u.before->op() == Op::placeholder) {
        mutated_.push_back({u.base, u.before, ""});
        mutated_set_.insert(impl);
      } else if (!u.before) {
        auto root = root_tensors_.find(impl);
        auto constant = constants_.find(impl);
        if (root != root_tensors_.end() || constant != constants_.end()) {
          mutated_.push_back(
              {u.base, nullptr, root != root_tensors_.end() ? root->second.path : constant->second.path});
          mutated_set_.insert(impl);
        }
      }
    }
    bind(u.tensor, updates.size() == 1 ? node : getitem(node, static_cast<int64_t>(k)));
    // As 2.x's functionalization kernels: commit_update, then sync.
    updated_in_place(u.tensor);
    sync(u.tensor);
  }
  return true;
}

void Recorder::write_back_mutations() {
  for (const Mutated& m : mutated_) {
    sync(m.tensor);  // updates through its views, still pending
    Node* latest = node_of(m.tensor);
    Node* dest = m.original ? m.original : graph_->get_attr(m.attribute);
    graph_->create_node(Op::call_function, "torch.ops.aten.copy_.default", {dest, latest}, {}, "copy_");
  }
}

}  // namespace fx::capture_detail
