#!/usr/bin/env bash
# Makes, once, the Python venv with PyTorch 2.x from PyPI that tools/bench.sh
# compares with (its LibTorch C++ column links the wheel's libtorch_cpu; its
# TorchScript column runs in this venv), and prints the venv's python.
#
#   tools/torch_venv.sh        -> /root/.cache/cxxgraph/torch-2.15.0/bin/python
#
# CXXGRAPH_TORCH_VERSION (default 2.15.0) and CXXGRAPH_TORCH_VENV (default
# ~/.cache/cxxgraph/torch-<version>) override the defaults.
#
# PyPI's Linux torch wheel is built for CUDA and its dependencies are ~3 GB of
# nvidia-* wheels. The benchmarks run on the CPU, so the wheel is installed
# --no-deps with its small pure-Python dependencies and the few CUDA libraries
# that `import torch` needs and Debian's CUDA 13 packages lack (NCCL newer
# than Debian's, cuSPARSELt, NVSHMEM, cuFile: ~0.5 GB); the rest (cudart,
# cuBLAS, cuDNN 9, CUPTI) come from the system. Where that import fails (no
# system CUDA 13), the wheel is installed with all its dependencies instead.
set -euo pipefail
version=${CXXGRAPH_TORCH_VERSION:-2.15.0}
venv=${CXXGRAPH_TORCH_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/cxxgraph/torch-$version}
py=$venv/bin/python
say() { echo "torch_venv: $*" >&2; }
works() { [ -x "$py" ] && "$py" -c "import torch; assert torch.__version__.startswith('$version')" >/dev/null 2>&1; }

if works; then echo "$py"; exit 0; fi
say "making $venv with torch $version from PyPI (once; about 1 GB to download)"
/usr/bin/python3 -m venv "$venv"  # Debian's python3-venv (tools/setup.sh --bench)
pip=("$py" -m pip install -q --disable-pip-version-check --no-warn-conflicts)  # conflicts: the skipped nvidia-* pins
"${pip[@]}" --no-deps "torch==$version"
# The wheel's own pins (Requires-Dist of torch 2.15.0; cuFile via cuda-toolkit[cufile]).
"${pip[@]}" filelock 'typing-extensions>=4.13.0' 'setuptools>=77.0.3' 'sympy>=1.13.3' 'networkx>=2.5.1' jinja2 \
  'fsspec>=0.8.5' numpy
"${pip[@]}" --no-deps 'nvidia-nccl-cu13==2.30.7' 'nvidia-cusparselt-cu13==0.8.1' 'nvidia-nvshmem-cu13==3.7.2' \
  'nvidia-cufile==1.17.1.22.*'
if ! works; then
  say "import torch failed with the system's CUDA libraries: installing the wheel's full dependencies (~3 GB)"
  "${pip[@]}" "torch==$version"
fi
works || { say "import torch still fails in $venv"; exit 1; }
echo "$py"
