#pragma once
// What the export tests share: a scratch folder, files, and running a command.

#include <fx/error.h>
#include <gtest/gtest.h>

#include <torch/serialize.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>

#include <sys/wait.h>
#include <unistd.h>

namespace export_test {

namespace fs = std::filesystem;

// A fresh folder under the system's temporary directory, removed at the end.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag)
      : path_(fs::temp_directory_path() / ("fxcpp_" + tag + "_" + std::to_string(::getpid()))) {
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~ScratchDir() {
    std::error_code ec;
    if (!std::getenv("FXCPP_KEEP_EXPORTS")) fs::remove_all(path_, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const fs::path& path() const { return path_; }
  std::string str(const std::string& sub = "") const {
    return sub.empty() ? path_.string() : (path_ / sub).string();
  }

 private:
  fs::path path_;
};

inline std::string read_text(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) throw fx::Error("cannot read " + p.string());
  return std::string(std::istreambuf_iterator<char>(f), {});
}

inline void write_bytes(const fs::path& p, const std::vector<char>& bytes) {
  std::ofstream f(p, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!f) throw fx::Error("cannot write " + p.string());
}

// torch.save(value) readable by Python's torch.load and torch::pickle_load.
inline void save_ivalue(const fs::path& p, const c10::IValue& v) { write_bytes(p, torch::pickle_save(v)); }

inline c10::IValue load_ivalue(const fs::path& p) {
  std::string s = read_text(p);
  return torch::pickle_load(std::vector<char>(s.begin(), s.end()));
}

// Runs `cmd` through the shell with its output sent to `log`; the exit status.
inline int run(const std::string& cmd, const fs::path& log) {
  int rc = std::system((cmd + " > '" + log.string() + "' 2>&1").c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

#ifdef FXCPP_TORCH_DIR
// Configures and builds the CMake project in `project` (into project/build)
// against the LibTorch fxcpp is built against (FXCPP_TORCH_DIR and
// FXCPP_TORCH_CUDA_ARCH_LIST, defined by the CMakeLists.txt of the tests that
// build projects), with `extra` CMake arguments; the exit status, the output
// in `log`.
inline int cmake_build(const fs::path& project, const std::string& extra, const fs::path& log) {
  const char* cmake_env = std::getenv("FXCPP_CMAKE");
  const std::string cmake = cmake_env ? cmake_env : "cmake";
  const std::string launcher =
      std::system("command -v ccache > /dev/null 2>&1") == 0 ? " -DCMAKE_CXX_COMPILER_LAUNCHER=ccache" : "";
  const std::string torch = std::string(" -DTorch_DIR='") + FXCPP_TORCH_DIR + "' -DTORCH_CUDA_ARCH_LIST='" +
                            FXCPP_TORCH_CUDA_ARCH_LIST + "'";
  const std::string build = (project / "build").string();
  return run(cmake + " -S '" + project.string() + "' -B '" + build + "' -DCMAKE_BUILD_TYPE=Release" + torch +
                 launcher + extra + " && " + cmake + " --build '" + build + "' -j2",
             log);
}
#endif

// Runs the project's built fx_model on input.pt, writing output.pt; the exit status.
inline int run_model(const fs::path& project, const fs::path& input, const fs::path& output,
                     const fs::path& log) {
  std::ostringstream command;
  command << project / "build" / "fx_model" << ' ' << project / "weights.pt" << ' ' << input << ' ' << output;
  return run(command.str(), log);
}

// The same outputs (a tensor, or a tuple of them): sizes, dtypes, values allclose.
inline void expect_same_outputs(const c10::IValue& got, const c10::IValue& want, double rtol, double atol) {
  auto items = [](const c10::IValue& v) {
    return v.isTuple() ? v.toTupleRef().elements().vec() : std::vector<c10::IValue>{v};
  };
  const std::vector<c10::IValue> g = items(got), w = items(want);
  ASSERT_EQ(g.size(), w.size());
  for (size_t i = 0; i < g.size(); ++i) {
    at::Tensor a = g[i].toTensor(), b = w[i].toTensor();
    ASSERT_EQ(a.sizes(), b.sizes()) << "output " << i;
    ASSERT_EQ(a.scalar_type(), b.scalar_type()) << "output " << i;
    EXPECT_TRUE(at::allclose(a, b, rtol, atol)) << "output " << i << ": " << (a - b).abs().max();
  }
}

}  // namespace export_test
