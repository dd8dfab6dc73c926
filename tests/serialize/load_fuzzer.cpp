// libFuzzer target on fx::load_from_bytes: any input either loads or throws
// fx::LoadError. Built with clang when FXCPP_FUZZ is on (docs/format.md,
// "Fuzzing"); crashes it finds go to fuzz_corpus/, which
// GraphModuleFileMutations.CorpusOfPastCrashes loads in every test run.
#include <fx/graph_module_file.h>

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    fx::load_from_bytes(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.fxg");
  } catch (const fx::LoadError&) {
  }
  return 0;
}
