#pragma once
// The inputs of the fx::load fuzzer (load_fuzzer.cpp): a valid GraphModule
// file split into its records, and the file an input stands for.

#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace fx::fuzz {

// A valid file: a small model that holds every kind of thing a file can
// (leaf modules with constructor arguments, parameters and buffers, a
// container, call_function/call_method/get_attr nodes, kwargs, tuples,
// tensor_meta), as its archive records.
struct ValidFile {
  std::string bytes;
  std::vector<std::pair<std::string, std::string>> records;  // name, content
};
const ValidFile& valid_file();

// An input that stands for no file (empty).
struct NotAnInput : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// The first byte picks the mode (see load_fuzzer.cpp), the rest is the
// content: the whole file, or the record that replaces valid's graph.json
// or data.pkl.
enum Mode : unsigned char { kWholeFile = 0, kGraphJson = 1, kDataPkl = 2 };
std::string file_from_input(const ValidFile& valid, std::string_view input);
std::string input_for(Mode mode, std::string_view content);

// An archive's records (name, content), without the `version` record the
// writer adds; and an archive of records, as PyTorch's archive writer writes one.
using Records = std::vector<std::pair<std::string, std::string>>;
Records read_records(const std::string& bytes);
std::string write_records(const Records& records);

}  // namespace fx::fuzz
