#!/usr/bin/env bash
# The benchmark suite in one command: builds what it needs, then measures every
# workload of bench/ as cxxgraph eager, cxxgraph static, LibTorch, TorchScript,
# torch.compile (PyTorch 2.x from PyPI, in the venv tools/torch_venv.sh makes once)
# and a hand-written reference, the peak memory of eager vs static, and the
# build cost of the generator; prints one table of medians and ratios.
#
#   tools/bench.sh [--quick] [--threads N] [--markdown FILE] [--json FILE]
#
# --quick: 3 repetitions of >= 0.05 s each (default 5 of >= 0.2 s), one build
# cost run (default 3). --threads: the thread count given to every library
# (default 1). The build goes to ./build (BUILD_DIR overrides it).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${BUILD_DIR:-build}
quick=0 threads=1 markdown="" json=""
while (($#)); do
  case "$1" in
    --quick) quick=1 ;;
    --threads) threads=$2; shift ;;
    --markdown) markdown=$2; shift ;;
    --json) json=$2; shift ;;
    *) echo "usage: tools/bench.sh [--quick] [--threads N] [--markdown FILE] [--json FILE]" >&2; exit 2 ;;
  esac
  shift
done
if ((quick)); then reps=3 min_time=0.05 build_runs=1; else reps=5 min_time=0.2 build_runs=3; fi
out=$build/bench/results
mkdir -p "$out"
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
cores=$(nproc --all)

tools/setup.sh --bench  # Google Benchmark, Eigen, python3-venv: not in the default install
echo "== bench: PyTorch from PyPI (tools/torch_venv.sh)"
torch_python=$(tools/torch_venv.sh)
torch_dir=$("$torch_python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
echo "== bench: building bench_suite ($build) against $torch_dir"
generator=()
[ -f "$build/build.ninja" ] || generator=(-G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo)
cmake -S . -B "$build" "${generator[@]}" -DCXXGRAPH_TORCH_DIR="$torch_dir" >/dev/null
cmake --build "$build" --target bench_suite bench_libtorch

# Build cost: each step's own command, as ninja runs it, without ccache
# (tools/build_cost.sh, CPU seconds).
echo "== bench: build cost of bench/models.cpp ($build_runs run(s) per step)"
tools/build_cost.sh --runs "$build_runs" --json "$out/build_cost.json" "$build" bench_suite models.cpp
functions=$(grep -c '^\[\[graph::static\]\]' bench/models.cpp)
/usr/bin/python3 -c 'import json, sys; c = json.load(open(sys.argv[1]))["models.cpp"]
json.dump({"runs": int(sys.argv[2]), "functions": int(sys.argv[3]), "steps": c}, open(sys.argv[4], "w"))' \
  "$out/build_cost.json" "$build_runs" "$functions" "$out/build.json"
cmake --build "$build" --target bench_suite >/dev/null  # relink after the re-runs

export CXXGRAPH_BENCH_THREADS=$threads OPENBLAS_NUM_THREADS=$threads OMP_NUM_THREADS=$threads
export GRAPH_NUM_THREADS=$threads
echo "== bench: C++ workloads ($threads thread(s), $reps repetitions of >= $min_time s, medians)"
"$build/bench/bench_suite" --benchmark_repetitions=$reps --benchmark_min_time=$min_time \
  --benchmark_display_aggregates_only=true \
  --benchmark_out="$out/suite.json" --benchmark_out_format=json | tee "$out/suite.log" | grep --line-buffered -E '_median|ERROR'

echo "== bench: LibTorch $("$torch_python" -c 'import torch; print(torch.__version__)') (bench_libtorch, its own process)"
"$build/bench/bench_libtorch" --benchmark_repetitions=$reps --benchmark_min_time=$min_time \
  --benchmark_display_aggregates_only=true \
  --benchmark_out="$out/libtorch.json" --benchmark_out_format=json | tee "$out/libtorch.log" | grep --line-buffered -E '_median|ERROR'

echo "== bench: which static graphs ran (GRAPH_EXPLAIN=1), peak memory"
GRAPH_EXPLAIN=1 "$build/bench/bench_suite" --check >"$out/check.json" 2>"$out/check.log"
echo "== bench: TorchScript"
"$torch_python" bench/torchscript_bench.py --threads "$threads" --repetitions $reps --min-time $min_time \
  --json "$out/torchscript.json"
echo "== bench: torch.compile (inductor; the first call of each workload compiles it)"
"$torch_python" bench/torchscript_bench.py --compile --threads "$threads" --repetitions $reps --min-time $min_time \
  --json "$out/torch_compile.json"

note="Measured $(date -u +%Y-%m-%d) by \`tools/bench.sh$( ((quick)) && echo ' --quick')\` on $cores cores \
($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ *//')), $threads thread(s) for every library, \
$reps repetitions of >= $min_time s each, medians; load average $load_before before, \
$(cut -d' ' -f1-3 /proc/loadavg) after (a shared machine: other builds ran meanwhile)."
echo "== bench: results"
/usr/bin/python3 bench/report.py --suite "$out/suite.json" --libtorch "$out/libtorch.json" \
  --torchscript "$out/torchscript.json" --torch-compile "$out/torch_compile.json" \
  --check "$out/check.json" --build "$out/build.json" --note "$note" \
  ${markdown:+--markdown "$markdown"} ${json:+--json "$json"}
