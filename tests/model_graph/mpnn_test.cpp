// The model suite's message-passing network (mpnn.h, issue 19): its static
// forward (gather, scatter_add, linear layers, a mean readout) against
// PyTorch (tests/fixtures/graph_model.txt, make_graph_fixtures.py) for the
// output and the gradients of every parameter and of x, and against eager.
// Run compiled and, by ctest's mpnn_interpret, interpreted.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../e2e/graph_calls.h"
#include "mpnn.h"

namespace {

using graph::Mode;
using graph::Tensor;

// name -> tensor (float64, exact) of the one case in graph_model.txt.
std::map<std::string, Tensor> fixture() {
  std::map<std::string, Tensor> out;
  std::ifstream in(std::string(CXXGRAPH_FIXTURES) + "/graph_model.txt");
  if (!in) throw std::runtime_error("cannot read graph_model.txt");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word, name, shape;
    if (!(ls >> word) || word != "tensor") continue;
    ls >> name >> shape;
    graph::Shape s;
    std::stringstream ss(shape.substr(1, shape.size() - 2));
    for (std::string part; std::getline(ss, part, ',');) s.push_back(std::stoll(part));
    std::vector<double> v;
    for (double d; ls >> d;) v.push_back(d);
    Tensor t = graph::empty(s, graph::kFloat64);
    std::copy(v.begin(), v.end(), t.data_ptr<double>());
    out[name] = t;
  }
  return out;
}

void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const Tensor g = got.to(graph::kFloat64).contiguous(), w = want.contiguous();
  for (int64_t i = 0; i < g.numel(); ++i)
    EXPECT_NEAR(g.data_ptr<double>()[i], w.data_ptr<double>()[i], tol * (1 + std::abs(w.data_ptr<double>()[i])))
        << what << " [" << i << "]";
}

TEST(ModelSuite, MessagePassingNetworkMatchesPyTorch) {
  const Mode mode = e2e::compiled_mode();
  auto f = fixture();
  model_graph::MPNN net(3, 5, 2);
  {
    graph::NoGradGuard g;
    for (auto& [name, p] : net->named_parameters()) p.copy_(f.at("param:" + name).to(p.dtype()));
  }
  const Tensor edges = f.at("input:edges").to(graph::kInt64);
  std::vector<std::vector<Tensor>> grads;
  for (Mode m : {mode, Mode::Eager}) {
    SCOPED_TRACE(m == Mode::Eager ? "eager" : "compiled");
    net->zero_grad();
    Tensor x = f.at("input:x").to(graph::kFloat32).requires_grad_();
    graph::set_mode(m);
    const uint64_t before = e2e::calls("MPNNImpl7forward");
    Tensor y = net(x, edges);
    if (m != Mode::Eager) EXPECT_EQ(e2e::calls("MPNNImpl7forward") - before, 1u) << "the graph did not run";
    graph::set_mode(Mode::Static);
    expect_near(y, f.at("output:y"), 1e-5, "output");
    (y * f.at("upstream:y").to(graph::kFloat32)).sum().backward();
    grads.emplace_back();
    for (auto& [name, p] : net->named_parameters()) {
      expect_near(p.grad(), f.at("grad:" + name), 2e-5, "grad of " + name);
      grads.back().push_back(p.grad());
    }
    expect_near(x.grad(), f.at("grad:x"), 2e-5, "grad of x");
  }
  for (size_t k = 0; k < grads[0].size(); ++k)
    expect_near(grads[0][k], grads[1][k].to(graph::kFloat64), 1e-6, "static vs eager gradient " + std::to_string(k));
}

TEST(ModelSuite, MessagePassingNetworkRejectsAnEdgeOutOfRange) {
  model_graph::MPNN net(3, 5, 2);
  const Tensor x = graph::zeros({4, 3});
  const Tensor edges = graph::tensor<int64_t>({0, 1, 2, 4}).reshape({2, 2});  // target 4 of 4 nodes
  try {
    net(x, edges);
    ADD_FAILURE() << "no error";
  } catch (const graph::Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("scatter_add"), std::string::npos) << msg;
    EXPECT_NE(msg.find("out of range"), std::string::npos) << msg;
  }
}

}  // namespace
