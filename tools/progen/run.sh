#!/usr/bin/env bash
# Differential testing with random programs (docs/fuzzing.md).
#
#   tools/progen/run.sh [--seed S] [--batches B] [--functions N]
#       B batches of N generated functions (seeds S, S+1, ...), each one
#       translation unit built with the plugin (the progen_batch target of the
#       build tree) and run compiled vs interpreted vs eager, every CPU
#       instruction-set variant, forward and backward. Prints every finding
#       with the command that reproduces it, then the coverage.
#   tools/progen/run.sh --shrink --seed S --function K
#       Reduces function K of batch S while it still fails the same way
#       (drops statements, replaces ifs by one branch) and prints the result.
#   tools/progen/run.sh --hours H [--seed S] [--functions N]
#       The long run: batches until H hours have passed.
#
# The build directory is ${BUILD_DIR:-build} (configured as in the README);
# logs, sources and coverage go to <build>/tools/progen/batch/. Exit status 1
# when there was a finding.
set -uo pipefail
cd "$(dirname "$0")/../.."
build=${BUILD_DIR:-build}
seed=1 batches=1 functions=24 shrink=0 function=-1 hours=0
while [ $# -gt 0 ]; do
  case $1 in
    --seed) seed=$2; shift 2 ;;
    --batches) batches=$2; shift 2 ;;
    --functions) functions=$2; shift 2 ;;
    --function) function=$2; shift 2 ;;
    --hours) hours=$2; batches=1000000; shift 2 ;;
    --shrink) shrink=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "run.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
dir=$build/tools/progen/batch
exe=$build/tools/progen/progen_batch
progen=$build/tools/progen/graph-progen
ninja -C "$build" graph-progen progen_harness >/dev/null || exit 2
mkdir -p "$dir"

# build_and_run <graph-progen arguments...>: builds the batch and runs it;
# prints the findings and sets $outcome: ok, or the kind of the first finding.
build_and_run() {
  echo "$*" >"$dir/args"
  outcome=ok
  if ! ninja -C "$build" progen_batch >"$dir/build.log" 2>&1; then
    outcome=build
    grep -E "error|Error|fault|Abort" "$dir/build.log" | head -n 5 | sed 's/^/FINDING build: /'
    return
  fi
  # A plugin diagnostic on a generated function is a finding: each should lower.
  if grep -q "\[-Wgraph" "$dir/build.log"; then
    outcome=diagnostic
    grep "\[-Wgraph" "$dir/build.log" | head -n 5 | sed 's/^/FINDING plugin: /'
  fi
  timeout 900 "$exe" >"$dir/run.log" 2>&1
  local rc=$?
  grep '^FINDING' "$dir/run.log" | head -n 20
  if [ $rc -ne 0 ] && ! grep -q '^FINDING' "$dir/run.log"; then
    outcome=crash
    echo "FINDING crash (status $rc) in $(grep '^case ' "$dir/run.log" | tail -n 1 | cut -d' ' -f2): $(tail -n 2 "$dir/run.log" | tr '\n' ' ')"
  elif [ $rc -ne 0 ] && [ "$outcome" = ok ]; then
    outcome=$(grep -m1 '^FINDING' "$dir/run.log" | sed -E 's/.*mode=[a-z]+: //; s/(output|gradient of) .*/\1/; s/:.*//')
  fi
}

if [ $shrink -eq 1 ]; then
  [ "$function" -ge 0 ] || { echo "run.sh: --shrink needs --function K" >&2; exit 2; }
  build_and_run --seed "$seed" --only "$function"
  want=$outcome
  [ "$want" != ok ] || { echo "seed $seed function $function does not fail alone"; exit 0; }
  echo "== shrinking seed $seed function pg$function (fails: $want)"
  edits=""
  # Later statements first: earlier ones define what later ones read.
  mapfile -t stmts < <("$progen" --seed "$seed" --only "$function" --list-statements | tac)
  for line in "${stmts[@]}"; do
    read -r id kind <<<"$line"
    tries=(drop)
    [ "$kind" = if ] && tries+=(then else)
    for what in "${tries[@]}"; do
      candidate="${edits:+$edits,}$id:$what"
      "$progen" --seed "$seed" --only "$function" --edit "$candidate" --out /dev/null 2>/dev/null || continue
      build_and_run --seed "$seed" --only "$function" --edit "$candidate" >/dev/null
      if [ "$outcome" = "$want" ]; then edits=$candidate; echo "  kept $id:$what"; break; fi
    done
  done
  out=$dir/shrunk-$seed-$function.cpp
  "$progen" --seed "$seed" --only "$function" ${edits:+--edit "$edits"} --out "$out"
  build_and_run --seed "$seed" --only "$function" ${edits:+--edit "$edits"}
  echo "== reduced (edits: ${edits:-none}): $out"
  sed -n '/\[\[graph::static\]\]/,/^}/p' "$out"
  exit 0
fi

total=0 found=0 start=$SECONDS
: >"$dir/coverage.txt"
for ((b = 0; b < batches; b++)); do
  s=$((seed + b))
  if [ "$hours" != 0 ] && [ $((SECONDS - start)) -ge $(awk "BEGIN{print int($hours*3600)}") ]; then break; fi
  findings=$(build_and_run --seed "$s" --functions "$functions")
  total=$((total + functions))
  cat "$dir/progen_batch.cpp.cov" >>"$dir/coverage.txt"
  if [ -n "$findings" ]; then
    found=$((found + 1))
    echo "$findings" | sed "s/^/seed $s: /"
    for k in $(echo "$findings" | grep -oE 'pg[0-9]+' | sort -u | tr -d pg); do
      echo "  reproduce: tools/progen/run.sh --seed $s --functions $functions; reduce: tools/progen/run.sh --shrink --seed $s --function $k"
    done
  fi
  echo "batch seed $s: $functions functions, $( [ -n "$findings" ] && echo "findings" || echo "no finding") ($((SECONDS - start)) s so far)"
done

# Coverage over every batch: ops of the table (forward, backward) and forms.
echo "== $total functions in $((SECONDS - start)) s; batches with findings: $found"
"$progen" --list-ops | awk -v cov="$dir/coverage.txt" '
  BEGIN { while ((getline l < cov) > 0) { n = split(l, f, " ");
            for (i = 2; i <= n; i++) { split(f[i], kv, "="); m = split(kv[2], xs, ",");
              for (j = 1; j <= m; j++) if (xs[j] != "") seen[kv[1] "," xs[j]]++ } } }
  { ops++; if (seen["fwd," $1]) fwd++; else missf = missf " " $1;
    if ($2 == 1) { dops++; if (seen["bwd," $1]) bwd++; else missb = missb " " $1 } }
  END { printf "coverage: %d/%d generatable ops forward, %d/%d differentiable ops backward\n", fwd, ops, bwd, dops;
        if (missf) print "  never forward:" missf; if (missb) print "  never backward:" missb;
        printf "  forms:"; for (k in seen) if (k ~ /^cf,/) printf " %s(%d)", substr(k, 4), seen[k]; print "" }'
[ $found -eq 0 ]
