#pragma once
// bench_libtorch's helpers (libtorch_bench.cpp), shared with the model-suite
// rows (libtorch_models.cpp).
#include <ATen/ATen.h>

#include <cstdint>
#include <functional>
#include <string>

namespace libtorch_bench {

// Times `call` as "<workload>/libtorch", after two warm-up calls.
void add(const std::string& workload, std::function<void()> call);
void keep(const at::Tensor& t);
// randn scaled by 1/sqrt(fan_in), as bench/suite.cpp's weights.
at::Tensor weight(at::IntArrayRef shape, int64_t fan_in);

// The model suite and the per-op rows of issue 19 (libtorch_models.cpp).
void register_models();

}  // namespace libtorch_bench
