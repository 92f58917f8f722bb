// The model suite's VAE (model_functions.h).
#include "model_functions.h"

namespace models {
using namespace graph;

VAEImpl::VAEImpl(int64_t in, int64_t hidden, int64_t latent)
    : enc(register_module("enc", nn::Linear(in, hidden))),
      mu(register_module("mu", nn::Linear(hidden, latent))),
      logvar(register_module("logvar", nn::Linear(hidden, latent))),
      dec1(register_module("dec1", nn::Linear(latent, hidden))),
      dec2(register_module("dec2", nn::Linear(hidden, in))) {}

[[graph::static]] std::tuple<Tensor, Tensor> VAEImpl::forward(const Tensor& x, const Tensor& eps) {
  Tensor h = relu(enc(x));
  Tensor m = mu(h), lv = logvar(h);
  Tensor z = m + eps * exp(0.5 * lv);  // the reparameterization: z's gradient reaches mu and logvar
  Tensor recon = sigmoid(dec2(relu(dec1(z))));
  Tensor bce = binary_cross_entropy(recon, x, Reduction::Sum);
  Tensor kl = -0.5 * sum(1.0 + lv - pow(m, 2.0) - lv.exp());
  return {recon, bce + kl};
}

[[graph::static]] std::tuple<Tensor, Tensor> VAEImpl::forward_sampled(const Tensor& x) {
  Tensor h = relu(enc(x));
  Tensor m = mu(h), lv = logvar(h);
  Tensor std = exp(0.5 * lv);
  Tensor z = m + randn_like(std) * std;
  Tensor recon = sigmoid(dec2(relu(dec1(z))));
  Tensor kl = -0.5 * sum(1.0 + lv - pow(m, 2.0) - lv.exp());
  return {recon, binary_cross_entropy(recon, x, Reduction::Sum) + kl};
}

}  // namespace models
