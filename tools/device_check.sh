#!/usr/bin/env bash
# The one-call GPU check (docs/gpu-check.md), in two steps:
#
#   tools/device_check.sh pack [--no-build] [--build-dir DIR] [--out FILE]
#       Here: builds the CUDA tests, the examples, device_bench and the
#       progen batches (progen_device), and packs them with every shared
#       library they need that the GPU image lacks
#       (oneDNN, OpenBLAS, libdw, ...; never the CUDA, cuBLAS or cuDNN
#       libraries, which the image's PyTorch wheels bring) into one
#       compressed bundle, by default build-device/cxxgraph-device.tar.xz
#       (git-ignored: /build-*/), which the device tool's `carry` takes.
#   tools/device_check.sh run [--quick] [BUNDLE]
#       On the device machine (or here, as a dry run): unpacks the bundle,
#       finds the image's CUDA libraries at run time, prints the GPU and
#       library versions, runs every CUDA test and every example (the ones
#       with a device mode on the GPU), the progen batches (random static
#       functions on the device against the CPU), a subset under compute-sanitizer,
#       device_bench and bench/device_torch.py, and writes device_check.log,
#       results.md and summary.txt to $OUT (./device-out without it).
#       Every step has its own timeout inside a total budget
#       (DEVICE_CHECK_BUDGET seconds, 470 by default: the tool's 10-minute
#       call minus unpacking and a margin). Without a GPU the device tests
#       skip, and the summary says "no GPU".
#   tools/device_check.sh verify BUNDLE
#       Unpacks BUNDLE into a temporary folder and checks that every binary
#       in it resolves each library to the bundle, glibc or the CUDA
#       libraries the image brings (the CI test device_bundle runs this).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
name=cxxgraph-device

# What the bundle holds. Tests: the gtest binaries with device code (the
# label `cuda` in tests/cuda.cmake) and dtype_test (its no-device path).
tests=(cuda_host_test cuda_ops_test dtype_test)
# Examples with a device mode (CXXGRAPH_EXAMPLE_DEVICE=cuda) and the CPU
# ones, which also run there: the bundle's static graphs on another machine.
device_examples=(example_lenet example_transformer)
cpu_examples=(example_model example_rnn example_mlp_train example_add_and_relu example_trace_vs_parse)
benches=(device_bench)
# The GPU check's random programs (tools/progen/CMakeLists.txt,
# docs/fuzzing.md): not in the build's `all`, so `pack --no-build` packs it
# only when it was built, and says so in the MANIFEST.
progen=progen_device

# Libraries the image brings (the PyTorch cu130 wheels, the toolkit) and
# glibc's own: never packed. Everything else ldd resolves is packed.
image_libs='^(libcuda|libcudart|libcublas|libcublasLt|libcudnn[a-z_]*|libnvrtc|libnvJitLink)\.so'
glibc_libs='^(linux-vdso|ld-linux-x86-64|libc|libm|libdl|libpthread|librt|libresolv|libutil)\.so'
# libstdc++ and libgcc_s go to lib-std/, put on the path only where the
# image's own are older than the ones built against here (`run` tries).
std_libs='^(libstdc\+\+|libgcc_s)\.so'

die() { echo "device_check: $*" >&2; exit 1; }

# ---- pack ------------------------------------------------------------------

# ldd_libs BINARY: "soname path" per resolved library, "soname not-found"
# for missing ones.
ldd_libs() {
  ldd "$1" | awk '/=>/ { if ($3 == "not") print $1, "not-found"; else print $1, $3 }'
}

pack() {
  local build=$repo/build out=$repo/build-device/$name.tar.xz do_build=1
  while (($#)); do
    case $1 in
      --no-build) do_build=0 ;;
      --build-dir) build=$(cd "$2" && pwd); shift ;;
      --out) out=$2; shift ;;
      *) die "pack: unknown argument $1" ;;
    esac
    shift
  done
  [[ $out = /* ]] || out=$PWD/$out
  local targets=("${tests[@]}" "${device_examples[@]}" "${cpu_examples[@]}" "${benches[@]}")
  local with_progen=1
  if ((do_build)); then
    targets+=("$progen")
    [ -f "$build/build.ninja" ] || die "pack: $build is not configured (tools/dev.sh or cmake -S . -B build -G Ninja)"
    grep -q 'cuda_ops_test' "$build/build.ninja" || die "pack: $build has no CUDA backend (no nvcc found?)"
    echo "== pack: building ${targets[*]} in $build"
    cmake --build "$build" --target "${targets[@]}"
  fi
  # The CUDA targets the build compiles for, as nvcc is asked (CMake writes
  # one --generate-code per architecture): sm_90 must be among them.
  local archs
  archs=$(grep -o -- '--generate-code=[^ ]*' "$build/build.ninja" | sort -u | sed 's/--generate-code=//' | tr '\n' ' ')
  [[ $archs == *sm_90* ]] || die "pack: $build builds no sm_90 code (CMAKE_CUDA_ARCHITECTURES): $archs"
  local stage
  stage=$(mktemp -d "${TMPDIR:-/tmp}/device-pack.XXXXXX")
  trap 'rm -rf "$stage"' RETURN
  local root=$stage/$name
  mkdir -p "$root"/{bin,lib,lib-std,bench,tools}
  local t f
  if ((!do_build)) && [ -x "$build/tools/progen/$progen" ]; then
    targets+=("$progen")
  elif ((!do_build)); then
    with_progen=0
    echo "== pack: $progen is not built (ninja $progen): the bundle has no progen batches"
  fi
  for t in "${targets[@]}"; do
    f=$(find "$build" -maxdepth 3 -type f -name "$t" -perm -u+x | head -1)
    [ -n "$f" ] || die "pack: $t is not built in $build"
    # Debug info off (a third of the size); symbols stay for backtraces.
    objcopy --strip-debug "$f" "$root/bin/$t"
  done
  cp "$repo/bench/device_torch.py" "$root/bench/"
  cp "$repo/tools/device_check.sh" "$repo/tools/device_results.py" "$root/tools/"

  # Every library each binary needs, classified; a missing one fails here,
  # where it can be fixed, not on the device.
  local soname path image_needs=""
  for t in "$root"/bin/*; do
    while read -r soname path; do
      if [[ $soname =~ $image_libs ]]; then
        image_needs+="$soname"$'\n'
      elif [[ $soname =~ $glibc_libs ]]; then
        :
      elif [[ $path == not-found ]]; then
        die "pack: $(basename "$t") needs $soname, which is not found here"
      elif [[ $soname =~ $std_libs ]]; then
        cp -L "$path" "$root/lib-std/$soname"
      else
        cp -L "$path" "$root/lib/$soname"
      fi
    done < <(ldd_libs "$t")
  done
  strip --strip-unneeded "$root"/lib/*.so* 2>/dev/null || true
  {
    echo "commit $(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$repo" diff --quiet 2>/dev/null || echo ' (with uncommitted changes)')"
    echo "packed $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(ldd --version | head -1)"
    echo "cuda_targets $archs"
    if ((with_progen)); then
      local seeds per
      seeds=$(sed -n 's/^PROGEN_DEVICE_SEEDS:[A-Z]*=//p' "$build/CMakeCache.txt" | tr ';' ' ')
      per=$(sed -n 's/^PROGEN_DEVICE_FUNCTIONS:[A-Z]*=//p' "$build/CMakeCache.txt")
      echo "progen seeds $seeds, $per functions each"
    else
      echo "progen none ($progen not built)"
    fi
    echo "nvcc $("$(sed -n 's/^CMAKE_CUDA_COMPILER:[A-Z]*=//p' "$build/CMakeCache.txt")" --version | tail -2 | head -1)"
    printf 'image_lib %s\n' $(sort -u <<<"$image_needs")
    printf 'packed_lib %s\n' $(cd "$root/lib" && ls)
  } >"$root/MANIFEST"
  verify_tree "$root"

  mkdir -p "$(dirname "$out")"
  # xz, which every image unpacks (tar -J, or Python's tarfile). The binaries
  # share most of their bytes (the runtime, the CUDA fatbins): a 64 MiB
  # window finds each one's copy in the previous one, so the fastest preset
  # with it beats -6 (8 MiB window) by a third in size and is six times
  # faster (measured: 250 MiB to 20 MiB in 19 s of one core, -6: 32 MiB in
  # 2 minutes). One thread: xz's threads split the window.
  XZ_OPT=${XZ_OPT:---lzma2=preset=1,dict=64MiB -T1} tar -C "$stage" -cJf "$out.tmp" "$name"
  mv "$out.tmp" "$out"
  local mib=$(( $(stat -c %s "$out") / 1048576 ))
  echo "== pack: $out: $(du -h "$out" | cut -f1) ($(du -sh "$root" | cut -f1) unpacked)"
  sed 's/^/   /' "$root/MANIFEST"
  # The device tool carries 64 MiB with the whole working tree; keep room.
  ((mib <= 40)) || die "pack: the bundle is $mib MiB, over the 40 MiB kept for it (progen_device is about 4 MiB" \
    "of it per batch: fewer with cmake -DPROGEN_DEVICE_SEEDS='5001;5002')"
}

# verify_tree ROOT: with only the bundle's folders on the library path,
# every library of every binary resolves to the bundle, to glibc, or is one
# the image brings (found here in system folders, or not at all).
verify_tree() {
  local root=$1 bad=0 t soname path
  for t in "$root"/bin/*; do
    while read -r soname path; do
      [[ $soname =~ $image_libs || $soname =~ $glibc_libs || $soname =~ $std_libs ]] && continue
      if [[ $path != "$root"/lib/* ]]; then
        echo "verify: $(basename "$t"): $soname resolves to $path, not to the bundle" >&2
        bad=1
      fi
    done < <(LD_LIBRARY_PATH=$root/lib ldd_libs "$t")
  done
  ((bad == 0)) || die "verify: the bundle is not self-contained"
  echo "== verify: $(ls "$root/bin" | wc -l) binaries resolve every library to the bundle, glibc or the image's CUDA"
}

verify() {
  local bundle=${1:?verify BUNDLE}
  local dir
  dir=$(mktemp -d "${TMPDIR:-/tmp}/device-verify.XXXXXX")
  trap 'rm -rf "$dir"' RETURN
  tar -C "$dir" -xJf "$bundle"
  verify_tree "$dir/$name"
  local f
  for f in bench/device_torch.py tools/device_check.sh tools/device_results.py MANIFEST; do
    [ -f "$dir/$name/$f" ] || die "verify: the bundle has no $f"
  done
  echo "== verify: $bundle: $(du -h "$bundle" | cut -f1), $(ls "$dir/$name/lib" | wc -l) packed libraries"
}

# ---- run -------------------------------------------------------------------

budget=${DEVICE_CHECK_BUDGET:-470}
log=""

say() { echo "$*" | tee -a "$log"; }

# step KIND NAME LIMIT COMMAND...: runs COMMAND with a timeout of LIMIT
# seconds or what is left of the budget, whichever is less; appends its
# output to the log and a STEP line: STEP<tab>kind<tab>name<tab>rc<tab>seconds.
# A step with under 15 s left is not started (rc "skipped-budget").
step() {
  local kind=$1 stepname=$2 limit=$3
  shift 3
  local left=$((budget - SECONDS))
  ((limit > left)) && limit=$left
  if ((limit < 15)); then
    printf 'STEP\t%s\t%s\tskipped-budget\t0\n' "$kind" "$stepname" | tee -a "$log"
    return 0
  fi
  echo "---- $kind $stepname (timeout ${limit}s): $*" >>"$log"
  local start=$SECONDS rc=0
  timeout -k 10 "$limit" "$@" >>"$log" 2>&1 || rc=$?
  ((rc == 124 || rc == 137)) && rc=timeout
  printf 'STEP\t%s\t%s\t%s\t%d\n' "$kind" "$stepname" "$rc" $((SECONDS - start)) | tee -a "$log"
}

# The folders holding the image's CUDA runtime, cuBLAS(Lt) and cuDNN: the
# PyTorch wheels' nvidia/* packages and torch/lib, then the toolkit beside
# nvcc. Prints one folder per line, first match of each library first.
cuda_lib_dirs() {
  {
    python3 - <<'EOF' 2>/dev/null || true
import glob, os, site, sys
roots = [p for p in sys.path if p.endswith(("site-packages", "dist-packages"))]
try:
    roots += site.getsitepackages()
except Exception:
    pass
seen = set()
for r in dict.fromkeys(roots):
    for pattern in ("nvidia/*/lib", "nvidia/*/lib64", "nvidia/*/*/lib", "torch/lib"):
        for d in sorted(glob.glob(os.path.join(r, pattern))):
            if d not in seen and glob.glob(os.path.join(d, "lib*.so*")):
                seen.add(d)
                print(d)
EOF
    local nvcc
    nvcc=$(command -v nvcc || true)
    [ -n "$nvcc" ] && for d in "$(dirname "$nvcc")"/../lib64 "$(dirname "$nvcc")"/../lib; do
      [ -d "$d" ] && (cd "$d" && pwd)
    done
  } | awk '!seen[$0]++'
}

find_tool() {  # find_tool NAME: on PATH, or beside nvcc in the toolkit
  command -v "$1" 2>/dev/null && return
  local nvcc
  nvcc=$(command -v nvcc 2>/dev/null) || return 1
  find "$(dirname "$nvcc")/.." -maxdepth 3 -type f -name "$1" -perm -u+x 2>/dev/null | head -1
}

run() {
  local quick=0 bundle=""
  while (($#)); do
    case $1 in
      --quick) quick=1 ;;
      *) bundle=$1 ;;
    esac
    shift
  done
  [ -n "$bundle" ] || bundle=$repo/build-device/$name.tar.xz
  local out=${OUT:-$PWD/device-out}
  mkdir -p "$out"
  out=$(cd "$out" && pwd)
  log=$out/device_check.log
  : >"$log"
  local work
  work=$(mktemp -d "${TMPDIR:-/tmp}/device-run.XXXXXX")
  if [ -d "$bundle" ]; then
    cp -r "$bundle" "$work/$name"
  else
    [ -f "$bundle" ] || die "run: no bundle at $bundle (tools/device_check.sh pack first)"
    tar -C "$work" -xJf "$bundle" ||
      python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' "$bundle" "$work"
  fi
  local root=$work/$name
  cd "$root"
  say "== device_check run $(date -u +%Y-%m-%dT%H:%M:%SZ) on $(hostname), budget ${budget}s"
  sed 's/^/   /' MANIFEST | tee -a "$log"

  # Library path: the bundle's libraries, then the image's CUDA ones.
  local dirs=() d
  while read -r d; do dirs+=("$d"); done < <(cuda_lib_dirs)
  local cuda_path host_ldp=${LD_LIBRARY_PATH:-}
  cuda_path=$(IFS=:; echo "${dirs[*]}")
  export LD_LIBRARY_PATH=$root/lib${cuda_path:+:$cuda_path}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # libstdc++/libgcc_s from the bundle only if the image's do not load ours.
  if ! bin/cuda_host_test --gtest_list_tests >/dev/null 2>&1; then
    export LD_LIBRARY_PATH=$root/lib-std:$LD_LIBRARY_PATH
    say "   bin/cuda_host_test did not start with the image's libstdc++: using the bundle's (lib-std)"
    bin/cuda_host_test --gtest_list_tests 2>&1 >/dev/null | head -5 | sed 's/^/   /' | tee -a "$log" || true
  fi
  local lib missing=0
  say "== libraries the image brings:"
  for lib in $(sed -n 's/^image_lib //p' MANIFEST); do
    local where
    where=$(LD_LIBRARY_PATH=$LD_LIBRARY_PATH ldd bin/cuda_ops_test bin/device_bench 2>/dev/null |
              awk -v l="$lib" '$1 == l { print $3; exit }' || true)
    if [ -z "$where" ] || [ "$where" = not ]; then
      say "   $lib: NOT FOUND"
      missing=1
    else
      say "   $lib: $(readlink -f "$where")"
    fi
  done

  say "== GPU"
  local gpu=1
  if command -v nvidia-smi >/dev/null && timeout 20 nvidia-smi >>"$log" 2>&1; then
    timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv,noheader 2>&1 |
      sed 's/^/   /' | tee -a "$log" || true
  else
    gpu=0
  fi
  LD_LIBRARY_PATH=$host_ldp timeout 60 python3 - <<'EOF' 2>&1 | sed 's/^/   /' | tee -a "$log" || true
try:
    import torch
    print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, "
          f"cuda available: {torch.cuda.is_available()}")
    if torch.cuda.is_available():
        p = torch.cuda.get_device_properties(0)
        print(f"{p.name}: {p.multi_processor_count} SMs, {p.total_memory >> 20} MiB, capability {p.major}.{p.minor}")
except Exception as e:
    print(f"no torch here: {e}")
EOF
  if command -v nvcc >/dev/null; then
    nvcc --version | tail -2 | head -1 | sed 's/^/   nvcc: /' | tee -a "$log" || true
  fi
  if ((gpu == 0)); then
    say "   NO GPU: nvidia-smi is missing or failed; device tests skip, device examples and benchmarks do not run"
  fi
  ((missing == 0)) || say "   some CUDA libraries are missing: the binaries will not start"

  say "== tests"
  local t
  for t in "${tests[@]}"; do
    step test "$t" 150 "bin/$t" --gtest_color=no
  done

  say "== examples"
  for t in "${cpu_examples[@]}"; do
    step example "$t" 60 "bin/$t"
  done
  for t in "${device_examples[@]}"; do
    if ((gpu)); then
      step example "$t cuda" 60 env CXXGRAPH_EXAMPLE_DEVICE=cuda "bin/$t"
      step example "$t cuda graphs" 60 env CXXGRAPH_EXAMPLE_DEVICE=cuda GRAPH_CUDA_GRAPHS=1 "bin/$t"
    else
      step example "$t" 60 "bin/$t"
      printf 'STEP\texample\t%s cuda\tskipped-no-gpu\t0\n' "$t" | tee -a "$log"
    fi
  done

  # Random static functions on the device against the CPU (docs/fuzzing.md):
  # the binary stops starting functions past its own budget, so its summary
  # line comes out before the step's timeout. Without a GPU it says so.
  say "== progen"
  if [ -x "bin/$progen" ]; then
    local plimit=$((budget - SECONDS))
    ((plimit > 150)) && plimit=150
    step progen "$progen" "$plimit" "bin/$progen" --budget $((plimit > 40 ? plimit - 30 : 10))
  else
    printf 'STEP\tprogen\t%s\tskipped-not-packed\t0\n' "$progen" | tee -a "$log"
  fi

  say "== benchmarks"
  local q=()
  ((quick)) && q=(--quick)
  step bench "device_bench" 120 bin/device_bench "${q[@]}"
  if ((gpu)); then
    step bench "device_bench graphs" 60 env GRAPH_CUDA_GRAPHS=1 bin/device_bench "${q[@]}" lstm mlp_infer transformer
  fi

  say "== compute-sanitizer"
  local cs
  cs=$(find_tool compute-sanitizer || true)
  if ((gpu == 0)); then
    printf 'STEP\tsanitizer\tmemcheck\tskipped-no-gpu\t0\n' | tee -a "$log"
  elif [ -z "$cs" ]; then
    printf 'STEP\tsanitizer\tmemcheck\tskipped-no-tool\t0\n' | tee -a "$log"
  else
    # A subset: one test of each kind of device code (generated kernels,
    # fused reductions, cuBLASLt, cuDNN, layer_norm, capture, index walks) and one example.
    local subset='Cuda.GeneratedKernelOfABroadcastChainMatchesTheCpuLoop:Cuda.GeneratedFusedReductionsMatchTheCpuLoopNest'
    subset+=':Cuda.CublasLtEpilogueMatchesTheGemmAndItsOps:Cuda.Conv2dThroughCudnnForwardAndBackward'
    subset+=':Cuda.LayerNormKernelForwardAndBackward:Cuda.StaticGraphsAreCapturedPerSignatureAndReplayed'
    subset+=':Cuda.IndexOpsReportBadIndicesAsTheCpu:Cuda.IndexBackwardKernelsOfGraphs'  # bad indices stay in bounds
    step sanitizer "memcheck cuda_ops_test" 120 "$cs" --tool memcheck --error-exitcode 3 --print-limit 20 \
      bin/cuda_ops_test --gtest_color=no --gtest_filter="$subset"
    step sanitizer "racecheck cuda_ops_test" 45 "$cs" --tool racecheck --error-exitcode 3 --print-limit 20 \
      bin/cuda_ops_test --gtest_color=no --gtest_filter='Cuda.GeneratedFusedReductionsMatchTheCpuLoopNest:Cuda.ReductionsOverDims'
    step sanitizer "memcheck example_lenet cuda" 90 env CXXGRAPH_EXAMPLE_DEVICE=cuda \
      "$cs" --tool memcheck --error-exitcode 3 --print-limit 20 bin/example_lenet
  fi

  # PyTorch last: its compiled modes spend most of their time compiling,
  # and it prints each figure as it goes, so a timeout keeps what was done.
  # Its own library path: the bundle's libraries are not for it.
  say "== PyTorch on the same GPU"
  step bench "device_torch" 240 env LD_LIBRARY_PATH="$host_ldp" PYTHONUNBUFFERED=1 TMPDIR="$work" \
    python3 bench/device_torch.py "${q[@]}"

  say "== results (${SECONDS}s)"
  python3 tools/device_results.py "$log" "$out/results.md" "$out/summary.txt" "$gpu" || say "device_results.py failed"
  cat "$out/summary.txt" 2>/dev/null || true
  cd /
  rm -rf "$work"
}

case ${1:-} in
  pack) shift; pack "$@" ;;
  run) shift; run "$@" ;;
  verify) shift; verify "$@" ;;
  *) sed -n '2,/^set -e/p' "$0" | sed '$d' >&2; exit 2 ;;
esac
