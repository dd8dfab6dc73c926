#!/usr/bin/env bash
# Fails when a C++ file of the library (src/, include/) is not as
# clang-format (Debian 12's, 14) writes it with the repository's
# .clang-format. Fix with: clang-format -i <file>.
set -euo pipefail
cd "$(dirname "$0")/.."
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.h' 'include/*.h')
if ! clang-format --dry-run --Werror "${files[@]}" 2>/tmp/fxcpp-format.log; then
  grep -E '^[^ ].*: (error|warning):' /tmp/fxcpp-format.log | cut -d: -f1 | sort -u | sed 's/^/not clang-format clean: /' >&2
  echo "run: clang-format -i <file> (${#files[@]} files checked)" >&2
  exit 1
fi
echo "clang-format: ${#files[@]} files clean"
