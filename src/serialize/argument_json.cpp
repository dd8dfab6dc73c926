// fx::Argument <-> JSON (docs/format.md, "Arguments").
#include "argument_json.h"

#include <fx/error.h>
#include <fx/node.h>

#include <c10/core/Layout.h>

#include <cmath>
#include <limits>
#include <unordered_map>

#include "../ir/repr.h"

namespace fx::detail {

namespace {

// One-key objects tag the kinds JSON lacks.
Json tagged(const char* tag, Json value) {
  Json j = Json::object();
  j[tag] = std::move(value);
  return j;
}

Json items_to_json(const std::vector<Argument>& items, const std::string& where) {
  Json out = Json::array();
  for (size_t i = 0; i < items.size(); ++i)
    out.push_back(argument_to_json(items[i], where + "[" + std::to_string(i) + "]"));
  return out;
}

std::vector<Argument> items_from_json(const Json& j, const std::string& where, const NodeLookup& lookup) {
  if (!j.is_array()) load_error(where, "expected a JSON array, got " + std::string(j.type_name()));
  std::vector<Argument> out;
  out.reserve(j.size());
  for (size_t i = 0; i < j.size(); ++i)
    out.push_back(argument_from_json(j[i], where + "[" + std::to_string(i) + "]", lookup));
  return out;
}

const std::string& string_in(const Json& j, const std::string& where) {
  if (!j.is_string()) load_error(where, "expected a string, got " + std::string(j.type_name()));
  return j.get_ref<const std::string&>();
}

}  // namespace

void load_error(const std::string& where, const std::string& what) { throw LoadError(where + ": " + what); }

c10::ScalarType dtype_from_name(const std::string& name, const std::string& where) {
  static const std::unordered_map<std::string, c10::ScalarType> by_name = [] {
    std::unordered_map<std::string, c10::ScalarType> m;
    for (int i = 0; i < static_cast<int>(c10::ScalarType::NumOptions); ++i) {
      auto t = static_cast<c10::ScalarType>(i);
      try {
        m.emplace(repr_dtype(t), t);
      } catch (const Error&) {  // a dtype Python has no name for
      }
    }
    return m;
  }();
  if (auto it = by_name.find(name); it != by_name.end()) return it->second;
  load_error(where, "unknown dtype '" + name + "' (expected a name such as torch.float32)");
}

c10::MemoryFormat memory_format_from_name(const std::string& name, const std::string& where) {
  for (auto m : {c10::MemoryFormat::Contiguous, c10::MemoryFormat::Preserve, c10::MemoryFormat::ChannelsLast,
                 c10::MemoryFormat::ChannelsLast3d})
    if (repr_memory_format(m) == name) return m;
  load_error(where, "unknown memory format '" + name + "'");
}

Json argument_to_json(const Argument& a, const std::string& where) {
  return std::visit(
      [&](const auto& v) -> Json {
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, NoneType>) {
          return nullptr;
        } else if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, int64_t> ||
                             std::is_same_v<T, std::string>) {
          return v;
        } else if constexpr (std::is_same_v<T, double>) {
          if (std::isfinite(v)) return v;
          return tagged("float", std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
        } else if constexpr (std::is_same_v<T, Node*>) {
          return tagged("node", v->name());
        } else if constexpr (std::is_same_v<T, Tuple>) {
          return tagged("tuple", items_to_json(v.items, where));
        } else if constexpr (std::is_same_v<T, List>) {
          return items_to_json(v.items, where);
        } else if constexpr (std::is_same_v<T, Dict>) {
          Json d = Json::object();
          for (const auto& [k, x] : v.items) d[k] = argument_to_json(x, where + "[" + repr_string(k) + "]");
          return tagged("dict", std::move(d));
        } else if constexpr (std::is_same_v<T, Slice>) {
          return tagged("slice", items_to_json(v.parts, where));
        } else if constexpr (std::is_same_v<T, EllipsisType>) {
          return tagged("ellipsis", nullptr);
        } else if constexpr (std::is_same_v<T, c10::ScalarType>) {
          return tagged("dtype", repr_dtype(v));
        } else if constexpr (std::is_same_v<T, c10::Device>) {
          return tagged("device", v.str());
        } else if constexpr (std::is_same_v<T, c10::Layout>) {
          return tagged("layout", repr_layout(v));
        } else if constexpr (std::is_same_v<T, c10::MemoryFormat>) {
          return tagged("memory_format", repr_memory_format(v));
        } else {
          static_assert(std::is_same_v<T, Opaque>);
          throw Error(where + ": the constant " + v.repr +
                      " has no representation in a GraphModule file (only None, numbers, strings, "
                      "containers, nodes, slices, dtypes, devices, layouts and memory formats do)");
        }
      },
      a.storage());
}

Argument argument_from_json(const Json& j, const std::string& where, const NodeLookup& lookup) {
  switch (j.type()) {
    case Json::value_t::null:
      return None;
    case Json::value_t::boolean:
      return j.get<bool>();
    case Json::value_t::number_integer:
      return j.get<int64_t>();
    case Json::value_t::number_unsigned: {
      uint64_t u = j.get<uint64_t>();
      if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        load_error(where, "the integer " + std::to_string(u) + " does not fit in 64 bits");
      return static_cast<int64_t>(u);
    }
    case Json::value_t::number_float:
      return j.get<double>();
    case Json::value_t::string:
      return j.get<std::string>();
    case Json::value_t::array:
      return List{items_from_json(j, where, lookup)};
    case Json::value_t::object:
      break;
    default:
      load_error(where, "a " + std::string(j.type_name()) + " is not an argument");
  }
  if (j.size() != 1)
    load_error(where,
               "an object argument has exactly one key (its kind: tuple, dict, node, ...), this one has " +
                   std::to_string(j.size()));
  const std::string& tag = j.begin().key();
  const Json& v = j.begin().value();
  if (tag == "tuple") return Tuple{items_from_json(v, where, lookup)};
  if (tag == "node") return lookup(string_in(v, where + ".node"), where);
  if (tag == "dict") {
    if (!v.is_object()) load_error(where, "\"dict\" holds a JSON object, got " + std::string(v.type_name()));
    Dict d;
    for (auto it = v.begin(); it != v.end(); ++it)
      d.items.emplace_back(it.key(),
                           argument_from_json(it.value(), where + "[" + repr_string(it.key()) + "]", lookup));
    return d;
  }
  if (tag == "slice") {
    Slice s{items_from_json(v, where, lookup)};
    if (s.parts.size() != 3)
      load_error(where, "a slice has 3 parts (start, stop, step), got " + std::to_string(s.parts.size()));
    return s;
  }
  if (tag == "ellipsis") return Ellipsis;
  if (tag == "float") {
    const std::string& s = string_in(v, where + ".float");
    if (s == "inf") return std::numeric_limits<double>::infinity();
    if (s == "-inf") return -std::numeric_limits<double>::infinity();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    load_error(where, "\"float\" is one of \"inf\", \"-inf\", \"nan\", got \"" + s + "\"");
  }
  if (tag == "dtype") return dtype_from_name(string_in(v, where + ".dtype"), where);
  if (tag == "memory_format") return memory_format_from_name(string_in(v, where + ".memory_format"), where);
  if (tag == "layout") {
    const std::string& s = string_in(v, where + ".layout");
    for (auto l : {c10::kStrided, c10::kSparse, c10::kSparseCsr, c10::kSparseCsc, c10::kSparseBsr,
                   c10::kSparseBsc, c10::kMkldnn})
      if (repr_layout(l) == s) return l;
    load_error(where, "unknown layout '" + s + "'");
  }
  if (tag == "device") {
    const std::string& s = string_in(v, where + ".device");
    try {
      return c10::Device(s);
    } catch (const c10::Error&) {
      load_error(where, "'" + s + "' is not a device (expected a name such as cpu or cuda:0)");
    }
  }
  load_error(
      where,
      "unknown argument kind \"" + tag +
          "\" (expected tuple, dict, node, slice, ellipsis, float, dtype, device, layout or memory_format)");
}

}  // namespace fx::detail
