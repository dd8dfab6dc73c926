// fx::compile on whole models beside LibTorch eager: the torchvision ports
// resnet50, mobilenet_v2 and vit_b_16 on 224x224 images, a BERT-base-sized
// encoder (12 post-norm TransformerEncoderLayers, 768 wide, 12 heads, 3072
// GELU feed-forward) and a GPT-2-small-sized decoder (the same, pre-norm,
// with a causal mask) on 128 tokens, each at batch 1 and 8, random weights,
// eval mode, no grad. bench/fx_compile_models_bench.py times the same
// architectures with PyTorch eager and torch.compile, and
// bench/run_compile_models_bench.sh prints them side by side.
//
//   compile_models_bench [--runs N] [--threads T] [--batches 1,8] [--models resnet50,...]
//                        [--cache DIR] [--first-call-only | --eager-first-call-only]
//
// Prints one JSON object: per model and batch, the first call's time
// (capture, the phases, the build or a load from --cache), the kernels and
// ATen calls of the compiled program, the time of each phase, the median, min and max of N calls
// after one untimed call, and the peak bytes that tensors held during one
// call above those live before it (peak_memory.h), eager and compiled.
// With --cache, kernels are built into DIR and kept: a second process with
// the same DIR times a warm first call (nothing to build). With
// --first-call-only, only the first calls are timed; with
// --eager-first-call-only, only eager's first calls (in a process of their
// own, what a warm first call pays beyond them is fx::compile's).
#include <fx/compile.h>
#include <fx/models/batch_norm_statistics.h>
#include <fx/models/mobilenetv2.h>
#include <fx/models/resnet.h>
#include <fx/models/vision_transformer.h>
#include <fx/nn.h>
#include <torch/torch.h>

#include "peak_memory.h"
#include "timing.h"

#include <unistd.h>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <sstream>

namespace {

using Inputs = std::vector<c10::IValue>;

// 12 TransformerEncoderLayers over [tokens, batch, 768], with an optional
// mask for every layer's attention.
class EncoderStack : public fx::Module {
 public:
  explicit EncoderStack(bool norm_first)
      : fx::Module("EncoderStack", {"x", {"mask", fx::Value()}}),
        layers(register_module("layers", std::make_shared<fx::nn::ModuleList>())) {
    for (int i = 0; i < 12; ++i)
      layers->append(std::make_shared<fx::nn::TransformerEncoderLayer>(
          768, 12, 3072, 0.0, "gelu", norm_first ? 1e-5 : 1e-12, false, norm_first));
  }
  fx::Value forward(const std::vector<fx::Value>& in) override {
    fx::Value x = in[0];
    for (const auto& layer : *layers) x = (*layer)(x, in.size() > 1 ? in[1] : fx::Value());
    return x;
  }
  std::shared_ptr<fx::nn::ModuleList> layers;
};

struct Model {
  std::string name;
  std::shared_ptr<fx::Module> module;
  std::function<Inputs(int64_t batch)> inputs;
};

std::vector<Model> models() {
  auto image = [](int64_t b) { return Inputs{torch::randn({b, 3, 224, 224})}; };
  auto resnet = fx::models::resnet50(1000);
  fx::models::randomize_batch_norm_statistics(*resnet);
  auto mobilenet = fx::models::mobilenet_v2(1000);
  fx::models::randomize_batch_norm_statistics(*mobilenet);
  return {
      {"resnet50", resnet, image},
      {"mobilenet_v2", mobilenet, image},
      {"vit_b_16", std::make_shared<fx::models::VisionTransformer>(224, 16, 12, 12, 768, 3072), image},
      {"bert_base_encoder", std::make_shared<EncoderStack>(false),
       [](int64_t b) {
         return Inputs{torch::randn({128, b, 768})};
       }},
      {"gpt2_small_decoder", std::make_shared<EncoderStack>(true),
       [](int64_t b) {
         at::Tensor causal = torch::full({128, 128}, -std::numeric_limits<float>::infinity()).triu(1);
         return Inputs{torch::randn({128, b, 768}), causal};
       }},
  };
}

std::vector<std::string> split(const std::string& list) {
  std::vector<std::string> out;
  std::stringstream in(list);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
}

// One untimed call of each, then `runs` timed calls of each in turn, so
// that both rows see the same moments of a shared machine's load.
std::vector<fxbench::Row> time_alternating(const std::string& name, int runs,
                                           const std::function<void()>& eager,
                                           const std::function<void()>& compiled) {
  eager();
  compiled();
  fxbench::Row e{"eager", {}}, c{"compiled", {}};
  for (int i = 0; i < runs; ++i) {
    auto start = std::chrono::steady_clock::now();
    eager();
    e.ms.push_back(ms_since(start));
    start = std::chrono::steady_clock::now();
    compiled();
    c.ms.push_back(ms_since(start));
    std::fprintf(stderr, "\r%-28s %3d/%d", name.c_str(), i + 1, runs);
  }
  std::fprintf(stderr, "\n");
  std::sort(e.ms.begin(), e.ms.end());
  std::sort(c.ms.begin(), c.ms.end());
  return {e, c};
}

}  // namespace

int main(int argc, char** argv) try {
  int runs = 10, threads = 0;
  bool first_call_only = false, eager_first_call_only = false;
  std::vector<std::string> names, batches = {"1", "8"};
  std::string cache;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--first-call-only" || flag == "--eager-first-call-only") {
      (flag == "--first-call-only" ? first_call_only : eager_first_call_only) = true;
      continue;
    }
    if (i + 1 >= argc) throw std::invalid_argument(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--runs")
      runs = std::stoi(value);
    else if (flag == "--threads")
      threads = std::stoi(value);
    else if (flag == "--batches")
      batches = split(value);
    else if (flag == "--models")
      names = split(value);
    else if (flag == "--cache")
      cache = value;
    else
      throw std::invalid_argument("unknown flag " + flag);
  }
  if (threads > 0) at::set_num_threads(threads);
  fxbench::CountingAllocator& memory = fxbench::CountingAllocator::install();
  torch::NoGradGuard no_grad;
  torch::manual_seed(0);
  fx::CompileOptions options;
  const bool own_cache = cache.empty();
  options.cache_dir = own_cache ? (std::filesystem::temp_directory_path() /
                                   ("fxcpp_compile_models_bench_" + std::to_string(getpid())))
                                      .string()
                                : cache;

  std::printf("{\"side\": \"fxcpp\", \"threads\": %d, \"runs\": %d, \"programs\": [", at::get_num_threads(),
              runs);
  bool first = true;
  for (const Model& model : models()) {
    if (!names.empty() && std::find(names.begin(), names.end(), model.name) == names.end()) continue;
    model.module->eval();
    auto eager = [&](const Inputs& in) {
      std::vector<fx::Value> args(in.begin(), in.end());
      return model.module->forward(args).tensor();
    };
    for (const std::string& batch : batches) {
      const Inputs inputs = model.inputs(std::stoll(batch));
      if (eager_first_call_only) {
        auto start = std::chrono::steady_clock::now();
        eager(inputs);
        std::printf("%s{\"program\": \"%s\", \"batch\": %s, \"first_call_ms\": %.1f}", first ? "" : ", ",
                    model.name.c_str(), batch.c_str(), ms_since(start));
        first = false;
        continue;
      }
      auto compiled = fx::compile(
          *model.module, [&](const Inputs& in) -> c10::IValue { return eager(in); }, options);
      auto start = std::chrono::steady_clock::now();
      compiled->run(inputs);  // compiles; the model runs eagerly while it is captured
      const double first_ms = ms_since(start);
      at::Tensor got = compiled->run(inputs).toTensor(), want = eager(inputs);
      if (!at::allclose(got, want, 1e-3, 1e-4))
        throw std::runtime_error(model.name + ": the compiled output differs from eager's by " +
                                 std::to_string((got - want).abs().max().item<double>()));
      const fx::CompileReport& report = compiled->report();
      std::printf(
          "%s{\"program\": \"%s\", \"batch\": %s, \"first_call_ms\": %.1f, \"kernels\": %zu, "
          "\"extern_nodes\": %zu, \"cache_hit\": %s",
          first ? "" : ", ", model.name.c_str(), batch.c_str(), first_ms, report.kernels, report.extern_nodes,
          report.cache_hit ? "true" : "false");
      first = false;
      std::printf(", \"phase_ms\": {");
      for (size_t i = 0; i < report.phase_ms.size(); ++i)
        std::printf("%s\"%s\": %.1f", i ? ", " : "", report.phase_ms[i].first.c_str(),
                    report.phase_ms[i].second);
      std::printf("}");
      if (!first_call_only) {
        const int64_t eager_peak = memory.peak_during([&] { eager(inputs); });
        const int64_t compiled_peak = memory.peak_during([&] { compiled->run(inputs); });
        std::printf(", \"eager_peak_bytes\": %lld, \"compiled_peak_bytes\": %lld, ",
                    static_cast<long long>(eager_peak), static_cast<long long>(compiled_peak));
        fxbench::print_rows(time_alternating(
            model.name, runs, [&] { eager(inputs); }, [&] { compiled->run(inputs); }));
      }
      std::printf("}");
      std::fflush(stdout);
    }
  }
  std::printf("]}\n");
  if (own_cache) std::filesystem::remove_all(options.cache_dir);
  return 0;
} catch (const std::exception& e) {
  std::cerr << "compile_models_bench: " << e.what() << "\n";
  return 1;
}
