// fx::CompiledModule::export_cpp: a compiled program as a standalone
// LibTorch project, source and not a binary, which builds on any machine with
// LibTorch (and for another processor, with FX_KERNEL_ISA=DEFAULT).
//
// export_cpp (src/codegen) writes forward: the ATen calls and the weights.
// This file adds the kernels: kernels.cpp is the generated source as it is
// built for fx::compile (kernels_<branch>.cpp each cond or while_loop
// branch's), and kernels.h has one inline function per kernel, which forward
// calls in place of the kernel node:
//
//   at::Tensor cpp_fused_add_gelu_0 = fx_kernels::cpp_fused_add_gelu_0(mm_default, self._0_bias);
//
// Each function checks that its inputs have the sizes the kernel was built
// for (reading a copy with the strides it was built for of one that is laid
// out otherwise), allocates the outputs as the kernel node does (dense in the
// kernel's loop order) and calls the kernel with its
// sizes and strides, `dims`, as constants.
#include "phases.h"

#include "../codegen/cpp_project.h"

#include <fx/error.h>

#include <unordered_map>

namespace fx::compile_detail {

namespace {

std::string int_list(const std::vector<int64_t>& v) {
  std::string s = "{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

// at::kFloat, at::kBool, ...
std::string dtype_constant(c10::ScalarType t) { return std::string("at::k") + c10::toString(t); }

// The data of `tensor`, of type `dtype`, as the kernel's `type`: a bool or
// half-precision tensor's goes as an S pointer, which the kernel reads and
// writes as its type (masks, converted values).
std::string data(const std::string& tensor, c10::ScalarType dtype, const std::string& type,
                 const char* constness) {
  if (dtype == c10::kBool || half_type(dtype))
    return "reinterpret_cast<" + std::string(constness) + type + "*>(" + tensor + ".data_ptr<" +
           (dtype == c10::kBool   ? "bool"
            : dtype == c10::kHalf ? "at::Half"
                                  : "at::BFloat16") +
           ">())";
  return tensor + ".data_ptr<" + type + ">()";
}

std::string kernel_function(const KernelSite& k) {
  const std::string type = element_type(k.dtype);
  std::string params, checks, pointers;
  for (size_t i = 0; i < k.input_sizes.size(); ++i) {
    const std::string in = "in" + std::to_string(i);
    params += (i ? ", " : "") + ("at::Tensor " + in);
    checks += "  input(" + in + ", \"" + k.name + "\", " + std::to_string(i) + ", " +
              dtype_constant(k.input_dtypes[i]) + ", " + int_list(k.input_sizes[i]) + ", " +
              int_list(k.input_strides[i]) + ");\n";
    pointers += (i ? ", " : "") + data(in, k.input_dtypes[i], type, "const ");
  }
  const bool one = k.output_sizes.size() == 1;
  std::string out = "inline " + std::string(one ? "at::Tensor " : "std::vector<at::Tensor> ") + k.name + "(" +
                    params + ") {\n" + checks + "  const " + type + "* in[] = {" + pointers + "};\n";
  std::string outputs, out_pointers;
  for (size_t o = 0; o < k.output_sizes.size(); ++o) {
    const std::string name = "out" + std::to_string(o);
    out += "  at::Tensor " + name + " = at::empty_strided(std::vector<int64_t>" +
           int_list(k.output_sizes[o]) + ", std::vector<int64_t>" + int_list(k.output_strides[o]) + ", " +
           dtype_constant(k.output_dtypes[o]) + ");\n";
    outputs += (o ? ", " : "") + name;
    out_pointers += (o ? ", " : "") + data(name, k.output_dtypes[o], type, "");
  }
  out += "  " + type + "* out[] = {" + out_pointers + "};\n";
  out += "  static const int64_t dims[] = " + int_list(k.dims) + ";\n";
  out += "  ::" + k.name + "(in, out, dims);\n";
  out += one ? "  return out0;\n" : "  return {" + outputs + "};\n";
  return out + "}\n";
}

std::string kernels_h(const std::vector<KernelSite>& sites) {
  std::string out =
      "#pragma once\n"
      "// The kernels fx::compile generated (kernels.cpp), and one function per\n"
      "// kernel that forward calls with tensors.\n"
      "#include <ATen/ATen.h>\n"
      "\n"
      "#include <cstdint>\n"
      "#include <initializer_list>\n"
      "#include <stdexcept>\n"
      "#include <string>\n"
      "#include <vector>\n"
      "\n"
      "extern \"C\" {\n";
  for (const KernelSite& k : sites) {
    const std::string type = element_type(k.dtype);
    out += "void " + k.name + "(const " + type + "* const* in, " + type +
           "* const* out, const int64_t* dims);\n";
  }
  out +=
      "}\n"
      "\n"
      "namespace fx_kernels {\n"
      "\n"
      "// A kernel reads CPU tensors of its type and of the sizes it was built\n"
      "// for, with these strides (those of dimensions of size 1 aside, which it\n"
      "// does not read). An input laid out otherwise is read from a copy that has them.\n"
      "inline void input(at::Tensor& t, const char* kernel, int i, at::ScalarType dtype,\n"
      "                  std::initializer_list<int64_t> sizes, std::initializer_list<int64_t> strides) {\n"
      "  auto fits = [&](const at::Tensor& x) {\n"
      "    size_t d = 0;\n"
      "    for (int64_t s : strides) {\n"
      "      if (x.size(static_cast<int64_t>(d)) != 1 && x.stride(static_cast<int64_t>(d)) != s) return "
      "false;\n"
      "      ++d;\n"
      "    }\n"
      "    return true;\n"
      "  };\n"
      "  const std::string where = std::string(kernel) + \": input \" + std::to_string(i);\n"
      "  if (t.scalar_type() != dtype || !t.device().is_cpu())\n"
      "    throw std::runtime_error(where + \" is not a torch.\" + "
      "std::string(c10::getDtypeNames(dtype).first) +\n"
      "                             \" CPU tensor\");\n"
      "  if (t.sizes() != c10::IntArrayRef(sizes))\n"
      "    throw std::runtime_error(where + \" has sizes \" + c10::str(t.sizes()) +\n"
      "                             \"; the program was compiled for \" + "
      "c10::str(c10::IntArrayRef(sizes)));\n"
      "  if (!fits(t)) t = at::empty_strided(sizes, strides, t.options()).copy_(t);\n"
      "}\n";
  for (const KernelSite& k : sites) {
    // Not out += "\n" + kernel_function(k): g++ 12 -O3 misreads that as an overlapping memcpy
    // (-Wrestrict, GCC bug 105329).
    out += '\n';
    out += kernel_function(k);
  }
  return out + "\n}  // namespace fx_kernels\n";
}

// The kernels' part of CMakeLists.txt: FX_KERNEL_ISA picks one of
// instruction_sets(), `isa` by default.
std::string kernels_cmake(const std::string& isa, const std::string& files) {
  std::string names, choose;
  const auto& sets = instruction_sets();
  for (size_t i = 0; i < sets.size(); ++i) {
    names += std::string(i == 0 ? "" : i + 1 == sets.size() ? " or " : ", ") + sets[i].name;
    choose += std::string(i == 0 ? "if" : "elseif") + "(FX_KERNEL_ISA STREQUAL \"" + sets[i].name + "\")\n";
    auto list = [](const char* var, const std::vector<const char*>& items) {
      if (items.empty()) return std::string();
      std::string line = std::string("  set(") + var;
      for (const char* item : items) line += std::string(" ") + item;
      return line + ")\n";
    };
    choose += list("fx_isa_flags", sets[i].flags) + list("fx_isa_definitions", sets[i].definitions);
  }
  return "\n"
         "# The fused kernels (kernels.cpp), built for an instruction set as ATen\n"
         "# builds its own (CPU_CAPABILITY). fxcpp chose the exporting processor's;\n"
         "# DEFAULT builds portable code for any processor.\n"
         "set(FX_KERNEL_ISA \"" +
         isa + "\" CACHE STRING \"the kernels' instruction set: " + names + "\")\n" + choose +
         "else()\n"
         "  message(FATAL_ERROR \"FX_KERNEL_ISA is " +
         names +
         ", not '${FX_KERNEL_ISA}'\")\n"
         "endif()\n"
         "find_package(OpenMP REQUIRED)\n"
         "add_library(fx_kernels OBJECT" +
         files +
         ")\n"
         "target_include_directories(fx_kernels PRIVATE ${TORCH_INCLUDE_DIRS})\n"
         "target_compile_features(fx_kernels PRIVATE cxx_std_17)\n"
         "target_compile_definitions(fx_kernels PRIVATE ${fx_isa_definitions})\n"
         "target_compile_options(fx_kernels PRIVATE -O3 ${fx_isa_flags})\n"
         "target_link_libraries(fx_kernels PRIVATE OpenMP::OpenMP_CXX)\n"
         "target_sources(fx_model PRIVATE $<TARGET_OBJECTS:fx_kernels>)\n"
         "target_link_libraries(fx_model PRIVATE OpenMP::OpenMP_CXX)\n";
}

}  // namespace

void export_project(const GraphModule& compiled, const std::vector<KernelSource>& sources,
                    const std::string& dir, const CppExportOptions& options) {
  // Each branch's library names its kernels as the top graph's may
  // (cpp_fused_add_0): in the project, a branch's are prefixed with its
  // label, by a #define before its source, so that its text stays as built.
  std::vector<KernelSite> sites;
  std::vector<std::pair<std::string, std::string>> files;
  std::string names;
  for (const KernelSource& s : sources) {
    if (s.sites.empty()) continue;
    std::string file = "kernels.cpp", renames;
    if (!s.label.empty()) {
      std::string prefix;
      for (char c : s.label) prefix += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
      file = "kernels_" + prefix + ".cpp";
      renames = "// " + s.label + "'s kernels, named apart from the other graphs'.\n";
      for (KernelSite k : s.sites) {
        renames += "#define " + k.name + " " + prefix + "_" + k.name + "\n";
        k.name = prefix + "_" + k.name;
        sites.push_back(std::move(k));
      }
    } else {
      sites.insert(sites.end(), s.sites.begin(), s.sites.end());
    }
    files.emplace_back(file, renames + s.source);
    names += " " + file;
  }
  std::unordered_map<std::string, const KernelSite*> by_target;
  for (const KernelSite& k : sites) by_target.emplace(k.target, &k);
  codegen::ProjectAdditions add;
  add.calls = [&](codegen::Emitter& e, const Node* n) -> std::optional<codegen::CppValue> {
    auto it = by_target.find(n->target().str());
    if (it == by_target.end()) return std::nullopt;
    const KernelSite& k = *it->second;
    // Its arguments: the kernel's inputs, then the shape it loops over.
    const Args& args = n->args();
    if (args.size() != k.input_sizes.size() + 1)
      codegen::Emitter::fail(n, "passes " + std::to_string(args.size()) + " arguments to a kernel of " +
                                    std::to_string(k.input_sizes.size()) + " inputs");
    std::string call = "fx_kernels::" + k.name + "(";
    for (size_t i = 0; i + 1 < args.size(); ++i) {
      codegen::CppValue v = e.value(args[i]);
      if (v.kind != codegen::Kind::tensor)
        codegen::Emitter::fail(n, "passes a kernel something other than a tensor");
      call += (i ? ", " : "") + v.expr;
    }
    call += ")";
    if (k.output_sizes.size() == 1) return codegen::CppValue{call, codegen::Kind::tensor, {}};
    return codegen::CppValue{call, codegen::Kind::tensor_list, {}};
  };
  if (!sites.empty()) {
    add.files = std::move(files);
    add.files.emplace_back("kernels.h", kernels_h(sites));
    add.forward_include = "kernels.h";
    add.cmake = kernels_cmake(host_isa(), names);
  }
  codegen::write_project(compiled, dir, options, add);
}

}  // namespace fx::compile_detail
