// Module.state_dict / load_state_dict / torch.save of one, as PyTorch does them.
#include <fx/error.h>
#include <fx/state_dict.h>

#include <torch/serialize.h>

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

namespace {

void write_pickle(const c10::IValue& value, const std::string& path, const char* who) {
  std::vector<char> bytes = torch::pickle_save(value);
  std::ofstream out(path, std::ios::binary);
  if (!out) throw Error(std::string(who) + ": cannot open " + path + " for writing");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (!out) throw Error(std::string(who) + ": writing " + path + " failed");
}

}  // namespace

void save_state_dict(const torch::nn::Module& module, const std::string& path) {
  c10::Dict<std::string, at::Tensor> dict;
  for (const auto& [key, value] : state_dict(module)) dict.insert(key, value.detach());
  write_pickle(dict, path, "fx::save_state_dict");
}

void save_tensors(const std::vector<at::Tensor>& tensors, const std::string& path) {
  c10::List<at::Tensor> list;
  for (const auto& t : tensors) list.push_back(t.detach());
  write_pickle(list, path, "fx::save_tensors");
}

}  // namespace fx
