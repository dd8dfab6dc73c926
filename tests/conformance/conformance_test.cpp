// fxcpp against torch.fx 2.14, byte for byte.
//
// Every case of cases.json is built here with fxcpp's public Graph API and by
// oracle.py with torch.fx; the graph printout (Graph::to_string), the generated
// code (Graph::python_code("self").src) and, where a case asks for it, the
// print_tabular table must equal what the oracle wrote to expected.json.
// The case DSL is described in docs/conformance.md.
//
// Paths: FXCPP_CONFORMANCE_CASES and FXCPP_CONFORMANCE_EXPECTED, compiled in
// by CMake, overridable by environment variables of the same names.

#include <fx/fx.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace {

// ordered_json: kwargs and dict entries keep their order, as in Python.
using json = nlohmann::ordered_json;

std::string path_of(const char* var, const char* compiled) {
  const char* env = std::getenv(var);
  return env && *env ? env : compiled;
}
std::string cases_path() { return path_of("FXCPP_CONFORMANCE_CASES", FXCPP_CONFORMANCE_CASES); }
std::string expected_path() { return path_of("FXCPP_CONFORMANCE_EXPECTED", FXCPP_CONFORMANCE_EXPECTED); }

std::optional<json> read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  return json::parse(in);
}

const json& cases_file() {
  static const json cases = [] {
    auto j = read_json(cases_path());
    return j ? *j : json::object();
  }();
  return cases;
}

// expected.json, or null when the oracle has not run (or was skipped).
const json& expected_file() {
  static const json expected = [] {
    auto j = read_json(expected_path());
    return j ? *j : json();
  }();
  return expected;
}

const json* find_case(const std::string& name) {
  const json& all = cases_file();
  if (!all.contains("cases")) return nullptr;
  for (const auto& c : all["cases"])
    if (c.at("name") == name) return &c;
  return nullptr;
}

std::vector<std::string> case_names() {
  std::vector<std::string> names;
  const json& all = cases_file();
  if (all.contains("cases"))
    for (const auto& c : all["cases"]) names.push_back(c.at("name").get<std::string>());
  return names;
}

[[noreturn]] void bad_case(const std::string& what) { throw std::invalid_argument("cases.json: " + what); }

// ---- the DSL -------------------------------------------------------------

c10::ScalarType dtype_named(const std::string& s) {
  static const std::map<std::string, c10::ScalarType> dtypes = {{"float32", c10::kFloat},
                                                                {"float", c10::kFloat},
                                                                {"float64", c10::kDouble},
                                                                {"double", c10::kDouble},
                                                                {"float16", c10::kHalf},
                                                                {"half", c10::kHalf},
                                                                {"bfloat16", c10::kBFloat16},
                                                                {"int8", c10::kChar},
                                                                {"uint8", c10::kByte},
                                                                {"int16", c10::kShort},
                                                                {"int32", c10::kInt},
                                                                {"int", c10::kInt},
                                                                {"int64", c10::kLong},
                                                                {"long", c10::kLong},
                                                                {"bool", c10::kBool},
                                                                {"complex32", c10::kComplexHalf},
                                                                {"complex64", c10::kComplexFloat},
                                                                {"complex128", c10::kComplexDouble},
                                                                {"qint8", c10::kQInt8},
                                                                {"quint8", c10::kQUInt8},
                                                                {"qint32", c10::kQInt32}};
  auto it = dtypes.find(s);
  if (it == dtypes.end()) bad_case("unknown dtype '" + s + "'");
  return it->second;
}

c10::Layout layout_named(const std::string& s) {
  if (s == "strided") return c10::kStrided;
  if (s == "sparse_coo") return c10::kSparse;
  if (s == "sparse_csr") return c10::kSparseCsr;
  bad_case("unknown layout '" + s + "'");
}

c10::MemoryFormat memory_format_named(const std::string& s) {
  if (s == "contiguous_format") return c10::MemoryFormat::Contiguous;
  if (s == "preserve_format") return c10::MemoryFormat::Preserve;
  if (s == "channels_last") return c10::MemoryFormat::ChannelsLast;
  if (s == "channels_last_3d") return c10::MemoryFormat::ChannelsLast3d;
  bad_case("unknown memory format '" + s + "'");
}

class Builder {
 public:
  explicit Builder(const json& entries) : entries_(entries), nodes_(entries.size(), nullptr) {}

  fx::Graph& graph() { return g_; }

  void run() {
    std::optional<fx::InsertPoint> insert_point;
    for (size_t i = 0; i < entries_.size(); ++i) {
      const json& e = entries_[i];
      const std::string kind = e.at(0).get<std::string>();
      if (kind == "placeholder" || kind == "get_attr" || kind == "call_function" || kind == "call_method" ||
          kind == "call_module" || kind == "output") {
        nodes_[i] = make_node(i, e);
      } else if (kind == "inserting_before" || kind == "inserting_after" || kind == "insert_at_end") {
        insert_point.reset();  // back to the end of the graph
        // A null node: the beginning (inserting_before) or the end (inserting_after).
        fx::Node* where = kind == "insert_at_end" || e.at(1).is_null() ? nullptr : node_at(e.at(1));
        if (kind == "inserting_before") insert_point.emplace(g_.inserting_before(where));
        if (kind == "inserting_after") insert_point.emplace(g_.inserting_after(where));
      } else if (kind == "erase") {
        g_.erase_node(node_at(e.at(1)));
      } else if (kind == "replace_all_uses_with") {
        fx::Node* old_node = node_at(e.at(1));
        fx::Node* new_node = node_at(e.at(2));
        if (e.size() > 3) {
          if (e.at(3) != "except") bad_case("entry " + std::to_string(i) + ": expected \"except\"");
          std::vector<fx::Node*> skip;
          for (const auto& j : e.at(4)) skip.push_back(node_at(j));
          old_node->replace_all_uses_with(new_node, [&](fx::Node* user) {
            return std::find(skip.begin(), skip.end(), user) == skip.end();
          });
        } else {
          old_node->replace_all_uses_with(new_node);
        }
      } else if (kind == "set_args") {
        node_at(e.at(1))->set_args(args_of(e.at(2)));
      } else if (kind == "set_kwargs") {
        node_at(e.at(1))->set_kwargs(kwargs_of(e.at(2)));
      } else if (kind == "update_arg") {
        node_at(e.at(1))->update_arg(e.at(2).get<size_t>(), arg(e.at(3)));
      } else if (kind == "update_kwarg") {
        node_at(e.at(1))->update_kwarg(e.at(2).get<std::string>(), arg(e.at(3)));
      } else if (kind == "prepend") {
        node_at(e.at(1))->prepend(node_at(e.at(2)));
      } else if (kind == "append") {
        node_at(e.at(1))->append(node_at(e.at(2)));
      } else if (kind == "eliminate_dead_code") {
        g_.eliminate_dead_code();
      } else {
        bad_case("entry " + std::to_string(i) + ": unknown entry kind '" + kind + "'");
      }
    }
  }

 private:
  fx::Node* node_at(const json& index) const {
    size_t i = index.get<size_t>();
    if (i >= nodes_.size() || nodes_[i] == nullptr) bad_case("entry " + std::to_string(i) + " is not a node");
    return nodes_[i];
  }

  fx::Argument arg(const json& v) const {
    if (v.is_null()) return fx::None;
    if (v.is_boolean()) return v.get<bool>();
    if (v.is_number_float()) return v.get<double>();
    if (v.is_number_unsigned()) {
      if (v.get<uint64_t>() > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()))
        bad_case("integer " + v.dump() + " does not fit an int64");
      return static_cast<int64_t>(v.get<uint64_t>());
    }
    if (v.is_number_integer()) return v.get<int64_t>();
    if (v.is_string()) return v.get<std::string>();
    if (v.is_array())
      bad_case("bare JSON list " + v.dump() + ": write {\"tuple\": [...]} or {\"list\": [...]}");
    if (!v.is_object() || v.size() != 1) bad_case("an argument object has exactly one key, got " + v.dump());
    const std::string& kind = v.begin().key();
    const json& x = v.begin().value();
    if (kind == "node") return node_at(x);
    if (kind == "tuple" || kind == "list") {
      std::vector<fx::Argument> items;
      for (const auto& a : x) items.push_back(arg(a));
      if (kind == "tuple") return fx::tuple(std::move(items));
      return fx::list(std::move(items));
    }
    if (kind == "dict") {
      std::vector<std::pair<std::string, fx::Argument>> items;
      for (const auto& kv : x) items.emplace_back(kv.at(0).get<std::string>(), arg(kv.at(1)));
      return fx::dict(std::move(items));
    }
    if (kind == "slice") {
      if (x.size() != 3) bad_case("a slice is [start, stop, step]");
      return fx::slice(arg(x[0]), arg(x[1]), arg(x[2]));
    }
    if (kind == "ellipsis") return fx::Ellipsis;
    if (kind == "dtype") return dtype_named(x.get<std::string>());
    if (kind == "device") return c10::Device(x.get<std::string>());
    if (kind == "layout") return layout_named(x.get<std::string>());
    if (kind == "memory_format") return memory_format_named(x.get<std::string>());
    if (kind == "float") {
      const std::string s = x.get<std::string>();
      if (s == "inf") return std::numeric_limits<double>::infinity();
      if (s == "-inf") return -std::numeric_limits<double>::infinity();
      if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
      bad_case("unknown float word '" + s + "'");
    }
    bad_case("unknown argument kind '" + kind + "'");
  }

  fx::Args args_of(const json& a) const {
    fx::Args out;
    for (const auto& v : a) out.push_back(arg(v));
    return out;
  }
  fx::Kwargs kwargs_of(const json& k) const {
    fx::Kwargs out;
    for (const auto& [key, v] : k.items()) out.emplace_back(key, arg(v));
    return out;
  }

  fx::Node* make_node(size_t i, const json& e) {
    if (e.size() != 5)
      bad_case("entry " + std::to_string(i) + ": a node is [op, target, args, kwargs, options]");
    const std::string op = e[0].get<std::string>();
    const std::string target = e[1].get<std::string>();
    fx::Args args = args_of(e[2]);
    fx::Kwargs kwargs = kwargs_of(e[3]);
    const json& opts = e[4];
    for (const auto& [key, v] : opts.items())
      if (key != "name" && key != "type" && key != "default" && key != "is_wrapped")
        bad_case("entry " + std::to_string(i) + ": unknown option '" + key + "'");
    std::optional<std::string> type;
    if (opts.contains("type")) type = opts["type"].get<std::string>();
    std::optional<fx::Argument> default_value;
    if (opts.contains("default")) default_value = arg(opts["default"]);

    fx::Node* n = nullptr;
    if (opts.contains("name")) {
      if (default_value) args.push_back(*default_value);
      n = g_.create_node(fx::op_from_name(op), fx::Target(target), std::move(args), std::move(kwargs),
                         opts["name"].get<std::string>(), type);
    } else if (op == "placeholder") {
      n = g_.placeholder(target, default_value, type);
    } else if (op == "get_attr") {
      n = g_.get_attr(target, type);
    } else if (op == "call_function") {
      n = g_.call_function(fx::Target(target), std::move(args), std::move(kwargs), type);
    } else if (op == "call_method") {
      n = g_.call_method(target, std::move(args), std::move(kwargs), type);
    } else if (op == "call_module") {
      n = g_.call_module(target, std::move(args), std::move(kwargs), type);
    } else {
      if (target != "output" || args.size() != 1 || !kwargs.empty())
        bad_case("entry " + std::to_string(i) +
                 ": an output is [\"output\", \"output\", [value], {}, options]");
      n = g_.output(args[0], type);
    }
    if (opts.value("is_wrapped", false)) n->meta().set("is_wrapped", true);
    return n;
  }

  const json& entries_;
  fx::Graph g_;
  std::vector<fx::Node*> nodes_;
};

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  size_t start = 0;
  while (true) {
    size_t nl = text.find('\n', start);
    lines.push_back(text.substr(start, nl == std::string::npos ? nl : nl - start));
    if (nl == std::string::npos) return lines;
    start = nl + 1;
  }
}

// A line diff of torch.fx's text (-) and fxcpp's (+), with a line of context
// around each change. Each line shows its number in its own text.
std::string line_diff(const std::string& expected, const std::string& actual) {
  std::vector<std::string> a = lines_of(expected), b = lines_of(actual);
  size_t n = a.size(), m = b.size();
  std::vector<std::vector<uint32_t>> lcs(n + 1, std::vector<uint32_t>(m + 1, 0));
  for (size_t i = n; i-- > 0;)
    for (size_t j = m; j-- > 0;)
      lcs[i][j] = a[i] == b[j] ? lcs[i + 1][j + 1] + 1 : std::max(lcs[i + 1][j], lcs[i][j + 1]);
  struct Line {
    char tag;
    size_t number;  // in torch.fx's text for ' ' and '-', in fxcpp's for '+'
    const std::string* text;
  };
  std::vector<Line> script;
  size_t i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] == b[j]) {
      script.push_back({' ', i + 1, &a[i]});
      ++i, ++j;
    } else if (i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      script.push_back({'-', i + 1, &a[i++]});
    } else {
      script.push_back({'+', j + 1, &b[j++]});
    }
  }
  std::string out = "--- torch.fx\n+++ fxcpp\n";
  bool skipped = false;
  for (size_t k = 0; k < script.size(); ++k) {
    bool near = false;
    for (size_t d = k == 0 ? 0 : k - 1; d <= k + 1 && d < script.size(); ++d) near |= script[d].tag != ' ';
    if (!near) {
      skipped = true;
      continue;
    }
    if (skipped) out += "  ...\n";
    skipped = false;
    out += script[k].tag;
    out += std::to_string(script[k].number) + "| " + *script[k].text + "\n";
  }
  if (expected.size() != actual.size() && a == b) out += "(the texts differ in length only)\n";
  return out;
}

// ---- the tests -----------------------------------------------------------

class Conformance : public testing::TestWithParam<std::string> {};

TEST_P(Conformance, MatchesTorchFx) {
  const std::string& name = GetParam();
  const json* c = find_case(name);
  ASSERT_NE(c, nullptr) << "no case " << name << " in " << cases_path();
  const json& expected_all = expected_file();
  if (expected_all.is_null())
    GTEST_SKIP() << expected_path() << " is missing: the oracle did not run (`ctest -L conformance` runs "
                 << "it first) or was skipped because FXCPP_PYTHON cannot import torch";
  ASSERT_TRUE(expected_all["cases"].contains(name))
      << "expected.json has no case " << name << ": rerun the oracle";
  const json& expected = expected_all["cases"][name];

  std::vector<std::string> xfail_on;
  if (c->contains("xfail")) {
    ASSERT_TRUE(c->contains("xfail_on")) << "an xfail case lists the outputs that mismatch in xfail_on";
    xfail_on = (*c)["xfail_on"].get<std::vector<std::string>>();
  }
  auto xfails = [&](const std::string& part) {
    return std::find(xfail_on.begin(), xfail_on.end(), part) != xfail_on.end();
  };

  Builder b((*c)["nodes"]);
  try {
    b.run();
  } catch (const std::invalid_argument& e) {
    FAIL() << e.what();  // a broken case: the harness's bug
  } catch (const std::exception& e) {
    EXPECT_TRUE(xfails("build")) << "fxcpp threw while building the graph that torch.fx built: " << e.what();
    return;
  }
  ASSERT_FALSE(xfails("build")) << "case " << name
                                << " is xfail on build but fxcpp built it: remove the xfail";
  fx::Graph& g = b.graph();

  if (c->value("lint", "ok") == "error") {
    // fxcpp's lint also requires an output node (torch.fx's does not).
    EXPECT_THROW(g.lint(), fx::LintError);
  } else {
    try {
      g.lint();
    } catch (const std::exception& e) {
      ADD_FAILURE() << "lint failed on a graph torch.fx accepts: " << e.what();
    }
  }

  std::map<std::string, std::string> actual;
  try {
    actual["graph"] = g.to_string();
    actual["code"] = g.python_code("self").src;
    if (expected.contains("tabular")) actual["tabular"] = g.print_tabular();
  } catch (const std::exception& e) {
    FAIL() << "fxcpp threw while printing: " << e.what();
  }

  for (const auto& [part, text] : actual) {
    const std::string want = expected.at(part).get<std::string>();
    if (xfails(part)) {
      EXPECT_NE(want, text) << "case " << name << " is xfail on " << part << " ("
                            << (*c)["xfail"].get<std::string>()
                            << ") but fxcpp now matches torch.fx: remove the xfail";
      if (want != text)
        std::cout << "[  XFAIL   ] " << name << " " << part << ": " << (*c)["xfail"].get<std::string>()
                  << "\n"
                  << line_diff(want, text);
    } else if (want != text) {
      ADD_FAILURE() << "the " << part << " of case " << name << " differs from torch.fx:\n"
                    << line_diff(want, text);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, Conformance, testing::ValuesIn(case_names()),
                         [](const testing::TestParamInfo<std::string>& param_info) {
                           return param_info.param;
                         });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(Conformance);

TEST(ConformanceHarness, CasesFileLoads) {
  ASSERT_TRUE(cases_file().contains("cases")) << "cannot read " << cases_path();
  EXPECT_GE(cases_file()["cases"].size(), 45u);
}

TEST(ConformanceHarness, CaseNamesAreUniqueTestNames) {
  std::vector<std::string> names = case_names();
  for (size_t i = 0; i < names.size(); ++i) {
    EXPECT_FALSE(names[i].empty());
    for (char ch : names[i])
      EXPECT_TRUE(std::isalnum(static_cast<unsigned char>(ch)) || ch == '_') << "case name " << names[i];
    for (size_t j = 0; j < i; ++j) EXPECT_NE(names[i], names[j]) << "duplicate case name";
  }
}

TEST(ConformanceHarness, ExpectedCoversEveryCase) {
  const json& expected = expected_file();
  if (expected.is_null()) GTEST_SKIP() << expected_path() << " is missing: the oracle did not run";
  EXPECT_EQ(expected["torch_version"].get<std::string>().rfind("2.14", 0), 0u)
      << "the oracle ran torch " << expected["torch_version"] << ", the reference is torch.fx 2.14";
  std::vector<std::string> names = case_names();
  EXPECT_EQ(expected["cases"].size(), names.size()) << "expected.json is stale: rerun the oracle";
  for (const auto& n : names) EXPECT_TRUE(expected["cases"].contains(n)) << n;
}

// The DSL relies on JSON keeping 1.0 a float and 1 an int (Python's json does;
// oracle.py checks it on its side).
TEST(ConformanceHarness, JsonNumberKinds) {
  json j = json::parse("[1.0, 1e-05, 1, -0.0, 2.5e+20, -7]");
  EXPECT_TRUE(j[0].is_number_float());
  EXPECT_TRUE(j[1].is_number_float());
  EXPECT_TRUE(j[2].is_number_integer() && !j[2].is_number_float());
  EXPECT_TRUE(j[3].is_number_float());
  EXPECT_TRUE(std::signbit(j[3].get<double>()));
  EXPECT_TRUE(j[4].is_number_float());
  EXPECT_TRUE(j[5].is_number_integer());
  // And through the case file itself: json_number_kinds prints 1.0 as `1.0`.
  const json* c = find_case("json_number_kinds");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE((*c)["nodes"][1][2][1].is_number_float());
  EXPECT_TRUE((*c)["nodes"][1][2][3].is_number_integer());
}

}  // namespace
