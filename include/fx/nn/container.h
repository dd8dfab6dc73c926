#pragma once
// Containers: torch.nn.Sequential, ModuleList, ModuleDict
// (torch/nn/modules/container.py). Not leaves: tracing goes through them
// into their children, as torch.fx does.

#include <fx/nn/standard_module.h>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fx::nn {

// torch.nn.Sequential(*modules): forward calls each child on the previous
// one's output. Children are named "0", "1", ... as in PyTorch.
class Sequential : public Module {
 public:
  explicit Sequential(std::vector<std::shared_ptr<Module>> modules = {});
  void append(std::shared_ptr<Module> m);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  size_t size() const { return modules_.size(); }
  // Throws fx::Error for an index out of range.
  Module& operator[](size_t i) const;
  const std::shared_ptr<Module>& ptr(size_t i) const;

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};

// torch.nn.ModuleList(modules=None): children "0", "1", ...; model code
// indexes it and calls the children itself. Calling the list is an error, as
// in Python (Module.forward is not implemented).
class ModuleList : public Module {
 public:
  explicit ModuleList(std::vector<std::shared_ptr<Module>> modules = {});
  void append(std::shared_ptr<Module> m);
  void extend(const std::vector<std::shared_ptr<Module>>& modules);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  size_t size() const { return modules_.size(); }
  // Throws fx::Error for an index out of range; negative indexes count from the end.
  Module& operator[](int64_t i) const;
  const std::shared_ptr<Module>& ptr(int64_t i) const;
  auto begin() const { return modules_.begin(); }
  auto end() const { return modules_.end(); }

 private:
  size_t index(int64_t i) const;
  std::vector<std::shared_ptr<Module>> modules_;
};

// torch.nn.ModuleDict(modules=None): children by key, in insertion order;
// assigning an existing key replaces the child in place.
class ModuleDict : public Module {
 public:
  explicit ModuleDict(std::vector<std::pair<std::string, std::shared_ptr<Module>>> modules = {});
  void insert(const std::string& key, std::shared_ptr<Module> m);
  Value forward(const std::vector<Value>& args) override;
  ModulePtr clone(const OptionalDevice& device = c10::nullopt) const override;
  size_t size() const { return items_.size(); }
  bool contains(const std::string& key) const;
  // Throws fx::Error naming the key when it is absent.
  Module& operator[](const std::string& key) const;
  const std::shared_ptr<Module>& ptr(const std::string& key) const;
  const std::vector<std::pair<std::string, std::shared_ptr<Module>>>& items() const { return items_; }
  std::vector<std::string> keys() const;

 private:
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> items_;
};

}  // namespace fx::nn
