#include "command_line.h"

namespace fxc {

CommandLine::CommandLine(const CommandSpec& spec, const std::vector<std::string>& args) : spec_(spec) {
  const std::string see = "; see fxc " + spec.name + " --help";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a.size() > 1 && a[0] == '-') {
      if (spec.flags.count(a)) {
        flags_.insert(a);
      } else if (spec.options.count(a)) {
        if (i + 1 == args.size()) throw UsageError(a + " needs a value" + see);
        options_[a] = args[++i];
      } else {
        throw UsageError("fxc " + spec.name + " has no option " + a + see);
      }
    } else {
      positional_.push_back(a);
    }
  }
  if (positional_.size() != spec.positional)
    throw UsageError("fxc " + spec.name + " takes " + std::to_string(spec.positional) + " argument" +
                     (spec.positional == 1 ? "" : "s") + " (" + spec.usage + "), got " +
                     std::to_string(positional_.size()) + see);
}

const std::string& CommandLine::option(const std::string& name) const {
  auto it = options_.find(name);
  if (it == options_.end()) throw UsageError("fxc " + spec_.name + " needs " + name + "; see fxc " + spec_.name + " --help");
  return it->second;
}

std::string CommandLine::option_or(const std::string& name, const std::string& fallback) const {
  auto it = options_.find(name);
  return it == options_.end() ? fallback : it->second;
}

size_t CommandLine::count(const std::string& name, const std::string& fallback) const {
  const std::string v = option_or(name, fallback);
  try {
    size_t used = 0;
    long n = std::stol(v, &used);
    if (used == v.size() && n > 0) return static_cast<size_t>(n);
  } catch (const std::exception&) {
  }
  throw UsageError(name + " takes a positive number, got '" + v + "'");
}

}  // namespace fxc
