#pragma once
// One function per torchvision module whose wrapped functions fxcpp ports;
// fx::torchvision::register_functions (register_functions.cpp) calls each.

namespace fx::torchvision {

void register_stochastic_depth();  // stochastic_depth.cpp
void register_swin_transformer();  // swin_transformer.cpp

}  // namespace fx::torchvision
