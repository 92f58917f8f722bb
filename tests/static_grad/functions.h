#pragma once
// Annotated functions for the mixed-execution tests (static_grad_test.cpp):
// each is called with inputs that require grad, as its compiled graph (one
// node on the tape) and eagerly, and the gradients compared.
#include <graph/graph.h>

#include <tuple>
#include <utility>
#include <vector>

namespace sg {
using graph::Tensor;

extern Tensor G_scale;  // a global the graph reads: it gets a gradient too

Tensor add_relu(Tensor x, Tensor y);               // broadcasting y
Tensor affine_global(Tensor x, Tensor w);          // reads G_scale
Tensor if_flag(Tensor x, Tensor w, bool flag);     // If on a host bool
Tensor if_tensor(Tensor x);                        // If on a tensor condition
Tensor rnn_loop(Tensor x, Tensor w, int steps);    // Loop, runtime trip count
Tensor while_halve(Tensor x);                      // data-dependent while
std::pair<Tensor, Tensor> two_outputs(Tensor x, Tensor y);
std::tuple<Tensor, Tensor, int> tuple_outputs(Tensor x, int n);
Tensor with_dropout(Tensor x);       // dropout while training: x * its mask
Tensor attention_dropout(Tensor q);  // attention with dropout_p: autodiff refuses it
Tensor keep_int(Tensor x, Tensor idx);             // an integer input (no gradient)

// A Module whose forward is static: its parameters are graph inputs.
struct MLPImpl : graph::nn::Module {
  MLPImpl(int64_t in, int64_t hidden, int64_t out);
  Tensor forward(Tensor x);
  graph::nn::Linear fc1, fc2, fc3;
};
GRAPH_MODULE(MLP);

// An LSTM over a sequence with a linear head, its forward static. The step is
// written with explicit gates (linear, sigmoid, tanh), the subset the plugin
// lowers today: nn::LSTMCell returns a std::pair state, and tuple locals are
// not lowered yet.
struct LSTMImpl : graph::nn::Module {
  LSTMImpl(int64_t in, int64_t hidden, int64_t out);
  // xs: one [N, in] tensor per step; h0, c0: [N, hidden]. Returns [N, out].
  Tensor forward(const std::vector<Tensor>& xs, Tensor h0, Tensor c0);
  graph::nn::Linear xi, xf, xg, xo, hi, hf, hg, ho, head;
};
GRAPH_MODULE(LSTM);

// graph::nn modules whose list and scalar members (normalized_shape, stride,
// padding, num_heads, eps) are attributes the graph reads at each call.
struct AttnBlockImpl : graph::nn::Module {  // ln(x + attn(x)), x [N, L, 8]
  AttnBlockImpl();
  Tensor forward(Tensor x);
  graph::nn::MultiheadAttention attn;
  graph::nn::LayerNorm ln;
};
GRAPH_MODULE(AttnBlock);
struct ConvBlockImpl : graph::nn::Module {  // conv2(relu(conv1(x))), x [N, 2, H, W]
  ConvBlockImpl();
  Tensor forward(Tensor x);
  graph::nn::Conv2d conv1, conv2;
};
GRAPH_MODULE(ConvBlock);

// int64 inputs: embedding indices [N] and cross_entropy class targets [N].
Tensor embed_loss(Tensor table, Tensor idx, Tensor proj, Tensor target);

// relu(linear) twice, then linear and cross_entropy against int64 labels [N]:
// the loss of the benchmark's MLP SGD step.
Tensor mlp_ce_loss(Tensor x, Tensor labels, Tensor w1, Tensor b1, Tensor w2, Tensor b2, Tensor w3, Tensor b3);

// Run-time list attributes (reshape/view/expand/permute from sizes() and
// local shapes), a run-time transpose/softmax dim, where over them.
Tensor reshape_like(Tensor x, Tensor like);           // x [2, 6], like [3, 4]
Tensor shape_edits(Tensor x, Tensor y, int64_t d);    // x [2, 6], y [3, 4], d 0 or 1

}  // namespace sg
