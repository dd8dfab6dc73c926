#include <fx/argument.h>
#include <fx/error.h>
#include <fx/node.h>

#include <array>

#include "visit.h"

namespace fx {

bool Tuple::operator==(const Tuple& o) const { return items == o.items; }
bool List::operator==(const List& o) const { return items == o.items; }
bool Dict::operator==(const Dict& o) const { return items == o.items; }
bool Slice::operator==(const Slice& o) const { return parts == o.parts; }

Argument::Argument(Node* n) {
  if (n == nullptr) throw GraphError("a null Node* was used as an argument; use fx::None for None");
  v_ = n;
}

std::string_view Argument::kind_name_at(size_t index) {
  static constexpr std::array<std::string_view, std::variant_size_v<Storage>> kNames = {
      "NoneType", "bool",        "int",          "float",        "str",
      "Node",     "tuple",       "list",         "dict",         "slice",
      "ellipsis", "torch.dtype", "torch.device", "torch.layout", "torch.memory_format",
      "opaque"};
  return kNames.at(index);
}

std::string_view Argument::kind_name() const { return kind_name_at(v_.index()); }

void Argument::throw_wrong_kind(std::string_view wanted) const {
  throw Error("argument is a " + std::string(kind_name()) + ", not a " + std::string(wanted));
}

void for_each_node(const Argument& a, const std::function<void(Node*)>& fn) { detail::visit_nodes(a, fn); }

Argument map_arg(const Argument& a, const std::function<Argument(Node*)>& fn) {
  const auto& s = a.storage();
  auto map_items = [&](const std::vector<Argument>& items) {
    std::vector<Argument> out;
    out.reserve(items.size());
    for (const auto& x : items) out.push_back(map_arg(x, fn));
    return out;
  };
  if (Node* n = a.node()) return fn(n);
  if (const auto* t = std::get_if<Tuple>(&s)) return Tuple{map_items(t->items)};
  if (const auto* l = std::get_if<List>(&s)) return List{map_items(l->items)};
  if (const auto* sl = std::get_if<Slice>(&s)) return Slice{map_items(sl->parts)};
  if (const auto* d = std::get_if<Dict>(&s)) {
    Dict out;
    out.items.reserve(d->items.size());
    for (const auto& [k, v] : d->items) out.items.emplace_back(k, map_arg(v, fn));
    return out;
  }
  return a;
}

}  // namespace fx
