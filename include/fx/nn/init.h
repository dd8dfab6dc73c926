#pragma once
// fx::nn::SkipInit: construct fx::nn modules without initialising their
// parameters, as torch.nn.utils.skip_init does in Python, for code that
// replaces every parameter right after (fx::load does, with the file's).
//
//   {
//     fx::nn::SkipInit skip;
//     auto conv = std::make_shared<fx::nn::Conv2d>(64, 64, std::vector<int64_t>{3});
//   }  // conv->weight is allocated (torch::empty) but holds no drawn values
//
// While a SkipInit lives, the constructors called on its thread allocate
// their parameters with torch::empty and skip reset_parameters' random draws
// (kaiming_uniform_, uniform_, normal_, xavier_*). Buffers and the
// parameters torch.nn fills with constants (norm weights and biases) are set
// as usual: they are cheap, and a module's buffers need not all be in a
// state dict. Guards nest.

namespace fx::nn {

class SkipInit {
 public:
  SkipInit();
  ~SkipInit();
  SkipInit(const SkipInit&) = delete;
  SkipInit& operator=(const SkipInit&) = delete;

 private:
  bool previous_;
};

// True while a SkipInit lives on this thread.
bool init_skipped();

}  // namespace fx::nn
