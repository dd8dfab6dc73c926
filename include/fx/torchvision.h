#pragma once
// fxcpp::torchvision: torchvision's wrapped functions, for the runtime.
//
// torchvision wraps a few of its Python functions with torch.fx.wrap, so
// that torch.fx records each call as one call_function node instead of
// tracing through it:
//   torchvision.ops.stochastic_depth.stochastic_depth            (EfficientNet, ConvNeXt, ...)
//   torchvision.models.swin_transformer._patch_merging_pad        (Swin)
//   torchvision.models.swin_transformer._get_relative_position_bias
//   torchvision.models.swin_transformer.shifted_window_attention
// A GraphModule of such a model, traced in Python and loaded in C++, calls
// them. fxcpp's runtime knows torch, not torchvision: link fxcpp::torchvision
// and call register_functions() before running such a GraphModule, and these
// targets resolve to ports of torchvision 0.29's Python (fx::register_function).
//
//   target_link_libraries(app PRIVATE fxcpp::fxcpp fxcpp::torchvision)
//   fx::torchvision::register_functions();
//   auto gm = fx::load("swin_t.fxg");
//   at::Tensor y = gm->run({x}).toTensor();

namespace fx::torchvision {

// Registers the functions above with the runtime. The first call registers;
// later ones (from any thread) do nothing.
void register_functions();

}  // namespace fx::torchvision
