// DotGraph rendering: runs Graphviz's program on a temporary file, as pydot
// does, without a shell (the format and program are arguments, not text).
#include <fx/error.h>
#include <fx/passes/graph_drawer.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>

extern char** environ;

namespace fx::passes {

namespace {

// A temporary file removed when it goes out of scope.
class TempFile {
 public:
  TempFile() {
    std::string dir = std::filesystem::temp_directory_path().string();
    std::string pattern = dir + "/fxcpp-dot-XXXXXX";
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    int fd = mkstemp(buf.data());
    if (fd < 0)
      throw Error("DotGraph: cannot create a temporary file in " + dir + ": " + std::strerror(errno));
    ::close(fd);
    path_ = buf.data();
  }
  ~TempFile() { std::remove(path_.c_str()); }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string DotGraph::create(std::string_view format, const std::string& prog) const {
  if (format.empty() || format.find_first_of(" \t\n") != std::string_view::npos)
    throw Error("DotGraph::create: '" + std::string(format) +
                "' is not a Graphviz output format (svg, png, pdf...)");
  TempFile in, out, err;
  {
    std::ofstream f(in.path(), std::ios::binary);
    f << text_;
    if (!f) throw Error("DotGraph::create: cannot write " + in.path());
  }
  std::string fmt = "-T" + std::string(format);
  std::vector<std::string> argv_s = {prog, fmt, in.path(), "-o", out.path()};
  std::vector<char*> argv;
  for (auto& a : argv_s) argv.push_back(a.data());
  argv.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, err.path().c_str(), O_WRONLY | O_TRUNC, 0600);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, prog.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0)
    throw Error("DotGraph::create: cannot run '" + prog + "' (" + std::strerror(rc) +
                "); install Graphviz (e.g. apt-get install graphviz) or pass the path of its dot program");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR)
      throw Error("DotGraph::create: waiting for '" + prog + "' failed: " + std::strerror(errno));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    std::string why = WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                        : "was killed by signal " + std::to_string(WTERMSIG(status));
    throw Error("DotGraph::create: '" + prog + " " + fmt + "' on graph '" + name_ + "' " + why + ": " +
                read_all(err.path()));
  }
  return read_all(out.path());
}

void DotGraph::write(const std::string& path, std::string_view format, const std::string& prog) const {
  std::string data = format == "raw" ? text_ : create(format, prog);
  std::ofstream f(path, std::ios::binary);
  f << data;
  f.close();
  if (!f) throw Error("DotGraph::write: cannot write '" + path + "'");
}

}  // namespace fx::passes
