#include "pt2_inputs.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace fx::fuzz {

const std::vector<Pt2Program>& pt2_programs() {
  static const std::vector<Pt2Program> programs = [] {
    std::vector<Pt2Program> out;
    for (const char* name : {"cond", "dynamic", "mutations"}) {
      const std::string path = std::string(FXCPP_PT2_FUZZ_CORPUS) + "/" + name + ".pt2";
      std::ifstream in(path, std::ios::binary);
      if (!in) throw std::runtime_error("cannot read " + path);
      std::stringstream bytes;
      bytes << in.rdbuf();
      out.push_back({name, read_records(bytes.str())});
    }
    return out;
  }();
  return programs;
}

const char* pt2_record_of(Pt2Mode mode) {
  return mode == kModelJson ? "models/model.json" : "data/weights/model_weights_config.json";
}

std::string pt2_file_from_input(std::string_view input) {
  if (input.empty()) throw NotAnInput("empty input");
  const auto b = static_cast<unsigned char>(input[0]);
  const auto mode = static_cast<Pt2Mode>(b % 3);
  const auto& programs = pt2_programs();
  const Pt2Program& program = programs[(b / 3) % programs.size()];
  std::string content(input.substr(1));
  if (mode == kPt2WholeFile) return content;
  Records records = program.records;
  for (auto& [name, data] : records)
    if (name == pt2_record_of(mode)) data = content;
  return write_records(records);
}

std::string pt2_input_for(Pt2Mode mode, size_t program, std::string_view content) {
  std::string input(1, static_cast<char>(program * 3 + mode));
  input += content;
  return input;
}

}  // namespace fx::fuzz
