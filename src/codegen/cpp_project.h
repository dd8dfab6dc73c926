#pragma once
// export_cpp's project with additions, for fx::compile's export, which
// writes its generated kernels beside forward (src/compile/export_project.cpp).
// Internal to fxcpp.

#include <fx/codegen/cpp_export.h>

#include <string>
#include <utility>
#include <vector>

#include "cpp_emit.h"

namespace fx::codegen {

struct ProjectAdditions {
  ExtraCalls calls;                                        // call sites forward.cpp cannot spell alone
  std::vector<std::pair<std::string, std::string>> files;  // more files: name, content
  std::string forward_include;                             // a header of `files` that forward.cpp includes
  std::string cmake;                                       // appended to CMakeLists.txt (more targets)
};

// fx::export_cpp with `add`: checks and translates everything before it
// writes a file.
void write_project(const GraphModule& gm, const std::string& dir, const CppExportOptions& options,
                   const ProjectAdditions& add);

}  // namespace fx::codegen
