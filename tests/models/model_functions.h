#pragma once
// The model suite (issue 19): small versions of well-known models, each
// module's forward [[graph::static]] (one .cpp each, built with
// -Werror=graph-fallback by tests/models.cmake), written as a LibTorch user
// writes them. Parameter names are PyTorch's (tests/fixtures/
// make_model_fixtures.py builds the same models), so the tests load
// PyTorch's parameters by name and compare outputs and gradients.
#include <graph/graph.h>

#include <tuple>

namespace models {
using graph::Tensor;

// GPT-style: token + position embedding, one pre-norm block (causal
// self-attention with an arange/triu/masked_fill mask, GELU MLP, residuals),
// final layer norm, linear head. ids, targets: int64 [N, T], T <= block_size.
// Returns the logits [N, T, V] and the cross-entropy loss.
struct GPTBlockImpl : graph::nn::Module {
  GPTBlockImpl(int64_t vocab, int64_t block_size, int64_t channels, int64_t heads);
  std::tuple<Tensor, Tensor> forward(const Tensor& ids, const Tensor& targets);
  int64_t heads;
  double attn_scale;  // 1 / sqrt(head size)
  graph::nn::Embedding tok, pos;
  graph::nn::LayerNorm ln1;
  graph::nn::Linear qkv, proj;
  graph::nn::LayerNorm ln2;
  graph::nn::Linear fc, fc2;
  graph::nn::LayerNorm ln_f;
  graph::nn::Linear head;
};
GRAPH_MODULE(GPTBlock);

// ResNet-18's BasicBlock: conv3x3-BN-ReLU-conv3x3-BN plus the identity
// shortcut, then ReLU; DownBlock: the same with stride 2 and a projection
// shortcut (1x1 conv + BN). The BatchNorm2d modules' own forwards: batch
// statistics in train(), updating their running stats, the running ones in eval().
struct BasicBlockImpl : graph::nn::Module {
  explicit BasicBlockImpl(int64_t channels);
  Tensor forward(const Tensor& x);
  graph::nn::Conv2d conv1;
  graph::nn::BatchNorm2d bn1;
  graph::nn::Conv2d conv2;
  graph::nn::BatchNorm2d bn2;
};
GRAPH_MODULE(BasicBlock);

struct DownBlockImpl : graph::nn::Module {
  DownBlockImpl(int64_t in, int64_t out);
  Tensor forward(const Tensor& x);
  graph::nn::Conv2d conv1;
  graph::nn::BatchNorm2d bn1;
  graph::nn::Conv2d conv2;
  graph::nn::BatchNorm2d bn2;
  graph::nn::Conv2d down_conv;
  graph::nn::BatchNorm2d down_bn;
};
GRAPH_MODULE(DownBlock);

// ResNet-18's layout on 32x32 images, one block per stage, widths W, 2W, 4W,
// 8W (stride 2 from the second stage), adaptive average pool to 1x1, linear
// classifier. x [N, 3, 32, 32], targets int64 [N]; returns the logits and
// the cross-entropy loss. One graph in train() and in eval(): the static
// forward reads each BatchNorm2d's is_training() at every call, and in
// train() writes their running stats back (nn.h).
struct ResNetImpl : graph::nn::Module {
  ResNetImpl(int64_t width, int64_t classes);
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& targets);
  graph::nn::Conv2d conv1;
  graph::nn::BatchNorm2d bn1;
  BasicBlock layer1;
  DownBlock layer2, layer3, layer4;
  graph::nn::Linear fc;
};
GRAPH_MODULE(ResNet);

// Temporal CNN: a 1x1 input conv, three residual blocks
// h + relu(conv_d(pad(h, {(k - 1) d, 0}))) with dilations 1, 2, 4 (causal:
// step t sees steps <= t only), a linear readout of the last step.
// x [N, C_in, L], target [N, out]; returns the readout and the MSE loss.
struct TemporalCNNImpl : graph::nn::Module {
  TemporalCNNImpl(int64_t in, int64_t channels, int64_t kernel, int64_t out);
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& target);
  int64_t kernel;
  graph::nn::Conv1d inp, c1, c2, c4;
  graph::nn::Linear readout;
};
GRAPH_MODULE(TemporalCNN);

// VAE: encoder MLP to mu and logvar, z = mu + eps * exp(0.5 logvar), decoder
// MLP with a sigmoid; loss = binary_cross_entropy(sum) + KL. x [N, D] in
// [0, 1], eps [N, Z] (standard normal, passed in so the run is repeatable).
// Returns the reconstruction and the loss. forward_sampled is the usual
// form, eps = randn_like(std) drawn inside, static too: the graph draws from
// graph's generator what the eager code draws, so under the same seed it
// equals forward with eps drawn by randn.
struct VAEImpl : graph::nn::Module {
  VAEImpl(int64_t in, int64_t hidden, int64_t latent);
  std::tuple<Tensor, Tensor> forward(const Tensor& x, const Tensor& eps);
  std::tuple<Tensor, Tensor> forward_sampled(const Tensor& x);
  graph::nn::Linear enc, mu, logvar, dec1, dec2;
};
GRAPH_MODULE(VAE);

// DCGAN's generator on 32x32 images: z [N, nz, 1, 1] -> ConvTranspose2d
// (nz, 4g, 4, 1, 0) -> 4x4, then (4g, 2g), (2g, g), (g, 3) with 4, 2, 1 ->
// 8x8, 16x16, 32x32; BatchNorm2d + ReLU between (as ResNet),
// tanh at the end. Returns the image [N, 3, 32, 32] and mean(img^2), a loss
// that reaches every parameter.
struct DCGANGeneratorImpl : graph::nn::Module {
  DCGANGeneratorImpl(int64_t nz, int64_t g);
  std::tuple<Tensor, Tensor> forward(const Tensor& z);
  graph::nn::ConvTranspose2d ct1;
  graph::nn::BatchNorm2d bn1;
  graph::nn::ConvTranspose2d ct2;
  graph::nn::BatchNorm2d bn2;
  graph::nn::ConvTranspose2d ct3;
  graph::nn::BatchNorm2d bn3;
  graph::nn::ConvTranspose2d ct4;
};
GRAPH_MODULE(DCGANGenerator);

// Seq2seq with greedy decoding: a GRU-cell encoder over the source tokens
// (int64 [S]); then a GRU-cell decoder fed its own argmax, from `bos` until
// it emits `eos` or has made `max_len` tokens: a data-dependent `while` on
// `item()`, one graph. Returns the last hidden state [1, H], the number of
// tokens made (float32 [1]) and the negative log-likelihood of the tokens.
struct Seq2SeqImpl : graph::nn::Module {
  Seq2SeqImpl(int64_t vocab, int64_t embed, int64_t hidden);
  std::tuple<Tensor, Tensor, Tensor> forward(const Tensor& src, int64_t bos, int64_t eos, int64_t max_len);
  int64_t hidden;
  graph::nn::Embedding src_emb, tgt_emb;
  graph::nn::GRUCell enc, dec;
  graph::nn::Linear out;
};
GRAPH_MODULE(Seq2Seq);

}  // namespace models
