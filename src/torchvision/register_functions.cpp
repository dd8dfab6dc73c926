#include <fx/torchvision.h>

#include <mutex>

#include "register.h"

namespace fx::torchvision {

void register_functions() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_stochastic_depth();
    register_swin_transformer();
  });
}

}  // namespace fx::torchvision
