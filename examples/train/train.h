#pragma once
// Three small trainings that tests/reference/train_reference.py runs in
// PyTorch from the same initial weights and data (read from the .bin files it
// wrote in graph::nn's tensor format), so that the loss curves can be
// compared: an MLP with SGD (nesterov momentum, weight decay), a CNN with
// Adam, and an Embedding -> MultiheadAttention -> LayerNorm -> LSTMCell ->
// Linear model with Adam (amsgrad) then SGD (momentum, dampening).
// Used by examples/train/main.cpp and tests/nn_test.cpp.
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <graph/graph.h>

namespace train_example {

using graph::Tensor;
namespace nn = graph::nn;
namespace optim = graph::optim;

inline constexpr int kSteps = 30;

inline nn::Sequential make_mlp() {
  return nn::Sequential(nn::Linear(2, 32), nn::Tanh(), nn::Linear(32, 32), nn::ReLU(), nn::Linear(32, 2));
}

inline nn::Sequential make_cnn() {
  return nn::Sequential(nn::Conv2d(1, 4, 3, /*stride=*/1, /*padding=*/1), nn::ReLU(), nn::MaxPool2d(2),
                        nn::Flatten(), nn::Linear(64, 3));
}

// tokens [N, L] -> [N]
class SeqImpl : public nn::Module {
 public:
  SeqImpl()
      : embed(register_module("embed", nn::Embedding(10, 8))),
        attn(register_module("attn", nn::MultiheadAttention(8, 2))),
        norm(register_module("norm", nn::LayerNorm(graph::Shape{8}))),
        cell(register_module("cell", nn::LSTMCell(8, 8))),
        head(register_module("head", nn::Linear(8, 1))) {}

  Tensor forward(const Tensor& tokens) {
    Tensor x = embed(tokens);
    x = norm(x + attn(x, x, x));
    Tensor h = graph::zeros({x.size(0), 8}, x.dtype());
    Tensor c = h;
    for (int64_t t = 0; t < x.size(1); ++t) {
      auto [h2, c2] = cell(x.slice(1, t, t + 1).squeeze(1), std::pair{h, c});
      h = h2;
      c = c2;
    }
    return head(h).squeeze(1);
  }

  nn::Embedding embed;
  nn::MultiheadAttention attn;
  nn::LayerNorm norm;
  nn::LSTMCell cell;
  nn::Linear head;
};
GRAPH_MODULE(Seq);

inline Tensor find(const nn::NamedTensors& named, const std::string& name) {
  for (auto& [n, t] : named)
    if (n == name) return t;
  throw graph::Error("train: no tensor '" + name + "' in the data file");
}

// Full-batch training from `init` (a parameter file) for kSteps steps; the
// loss before each step. `make_opt(params, step)` returns a new optimizer when
// it wants one (always at step 0).
template <class Model>
std::vector<double> run(Model model, const std::string& init, const Tensor& x, const Tensor& y,
                        const std::function<Tensor(const Tensor&, const Tensor&)>& loss_fn,
                        const std::function<std::unique_ptr<optim::Optimizer>(std::vector<Tensor>, int)>& make_opt,
                        bool print, const char* label) {
  nn::load(*model, init);
  std::unique_ptr<optim::Optimizer> opt;
  std::vector<double> losses;
  for (int step = 0; step < kSteps; ++step) {
    if (auto next = make_opt(model->parameters(), step)) opt = std::move(next);
    opt->zero_grad();
    Tensor loss = loss_fn(model(x), y);
    losses.push_back(loss.item<double>());
    if (print) std::printf("%s step %2d loss %.6f\n", label, step, losses.back());
    loss.backward();
    opt->step();
  }
  return losses;
}

inline std::map<std::string, std::vector<double>> run_all(const std::string& dir, bool print) {
  nn::NamedTensors data = nn::load_tensors(dir + "/train_data.bin");
  std::map<std::string, std::vector<double>> curves;
  auto ce = [](const Tensor& logits, const Tensor& target) { return graph::cross_entropy(logits, target); };
  auto mse = [](const Tensor& out, const Tensor& target) { return graph::mse_loss(out, target); };

  curves["mlp"] = run(
      make_mlp(), dir + "/mlp_init.bin", find(data, "mlp.x"), find(data, "mlp.y"), ce,
      [](std::vector<Tensor> p, int step) -> std::unique_ptr<optim::Optimizer> {
        if (step != 0) return nullptr;
        return std::make_unique<optim::SGD>(
            std::move(p), optim::SGDOptions(0.1).momentum(0.9).weight_decay(1e-3).nesterov(true));
      },
      print, "mlp");
  curves["cnn"] = run(
      make_cnn(), dir + "/cnn_init.bin", find(data, "cnn.x"), find(data, "cnn.y"), ce,
      [](std::vector<Tensor> p, int step) -> std::unique_ptr<optim::Optimizer> {
        if (step != 0) return nullptr;
        return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions(0.01).weight_decay(1e-4));
      },
      print, "cnn");
  curves["seq"] = run(
      Seq(), dir + "/seq_init.bin", find(data, "seq.x"), find(data, "seq.y"), mse,
      [](std::vector<Tensor> p, int step) -> std::unique_ptr<optim::Optimizer> {
        if (step == 0) return std::make_unique<optim::Adam>(std::move(p), optim::AdamOptions(0.01).amsgrad(true));
        if (step == kSteps / 2)
          return std::make_unique<optim::SGD>(std::move(p),
                                              optim::SGDOptions(0.05).momentum(0.5).dampening(0.1));
        return nullptr;
      },
      print, "seq");
  return curves;
}

// train_losses.txt: "<model> <step> <loss>" lines, '#' comments.
inline std::map<std::string, std::vector<double>> read_reference(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw graph::Error("train: cannot open '" + path + "'");
  std::map<std::string, std::vector<double>> curves;
  std::string line;
  while (std::getline(f, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream in(line);
    std::string model;
    size_t step;
    double loss;
    if (!(in >> model >> step >> loss) || step != curves[model].size())
      throw graph::Error("train: bad line in '" + path + "': " + line);
    curves[model].push_back(loss);
  }
  return curves;
}

}  // namespace train_example
