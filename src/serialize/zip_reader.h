#pragma once
// The torch.save / torch.export.save zip archive of a stream or of bytes,
// read through an adapter that never throws.
//
// LibTorch's IStreamAdapter throws when a read runs past the end of the
// stream, as miniz's reads do on a truncated or corrupt archive. The
// exception then leaves miniz's C code in the middle of mz_zip_reader_init,
// which never frees the archive state it has allocated: every such file
// leaked it. Given a short read instead, miniz rejects the archive and frees
// its state, and PyTorchStreamReader throws its c10::Error from C++.

#include <caffe2/serialize/inline_container.h>

#include <istream>
#include <memory>
#include <string_view>

namespace fx::detail {

// Both throw c10::Error when the bytes are not such an archive. The stream,
// or the bytes, must outlive the reader.
std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_zip(std::istream& in);
std::unique_ptr<caffe2::serialize::PyTorchStreamReader> open_zip(std::string_view bytes);

}  // namespace fx::detail
