"""Checks the models onnx_cases wrote, with tools independent of cxxgraph:
onnx.checker (full_check: also ONNX's strict shape inference, against the
types the exporter declared) accepts each model, and ONNX Runtime, run on the
case's inputs, reproduces cxxgraph's eager outputs.

usage: check_onnx.py DIR   (DIR/cases.txt lists "NAME INPUTS OUTPUTS")
"""
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort

RTOL = 1e-5
ATOL = 1e-5  # values near 0 after sums of ~100 float32 products


def check_case(d, name, n_in, n_out):
    path = os.path.join(d, name + ".onnx")
    model = onnx.load(path)
    onnx.checker.check_model(model, full_check=True)
    opts = ort.SessionOptions()
    opts.log_severity_level = 3
    sess = ort.InferenceSession(path, opts, providers=["CPUExecutionProvider"])
    inputs = sess.get_inputs()
    if len(inputs) != n_in:
        return [f"{name}: the model has {len(inputs)} inputs, expected {n_in}"]
    feeds = {inp.name: np.load(os.path.join(d, f"{name}.in{i}.npy")) for i, inp in enumerate(inputs)}
    got = sess.run(None, feeds)
    if len(got) != n_out:
        return [f"{name}: the model has {len(got)} outputs, expected {n_out}"]
    errors = []
    for i, g in enumerate(got):
        want = np.load(os.path.join(d, f"{name}.out{i}.npy"))
        where = f"{name} output{i}"
        if g.dtype != want.dtype or g.shape != want.shape:
            errors.append(f"{where}: {g.dtype}{list(g.shape)}, expected {want.dtype}{list(want.shape)}")
            continue
        if want.dtype.kind in "biu":
            if not np.array_equal(g, want):
                errors.append(f"{where}: {int((g != want).sum())} elements differ")
        elif not np.allclose(g, want, rtol=RTOL, atol=ATOL, equal_nan=True):
            err = np.abs(g.astype(np.float64) - want)
            errors.append(f"{where}: max abs error {err.max():.3g} at {np.unravel_index(err.argmax(), err.shape)}")
    print(f"{name}: {'ok' if not errors else 'FAILED'} ({n_in} inputs, {n_out} outputs, "
          f"{len(model.graph.node)} ONNX nodes)")
    return errors


def main():
    d = sys.argv[1]
    print(f"onnx {onnx.__version__}, onnxruntime {ort.__version__}, numpy {np.__version__}")
    errors = []
    with open(os.path.join(d, "cases.txt")) as f:
        for line in f:
            name, n_in, n_out = line.split()
            errors += check_case(d, name, int(n_in), int(n_out))
    for e in errors:
        print("error:", e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
