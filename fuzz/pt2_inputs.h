#pragma once
// The inputs of the fx::load_exported fuzzer (pt2_fuzzer.cpp).
//
// The valid programs are .pt2 files torch.export.save wrote
// (tests/pt2/fuzz_corpus/: a cond, a dynamic batch, buffer and input
// mutations). A mutated zip rarely gets past the archive's checks, so an
// input's first byte b picks what the rest stands for: mode b % 3 of valid
// program (b / 3) % 3:
//   0  the whole file;
//   1  the program's models/model.json (its weights kept);
//   2  its data/weights/model_weights_config.json.

#include <string>
#include <string_view>
#include <vector>

#include "fuzz_inputs.h"

namespace fx::fuzz {

struct Pt2Program {
  std::string name;
  Records records;
};
// The programs of tests/pt2/fuzz_corpus/, read once.
const std::vector<Pt2Program>& pt2_programs();

enum Pt2Mode : unsigned char { kPt2WholeFile = 0, kModelJson = 1, kWeightsConfig = 2 };
// The file an input stands for; throws NotAnInput for an empty input.
std::string pt2_file_from_input(std::string_view input);
// The input standing for `content` in `mode` of program `program`.
std::string pt2_input_for(Pt2Mode mode, size_t program, std::string_view content);
// The name of the record mode replaces ("models/model.json").
const char* pt2_record_of(Pt2Mode mode);

}  // namespace fx::fuzz
