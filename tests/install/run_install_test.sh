#!/usr/bin/env bash
# Installs the built cxxgraph into a fresh prefix, builds a user project
# against it with find_package(CxxGraph) (target compiled by GCC, generator by
# clang 19 + plugin), runs it, then checks that editing a header included by
# the annotated source re-runs the generator. With MPI, a graph::dist program
# from the package runs on two ranks.
# usage: run_install_test.sh <cxxgraph build dir> <scratch dir>
set -euo pipefail
build=$1
scratch=$2
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$scratch"
mkdir -p "$scratch"
cp -r "$here/user_project" "$scratch/src"

cmake --install "$build" --prefix "$scratch/prefix" >/dev/null
cmake -S "$scratch/src" -B "$scratch/build" -G Ninja -DCMAKE_CXX_COMPILER=g++ \
  -DCMAKE_PREFIX_PATH="$scratch/prefix" >/dev/null
cmake --build "$scratch/build"
"$scratch/build/app"
if [ -x "$scratch/build/dist_app" ]; then  # the package was built with MPI
  OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl_vader_single_copy_mechanism=none \
    mpirun --oversubscribe --bind-to none -np 2 "$scratch/build/dist_app" | tee "$scratch/dist.log"
  grep -q "dist app: OK" "$scratch/dist.log" || { echo "FAIL: cxxgraph::dist from the package"; exit 1; }
elif grep -rq "set(CXXGRAPH_HAS_MPI ON)" "$scratch/prefix"/lib*/cmake/CxxGraph/CxxGraphConfig.cmake; then
  echo "FAIL: cxxgraph was built with MPI but the package has no cxxgraph::dist"; exit 1
fi

# Nothing to do on a second build; a header edit re-runs the generator.
cmake --build "$scratch/build" | tee "$scratch/rebuild0.log"
if grep -q "cxxgraph: lowering" "$scratch/rebuild0.log"; then
  echo "FAIL: the generator re-ran with nothing changed"; exit 1
fi
sleep 1
echo "inline constexpr float kLeak2 = 0.5f;" >> "$scratch/src/layer_config.h"
cmake --build "$scratch/build" | tee "$scratch/rebuild1.log"
grep -q "cxxgraph: lowering \[\[graph::static\]\] functions in layer.cpp" "$scratch/rebuild1.log" || {
  echo "FAIL: editing layer_config.h did not re-run the generator"; exit 1; }
"$scratch/build/app"
echo "install test: OK"
