#pragma once
// Annotated functions for the C++-subset end-to-end tests (subset_test.cpp):
// tuples and structured bindings, optional tensors, shapes as host ints,
// switch, do-while and integer / and %. Each is compared with its eager body.
#include <graph/graph.h>

#include <tuple>
#include <utility>
#include <vector>

namespace subset {
using graph::Tensor;

// Tuples.
Tensor lstm_steps(Tensor x0, Tensor x1, Tensor h, Tensor c, Tensor W, Tensor U, Tensor b);
std::pair<Tensor, Tensor> lstm_sequence(const std::vector<Tensor>& xs, Tensor h, Tensor c, Tensor W, Tensor U,
                                        Tensor b);
Tensor tuple_branches(Tensor x, int k);
std::tuple<Tensor, int> tuple_param(std::pair<Tensor, int> p, Tensor x);

// A module whose forward calls graph::nn::LSTMCell and a Linear without bias.
struct LSTMNetImpl : graph::nn::Module {
  LSTMNetImpl();
  std::pair<Tensor, Tensor> forward(Tensor x, Tensor h, Tensor c);
  graph::nn::LSTMCell cell;
  graph::nn::Linear head;
};

// Optional tensors.
Tensor maybe_bias(Tensor x, Tensor bias);
Tensor bias_on_one_path(Tensor x, Tensor w, bool use);  // `Tensor b;` assigned under an if
struct NoBiasImpl : graph::nn::Module {
  NoBiasImpl();
  Tensor forward(Tensor x);
  graph::nn::Linear fc;
};

// Shapes as host ints.
Tensor flatten_batch(Tensor x);
Tensor halves(Tensor x);
Tensor size_out_of_range(Tensor x);

// Statements.
Tensor int_ops(Tensor x, int a, int b);
Tensor conversions(Tensor x, int n, double d);
Tensor pick(Tensor x, int k);
Tensor switch_fallthrough(Tensor x, int k);
Tensor switch_in_loop(Tensor x, int n);
Tensor do_while(Tensor x, int n);
// Attributes known at run time: host scalars and ints, braced lists of them,
// and list members (`Shape`) of graph::nn modules, read at each call.
Tensor runtime_attrs(Tensor x, int64_t d, double eps, int64_t s);
// Int lists known at run time: another tensor's sizes(), a local Shape edited
// element by element, a local std::vector<int64_t>.
Tensor reshape_like(Tensor x, Tensor like);    // x.reshape(like.sizes()) + like
Tensor view_expand(Tensor x, Tensor like);     // x.view(x.sizes()).expand(like.sizes()) * like
Tensor local_shape(Tensor x, int64_t k);       // x [a, b]: reshape to [a * k, -1], then permute {1, 0}
Tensor shape_branches(Tensor x, int k);        // sizes edited in an if and a loop, then reshape
Tensor shape_params(Tensor x, const graph::Shape& s, std::vector<int64_t> dims);  // int lists as parameters
Tensor factories(Tensor x, double v, int64_t n);  // x [r, c]: sum_0(x + 2) + n * v + r per column
Tensor permute_ints(Tensor x, int64_t a);      // x.permute({a, 1 - a, 2}) with host ints
extern const int kLocalShapeReshapeLine;       // the reshape local_shape runs (subset_functions.cpp)
struct NormNetImpl : graph::nn::Module {  // Linear then LayerNorm({4})
  NormNetImpl();
  Tensor forward(Tensor x);
  graph::nn::Linear fc;
  graph::nn::LayerNorm ln;
};
struct ConvNetImpl : graph::nn::Module {  // two Conv2d with strides and paddings
  ConvNetImpl();
  Tensor forward(Tensor x);
  graph::nn::Conv2d conv1, conv2;
};
struct AttnNetImpl : graph::nn::Module {  // self-attention with and without biases, causal
  AttnNetImpl();
  Tensor forward(Tensor x);
  graph::nn::MultiheadAttention with_bias, without_bias;
};
}  // namespace subset
