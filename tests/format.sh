#!/usr/bin/env bash
# Every tracked C++ file in .clang-format's style, with Debian 12's clang-format (14: other
# versions format some constructs differently).
#
#   tests/format.sh           rewrites the files in place
#   tests/format.sh --check   changes nothing; lists each file that differs and exits 1
set -euo pipefail
cd "$(dirname "$0")/.."
tool=$(command -v clang-format-14 || command -v clang-format || true)
if [ -z "$tool" ]; then
  echo "format.sh: clang-format is not installed (deploy/install-deps.sh installs it)" >&2
  exit 2
fi
mapfile -t files < <(git ls-files '*.cc' '*.h')
if [ "${1:-}" = "--check" ]; then
  bad=()
  for f in "${files[@]}"; do
    if ! "$tool" --style=file --dry-run --Werror "$f" >/dev/null 2>&1; then bad+=("$f"); fi
  done
  if [ ${#bad[@]} -gt 0 ]; then
    printf 'format.sh: %d of %d files are not in .clang-format style (tests/format.sh fixes them):\n' \
      ${#bad[@]} ${#files[@]} >&2
    printf '  %s\n' "${bad[@]}" >&2
    exit 1
  fi
  echo "format.sh: ${#files[@]} files in .clang-format style ($("$tool" --version | head -1))"
elif [ $# -eq 0 ]; then
  "$tool" --style=file -i "${files[@]}"
else
  echo "usage: tests/format.sh [--check]" >&2
  exit 2
fi
