#pragma once
// fxc's argument parsing: positional arguments, `--name value` options and
// `--flag`s, each command declaring which it takes.

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

namespace fxc {

// Bad usage: printed with a pointer to --help, exit code 2.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CommandSpec {
  std::string name;
  std::string usage;  // the synopsis line after "fxc "
  std::string help;   // what --help prints after the synopsis
  size_t positional;  // how many positional arguments it takes
  std::set<std::string> options;  // take a value: "--output", "-o"
  std::set<std::string> flags;
};

class CommandLine {
 public:
  CommandLine(const CommandSpec& spec, const std::vector<std::string>& args);
  const std::string& positional(size_t i) const { return positional_.at(i); }
  bool has(const std::string& name) const { return options_.count(name) || flags_.count(name); }
  // The option's value; throws UsageError naming it when it is required and absent.
  const std::string& option(const std::string& name) const;
  std::string option_or(const std::string& name, const std::string& fallback) const;
  // The option's value as a positive number (`fallback` when absent);
  // throws UsageError naming it otherwise.
  size_t count(const std::string& name, const std::string& fallback) const;

 private:
  const CommandSpec& spec_;
  std::vector<std::string> positional_;
  std::map<std::string, std::string> options_;
  std::set<std::string> flags_;
};

}  // namespace fxc
