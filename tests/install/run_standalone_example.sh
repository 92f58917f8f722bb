#!/usr/bin/env bash
# Builds examples/standalone against an installed cxxgraph exactly as its
# CMakeLists.txt says a user would, with clang 19 as the target's compiler
# (run_install_test.sh covers GCC), and runs it.
# usage: run_standalone_example.sh <cxxgraph build dir> <scratch dir> <examples/standalone>
set -euo pipefail
build=$1
scratch=$2
src=$3
rm -rf "$scratch"
mkdir -p "$scratch"
cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
test -x "$scratch/prefix/bin/graph-inspect" || { echo "FAIL: graph-inspect is not installed"; exit 1; }
cmake -S "$src" -B "$scratch/build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build"
"$scratch/build/classifier"
# The installed graph-inspect reads the user's build.
"$scratch/prefix/bin/graph-inspect" --build "$scratch/build" list
echo "standalone example: OK"
