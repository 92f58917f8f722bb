// Modules with state in static forwards (issue 19): is_training() and other
// host getters are graph inputs read at each call; in-place updates of
// member tensors are functionalized and written back at the end of the graph
// (the assign primitive); nn::BatchNorm's forward lowers whole. What some of
// these lower to is checked by Lowering.ModuleState in plugin_corpus_test.cpp.
#include <graph/graph.h>

using namespace graph;

struct BranchyImpl : nn::Module {
  BranchyImpl() : nn::Module("Branchy") {}
  [[graph::static]] Tensor forward(Tensor x) {  // lowers: forward
    if (is_training()) return x * 2;
    return x + 1;
  }
};

struct CounterImpl : nn::Module {
  CounterImpl() : nn::Module("Counter") {
    register_buffer("total", &total);
  }
  [[graph::static]] Tensor forward(Tensor x) {  // lowers: forward.1
    total.mul_(0.5);
    total.add_(x.sum());
    if (is_training()) total.add_(1);
    return x * total;
  }
  [[graph::static]] Tensor chained(Tensor x) {  // lowers
    total.mul_(0.5).add_(x.mean());
    return x - total;
  }
  [[graph::static]] Tensor copied(Tensor x) {  // lowers
    total.copy_(x.amax());
    total.zero_();
    total.fill_(2.0);
    return x;
  }
  [[graph::static]] Tensor in_a_loop(Tensor x, int n) {
    for (int i = 0; i < n; ++i) total.add_(1);  // expect@39: 'add_' of a member inside a loop or a '?:' cannot be lowered yet
    return x;  // lowers: in_a_loop.region1
  }
  [[graph::static]] Tensor of_a_view(Tensor x) {
    total.view({-1}).add_(x.sum());  // expect@22: 'add_' writes in place into a tensor that is not a member reachable from 'this'
    return x;  // lowers: of_a_view.region1
  }
  [[graph::static]] Tensor of_a_local(Tensor x) {
    Tensor y = x * 2;  // lowers: of_a_local.region0
    y.add_(1);  // expect@7: 'add_' writes in place into a tensor that is not a member reachable from 'this'
    return y;  // lowers: of_a_local.region1
  }
  [[graph::static]] Tensor of_a_parameter(Tensor x) {
    x.mul_(2);  // expect@7: 'mul_' writes in place into a tensor that is not a member reachable from 'this'
    return x;  // lowers: of_a_parameter.region1
  }
  Tensor total = zeros({});
};

struct NetImpl : nn::Module {
  NetImpl()
      : nn::Module("Net"),
        bn(register_module("bn", nn::BatchNorm1d(nn::BatchNorm1dOptions(3).momentum(std::nullopt)))),
        drop(register_module("drop", nn::Dropout(0.25))) {}
  [[graph::static]] Tensor forward(Tensor x) {  // lowers: forward.2
    return drop(bn(x));
  }
  nn::BatchNorm1d bn;
  nn::Dropout drop;
};
