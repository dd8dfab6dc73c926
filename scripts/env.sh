# Sourced by the other scripts: where fxcpp's Python environment lives and
# the CMake arguments that point a build at its LibTorch.
#
# The venv is outside the clone, named after a hash of python/requirements.txt,
# so every clone on a machine shares one 5 GB install and a change of pins
# makes a new one. FXCPP_VENV overrides the place.
fxcpp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
fxcpp_pins_hash=$(sha256sum "$fxcpp_root/python/requirements.txt" | cut -c1-12)
FXCPP_VENV=${FXCPP_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/fxcpp/venv-$fxcpp_pins_hash}
FXCPP_PYTHON=$FXCPP_VENV/bin/python
# The torch wheel's CMake config: the same one an unpacked LibTorch download has.
FXCPP_TORCH_CMAKE=
if [ -x "$FXCPP_PYTHON" ]; then
  FXCPP_TORCH_CMAKE=$("$FXCPP_PYTHON" -c 'import torch.utils; print(torch.utils.cmake_prefix_path)' 2>/dev/null || true)
fi
fxcpp_cmake_args=(-DCMAKE_PREFIX_PATH="$FXCPP_TORCH_CMAKE" -DFXCPP_PYTHON="$FXCPP_PYTHON")
export FXCPP_VENV FXCPP_PYTHON FXCPP_TORCH_CMAKE
# The sanitizer build (scripts/test.sh, scripts/fuzz.sh): clang-16 with
# AddressSanitizer, UndefinedBehaviorSanitizer and libFuzzer's coverage
# (FXCPP_FUZZ), so that one build of fxcpp serves both the sanitizer tests
# and the fuzzers. -O1 -g1 keeps the line tables that reports print, and
# asserts stay on (no NDEBUG).
fxcpp_sanitizer_args=(-DCMAKE_CXX_COMPILER=clang++-16 -DCMAKE_BUILD_TYPE=RelWithDebInfo
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1" -DCMAKE_UNITY_BUILD=ON -DFXCPP_FUZZ=ON -DFXCPP_WERROR=ON
  -DFXCPP_BUILD_BENCH=OFF -DFXCPP_BUILD_EXAMPLES=OFF -DFXCPP_BUILD_TOOLS=OFF)
