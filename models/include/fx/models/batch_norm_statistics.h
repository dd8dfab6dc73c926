#pragma once
// For the tests and benchmarks of BatchNorm folding: statistics away from a
// fresh BatchNorm's (mean 0, variance 1), so that folding them into the
// convolutions changes the weights.
#include <fx/module.h>
#include <torch/torch.h>

namespace fx::models {

// Every running_mean ~ N(0, 0.1) and running_var ~ U(0.5, 1.5) in `model`.
inline void randomize_batch_norm_statistics(torch::nn::Module& model) {
  torch::NoGradGuard no_grad;
  for (auto& b : model.named_buffers()) {
    if (b.key().ends_with("running_mean")) b.value().normal_(0.0, 0.1);
    if (b.key().ends_with("running_var")) b.value().uniform_(0.5, 1.5);
  }
}

}  // namespace fx::models
