#!/bin/sh
# The onnx_runtime CTest: writes the cases (onnx_cases) and checks them with
# onnx.checker and ONNX Runtime (check_onnx.py) from PyPI, in a venv made once
# per build directory. Without network access to PyPI the venv cannot be made:
# exit 77, which CTest reports as skipped.
#   run_onnx_check.sh VENV ONNX_CASES WORKDIR CHECK_SCRIPT
set -eu
venv=$1 cases=$2 work=$3 script=$4
# The versions the test was verified with (docs/onnx.md); pinned so that a
# new release cannot change a result unnoticed.
pkgs="onnxruntime==1.32.0 onnx==1.23.2 numpy==2.4.6"
if ! "$venv/bin/python" -c 'import onnx, onnxruntime, numpy' 2>/dev/null; then
  rm -rf "$venv"
  log="$venv.log"
  if ! python3 -m venv "$venv" >"$log" 2>&1 ||
     ! "$venv/bin/pip" install --disable-pip-version-check -q $pkgs >>"$log" 2>&1; then
    echo "SKIP: could not make a venv with $pkgs from PyPI (offline, or no python3-venv); see $log"
    rm -rf "$venv"
    exit 77
  fi
fi
rm -rf "$work"
mkdir -p "$work"
"$cases" "$work"
exec "$venv/bin/python" "$script" "$work"
