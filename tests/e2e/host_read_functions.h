#pragma once
// Annotated functions for the host-read end-to-end tests (host_read_test.cpp):
// values read from tensors with item<T>() feeding host control flow and host
// math (std::sqrt, std::exp, std::pow, ...), and the method forms x.pow(e),
// x.clamp(lo, hi) (issues 19 and 20). Each is compared with its eager body.
#include <graph/graph.h>

#include <cstdint>

namespace hostread {
using graph::Tensor;

Tensor greedy_decode(Tensor h0, Tensor w, Tensor emb, int64_t eos, int64_t max_steps);
Tensor normalize_by_item(Tensor x);
Tensor host_math(Tensor x, double d, int n);
Tensor pow_clamp(Tensor x, Tensor e);
Tensor item_of_many(Tensor x);

}  // namespace hostread
