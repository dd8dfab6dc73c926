// torch.load of a state dict: the zip archive torch.save writes and the
// subset of Python's pickle that a dict of tensors uses.
//
// LibTorch's own unpickler (torch::pickle_load) replaces every
// collections.OrderedDict by None, because it only expects one as a tensor's
// (empty) backward hooks, so it cannot read `torch.save(model.state_dict())`,
// whose top object is an OrderedDict. This reader is a small pickle machine
// (pickletools.py documents the opcodes) that knows the handful of globals a
// state dict refers to and refuses every other one: nothing in the file is
// ever executed.
#include <fx/error.h>
#include <fx/state_dict.h>

#include "torch_load.h"

#include <c10/core/ScalarType.h>
#include <caffe2/serialize/inline_container.h>

#include <ATen/ATen.h>

#include <bit>
#include <cstring>
#include <deque>
#include <fstream>
#include <map>
#include <memory>
#include <unordered_map>
#include <variant>

namespace fx {

namespace {

// A Python object of the pickle. Dicts and lists are shared and mutable, as in
// Python (SETITEM on a memoized dict changes every reference to it), so
// objects refer to each other by plain pointers into their pickle's Heap.
struct Obj {
  enum Kind { kNone, kBool, kInt, kFloat, kStr, kBytes, kTuple, kList, kDict, kGlobal, kStorage, kTensor };
  Kind kind = kNone;
  int64_t i = 0;                               // bool, int
  double d = 0.0;                              // float
  std::string s;                               // str, bytes, global "module.name"
  std::vector<Obj*> items;                     // tuple, list
  std::vector<std::pair<Obj*, Obj*>> entries;  // dict, insertion order
  at::Tensor tensor;                           // storage (1-D, whole record), tensor
};

// Every object of one pickle, freed together and flat. A pickle can make a
// list that holds itself (`l = []; l.append(l)`) or nest lists a million
// deep in a few megabytes: with owning pointers between objects the first
// would never be freed and freeing the second would recurse a million deep.
// Nothing here walks an object graph recursively either, so neither cycles
// nor depth cost anything. Each opcode makes at most one object, so a pickle
// of n bytes holds at most n objects.
class Heap {
 public:
  Obj* make(Obj::Kind k) {
    objs_.emplace_back().kind = k;
    return &objs_.back();
  }

 private:
  std::deque<Obj> objs_;  // stable addresses
};

// What torch.load of one data.pkl returns: its top object and every object it
// refers to.
struct Pickle {
  Heap heap;
  Obj* top = nullptr;
};

const char* kind_name(Obj::Kind k) {
  static const char* names[] = {"None",  "bool", "int",  "float",  "str",     "bytes",
                                "tuple", "list", "dict", "global", "storage", "tensor"};
  return names[k];
}
// "a tensor", "an int".
std::string a_kind(Obj::Kind k) { return (k == Obj::kInt ? "an " : "a ") + std::string(kind_name(k)); }

// torch.<X>Storage, the storage classes torch.save names in persistent ids.
c10::ScalarType storage_dtype(const std::string& name, const std::string& where) {
  static const std::map<std::string, c10::ScalarType> kTypes = {
      {"torch.FloatStorage", c10::kFloat},
      {"torch.DoubleStorage", c10::kDouble},
      {"torch.HalfStorage", c10::kHalf},
      {"torch.BFloat16Storage", c10::kBFloat16},
      {"torch.LongStorage", c10::kLong},
      {"torch.IntStorage", c10::kInt},
      {"torch.ShortStorage", c10::kShort},
      {"torch.CharStorage", c10::kChar},
      {"torch.ByteStorage", c10::kByte},
      {"torch.BoolStorage", c10::kBool},
      {"torch.ComplexFloatStorage", c10::kComplexFloat},
      {"torch.ComplexDoubleStorage", c10::kComplexDouble},
  };
  auto it = kTypes.find(name);
  if (it == kTypes.end()) throw Error(where + ": unsupported storage type " + name);
  return it->second;
}

class Unpickler {
 public:
  Unpickler(std::string path, caffe2::serialize::PyTorchStreamReader& archive, Heap& heap, const char* data,
            size_t size)
      : path_(std::move(path)), archive_(archive), heap_(heap), p_(data), end_(data + size) {}

  Obj* run() {
    while (true) {
      const uint8_t op = u8();
      switch (op) {
        case 0x80:
          u8();
          break;  // PROTO
        case 0x95:
          bytes(8);
          break;  // FRAME: a size hint
        case '.':
          return pop();  // STOP
        case '(':
          marks_.push_back(stack_.size());
          break;  // MARK
        case '0':
          pop();
          break;  // POP
        case '1':
          pop_mark();
          break;  // POP_MARK
        case '2':
          push(top());
          break;  // DUP
        case 'N':
          push(make(Obj::kNone));
          break;
        case 0x88:
          push(boolean(true));
          break;  // NEWTRUE
        case 0x89:
          push(boolean(false));
          break;  // NEWFALSE
        case 'J':
          push(integer(static_cast<int32_t>(le(4))));
          break;  // BININT
        case 'K':
          push(integer(static_cast<int64_t>(le(1))));
          break;  // BININT1
        case 'M':
          push(integer(static_cast<int64_t>(le(2))));
          break;  // BININT2
        case 0x8a:
          push(long_int(le(1)));
          break;  // LONG1
        case 0x8b:
          push(long_int(le(4)));
          break;  // LONG4
        case 'G':
          push(binfloat());
          break;  // BINFLOAT
        case 'X':
          push(str(Obj::kStr, le(4)));
          break;  // BINUNICODE
        case 0x8c:
          push(str(Obj::kStr, le(1)));
          break;  // SHORT_BINUNICODE
        case 0x8d:
          push(str(Obj::kStr, le(8)));
          break;  // BINUNICODE8
        case 'T':
          push(str(Obj::kStr, le(4)));
          break;  // BINSTRING
        case 'U':
          push(str(Obj::kStr, le(1)));
          break;  // SHORT_BINSTRING
        case 'B':
          push(str(Obj::kBytes, le(4)));
          break;  // BINBYTES
        case 'C':
          push(str(Obj::kBytes, le(1)));
          break;  // SHORT_BINBYTES
        case ')':
          push(make(Obj::kTuple));
          break;  // EMPTY_TUPLE
        case 't':
          push(sequence(Obj::kTuple, pop_mark()));
          break;  // TUPLE
        case 0x85:
          push(sequence(Obj::kTuple, pop_n(1)));
          break;  // TUPLE1
        case 0x86:
          push(sequence(Obj::kTuple, pop_n(2)));
          break;  // TUPLE2
        case 0x87:
          push(sequence(Obj::kTuple, pop_n(3)));
          break;  // TUPLE3
        case ']':
          push(make(Obj::kList));
          break;  // EMPTY_LIST
        case 'l':
          push(sequence(Obj::kList, pop_mark()));
          break;     // LIST
        case 'a': {  // APPEND
          Obj* v = pop();
          expect(top(), Obj::kList, "APPEND")->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          auto vs = pop_mark();
          auto& items = expect(top(), Obj::kList, "APPENDS")->items;
          items.insert(items.end(), vs.begin(), vs.end());
          break;
        }
        case '}':
          push(make(Obj::kDict));
          break;     // EMPTY_DICT
        case 'd': {  // DICT
          Obj* dict = make(Obj::kDict);
          set_items(dict, pop_mark());
          push(dict);
          break;
        }
        case 's': {  // SETITEM
          auto kv = pop_n(2);
          set_items(expect(top(), Obj::kDict, "SETITEM"), kv);
          break;
        }
        case 'u': {  // SETITEMS
          auto kvs = pop_mark();
          set_items(expect(top(), Obj::kDict, "SETITEMS"), kvs);
          break;
        }
        case 'c': {  // GLOBAL "module\nname\n"
          Obj* g = make(Obj::kGlobal);
          std::string module = line();
          g->s = module + "." + line();
          push(g);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          auto mn = pop_n(2);
          Obj* g = make(Obj::kGlobal);
          g->s =
              expect(mn[0], Obj::kStr, "STACK_GLOBAL")->s + "." + expect(mn[1], Obj::kStr, "STACK_GLOBAL")->s;
          push(g);
          break;
        }
        case 'R':     // REDUCE
        case 0x81: {  // NEWOBJ
          Obj* args = pop();
          Obj* fn = pop();
          push(reduce(fn, expect(args, Obj::kTuple, "REDUCE")->items));
          break;
        }
        case 'b': {  // BUILD: obj.__setstate__(state)
          Obj* state = pop();
          build(top(), state);
          break;
        }
        case 'Q':
          push(persistent_load(pop()));
          break;  // BINPERSID
        case 'q':
          memo_[le(1)] = top();
          break;  // BINPUT
        case 'r':
          memo_[le(4)] = top();
          break;  // LONG_BINPUT
        case 0x94:
          memo_[memo_.size()] = top();
          break;  // MEMOIZE
        case 'h':
          push(memo(le(1)));
          break;  // BINGET
        case 'j':
          push(memo(le(4)));
          break;  // LONG_BINGET
        default:
          fail("unsupported pickle opcode 0x" + hex(op) + " (not a state dict torch.save wrote?)");
      }
    }
  }

 private:
  Obj* make(Obj::Kind k) { return heap_.make(k); }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error("fx::read_state_dict: " + path_ + ": " + what + " at byte " + std::to_string(pos_ - 1) +
                " of its pickle");
  }
  static std::string hex(uint8_t b) {
    const char* digits = "0123456789abcdef";
    return {digits[b >> 4], digits[b & 15]};
  }

  const char* bytes(size_t n) {
    if (static_cast<size_t>(end_ - p_) < n) fail("truncated pickle");
    const char* at = p_;
    p_ += n;
    pos_ += n;
    return at;
  }
  uint8_t u8() { return static_cast<uint8_t>(*bytes(1)); }
  uint64_t le(size_t n) {
    const char* b = bytes(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[k])) << (8 * k);
    return v;
  }
  std::string line() {
    const char* start = p_;
    while (p_ < end_ && *p_ != '\n') ++p_, ++pos_;
    if (p_ == end_) fail("truncated GLOBAL");
    std::string s(start, p_);
    ++p_, ++pos_;
    return s;
  }

  Obj* boolean(bool b) {
    Obj* o = make(Obj::kBool);
    o->i = b;
    return o;
  }
  Obj* integer(int64_t v) {
    Obj* o = make(Obj::kInt);
    o->i = v;
    return o;
  }
  Obj* long_int(uint64_t n) {
    if (n > 8) fail("integer of " + std::to_string(n) + " bytes does not fit in 64 bits");
    const char* b = bytes(n);
    uint64_t v = 0;
    for (size_t k = 0; k < n; ++k) v |= static_cast<uint64_t>(static_cast<uint8_t>(b[k])) << (8 * k);
    if (n > 0 && n < 8 && (static_cast<uint8_t>(b[n - 1]) & 0x80)) v |= ~uint64_t{0} << (8 * n);  // sign
    return integer(static_cast<int64_t>(v));
  }
  Obj* binfloat() {
    const char* b = bytes(8);
    uint64_t bits = 0;
    for (size_t k = 0; k < 8; ++k) bits = (bits << 8) | static_cast<uint8_t>(b[k]);  // big-endian
    Obj* o = make(Obj::kFloat);
    std::memcpy(&o->d, &bits, sizeof bits);
    return o;
  }
  Obj* str(Obj::Kind k, uint64_t n) {
    if (n > static_cast<uint64_t>(end_ - p_)) fail("truncated string");
    Obj* o = make(k);
    o->s.assign(bytes(n), n);
    return o;
  }
  Obj* sequence(Obj::Kind k, std::vector<Obj*> items) {
    Obj* o = make(k);
    o->items = std::move(items);
    return o;
  }

  void push(Obj* o) { stack_.push_back(o); }
  Obj* top() {
    if (stack_.size() <= (marks_.empty() ? 0 : marks_.back())) fail("stack underflow");
    return stack_.back();
  }
  Obj* pop() {
    Obj* o = top();
    stack_.pop_back();
    return o;
  }
  std::vector<Obj*> pop_n(size_t n) {
    const size_t floor = marks_.empty() ? 0 : marks_.back();
    if (stack_.size() < floor + n) fail("stack underflow");
    std::vector<Obj*> out(stack_.end() - static_cast<std::ptrdiff_t>(n), stack_.end());
    stack_.resize(stack_.size() - n);
    return out;
  }
  std::vector<Obj*> pop_mark() {
    if (marks_.empty()) fail("no MARK");
    const size_t m = marks_.back();
    marks_.pop_back();
    std::vector<Obj*> out(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return out;
  }
  Obj* memo(uint64_t k) {
    auto it = memo_.find(k);
    if (it == memo_.end()) fail("memo entry " + std::to_string(k) + " read before it is written");
    return it->second;
  }
  Obj* expect(Obj* o, Obj::Kind k, const char* op) {
    if (o->kind != k) fail(std::string(op) + " expects " + a_kind(k) + ", got " + a_kind(o->kind));
    return o;
  }
  void set_items(Obj* dict, const std::vector<Obj*>& kvs) {
    if (kvs.size() % 2) fail("odd number of items for a dict");
    for (size_t k = 0; k < kvs.size(); k += 2) {
      if (kvs[k]->kind == Obj::kStr) {  // a key seen before keeps its place (a state dict has thousands)
        auto [at, fresh] = str_keys_[dict].try_emplace(kvs[k]->s, dict->entries.size());
        if (!fresh) {
          dict->entries[at->second].second = kvs[k + 1];
          continue;
        }
      }
      dict->entries.emplace_back(kvs[k], kvs[k + 1]);
    }
  }

  // The callables a state dict calls; any other global is refused.
  Obj* reduce(Obj* fn, const std::vector<Obj*>& args) {
    const std::string& name = expect(fn, Obj::kGlobal, "REDUCE")->s;
    if (name == "collections.OrderedDict") {
      if (!args.empty()) fail("collections.OrderedDict with arguments");
      return make(Obj::kDict);
    }
    if (name == "torch._utils._rebuild_tensor_v2" || name == "torch._utils._rebuild_tensor") {
      // (storage, storage_offset, size, stride[, requires_grad, backward_hooks[, metadata]])
      if (args.size() < 4) fail(name + " with " + std::to_string(args.size()) + " arguments");
      const at::Tensor& storage = expect(args[0], Obj::kStorage, name.c_str())->tensor;
      const int64_t offset = expect(args[1], Obj::kInt, name.c_str())->i;
      std::vector<int64_t> size = int_tuple(args[2], name), stride = int_tuple(args[3], name);
      if (size.size() != stride.size()) fail(name + ": size and stride differ in length");
      int64_t last = offset;  // the furthest element the view reaches
      bool empty = false;
      for (size_t k = 0; k < size.size(); ++k) {
        if (size[k] < 0 || stride[k] < 0) fail(name + ": negative size or stride");
        int64_t reach = 0;
        if (size[k] == 0)
          empty = true;
        else if (__builtin_mul_overflow(size[k] - 1, stride[k], &reach) ||
                 __builtin_add_overflow(last, reach, &last))
          fail(name + ": size and stride reach beyond 64-bit offsets");
      }
      if (offset < 0 || (!empty && last >= storage.numel()))
        fail(name + ": the tensor reaches element " + std::to_string(last) + " of a storage of " +
             std::to_string(storage.numel()));
      return tensor(at::empty({0}, storage.options()).set_(storage.storage(), offset, size, stride));
    }
    if (name == "torch.jit._pickle.restore_type_tag") {  // (value, type string): LibTorch's typed containers
      if (args.empty()) fail(name + " without arguments");
      return args[0];
    }
    if (name == "torch._utils._rebuild_parameter") {  // (data, requires_grad, backward_hooks)
      if (args.empty()) fail(name + " without arguments");
      return tensor(expect(args[0], Obj::kTensor, name.c_str())->tensor);
    }
    fail("refusing to call " + name + ": a state dict holds only tensors in a dict");
  }
  Obj* tensor(at::Tensor t) {
    Obj* o = make(Obj::kTensor);
    o->tensor = std::move(t);
    return o;
  }
  std::vector<int64_t> int_tuple(Obj* o, const std::string& where) {
    std::vector<int64_t> out;
    for (const auto& e : expect(o, Obj::kTuple, where.c_str())->items)
      out.push_back(expect(e, Obj::kInt, where.c_str())->i);
    return out;
  }

  // BUILD: Python sets the OrderedDict's `_metadata` (per-module versions,
  // which only old BatchNorm checkpoints need); a state dict's keys and
  // tensors are complete without it.
  void build(Obj* obj, Obj*) {
    if (obj->kind != Obj::kDict && obj->kind != Obj::kTensor) fail("BUILD on " + a_kind(obj->kind));
  }

  // ('storage', torch.<X>Storage, key, location, numel): record data/<key>.
  Obj* persistent_load(Obj* pid) {
    const auto& t = expect(pid, Obj::kTuple, "BINPERSID")->items;
    if (t.size() != 5 || t[0]->kind != Obj::kStr || t[0]->s != "storage") fail("unknown persistent id");
    const std::string& key = expect(t[2], Obj::kStr, "BINPERSID")->s;
    if (auto it = storages_.find(key); it != storages_.end()) return it->second;
    const c10::ScalarType dtype = storage_dtype(expect(t[1], Obj::kGlobal, "BINPERSID")->s, path_);
    const int64_t numel = expect(t[4], Obj::kInt, "BINPERSID")->i;
    const std::string record = "data/" + key;
    if (!archive_.hasRecord(record)) fail("missing record " + record);
    auto [data, nbytes] = archive_.getRecord(record);
    const size_t item = c10::elementSize(dtype);
    if (numel < 0 || nbytes != static_cast<size_t>(numel) * item)
      fail("record " + record + " has " + std::to_string(nbytes) + " bytes for " + std::to_string(numel) +
           " " + c10::toString(dtype) + " elements");
    Obj* o = make(Obj::kStorage);
    if (nbytes == 0) {
      o->tensor = at::empty({numel}, at::TensorOptions().dtype(dtype));
    } else {
      // The record's own buffer (CPU-allocator memory, so aligned) becomes the
      // storage: no second copy of every weight.
      auto buffer = std::make_shared<at::DataPtr>(std::move(data));
      o->tensor = at::from_blob(
          buffer->get(), {numel}, [buffer](void*) mutable { buffer.reset(); },
          at::TensorOptions().dtype(dtype));
    }
    storages_[key] = o;
    return o;
  }

  std::string path_;
  caffe2::serialize::PyTorchStreamReader& archive_;
  Heap& heap_;
  const char* p_;
  const char* end_;
  size_t pos_ = 0;
  std::vector<Obj*> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, Obj*> memo_;
  std::unordered_map<std::string, Obj*> storages_;
  // A dict's str keys and their places in its entries (a state dict has
  // thousands); only dicts have one.
  std::unordered_map<const Obj*, std::unordered_map<std::string, size_t>> str_keys_;
};

}  // namespace

namespace {

// torch.save (torch >= 2.1) records the byte order of the tensor data in a
// "byteorder" record, "little" or "big"; without one torch.load takes it as
// little-endian. The records are read as they are, so a file of the other
// order than this machine's is refused rather than read wrong.
void check_byteorder(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name) {
  std::string order = "little";
  if (archive.hasRecord("byteorder")) {
    auto [data, size] = archive.getRecord("byteorder");
    order.assign(static_cast<const char*>(data.get()), size);
    if (order != "little" && order != "big")
      throw Error("fx::read_state_dict: " + name + ": unknown byte order '" + order +
                  "' in its byteorder record (torch.save writes little or big)");
  }
  const std::string native = std::endian::native == std::endian::little ? "little" : "big";
  if (order != native)
    throw Error("fx::read_state_dict: " + name + " holds " + order +
                "-endian tensors; fxcpp reads only this " + "machine's byte order (" + native +
                "-endian): load and save it again with torch on a " + native + "-endian machine");
}

// torch.load of the archive's data.pkl.
void unpickle(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name, Pickle& out) {
  at::DataPtr pickle;
  size_t size = 0;
  try {
    if (!archive.hasRecord("data.pkl"))
      throw Error("fx::read_state_dict: " + name + " has no data.pkl: not a file written by torch.save");
    check_byteorder(archive, name);
    std::tie(pickle, size) = archive.getRecord("data.pkl");
  } catch (const c10::Error& e) {
    throw Error("fx::read_state_dict: cannot read data.pkl of " + name + ": " + e.what_without_backtrace());
  }
  out.top = Unpickler(name, archive, out.heap, static_cast<const char*>(pickle.get()), size).run();
}

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_archive(const std::string& path,
                                                                     const char* who) {
  if (!std::ifstream(path)) throw Error(std::string(who) + ": cannot open " + path);
  try {
    return std::make_unique<caffe2::serialize::PyTorchStreamReader>(path);
  } catch (const c10::Error& e) {
    throw Error(std::string(who) + ": cannot read " + path +
                " as a torch.save zip archive (torch.save(..., _use_new_zipfile_serialization=False) files "
                "are not supported): " +
                e.what_without_backtrace());
  }
}

}  // namespace

StateDict detail::read_state_dict(caffe2::serialize::PyTorchStreamReader& archive, const std::string& name) {
  Pickle pickle;
  unpickle(archive, name, pickle);
  const Obj* top = pickle.top;
  if (top->kind != Obj::kDict)
    throw Error("fx::read_state_dict: " + name + " holds " + a_kind(top->kind) +
                ", not a state dict; save model.state_dict()");
  StateDict out;
  for (const auto& [k, v] : top->entries) {
    if (k->kind != Obj::kStr || v->kind != Obj::kTensor)
      throw Error("fx::read_state_dict: " + name + " maps " + a_kind(k->kind) + " to " + a_kind(v->kind) +
                  (k->kind == Obj::kStr ? " ('" + k->s + "')" : std::string()) +
                  "; a state dict maps names to tensors");
    out.emplace_back(k->s, v->tensor);
  }
  return out;
}

std::vector<at::Tensor> read_tensors(const std::string& path) {
  auto archive = open_archive(path, "fx::read_tensors");
  Pickle pickle;
  unpickle(*archive, path, pickle);
  const Obj* top = pickle.top;
  if (top->kind == Obj::kTensor) return {top->tensor};
  if (top->kind != Obj::kList && top->kind != Obj::kTuple)
    throw Error("fx::read_tensors: " + path + " holds " + a_kind(top->kind) +
                ", not a tensor or a list of tensors; save one with torch.save([x, y], path)");
  std::vector<at::Tensor> out;
  for (size_t i = 0; i < top->items.size(); ++i) {
    if (top->items[i]->kind != Obj::kTensor)
      throw Error("fx::read_tensors: item " + std::to_string(i) + " of " + path + " is " +
                  a_kind(top->items[i]->kind) + ", not a tensor");
    out.push_back(top->items[i]->tensor);
  }
  return out;
}

StateDict read_state_dict(const std::string& path) {
  auto archive = open_archive(path, "fx::read_state_dict");
  return detail::read_state_dict(*archive, path);
}

}  // namespace fx
