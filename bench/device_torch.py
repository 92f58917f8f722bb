#!/usr/bin/env python3
"""PyTorch's columns for the device benchmark (bench/device_bench.cpp).

The same workloads, sizes and timing method as device_bench: eager,
torch.compile (default mode) and torch.compile(mode="reduce-overhead"),
which replays CUDA graphs. Prints the same tab-separated lines:
  RESULT <workload> <impl> <median us per call> <note>
FP32 throughout (TF32 off in cuBLAS and cuDNN), as cxxgraph computes.

Usage: device_torch.py [--quick] [--modes eager,reduce-overhead,compile]
                       [workload-name-substring...]
Without torch or a GPU it says so and exits 0 (tools/device_check.sh dry runs).
"""
import argparse
import math
import os
import sys
import time
import traceback


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="16M floats and fewer repetitions")
    ap.add_argument("--modes", default="eager,reduce-overhead,compile")
    ap.add_argument("filters", nargs="*")
    args = ap.parse_args()
    try:
        import torch
    except ImportError as e:
        print(f"device_torch: no torch ({e}): nothing measured")
        return 0
    if not torch.cuda.is_available():
        print(f"device_torch: no GPU (torch {torch.__version__}): nothing measured")
        return 0
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    print(f"device_torch: torch {torch.__version__}, {torch.cuda.get_device_name()}, "
          f"CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}", flush=True)
    B = Bench(torch, args)
    failures = 0
    # Mode by mode, every workload in each: eager takes seconds, each compiled
    # mode tens of seconds per workload, and the device check's timeout may
    # stop this part way; what was printed by then is kept.
    modes = [m for m in args.modes.split(",") if m]
    for i, mode in enumerate(modes):
        B.modes = [mode]
        for name, fn in B.workloads():
            if args.filters and not any(f in name for f in args.filters):
                continue
            if name.startswith("copy_") and i > 0:
                continue  # no mode: measured once
            try:
                fn(name)
            except Exception as e:  # one workload's failure is reported, the rest still run
                failures += 1
                traceback.print_exc()
                print(f"RESULT\t{name}\t{IMPL[mode]}\tnan\tERROR {type(e).__name__}: "
                      f"{str(e).splitlines()[0][:160] if str(e) else ''}", flush=True)
    print(f"device_torch: {failures} failed workload(s)")
    return 1 if failures else 0


IMPL = {"eager": "torch_eager", "compile": "torch_compile", "reduce-overhead": "torch_compile_reduce_overhead"}


class Bench:
    def __init__(self, torch, args):
        self.torch = torch
        self.quick = args.quick
        self.modes = []  # set per pass by main()
        self.dev = torch.device("cuda")

    def workloads(self):
        size = "16M" if self.quick else "256M"
        return [(f"copy_{size}", self.copy), (f"chain8_{size}", self.chain8),
                ("lstm_b1_h64_100steps", self.lstm),
                ("mlp_infer_b64", lambda n: self.mlp_infer(n, 64)),
                ("mlp_infer_b4096", lambda n: self.mlp_infer(n, 4096)),
                ("mlp_sgd_b64", lambda n: self.mlp_sgd(n, 64)),
                ("mlp_sgd_b4096", lambda n: self.mlp_sgd(n, 4096)),
                ("transformer_b8_s64_d256", self.transformer)]

    # Median seconds per call, `calls` calls per sample between two
    # synchronizations, after warm-up calls (compilation, CUDA graph capture).
    def median_s(self, fn, calls, samples, warmup=3):
        sync = self.torch.cuda.synchronize
        for _ in range(warmup):
            fn()
        sync()
        t = []
        for _ in range(samples):
            start = time.perf_counter()
            for _ in range(calls):
                fn()
            sync()
            t.append((time.perf_counter() - start) / calls)
        t.sort()
        return t[len(t) // 2]

    def result(self, name, impl, s, note=""):
        print(f"RESULT\t{name}\t{impl}\t{s * 1e6:.2f}\t{note}", flush=True)

    # The function as each mode runs it. reduce-overhead reuses its output
    # buffers between replays: mark each call as a new step.
    def variants(self, f):
        torch = self.torch
        for mode in self.modes:
            if mode == "eager":
                yield IMPL[mode], f
            elif mode == "compile":
                yield IMPL[mode], torch.compile(f)
            elif mode == "reduce-overhead":
                g = torch.compile(f, mode="reduce-overhead")

                def step(*a, _g=g):
                    torch.compiler.cudagraph_mark_step_begin()
                    return _g(*a)
                yield IMPL[mode], step
            else:
                raise ValueError(f"unknown mode {mode}")

    def time_all(self, name, f, args, calls, samples, note=""):
        for impl, g in self.variants(f):
            t0 = time.perf_counter()
            g(*args)  # compiles; kept out of the timing, reported in the note
            first = time.perf_counter() - t0
            s = self.median_s(lambda: g(*args), calls, samples)
            self.result(name, impl, s, (note + "; " if note else "") + f"first call {first:.1f} s")

    def copy(self, name):
        torch = self.torch
        n = (16 if self.quick else 256) << 20
        x = torch.rand(n, device=self.dev)
        dst = torch.empty_like(x)
        s = self.median_s(lambda: dst.copy_(x), 1, 3 if self.quick else 10)
        self.result(name, "torch_copy", s, f"{2 * 4 * n / s / 1e9:.0f} GB/s (read + write)")

    def chain8(self, name):
        torch = self.torch
        n = (16 if self.quick else 256) << 20
        x = torch.rand(n, device=self.dev)
        y = torch.rand(n, device=self.dev)

        def f(x, y):
            t = (x + y) * 0.5
            t = torch.relu(t) - y
            return -torch.sigmoid(torch.exp(torch.tanh(t)))
        for impl, g in self.variants(f):
            g(x, y)
            s = self.median_s(lambda: g(x, y), 1, 3 if self.quick else 10)
            self.result(name, impl, s, f"{3 * 4 * n / s / 1e9:.0f} GB/s")

    def lstm(self, name):
        torch = self.torch
        H, steps = 64, 100
        g = torch.Generator(device="cpu").manual_seed(2)
        r = lambda *s: torch.randn(*s, generator=g).to(self.dev)
        x, h, c = r(1, H), r(1, H), r(1, H)
        wx, wh, b = r(H, 4 * H) * 0.1, r(H, 4 * H) * 0.1, r(4 * H) * 0.1

        def f(x, h, c, wx, wh, b):
            xw = x @ wx + b
            for _ in range(steps):
                gates = xw + h @ wh
                i, fo, cell, o = gates.split(H, dim=1)
                c = torch.sigmoid(fo) * c + torch.sigmoid(i) * torch.tanh(cell)
                h = torch.sigmoid(o) * torch.tanh(c)
            return h
        with torch.no_grad():
            self.time_all(name, f, (x, h, c, wx, wh, b), 2 if self.quick else 10, 3 if self.quick else 15)

    def mlp_params(self, batch):
        torch = self.torch
        g = torch.Generator(device="cpu").manual_seed(3)
        w = lambda o, i, s: (torch.randn(o, i, generator=g) * s).to(self.dev)
        p = [w(512, 784, 0.035), torch.zeros(512, device=self.dev), w(512, 512, 0.044),
             torch.zeros(512, device=self.dev), w(10, 512, 0.044), torch.zeros(10, device=self.dev)]
        x = torch.randn(batch, 784, generator=g).to(self.dev)
        labels = torch.randint(0, 10, (batch,), generator=g).to(self.dev)
        return p, x, labels

    def mlp_forward(self, x, w1, b1, w2, b2, w3, b3):
        F = self.torch.nn.functional
        h = F.relu(F.linear(x, w1, b1))
        h = F.relu(F.linear(h, w2, b2))
        return F.linear(h, w3, b3)

    def mlp_infer(self, name, batch):
        torch = self.torch
        p, x, _ = self.mlp_params(batch)

        def f(x, *p):
            return torch.log_softmax(self.mlp_forward(x, *p), 1)
        with torch.no_grad():
            self.time_all(name, f, (x, *p), 2 if self.quick else 20, 3 if self.quick else 15)

    # Forward + loss compiled (AOTAutograd compiles its backward too),
    # backward and SGD as a user writes them: what device_bench's static
    # column does with its compiled loss graph.
    def mlp_sgd(self, name, batch):
        torch = self.torch
        p, x, labels = self.mlp_params(batch)
        params = [t.clone().requires_grad_() for t in p]
        opt = torch.optim.SGD(params, lr=0.01)

        def loss_fn(x, labels, *p):
            return torch.nn.functional.cross_entropy(self.mlp_forward(x, *p), labels)
        for impl, g in self.variants(loss_fn):
            def step(g=g):
                loss = g(x, labels, *params)
                opt.zero_grad()
                loss.backward()
                opt.step()
            t0 = time.perf_counter()
            step()
            first = time.perf_counter() - t0
            s = self.median_s(step, 2 if self.quick else 10, 3 if self.quick else 15)
            self.result(name, impl, s, f"loss compiled, backward and SGD eager; first call {first:.1f} s")

    def transformer(self, name):
        torch = self.torch
        F = torch.nn.functional
        D, FF, heads, dh = 256, 1024, 4, 64
        g = torch.Generator(device="cpu").manual_seed(4)
        w = lambda o, i: (torch.randn(o, i, generator=g) / math.sqrt(i)).to(self.dev)
        z = lambda n: torch.zeros(n, device=self.dev)
        o = lambda n: torch.ones(n, device=self.dev)
        args = (torch.randn(8, 64, D, generator=g).to(self.dev), o(D), z(D), w(D, D), z(D), w(D, D), z(D),
                w(D, D), z(D), w(D, D), z(D), o(D), z(D), w(FF, D), z(FF), w(D, FF), z(D))

        def f(x, ln1_w, ln1_b, wq, bq, wk, bk, wv, bv, wo, bo, ln2_w, ln2_b, w1, b1, w2, b2):
            n1 = F.layer_norm(x, (D,), ln1_w, ln1_b, 1e-5)
            q = F.linear(n1, wq, bq).reshape(8, 64, heads, dh).transpose(1, 2)
            k = F.linear(n1, wk, bk).reshape(8, 64, heads, dh).transpose(1, 2)
            v = F.linear(n1, wv, bv).reshape(8, 64, heads, dh).transpose(1, 2)
            probs = torch.softmax(q @ k.transpose(2, 3) * 0.125, 3)
            ctx = (probs @ v).transpose(1, 2).reshape(8, 64, D)
            r1 = x + F.linear(ctx, wo, bo)
            n2 = F.layer_norm(r1, (D,), ln2_w, ln2_b, 1e-5)
            return r1 + F.linear(F.gelu(F.linear(n2, w1, b1)), w2, b2)
        with torch.no_grad():
            self.time_all(name, f, args, 2 if self.quick else 20, 3 if self.quick else 15)


if __name__ == "__main__":
    os.environ.setdefault("TORCHINDUCTOR_CACHE_DIR", os.path.join(os.environ.get("TMPDIR", "/tmp"), "inductor"))
    sys.exit(main())
