#pragma once
// What several torchvision model files share: building fx::nn layers with
// Python's keyword defaults, and the weight initializations they apply.

#include <fx/nn.h>
#include <fx/nn/pooling.h>

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace fx::models::detail {

template <class M, class... A>
std::shared_ptr<M> make(A&&... a) {
  return std::make_shared<M>(std::forward<A>(a)...);
}

// nn.Conv2d(in, out, kernel_size=k, stride=s, padding=p, dilation=d, groups=g, bias=bias), square.
inline std::shared_ptr<nn::Conv2d> conv2d(int64_t in, int64_t out, int64_t k, int64_t stride = 1,
                                          int64_t padding = 0, int64_t groups = 1, bool bias = true,
                                          int64_t dilation = 1) {
  return make<nn::Conv2d>(in, out, std::vector<int64_t>{k, k}, std::vector<int64_t>{stride, stride},
                          std::vector<int64_t>{padding, padding}, std::vector<int64_t>{dilation, dilation},
                          groups, bias);
}

inline std::shared_ptr<nn::Sequential> sequential(std::vector<std::shared_ptr<Module>> modules) {
  return make<nn::Sequential>(std::move(modules));
}

// nn.Sequential(OrderedDict(...)) and subclasses of nn.Sequential that
// register named children: forward calls the children in order.
class NamedSequential : public Module {
 public:
  explicit NamedSequential(std::string type_name = "torch.nn.Sequential")
      : Module(std::move(type_name), {"input"}) {}
  void add(const std::string& name, std::shared_ptr<Module> m) {
    if (!m) throw Error(type_name() + ": cannot add a null module as '" + name + "'");
    register_module(name, m);
    children_.push_back(std::move(m));
  }
  Value forward(const std::vector<Value>& args) override {
    Value x = args[0];
    for (auto& m : children_) x = (*m)(x);
    return x;
  }

 private:
  std::vector<std::shared_ptr<Module>> children_;
};

// The init loops of torchvision's constructors (`for m in self.modules(): ...`),
// applied to every module of `root` of the given kind.
enum class ConvInit { kaiming_normal_fan_out_relu, kaiming_normal, kaiming_uniform, none };
enum class LinearInit { normal_0_01, zero_bias, none };
void init_weights(torch::nn::Module& root, ConvInit conv, LinearInit linear);

}  // namespace fx::models::detail
