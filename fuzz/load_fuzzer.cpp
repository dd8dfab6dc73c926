// libFuzzer target for fx::load (docs/format.md, "Fuzzing"). Every input must
// either load or throw fx::LoadError; anything else that escapes, and every
// crash, leak or undefined behaviour (the target runs under ASan and UBSan),
// is a finding.
//
// A mutated zip archive rarely gets past the archive's own checks, so the
// first byte of an input picks what the rest of it stands for:
//   0  the whole file;
//   1  the graph.json record of a valid file (its tensors kept);
//   2  the data.pkl record of a valid file (its tensor records and graph.json kept).
// seed_corpus.cpp writes the seed inputs for the three.
#include "fuzz_inputs.h"

#include <fx/error.h>
#include <fx/graph_module_file.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <typeinfo>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const fx::fuzz::ValidFile& valid = fx::fuzz::valid_file();
  if (size == 0) return 0;
  std::string file;
  try {
    file = fx::fuzz::file_from_input(valid, std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const fx::fuzz::NotAnInput&) {
    return -1;  // libFuzzer keeps it out of the corpus
  }
  try {
    fx::load_from_bytes(file, "fuzz.fxg");
  } catch (const fx::LoadError&) {
  } catch (const std::exception& e) {
    std::fprintf(stderr, "fx::load let %s escape: %s\n", typeid(e).name(), e.what());
    std::abort();
  }
  return 0;
}
