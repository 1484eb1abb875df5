#!/usr/bin/env bash
# Checks that every C++ source and header is as clang-format (.clang-format:
# Google style, 100 columns) leaves it; lists the files that are not.
#   scripts/check-format.sh          check (exit 1 if any file differs)
#   scripts/check-format.sh --fix    format them in place
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v clang-format >/dev/null; then
  echo "check-format: clang-format is missing; run scripts/setup.sh" >&2
  exit 2
fi
mapfile -t files < <(find apps bench fuzz include python src tests \
  \( -name '*.cc' -o -name '*.h' \) -type f | sort)
if [[ "${1:-}" == "--fix" ]]; then
  clang-format -i "${files[@]}"
  echo "check-format: formatted ${#files[@]} files"
  exit 0
fi
bad=()
for f in "${files[@]}"; do
  clang-format --dry-run --Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  echo "check-format: ${#bad[@]} of ${#files[@]} files are not clang-formatted" \
    "(scripts/check-format.sh --fix):" >&2
  printf '  %s\n' "${bad[@]}" >&2
  exit 1
fi
echo "check-format: all ${#files[@]} C++ files clang-formatted"
