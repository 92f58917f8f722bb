#!/usr/bin/env bash
# What [[graph::static]] adds to a source's build: runs each step of one
# source's static build with the exact command ninja uses (ccache off) and the
# same source's plain compile, and prints their CPU and wall seconds.
#
#   tools/build_cost.sh [--runs N] [--json FILE] BUILD_DIR TARGET SOURCE...
#
# TARGET is a target that calls cxxgraph_static_graphs(); SOURCE is one of its
# sources, relative to the directory that defines the target (e.g.
# transformer/encoder.cpp for example_transformer). Steps: the generator
# (clang 19 + the plugin), the rewritten copy, the generated CPU kernels (the
# graph functions, .graph.cpp, and their fused loops, .loops.cpp) and, when
# built, the CUDA kernels. "parallel" is the wall time with a core per step:
# the generator, then the longest of the others (ninja runs them side by side).
# The plain compile is the copy's command on the original source: what the
# user's compiler did before the source had a static function. CPU seconds
# (user + system, all processes) are the figure to compare on a loaded
# machine; wall seconds are printed beside them. Median of N runs (default 3).
set -euo pipefail
runs=3 json=""
while (($#)); do
  case "$1" in
    --runs) runs=$2; shift ;;
    --json) json=$2; shift ;;
    -h|--help) sed -n '2,18p' "$0" | cut -c3-; exit 0 ;;
    -*) echo "build_cost.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    *) break ;;
  esac
  shift
done
(($# >= 3)) || { echo "usage: tools/build_cost.sh [--runs N] [--json FILE] BUILD_DIR TARGET SOURCE..." >&2; exit 2; }
build=$(cd "$1" && pwd) target=$2
shift 2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ninja -C "$build" -t targets all | cut -d: -f1 >"$tmp/targets"

output_of() {  # the one ninja output matching the regex $1
  local out
  out=$(grep -E "$1" "$tmp/targets" | head -1)
  [ -n "$out" ] || { echo "build_cost.sh: no ninja output matches $1" >&2; return 1; }
  echo "$out"
}
# Runs the command $1 $runs times from $build; prints "cpu wall" medians.
measure() {
  local i
  for ((i = 0; i < runs; ++i)); do
    (cd "$build" && CCACHE_DISABLE=1 /usr/bin/time -f '%U %S %e' -o "$tmp/time" bash -c "$1" >/dev/null 2>&1) ||
      { echo "build_cost.sh: the step failed: $1" >&2; return 1; }
    awk '{printf "%.3f %.3f\n", $1 + $2, $3}' "$tmp/time"
  done >"$tmp/runs"
  local mid=$(((runs + 1) / 2))
  echo "$(cut -d' ' -f1 "$tmp/runs" | sort -n | sed -n "${mid}p") $(cut -d' ' -f2 "$tmp/runs" | sort -n | sed -n "${mid}p")"
}

echo "{" >"$tmp/json"
first=1
printf '%-40s %-10s %9s %9s %8s\n' source step cpu_s wall_s "x plain"
for source in "$@"; do
  stem=$(echo "${source%.*}" | tr '/.' '__')
  esc=$(printf '%s' "$target" | sed 's/[.[\*^$+?(){}|]/\\&/g')
  gen=$(output_of "cxxgraph/$esc/$stem\.cpp$")
  copy=$(output_of "$esc\.dir/cxxgraph/$esc/$stem\.cpp\.o$")
  kernels=$(output_of "${esc}_cxxgraph_kernels\.dir/.*/$stem\.graph\.cpp\.o$")
  loops=$(grep -E "${esc}_cxxgraph_kernels\.dir/.*/$stem\.loops\.cpp\.o$" "$tmp/targets" | head -1 || true)
  cuda=$(grep -E "${esc}_cxxgraph_kernels\.dir/.*/$stem\.graph\.cu\.o$" "$tmp/targets" | head -1 || true)
  ninja -C "$build" "$copy" "$kernels" ${loops:+"$loops"} ${cuda:+"$cuda"} >/dev/null  # inputs up to date
  copy_cmd=$(ninja -C "$build" -t commands -s "$copy")
  # The plain compile: the copy's command on the original source, into a scratch object.
  abs_copy=$(realpath "$build/$gen")
  abs_source=$(grep -o -- "-iquote [^ ]*" <<<"$copy_cmd" | cut -d' ' -f2)/$(basename "$source")
  [ -f "$abs_source" ] || { echo "build_cost.sh: cannot find the original of $source ($abs_source)" >&2; exit 1; }
  plain_cmd=$(sed -e "s# -MD -MT [^ ]* -MF [^ ]*##" -e "s# -o [^ ]*\.o # -o $tmp/plain.o #" \
    -e "s#-c [^ ]*$gen\$#-c $abs_source#" -e "s#-c $abs_copy\$#-c $abs_source#" <<<"$copy_cmd")
  declare -A cost=()
  read -r cost[plain_cpu] cost[plain_wall] < <(measure "$plain_cmd")
  steps=(generator copy kernels)
  declare -A cmd=([generator]="$(ninja -C "$build" -t commands -s "$gen")" [copy]="$copy_cmd"
    [kernels]="$(ninja -C "$build" -t commands -s "$kernels")")
  if [ -n "$loops" ]; then steps+=(loops); cmd[loops]=$(ninja -C "$build" -t commands -s "$loops"); fi
  if [ -n "$cuda" ]; then steps+=(cuda); cmd[cuda]=$(ninja -C "$build" -t commands -s "$cuda"); fi
  total_cpu=0 total_wall=0 gen_wall=0 longest=0
  printf '%-40s %-10s %9s %9s %8s\n' "$source" plain "${cost[plain_cpu]}" "${cost[plain_wall]}" 1.00x
  ((first)) || echo "," >>"$tmp/json"
  first=0
  printf '  "%s": {"plain": [%s, %s]' "$source" "${cost[plain_cpu]}" "${cost[plain_wall]}" >>"$tmp/json"
  for step in "${steps[@]}"; do
    read -r c w < <(measure "${cmd[$step]}")
    total_cpu=$(awk -v a="$total_cpu" -v b="$c" 'BEGIN{printf "%.3f", a + b}')
    total_wall=$(awk -v a="$total_wall" -v b="$w" 'BEGIN{printf "%.3f", a + b}')
    if [ "$step" = generator ]; then gen_wall=$w; else longest=$(awk -v a="$longest" -v b="$w" 'BEGIN{print (b > a ? b : a)}'); fi
    printf '%-40s %-10s %9s %9s %7.2fx\n' "" "$step" "$c" "$w" "$(awk -v a="$c" -v b="${cost[plain_cpu]}" 'BEGIN{print a / b}')"
    printf ', "%s": [%s, %s]' "$step" "$c" "$w" >>"$tmp/json"
  done
  printf '%-40s %-10s %9s %9s %7.2fx\n' "" "static" "$total_cpu" "$total_wall" \
    "$(awk -v a="$total_cpu" -v b="${cost[plain_cpu]}" 'BEGIN{print a / b}')"
  # With a core per step: the generator, then the other steps side by side.
  parallel=$(awk -v a="$gen_wall" -v b="$longest" 'BEGIN{printf "%.3f", a + b}')
  printf '%-40s %-10s %9s %9s %7.2fx\n' "" "parallel" "" "$parallel" \
    "$(awk -v a="$parallel" -v b="${cost[plain_wall]}" 'BEGIN{print a / b}')"
  printf ', "static": [%s, %s], "parallel_wall": %s}' "$total_cpu" "$total_wall" "$parallel" >>"$tmp/json"
  unset cost cmd
done
printf '\n}\n' >>"$tmp/json"
[ -z "$json" ] || cp "$tmp/json" "$json"
