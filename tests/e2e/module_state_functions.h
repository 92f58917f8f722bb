#pragma once
// Modules with state in static forwards (issue 19; module_state_test.cpp):
// is_training() read at each call, member buffers updated in place and
// written back at the end of the graph, nn::BatchNorm and nn::Dropout.
#include <graph/graph.h>

namespace modstate {
using graph::Tensor;

// Different arithmetic in train() and eval().
struct ModeSwitchImpl : graph::nn::Module {
  ModeSwitchImpl() : graph::nn::Module("ModeSwitch") {}
  Tensor forward(const Tensor& x);
};
GRAPH_MODULE(ModeSwitch);

// Buffers updated in place: `count` (int64, one add_ a call), `total` (mul_
// then add_), `scale` (copy_ in train() only).
struct RunningSumImpl : graph::nn::Module {
  RunningSumImpl();
  Tensor forward(const Tensor& x);
  Tensor total, scale;
  GRAPH_MEMBER_DTYPE("i64") Tensor count;
};
GRAPH_MODULE(RunningSum);

// nn::BatchNorm1d (momentum unset: cumulative averages), then nn::Dropout.
struct NormDropImpl : graph::nn::Module {
  NormDropImpl(int64_t channels, double p);
  Tensor forward(const Tensor& x);
  graph::nn::BatchNorm1d bn;
  graph::nn::Dropout drop;
};
GRAPH_MODULE(NormDrop);

// nn::BatchNorm2d alone (the float64 gradient check reads its graph).
struct Norm2dImpl : graph::nn::Module {
  explicit Norm2dImpl(int64_t channels);
  Tensor forward(const Tensor& x);
  graph::nn::BatchNorm2d bn;
};
GRAPH_MODULE(Norm2d);

}  // namespace modstate
