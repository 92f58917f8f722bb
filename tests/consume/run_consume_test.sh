#!/usr/bin/env bash
# Builds a user project that includes the cxxgraph source tree
# (add_subdirectory or FetchContent, tests/consume/<style>/CMakeLists.txt),
# with <compiler> compiling the user's target, and runs it: the program exits
# 0 only if the compiled graph ran and matched eager mode (the sources are
# tests/install/user_project's).
#
# To keep CI short, the included cxxgraph loads the plugin and graph-codegen
# this build made (CXXGRAPH_GENERATOR_PLUGIN/_CODEGEN: an imported plugin
# target, found through the same global properties as a built one), leaves
# out CUDA and builds with no build type (the kernels still get -O2); only the targets
# `app` needs are built (about the runtime and IR libraries), and the eager
# kernels' instruction-set variants keep the file flags instead of GCC's
# forced -O3 (GRAPH_ISA_FILE_FLAGS, graph/cpu_isa.h): the test is about the
# build integration, and those variants were most of its compile time.
#
# With `compile` as the sixth argument it stops before linking: it configures,
# runs the plugin and compiles the user's sources and generated kernels, but
# builds no cxxgraph library. CI runs add_subdirectory that way and FetchContent
# (add_subdirectory underneath) all the way, so the runtime is built once.
# usage: run_consume_test.sh <add_subdirectory|fetchcontent> <c++ compiler>
#                            <cxxgraph source dir> <cxxgraph build dir> <scratch dir> [run|compile]
set -euo pipefail
style=$1
cxx=$2
source_dir=$(cd "$3" && pwd)
build=$(cd "$4" && pwd)
scratch=$5
mode=${6:-run}
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch/src"
cp "$here/../install/user_project/"*.cpp "$here/../install/user_project/"*.h "$scratch/src/"
cp "$here/$style/CMakeLists.txt" "$scratch/src/"

cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_CXX_COMPILER="$cxx" \
  -DCXXGRAPH_SOURCE_DIR="$source_dir" -DCXXGRAPH_CUDA=OFF -DCMAKE_CXX_FLAGS=-DGRAPH_ISA_FILE_FLAGS \
  -DCXXGRAPH_GENERATOR_PLUGIN="$build/plugin/cxxgraph-plugin.so" \
  -DCXXGRAPH_GENERATOR_CODEGEN="$build/tools/graph-codegen" >"$scratch/configure.log" || {
  cat "$scratch/configure.log"; echo "FAIL: configure"; exit 1; }
# Included, cxxgraph builds no tests, examples or benchmarks of its own.
if grep -q '^CXXGRAPH_BUILD_TESTS:BOOL=ON' "$scratch/build/CMakeCache.txt"; then
  echo "FAIL: an included cxxgraph turned its tests on"; exit 1
fi
if [ "$mode" = compile ]; then
  # The plugin's step, then each of the app's objects, each by its own
  # command: through ninja, every step of app waits for the libraries it links.
  objects=$(ninja -C "$scratch/build" -t targets all | sed -n 's|^\(CMakeFiles/app[^:]*\.o\): .*|\1|p')
  [ -n "$objects" ] || { echo "FAIL: no object files of app"; exit 1; }
  for o in cxxgraph/app/layer.graph.cpp $objects; do
    (cd "$scratch/build" && eval "$(ninja -t commands "$o" | tail -1)") || { echo "FAIL: compiling $o"; exit 1; }
  done
else
  cmake --build "$scratch/build" --target app
fi
# No build type: the generated kernels are still compiled optimized.
ninja -C "$scratch/build" -t commands app | grep -e '-c [^ ]*layer\.graph\.cpp' | grep -q -- ' -O2 ' || {
  echo "FAIL: the generated kernels are not compiled with -O2 without a build type"; exit 1; }
test -f "$scratch/build/cxxgraph/app/layer.graph.cpp" || {
  echo "FAIL: no generated kernels in $scratch/build/cxxgraph/app"; exit 1; }
if [ "$mode" = compile ]; then
  echo "consume test ($style, $cxx): OK (compiled, not linked)"
  exit 0
fi
"$scratch/build/app"
echo "consume test ($style, $cxx): OK"
