// The index behind fx::operator_overloads: operator name -> overload names,
// filled by a dispatcher registration listener. The listener sees every
// operator registered before it (addRegistrationListener replays them) and
// every one registered or removed after, so a lookup never rescans the
// dispatcher.

#include <fx/operator_overloads.h>

#include <algorithm>
#include <mutex>
#include <string>

#include "string_map.h"

namespace fx {

namespace {

class OverloadIndex final : public c10::OpRegistrationListener {
 public:
  void onOperatorRegistered(const c10::OperatorHandle& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    const c10::OperatorName& name = op.operator_name();
    auto it = by_name_.find(name.name);
    if (it == by_name_.end()) it = by_name_.emplace(name.name, std::vector<c10::OperatorName>()).first;
    it->second.push_back(name);
  }
  void onOperatorDeregistered(const c10::OperatorHandle& op) override {
    std::lock_guard<std::mutex> lock(mu_);
    const c10::OperatorName& name = op.operator_name();
    auto it = by_name_.find(name.name);
    if (it == by_name_.end()) return;
    auto& names = it->second;
    names.erase(std::remove(names.begin(), names.end(), name), names.end());
  }
  std::vector<c10::OperatorName> names(std::string_view qualified) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_name_.find(qualified);
    return it == by_name_.end() ? std::vector<c10::OperatorName>() : it->second;
  }

 private:
  std::mutex mu_;
  detail::StringMap<std::vector<c10::OperatorName>> by_name_;
};

OverloadIndex& index() {
  // Never destroyed: the dispatcher keeps a pointer to the listener through
  // its registration handle, which is leaked with it.
  static OverloadIndex* index = [] {
    auto owned = std::make_unique<OverloadIndex>();
    OverloadIndex* raw = owned.get();
    static auto* handle = new c10::RegistrationHandleRAII(
        c10::Dispatcher::singleton().addRegistrationListener(std::move(owned)));
    static_cast<void>(handle);
    return raw;
  }();
  return *index;
}

}  // namespace

std::vector<c10::OperatorHandle> operator_overloads(std::string_view qualified) {
  // The names are copied out first: findOp takes the dispatcher's lock, which
  // a registration holds while it calls the listener (and so takes ours).
  std::vector<c10::OperatorHandle> out;
  for (const c10::OperatorName& name : index().names(qualified))
    if (auto h = c10::Dispatcher::singleton().findOp(name)) out.push_back(*h);
  return out;
}

bool is_view_op(const c10::OperatorHandle& op) {
  if (!op.hasSchema()) return false;
  for (const auto& r : op.schema().returns())
    if (r.alias_info() && !r.alias_info()->isWrite()) return true;
  return false;
}

}  // namespace fx
