#!/usr/bin/env bash
# One entry point for people and CI:
#   tools/dev.sh example    install what is missing, build, run the flagship example
#   tools/dev.sh test       install what is missing, build, run the whole test suite,
#                           fuzz the IR parser and the saved-graph loader, 30 s
#                           each side by side (tools/fuzz.sh 30), the tests
#                           that depend on the build type in a Release build
#                           (<build>-rel), the suite in a Debug build
#                           (<build>-debug), then the sanitizer runs below
#   tools/dev.sh sanitize   the sanitizer runs only:
#                           TSan build (<build>-tsan), tests labelled concurrency;
#                           ASan+UBSan build (<build>-asan), the whole test suite
# The build goes to ./build (Ninja, RelWithDebInfo); BUILD_DIR overrides it.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
cmd=${1:-example}

# RelWithDebInfo with line tables only (-g1): backtraces and sanitizer reports
# keep file:line, and the build takes a fifth less time than with -g. For
# stepping through cxxgraph's own code in a debugger, configure a build
# directory of your own with -DCMAKE_BUILD_TYPE=Debug.
# Without a GPU (CI, most desks) the CUDA code is compiled for sm_90 only, the
# card tools/device_check.sh packs for: it still has to compile and link, at
# 40% less nvcc time than the default sm_80 + sm_90 (cmake/CxxGraphCuda.cmake).
cuda_archs=()
if ! nvidia-smi -L >/dev/null 2>&1; then
  cuda_archs=(-DCMAKE_CUDA_ARCHITECTURES=90)
fi
configure() {  # configure <dir> [cmake options...]
  local dir=$1
  shift
  cmake -S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" "${cuda_archs[@]}" "$@"
}

# The tests whose outcome depends on the build type (debug info: trace_test;
# the command-line tools) in a Release build, where no -g is given: only what
# they need, with the normal build's plugin and graph-codegen. Without the
# optional MPI and ONNX parts (graph-export's options were checked in the
# normal build).
release_tests() {
  echo "== ${SECONDS}s in: the build-type-dependent tests in a Release build ($build-rel)"
  configure "$build-rel" -DCMAKE_BUILD_TYPE=Release -DCXXGRAPH_BUILD_EXAMPLES=OFF -DCXXGRAPH_BUILD_BENCH=OFF \
    -DCXXGRAPH_CUDA=OFF -DCXXGRAPH_MPI=OFF -DCXXGRAPH_ONNX=OFF -DCXXGRAPH_GENERATOR_PLUGIN="$(cd "$build" && pwd)/plugin/cxxgraph-plugin.so" \
    -DCXXGRAPH_GENERATOR_CODEGEN="$(cd "$build" && pwd)/tools/graph-codegen"
  cmake --build "$build-rel" --target trace_test graph-inspect graph-run
  ctest --test-dir "$build-rel" -L "trace|cli" --output-on-failure -j2
}

# The whole suite in a Debug build (-O0 -g, as CMake's Debug gives a user),
# CPU only, with the normal build's plugin and graph-codegen. Left out, as in
# the sanitizer builds: the examples, MPI and ONNX, the plugin's own tests, and
# what builds a project of its own whatever this build's type (the consume
# and install tests, the warning checks and the vectorization reports).
debug_tests() {
  echo "== ${SECONDS}s in: the test suite in a Debug build ($build-debug)"
  configure "$build-debug" -DCMAKE_BUILD_TYPE=Debug -DCXXGRAPH_BUILD_EXAMPLES=OFF -DCXXGRAPH_BUILD_BENCH=OFF \
    -DCXXGRAPH_CUDA=OFF -DCXXGRAPH_MPI=OFF -DCXXGRAPH_ONNX=OFF -DCXXGRAPH_GENERATOR_PLUGIN="$(cd "$build" && pwd)/plugin/cxxgraph-plugin.so" \
    -DCXXGRAPH_GENERATOR_CODEGEN="$(cd "$build" && pwd)/tools/graph-codegen"
  cmake --build "$build-debug"
  ctest --test-dir "$build-debug" --output-on-failure -j2 -LE "warnings|consume|install" -E '^codegen_vectorized_'
}

sanitize() {
  # Reports abort the test that triggered them (-fno-sanitize-recover=all);
  # these ask for stacks on UBSan reports and a stop at the first race.
  export UBSAN_OPTIONS=print_stacktrace=1 TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1

  # Only what the concurrency tests need: their binary and the libraries
  # under it; the build steps run the normal build's plugin and graph-codegen
  # (same sources, unsanitized either way).
  echo "== ${SECONDS}s in: sanitize: ThreadSanitizer, tests labelled concurrency ($build-tsan)"
  cmake --build "$build" --target cxxgraph_plugin graph-codegen
  local generators=(-DCXXGRAPH_GENERATOR_PLUGIN="$(cd "$build" && pwd)/plugin/cxxgraph-plugin.so"
                    -DCXXGRAPH_GENERATOR_CODEGEN="$(cd "$build" && pwd)/tools/graph-codegen")
  # Both sanitizer builds leave out the CUDA backend (-DCXXGRAPH_CUDA=OFF): nvcc
  # takes no -fsanitize, its host logic ran in the normal build, and they check
  # the CPU-only configuration instead.
  configure "$build-tsan" -DCXXGRAPH_SANITIZE=thread -DCXXGRAPH_BUILD_EXAMPLES=OFF -DCXXGRAPH_CUDA=OFF \
    "${generators[@]}"
  cmake --build "$build-tsan" --target concurrency_test interpreter_test
  ctest --test-dir "$build-tsan" -L "concurrency|interpreter" -E e2e --output-on-failure -j2

  # Examples are not tests: not built here.
  # The build steps run the normal build's plugin and graph-codegen, as above; the plugin's
  # own tests and the install test (clang and the plugin, unsanitized) ran in
  # the normal build and are not built here. Nor are the checks that only
  # compile generated code with g++/clang (labels warnings, and the
  # codegen_vectorized_* reports): nothing of theirs runs under the sanitizers.
  echo "== ${SECONDS}s in: sanitize: AddressSanitizer + UndefinedBehaviorSanitizer, every test but the plugin's and the compile-only checks ($build-asan)"
  # No graph::dist here: Open MPI's own allocations at exit read as leaks to
  # LeakSanitizer, and the mpi tests ran in the normal build (CI budget); nor
  # the ONNX export, whose test needs a second Python venv.
  configure "$build-asan" -DCXXGRAPH_SANITIZE=address,undefined -DCXXGRAPH_BUILD_EXAMPLES=OFF -DCXXGRAPH_CUDA=OFF \
    -DCXXGRAPH_MPI=OFF -DCXXGRAPH_ONNX=OFF -DCXXGRAPH_BUILD_BENCH=OFF "${generators[@]}"
  cmake --build "$build-asan"
  ctest --test-dir "$build-asan" --output-on-failure -j2 -LE warnings -E '^codegen_vectorized_'
  echo "== ${SECONDS}s: done"
}

tools/setup.sh
case "$cmd" in
  example)
    configure "$build"
    cmake --build "$build"
    "$build"/examples/example_model
    ;;
  test)
    configure "$build"
    cmake --build "$build"
    echo "== ${SECONDS}s in: the whole test suite"
    ctest --test-dir "$build" --output-on-failure -j2
    echo "== ${SECONDS}s in: fuzz: the IR text parser and the saved-graph loader, 30 s each (tools/fuzz.sh)"
    BUILD_DIR="$build" tools/fuzz.sh 30
    release_tests
    debug_tests
    sanitize
    ;;
  sanitize)
    configure "$build"  # for its plugin
    sanitize
    ;;
  *)
    echo "usage: tools/dev.sh [example|test|sanitize]" >&2
    exit 2
    ;;
esac
