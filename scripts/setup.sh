#!/usr/bin/env bash
# Installs every Debian package fedldp needs (idempotent; as root or with sudo)
# and builds the release configuration into build/release.
#   scripts/setup.sh            install + release build
#   scripts/setup.sh --sanitize also build build/sanitize (ASan + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  libgtest-dev libgmock-dev libbenchmark-dev
  libsodium-dev libcli11-dev zlib1g-dev gnuplot-nox
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

jobs=$(nproc)
build() {  # build DIR EXTRA_CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}
build build/release -DCMAKE_BUILD_TYPE=Release
if [[ "${1:-}" == "--sanitize" ]]; then
  build build/sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDLDP_SANITIZE=ON -DFEDLDP_BUILD_BENCHMARKS=OFF
fi
echo "setup: built build/release${1:+ and build/sanitize}"
