#!/usr/bin/env bash
# Installs what cxxgraph needs on Debian 12 (bookworm), by package name, and
# only what is missing. Safe to run again.
#
#   tools/setup.sh           what building and testing need (tools/dev.sh)
#   tools/setup.sh --bench   that, plus the benchmarks' comparison libraries
#                            (tools/bench.sh): Google Benchmark, Eigen, and
#                            python3-venv for the venv with PyTorch 2.x from
#                            PyPI that tools/torch_venv.sh makes (LibTorch and
#                            TorchScript columns); kept out of the default
#                            install, the build skips what needs them.
#   tools/setup.sh --onnx    that, plus libonnx-dev (with libprotobuf-dev, which it
#                            does not pull in) and python3-venv: the ONNX
#                            export (graph-export, docs/onnx.md) and its tests,
#                            built when found (CXXGRAPH_ONNX=AUTO)
set -euo pipefail

bench=0 onnx=0
for arg in "$@"; do
  case "$arg" in
    --bench) bench=1 ;;
    --onnx) onnx=1 ;;
    -h|--help) sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown option '$arg'; tools/setup.sh --help shows the usage" >&2; exit 2 ;;
  esac
done

packages=(
  cmake ninja-build g++ python3
  clang-19 libclang-19-dev llvm-19-dev   # the generator: clang 19 + plugin API
  libclang-rt-19-dev                     # libFuzzer and clang's sanitizers (tools/fuzz.sh)
  libgtest-dev                           # tests
  libopenblas-dev                        # CPU BLAS: double matmul
  libdnnl-dev                            # oneDNN: float GEMM (matmul, conv2d)
  libdw-dev                              # source lines in graph::trace's warnings
  libopenmpi-dev openmpi-bin             # graph::dist: the MPI backend and mpirun (tests: label mpi)
  graphviz                               # renders the generated .dot files
)
if ((bench)); then
  packages+=(
    libbenchmark-dev libeigen3-dev       # bench_suite: Google Benchmark, the Eigen reference
    python3-venv                         # tools/torch_venv.sh: PyTorch 2.x from PyPI (LibTorch, TorchScript)
  )
fi
if ((onnx)); then
  packages+=(libonnx-dev libprotobuf-dev python3-venv)   # the ONNX schema + checker; the test's venv (ONNX Runtime)
fi

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
