// Member functions and inlined callees: a Module's forward reads its
// parameters and submodules through `this` (graph inputs the prologue passes
// at each call), and calls to functions whose bodies are visible are lowered
// in place, graph::nn modules included.
#include <graph/graph.h>

using namespace graph;

Tensor scale_by(const Tensor& x, double s) { return x * s; }

Tensor helper_with_exit(Tensor x, int n) {
  if (n > 0) return relu(x);
  return x;
}

int recurse(int n) { return n <= 0 ? 0 : recurse(n - 1); }  // expect@42: the recursive call to 'recurse' cannot be lowered

struct MLP : nn::Module {
  MLP() : fc1(register_module("fc1", nn::Linear(4, 8))), fc2(register_module("fc2", nn::Linear(8, 2))) {}
  [[graph::static]] Tensor forward(Tensor x) {  // lowers
    Tensor h = relu(fc1->forward(x));
    return fc2(h) * scale + offset;
  }
  nn::Linear fc1, fc2;
  double scale = 2.0;
  Tensor offset = zeros({2});
};

class Block : public nn::Module {
 public:
  [[graph::static]] Tensor run(Tensor x, int n) { return helper_with_exit(scale_by(mix(x), 0.5), n) + bias; }  // lowers
  [[graph::static]] static Tensor static_member(Tensor x) { return relu(x); }  // lowers

 private:
  Tensor mix(Tensor x) { return matmul(x, weight); }
  Tensor weight = ones({3, 3});
  Tensor bias = zeros({3});
};

struct Inner {
  Tensor w;
 private:
  Tensor hidden;
  friend struct Outer;
};

struct Outer {
  Inner inner;
  Inner* ptr = nullptr;
  [[graph::static]] Tensor through_object(Tensor x) { return x * inner.w + ptr->w; }  // lowers
  [[graph::static]] Tensor private_of_other(Tensor x) {
    return x + inner.hidden;  // expect@22: the member 'Inner::hidden' is not accessible from 'Outer::private_of_other'
  }
};

struct Base {
  virtual ~Base() = default;
  virtual Tensor f(Tensor x) { return x; }
};

struct UsesVirtual {
  Base* base = nullptr;
  [[graph::static]] Tensor call(Tensor x) {
    return base->f(x);  // expect@18: the virtual call to 'Base::f' cannot be lowered
  }
};

struct Final final : Base {
  Tensor f(Tensor x) override { return -x; }
};

struct UsesFinal {
  Final fin;
  [[graph::static]] Tensor call(Tensor x) { return fin.f(x) * 2; }  // lowers: call
};

[[graph::static]] Tensor calls_recursive(Tensor x) {
  return x * recurse(3);
}

nn::Linear global_layer(3, 3);

[[graph::static]] Tensor global_module(Tensor x) {  // lowers
  return global_layer(x) + global_layer->forward(x);
}

Tensor add_one(Tensor& t) { t = t + 1; return t; }  // expect@29: the assignment to the reference parameter 't' would write to the caller's variable

[[graph::static]] Tensor calls_writer(Tensor x) {
  return add_one(x);
}
