#include "namespace.h"

#include <fx/error.h>
#include <fx/target.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>

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

// Where the `_<digits>` suffix of FX's name regex starts (its underscore),
// or npos: `^([a-zA-Z_][0-9a-zA-Z_]*?)(?:_(\d+))?$` needs a non-empty base.
size_t numeric_suffix_at(std::string_view name) {
  const size_t us = name.rfind('_');
  if (us == std::string_view::npos || us == 0 || us + 1 == name.size()) return std::string_view::npos;
  return std::all_of(name.begin() + static_cast<std::ptrdiff_t>(us) + 1, name.end(), is_ascii_digit)
             ? us
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

// Python's int() of a suffix, as decimal digits without leading zeros.
std::string_view without_leading_zeros(std::string_view digits) {
  const size_t first = digits.find_first_not_of('0');
  return first == std::string_view::npos ? digits.substr(digits.size() - 1) : digits.substr(first);
}

// The digits of n + 1, for counts beyond 64 bits (Python's ints have no limit).
void increment_decimal(std::string& digits) {
  size_t k = digits.size();
  while (k > 0 && digits[k - 1] == '9') digits[--k] = '0';
  if (k == 0)
    digits.insert(digits.begin(), '1');
  else
    ++digits[k - 1];
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

bool Namespace::claim_shadowing(const std::string& name) {
  return is_identifier(name) && !is_python_keyword(name) && take(name);
}

bool Namespace::used(std::string_view name) const { return contains(name) || is_taken_elsewhere(name); }

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
  return !is_illegal(name, obj) && !contains(name);
}

std::string Namespace::normal_form(std::string_view raw) {
  std::string candidate = sanitize(raw);
  if (candidate.empty()) candidate = "_unnamed";
  return candidate;
}

bool Namespace::is_plain(std::string_view normal) {
  return !normal.empty() && !is_illegal(normal, nullptr) &&
         numeric_suffix_at(normal) == std::string_view::npos;
}

std::string Namespace::create_plain_name(std::string_view normal) {
  // count_up for a base known legal: the base's count is looked up once and
  // each candidate once (claiming it is the test that it is free), and the
  // base itself only until it is taken. A graph names most of its nodes
  // here, so this is two probes a node.
  BaseCount& base = *base_count_.try_emplace(normal).first;  // {0, false}: FX's defaultdict
  if (!base.taken) {
    // FX: an unused name is kept and leaves the count as it was.
    const bool claimed = claim_legal(normal);
    base.taken = true;  // by this call, or before it
    if (claimed) return std::string(normal);
  }
  // Candidates are spelled in a buffer on the stack (a std::string built and
  // rebuilt per node was a fifth of naming it); a long base takes count_up.
  char buf[64];
  if (normal.size() > sizeof buf - 24) return count_up(std::string(normal), normal, nullptr);
  if (base.count == kBigCount) return count_up_big(std::string(normal), normal, nullptr);
  std::memcpy(buf, normal.data(), normal.size());
  buf[normal.size()] = '_';
  char* const digits = buf + normal.size() + 1;
  std::string_view candidate;
  uint64_t k = base.count;
  do {
    if (k == kBigCount - 1) return count_up_big(std::string(normal), normal, nullptr);
    const char* end = std::to_chars(digits, buf + sizeof buf, ++k).ptr;
    candidate = std::string_view(buf, static_cast<size_t>(end - buf));
  } while (!claim_legal(candidate));
  base.count = k;
  return std::string(candidate);
}

// FX's loop: from the base's remembered count, the first free `base_k`.
std::string Namespace::count_up(std::string candidate, std::string_view base, const void* obj) {
  const BaseCount* count = base_count_.find(base);
  if (count != nullptr && count->count == kBigCount) return count_up_big(std::move(candidate), base, obj);
  uint64_t k = count ? count->count : 0;
  if (is_illegal(candidate, obj)) set_suffixed(candidate, base, ++k);  // illegal names end in no `_N`
  while (!claim_legal(candidate)) {  // claiming is the test that it is free, as in create_plain_name
    if (k == kBigCount - 1) return count_up_big(std::move(candidate), base, obj);
    set_suffixed(candidate, base, ++k);
  }
  set_count(base, k);
  return candidate;
}

std::string Namespace::count_up_big(std::string candidate, std::string_view base, const void* obj) {
  std::string digits;
  if (const BaseCount* count = base_count_.find(base); count != nullptr && count->count != kBigCount)
    digits = std::to_string(count->count);
  else if (auto it = big_counts_.find(std::string(base)); it != big_counts_.end())
    digits = it->second;
  else
    digits = "0";
  auto next = [&] {
    increment_decimal(digits);
    candidate.assign(base);
    candidate += '_';
    candidate += digits;
  };
  if (is_illegal(candidate, obj)) next();
  while (!claim_legal(candidate)) next();
  set_big_count(base, digits);
  return candidate;
}

void Namespace::set_count(std::string_view base, uint64_t k) {
  base_count_.try_emplace(base).first->count = k;
}

void Namespace::set_big_count(std::string_view base, std::string_view digits) {
  if (digits.size() < 20) {  // fits: 19 digits are below 2^63
    uint64_t k = 0;
    std::from_chars(digits.data(), digits.data() + digits.size(), k);
    set_count(base, k);
    return;
  }
  base_count_.try_emplace(base).first->count = kBigCount;
  big_counts_[std::string(base)] = std::string(digits);
}

// torch.fx 2.x's _Namespace.create_name: a legal name is kept as it is
// (`x_007` stays `x_007`); a name with a `_N` suffix sets its base's count to
// N; a taken or illegal one counts up from its base's count.
std::string Namespace::create_name(std::string_view raw, const void* obj) {
  if (obj != nullptr) {
    if (auto known = names_of_.find(obj)) return std::string(name_at(*known));
  }
  std::string candidate = normal_form(raw);
  const size_t us = numeric_suffix_at(candidate);
  if (us == std::string::npos || used(candidate)) {
    const std::string base = us == std::string::npos ? candidate : candidate.substr(0, us);
    candidate = count_up(std::move(candidate), base, obj);
  } else {
    take(candidate);
    set_big_count(std::string_view(candidate).substr(0, us),
                  without_leading_zeros(std::string_view(candidate).substr(us + 1)));
  }
  // Both paths end by taking `candidate`: it is the last name stored.
  if (obj != nullptr) names_of_.set(obj, static_cast<uint32_t>(entries_.size() - 1));
  return candidate;
}

}  // namespace fx::detail
