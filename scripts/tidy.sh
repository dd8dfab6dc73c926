#!/usr/bin/env bash
# clang-tidy, with the checks .clang-tidy names, over the sources of the
# fxcpp library (src/) and the headers they include (include/fx/, src/),
# from a clang-16 build's compile_commands.json (default: build-sanitize,
# which scripts/test.sh has just built). A unity build lists its batches
# (8 files each) rather than the files: LibTorch's headers are parsed once
# per batch, as in the build. Any finding fails the run.
#   bash scripts/tidy.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build-sanitize}
if [ ! -f "$build/compile_commands.json" ]; then
  echo "tidy: $build/compile_commands.json is missing; configure a clang-16 build there first" \
    "(scripts/test.sh's sanitizer build: cmake -S . -B build-sanitize \"\${fxcpp_sanitizer_args[@]}\" ...)" >&2
  exit 1
fi
source scripts/env.sh
# python/requirements.txt pins it: from 21 on, clang-tidy does not match its
# checks against code in system headers, and LibTorch's are most of each unit.
tidy=$FXCPP_VENV/bin/clang-tidy
[ -x "$tidy" ] || { echo "tidy: $tidy is not installed (bash scripts/setup.sh installs it)" >&2; exit 1; }
# The library's translation units: the entries built into its layers' object
# libraries (CMakeFiles/fxcpp_<layer>.dir; CMakeLists.txt's fxcpp_layers).
mapfile -t units < <(python3 - "$build/compile_commands.json" <<'EOF'
import json, re, sys
layer = re.compile(r"CMakeFiles/fxcpp_(ir|core|nn|passes|serialize|codegen|capture|compile|export)\.dir/")
for entry in json.load(open(sys.argv[1])):
    if layer.search(entry.get("output", entry["command"])):
        print(entry["file"])
EOF
)
if [ ${#units[@]} -eq 0 ]; then
  echo "tidy: $build/compile_commands.json has no source of the fxcpp library" >&2
  exit 1
fi
log=$(mktemp -d)
trap 'rm -rf "$log"' EXIT
# One clang-tidy per unit, nproc at a time; each writes its own log so that
# findings do not interleave.
# The units were compiled by clang 16: its sanitizer headers, which this
# clang-tidy's own headers lack, come after those; and clang 22 calls the
# __COUNTER__ in LibTorch's TORCH_WARN_ONCE an extension under -Wpedantic.
extra="--extra-arg=-idirafter$(clang++-16 -print-resource-dir)/include --extra-arg=-Wno-c2y-extensions"
printf '%s\n' "${units[@]}" | nl -ba -w1 -s' ' |
  xargs -P "$(nproc)" -L1 sh -c '"$0" -p "$1" $3 --config-file=.clang-tidy --quiet --warnings-as-errors="*" "$5" >"$2/$4.log" 2>&1 || touch "$2/$4.failed"' \
    "$tidy" "$build" "$log" "$extra" 2>/dev/null || true
failed=0
for f in "$log"/*.failed; do
  [ -e "$f" ] || continue
  failed=$((failed + 1))
  grep -v "warnings generated\|^Suppressed\|^Use -header-filter\|warnings treated as errors" "${f%.failed}.log" || true
done
echo "tidy: ${#units[@]} translation units, $failed with findings"
[ "$failed" -eq 0 ]
