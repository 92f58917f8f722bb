#pragma once
// Reads tests/fixtures/rnn.txt (make_rnn_fixtures.py) and models.txt
// (make_model_fixtures.py): per case, PyTorch's parameters, inputs, outputs,
// upstream gradients, gradients and buffers, in float64.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include <graph/graph.h>

namespace rnn_fixture {

using graph::Tensor;

struct Entry {
  graph::Shape shape;
  std::vector<double> values;
};

struct Case {
  std::map<std::string, int64_t> attrs;  // I=3 H=4 ...
  std::vector<std::string> params;       // "weight_ih_l0", ... in PyTorch's order
  std::map<std::string, Entry> tensors;  // "param:weight_ih_l0", "input:x", ...

  int64_t attr(const std::string& k) const { return attrs.at(k); }
  const Entry& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("fixture: no tensor " + name);
    return it->second;
  }
  // The tensor `name` in `dtype` (int64 entries stay exact).
  Tensor tensor(const std::string& name, graph::DType dtype = graph::kFloat64) const {
    const Entry& e = at(name);
    Tensor t = graph::empty(e.shape, graph::kFloat64);
    std::copy(e.values.begin(), e.values.end(), t.data_ptr<double>());
    return t.to(dtype);
  }
};

inline graph::Shape parse_shape(const std::string& s) {
  graph::Shape out;
  std::string body = s.substr(1, s.size() - 2);
  std::stringstream ss(body);
  std::string part;
  while (std::getline(ss, part, ','))
    if (!part.empty()) out.push_back(std::stoll(part));
  return out;
}

inline std::map<std::string, Case> read_cases(const std::string& file) {
  std::map<std::string, Case> out;
  std::ifstream in(std::string(CXXGRAPH_FIXTURES) + "/" + file);
  if (!in) throw std::runtime_error("cannot read " + file);
  std::string line;
  Case* cur = nullptr;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    std::string word;
    ls >> word;
    if (word == "case") {
      std::string name, kv;
      ls >> name;
      cur = &out[name];
      while (ls >> kv) cur->attrs[kv.substr(0, kv.find('='))] = std::stoll(kv.substr(kv.find('=') + 1));
    } else if (word == "tensor" && cur) {
      std::string name, shape;
      ls >> name >> shape;
      Entry e{parse_shape(shape), {}};
      double v;
      while (ls >> v) e.values.push_back(v);
      if (name.rfind("param:", 0) == 0) cur->params.push_back(name.substr(6));
      cur->tensors[name] = std::move(e);
    }
  }
  return out;
}

// The case `name` of fixtures/<file>.
inline const Case& get(const std::string& name, const std::string& file = "rnn.txt") {
  static std::map<std::string, std::map<std::string, Case>> files;
  auto it = files.find(file);
  if (it == files.end()) it = files.emplace(file, read_cases(file)).first;
  return it->second.at(name);
}

// A sequence case's module options (D=2: bidirectional; P: dropout).
inline graph::nn::RNNOptions options(const Case& c) {
  auto opt = [&](const char* k) { return c.attrs.count(k) ? c.attr(k) : 0; };
  return graph::nn::RNNOptions(c.attr("I"), c.attr("H"))
      .num_layers(c.attr("L"))
      .batch_first(c.attr("batch_first"))
      .bidirectional(opt("D") == 2)
      .dropout(static_cast<double>(opt("P")));
}

// Copies the case's parameters into `m` by PyTorch name (prefix: the
// submodule's, e.g. "gru."), converting to the module's dtype.
inline void load_params(graph::nn::Module& m, const Case& c, const std::string& prefix = "") {
  graph::NoGradGuard g;
  for (auto& [name, p] : m.named_parameters()) {
    ASSERT_EQ(name.rfind(prefix, 0), 0u) << name;
    Tensor v = c.tensor("param:" + name.substr(prefix.size()), p.dtype());
    ASSERT_EQ(p.sizes(), v.sizes()) << name;
    p.copy_(v);
  }
}

// got against PyTorch's float64 value, relative tolerance tol.
inline void expect_near(const Tensor& got, const Entry& want, double tol, const std::string& what) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.sizes(), want.shape) << what;
  const Tensor a = got.detach().to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = want.values[i];
    EXPECT_NEAR(x, y, tol * (1 + std::fabs(y))) << what << ", element " << i;
  }
}

// The same against another run's tensor.
inline void expect_near(const Tensor& got, const Tensor& want, double tol, const std::string& what) {
  ASSERT_TRUE(want.defined()) << what << ": no reference";
  const Tensor w = want.detach().to(graph::kFloat64).contiguous();
  expect_near(got, Entry{w.sizes(), std::vector<double>(w.data_ptr<double>(), w.data_ptr<double>() + w.numel())}, tol,
              what);
}

}  // namespace rnn_fixture
