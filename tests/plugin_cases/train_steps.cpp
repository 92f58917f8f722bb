// Static train steps: what of `loss.backward()` the plugin lowers, and the
// -Wgraph-fallback warning for each form it does not (`// expect@<col>:` as in
// fallbacks.cpp).
#include <graph/graph.h>

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
