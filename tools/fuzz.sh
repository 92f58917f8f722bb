#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/: clang 19, ASan + UBSan) and runs them
# side by side (one core each), each for the given time:
#   fuzz_parser       the IR text parser        seeds fuzz/corpus/parser
#   fuzz_saved_graph  the saved-graph loader    seeds fuzz/corpus_saved_graph
#
#   tools/fuzz.sh [seconds]    fuzzing time per target, default 30 (what CI runs)
#   tools/fuzz.sh 3600         the long run: an hour per target; run it after
#                              changing the parser, the loader or the formats
# The build goes to ${BUILD_DIR:-build}-fuzz. Inputs the fuzzers find
# interesting accumulate in <build>/corpus/<target>/ (the committed seeds are
# only read), so repeated runs go deeper; a crashing input is written to
# <build>/artifacts/ and the script fails, printing how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
build=${BUILD_DIR:-build}-fuzz

cmake -S fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"

artifacts="$build/artifacts/"
mkdir -p "$artifacts"

# fuzz <target> <seconds> <seed dir> [extra libFuzzer flags...]
fuzz() {
  local target=$1 time=$2 seeds=$3
  shift 3
  local corpus="$build/corpus/${target#fuzz_}" log="$build/$target.log"
  mkdir -p "$corpus"
  # -timeout: one input taking seconds is a hang; -rss_limit_mb also caps any
  # single allocation (malloc_limit_mb defaults to it).
  if ! "$build/$target" "$corpus" "$seeds" "$@" \
      -max_total_time="$time" -timeout=10 -rss_limit_mb=1024 -max_len=8192 \
      -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "$target: FAILED; reproduce with: $build/$target $artifacts<crash-file>" >&2
    exit 1
  fi
  local runs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  echo "$target: $runs inputs in ${time}s ($((runs / time))/s), no crash, hang or leak ($(ls "$corpus" | wc -l) inputs in $corpus)"
}

# Side by side: each fuzzer is one process on one core.
fuzz fuzz_parser "$seconds" fuzz/corpus/parser -dict=fuzz/parser.dict &
parser=$!
fuzz fuzz_saved_graph "$seconds" fuzz/corpus_saved_graph -dict=fuzz/parser.dict &
saved=$!
status=0
wait "$parser" || status=1
wait "$saved" || status=1
exit "$status"
