// Module.state_dict / load_state_dict / torch.save of one, as PyTorch does them.
#include <fx/error.h>
#include <fx/runtime.h>
#include <fx/state_dict.h>

#include "torch_load.h"

#include <caffe2/serialize/inline_container.h>
#include <torch/csrc/jit/serialization/export.h>
#include <torch/csrc/jit/serialization/pickler.h>

#include <bit>
#include <fstream>
#include <unordered_map>

namespace fx {

namespace {

// torch.nn.Module._save_to_state_dict, recursively: own parameters, own
// buffers, then each child under its name.
void collect(const torch::nn::Module& m, const std::string& prefix, StateDict& out) {
  for (const auto& p : m.named_parameters(/*recurse=*/false))
    if (p.value().defined()) out.emplace_back(prefix + p.key(), p.value());
  for (const auto& b : m.named_buffers(/*recurse=*/false))
    if (b.value().defined()) out.emplace_back(prefix + b.key(), b.value());
  for (const auto& c : m.named_children()) collect(*c.value(), prefix + c.key() + ".", out);
}

std::string quoted_list(const std::vector<std::string>& keys) {
  std::string s;
  for (size_t i = 0; i < keys.size(); ++i) s += (i ? ", \"" : "\"") + keys[i] + "\"";
  return s;
}

}  // namespace

StateDict state_dict(const torch::nn::Module& module) {
  StateDict out;
  collect(module, "", out);
  return out;
}

void load_state_dict(torch::nn::Module& module, const std::string& path, bool strict) {
  StateDict file = read_state_dict(path);
  StateDict own = state_dict(module);
  std::unordered_map<std::string, size_t> index;
  for (size_t i = 0; i < own.size(); ++i) index.emplace(own[i].first, i);

  // Check everything first, so that a bad file leaves the module untouched.
  std::vector<std::string> unexpected, mismatches;
  std::vector<bool> seen(own.size(), false);
  std::vector<std::pair<at::Tensor*, const at::Tensor*>> copies;
  for (const auto& [key, value] : file) {
    auto it = index.find(key);
    if (it == index.end()) {
      unexpected.push_back(key);
      continue;
    }
    seen[it->second] = true;
    at::Tensor& dst = own[it->second].second;
    if (dst.sizes() != value.sizes())
      mismatches.push_back("size mismatch for " + key + ": copying a param with shape " +
                           c10::str(value.sizes()) + " from checkpoint, the shape in current model is " +
                           c10::str(dst.sizes()) + ".");
    else if (dst.scalar_type() != value.scalar_type())
      mismatches.push_back("dtype mismatch for " + key + ": the checkpoint holds " +
                           std::string(c10::toString(value.scalar_type())) + ", the current model " +
                           c10::toString(dst.scalar_type()) + ".");
    else
      copies.emplace_back(&dst, &value);
  }
  std::vector<std::string> missing;
  for (size_t i = 0; i < own.size(); ++i)
    if (!seen[i]) missing.push_back(own[i].first);

  // Module.load_state_dict's message, with the file named.
  std::string msg;
  if (strict && !missing.empty()) msg += "\n\tMissing key(s) in state_dict: " + quoted_list(missing) + ". ";
  if (strict && !unexpected.empty())
    msg += "\n\tUnexpected key(s) in state_dict: " + quoted_list(unexpected) + ". ";
  for (const auto& m : mismatches) msg += "\n\t" + m;
  if (!msg.empty()) throw Error("Error(s) in loading state_dict from " + path + ":" + msg);

  torch::NoGradGuard no_grad;
  for (auto& [dst, src] : copies) dst->copy_(*src);
}

void detail::write_torch_save(const c10::IValue& value, caffe2::serialize::PyTorchStreamWriter& writer) {
  std::vector<char> pickled;
  torch::jit::Pickler pickler([&](const char* p, size_t n) { pickled.insert(pickled.end(), p, p + n); },
                              /*tensor_table=*/nullptr, /*type_renamer=*/nullptr,
                              /*memoized_class_types=*/nullptr, /*get_tensor_id=*/nullptr,
                              /*tag_aggregates=*/false);
  pickler.protocol();
  pickler.pushIValue(value);
  pickler.stop();
  // The pickler only references the tensors' storages: their bytes go to the writer without a copy.
  torch::jit::writeArchiveAndTensors("data", pickled.data(), pickled.size(), pickler.tensorData(), writer);
  // As torch.save (torch >= 2.1) does: torch.load takes a file without this record as little-endian.
  const std::string byteorder = std::endian::native == std::endian::little ? "little" : "big";
  writer.writeRecord("byteorder", byteorder.data(), byteorder.size());
}

namespace {

void write_pickle(const c10::IValue& value, const std::string& path, const char* who) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(std::string(who) + ": cannot open " + path + " for writing");
  try {
    caffe2::serialize::PyTorchStreamWriter writer([&](const void* p, size_t n) -> size_t {
      out.write(static_cast<const char*>(p), static_cast<std::streamsize>(n));
      return out ? n : 0;  // PyTorchStreamWriter throws on a short write
    });
    detail::write_torch_save(value, writer);
    writer.writeEndOfFile();
    out.flush();
  } catch (const c10::Error& e) {
    throw Error(std::string(who) + ": writing " + path + " failed: " + e.what_without_backtrace());
  }
  if (!out) throw Error(std::string(who) + ": writing " + path + " failed");
}

}  // namespace

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [key, value] : state_dict(module)) dict.insert(key, value.detach());
  write_pickle(dict, path, "fx::save_state_dict");
}

namespace {

// The value as torch.load(weights_only=True) reads it back: containers of
// Any (a typed list is pickled through torch.jit._pickle globals, which
// weights_only refuses), tensors detached.
c10::IValue savable(const c10::IValue& v, const std::string& where) {
  if (v.isTensor()) return v.toTensor().detach();
  if (v.isNone() || v.isBool() || v.isInt() || v.isDouble() || v.isString()) return v;
  if (v.isTuple()) {
    std::vector<c10::IValue> items;
    const auto& elements = v.toTupleRef().elements();
    for (size_t i = 0; i < elements.size(); ++i)
      items.push_back(savable(elements[i], where + "[" + std::to_string(i) + "]"));
    return c10::ivalue::Tuple::create(std::move(items));
  }
  if (v.isList()) {
    c10::impl::GenericList list(c10::AnyType::get());
    const auto items = v.toListRef();
    for (size_t i = 0; i < items.size(); ++i)
      list.push_back(savable(items[i], where + "[" + std::to_string(i) + "]"));
    return list;
  }
  if (v.isGenericDict()) {
    const auto src = v.toGenericDict();
    c10::impl::GenericDict dict(src.keyType(), c10::AnyType::get());
    for (const auto& kv : src) {
      if (!kv.key().isString() && !kv.key().isInt())
        throw Error("fx::save_values: a dict at " + where + " has a " + kv.key().tagKind() +
                    " key; only str and int keys are saved");
      const std::string key = kv.key().isString() ? "['" + kv.key().toStringRef() + "']"
                                                  : "[" + std::to_string(kv.key().toInt()) + "]";
      dict.insert(kv.key(), savable(kv.value(), where + key));
    }
    return dict;
  }
  throw Error("fx::save_values: the value at " + where + " is a " + python_type_name(v) +
              "; a saved value is a tensor, int, float, bool, None, str, or a tuple, list or dict of them");
}

// A list of Any, not a c10::List<at::Tensor>: the pickler writes a tensor list
// through torch.jit._pickle.build_tensorlist, another global weights_only refuses.
void write_list(const std::vector<c10::IValue>& values, const std::string& path, const char* who) {
  c10::impl::GenericList list(c10::AnyType::get());
  for (size_t i = 0; i < values.size(); ++i) {
    // Not "[" + to_string(i) + "]": g++ 12 -O3 misreads that as an overlapping memcpy (-Wrestrict, GCC bug
    // 105329).
    std::string where = std::to_string(i);
    where.insert(where.begin(), '[');
    where += ']';
    list.push_back(savable(values[i], where));
  }
  write_pickle(list, path, who);
}

}  // namespace

void save_values(const std::vector<c10::IValue>& values, const std::string& path) {
  write_list(values, path, "fx::save_values");
}

void save_tensors(const std::vector<at::Tensor>& tensors, const std::string& path) {
  write_list({tensors.begin(), tensors.end()}, path, "fx::save_tensors");
}

}  // namespace fx
