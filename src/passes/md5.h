#pragma once
// MD5 (RFC 1321), for FxGraphDrawer's node colours: torch.fx picks a colour
// from the first 8 hex digits of hashlib.md5(target name).

#include <array>
#include <cstdint>
#include <string_view>

namespace fx::passes::detail {

std::array<uint8_t, 16> md5(std::string_view data);

}  // namespace fx::passes::detail
