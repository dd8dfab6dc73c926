// torch/nn/modules/container.py
#include <fx/nn/container.h>

namespace fx::nn {

namespace {
// Containers clone their children, each by its own clone().
std::shared_ptr<Module> clone_child(const std::string& owner, const std::string& name, const Module& child,
                                    const OptionalDevice& device) {
  auto copy = std::dynamic_pointer_cast<Module>(child.clone(device));
  if (!copy)
    throw Error(owner + ".clone: child '" + name + "' (" + child.type_name() +
                ") did not clone to an fx::Module");
  return copy;
}

// The end of a container's clone(): `copy` was given its training flag while
// still empty (train() is recursive) and then the children's clones, which
// carry their own flags.
ModulePtr finish_container_clone(ModulePtr copy, const OptionalDevice& device) {
  if (device) copy->to(*device);
  return copy;
}
}  // namespace

// ---- Sequential ---------------------------------------------------------------

Sequential::Sequential(std::vector<std::shared_ptr<Module>> modules)
    : Module("torch.nn.Sequential", {"input"}) {
  for (auto& m : modules) append(std::move(m));
}

void Sequential::append(std::shared_ptr<Module> m) {
  if (!m) throw Error("torch.nn.Sequential.append: cannot append a null module");
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

Value Sequential::forward(const std::vector<Value>& args) {
  Value x = args[0];
  for (size_t i = 0; i < modules_.size(); ++i) {
    if (i + 4 < modules_.size()) modules_[i + 4]->prefetch_call();
    x = (*modules_[i])(x);
  }
  return x;
}

Module& Sequential::operator[](size_t i) const { return *ptr(i); }

const std::shared_ptr<Module>& Sequential::ptr(size_t i) const {
  if (i >= modules_.size())
    throw Error("torch.nn.Sequential: IndexError: index " + std::to_string(i) + " is out of range for " +
                std::to_string(modules_.size()) + " modules");
  return modules_[i];
}

ModulePtr Sequential::clone(const OptionalDevice& device) const {
  auto copy = std::make_shared<Sequential>();
  copy->train(is_training());
  for (size_t i = 0; i < modules_.size(); ++i)
    copy->append(clone_child(type_name(), std::to_string(i), *modules_[i], c10::nullopt));
  return finish_container_clone(copy, device);
}

// ---- ModuleList ---------------------------------------------------------------

ModuleList::ModuleList(std::vector<std::shared_ptr<Module>> modules)
    : Module("torch.nn.ModuleList", {"input"}) {
  extend(modules);
}

void ModuleList::append(std::shared_ptr<Module> m) {
  if (!m) throw Error("torch.nn.ModuleList.append: cannot append a null module");
  register_module(std::to_string(modules_.size()), m);
  modules_.push_back(std::move(m));
}

void ModuleList::extend(const std::vector<std::shared_ptr<Module>>& modules) {
  for (const auto& m : modules) append(m);
}

Value ModuleList::forward(const std::vector<Value>&) {
  throw Error(
      "torch.nn.ModuleList: NotImplementedError: a ModuleList has no forward; index it and call its modules");
}

size_t ModuleList::index(int64_t i) const {
  const int64_t n = static_cast<int64_t>(modules_.size());
  if (i < -n || i >= n)
    throw Error("torch.nn.ModuleList: IndexError: index " + std::to_string(i) + " is out of range for " +
                std::to_string(n) + " modules");
  return static_cast<size_t>(i < 0 ? i + n : i);
}

Module& ModuleList::operator[](int64_t i) const { return *modules_[index(i)]; }
const std::shared_ptr<Module>& ModuleList::ptr(int64_t i) const { return modules_[index(i)]; }

ModulePtr ModuleList::clone(const OptionalDevice& device) const {
  auto copy = std::make_shared<ModuleList>();
  copy->train(is_training());
  for (size_t i = 0; i < modules_.size(); ++i)
    copy->append(clone_child(type_name(), std::to_string(i), *modules_[i], c10::nullopt));
  return finish_container_clone(copy, device);
}

// ---- ModuleDict ---------------------------------------------------------------

ModuleDict::ModuleDict(std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules)
    : Module("torch.nn.ModuleDict", {"input"}) {
  for (auto& [key, m] : modules) insert(key, std::move(m));
}

void ModuleDict::insert(const std::string& key, std::shared_ptr<Module> m) {
  if (!m) throw Error("torch.nn.ModuleDict: cannot insert a null module under '" + key + "'");
  if (key.empty() || key.find('.') != std::string::npos)
    throw Error("torch.nn.ModuleDict: KeyError: module name can't contain \".\" or be empty, got '" + key +
                "'");
  for (auto& [k, v] : items_) {
    if (k == key) {
      replace_module(key, m);
      v = std::move(m);
      return;
    }
  }
  register_module(key, m);
  items_.emplace_back(key, std::move(m));
}

Value ModuleDict::forward(const std::vector<Value>&) {
  throw Error(
      "torch.nn.ModuleDict: NotImplementedError: a ModuleDict has no forward; look up its modules by key");
}

bool ModuleDict::contains(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return true;
  return false;
}

const std::shared_ptr<Module>& ModuleDict::ptr(const std::string& key) const {
  for (const auto& [k, v] : items_)
    if (k == key) return v;
  throw Error("torch.nn.ModuleDict: KeyError: '" + key + "'");
}

Module& ModuleDict::operator[](const std::string& key) const { return *ptr(key); }

std::vector<std::string> ModuleDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [k, v] : items_) out.push_back(k);
  return out;
}

ModulePtr ModuleDict::clone(const OptionalDevice& device) const {
  auto copy = std::make_shared<ModuleDict>();
  copy->train(is_training());
  for (const auto& [k, v] : items_) copy->insert(k, clone_child(type_name(), k, *v, c10::nullopt));
  return finish_container_clone(copy, device);
}

}  // namespace fx::nn
