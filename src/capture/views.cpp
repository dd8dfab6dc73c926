// CaptureOptions::functionalize for views, as PyTorch's functionalization
// does it (FunctionalTensorWrapper, FunctionalStorageImpl and
// FunctionalInverses.cpp in 2.x):
// - a view op is recorded as it is, reading its `self` as it is (not
//   synced), and remembers how it was made from its base (the chain of view
//   ops from the tensor that owns the storage);
// - an in-place update of an alias is recorded out of place and, at once
//   (the functionalization kernel's commit_update and sync), written into
//   the storage's value: the intermediate views are replayed from it and
//   the update goes back through each with the view's inverse
//   (select_scatter, slice_scatter, view back to the old shape, ...); then
//   the updated alias is replayed from the new value (even when nothing
//   reads it: make_fx keeps that dead replay too);
// - any other alias, the base included, is replayed from the storage's
//   value when it is next read (by an operator other than a view op, or as
//   an output), if the storage changed since it was made or last read.
// The graph then holds no in-place op and no stale alias, and its text is
// make_fx(functionalize(f))'s.
#include "recorder.h"

#include <ATen/core/LegacyTypeDispatch.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/impl/LocalDispatchKeySet.h>

#include <algorithm>

namespace fx::capture_detail {

namespace {

c10::OperatorHandle aten_op(const char* name, const char* overload) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, overload);
}

int64_t dim_in(int64_t dim, int64_t rank) { return dim < 0 ? dim + rank : dim; }

}  // namespace

torch::jit::Stack Recorder::call(const c10::OperatorHandle& op, torch::jit::Stack stack, Node** node) {
  *node = create_call(op, stack, 0);
  {
    // Run below autograd and below this capture's key: these calls are the
    // graph's bookkeeping, not the user's operators.
    at::AutoDispatchBelowADInplaceOrView below_autograd;
    c10::impl::ExcludeDispatchKeyGuard off(capture_keys(key_));
    op.callBoxed(stack);
  }
  bind_outputs(*node, stack, 0, op.schema().returns().size());
  return stack;
}

at::Tensor Recorder::replay(const at::Tensor& parent, const ViewStep& step) {
  torch::jit::Stack stack{parent};
  stack.insert(stack.end(), step.args.begin(), step.args.end());
  Node* node;
  torch::jit::Stack out = call(*step.op, std::move(stack), &node);
  return step.output < 0 ? out[0].toTensor() : out[0].toListRef()[step.output].toTensor();
}

at::Tensor Recorder::inverse(const at::Tensor& parent, const at::Tensor& updated, const ViewStep& step) {
  const std::string name = operator_name(*step.op);
  const auto& a = step.args;
  const int64_t rank = parent.dim();
  Node* node;
  auto run = [&](const c10::OperatorHandle& op, torch::jit::Stack stack) {
    return call(op, std::move(stack), &node)[0].toTensor();
  };
  if (name == "aten::alias" || name == "aten::detach" || name == "aten::lift_fresh") return updated;
  if (name == "aten::view")
    return run(aten_op("aten::view", ""), {updated, c10::IValue(parent.sizes().vec())});
  if (name == "aten::_reshape_alias")
    return run(aten_op("aten::_reshape_alias", ""),
               {updated, c10::IValue(parent.sizes().vec()), c10::IValue(parent.strides().vec())});
  if (name == "aten::transpose.int") return run(aten_op("aten::transpose", "int"), {updated, a[0], a[1]});
  if (name == "aten::t") return run(aten_op("aten::t", ""), {updated});
  if (name == "aten::permute") {
    std::vector<int64_t> dims = a[0].toIntVector(), back(dims.size());
    for (size_t i = 0; i < dims.size(); ++i) back[dim_in(dims[i], rank)] = static_cast<int64_t>(i);
    return run(aten_op("aten::permute", ""), {updated, c10::IValue(back)});
  }
  if (name == "aten::unsqueeze") return run(aten_op("aten::squeeze", "dim"), {updated, a[0]});
  if (name == "aten::squeeze.dim") {
    const int64_t dim = dim_in(a[0].toInt(), rank);
    if (parent.size(dim) != 1) return updated;  // squeezed nothing
    return run(aten_op("aten::unsqueeze", ""), {updated, dim});
  }
  if (name == "aten::squeeze") {
    at::Tensor t = updated;
    for (int64_t d = 0; d < rank; ++d)
      if (parent.size(d) == 1) t = run(aten_op("aten::unsqueeze", ""), {t, d});
    return t;
  }
  if (name == "aten::select.int")
    return run(aten_op("aten::select_scatter", ""), {parent, updated, a[0], a[1]});
  if (name == "aten::slice.Tensor")
    return run(aten_op("aten::slice_scatter", ""), {parent, updated, a[0], a[1], a[2], a[3]});
  if (name == "aten::diagonal")
    return run(aten_op("aten::diagonal_scatter", ""), {parent, updated, a[0], a[1], a[2]});
  if (name == "aten::as_strided")
    return run(aten_op("aten::as_strided_scatter", ""), {parent, updated, a[0], a[1], a[2]});
  if (name == "aten::unbind.int")
    return run(aten_op("aten::select_scatter", ""), {parent, updated, a[0], step.output});
  if (name == "aten::split.Tensor" || name == "aten::split_with_sizes") {
    int64_t start = 0, size = 0;
    if (name == "aten::split.Tensor") {
      size = a[0].toInt();
      start = step.output * size;
    } else {
      std::vector<int64_t> sizes = a[0].toIntVector();
      for (int64_t i = 0; i < step.output; ++i) start += sizes[i];
      size = sizes[step.output];
    }
    return run(aten_op("aten::slice_scatter", ""), {parent, updated, a[1], start, start + size, 1});
  }
  fail("an in-place operator updates a view made by " + name +
       ", which functionalize cannot write back to its base (it knows the inverses of view, reshape, "
       "transpose, t, permute, squeeze, unsqueeze, select, slice, narrow, diagonal, as_strided, split, "
       "chunk and unbind). Update a copy (clone) of the view instead");
}

std::unordered_map<const c10::TensorImpl*, Recorder::Alias>::iterator Recorder::find_alias(
    const at::Tensor& t) {
  auto it = aliases_.find(t.unsafeGetTensorImpl());
  if (it != aliases_.end() || !t.has_storage()) return it;
  auto same_storage = alias_tensors_.find(t.storage().unsafeGetStorageImpl());
  if (same_storage == alias_tensors_.end()) return it;
  for (auto v = same_storage->second.rbegin(); v != same_storage->second.rend(); ++v) {
    if (!v->geometry.matches(t)) continue;
    Alias copy = aliases_.at(v->impl);
    // The key is an address: a storage that died may have left it to t's.
    if (!copy.base.storage().is_alias_of(t.storage())) continue;
    copy.impl = WeakImpl(t.getIntrusivePtr());
    const Geometry geometry = v->geometry;
    it = aliases_.insert_or_assign(t.unsafeGetTensorImpl(), std::move(copy)).first;
    same_storage->second.push_back({t.unsafeGetTensorImpl(), geometry});  // swept with the views
    ++view_entries_;
    return it;
  }
  return it;
}

at::Tensor Recorder::base_tensor(const Alias& a) {
  return a.base.defined() ? a.base : at::Tensor(a.impl.lock());
}

void Recorder::sweep_aliases() {
  // Views often (the dead ones hold their bases), the whole table when it
  // has doubled (a dead base's own entry pins its TensorImpl).
  const bool views_due = view_entries_ >= std::max<size_t>(8, 2 * live_view_entries_);
  const bool all_due = aliases_.size() >= std::max<size_t>(32, 2 * aliases_after_sweep_);
  if (!views_due && !all_due) return;
  if (all_due) {
    for (auto it = aliases_.begin(); it != aliases_.end();) {
      if (!it->second.impl.expired()) {
        ++it;
        continue;
      }
      if (!it->second.base.defined()) {
        // A dead base has no views left (each holds it): its storage's
        // history goes with it, before its address can be reused.
        updates_.erase(it->first);
        pending_.erase(it->first);
        storage_values_.erase(it->first);
      }
      it = aliases_.erase(it);
    }
    aliases_after_sweep_ = aliases_.size();
  }
  size_t live = 0;
  for (auto it = alias_tensors_.begin(); it != alias_tensors_.end();) {
    std::erase_if(it->second, [&](const AliasView& v) {
      auto entry = aliases_.find(v.impl);
      if (entry == aliases_.end()) return true;  // swept just now
      if (!entry->second.impl.expired()) return false;
      aliases_.erase(entry);
      return true;
    });
    live += it->second.size();
    it = it->second.empty() ? alias_tensors_.erase(it) : std::next(it);
  }
  view_entries_ = live_view_entries_ = live;
}

void Recorder::note_views(const c10::OperatorHandle& op, const at::Tensor& self, torch::jit::Stack args,
                          const torch::jit::Stack& outputs, size_t first) {
  sweep_aliases();
  auto parent = find_alias(self);
  if (parent == aliases_.end())
    parent = aliases_.emplace(self.unsafeGetTensorImpl(), Alias{WeakImpl(self.getIntrusivePtr()), {}, {}, 0})
                 .first;
  // A view has seen what its `self` has seen (it is made from self's value).
  Alias made{parent->second.impl, base_tensor(parent->second), parent->second.steps,
             parent->second.generation};
  made.steps.push_back(ViewStep{&op, std::move(args), -1});
  auto add = [&](const at::Tensor& view, int64_t index) {
    Alias a = made;
    a.impl = WeakImpl(view.getIntrusivePtr());
    a.steps.back().output = index;
    aliases_.insert_or_assign(view.unsafeGetTensorImpl(), std::move(a));
    if (view.has_storage()) {
      alias_tensors_[view.storage().unsafeGetStorageImpl()].push_back(
          {view.unsafeGetTensorImpl(), Geometry::of(view)});
      ++view_entries_;
    }
  };
  const c10::IValue& v = outputs[first];
  if (v.isTensor()) {
    add(v.toTensor(), -1);
  } else if (v.isList()) {
    int64_t i = 0;
    for (const c10::IValue& e : v.toListRef()) add(e.toTensor(), i++);
  }
}

at::Tensor Recorder::base_of(const at::Tensor& t) {
  auto it = find_alias(t);
  return it == aliases_.end() ? t : base_tensor(it->second);
}

void Recorder::updated_in_place(const at::Tensor& t) {
  auto it = find_alias(t);
  if (it == aliases_.end()) return;  // no views: its node is all there is
  const c10::TensorImpl* base = base_tensor(it->second).unsafeGetTensorImpl();
  // `t` has not seen its own update (its generation stays behind), so the
  // sync that follows writes it into the base and replays `t` from there.
  ++updates_[base];
  // The value as of now, on its own TensorImpl, made without an operator
  // call (the Python key off: the mode on c10's stack would record it).
  c10::impl::ExcludeDispatchKeyGuard no_mode(c10::DispatchKey::Python);
  at::Tensor value(
      t.unsafeGetTensorImpl()->shallow_copy_and_detach(t.unsafeGetTensorImpl()->version_counter(),
                                                       /*allow_tensor_metadata_change=*/false));
  bind(value, node_of(t));
  pending_[base].push_back(Pending{it->second.steps, std::move(value)});
}

at::Tensor Recorder::apply_updates(const at::Tensor& base) {
  at::Tensor& storage = storage_values_.try_emplace(base.unsafeGetTensorImpl(), base).first->second;
  auto pending = pending_.find(base.unsafeGetTensorImpl());
  if (pending == pending_.end()) return storage;
  std::vector<Pending> updates = std::move(pending->second);
  pending_.erase(pending);
  for (const Pending& u : updates) {
    // The values of the storage and of each intermediate view, then the
    // update written back through them, innermost first.
    std::vector<at::Tensor> parents{storage};
    for (size_t i = 0; i + 1 < u.steps.size(); ++i) parents.push_back(replay(parents.back(), u.steps[i]));
    at::Tensor value = u.value;
    for (size_t i = u.steps.size(); i-- > 0;) value = inverse(parents[i], value, u.steps[i]);
    storage = value;
  }
  return storage;
}

void Recorder::sync(const at::Tensor& t) {
  if (aliases_.empty() || !reads_sync_) return;
  auto alias = find_alias(t);
  if (alias == aliases_.end()) return;
  const at::Tensor base = base_tensor(alias->second);
  const uint64_t now = updates_[base.unsafeGetTensorImpl()];
  if (alias->second.generation == now) return;
  // The graph's bookkeeping calls below read without syncing.
  ReadsWithoutSync no_sync(*this);
  at::Tensor value = apply_updates(base);
  alias->second.generation = now;
  for (const ViewStep& step : alias->second.steps) value = replay(value, step);
  bind(t, node_of(value));
}

}  // namespace fx::capture_detail
