#!/usr/bin/env python3
"""tools/device_results.py on the progen step of a device_check log: the
summary line it quotes, and FAILING exactly when the step found something,
crashed, ran out of time or contradicts its own line. Prints "ok" when all
cases hold."""
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "..", "..", "tools", "device_results.py")


def summarize(body, rc, secs="12", gpu="1"):
    with tempfile.TemporaryDirectory() as d:
        log = os.path.join(d, "log")
        with open(log, "w") as f:
            f.write("== device_check run\n   NVIDIA H200, 560.0\n== tests\n")
            f.write("---- progen progen_device (timeout 150s): bin/progen_device --budget 120\n")
            f.write(body)
            f.write(f"STEP\tprogen\tprogen_device\t{rc}\t{secs}\n")
        md, summary = os.path.join(d, "md"), os.path.join(d, "summary")
        subprocess.run([sys.executable, TOOL, log, md, summary, gpu], check=True, stdout=subprocess.DEVNULL)
        return open(summary).read(), open(md).read()


def expect(cond, what):
    if not cond:
        print("FAILED:", what)
        sys.exit(1)


ok_line = ("progen: cuda: 144 functions, 0 findings; each on its host variants as static (CUDA kernels), "
           "interpret and eager on the device vs eager on the CPU, forward and backward\n")
s, md = summarize("case s5001_pg0\n" + ok_line, "0")
expect("progen: cuda: 144 functions, 0 findings\n" in s and "FAILING" not in s, f"clean run: {s}")
expect("(ok, 12 s)" in md, f"clean run's table: {md}")

found = ("case s5001_pg3\nFINDING s5001_pg3 variant 1 (n=2, s=0.5) device=cuda mode=static: output 0: element 3: "
         "1 vs 2 (tol 0.0004)\nprogen: cuda: 144 functions, 1 findings; ...\n")
s, md = summarize(found, "1")
expect("1 findings" in s and "FAILING: progen FINDINGS" in s, f"a finding: {s}")
expect("FINDING s5001_pg3 variant 1" in md, f"the finding listed: {md}")

s, _ = summarize("progen: no CUDA device: 144 functions not run (to(kCUDA): no CUDA device (no driver))\n",
                 "0", gpu="0")
expect("progen: no CUDA device" in s and "144 functions not run" in s and "FAILING" not in s, f"no device: {s}")
s, _ = summarize("progen: no CUDA device: 144 functions not run (to(kCUDA): no CUDA device (no driver))\n", "0")
expect("FAILING: progen FAIL (no device, but nvidia-smi saw a GPU)" in s, f"no device on a GPU machine: {s}")

s, _ = summarize("case s5002_pg7\nSegmentation fault\n", "139")
expect("FAILING" in s and "rc 139" in s, f"a crash: {s}")

s, _ = summarize("case s5002_pg7\n", "timeout", secs="150")
expect("TIMEOUT" in s and "out of time: progen progen_device" in s, f"a timeout: {s}")

s, _ = summarize(ok_line, "1")
expect("FAILING" in s, f"a status that contradicts the line: {s}")

s, _ = summarize("", "skipped-not-packed")
expect("progen: skipped-not-packed" in s and "FAILING" not in s, f"not packed: {s}")
print("ok")
