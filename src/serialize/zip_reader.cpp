#include "zip_reader.h"

#include <caffe2/serialize/read_adapter_interface.h>

#include <c10/util/Exception.h>
#include <caffe2/serialize/versions.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

namespace fx::detail {

namespace {

// A read past the end returns what there is (nothing past the end).
class StreamAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit StreamAdapter(std::istream& in) : in_(in) {
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    size_ = end > 0 ? static_cast<size_t>(end) : 0;
    in_.clear();
  }
  size_t size() const override { return size_; }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= size_) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, size_ - pos));
    in_.clear();
    in_.seekg(static_cast<std::streamoff>(pos));
    in_.read(static_cast<char*>(buf), static_cast<std::streamsize>(n));
    const std::streamsize got = in_.gcount();
    in_.clear();
    return got > 0 ? static_cast<size_t>(got) : 0;
  }

 private:
  std::istream& in_;
  size_t size_ = 0;
};

class BytesAdapter final : public caffe2::serialize::ReadAdapterInterface {
 public:
  explicit BytesAdapter(std::string_view bytes) : bytes_(bytes) {}
  size_t size() const override { return bytes_.size(); }
  size_t read(uint64_t pos, void* buf, size_t n, const char* /*what*/) const override {
    if (pos >= bytes_.size()) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, bytes_.size() - pos));
    std::memcpy(buf, bytes_.data() + pos, n);
    return n;
  }

 private:
  std::string_view bytes_;
};

// A little-endian unsigned integer of `bytes` (at most 8) bytes.
uint64_t le(const unsigned char* p, int bytes) {
  uint64_t v = 0;
  for (int i = bytes - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

uint32_t crc32(const std::string& data) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : data) c = table[(c ^ b) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

struct Entry {
  std::string name;
  uint16_t method = 0;
  uint32_t crc = 0;
  uint64_t size = 0, local_offset = 0;
};

constexpr uint32_t kZip64 = 0xFFFFFFFFu;  // "the value is in the ZIP64 extra field"

// The sizes and local header offset that an entry's central directory record
// gives as 0xFFFFFFFF, read from its ZIP64 extended information (extra field
// 1: the 8-byte values of those fields, in this order). Python's zipfile
// writes one for every record that starts past 2 GiB, so a GraphModule file
// with more than 2 GiB of tensors has them. False when the field is missing
// or too short.
bool read_zip64_extra(const unsigned char* extra, size_t extra_len, uint64_t& uncompressed,
                      uint64_t& compressed, uint64_t& offset) {
  for (size_t q = 0; q + 4 <= extra_len;) {
    const size_t id = le(extra + q, 2), len = le(extra + q + 2, 2);
    if (q + 4 + len > extra_len) return false;
    if (id == 1) {
      size_t at = q + 4;
      for (uint64_t* v : {&uncompressed, &compressed, &offset}) {
        if (*v != kZip64) continue;
        if (at + 8 > q + 4 + len) return false;
        *v = le(extra + at, 8);
        at += 8;
      }
      return true;
    }
    q += 4 + len;
  }
  return false;
}

// The central directory's entries, or nothing when the bytes are not a zip
// archive this walk understands (miniz then decides: ZIP64 archives, archives
// miniz itself rejects).
std::optional<std::vector<Entry>> central_directory(const caffe2::serialize::ReadAdapterInterface& in) {
  const size_t size = in.size();
  constexpr size_t kEnd = 22;  // the end-of-central-directory record, without its comment
  if (size < kEnd) return std::nullopt;
  const size_t tail_size = std::min<size_t>(size, kEnd + 0xFFFF);
  std::vector<unsigned char> tail(tail_size);
  if (in.read(size - tail_size, tail.data(), tail_size, "") != tail_size) return std::nullopt;
  size_t at = tail_size - kEnd + 1;
  do {  // the last signature in the file, as miniz finds it
    --at;
  } while (at > 0 && le(&tail[at], 4) != 0x06054b50u);
  if (le(&tail[at], 4) != 0x06054b50u) return std::nullopt;
  const uint32_t count = le(&tail[at + 10], 2), cd_size = le(&tail[at + 12], 4),
                 cd_offset = le(&tail[at + 16], 4);
  if (count == 0xFFFF || cd_size == 0xFFFFFFFFu || cd_offset == 0xFFFFFFFFu) return std::nullopt;
  if (uint64_t(cd_offset) + cd_size > size) return std::nullopt;
  std::vector<unsigned char> cd(cd_size);
  if (cd_size && in.read(cd_offset, cd.data(), cd_size, "") != cd_size) return std::nullopt;
  std::vector<Entry> entries;
  size_t p = 0;
  for (uint32_t i = 0; i < count; ++i) {
    if (p + 46 > cd.size() || le(&cd[p], 4) != 0x02014b50u) return std::nullopt;
    const size_t name_len = le(&cd[p + 28], 2), extra = le(&cd[p + 30], 2), comment = le(&cd[p + 32], 2);
    if (p + 46 + name_len + extra + comment > cd.size()) return std::nullopt;
    Entry e;
    e.method = static_cast<uint16_t>(le(&cd[p + 10], 2));
    e.crc = le(&cd[p + 16], 4);
    e.size = le(&cd[p + 20], 4);  // compressed: the bytes a stored record has in the file
    uint64_t uncompressed = le(&cd[p + 24], 4);
    e.local_offset = le(&cd[p + 42], 4);
    if ((e.size == kZip64 || uncompressed == kZip64 || e.local_offset == kZip64) &&
        !read_zip64_extra(&cd[p + 46 + name_len], extra, uncompressed, e.size, e.local_offset))
      return std::nullopt;
    e.name.assign(reinterpret_cast<const char*>(&cd[p + 46]), name_len);
    entries.push_back(std::move(e));
    p += 46 + name_len + extra + comment;
  }
  return entries;
}

// A stored (uncompressed) record's bytes, when its local header is sound and
// its checksum matches; nothing otherwise.
std::optional<std::string> stored_record(const caffe2::serialize::ReadAdapterInterface& in, const Entry& e) {
  unsigned char header[30];
  if (e.method != 0 || in.read(e.local_offset, header, 30, "") != 30 || le(header, 4) != 0x04034b50u)
    return std::nullopt;
  const uint64_t data = e.local_offset + 30 + le(header + 26, 2) + le(header + 28, 2);
  if (data + e.size > in.size()) return std::nullopt;
  std::string bytes(static_cast<size_t>(e.size), '\0');
  if (e.size && in.read(data, bytes.data(), e.size, "") != e.size) return std::nullopt;
  if (crc32(bytes) != e.crc) return std::nullopt;
  return bytes;
}

// PyTorchStreamReader's constructor checks the archive's layout after
// miniz has read it, and when one of those checks throws, its destructor
// never runs and miniz's archive state is lost. The same checks, made here
// first, reject such an archive before miniz sees it: one file at least, the
// first in a folder, a version record of a supported version, and a
// serialization id that reads. Records this walk cannot read (compressed
// ones) are left to PyTorchStreamReader.
void check_layout(const caffe2::serialize::ReadAdapterInterface& in) {
  const auto entries = central_directory(in);
  if (!entries) return;
  TORCH_CHECK(!entries->empty(), "archive does not contain any files");
  const std::string& first = entries->front().name;
  const size_t slash = first.find('/');
  TORCH_CHECK(slash != std::string::npos, "file in archive is not in a subdirectory: ", first);
  const std::string folder = first.substr(0, slash + 1);
  auto find = [&](const std::string& name) -> const Entry* {
    for (const Entry& e : *entries)
      if (e.name == folder + name) return &e;
    return nullptr;
  };
  if (const Entry* id = find(".data/serialization_id"); id && id->method == 0)
    TORCH_CHECK(stored_record(in, *id), "cannot read the archive's serialization id record");
  const Entry* version = find(".data/version");
  if (!version) version = find("version");
  TORCH_CHECK(version, "the archive has no version record (", folder, "version or ", folder,
              ".data/version)");
  if (version->method != 0) return;
  const auto text = stored_record(in, *version);
  TORCH_CHECK(text, "cannot read the archive's version record");
  // Read as std::stoull reads it: blanks, then digits.
  size_t at = 0;
  while (at < text->size() && std::isspace(static_cast<unsigned char>((*text)[at]))) ++at;
  uint64_t v = 0;
  size_t digits = 0;
  while (at < text->size() && digits < 19 && std::isdigit(static_cast<unsigned char>((*text)[at]))) {
    v = v * 10 + static_cast<uint64_t>((*text)[at++] - '0');
    ++digits;
  }
  TORCH_CHECK(digits > 0, "the archive's version record is not a number");
  TORCH_CHECK(v >= caffe2::serialize::kMinSupportedFileFormatVersion &&
                  v <= caffe2::serialize::kMaxSupportedFileFormatVersion,
              "the archive's file format version ", v, " is not one this LibTorch reads (",
              caffe2::serialize::kMinSupportedFileFormatVersion, " to ",
              caffe2::serialize::kMaxSupportedFileFormatVersion, ")");
}

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open(
    std::shared_ptr<caffe2::serialize::ReadAdapterInterface> in) {
  check_layout(*in);
  return std::make_unique<caffe2::serialize::PyTorchStreamReader>(std::move(in));
}

}  // namespace

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_zip(std::istream& in) {
  return open(std::make_shared<StreamAdapter>(in));
}

std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_zip(std::string_view bytes) {
  return open(std::make_shared<BytesAdapter>(bytes));
}

}  // namespace fx::detail
