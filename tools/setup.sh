#!/usr/bin/env bash
# Installs what cxxgraph needs on Debian 12 (bookworm), by package name, and
# only what is missing. Safe to run again.
set -euo pipefail

packages=(
  cmake ninja-build g++ python3
  clang-19 libclang-19-dev llvm-19-dev   # the generator: clang 19 + plugin API
  libclang-rt-19-dev                     # libFuzzer and clang's sanitizers (tools/fuzz.sh)
  libgtest-dev                           # tests
  libopenblas-dev                        # CPU BLAS: double matmul
  libdnnl-dev                            # oneDNN: float GEMM (matmul, conv2d)
  libdw-dev                              # source lines in graph::trace's warnings
  graphviz                               # renders the generated .dot files
  libbenchmark-dev libeigen3-dev         # tools/bench.sh: Google Benchmark, the Eigen reference
  libtorch-dev python3-torch             # tools/bench.sh: the LibTorch and TorchScript columns
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "setup: all packages present"
fi
