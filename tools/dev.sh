#!/usr/bin/env bash
# One entry point for people and CI:
#   tools/dev.sh example   install what is missing, build, run the flagship example
#   tools/dev.sh test      install what is missing, build, run the whole test suite
# The build goes to ./build (Ninja, RelWithDebInfo); BUILD_DIR overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}

tools/setup.sh
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build"

case "${1:-example}" in
  example)
    "$build"/examples/example_model
    ;;
  test)
    ctest --test-dir "$build" --output-on-failure -j2
    ;;
  *)
    echo "usage: tools/dev.sh [example|test]" >&2
    exit 2
    ;;
esac
