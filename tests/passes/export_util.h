#pragma once
// What the export tests share: a scratch folder, files, and running a command.

#include <fx/error.h>

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

}  // namespace export_test
