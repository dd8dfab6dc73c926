#pragma once
// Writing one generated file of an exported folder.

#include <fx/error.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace fx::detail {

// `who` names the exporter in the error ("to_folder", "export_cpp").
inline void write_file(const std::filesystem::path& path, const std::string& text, const std::string& who) {
  std::ofstream f(path, std::ios::binary);
  if (f) f.write(text.data(), static_cast<std::streamsize>(text.size()));
  if (!f) throw Error(who + ": cannot write " + path.string() + " (is the folder writable?)");
}

}  // namespace fx::detail
