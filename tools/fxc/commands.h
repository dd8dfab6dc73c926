#pragma once
// The commands of fxc, one file each. Each returns the exit code; errors are
// thrown (fx::Error, UsageError) and reported by main.

#include <fx/exported_program.h>
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
//
// What fxc reads: a GraphModule file (fx::save, .fxg), or a program
// torch.export.save wrote (.pt2). For a .pt2, `module` is its graph (the
// lifted parameters, buffers and constants are placeholders, as
// torch.export prints it) and run() gives the program its state and writes
// mutations back (ExportedProgram::run_flat).
struct Program {
  std::shared_ptr<fx::GraphModule> module;
  std::shared_ptr<fx::ExportedProgram> exported;  // set for a .pt2
  c10::IValue run(std::vector<c10::IValue> inputs) const;
  // The tensors of `path` (a torch.save'd list) as the inputs run() takes
  // (for a .pt2: the user inputs, flattened); throws fx::Error when their
  // number does not fit.
  std::vector<c10::IValue> read_inputs(const std::string& path) const;
};
Program load_program(const std::string& path);
std::shared_ptr<fx::GraphModule> load_module(const std::string& path);
// The module's outputs: the items of a returned tuple or list, or the one
// value returned.
std::vector<c10::IValue> output_values(const c10::IValue& out);
// True when stdout/stderr is a terminal (colour, progress bars).
bool is_terminal(int fd);

}  // namespace fxc
