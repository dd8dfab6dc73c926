// Writes the seed inputs of the fx::load_exported fuzzer into a directory:
// each valid program in each of pt2_inputs.h's three modes, and the files of
// tests/pt2/fuzz_corpus/regressions/ (inputs that once broke the loader) as
// whole files. With --file-of,
// writes the file a fuzzer input stands for.
//
//   fx_pt2_fuzz_seeds OUT_DIR
//   fx_pt2_fuzz_seeds --file-of INPUT OUT_FILE
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "pt2_inputs.h"

namespace {

void write(const std::filesystem::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw std::runtime_error("cannot write " + path.string());
}

}  // namespace

int main(int argc, char** argv) try {
  if (argc != 2 && !(argc == 4 && std::string(argv[1]) == "--file-of")) {
    std::cerr << "usage: fx_pt2_fuzz_seeds OUT_DIR\n       fx_pt2_fuzz_seeds --file-of INPUT OUT_FILE\n";
    return 2;
  }
  if (argc == 4) {
    std::ifstream in(argv[2], std::ios::binary);
    std::stringstream bytes;
    bytes << in.rdbuf();
    write(argv[3], fx::fuzz::pt2_file_from_input(bytes.str()));
    return 0;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  const auto& programs = fx::fuzz::pt2_programs();
  for (size_t p = 0; p < programs.size(); ++p) {
    write(dir / (programs[p].name + "_file"),
          fx::fuzz::pt2_input_for(fx::fuzz::kPt2WholeFile, p,
                                  fx::fuzz::write_records(programs[p].records)));
    for (auto mode : {fx::fuzz::kModelJson, fx::fuzz::kWeightsConfig})
      for (const auto& [name, data] : programs[p].records)
        if (name == fx::fuzz::pt2_record_of(mode))
          write(dir / (programs[p].name + (mode == fx::fuzz::kModelJson ? "_model_json" : "_weights_config")),
                fx::fuzz::pt2_input_for(mode, p, data));
  }
  // Inputs that once broke the loader, kept as files.
  const std::filesystem::path regressions = std::filesystem::path(FXCPP_PT2_FUZZ_CORPUS) / "regressions";
  if (std::filesystem::exists(regressions))
    for (const auto& entry : std::filesystem::directory_iterator(regressions)) {
      std::ifstream in(entry.path(), std::ios::binary);
      std::stringstream bytes;
      bytes << in.rdbuf();
      write(dir / ("regression_" + entry.path().filename().string()),
            fx::fuzz::pt2_input_for(fx::fuzz::kPt2WholeFile, 0, bytes.str()));
    }
  return 0;
} catch (const std::exception& e) {
  std::cerr << "fx_pt2_fuzz_seeds: " << e.what() << "\n";
  return 1;
}
