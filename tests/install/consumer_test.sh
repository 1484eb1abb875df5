#!/usr/bin/env bash
# Installs the build in BUILD_DIR into a scratch prefix, then builds and runs
# the consumer project against it with find_package(fedldp).
#   tests/install/consumer_test.sh BUILD_DIR
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
for f in bin/fedldp include/fedldp/base/status.h lib/cmake/fedldp/fedldpConfig.cmake \
         lib/libfedldp_mechanism.a; do
  [[ -e "$scratch/prefix/$f" ]] || { echo "not installed: $f" >&2; exit 1; }
done
"$scratch/prefix/bin/fedldp" --version
cmake -S "$here/consumer" -B "$scratch/consumer" -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/consumer" >/dev/null
out=$("$scratch/consumer/consumer")
echo "$out"
# PM is unbiased (mean 0.50 of 100,000 draws at 0.5, sd 0.006); 3 reports
# at eps 2 compose to 6.
[[ $out == *"pm mean 0.50, report of 8, total eps 6"* ]]
# The Python package, when the build has it, imports from the prefix.
for site in "$scratch"/prefix/lib/python3*/dist-packages; do
  [[ -d $site ]] || continue
  PYTHONPATH=$site /usr/bin/python3 -c \
    'import fedldp; print("python:", fedldp.__file__.split("/prefix/")[1], fedldp.__version__)'
done
