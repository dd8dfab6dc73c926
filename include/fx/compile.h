#pragma once
// fx::compile: LibTorch code made into fused C++ kernels, with no Python.
//
//   auto compiled = fx::compile(model, [&](const auto& in) { return model->forward(in[0].toTensor()); });
//   c10::IValue y = compiled->run({x});   // first call: capture, decompose, fuse, generate C++, build
//   c10::IValue z = compiled->run({x});   // runs the compiled program
//
// Each call's inputs are checked against guards (dtype, device, sizes and
// strides of each tensor, the value of each other input, grad mode, the
// training flag of each module of the root). The
// first call that fits no specialization captures the code on those inputs
// (fx::capture, functionalized: the code runs eagerly once, and that run's
// result is the call's, so that what it does to its inputs and buffers is
// done once), decomposes it (decompose.cpp), lowers its
// float32 and float64 pointwise operators to vector expressions (lower.cpp), groups them
// into kernels (schedule.cpp), writes one C++ source with an `extern "C"`
// function per kernel over at::vec::Vectorized (codegen_cpp.cpp), builds it
// with the system compiler into a shared library cached by the hash of its
// source (build.cpp), and runs a GraphModule in which each kernel is one
// call_function node; every other operator (matmul, convolution,
// reductions, views) stays an ATen call. docs/compile.md says what is fused.
//
// The first sizes get static kernels (sizes in their source). From the
// second size on, kernels take their sizes and strides as arguments: a new
// size captures again (milliseconds) but builds nothing when its kernels
// have the same form, which they do unless a dimension becomes 1 or an
// input's layout changes. So one built kernel serves every size.
//
// A call that autograd must see (grad mode on, and an input or a parameter
// of the root that requires grad) compiles its forward and its backward
// apart, as torch.compile's AOTAutograd does: run() returns outputs of one
// autograd node whose backward is the compiled backward, and
// loss.backward() adds the parameters' gradients to .grad() through it.
// A second derivative (create_graph) through it is an fx::Error. Run
// inference under torch::NoGradGuard or c10::InferenceMode, which compiles
// the forward alone. A training step (forward, loss and backward together)
// compiles whole with compile_training_step.
//
// Values computed from the parameters and buffers alone (a convolution
// weight copied to channels_last, a batch norm's scale, a weight packed
// for MKL's GEMM or oneDNN's convolution in inference) are computed once
// and kept until a tensor they read is written in place (its version
// counter), replaced or laid out otherwise. A write through `w.data()`,
// which has a version counter of its own, is not seen: write the parameter
// itself under torch::NoGradGuard. docs/compile.md, "Kept weight values".

#include <fx/capture.h>
#include <fx/codegen/cpp_export.h>
#include <fx/graph_module.h>

#include <ATen/core/ivalue.h>

#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace torch::nn {
class Module;
}

namespace fx {

struct CompileOptions {
  // Where built kernel libraries are kept, named by their source's hash, so
  // that a second process builds nothing. Empty: $FXCPP_CACHE_DIR, else
  // $XDG_CACHE_HOME/fxcpp/kernels, else $HOME/.cache/fxcpp/kernels.
  std::string cache_dir;
  // Threads of each kernel's parallel loop; 0: at::get_num_threads().
  int threads = 0;
  // Where each specialization writes its source, which nodes went into which
  // kernel, the compiled graph and the time of each phase. Empty:
  // $FXCPP_COMPILE_DEBUG, else nothing is written.
  std::string debug_dir;
  // The C++ compiler. Empty: $CXX, else c++.
  std::string compiler;
  // Kernels that take their sizes as arguments (dynamic) or have them in
  // their source (static, which the compiler folds into the loops).
  // `automatic`, as torch.compile: the first sizes static, dynamic from the
  // second size on. `on`: dynamic from the first. `off`: static, each size
  // a program of its own (at most kMaxPrograms).
  enum class Dynamic : uint8_t { automatic, on, off };
  Dynamic dynamic = Dynamic::automatic;
};

// What one specialization's compilation did, for tests and the debug files.
struct CompileReport {
  size_t kernels = 0;                                    // generated kernels
  size_t fused_nodes = 0;                                // ATen nodes inside them
  size_t extern_nodes = 0;                               // ATen calls left as they are
  bool cache_hit = false;                                // the library was found built in the cache
  std::string library;                                   // its path
  std::vector<std::pair<std::string, double>> phase_ms;  // capture, decompose, ..., build
};

class CompiledModule {
 public:
  using Function = CaptureFunction;
  // training_step: fn is a training step of root (compile_training_step).
  CompiledModule(torch::nn::Module* root, Function fn, CompileOptions options, bool training_step = false);
  ~CompiledModule();
  CompiledModule(const CompiledModule&) = delete;
  CompiledModule& operator=(const CompiledModule&) = delete;

  // Runs the compiled program for these inputs, compiling a specialization
  // first when no guard fits; a call that compiles returns what the code
  // computed while it was captured, and the next call with such inputs runs
  // the compiled program. Throws fx::Error for what cannot be compiled
  // or built (the message names the compiler, or the source and its build
  // log). Threads may call run() at once: compiling is serialized, running
  // is not.
  c10::IValue run(const std::vector<c10::IValue>& inputs);
  at::Tensor operator()(const at::Tensor& x) { return run({x}).toTensor(); }

  // Programs (kernel sources, each one build) this module may make. A call
  // whose specialization needs another runs the original code, with one
  // warning (c10's TORCH_WARN): inputs whose kernels keep changing would
  // otherwise build at every call.
  static constexpr size_t kMaxPrograms = 8;
  size_t num_programs() const;
  // Specializations (one per guard: sizes, strides, dtypes, values) kept;
  // past this many the least recently used is dropped, and compiled again
  // (capture and phases, not a build) if its inputs come back.
  static constexpr size_t kMaxSpecializations = 64;
  size_t num_specializations() const;
  // The GraphModule the specialization of the last compiled call runs (its
  // kernels are call_function nodes `fxcpp.compiled.k<hash>.cpp_fused_<ops>_<i>`
  // taking their inputs and the shape they loop over), and what its
  // compilation did. Valid until a later run() uses another specialization
  // (which may drop this one). Throw fx::Error before the first run.
  GraphModule& compiled_graph() const;
  // The compiled backward of that specialization, when it was compiled
  // for autograd (compiled_graph() is then its forward, which returns its
  // outputs and then the values the backward reads). Throws fx::Error
  // when it was compiled without autograd, or before the first run.
  GraphModule& compiled_backward_graph() const;
  const CompileReport& report() const;

  // Writes the program of the last compiled call as a standalone LibTorch
  // project: fx::export_cpp's files (model.h, forward.cpp, main.cpp,
  // weights.pt, CMakeLists.txt) and the generated kernels, kernels.cpp,
  // with kernels.h. forward calls each kernel directly on its tensors' data
  // and the other operators as ATen functions: no fxcpp, no interpreter and
  // no IValues between them. The project builds for the instruction set of
  // this processor (CMake option FX_KERNEL_ISA: AVX512, AVX2 or DEFAULT,
  // for any processor) and serves the sizes the program was compiled for:
  // other sizes are an error that names the kernel and its input. A cond or
  // while_loop is an `if` or a `while` around its branches' statements, and
  // each branch's kernels a file of their own. Throws fx::Error before the
  // first run, and as fx::export_cpp does.
  void export_cpp(const std::string& dir, const CppExportOptions& options = {}) const;

 private:
  struct Specialization;
  // The specialization for these inputs, compiled now if need be (one
  // without a compiled graph runs the original code). Compiling captures
  // the code, which runs it on the inputs: `captured_result` is then what it
  // returned. Called under mu_.
  // `autograd`: the call needs autograd (grad mode on, something requires
  // grad), so its forward and backward are compiled apart.
  std::shared_ptr<Specialization> specialize(const std::vector<c10::IValue>& inputs,
                                             std::optional<c10::IValue>& captured_result, bool autograd);

  torch::nn::Module* root_;
  Function fn_;
  CompileOptions options_;
  bool training_step_;
  // What the guard reads besides the inputs: root and its submodules (their
  // training flags) and, while grad mode is on, root's parameters (whether
  // each requires grad), as they were when compile() was called.
  std::vector<const torch::nn::Module*> modules_;
  std::vector<at::Tensor> parameters_;
  mutable std::mutex mu_;                                       // guards what follows
  std::list<std::shared_ptr<Specialization>> specializations_;  // the most recently used first
  std::unordered_map<std::string, std::list<std::shared_ptr<Specialization>>::iterator> by_key_;
  std::unordered_set<std::string> programs_;  // MD5 of each kernel source built
  std::shared_ptr<Specialization> last_;      // the last compiled
  bool warned_ = false;
};

// Compiles `fn`, which reads the parameters and buffers of `root` (captured
// as get_attr nodes named by path). `root` must outlive the result.
std::unique_ptr<CompiledModule> compile(torch::nn::Module& root, CaptureFunction fn,
                                        CompileOptions options = {});
// Compiles a training step of `root`: `step` runs the forward and the loss
// and calls loss.backward() (the optimizer and zero_grad stay outside it).
// The forward and the backward are captured as one ATen graph
// (fx::capture_training_step) and compiled together: the backward's
// pointwise operators fuse as the forward's do. Each run() computes the step
// with no autograd graph, adds the gradients to the .grad() of root's
// parameters as loss.backward() would, and returns what `step` returns (its
// tensors without autograd history). Grad mode must be on; a call whose
// inputs require grad runs `step` as it is (the graph gives the parameters'
// gradients only). The guard includes which parameters require grad and
// each module's training flag, so freezing a parameter or switching to
// eval() compiles again. Threads may call it at once: each adds its
// gradients under a lock, as autograd's AccumulateGrad does. `root` must
// outlive the result.
std::unique_ptr<CompiledModule> compile_training_step(torch::nn::Module& root, CaptureFunction step,
                                                      CompileOptions options = {});
// Compiles a function of tensors alone.
std::unique_ptr<CompiledModule> compile(CaptureFunction fn, CompileOptions options = {});
// Compiles a GraphModule (torch-level or ATen-level); `gm` must outlive the
// result.
std::unique_ptr<CompiledModule> compile(GraphModule& gm, CompileOptions options = {});

}  // namespace fx
