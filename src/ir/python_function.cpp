#include <fx/python_function.h>

#include <limits>
#include <unordered_map>

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

}  // namespace fx
