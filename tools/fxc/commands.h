#pragma once
// The commands of fxc, one file each. Each returns the exit code; errors are
// thrown (fx::Error, UsageError) and reported by main.

#include <fx/graph_module.h>

#include <memory>
#include <string>
#include <vector>

#include "command_line.h"

namespace fxc {

int show(const CommandLine& cl);
int run(const CommandLine& cl);
int bench(const CommandLine& cl);
int compile(const CommandLine& cl);
int opt(const CommandLine& cl);
int draw(const CommandLine& cl);
int export_cpp(const CommandLine& cl);
int export_py(const CommandLine& cl);

// Shared by the commands.
std::unique_ptr<fx::GraphModule> load_module(const std::string& path);
// The tensors of `path` (a torch.save'd list) as the module's inputs; throws
// fx::Error when their number does not fit the module's placeholders.
std::vector<c10::IValue> read_inputs(const fx::GraphModule& gm, const std::string& path);
// The module's outputs: the items of a returned tuple or list, or the one
// value returned.
std::vector<c10::IValue> output_values(const c10::IValue& out);
// True when stdout/stderr is a terminal (colour, progress bars).
bool is_terminal(int fd);

}  // namespace fxc
