"""PyTorch's side of bench/eager_math_bench.cpp: the same calls, shapes and
statistic (median of 15, ms), one thread."""
import statistics
import time

import torch
import torch.nn.functional as F

torch.set_num_threads(1)
x = torch.randn(2048, 1024) * 3
p = torch.rand(2048, 1024) + 0.01
y = torch.rand(2048, 1024)


def median_ms(f):
    f()
    t = []
    for _ in range(15):
        t0 = time.perf_counter()
        f()
        t.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(t)


print("torch", torch.__version__)
print("log         %8.2f ms" % median_ms(lambda: torch.log(p)))
print("log1p       %8.2f ms" % median_ms(lambda: torch.log1p(p)))
print("softplus    %8.2f ms" % median_ms(lambda: F.softplus(x)))
print("bce_logits  %8.2f ms" % median_ms(lambda: F.binary_cross_entropy_with_logits(x, y)))
print("bce         %8.2f ms" % median_ms(lambda: F.binary_cross_entropy(torch.sigmoid(x), y)))
