#!/usr/bin/env python3
"""The TorchScript and torch.compile columns of tools/bench.sh: each workload of
bench/models.cpp written in PyTorch and compiled with torch.jit.script, or with
--compile by torch.compile (PyTorch 2.x from PyPI, in the venv
tools/torch_venv.sh makes; the _bf16 rows under torch.autocast), timed like bench_suite
(warm-up, repetitions of at least --min-time seconds, median time per call),
with torch.set_num_threads(--threads). Writes JSON:
  {"torch": version, "threads": n, "results": {workload: {"median_s": t} or {"na": reason}}}
"""
import argparse
import json
import re
import statistics
import time
from typing import List

import warnings

import torch
import torch.nn.functional as F

# PyTorch 2.x deprecates torch.jit.script (for torch.compile); it still runs.
warnings.filterwarnings("ignore", message=".*torch.jit.script.*is deprecated", category=FutureWarning)

FUNCTIONS = {}


def workload_fn(f):
    """Registers f; compiled per mode in main (torch.jit.script or torch.compile)."""
    FUNCTIONS[f.__name__] = f
    return f


@workload_fn
def copy(x):
    return x.clone()


@workload_fn
def triad(b, c):
    return b + c * 1.5


@workload_fn
def chain8(x, y):
    t = x + y
    t = t * 0.5
    t = torch.relu(t)
    t = t - y
    t = torch.tanh(t)
    t = torch.exp(t)
    t = torch.sigmoid(t)
    return -t


@workload_fn
def op_add(a, b):
    return a + b


@workload_fn
def op_relu(a):
    return torch.relu(a)


@workload_fn
def op_tanh(a):
    return torch.tanh(a)


@workload_fn
def op_sum(a):
    return a.sum()


@workload_fn
def op_softmax(a):
    return torch.softmax(a, 0)


@workload_fn
def op_matmul(a, b):
    return torch.matmul(a, b)


@workload_fn
def lstm(x, h, c, wx, wh, b, steps: int):
    H = 64
    xw = torch.matmul(x, wx) + b
    for _ in range(steps):
        gates = xw + torch.matmul(h, wh)
        i = torch.sigmoid(gates[:, 0:H])
        f = torch.sigmoid(gates[:, H:2 * H])
        g = torch.tanh(gates[:, 2 * H:3 * H])
        o = torch.sigmoid(gates[:, 3 * H:4 * H])
        c = f * c + i * g
        h = o * torch.tanh(c)
    return h


@workload_fn
def mlp_logits(x, w1, b1, w2, b2, w3, b3):
    h = torch.relu(F.linear(x, w1, b1))
    h = torch.relu(F.linear(h, w2, b2))
    return F.linear(h, w3, b3)


@workload_fn
def mlp(x, w1, b1, w2, b2, w3, b3):
    return torch.log_softmax(mlp_logits(x, w1, b1, w2, b2, w3, b3), 1)


@workload_fn
def mlp_loss(x, labels, w1, b1, w2, b2, w3, b3):
    return F.cross_entropy(mlp_logits(x, w1, b1, w2, b2, w3, b3), labels)


@workload_fn
def transformer(x, p: List[torch.Tensor]):
    D, Heads, Dh = 256, 4, 64
    n1 = F.layer_norm(x, [D], p[0], p[1], 1e-5)
    q = F.linear(n1, p[2], p[3]).reshape(8, 64, Heads, Dh).transpose(1, 2)
    k = F.linear(n1, p[4], p[5]).reshape(8, 64, Heads, Dh).transpose(1, 2)
    v = F.linear(n1, p[6], p[7]).reshape(8, 64, Heads, Dh).transpose(1, 2)
    probs = torch.softmax(torch.matmul(q, k.transpose(2, 3)) * 0.125, 3)
    ctx = torch.matmul(probs, v).transpose(1, 2).reshape(8, 64, D)
    r1 = x + F.linear(ctx, p[8], p[9])
    n2 = F.layer_norm(r1, [D], p[10], p[11], 1e-5)
    return r1 + F.linear(F.gelu(F.linear(n2, p[12], p[13])), p[14], p[15])


@workload_fn
def lenet(x, p: List[torch.Tensor]):
    h = F.max_pool2d(torch.relu(F.conv2d(x, p[0], p[1])), [2, 2])
    h = F.max_pool2d(torch.relu(F.conv2d(h, p[2], p[3])), [2, 2])
    h = torch.relu(F.linear(h.flatten(1), p[4], p[5]))
    h = torch.relu(F.linear(h, p[6], p[7]))
    return F.linear(h, p[8], p[9])


def weight(*shape, fan_in):
    return torch.randn(*shape) / fan_in ** 0.5


def workloads(fn):
    """name -> a call with its inputs bound (the shapes of bench/suite.cpp); fn maps each
    function's name to its compiled form."""
    x, y = torch.rand(16 << 20), torch.rand(16 << 20)
    a, b, m = torch.rand(64), torch.rand(64), torch.rand(8, 8)
    H = 64
    ls = [torch.randn(1, H), torch.randn(1, H), torch.randn(1, H),
          weight(H, 4 * H, fan_in=H), weight(H, 4 * H, fan_in=H), weight(4 * H, fan_in=H)]
    g = {n: (torch.rand(n, n), torch.rand(n, n)) for n in (256, 1024)}
    mx, labels = torch.rand(64, 784), torch.randint(0, 10, (64,))
    mp = [weight(512, 784, fan_in=784), weight(512, fan_in=784), weight(512, 512, fan_in=512),
          weight(512, fan_in=512), weight(10, 512, fan_in=512), weight(10, fan_in=512)]
    D, Fd = 256, 1024
    tx = torch.randn(8, 64, D)
    tp = [torch.ones(D), torch.zeros(D)] + [weight(*s, fan_in=D) for s in [(D, D), (D,)] * 4] + \
         [torch.ones(D), torch.zeros(D), weight(Fd, D, fan_in=D), weight(Fd, fan_in=D),
          weight(D, Fd, fan_in=Fd), weight(D, fan_in=Fd)]
    lx = torch.rand(64, 1, 28, 28)
    lp = [weight(6, 1, 5, 5, fan_in=25), weight(6, fan_in=25), weight(16, 6, 5, 5, fan_in=150),
          weight(16, fan_in=150), weight(120, 256, fan_in=256), weight(120, fan_in=256),
          weight(84, 120, fan_in=120), weight(84, fan_in=120), weight(10, 84, fan_in=84), weight(10, fan_in=84)]
    params = [p.clone().requires_grad_() for p in mp]

    def train_step():  # as a TorchScript user trains: scripted forward, autograd, SGD
        for p in params:
            p.grad = None
        loss = fn["mlp_loss"](mx, labels, *params)
        loss.backward()
        with torch.no_grad():
            for p in params:
                p.sub_(p.grad, alpha=0.01)

    def bf16(call):  # torch.autocast("cpu", torch.bfloat16) around each call, as a user writes it
        def run():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return call()
        return run

    return {
        "copy_16M": lambda: fn["copy"](x),
        "triad_16M": lambda: fn["triad"](x, y),
        "chain8_16M": lambda: fn["chain8"](x, y),
        "op64_add": lambda: fn["op_add"](a, b),
        "op64_relu": lambda: fn["op_relu"](a),
        "op64_tanh": lambda: fn["op_tanh"](a),
        "op64_sum": lambda: fn["op_sum"](a),
        "op64_softmax": lambda: fn["op_softmax"](a),
        "op_matmul_8x8": lambda: fn["op_matmul"](m, m),
        "lstm_h64_100steps": lambda: fn["lstm"](*ls, 100),
        "sgemm_256": lambda: fn["op_matmul"](*g[256]),
        "sgemm_1024": lambda: fn["op_matmul"](*g[1024]),
        "mlp_infer_b64": lambda: fn["mlp"](mx, *mp),
        "mlp_train_step_b64": train_step,
        "transformer_b8_s64_d256": lambda: fn["transformer"](tx, tp),
        "lenet_b64": lambda: fn["lenet"](lx, lp),
        "sgemm_1024_bf16": bf16(lambda: fn["op_matmul"](*g[1024])),
        "mlp_infer_b64_bf16": bf16(lambda: fn["mlp"](mx, *mp)),
        "transformer_b8_s64_d256_bf16": bf16(lambda: fn["transformer"](tx, tp)),
    }


# torch.compile's column: the workloads issue 26 compares with it (each compile
# takes seconds of inductor and g++ time, so not the small ops or the LSTM's
# 100 unrolled steps).
COMPILED = ("chain8_16M", "sgemm_1024", "mlp_infer_b64", "transformer_b8_s64_d256", "lenet_b64",
            "sgemm_1024_bf16", "mlp_infer_b64_bf16", "transformer_b8_s64_d256_bf16")


def median_time(call, repetitions, min_time):
    for _ in range(3):  # warm-up: the profiling executor optimizes after two runs
        call()
    iters, times = 1, []
    while True:  # how many calls take at least min_time
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        elapsed = time.perf_counter() - t0
        if elapsed >= min_time:
            break
        iters = max(iters * 2, int(iters * min_time / max(elapsed, 1e-9) * 1.2))
    times.append(elapsed / iters)
    for _ in range(repetitions - 1):
        t0 = time.perf_counter()
        for _ in range(iters):
            call()
        times.append((time.perf_counter() - t0) / iters)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repetitions", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.2)
    ap.add_argument("--json", required=True)
    ap.add_argument("--only", default="", help="a regular expression: time only the workloads it matches")
    ap.add_argument("--compile", action="store_true",
                    help="torch.compile (inductor, default mode) instead of torch.jit.script, "
                         "for the workloads in COMPILED")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    if args.compile:
        fn = {name: torch.compile(f, dynamic=False) for name, f in FUNCTIONS.items()}
    else:
        fn = {name: torch.jit.script(f) for name, f in FUNCTIONS.items()}
    results = {}
    for name, call in workloads(fn).items():
        if not re.search(args.only, name) or (args.compile and name not in COMPILED):
            continue
        grad = torch.enable_grad() if name == "mlp_train_step_b64" else torch.no_grad()
        with grad:
            try:
                results[name] = {"median_s": median_time(call, args.repetitions, args.min_time)}
            except Exception as e:  # an inductor failure is a cell, not the end of the run
                results[name] = {"na": f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"}
    with open(args.json, "w") as f:
        json.dump({"torch": torch.__version__, "threads": args.threads, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
