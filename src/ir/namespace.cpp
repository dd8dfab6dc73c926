#include "namespace.h"

#include <fx/error.h>
#include <fx/target.h>

#include <algorithm>
#include <array>
#include <charconv>

#include "python_names.h"

namespace fx::detail {

namespace {

struct CustomBuiltin {
  std::string_view name;
  std::string_view target;  // what the name stands for
};
// torch.fx.graph._custom_builtins, in registration order.
constexpr std::array<CustomBuiltin, 7> kCustomBuiltins = {{{"inf", "math.inf"},
                                                           {"nan", "math.nan"},
                                                           {"NoneType", "builtins.NoneType"},
                                                           {"torch", "torch"},
                                                           {"device", "torch.device"},
                                                           {"fx_pytree", "torch.fx._pytree"},
                                                           {"pytree", "torch.utils._pytree"}}};

// ASCII only, and inline: std::isalnum is a call into the C locale per
// character, which was a fifth of naming a node.
bool is_ascii_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_ascii_digit(c) || c == '_';
}

std::string sanitize(std::string_view candidate) {
  if (!candidate.empty() && !is_ascii_digit(candidate[0]) &&
      std::all_of(candidate.begin(), candidate.end(), is_name_char))
    return std::string(candidate);  // the common case: already a name
  std::string out;
  out.reserve(candidate.size() + 1);
  bool in_bad_run = false;
  for (char ch : candidate) {
    if (is_name_char(ch)) {
      out.push_back(ch);
      in_bad_run = false;
    } else if (!in_bad_run) {
      out.push_back('_');
      in_bad_run = true;
    }
  }
  if (!out.empty() && is_ascii_digit(out[0])) out.insert(out.begin(), '_');
  return out;
}

// Where a `_<digits>` suffix starts (its underscore), or npos.
size_t numeric_suffix_at(std::string_view name) {
  const size_t us = name.rfind('_');
  if (us == std::string_view::npos || us + 1 == name.size()) return std::string_view::npos;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(us) + 1, name.end(), is_ascii_digit)
             ? us
             : std::string_view::npos;
}

// Where a `_<digits>` suffix with leading zeros starts (`x_007`), or npos:
// Python's int() re-prints it.
size_t zero_padded_suffix_at(std::string_view name) {
  const size_t us = numeric_suffix_at(name);
  return us != std::string_view::npos && us + 2 < name.size() && name[us + 1] == '0' ? us
                                                                                     : std::string_view::npos;
}

// base + "_" + k, reusing name's buffer.
void set_suffixed(std::string& name, std::string_view base, uint64_t k) {
  char digits[24];
  char* end = std::to_chars(digits, digits + sizeof digits, k).ptr;
  name.assign(base);
  name += '_';
  name.append(digits, end);
}

}  // namespace

const void* Namespace::builtin_identity(std::string_view name) {
  return Target(std::string("builtins.") + std::string(name)).entry();
}

const void* Namespace::custom_builtin_identity(std::string_view name) {
  for (const auto& b : kCustomBuiltins)
    if (b.name == name) return Target(b.target).entry();
  return nullptr;
}

void Namespace::add_custom_builtins() {
  for (const auto& b : kCustomBuiltins) create_name(b.name, Target(b.target).entry());
}

bool Namespace::is_illegal(std::string_view name, const void* obj) {
  if (is_python_keyword(name)) return true;
  if (is_python_builtin(name)) return obj == nullptr || obj != builtin_identity(name);
  for (const auto& b : kCustomBuiltins)
    if (b.name == name) return obj == nullptr || obj != Target(b.target).entry();
  return false;
}

bool Namespace::take(std::string_view name) {
  if (pool_.size() + name.size() > UINT32_MAX || entries_.size() >= UINT32_MAX)
    throw GraphError("a namespace holds at most 4 GiB of names (naming '" + std::string(name.substr(0, 64)) +
                     "')");
  // Room first: once its index is in used_, storing the name must not throw.
  if (entries_.size() == entries_.capacity()) entries_.reserve(2 * entries_.size() + 16);
  if (pool_.size() + name.size() > pool_.capacity()) pool_.reserve(2 * (pool_.size() + name.size()));
  if (!used_.insert(name, static_cast<uint32_t>(entries_.size()), key_of()).second) return false;
  entries_.push_back(Entry{static_cast<uint32_t>(pool_.size()), static_cast<uint32_t>(name.size())});
  pool_ += name;
  if (!name.empty())
    first_and_length_[static_cast<unsigned char>(name[0]) & 127] |= 1u << std::min<size_t>(name.size(), 31);
  return true;
}

bool Namespace::claim(const std::string& name) {
  return is_identifier(name) && !is_illegal(name, nullptr) && take(name);
}

// Claims the first free `base_k` with k > num, searching from a remembered
// suffix for the base: every base_1 .. base_{hint-1} is known to be taken.
std::string Namespace::claim_next_free(std::string_view base, uint64_t num, const void* obj) {
  uint64_t& hint = *next_suffix_.try_emplace(base).first;
  if (hint == 0) hint = 1;
  uint64_t k = std::max(num + 1, hint);
  bool contiguous = num + 1 <= hint;
  std::string name;
  set_suffixed(name, base, k);
  while (!claim_free(name, obj)) set_suffixed(name, base, ++k);
  if (contiguous) hint = k + 1;
  return name;
}

bool Namespace::taken(const std::string& name, const void* obj) const {
  return contains(name) || is_illegal(name, obj) || is_taken_elsewhere(name);
}

// Takes `name` if it is free: one lookup in used_ for the common case.
bool Namespace::claim_free(const std::string& name, const void* obj) {
  return !is_illegal(name, obj) && claim_legal(name);
}

bool Namespace::claim_legal(std::string_view name) {
  if (taken_elsewhere_ && !contains(name) && taken_elsewhere_(name)) return false;
  return take(name);
}

bool Namespace::contains(std::string_view name) const {
  return (name.empty() || in_masks(first_and_length_, name)) && used_.find(name, key_of()).has_value();
}

bool Namespace::keeps(std::string_view name, const void* obj) const {
  if (name.empty() || is_ascii_digit(name[0]) || !std::all_of(name.begin(), name.end(), is_name_char))
    return false;  // sanitize would change it
  if (zero_padded_suffix_at(name) != std::string_view::npos) return false;  // re-printed
  return !is_illegal(name, obj) && !contains(name);
}

std::string Namespace::normal_form(std::string_view raw) {
  std::string candidate = sanitize(raw);
  // A `_<digits>` suffix is re-printed as Python's int() would: `x_007` becomes `x_7`.
  if (const size_t us = zero_padded_suffix_at(candidate); us != std::string::npos) {
    const size_t first = candidate.find_first_not_of('0', us + 1);
    candidate.erase(us + 1, std::min(first, candidate.size() - 1) - (us + 1));
  }
  return candidate;
}

bool Namespace::is_plain(std::string_view normal) { return !normal.empty() && !is_illegal(normal, nullptr); }

std::string Namespace::create_plain_name(std::string_view normal) {
  if (claim_legal(normal)) return std::string(normal);
  // Taken: count up from it as create_name would, without normalizing it again.
  if (numeric_suffix_at(normal) == std::string_view::npos) return claim_next_free(normal, 0, nullptr);
  return create_name(normal, nullptr);
}

std::string Namespace::create_name(std::string_view raw, const void* obj) {
  if (obj != nullptr) {
    if (auto known = names_of_.find(obj)) return std::string(name_at(*known));
  }
  std::string candidate = normal_form(raw);
  if (candidate.empty())
    throw GraphError("invalid node name '" + std::string(raw) + "': a name must not be empty");

  // Split a `_<digits>` suffix, like FX's regex (.*)_(\d+)$.
  const size_t us = numeric_suffix_at(candidate);
  const bool has_suffix = us != std::string::npos;
  bool claimed = false;
  if (!has_suffix) {
    claimed = claim_free(candidate, obj);
    if (!claimed) {
      candidate = claim_next_free(candidate, 0, obj);
      claimed = true;
    }
  } else {
    claimed = claim_free(candidate, obj);
    if (!claimed) {
      const std::string base = candidate.substr(0, us);
      std::string digits = candidate.substr(us + 1);
      if (digits.size() <= 18) {
        uint64_t num = 0;
        std::from_chars(digits.data(), digits.data() + digits.size(), num);
        candidate = claim_next_free(base, num, obj);
        claimed = true;
      } else {  // beyond 64 bits: count up in decimal, as Python's big ints do
        do {
          size_t k = digits.size();
          while (k > 0 && digits[k - 1] == '9') digits[--k] = '0';
          if (k == 0)
            digits.insert(digits.begin(), '1');
          else
            ++digits[k - 1];
          candidate = base + "_" + digits;
        } while (taken(candidate, obj));
      }
    }
  }
  if (!claimed) take(candidate);
  // Every path above ends by taking `candidate`: it is the last name stored.
  if (obj != nullptr) names_of_.set(obj, static_cast<uint32_t>(entries_.size() - 1));
  return candidate;
}

}  // namespace fx::detail
