// Phase 5 of fx::compile: the generated source built into a shared library
// by the system C++ compiler, as Inductor's CPU backend does, and loaded.
//
// Libraries are kept in the cache directory under the MD5 of their source
// and build command, so a second compilation of the same program (in this
// process or another) builds nothing. A build writes to a temporary name and
// renames it into place, so concurrent builders of one hash never see a
// partial file.
#include "phases.h"

#include "../passes/md5.h"

#include <fx/error.h>

#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#ifndef FXCPP_TORCH_INCLUDE_DIR
#error "FXCPP_TORCH_INCLUDE_DIR: LibTorch's include directory, which generated kernels include"
#endif

namespace fx::compile_detail {

namespace {

std::string hex(const std::array<uint8_t, 16>& digest) {
  static const char* digits = "0123456789abcdef";
  std::string s;
  for (uint8_t b : digest) s += {digits[b >> 4], digits[b & 15]};
  return s;
}

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The compiler's flags for the instruction set named `isa`.
std::string isa_flags(const std::string& isa) {
  std::string out;
  for (const InstructionSet& set : instruction_sets()) {
    if (set.name != isa) continue;
    for (const char* f : set.flags) out += std::string(out.empty() ? "" : " ") + f;
    for (const char* d : set.definitions) out += std::string(out.empty() ? "-D" : " -D") + d;
  }
  return out;
}

std::string tail(const std::string& path, size_t max_bytes) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  return s.size() > max_bytes ? "..." + s.substr(s.size() - max_bytes) : s;
}

// Writes `source` to <stem>.cpp and builds it into `library`, the compiler's
// output in <stem>.log. Each file is first written under a name of this
// process's own and renamed into place: processes that share a cache (two
// test shards, two builds of one program) may build the same kernel at once,
// and one must not truncate the source that the other's compiler is reading.
void compile_to(const std::string& source, const std::string& compiler, const std::string& flags,
                const std::string& stem, const std::string& library) {
  const std::string mine = stem + ".tmp" + std::to_string(getpid());
  const std::string cpp = mine + ".cpp", log = mine + ".log", tmp = mine + ".so";
  {
    std::ofstream out(cpp);
    out << source;
    if (!out) throw Error("fx::compile: cannot write " + cpp);
  }
  const std::string command =
      quote(compiler) + " " + flags + " " + quote(cpp) + " -o " + quote(tmp) + " > " + quote(log) + " 2>&1";
  // The shell runs the compiler so that its output goes to the log; every
  // path in the command is quoted.
  const int status = std::system(command.c_str());  // NOLINT(bugprone-command-processor)
  std::error_code ec;
  if (status == -1 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::filesystem::remove(tmp, ec);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 127)
      throw Error(
          "fx::compile: the C++ compiler '" + compiler +
          "' was not found: install g++ (Debian: apt install g++) or name one in CompileOptions::compiler "
          "or $CXX");
    throw Error("fx::compile: building " + cpp + " failed (log: " + log + "):\n" + tail(log, 2000));
  }
  std::filesystem::rename(cpp, stem + ".cpp", ec);
  std::filesystem::rename(log, stem + ".log", ec);
  std::filesystem::rename(tmp, library, ec);
  if (ec) throw Error("fx::compile: cannot move the built library to " + library + ": " + ec.message());
}

// What the compiler says of itself (`c++ --version`), a part of each kernel
// library's key, so that an upgraded compiler builds its kernels anew rather
// than loading those of the one before. Asked once per process for each
// compiler and PATH (a bare name is found through PATH).
std::string compiler_identity(const std::string& compiler) {
  static std::mutex mu;
  static std::map<std::string, std::string> known;
  const char* path = std::getenv("PATH");
  const std::string key = compiler + "\n" + (path ? path : "");
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = known.find(key); it != known.end()) return it->second;
  std::string out;
  // A missing compiler answers nothing here; building then says what to install.
  const std::string command = quote(compiler) + " --version 2>/dev/null";
  if (FILE* p = popen(command.c_str(), "r")) {  // NOLINT(bugprone-command-processor)
    char buf[256];
    size_t n = 0;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
  }
  return known[key] = out;
}

std::mutex loaded_mu;
std::map<std::string, std::shared_ptr<const Library>> loaded;  // by hash; never unloaded

}  // namespace

const std::vector<InstructionSet>& instruction_sets() {
  static const std::vector<InstructionSet> sets = {
      {"AVX512",
       {"-mavx512f", "-mavx512dq", "-mavx512vl", "-mavx512bw", "-mfma"},
       {"CPU_CAPABILITY=AVX512", "CPU_CAPABILITY_AVX512"}},
      // F16C too, as Inductor's AVX2 flags have it: at::vec's AVX2 Half
      // conversions call _cvtss_sh, which does not build without it. Every
      // AVX2 processor has it (clang 16 cannot ask __builtin_cpu_supports).
      {"AVX2", {"-mavx2", "-mfma", "-mf16c"}, {"CPU_CAPABILITY=AVX2", "CPU_CAPABILITY_AVX2"}},
      {"DEFAULT", {}, {"CPU_CAPABILITY=DEFAULT"}},
  };
  return sets;
}

std::string host_isa() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
      __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
      __builtin_cpu_supports("fma"))
    return "AVX512";
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "AVX2";
  return "DEFAULT";
}

void* Library::symbol(const std::string& name) const {
  void* p = dlsym(handle, name.c_str());
  if (!p) throw Error("fx::compile: " + path + " has no kernel " + name + ": remove it from the cache");
  return p;
}

std::shared_ptr<const Library> build_library(const std::string& source, const std::string& cache_dir,
                                             const std::string& compiler) {
  const std::string include = FXCPP_TORCH_INCLUDE_DIR;
  if (!std::filesystem::is_directory(include + "/ATen/cpu/vec"))
    throw Error(
        "fx::compile: LibTorch's headers are not at " + include +
        ", where fxcpp was built against them; kernels include ATen/cpu/vec: reinstall LibTorch there "
        "or rebuild fxcpp against the LibTorch you have");
  const std::string flags =
      "-std=c++17 -O3 -shared -fPIC -fopenmp -w " + isa_flags(host_isa()) + " -I" + quote(include);
  const std::string hash =
      hex(passes::detail::md5(compiler + "\n" + compiler_identity(compiler) + "\n" + flags + "\n" + source));

  std::lock_guard<std::mutex> lock(loaded_mu);
  if (auto it = loaded.find(hash); it != loaded.end()) {
    auto again = std::make_shared<Library>(*it->second);
    again->cache_hit = true;
    return again;
  }
  std::error_code ec;
  std::filesystem::create_directories(cache_dir, ec);
  if (ec) throw Error("fx::compile: cannot create the cache directory " + cache_dir + ": " + ec.message());
  auto lib = std::make_shared<Library>();
  lib->hash = hash;
  lib->path = cache_dir + "/" + hash + ".so";
  lib->cache_hit = std::filesystem::exists(lib->path);
  if (lib->cache_hit) {
    lib->handle = dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib->handle) {
      // A damaged entry (a truncated copy, a disk error): build it again.
      lib->cache_hit = false;
      std::filesystem::remove(lib->path, ec);
    }
  }
  if (!lib->cache_hit) {
    compile_to(source, compiler, flags, cache_dir + "/" + hash, lib->path);
    lib->handle = dlopen(lib->path.c_str(), RTLD_NOW | RTLD_LOCAL);
  }
  if (!lib->handle) {
    const char* why = dlerror();
    throw Error("fx::compile: cannot load " + lib->path + ": " + (why ? why : "unknown error"));
  }
  loaded[hash] = lib;
  return lib;
}

}  // namespace fx::compile_detail
