// fxc export-cpp FILE DIR [--class-name N] / fxc export-py FILE DIR [--module-name N]
#include <fx/codegen/cpp_export.h>
#include <fx/codegen/to_folder.h>

#include "commands.h"

namespace fxc {

int export_cpp(const CommandLine& cl) {
  auto gm = load_module(cl.positional(0));
  fx::export_cpp(*gm, cl.positional(1), {.class_name = cl.option_or("--class-name", "FxModule")});
  return 0;
}

int export_py(const CommandLine& cl) {
  auto gm = load_module(cl.positional(0));
  fx::to_folder(*gm, cl.positional(1), cl.option_or("--module-name", "FxModule"));
  return 0;
}

}  // namespace fxc
