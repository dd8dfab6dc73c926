// export_cpp: the files of a standalone LibTorch project around the C++
// forward that cpp_emit.cpp writes.
#include <fx/codegen/cpp_export.h>
#include <fx/error.h>

#include <torch/serialize.h>

#include <filesystem>
#include <fstream>

#include "cpp_emit.h"
#include "cpp_project.h"
#include "write_file.h"

namespace fx {

namespace {

namespace fs = std::filesystem;
using codegen::CppForward;
using codegen::Kind;

bool is_cpp_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  // CppNames leaves a name as it is only when it is no keyword and not taken.
  return codegen::CppNames().make(s) == s;
}

std::string signature_params(const CppForward& f) {
  std::string out;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const auto& [name, kind] = f.params[i];
    out += (i ? ", " : "") + (kind == Kind::tensor ? "const at::Tensor& " : codegen::cpp_type(kind) + " ") +
           name;
  }
  return out;
}

std::string model_h(const CppForward& f, const std::string& cls) {
  std::string out =
      "#pragma once\n"
      "// " +
      cls +
      ": a GraphModule exported by fxcpp (export_cpp) as plain LibTorch code.\n"
      "\n"
      "#include <ATen/ATen.h>\n"
      "\n"
      "#include <string>\n"
      "\n"
      "class " +
      cls +
      " {\n"
      " public:\n"
      "  // Reads every parameter and buffer from `weights_path` (weights.pt: a\n"
      "  // dict name -> tensor, as torch.save / torch::pickle_save write it).\n"
      "  explicit " +
      cls +
      "(const std::string& weights_path);\n"
      "\n"
      "  " +
      f.return_type + " forward(" + signature_params(f) +
      ") const;\n"
      "\n"
      "  // The parameters and buffers forward uses, by their PyTorch names.\n";
  for (const auto& w : f.weights) out += "  at::Tensor " + w.member + ";  // " + w.path + "\n";
  return out + "};\n";
}

std::string model_cpp(const CppForward& f, const std::string& cls) {
  std::string out =
      "// " + cls +
      "'s constructor: the weights, from the file export_cpp wrote.\n"
      "#include \"model.h\"\n"
      "\n"
      "#include <torch/csrc/jit/serialization/pickle.h>\n"
      "\n"
      "#include <fstream>\n"
      "#include <iterator>\n"
      "#include <stdexcept>\n"
      "\n" +
      cls + "::" + cls +
      "(const std::string& weights_path) {\n"
      "  std::ifstream file(weights_path, std::ios::binary);\n"
      "  if (!file) throw std::runtime_error(\"cannot read \" + weights_path);\n"
      "  std::vector<char> bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());\n"
      "  c10::impl::GenericDict weights = torch::jit::pickle_load(bytes).toGenericDict();\n"
      "  auto get = [&](const char* name) {\n"
      "    auto it = weights.find(name);\n"
      "    if (it == weights.end()) throw std::runtime_error(weights_path + \" has no tensor '\" + name + "
      "\"'\");\n"
      "    return it->value().toTensor();\n"
      "  };\n";
  for (const auto& w : f.weights) out += "  " + w.member + " = get(" + codegen::cpp_string(w.path) + ");\n";
  return out + "}\n";
}

std::string forward_cpp(const CppForward& f, const std::string& cls, const std::string& include) {
  std::string out = "// " + cls +
                    "::forward, exported by fxcpp from the graph: one statement per\n"
                    "// node, each variable named after its node.\n"
                    "#include \"model.h\"\n";
  if (!include.empty()) out += "#include \"" + include + "\"\n";
  out +=
      "\n"
      "#include <ATen/TensorIndexing.h>\n";
  if (f.body.find("torch::nn::functional::") != std::string::npos)
    out += "#include <torch/nn/functional/activation.h>\n";
  out +=
      "\n"
      "#include <cmath>\n"
      "#include <limits>\n"
      "#include <tuple>\n"
      "#include <type_traits>\n"
      "#include <vector>\n"
      "\n"
      "namespace {\n"
      "\n"
      "// Python's // and % on numbers: they round toward negative infinity.\n"
      "template <class A, class B>\n"
      "[[maybe_unused]] auto py_floordiv(A a, B b) {\n"
      "  if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {\n"
      "    int64_t q = a / b;\n"
      "    return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;\n"
      "  } else {\n"
      "    return std::floor(static_cast<double>(a) / static_cast<double>(b));\n"
      "  }\n"
      "}\n"
      "template <class A, class B>\n"
      "[[maybe_unused]] auto py_mod(A a, B b) {\n"
      "  if constexpr (std::is_integral_v<A> && std::is_integral_v<B>) {\n"
      "    int64_t r = a % b;\n"
      "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
      "  } else {\n"
      "    double r = std::fmod(static_cast<double>(a), static_cast<double>(b));\n"
      "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n"
      "  }\n"
      "}\n"
      "// Python's v[start:stop].\n"
      "template <class T>\n"
      "[[maybe_unused]] std::vector<T> py_slice(const std::vector<T>& v, c10::optional<int64_t> start,\n"
      "                                         c10::optional<int64_t> stop) {\n"
      "  const auto n = static_cast<int64_t>(v.size());\n"
      "  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(i + n, 0) : std::min(i, n); };\n"
      "  int64_t b = start ? clamp(*start) : 0, e = stop ? clamp(*stop) : n;\n"
      "  return b < e ? std::vector<T>(v.begin() + b, v.begin() + e) : std::vector<T>();\n"
      "}\n"
      "\n"
      "}  // namespace\n"
      "\n" +
      f.return_type + " " + cls + "::forward(" + signature_params(f) +
      ") const {\n"
      "  [[maybe_unused]] const " +
      cls + "& self = *this;\n" + f.body + "}\n";
  return out;
}

std::string main_cpp(const CppForward& f, const std::string& cls) {
  std::string args;
  for (size_t i = 0; i < f.params.size(); ++i) {
    const char* to = "toTensor()";
    switch (f.params[i].second) {
      case Kind::integer:
        to = "toInt()";
        break;
      case Kind::real:
        to = "toDouble()";
        break;
      case Kind::boolean:
        to = "toBool()";
        break;
      default:
        break;
    }
    args += std::string(i ? ", " : "") + "inputs[" + std::to_string(i) + "]." + to;
  }
  return "// Runs " + cls +
         " on a saved input:\n"
         "//   fx_model <weights.pt> <input.pt> <output.pt>\n"
         "// input.pt: a tensor, or a tuple/list with one value per input of forward\n"
         "// (torch.save in Python, torch::pickle_save in C++). The output is written\n"
         "// the same way.\n"
         "#include \"model.h\"\n"
         "\n"
         "#include <torch/csrc/jit/serialization/pickle.h>\n"
         "#include <ATen/core/grad_mode.h>\n"
         "\n"
         "#include <fstream>\n"
         "#include <iostream>\n"
         "#include <iterator>\n"
         "#include <stdexcept>\n"
         "\n"
         "int main(int argc, char** argv) {\n"
         "  if (argc != 4) {\n"
         "    std::cerr << \"usage: \" << argv[0] << \" <weights.pt> <input.pt> <output.pt>\\n\";\n"
         "    return 2;\n"
         "  }\n"
         "  try {\n"
         "    " +
         cls +
         " model(argv[1]);\n"
         "    std::ifstream in(argv[2], std::ios::binary);\n"
         "    if (!in) throw std::runtime_error(std::string(\"cannot read \") + argv[2]);\n"
         "    std::vector<char> bytes((std::istreambuf_iterator<char>(in)), "
         "std::istreambuf_iterator<char>());\n"
         "    c10::IValue input = torch::jit::pickle_load(bytes);\n"
         "    std::vector<c10::IValue> inputs;\n"
         "    if (input.isTuple())\n"
         "      inputs = input.toTupleRef().elements().vec();\n"
         "    else if (input.isList())\n"
         "      inputs = input.toList().vec();\n"
         "    else\n"
         "      inputs = {input};\n"
         "    if (inputs.size() != " +
         std::to_string(f.params.size()) +
         ")\n"
         "      throw std::runtime_error(\"forward takes " +
         std::to_string(f.params.size()) +
         " input(s), \" + std::to_string(inputs.size()) + \" given\");\n"
         "    at::NoGradGuard no_grad;\n"
         "    c10::IValue output = model.forward(" +
         args +
         ");\n"
         "    std::vector<char> out = torch::jit::pickle_save(output);\n"
         "    std::ofstream file(argv[3], std::ios::binary);\n"
         "    file.write(out.data(), static_cast<std::streamsize>(out.size()));\n"
         "    if (!file) throw std::runtime_error(std::string(\"cannot write \") + argv[3]);\n"
         "  } catch (const std::exception& e) {\n"
         "    std::cerr << e.what() << \"\\n\";\n"
         "    return 1;\n"
         "  }\n"
         "  return 0;\n"
         "}\n";
}

std::string cmake_lists(const std::string& cls, const codegen::ProjectAdditions& add) {
  return "# " + cls +
         ", exported by fxcpp (export_cpp): builds against an installed LibTorch.\n"
         "cmake_minimum_required(VERSION 3.18)\n"
         "project(fx_export_" +
         cls +
         " LANGUAGES CXX)\n"
         "\n"
         "find_package(Torch REQUIRED)\n"
         "\n"
         "add_executable(fx_model main.cpp model.cpp forward.cpp)\n"
         "target_link_libraries(fx_model PRIVATE torch)\n"
         "target_compile_features(fx_model PRIVATE cxx_std_20)\n"  // LibTorch 2.14 needs C++20
         "# The torch wheel keeps its CUDA libraries beside it; the linker must read\n"
         "# those (libtorch_cuda.so needs their NCCL), not the CUDA toolkit's.\n"
         "file(GLOB wheel_cuda_dirs LIST_DIRECTORIES true \"${TORCH_INSTALL_PREFIX}/../nvidia/*/lib\")\n"
         "if(wheel_cuda_dirs)\n"
         "  list(JOIN wheel_cuda_dirs \":\" wheel_cuda_path)\n"
         "  target_link_options(fx_model PRIVATE \"LINKER:-rpath-link,${wheel_cuda_path}\")\n"
         "endif()\n" +
         add.cmake;
}

}  // namespace

namespace codegen {

void write_project(const GraphModule& gm, const std::string& dir, const CppExportOptions& options,
                   const ProjectAdditions& add) {
  const std::string& cls = options.class_name;
  if (!is_cpp_identifier(cls))
    throw Error("export_cpp: class_name '" + cls +
                "' is not a C++ identifier (or is a keyword); pick a name like 'FxModule'");
  // Translate first: an unsupported node writes nothing.
  CppForward f = codegen::emit_forward(gm, add.calls);
  for (const auto& w : f.weights)
    if (w.member == cls)
      throw Error("export_cpp: class_name '" + cls + "' is also the member for '" + w.path +
                  "'; pick another class_name");

  std::error_code ec;
  fs::create_directory(dir, ec);
  if (ec || !fs::is_directory(dir))
    throw Error("export_cpp: cannot create the folder '" + dir + "'" + (ec ? " (" + ec.message() + ")" : "") +
                "; its parent must exist and be writable");
  c10::Dict<std::string, at::Tensor> weights;
  for (const auto& w : f.weights) weights.insert(w.path, w.tensor.detach());
  std::vector<char> bytes = torch::pickle_save(weights);
  detail::write_file(fs::path(dir) / "weights.pt", std::string(bytes.begin(), bytes.end()), "export_cpp");
  detail::write_file(fs::path(dir) / "model.h", model_h(f, cls), "export_cpp");
  detail::write_file(fs::path(dir) / "model.cpp", model_cpp(f, cls), "export_cpp");
  detail::write_file(fs::path(dir) / "forward.cpp", forward_cpp(f, cls, add.forward_include), "export_cpp");
  detail::write_file(fs::path(dir) / "main.cpp", main_cpp(f, cls), "export_cpp");
  detail::write_file(fs::path(dir) / "CMakeLists.txt", cmake_lists(cls, add), "export_cpp");
  for (const auto& [name, text] : add.files) detail::write_file(fs::path(dir) / name, text, "export_cpp");
}

}  // namespace codegen

void export_cpp(const GraphModule& gm, const std::string& dir, const CppExportOptions& options) {
  codegen::write_project(gm, dir, options, {});
}

}  // namespace fx
