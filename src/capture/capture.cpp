#include <fx/capture.h>

#include <fx/error.h>
#include <fx/module.h>
#include <fx/value.h>

#include "recorder.h"
#include "symbolic_sizes.h"

#include <torch/nn/module.h>

namespace fx {

namespace {

using capture_detail::Recorder;

std::vector<std::string> input_names(const CaptureOptions& options, size_t count) {
  if (options.input_names.size() > count)
    throw Error("capture: " + std::to_string(options.input_names.size()) + " input names for " +
                std::to_string(count) + " example inputs; give one name per input");
  std::vector<std::string> names = options.input_names;
  for (size_t i = names.size(); i < count; ++i) names.push_back("arg" + std::to_string(i));
  return names;
}

std::string after(const Recorder& recorder) {
  std::string op = recorder.last_operator();
  return op.empty() ? "" : " (the last operator it called: " + op + ")";
}

// Runs fn under the recorder. An exception from fxcpp (a refused operator)
// passes as it is; anything else the function throws becomes a TraceError
// that says so. Either way no graph comes out.
c10::IValue run_function(Recorder& recorder, const CaptureFunction& fn,
                         const std::vector<c10::IValue>& inputs) {
  c10::IValue result;
  try {
    capture_detail::run_recording(recorder, [&] { result = fn(inputs); });
  } catch (const Error&) {
    throw;
  } catch (const c10::Error& e) {
    throw TraceError("capture: the captured function threw" + after(recorder) + ": " +
                     e.what_without_backtrace());
  } catch (const std::exception& e) {
    throw TraceError("capture: the captured function threw" + after(recorder) + ": " + e.what());
  }
  return result;
}

std::unique_ptr<GraphModule> graph_module_of(Recorder& recorder, const CaptureOptions& options) {
  auto attrs = recorder.take_attributes();
  return std::make_unique<GraphModule>(attrs, recorder.take_graph(), options.class_name);
}

std::unique_ptr<GraphModule> capture_impl(torch::nn::Module* root, const CaptureFunction& fn,
                                          const std::vector<c10::IValue>& inputs,
                                          const CaptureOptions& options) {
  if (!fn) throw Error("capture: the function to capture is empty");
  const std::vector<std::string> names = input_names(options, inputs.size());
  auto capture_at = [&](const std::vector<c10::IValue>& at) {
    Recorder recorder(options, root);
    recorder.add_inputs(names, at);
    c10::IValue result = run_function(recorder, fn, at);
    recorder.finish(result);
    return graph_module_of(recorder, options);
  };
  return capture_detail::capture_dynamic(capture_at, inputs, names, options, root);
}

}  // namespace

std::unique_ptr<GraphModule> capture(const CaptureFunction& fn,
                                     const std::vector<c10::IValue>& example_inputs,
                                     const CaptureOptions& options) {
  return capture_impl(nullptr, fn, example_inputs, options);
}

std::unique_ptr<GraphModule> capture(torch::nn::Module& root, const CaptureFunction& fn,
                                     const std::vector<c10::IValue>& example_inputs,
                                     const CaptureOptions& options) {
  return capture_impl(&root, fn, example_inputs, options);
}

std::unique_ptr<GraphModule> capture(Module& module, const std::vector<c10::IValue>& example_inputs,
                                     CaptureOptions options) {
  const auto& params = module.forward_params();
  if (options.input_names.empty())
    for (size_t i = 0; i < std::min(params.size(), example_inputs.size()); ++i)
      options.input_names.push_back(params[i].name);
  auto forward = [&module](const std::vector<c10::IValue>& inputs) {
    return module.call(std::vector<Value>(inputs.begin(), inputs.end())).ivalue();
  };
  return capture_impl(&module, forward, example_inputs, options);
}

std::unique_ptr<GraphModule> capture_training_step(torch::nn::Module& root, const CaptureFunction& step,
                                                   const std::vector<c10::IValue>& example_inputs,
                                                   const CaptureOptions& options) {
  if (!step) throw Error("capture_training_step: the step function is empty");
  const std::vector<std::string> names = input_names(options, example_inputs.size());
  auto capture_at = [&](const std::vector<c10::IValue>& at) {
    // The gradients this step computes, not ones accumulated before: start
    // from none, and give the parameters theirs back afterwards.
    auto parameters = root.named_parameters(/*recurse=*/true);
    struct RestoreGrads {
      std::vector<std::pair<at::Tensor, at::Tensor>> saved;
      ~RestoreGrads() {
        for (auto& [p, g] : saved) p.mutable_grad() = g;
      }
    } restore;
    for (const auto& p : parameters) {
      restore.saved.emplace_back(p.value(), p.value().grad());
      p.value().mutable_grad() = at::Tensor();
    }
    Recorder recorder(options, &root);
    recorder.add_inputs(names, at);
    c10::IValue result = run_function(recorder, step, at);
    std::vector<std::pair<std::string, at::Tensor>> grads;
    for (const auto& p : parameters)
      if (p.value().grad().defined()) grads.emplace_back(p.key(), p.value().grad());
    recorder.finish(result, &grads);
    return graph_module_of(recorder, options);
  };
  return capture_detail::capture_dynamic(capture_at, example_inputs, names, options, &root);
}

}  // namespace fx
