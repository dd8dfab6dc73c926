#include <fx/python_function.h>

#include <limits>
#include <string>
#include <unordered_map>

#include "string_map.h"

namespace fx {

const std::vector<PythonFunction>& python_functions() {
  static const std::vector<PythonFunction> table = {
#include "python_functions.inc"
  };
  return table;
}

const PythonFunction* python_function(std::string_view qualified_name) {
  static const std::unordered_map<std::string_view, const PythonFunction*> by_name = [] {
    std::unordered_map<std::string_view, const PythonFunction*> out;
    for (const PythonFunction& f : python_functions()) out.emplace(f.name, &f);
    return out;
  }();
  auto it = by_name.find(qualified_name);
  return it == by_name.end() ? nullptr : it->second;
}

const std::vector<PythonParam>* builtin_params(std::string_view qualified_name) {
  static const auto table = [] {
    auto required = [](const char* name) { return PythonParam{name, false, false, None}; };
    auto optional = [](const char* name, Argument value) {
      return PythonParam{name, false, true, std::move(value)};
    };
    const std::vector<PythonParam> conv{
        required("input"),      required("weight"),      optional("bias", None), optional("stride", 1),
        optional("padding", 0), optional("dilation", 1), optional("groups", 1)};
    std::vector<PythonParam> avg_pool1d{
        required("input"),      required("kernel_size"),      optional("stride", None),
        optional("padding", 0), optional("ceil_mode", false), optional("count_include_pad", true)};
    std::vector<PythonParam> avg_pool = avg_pool1d;
    avg_pool.push_back(optional("divisor_override", None));
    return detail::StringMap<std::vector<PythonParam>>{
        {"torch.nn.functional.linear", {required("input"), required("weight"), optional("bias", None)}},
        {"torch.nn.functional.conv1d", conv},
        {"torch.nn.functional.conv2d", conv},
        {"torch.nn.functional.conv3d", conv},
        {"torch.nn.functional.gelu", {required("input"), PythonParam{"approximate", true, true, "none"}}},
        {"torch.nn.functional.logsigmoid", {required("input")}},
        {"torch.nn.functional.avg_pool1d", avg_pool1d},
        {"torch.nn.functional.avg_pool2d", avg_pool},
        {"torch.nn.functional.avg_pool3d", avg_pool},
        {"torch.nn.functional.adaptive_avg_pool1d", {required("input"), required("output_size")}},
    };
  }();
  auto it = table.find(qualified_name);
  return it == table.end() ? nullptr : &it->second;
}

const std::vector<PythonParam>* parameters_of(std::string_view qualified_name) {
  if (const PythonFunction* f = python_function(qualified_name)) return f->supported ? &f->params : nullptr;
  return builtin_params(qualified_name);
}

}  // namespace fx
