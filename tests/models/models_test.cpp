// The model suite (issue 19; model_functions.h): each model's static forward
// against PyTorch (tests/fixtures/models.txt): outputs, loss and every
// parameter's gradient after one backward, and against the same forward run
// eagerly. ctest runs this binary compiled, and again with GRAPH_MODE=
// interpret and GRAPH_MODE=eager (tests/models.cmake); the graph's call
// count shows the graph really ran (or, under eager, that it did not).
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "../e2e/graph_calls.h"
#include "../rnn/rnn_fixture.h"
#include "model_functions.h"

namespace {

using graph::Mode;
using graph::Tensor;
using rnn_fixture::Case;
namespace nn = graph::nn;

const Case& fixture(const std::string& name) { return rnn_fixture::get(name, "models.txt"); }

// The mode this run of the binary tests (GRAPH_MODE at start-up).
Mode suite_mode() {
  static const Mode m = graph::mode();
  return m;
}

// A forward returning {output, loss}.
using Forward = std::function<std::vector<Tensor>()>;

struct Run {
  std::vector<Tensor> outputs;
  std::vector<std::pair<std::string, Tensor>> grads;  // by parameter name
  uint64_t graph_runs = 0;
};

// One forward in `mode`, then (with_grad) backward of the loss.
Run run_in(Mode mode, nn::Module& m, const char* fragment, const Forward& f, bool with_grad) {
  graph::set_mode(mode);
  m.zero_grad();
  Run r;
  const uint64_t before = e2e::calls(fragment);
  if (with_grad) {
    r.outputs = f();
    r.outputs.back().backward();
  } else {
    graph::NoGradGuard g;
    r.outputs = f();
  }
  r.graph_runs = e2e::calls(fragment) - before;
  graph::set_mode(suite_mode());
  if (with_grad)
    for (auto& [name, p] : m.named_parameters()) r.grads.emplace_back(name, p.grad());
  return r;
}

// The model's outputs (named as the fixture's, the loss last) and gradients
// against PyTorch, in the suite's mode, without and with grad; against the
// eager run of the same forward; the graph ran once per call (none: eager).
void check_model(const Case& c, nn::Module& m, const char* fragment, const Forward& f,
                 const std::vector<std::string>& outputs, double tol, bool with_grad = true) {
  const uint64_t want_runs = suite_mode() == Mode::Eager ? 0 : 1;
  Run plain = run_in(suite_mode(), m, fragment, f, false);
  EXPECT_EQ(plain.graph_runs, want_runs) << "the graph did not run as the mode says (GRAPH_EXPLAIN=1 says why)";
  for (size_t k = 0; k < outputs.size(); ++k)
    rnn_fixture::expect_near(plain.outputs.at(k), c.at("output:" + outputs[k]), tol, outputs[k]);
  if (!with_grad) return;
  Run s = run_in(suite_mode(), m, fragment, f, true);
  EXPECT_EQ(s.graph_runs, want_runs) << "the graph (with its backward) did not run";
  for (size_t k = 0; k < outputs.size(); ++k)
    rnn_fixture::expect_near(s.outputs.at(k), c.at("output:" + outputs[k]), tol, outputs[k] + " (with grad)");
  ASSERT_EQ(s.grads.size(), c.params.size());
  for (auto& [name, g] : s.grads) rnn_fixture::expect_near(g, c.at("grad:" + name), tol, "grad of " + name);
  if (suite_mode() == Mode::Eager) return;
  Run e = run_in(Mode::Eager, m, fragment, f, true);
  EXPECT_EQ(e.graph_runs, 0u);
  for (size_t k = 0; k < s.outputs.size(); ++k)
    rnn_fixture::expect_near(s.outputs[k], e.outputs[k], 1e-5, "static vs eager output " + std::to_string(k));
  for (size_t k = 0; k < s.grads.size(); ++k)
    rnn_fixture::expect_near(s.grads[k].second, e.grads[k].second, 1e-5, "static vs eager grad of " + s.grads[k].first);
}

std::vector<Tensor> pair_of(const std::tuple<Tensor, Tensor>& t) { return {std::get<0>(t), std::get<1>(t)}; }

TEST(ModelSuite, GPTBlockMatchesPyTorch) {
  const Case& c = fixture("gpt");
  models::GPTBlock gpt(c.attr("V"), c.attr("T"), c.attr("C"), c.attr("H"));
  rnn_fixture::load_params(*gpt, c);
  const Tensor ids = c.tensor("input:ids", graph::kInt64), targets = c.tensor("input:targets", graph::kInt64);
  check_model(c, *gpt, "GPTBlockImpl7forward", [&] { return pair_of(gpt(ids, targets)); }, {"logits", "loss"}, 2e-5);
}

// A sequence longer than the position table: embedding's error naming the
// op and the shapes in every mode, and in a graph the C++ line of the call
// (nn::Embedding's forward, which the graph inlined); no result.
TEST(ModelSuite, GPTBlockLongerThanItsPositionsIsAnError) {
  models::GPTBlock gpt(11, 6, 8, 2);
  const Tensor ids = graph::zeros({2, 7}, graph::kInt64);
  try {
    gpt(ids, ids);
    ADD_FAILURE() << "expected an error";
  } catch (const graph::Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("embedding: index 6 is out of range for a table of 6 rows"), std::string::npos) << what;
    if (suite_mode() != Mode::Eager) EXPECT_NE(what.find("nn.h:"), std::string::npos) << what;
  }
}

// ResNet with BatchNorm in training mode: batch statistics. Float32
// statistics over small batches: a looser tolerance.
TEST(ModelSuite, ResNetTrainModeMatchesPyTorch) {
  const Case& c = fixture("resnet_train");
  models::ResNet net(c.attr("W"), c.attr("K"));
  rnn_fixture::load_params(*net, c);
  const Tensor x = c.tensor("input:x", graph::kFloat32), targets = c.tensor("input:targets", graph::kInt64);
  check_model(c, *net, "ResNetImpl7forward", [&] { return pair_of(net(x, targets)); }, {"logits", "loss"}, 1e-4);
}

// In eval mode, with PyTorch's running stats after its training forward.
TEST(ModelSuite, ResNetEvalModeMatchesPyTorch) {
  const Case& train = fixture("resnet_train");
  models::ResNet net(train.attr("W"), train.attr("K"));
  rnn_fixture::load_params(*net, train);
  {
    graph::NoGradGuard g;
    for (auto& [name, b] : net->named_buffers())
      if (name.find("num_batches_tracked") == std::string::npos) b.copy_(train.tensor("buffer:" + name, b.dtype()));
  }
  const Tensor x = train.tensor("input:x", graph::kFloat32), targets = train.tensor("input:targets", graph::kInt64);
  net->eval();  // the same graph as in train(): it reads is_training() at each call
  check_model(fixture("resnet_eval"), *net, "ResNetImpl7forward", [&] { return pair_of(net(x, targets)); },
              {"logits", "loss"}, 1e-4, /*with_grad=*/false);
  // eval() updates nothing.
  for (auto& [name, b] : net->named_buffers())
    if (name.find("num_batches_tracked") != std::string::npos) EXPECT_EQ(b.item<int64_t>(), 0) << name;
}

// The static training forward (with its backward) updates every BatchNorm2d's
// running stats as PyTorch's training forward did, and counts the batch:
// once, with one version bump per buffer as eager (and PyTorch's kernel).
TEST(ModelSuite, ResNetStaticTrainingForwardUpdatesEveryRunningStatAsPyTorch) {
  const Case& c = fixture("resnet_train");
  const Tensor x = c.tensor("input:x", graph::kFloat32), targets = c.tensor("input:targets", graph::kInt64);
  std::vector<std::vector<uint64_t>> versions;
  std::vector<std::vector<Tensor>> buffers;
  for (Mode mode : {suite_mode(), Mode::Eager}) {
    models::ResNet net(c.attr("W"), c.attr("K"));
    rnn_fixture::load_params(*net, c);
    std::vector<uint64_t> before;
    for (auto& [name, b] : net->named_buffers()) before.push_back(b.version());
    graph::set_mode(mode);
    const uint64_t runs = e2e::calls("ResNetImpl7forward");
    std::get<1>(net(x, targets)).backward();
    EXPECT_EQ(e2e::calls("ResNetImpl7forward") - runs, mode == Mode::Eager ? 0u : 1u);
    graph::set_mode(suite_mode());
    versions.emplace_back();
    buffers.emplace_back();
    size_t i = 0;
    for (auto& [name, b] : net->named_buffers()) {
      versions.back().push_back(b.version() - before[i++]);
      buffers.back().push_back(b.clone());
      EXPECT_FALSE(b.requires_grad()) << name;
      if (name.find("num_batches_tracked") != std::string::npos) {
        EXPECT_EQ(b.dtype(), graph::kInt64) << name;
        EXPECT_EQ(b.item<int64_t>(), 1) << name;
      } else {
        rnn_fixture::expect_near(b, c.at("buffer:" + name), 1e-5, name);
      }
    }
  }
  EXPECT_EQ(versions[0], versions[1]) << "version bumps: the suite's mode against eager";
  EXPECT_EQ(versions[0], std::vector<uint64_t>(versions[0].size(), 1u));
  for (size_t i = 0; i < buffers[0].size(); ++i)
    rnn_fixture::expect_near(buffers[0][i], buffers[1][i], 1e-6, "buffer " + std::to_string(i) + " against eager");
}

// The running stats the graph leaves alone: nn::BatchNorm2d's own (eager)
// training forward on the first layer's output updates them as PyTorch's.
TEST(ModelSuite, ResNetFirstBatchNormUpdatesRunningStatsAsPyTorch) {
  const Case& c = fixture("resnet_train");
  models::ResNet net(c.attr("W"), c.attr("K"));
  rnn_fixture::load_params(*net, c);
  graph::NoGradGuard g;
  net->bn1->train();
  net->bn1(net->conv1(c.tensor("input:x", graph::kFloat32)));
  rnn_fixture::expect_near(net->bn1->running_mean, c.at("buffer:bn1.running_mean"), 1e-5, "running_mean");
  rnn_fixture::expect_near(net->bn1->running_var, c.at("buffer:bn1.running_var"), 1e-5, "running_var");
}

// Dilated causal Conv1d layers with pad and residuals.
TEST(ModelSuite, TemporalCNNMatchesPyTorch) {
  const Case& c = fixture("tcn");
  models::TemporalCNN net(c.attr("Cin"), c.attr("C"), c.attr("K"), c.attr("O"));
  rnn_fixture::load_params(*net, c);
  const Tensor x = c.tensor("input:x", graph::kFloat32), target = c.tensor("input:target", graph::kFloat32);
  check_model(c, *net, "TemporalCNNImpl7forward", [&] { return pair_of(net(x, target)); }, {"y", "loss"}, 2e-5);
}

// Causal, with the receptive field the dilations give: the readout of the
// last step (15) sees steps 1 + 2 (1 + 2 + 4) = 15 back, so changing step 0
// leaves it alone and changing step 15 does not.
TEST(ModelSuite, TemporalCNNIsCausal) {
  const Case& c = fixture("tcn");
  models::TemporalCNN net(c.attr("Cin"), c.attr("C"), c.attr("K"), c.attr("O"));
  rnn_fixture::load_params(*net, c);
  graph::NoGradGuard g;
  const Tensor x = c.tensor("input:x", graph::kFloat32), target = c.tensor("input:target", graph::kFloat32);
  const Tensor y = std::get<0>(net(x, target));
  Tensor first = x.clone(), last = x.clone();
  first.slice(2, 0, 1).copy_(graph::full({1}, 5.0));
  last.slice(2, -1, x.size(2)).copy_(graph::full({1}, 5.0));
  EXPECT_EQ(graph::amax(graph::abs(std::get<0>(net(first, target)) - y)).item<float>(), 0.0f);
  EXPECT_GT(graph::amax(graph::abs(std::get<0>(net(last, target)) - y)).item<float>(), 1e-3f);
}

// The VAE with eps passed in: reparameterization, sigmoid decoder, BCE(sum) + KL.
TEST(ModelSuite, VAEMatchesPyTorch) {
  const Case& c = fixture("vae");
  models::VAE net(c.attr("D"), c.attr("Hd"), c.attr("Z"));
  rnn_fixture::load_params(*net, c);
  const Tensor x = c.tensor("input:x", graph::kFloat32), eps = c.tensor("input:eps", graph::kFloat32);
  check_model(c, *net, "VAEImpl7forward", [&] { return pair_of(net(x, eps)); }, {"recon", "loss"}, 2e-5);
}

// The DCGAN generator: four ConvTranspose2d layers (1x1 -> 32x32), BatchNorm
// in training mode between them, tanh.
TEST(ModelSuite, DCGANGeneratorMatchesPyTorch) {
  const Case& c = fixture("dcgan");
  models::DCGANGenerator net(c.attr("NZ"), c.attr("G"));
  rnn_fixture::load_params(*net, c);
  const Tensor z = c.tensor("input:z", graph::kFloat32);
  ASSERT_EQ(net->ct1->weight.sizes(), (graph::Shape{c.attr("NZ"), 4 * c.attr("G"), 4, 4}));
  check_model(c, *net, "DCGANGeneratorImpl7forward", [&] { return pair_of(net(z)); }, {"img", "loss"}, 1e-4);
  const Tensor img = std::get<0>(net(z));
  EXPECT_EQ(img.sizes(), (graph::Shape{c.attr("N"), 3, 32, 32}));
}

// The randn_like form (static as well: the graph draws as eager code does)
// equals the static forward given the same draw.
TEST(ModelSuite, VAESampledFormEqualsTheStaticForwardUnderTheSameSeed) {
  const Case& c = fixture("vae");
  models::VAE net(c.attr("D"), c.attr("Hd"), c.attr("Z"));
  rnn_fixture::load_params(*net, c);
  const Tensor x = c.tensor("input:x", graph::kFloat32);
  graph::NoGradGuard g;
  graph::manual_seed(7);
  const uint64_t sampled = e2e::calls("VAEImpl15forward_sampled");
  auto [recon_s, loss_s] = net->forward_sampled(x);
  EXPECT_EQ(e2e::calls("VAEImpl15forward_sampled") - sampled, suite_mode() == Mode::Eager ? 0u : 1u);
  graph::manual_seed(7);
  const Tensor eps = graph::randn({x.size(0), c.attr("Z")});
  const uint64_t before = e2e::calls("VAEImpl7forward");
  auto [recon, loss] = net(x, eps);
  EXPECT_EQ(e2e::calls("VAEImpl7forward") - before, suite_mode() == Mode::Eager ? 0u : 1u);
  rnn_fixture::expect_near(recon, recon_s, 1e-5, "recon");
  rnn_fixture::expect_near(loss, loss_s, 1e-5, "loss");
}

// Greedy seq2seq: the decode loop stops when the argmax, read with item(), is
// the end token; one graph with its static backward. The fixture's end token
// is one the decoder reaches before max_len; with another end token the loop
// runs to max_len, also in the graph.
TEST(ModelSuite, Seq2SeqGreedyDecoderMatchesPyTorch) {
  const Case& c = fixture("seq2seq");
  models::Seq2Seq net(c.attr("V"), c.attr("E"), c.attr("H"));
  rnn_fixture::load_params(*net, c);
  const Tensor src = c.tensor("input:src", graph::kInt64);
  const int64_t bos = c.attr("bos"), eos = c.attr("eos"), max_len = c.attr("max_len");
  auto run = [&](int64_t end) {
    auto [h, steps, loss] = net(src, bos, end, max_len);
    return std::vector<Tensor>{h, steps, loss};
  };
  check_model(c, *net, "Seq2SeqImpl7forward", [&] { return run(eos); }, {"h", "steps", "loss"}, 2e-5);
  const double steps = c.tensor("output:steps").item<double>();
  EXPECT_GT(steps, 1);
  EXPECT_LT(steps, static_cast<double>(max_len)) << "the fixture's decode stops on its end token";
  // An end token it never emits (the vocabulary's size): max_len steps.
  graph::NoGradGuard g;
  const uint64_t before = e2e::calls("Seq2SeqImpl7forward");
  EXPECT_EQ(run(c.attr("V"))[1].item<float>(), static_cast<float>(max_len));
  EXPECT_EQ(e2e::calls("Seq2SeqImpl7forward") - before, suite_mode() == Mode::Eager ? 0u : 1u);
}

}  // namespace
