// Static train steps: what of `loss.backward()` the plugin lowers, and the
// -Wgraph-fallback warning for each form it does not (`// expect@<col>:` as in
// fallbacks.cpp).
#include <graph/graph.h>
#include <graph/optim.h>

using namespace graph;

struct Net : nn::Module {
  Net() : fc(register_module("fc", nn::Linear(4, 3))) {}
  nn::Linear fc;
  [[graph::static]] Tensor step(Tensor x, Tensor y) {
    Tensor loss = cross_entropy(fc(x), y);
    loss.backward();
    return loss;
  }
  [[graph::static]] Tensor in_if(Tensor x, Tensor y, bool b) {
    Tensor loss = cross_entropy(fc(x), y);
    if (b) loss.backward();  // expect@17: loss.backward() is lowered only at the top level of the function
    return loss;
  }
  [[graph::static]] Tensor seeded(Tensor x) {
    Tensor out = fc(x);
    out.backward(out);  // expect@9: loss.backward() with arguments
    return out;
  }
  // zero_grad() and step() of an optimizer member lower into the same graph.
  optim::SGD* opt = nullptr;
  [[graph::static]] Tensor whole(Tensor x, Tensor y) {
    opt->zero_grad();
    Tensor loss = cross_entropy(fc(x), y);
    loss.backward();
    opt->step();
    return loss;
  }
  [[graph::static]] Tensor step_in_if(Tensor x, Tensor y, bool b) {
    Tensor loss = cross_entropy(fc(x), y);
    loss.backward();
    if (b) opt->step();  // expect@17: optimizer step() is lowered only at the top level of the function
    return loss;
  }
  [[graph::static]] Tensor zero_grad_in_loop(Tensor x, int64_t n) {
    for (int64_t i = 0; i < n; ++i) opt->zero_grad();  // expect@42: optimizer zero_grad() is lowered only at the top level
    return fc(x);
  }
  // A member read after step() would see the updated values: a graph break.
  Tensor scale = ones({3});
  [[graph::static]] Tensor read_after_step(Tensor x, Tensor y) {
    Tensor loss = cross_entropy(fc(x) * scale, y);
    loss.backward();
    opt->step();
    return loss * scale;  // expect@19: is read after the optimizer's step() in the graph
  }
  [[graph::static]] Tensor vector_loss(Tensor x) {
    Tensor out = fc(x);
    out.backward();  // expect@9: grad can be implicitly created only for scalar outputs
    return out;
  }
};

[[graph::static]] Tensor no_parameters(Tensor x, Tensor w) {
  Tensor loss = (x * w).sum();
  loss.backward();  // expect@8: the function reads no parameter through 'this' or a module
  return loss;
}
