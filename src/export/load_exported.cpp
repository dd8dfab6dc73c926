// fx::load_exported: torch.export.save's PT2 archive -> fx::ExportedProgram.
//
// The archive (torch/export/pt2_archive/_package.py) is a zip file under one
// top folder, as torch.save writes:
//   archive_format                      "pt2"
//   models/model.json                   the serialized ExportedProgram (schema.py)
//   data/weights/model_weights_config.json    parameters and buffers: name -> payload
//   data/weights/weight_<i>             a tensor's untyped storage, raw bytes
//   data/constants/model_constants_config.json, data/constants/tensor_<i>
// Each payload's tensor_meta gives its dtype, sizes, strides and storage
// offset; payloads of one storage share a record, so aliases stay aliases.
#include <fx/exported_program.h>

#include <caffe2/serialize/inline_container.h>
#include <caffe2/serialize/istream_adapter.h>

#include <fstream>
#include <sstream>
#include <unordered_map>

#include "../serialize/zip_reader.h"
#include "export_graph.h"

namespace fx {

namespace {

using detail::Json;

// The serialized-schema versions this reader knows: torch 2.14 writes 8.20;
// a newer minor version only adds fields, a newer major one changes them.
constexpr int64_t kSchemaMajor = 8;
constexpr int64_t kSchemaMinor = 20;

class Pt2Reader {
 public:
  Pt2Reader(caffe2::serialize::PyTorchStreamReader& archive, std::string name)
      : archive_(archive), name_(std::move(name)) {}

  ExportedProgram read() {
    if (!archive_.hasRecord("archive_format") || record("archive_format") != "pt2")
      fail("",
           "not a torch.export archive (no archive_format record saying pt2; torch.export.save writes one)");
    const std::string model = model_name();
    const std::string model_file = "models/" + model + ".json";
    Json ep = parse(model_file);
    where_ = model_file;
    check_version(ep);
    const Json& gm = field(ep, "graph_module", "");
    ExportGraphSignature signature = read_signature(field(gm, "signature", "graph_module"));
    std::vector<std::string> input_names;
    for (const auto& in : signature.input_specs) input_names.push_back(in.name);
    std::unique_ptr<GraphModule> module = detail::graph_module_from_export(
        field(gm, "graph", "graph_module"), place("graph_module.graph"), input_names);
    where_.clear();
    StateDict weights = read_payloads("data/weights/", model + "_weights_config.json", model);
    StateDict constants = read_payloads("data/constants/", model + "_constants_config.json", model);
    where_ = model_file;
    auto ranges = read_ranges(ep);
    auto [in_spec, out_spec] = read_call_spec(gm);
    try {
      return ExportedProgram(std::move(module), std::move(signature), std::move(weights),
                             std::move(constants), std::move(ranges), std::move(in_spec),
                             std::move(out_spec));
    } catch (const LoadError& e) {
      fail("", e.what());
    }
  }

 private:
  // `<file>: <record>: <where>`, the place an error names.
  std::string place(const std::string& where) const {
    std::string at = where_;
    if (!where.empty()) at += (at.empty() ? "" : ": ") + where;
    return name_ + (at.empty() ? "" : ": " + at);
  }
  [[noreturn]] void fail(const std::string& where, const std::string& what) const {
    throw LoadError(place(where) + ": " + what);
  }

  const Json& field(const Json& obj, const char* key, const std::string& where) const {
    if (!obj.is_object()) fail(where, "expected a JSON object");
    auto it = obj.find(key);
    if (it == obj.end()) fail(where, std::string("missing \"") + key + "\"");
    return *it;
  }
  const std::string& string_field(const Json& obj, const char* key, const std::string& where) const {
    const Json& v = field(obj, key, where);
    if (!v.is_string()) fail(where + "." + key, "expected a string");
    return v.get_ref<const std::string&>();
  }

  std::string record(const std::string& name) const {
    auto [data, size] = archive_.getRecord(name);
    return std::string(static_cast<const char*>(data.get()), size);
  }

  // torch.export.save names its one program `model`; a package may hold others.
  std::string model_name() const {
    if (archive_.hasRecord("models/model.json")) return "model";
    std::vector<std::string> models;
    for (const auto& r : archive_.getAllRecords())
      if (r.rfind("models/", 0) == 0 && r.size() > 12 && r.compare(r.size() - 5, 5, ".json") == 0)
        models.push_back(r.substr(7, r.size() - 12));
    if (models.size() != 1)
      fail("", models.empty() ? "no models/<name>.json record: the archive holds no exported program"
                              : "the archive holds " + std::to_string(models.size()) +
                                    " exported programs; fx::load_exported reads archives of one");
    return models[0];
  }

  Json parse(const std::string& record_name) const {
    if (!archive_.hasRecord(record_name)) fail(record_name, "missing from the archive");
    try {
      return Json::parse(record(record_name));
    } catch (const Json::parse_error& e) {
      fail(record_name, std::string("not JSON: ") + e.what());
    }
  }

  void check_version(const Json& ep) const {
    const Json& v = field(ep, "schema_version", "");
    const Json& major = field(v, "major", "schema_version");
    const Json& minor = field(v, "minor", "schema_version");
    if (!major.is_number_integer() || !minor.is_number_integer()) fail("schema_version", "expected integers");
    const std::string version =
        std::to_string(major.get<int64_t>()) + "." + std::to_string(minor.get<int64_t>());
    if (major.get<int64_t>() != kSchemaMajor || minor.get<int64_t>() > kSchemaMinor)
      fail("schema_version", "the file has serialized-schema version " + version + "; fxcpp reads " +
                                 std::to_string(kSchemaMajor) + ".0 to " + std::to_string(kSchemaMajor) +
                                 "." + std::to_string(kSchemaMinor) +
                                 " (torch 2.14's torch.export.save writes " + std::to_string(kSchemaMajor) +
                                 "." + std::to_string(kSchemaMinor) + ")");
  }

  std::string arg_name(const Json& spec, const std::string& where) const {
    const Json& arg = field(spec, "arg", where);
    // A user input's arg is an Argument union ({"as_tensor": {"name": ..}});
    // the others are TensorArgument ({"name": ..}).
    if (arg.is_object() && arg.size() == 1 && arg.begin().key().rfind("as_", 0) == 0) {
      const std::string& kind = arg.begin().key();
      const Json& v = arg.begin().value();
      if (kind == "as_tensor" || kind == "as_custom_obj")
        return string_field(v, "name", where + ".arg." + kind);
      if (kind == "as_sym_int" || kind == "as_sym_float" || kind == "as_sym_bool") {
        if (v.is_object() && v.contains("as_name")) return string_field(v, "as_name", where + ".arg." + kind);
        return "";
      }
      return "";  // a constant
    }
    return string_field(arg, "name", where + ".arg");
  }

  ExportGraphSignature read_signature(const Json& sig) {
    ExportGraphSignature s;
    const Json& ins = field(sig, "input_specs", "graph_module.signature");
    if (!ins.is_array()) fail("graph_module.signature.input_specs", "expected an array");
    for (size_t i = 0; i < ins.size(); ++i) {
      const std::string w = "graph_module.signature.input_specs[" + std::to_string(i) + "]";
      if (!ins[i].is_object() || ins[i].size() != 1) fail(w, "expected an object with one key");
      const std::string& kind = ins[i].begin().key();
      const Json& v = ins[i].begin().value();
      InputSpec in;
      const std::string wk = w + "." + kind;
      if (kind == "user_input") {
        in.kind = InputSpec::Kind::user_input;
        in.name = arg_name(v, wk);
      } else if (kind == "parameter") {
        in.kind = InputSpec::Kind::parameter;
        in.name = arg_name(v, wk);
        in.target = string_field(v, "parameter_name", wk);
      } else if (kind == "buffer") {
        in.kind = InputSpec::Kind::buffer;
        in.name = arg_name(v, wk);
        in.target = string_field(v, "buffer_name", wk);
        const Json& p = field(v, "persistent", wk);
        if (!p.is_boolean()) fail(wk + ".persistent", "expected true or false");
        in.persistent = p.get<bool>();
      } else if (kind == "tensor_constant") {
        in.kind = InputSpec::Kind::constant_tensor;
        in.name = arg_name(v, wk);
        in.target = string_field(v, "tensor_constant_name", wk);
      } else if (kind == "custom_obj" || kind == "token" || kind == "constant_input") {
        fail(wk,
             "a " + kind +
                 " input, which fxcpp does not run (TorchScript objects, effect tokens, constant inputs)");
      } else {
        fail(w, "an input spec of unknown kind \"" + kind + "\"");
      }
      s.input_specs.push_back(std::move(in));
    }
    const Json& outs = field(sig, "output_specs", "graph_module.signature");
    if (!outs.is_array()) fail("graph_module.signature.output_specs", "expected an array");
    for (size_t i = 0; i < outs.size(); ++i) {
      const std::string w = "graph_module.signature.output_specs[" + std::to_string(i) + "]";
      if (!outs[i].is_object() || outs[i].size() != 1) fail(w, "expected an object with one key");
      const std::string& kind = outs[i].begin().key();
      const Json& v = outs[i].begin().value();
      const std::string wk = w + "." + kind;
      OutputSpec out;
      if (kind == "user_output") {
        out.kind = OutputSpec::Kind::user_output;
      } else if (kind == "loss_output") {
        out.kind = OutputSpec::Kind::loss_output;
      } else if (kind == "buffer_mutation") {
        out.kind = OutputSpec::Kind::buffer_mutation;
        out.target = string_field(v, "buffer_name", wk);
      } else if (kind == "parameter_mutation") {
        out.kind = OutputSpec::Kind::parameter_mutation;
        out.target = string_field(v, "parameter_name", wk);
      } else if (kind == "user_input_mutation") {
        out.kind = OutputSpec::Kind::user_input_mutation;
        out.target = string_field(v, "user_input_name", wk);
      } else if (kind == "gradient_to_parameter" || kind == "gradient_to_user_input" || kind == "token") {
        fail(wk, "a " + kind +
                     " output: fxcpp runs inference programs, not joint (training) graphs or effect tokens");
      } else {
        fail(w, "an output spec of unknown kind \"" + kind + "\"");
      }
      out.name = arg_name(v, wk);
      s.output_specs.push_back(std::move(out));
    }
    return s;
  }

  // A payload's bytes as the tensor its tensor_meta describes. Records shared
  // by several payloads are read once (`storages`), so aliases stay aliases.
  at::Tensor payload(const std::string& dir, const std::string& key, const Json& meta, const std::string& w,
                     std::unordered_map<std::string, at::Storage>& storages) {
    const Json& use_pickle = field(meta, "use_pickle", w);
    if (!use_pickle.is_boolean()) fail(w + ".use_pickle", "expected true or false");
    if (use_pickle.get<bool>())
      fail(w,
           "'" + key + "' is pickled (a tensor subclass or custom object); fxcpp reads plain tensors only");
    const std::string& path = string_field(meta, "path_name", w);
    const Json& tm = field(meta, "tensor_meta", w);
    if (tm.is_null()) fail(w + ".tensor_meta", "missing for a plain tensor");
    const std::string wt = w + ".tensor_meta";
    const c10::ScalarType dtype = detail::export_scalar_type(field(tm, "dtype", wt), place(wt + ".dtype"));
    auto ints = [&](const Json& j, const std::string& wj) {
      std::vector<int64_t> out;
      for (const std::string& s : detail::export_sym_sizes(j, place(wj))) {
        const std::optional<int64_t> v = detail::static_size(s);
        if (!v || *v < 0) fail(wj, "a symbolic or negative size '" + s + "' in a weight");
        out.push_back(*v);
      }
      return out;
    };
    const std::vector<int64_t> sizes = ints(field(tm, "sizes", wt), wt + ".sizes");
    const std::vector<int64_t> strides = ints(field(tm, "strides", wt), wt + ".strides");
    const Json& offset_json = field(tm, "storage_offset", wt);
    const std::vector<int64_t> offset = ints(Json::array({offset_json}), wt + ".storage_offset");
    if (sizes.size() != strides.size()) fail(wt, "as many sizes as strides expected");
    const int64_t element = static_cast<int64_t>(c10::elementSize(dtype));
    const std::string record_name = dir + path;
    auto found = storages.find(path);
    if (found == storages.end()) {
      if (!archive_.hasRecord(record_name))
        fail(w + ".path_name", "no record " + record_name + " in the archive");
      auto [data, nbytes] = archive_.getRecord(record_name);
      if (nbytes % element != 0)
        fail(record_name,
             std::to_string(nbytes) + " bytes, not a whole number of " + c10::toString(dtype) + " elements");
      at::Storage storage(at::Storage::use_byte_size_t(), nbytes, std::move(data), nullptr, false);
      found = storages.emplace(path, std::move(storage)).first;
    }
    const at::Storage& storage = found->second;
    // The view must lie within the record: a malformed size or stride would
    // read past the bytes the file holds.
    const int64_t numel_in_record = static_cast<int64_t>(storage.nbytes()) / element;
    int64_t last = offset[0];
    bool empty = false;
    for (size_t d = 0; d < sizes.size(); ++d) {
      if (sizes[d] == 0) empty = true;
      int64_t step = 0;
      if (sizes[d] > 0 && (__builtin_mul_overflow(sizes[d] - 1, strides[d], &step) ||
                           __builtin_add_overflow(last, step, &last)))
        fail(wt, "sizes and strides overflow");
    }
    if (!empty && last >= numel_in_record)
      fail(wt, "the tensor reaches element " + std::to_string(last) + " but " + record_name + " holds " +
                   std::to_string(numel_in_record));
    at::Tensor t = at::empty({0}, at::TensorOptions().dtype(dtype));
    t.set_(storage, offset[0], sizes, strides);
    const c10::Device device = detail::export_device(field(tm, "device", wt), place(wt + ".device"));
    if (!device.is_cpu()) {
      try {
        t = t.to(device);
      } catch (const c10::Error& e) {
        fail(w, "'" + key + "' was exported on " + device.str() +
                    ", which this process cannot use: " + e.what_without_backtrace());
      }
    }
    const Json& rg = field(tm, "requires_grad", wt);
    if (rg.is_boolean() && rg.get<bool>()) t.set_requires_grad(true);
    return t;
  }

  StateDict read_payloads(const std::string& dir, const std::string& config_name, const std::string& model) {
    const std::string config_file = dir + config_name;
    if (!archive_.hasRecord(config_file)) {
      if (archive_.hasRecord(dir + model + ".pt"))
        fail(dir + model + ".pt",
             "the legacy pickled weights of torch < 2.8; save the program again with torch 2.14");
      fail(config_file, "missing from the archive");
    }
    where_ = config_file;
    Json config = parse(config_file);
    const Json& entries = field(config, "config", "");
    if (!entries.is_object()) fail("config", "expected an object");
    StateDict out;
    std::unordered_map<std::string, at::Storage> storages;
    for (auto it = entries.begin(); it != entries.end(); ++it)
      out.emplace_back(it.key(), payload(dir, it.key(), it.value(), "config['" + it.key() + "']", storages));
    where_.clear();
    return out;
  }

  std::map<std::string, RangeConstraint> read_ranges(const Json& ep) const {
    std::map<std::string, RangeConstraint> out;
    auto it = ep.find("range_constraints");
    if (it == ep.end()) return out;
    if (!it->is_object()) fail("range_constraints", "expected an object");
    for (auto r = it->begin(); r != it->end(); ++r) {
      const std::string w = "range_constraints." + r.key();
      RangeConstraint c;
      for (const char* end : {"min_val", "max_val"}) {
        const Json& v = field(r.value(), end, w);
        if (v.is_null()) continue;
        if (!v.is_number_integer()) fail(w + "." + end, "expected an integer or null");
        (std::string_view(end) == "min_val" ? c.min_val : c.max_val) = v.get<int64_t>();
      }
      out.emplace(r.key(), c);
    }
    return out;
  }

  // The root module's call signature: how forward's arguments flatten and
  // its outputs rebuild.
  std::pair<std::string, std::string> read_call_spec(const Json& gm) const {
    auto mcg = gm.find("module_call_graph");
    if (mcg == gm.end() || !mcg->is_array()) return {};
    for (const Json& entry : *mcg) {
      if (!entry.is_object() || entry.value("fqn", std::string("?")) != "") continue;
      auto sig = entry.find("signature");
      if (sig == entry.end() || sig->is_null()) return {};
      return {string_field(*sig, "in_spec", "module_call_graph[''].signature"),
              string_field(*sig, "out_spec", "module_call_graph[''].signature")};
    }
    return {};
  }

  caffe2::serialize::PyTorchStreamReader& archive_;
  std::string name_;
  std::string where_;
};

// `source` is a stream or bytes (detail::open_zip).
template <class Source>
ExportedProgram load_stream(Source&& source, const std::string& name) {
  std::unique_ptr<caffe2::serialize::PyTorchStreamReader> archive;
  try {
    archive = detail::open_zip(source);
  } catch (const c10::Error& e) {
    throw LoadError(
        name + ": not a torch.export archive (not a zip archive torch.export.save could have written): " +
        e.what_without_backtrace());
  }
  try {
    return Pt2Reader(*archive, name).read();
  } catch (const LoadError&) {
    throw;
  } catch (const c10::Error& e) {  // a corrupted record
    throw LoadError(name + ": " + e.what_without_backtrace());
  } catch (const Json::exception& e) {
    throw LoadError(name + ": " + e.what());
  } catch (const Error& e) {
    throw LoadError(name + ": " + e.what());
  }
}

}  // namespace

ExportedProgram load_exported(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw LoadError(path + ": cannot open the file");
  return load_stream(in, path);
}

bool is_pt2_package(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  try {
    auto archive = detail::open_zip(in);
    if (!archive->hasRecord("archive_format")) return false;
    auto [data, size] = archive->getRecord("archive_format");
    return std::string_view(static_cast<const char*>(data.get()), size) == "pt2";
  } catch (const c10::Error&) {
    return false;
  }
}

ExportedProgram load_exported_from_bytes(std::string_view bytes, const std::string& name) {
  return load_stream(bytes, name);
}

}  // namespace fx
