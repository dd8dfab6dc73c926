// Writes the seed inputs of the fx::load fuzzer into a directory: the valid
// file in each of load_fuzzer.cpp's three modes, and the given files (those
// of tests/serialize/fuzz_corpus/, which once broke the loader) as
// whole-file inputs. With --file-of, writes the file that a fuzzer input
// stands for, to be kept in tests/serialize/fuzz_corpus/.
//
//   fx_load_fuzz_seeds OUT_DIR [FILE...]
//   fx_load_fuzz_seeds --file-of INPUT OUT_FILE
#include "fuzz_inputs.h"

#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

namespace {

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc < 2 || (std::string(argv[1]) == "--file-of" && argc != 4)) {
    std::cerr << "usage: fx_load_fuzz_seeds OUT_DIR [FILE...]\n"
                 "       fx_load_fuzz_seeds --file-of INPUT OUT_FILE\n";
    return 2;
  }
  if (std::string(argv[1]) == "--file-of") {
    write(argv[3], fx::fuzz::file_from_input(fx::fuzz::valid_file(), read(argv[2])));
    return 0;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const auto& valid = fx::fuzz::valid_file();
  write(dir / "valid_file", fx::fuzz::input_for(fx::fuzz::kWholeFile, valid.bytes));
  for (const auto& [name, data] : valid.records) {
    if (name == "graph.json")
      write(dir / "valid_graph_json", fx::fuzz::input_for(fx::fuzz::kGraphJson, data));
    if (name == "data.pkl") write(dir / "valid_data_pkl", fx::fuzz::input_for(fx::fuzz::kDataPkl, data));
  }
  for (int i = 2; i < argc; ++i)
    write(dir / ("regression_" + std::filesystem::path(argv[i]).filename().string()),
          fx::fuzz::input_for(fx::fuzz::kWholeFile, read(argv[i])));
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fx_load_fuzz_seeds: " << e.what() << "\n";
  return 1;
}
