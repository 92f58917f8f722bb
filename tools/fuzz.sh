#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/: clang 19, ASan + UBSan) and runs them.
#   tools/fuzz.sh [seconds]    total fuzzing time, default 60
# The build goes to ${BUILD_DIR:-build}-fuzz. Inputs the fuzzer finds
# interesting accumulate in <build>/corpus/ (the committed seeds in
# fuzz/corpus/ are only read); a crashing input is written to
# <build>/artifacts/ and the script fails, printing how to reproduce it.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=${BUILD_DIR:-build}-fuzz

cmake -S fuzz -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++-19 -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build"

corpus="$build/corpus/parser"
artifacts="$build/artifacts/"
mkdir -p "$corpus" "$artifacts"
log="$build/fuzz_parser.log"
# -timeout: one input taking seconds is a hang; -rss_limit_mb also caps any
# single allocation (malloc_limit_mb defaults to it).
if ! "$build/fuzz_parser" "$corpus" fuzz/corpus/parser -dict=fuzz/parser.dict \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=1024 -max_len=8192 \
    -artifact_prefix="$artifacts" -print_final_stats=1 >"$log" 2>&1; then
  tail -n 60 "$log"
  echo "fuzz_parser: FAILED; reproduce with: $build/fuzz_parser $artifacts<crash-file>" >&2
  exit 1
fi
runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
echo "fuzz_parser: $runs inputs in ${seconds}s, no crash, hang or leak ($(ls "$corpus" | wc -l) inputs in $corpus)"
