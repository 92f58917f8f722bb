// bench_libtorch's rows for issue 19 (bench/model_suite.cpp has cxxgraph's):
// the model suite written with torch::nn as a LibTorch user writes it (the
// same layers and sizes as tests/models, tests/rnn's GRU language model and
// tests/model_graph's network), forwards under NoGradGuard with the loss; and
// the per-op rows on small tensors.
#include <torch/torch.h>

#include <cmath>
#include <tuple>

#include "libtorch_bench.h"

namespace libtorch_bench {
namespace {
namespace nn = torch::nn;
using at::Tensor;

Tensor ids(at::IntArrayRef shape, int64_t vocab) { return (at::rand(shape) * vocab).to(at::kLong); }

struct GPTImpl : nn::Module {
  GPTImpl(int64_t V, int64_t T, int64_t C, int64_t H)
      : heads(H), scale(1.0 / std::sqrt(double(C / H))),
        tok(register_module("tok", nn::Embedding(V, C))), pos(register_module("pos", nn::Embedding(T, C))),
        ln1(register_module("ln1", nn::LayerNorm(nn::LayerNormOptions({C})))),
        qkv(register_module("qkv", nn::Linear(C, 3 * C))), proj(register_module("proj", nn::Linear(C, C))),
        ln2(register_module("ln2", nn::LayerNorm(nn::LayerNormOptions({C})))),
        fc(register_module("fc", nn::Linear(C, 4 * C))), fc2(register_module("fc2", nn::Linear(4 * C, C))),
        ln_f(register_module("ln_f", nn::LayerNorm(nn::LayerNormOptions({C})))),
        head(register_module("head", nn::Linear(C, V))) {}
  Tensor forward(const Tensor& ids, const Tensor& targets) {
    const int64_t N = ids.size(0), T = ids.size(1), C = tok->weight.size(1), D = C / heads;
    Tensor x = tok(ids) + pos(torch::arange(T));
    Tensor qkv_out = qkv(ln1(x));
    Tensor q = qkv_out.slice(2, 0, C).reshape({N, T, heads, D}).transpose(1, 2);
    Tensor k = qkv_out.slice(2, C, 2 * C).reshape({N, T, heads, D}).transpose(1, 2);
    Tensor v = qkv_out.slice(2, 2 * C, 3 * C).reshape({N, T, heads, D}).transpose(1, 2);
    Tensor att = torch::matmul(q, k.transpose(-2, -1)) * scale;
    const Tensor mask = torch::ones({T, T}, torch::kBool).triu(1);
    att = torch::softmax(att.masked_fill(mask, -INFINITY), -1);
    Tensor y = torch::matmul(att, v).transpose(1, 2).reshape({N, T, C});
    x = x + proj(y);
    x = x + fc2(torch::gelu(fc(ln2(x))));
    Tensor logits = head(ln_f(x));
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
  }
  int64_t heads;
  double scale;
  nn::Embedding tok, pos;
  nn::LayerNorm ln1;
  nn::Linear qkv, proj;
  nn::LayerNorm ln2;
  nn::Linear fc, fc2;
  nn::LayerNorm ln_f;
  nn::Linear head;
};
TORCH_MODULE(GPT);

nn::Conv2d conv(int64_t in, int64_t out, int64_t k, int64_t stride) {
  return nn::Conv2d(nn::Conv2dOptions(in, out, k).stride(stride).padding(k / 2).bias(false));
}

// BasicBlock (down = false) and DownBlock of tests/models/resnet.cpp.
struct BlockImpl : nn::Module {
  BlockImpl(int64_t in, int64_t out, bool down)
      : conv1(register_module("conv1", conv(in, out, 3, down ? 2 : 1))),
        bn1(register_module("bn1", nn::BatchNorm2d(out))), conv2(register_module("conv2", conv(out, out, 3, 1))),
        bn2(register_module("bn2", nn::BatchNorm2d(out))) {
    if (down) {
      down_conv = register_module("down_conv", conv(in, out, 1, 2));
      down_bn = register_module("down_bn", nn::BatchNorm2d(out));
    }
  }
  Tensor forward(const Tensor& x) {
    Tensor y = torch::relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    return torch::relu(y + (down_conv ? down_bn(down_conv(x)) : x));
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  nn::Conv2d conv2;
  nn::BatchNorm2d bn2;
  nn::Conv2d down_conv{nullptr};
  nn::BatchNorm2d down_bn{nullptr};
};
TORCH_MODULE(Block);

struct ResNetImpl : nn::Module {
  ResNetImpl(int64_t W, int64_t classes)
      : conv1(register_module("conv1", conv(3, W, 3, 1))), bn1(register_module("bn1", nn::BatchNorm2d(W))),
        layer1(register_module("layer1", Block(W, W, false))), layer2(register_module("layer2", Block(W, 2 * W, true))),
        layer3(register_module("layer3", Block(2 * W, 4 * W, true))),
        layer4(register_module("layer4", Block(4 * W, 8 * W, true))),
        fc(register_module("fc", nn::Linear(8 * W, classes))) {}
  Tensor forward(const Tensor& x, const Tensor& targets) {
    Tensor h = torch::relu(bn1(conv1(x)));
    h = layer4(layer3(layer2(layer1(h))));
    Tensor logits = fc(torch::adaptive_avg_pool2d(h, {1, 1}).flatten(1));
    return at::cross_entropy_loss(logits, targets);
  }
  nn::Conv2d conv1;
  nn::BatchNorm2d bn1;
  Block layer1, layer2, layer3, layer4;
  nn::Linear fc;
};
TORCH_MODULE(ResNet);

struct TCNImpl : nn::Module {
  TCNImpl(int64_t in, int64_t C, int64_t K, int64_t out)
      : K(K), inp(register_module("inp", nn::Conv1d(in, C, 1))),
        c1(register_module("c1", nn::Conv1d(nn::Conv1dOptions(C, C, K).dilation(1)))),
        c2(register_module("c2", nn::Conv1d(nn::Conv1dOptions(C, C, K).dilation(2)))),
        c4(register_module("c4", nn::Conv1d(nn::Conv1dOptions(C, C, K).dilation(4)))),
        readout(register_module("readout", nn::Linear(C, out))) {}
  Tensor forward(const Tensor& x, const Tensor& target) {
    Tensor h = inp(x);
    h = h + torch::relu(c1(at::constant_pad_nd(h, {(K - 1) * 1, 0})));
    h = h + torch::relu(c2(at::constant_pad_nd(h, {(K - 1) * 2, 0})));
    h = h + torch::relu(c4(at::constant_pad_nd(h, {(K - 1) * 4, 0})));
    return at::mse_loss(readout(h.select(2, -1)), target);
  }
  int64_t K;
  nn::Conv1d inp, c1, c2, c4;
  nn::Linear readout;
};
TORCH_MODULE(TCN);

struct VAEImpl : nn::Module {
  VAEImpl(int64_t in, int64_t hidden, int64_t latent)
      : enc(register_module("enc", nn::Linear(in, hidden))), mu(register_module("mu", nn::Linear(hidden, latent))),
        logvar(register_module("logvar", nn::Linear(hidden, latent))),
        dec1(register_module("dec1", nn::Linear(latent, hidden))), dec2(register_module("dec2", nn::Linear(hidden, in))) {}
  Tensor forward(const Tensor& x, const Tensor& eps) {
    Tensor h = torch::relu(enc(x));
    Tensor m = mu(h), lv = logvar(h);
    Tensor z = m + eps * torch::exp(0.5 * lv);
    Tensor recon = torch::sigmoid(dec2(torch::relu(dec1(z))));
    Tensor bce = at::binary_cross_entropy(recon, x, {}, at::Reduction::Sum);
    return bce + -0.5 * torch::sum(1.0 + lv - torch::pow(m, 2.0) - lv.exp());
  }
  nn::Linear enc, mu, logvar, dec1, dec2;
};
TORCH_MODULE(VAE);

nn::ConvTranspose2d up(int64_t in, int64_t out, int64_t stride, int64_t padding, bool bias = false) {
  return nn::ConvTranspose2d(nn::ConvTranspose2dOptions(in, out, 4).stride(stride).padding(padding).bias(bias));
}

struct DCGANImpl : nn::Module {
  DCGANImpl(int64_t nz, int64_t g)
      : ct1(register_module("ct1", up(nz, 4 * g, 1, 0))), bn1(register_module("bn1", nn::BatchNorm2d(4 * g))),
        ct2(register_module("ct2", up(4 * g, 2 * g, 2, 1))), bn2(register_module("bn2", nn::BatchNorm2d(2 * g))),
        ct3(register_module("ct3", up(2 * g, g, 2, 1))), bn3(register_module("bn3", nn::BatchNorm2d(g))),
        ct4(register_module("ct4", up(g, 3, 2, 1, true))) {}
  Tensor forward(const Tensor& z) {
    Tensor h = torch::relu(bn1(ct1(z)));
    h = torch::relu(bn2(ct2(h)));
    h = torch::relu(bn3(ct3(h)));
    Tensor img = torch::tanh(ct4(h));
    return (img * img).mean();
  }
  nn::ConvTranspose2d ct1;
  nn::BatchNorm2d bn1;
  nn::ConvTranspose2d ct2;
  nn::BatchNorm2d bn2;
  nn::ConvTranspose2d ct3;
  nn::BatchNorm2d bn3;
  nn::ConvTranspose2d ct4;
};
TORCH_MODULE(DCGAN);

struct Seq2SeqImpl : nn::Module {
  Seq2SeqImpl(int64_t vocab, int64_t embed, int64_t hidden)
      : hidden(hidden), src_emb(register_module("src_emb", nn::Embedding(vocab, embed))),
        tgt_emb(register_module("tgt_emb", nn::Embedding(vocab, embed))),
        enc(register_module("enc", nn::GRUCell(embed, hidden))), dec(register_module("dec", nn::GRUCell(embed, hidden))),
        out(register_module("out", nn::Linear(hidden, vocab))) {}
  Tensor forward(const Tensor& src, int64_t bos, int64_t eos, int64_t max_len) {
    Tensor x = src_emb(src);
    Tensor h = torch::zeros({1, hidden});
    for (int64_t t = 0; t < src.size(0); ++t) h = enc(x.slice(0, t, t + 1), h);
    Tensor tok = torch::full({1}, bos, torch::kLong), nll = torch::zeros({1});
    int64_t next = bos, steps = 0;
    while (next != eos && steps < max_len) {
      h = dec(tgt_emb(tok), h);
      Tensor logp = torch::log_softmax(out(h), 1);
      tok = logp.argmax(1);
      nll = nll - logp.gather(1, tok.view({1, 1})).view({1});
      next = tok.item<int64_t>();
      ++steps;
    }
    return nll.sum();
  }
  int64_t hidden;
  nn::Embedding src_emb, tgt_emb;
  nn::GRUCell enc, dec;
  nn::Linear out;
};
TORCH_MODULE(Seq2Seq);

struct GRULMImpl : nn::Module {
  GRULMImpl(int64_t vocab, int64_t embed, int64_t hidden, int64_t layers)
      : emb(register_module("emb", nn::Embedding(vocab, embed))),
        gru(register_module("gru", nn::GRU(nn::GRUOptions(embed, hidden).num_layers(layers)))),
        head(register_module("head", nn::Linear(hidden, vocab))) {}
  Tensor forward(const Tensor& ids, const Tensor& targets) {
    Tensor logits = head(std::get<0>(gru(emb(ids))));
    return at::cross_entropy_loss(logits.reshape({-1, logits.size(-1)}), targets.reshape({-1}));
  }
  nn::Embedding emb;
  nn::GRU gru;
  nn::Linear head;
};
TORCH_MODULE(GRULM);

struct MPNNImpl : nn::Module {
  MPNNImpl(int64_t features, int64_t hidden, int64_t classes)
      : msg(register_module("msg", nn::Linear(features, hidden))),
        self_lin(register_module("self_lin", nn::Linear(features, hidden))),
        readout(register_module("readout", nn::Linear(hidden, classes))) {}
  Tensor forward(const Tensor& x, const Tensor& edges) {
    Tensor src = edges.select(0, 0), dst = edges.select(0, 1);
    Tensor m = torch::relu(msg(x.gather(0, src.unsqueeze(1).expand({-1, x.size(1)}))));
    Tensor h = torch::tanh(self_lin(x).scatter_add(0, dst.unsqueeze(1).expand({-1, m.size(1)}), m));
    return readout(h.mean(0));
  }
  nn::Linear msg, self_lin, readout;
};
TORCH_MODULE(MPNN);

// Each model's forward as bench/model_suite.cpp runs it.
template <typename M, typename F>
void model(const std::string& name, M m, F forward) {
  m->eval();  // only the BatchNorm models differ
  add(name, [m, forward]() mutable {
    torch::NoGradGuard g;
    keep(forward(*m));
  });
}

void models() {
  model("model_gpt_b8_t64_c128", GPT(65, 64, 128, 4),
        [x = ids({8, 64}, 65), y = ids({8, 64}, 65)](GPTImpl& m) { return m.forward(x, y); });
  model("model_resnet_w16_b8_32x32_eval", ResNet(16, 10),
        [x = at::randn({8, 3, 32, 32}), y = ids({8}, 10)](ResNetImpl& m) { return m.forward(x, y); });
  model("model_tcn_b16_c64_l256", TCN(8, 64, 3, 4),
        [x = at::randn({16, 8, 256}), y = at::randn({16, 4})](TCNImpl& m) { return m.forward(x, y); });
  model("model_vae_b64_784_400_20", VAE(784, 400, 20),
        [x = at::rand({64, 784}), eps = at::randn({64, 20})](VAEImpl& m) { return m.forward(x, eps); });
  model("model_dcgan_b16_nz100_g32", DCGAN(100, 32), [z = at::randn({16, 100, 1, 1})](DCGANImpl& m) {
    return m.forward(z);
  });
  model("model_seq2seq_v32_h64_20steps", Seq2Seq(32, 32, 64),
        [src = ids({16}, 32)](Seq2SeqImpl& m) { return m.forward(src, 0, -1, 20); });
  model("model_gru_lm_t32_b8_h128_2l", GRULM(65, 32, 128, 2),
        [x = ids({32, 8}, 65), y = ids({32, 8}, 65)](GRULMImpl& m) { return m.forward(x, y); });
  model("model_mpnn_n1000_e5000", MPNN(32, 64, 8),
        [x = at::randn({1000, 32}), e = ids({2, 5000}, 1000)](MPNNImpl& m) { return m.forward(x, e); });
}

void small_ops() {
  static const Tensor v = at::randn({64}), m = at::randn({8, 64}), b3 = at::randn({4, 8, 8});
  static const Tensor idx = ids({8, 16}, 64), idx1 = ids({16}, 8), mask = at::rand({8, 64}) > 0.5;
  static const Tensor img = at::randn({1, 4, 8, 8}), seq = at::randn({1, 4, 16}), cw = at::randn({4, 4, 3});
  static const Tensor rm = at::zeros({4}), rv = at::ones({4});
  const auto op = [](const std::string& name, std::function<Tensor()> f) { add("op_" + name, [f] { keep(f()); }); };
  op("gather_8x64", [] { return at::gather(m, 1, idx); });
  op("index_select_8x64", [] { return at::index_select(m, 0, idx1); });
  op("scatter_add_8x64", [] { return m.scatter_add(1, idx, m.slice(1, 0, 16)); });
  op("topk5_8x64", [] { return std::get<0>(at::topk(m, 5)); });
  op("topk5_8x1000", [] {  // a longer line
    static const Tensor m1k = at::randn({8, 1000});
    return std::get<0>(at::topk(m1k, 5));
  });
  op("sort_8x64", [] { return std::get<0>(at::sort(m, 1)); });
  op("cumsum_8x64", [] { return at::cumsum(m, 1); });
  op("masked_fill_8x64", [] { return m.masked_fill(mask, 0.0); });
  op("where_scalar_8x64", [] { return at::where(mask, m, 0.0); });
  op("max_dim_8x64", [] { return std::get<0>(at::max(m, 1)); });
  op("var_8x64", [] { return at::var(m, {1}); });
  op("logsumexp_8x64", [] { return at::logsumexp(m, {1}); });
  op("bmm_4x8x8", [] { return at::bmm(b3, b3); });
  op("triu_8x64", [] { return at::triu(m, 1); });
  op("one_hot_16", [] { return at::one_hot(idx1, 8); });
  op("pad_8x64", [] { return at::constant_pad_nd(m, {1, 1}); });
  op("leaky_relu_64", [] { return at::leaky_relu(v, 0.01); });
  op("softplus_64", [] { return at::softplus(v); });
  op("elu_64", [] { return at::elu(v); });
  op("log1p_64", [] { return at::log1p(v.abs()); });
  op("batch_norm_eval_4x8x8", [] { return at::batch_norm(img, {}, {}, rm, rv, false, 0.1, 1e-5, false); });
  op("conv1d_c4_l16_k3", [] { return at::conv1d(seq, cw); });
  op("interpolate_nearest_8x8_x2", [] { return at::upsample_nearest2d(img, {16, 16}); });
  op("adaptive_avg_pool2d_8x8_to_3", [] { return at::adaptive_avg_pool2d(img, {3, 3}); });
}

}  // namespace

void register_models() {
  models();
  small_ops();
}

}  // namespace libtorch_bench
