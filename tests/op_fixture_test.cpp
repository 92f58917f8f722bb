// The op harness: every case of tests/fixtures/ops.txt (forward values,
// result dtypes and gradients computed by PyTorch, see make_op_fixtures.py)
// run through our eager ops and autograd and compared within per-dtype
// tolerances:
//   float64 1e-12, float32 1e-5 (gradients 1e-4), float16 2e-3, bfloat16 1.6e-2
// (relative, plus the same absolute floor); integers and bools exactly.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace {

using graph::DType;
using graph::Shape;
using graph::Tensor;

struct Case {
  std::string name, op;
  DType dtype = graph::kFloat32;
  std::map<std::string, std::string> attrs;
  std::vector<Tensor> inputs;
  std::vector<double> scalars;
  std::vector<bool> scalar_is_int;
  Tensor output, upstream;
  std::map<int, Tensor> grads;
};

DType parse_dtype(const std::string& token) {
  DType d;
  if (!graph::dtype_from_token(token, d)) throw std::runtime_error("bad dtype " + token);
  return d;
}

// "[2,3] v v v ..." -> a tensor of `dtype` (values go through float64, exact
// for every dtype the fixtures use).
Tensor parse_tensor(std::istringstream& in, DType dtype) {
  std::string shape_tok;
  in >> shape_tok;
  Shape shape;
  std::string inner = shape_tok.substr(1, shape_tok.size() - 2);
  std::stringstream ss(inner);
  for (std::string d; std::getline(ss, d, ',');) shape.push_back(std::stoll(d));
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  if (graph::is_floating(dtype)) {
    Tensor t = graph::empty(shape, graph::kFloat64);
    for (int64_t i = 0; i < n; ++i) {
      std::string v;
      in >> v;
      t.data_ptr<double>()[i] = std::stod(v);
    }
    return t.to(dtype);
  }
  Tensor t = graph::empty(shape, graph::kInt64);
  for (int64_t i = 0; i < n; ++i) in >> t.data_ptr<int64_t>()[i];
  return t.to(dtype);
}

std::vector<Case> load() {
  std::ifstream f(CXXGRAPH_FIXTURES "/ops.txt");
  EXPECT_TRUE(f.good()) << "missing " CXXGRAPH_FIXTURES "/ops.txt";
  std::vector<Case> cases;
  std::string line;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string tag;
    in >> tag;
    if (tag == "case") {
      Case c;
      std::string dt;
      in >> c.name >> c.op >> dt;
      c.dtype = parse_dtype(dt);
      for (std::string kv; in >> kv;) c.attrs[kv.substr(0, kv.find('='))] = kv.substr(kv.find('=') + 1);
      cases.push_back(c);
    } else if (tag.rfind("input", 0) == 0) {
      DType d = tag.size() > 6 ? parse_dtype(tag.substr(6)) : cases.back().dtype;
      cases.back().inputs.push_back(parse_tensor(in, d));
    } else if (tag == "scalar") {
      std::string v;
      in >> v;
      cases.back().scalars.push_back(std::stod(v));
      cases.back().scalar_is_int.push_back(v.find_first_of(".en") == std::string::npos);
    } else if (tag == "output") {
      std::string dt;
      in >> dt;
      cases.back().output = parse_tensor(in, parse_dtype(dt));
    } else if (tag == "upstream") {
      cases.back().upstream = parse_tensor(in, cases.back().output.dtype());
    } else if (tag == "grad") {
      int k;
      in >> k;
      cases.back().grads[k] = parse_tensor(in, cases.back().inputs.at(k).dtype());
    }
  }
  return cases;
}

Shape dims_like(const std::string& list) {
  Shape dims;
  std::stringstream ss(list);
  for (std::string d; std::getline(ss, d, ',');) dims.push_back(std::stoll(d));
  return dims;
}

Shape dims_attr(const Case& c) { return dims_like(c.attrs.at("dims")); }

graph::Scalar scalar(const Case& c, size_t i) {
  if (c.scalar_is_int[i]) return graph::Scalar(static_cast<int64_t>(c.scalars[i]));
  return graph::Scalar(c.scalars[i]);
}

// select, narrow, and the ops with a list result (as make_op_fixtures.py's
// flat(): the cat of the flattened pieces, piece k times k + 1).
Tensor parts(const Case& c, const Tensor& x) {
  const auto attr = [&](const char* k) { return std::stoll(c.attrs.at(k)); };
  const int64_t d = attr("dim");
  if (c.op == "select") return x.select(d, attr("index"));
  if (c.op == "narrow") return graph::narrow(x, d, attr("start"), attr("length"));
  const std::vector<Tensor> p = c.op == "unbind"  ? graph::unbind(x, d)
                                : c.op == "split" ? x.split(attr("split_size"), d)
                                : c.op == "chunk" ? graph::chunk(x, attr("chunks"), d)
                                                  : graph::split(x, dims_attr(c), d);
  std::vector<Tensor> flat;
  for (size_t k = 0; k < p.size(); ++k) flat.push_back(p[k].reshape({-1}) * static_cast<double>(k + 1));
  return graph::cat(flat);
}

// Runs the case's op on `in` (our ops, looked up by the op table's names).
Tensor run(const Case& c, const std::vector<Tensor>& in) {
  using Unary = Tensor (*)(const Tensor&);
  using Binary = Tensor (*)(const Tensor&, const Tensor&);
  using BinaryTS = Tensor (*)(const Tensor&, graph::Scalar);
  using BinaryST = Tensor (*)(graph::Scalar, const Tensor&);
  static const std::map<std::string, Unary> unary = {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad) {#name, static_cast<Unary>(graph::name)},
#include "graph/ops.def"
  };
  static const std::map<std::string, std::tuple<Binary, BinaryTS, BinaryST>> binary = {
#define GRAPH_BINARY_OP(name, rule, cost, body, ga, gb) \
  {#name, {static_cast<Binary>(graph::name), static_cast<BinaryTS>(graph::name), static_cast<BinaryST>(graph::name)}},
#include "graph/ops.def"
  };
  if (auto u = unary.find(c.op); u != unary.end()) return u->second(in[0]);
  if (auto b = binary.find(c.op); b != binary.end()) {
    if (c.scalars.empty()) return std::get<0>(b->second)(in[0], in[1]);
    if (c.attrs.count("scalar_first")) return std::get<2>(b->second)(scalar(c, 0), in[0]);
    return std::get<1>(b->second)(in[0], scalar(c, 0));
  }
  const bool has_dims = c.attrs.count("dims") != 0;
  const bool keep = c.attrs.count("keepdim") && c.attrs.at("keepdim") == "1";
  if (c.op == "sum") return has_dims ? graph::sum(in[0], dims_attr(c), keep) : graph::sum(in[0]);
  if (c.op == "mean") return has_dims ? graph::mean(in[0], dims_attr(c), keep) : graph::mean(in[0]);
  if (c.op == "amax") return has_dims ? graph::amax(in[0], dims_attr(c), keep) : graph::amax(in[0]);
  if (c.op == "amin") return has_dims ? graph::amin(in[0], dims_attr(c), keep) : graph::amin(in[0]);
  if (c.op == "argmax") return graph::argmax(in[0], std::stoll(c.attrs.at("dim")), keep);
  if (c.op == "softmax") return graph::softmax(in[0], std::stoll(c.attrs.at("dim")));
  if (c.op == "log_softmax") return graph::log_softmax(in[0], std::stoll(c.attrs.at("dim")));
  if (c.op == "matmul") return graph::matmul(in[0], in[1]);
  if (c.op == "where") return graph::where(in[0], in[1], in[2]);
  if (c.op == "where_scalar")
    return c.attrs.count("scalar_first") ? graph::where(in[0], scalar(c, 0), in[1]) : graph::where(in[0], in[1], scalar(c, 0));
  if (c.op == "masked_fill") return in[0].masked_fill(in[1], scalar(c, 0));
  if (c.op == "triu") return graph::triu(in[0], std::stoll(c.attrs.at("diagonal")));
  if (c.op == "tril") return in[0].tril(std::stoll(c.attrs.at("diagonal")));
  if (c.op == "index_select") return graph::index_select(in[0], std::stoll(c.attrs.at("dim")), in[1]);
  if (c.op == "gather") return in[0].gather(std::stoll(c.attrs.at("dim")), in[1]);
  if (c.op == "cumsum") return in[0].cumsum(std::stoll(c.attrs.at("dim")));
  if (c.op == "bmm") return graph::bmm(in[0], in[1]);
  if (c.op == "type_as") return in[0].type_as(in[1]);
  if (c.op == "to") {
    graph::DType d{};
    if (!graph::dtype_from_token(c.attrs.at("dtype"), d)) throw std::runtime_error("bad dtype in case " + c.name);
    return in[0].to(d);
  }
  if (c.op == "clamp") return graph::clamp(in[0], scalar(c, 0), scalar(c, 1));
  if (c.op == "hardtanh") return graph::hardtanh(in[0], scalar(c, 0), scalar(c, 1));
  auto pair = [&](const char* key) {
    Shape v = dims_like(c.attrs.at(key));
    return v;
  };
  if (c.op == "linear") return graph::linear(in[0], in[1], in[2]);
  if (c.op == "layer_norm") return graph::layer_norm(in[0], pair("normalized"), in[1], in[2]);
  if (c.op == "conv2d")
    return graph::conv2d(in[0], in[1], in[2], pair("stride"), pair("padding"), pair("dilation"),
                         std::stoll(c.attrs.at("groups")));
  if (c.op == "conv_transpose2d")
    return graph::conv_transpose2d(in[0], in[1], in[2], pair("stride"), pair("padding"), pair("output_padding"),
                                   std::stoll(c.attrs.at("groups")), pair("dilation"));
  if (c.op == "max_pool2d") return graph::max_pool2d(in[0], pair("kernel"), pair("stride"), pair("padding"));
  if (c.op == "avg_pool2d") return graph::avg_pool2d(in[0], pair("kernel"), pair("stride"), pair("padding"));
  if (c.op == "embedding") return graph::embedding(in[0], in[1]);
  if (c.op == "cat") return graph::cat({in[0], in[1]}, std::stoll(c.attrs.at("dim")));
  if (c.op == "stack") return graph::stack({in[0], in[1]}, std::stoll(c.attrs.at("dim")));
  if (c.op == "mse_loss") return graph::mse_loss(in[0], in[1]);
  if (c.op == "cross_entropy") return graph::cross_entropy(in[0], in[1]);
  if (c.op == "sdpa") return graph::scaled_dot_product_attention(in[0], in[1], in[2], Tensor(), 0.0, c.attrs.count("causal"));
  if (c.op == "batch_norm" || c.op == "batch_norm_stats") {
    // Copies of the running stats: batch_norm_stats checks them after the step.
    const auto opt = [&](size_t k) { return in.size() > k ? in[k].detach().clone() : Tensor(); };
    const Tensor rm = opt(1), rv = opt(2);
    const Tensor y = graph::batch_norm(in[0], rm, rv, in.size() > 3 ? in[3] : Tensor(), in.size() > 4 ? in[4] : Tensor(),
                                       c.attrs.at("training") == "1", std::stod(c.attrs.at("momentum")),
                                       std::stod(c.attrs.at("eps")));
    return c.op == "batch_norm" ? y : graph::cat({rm, rv});
  }
  if (c.op == "logsumexp") return graph::logsumexp(in[0], dims_attr(c), keep);
  if (c.op == "var" || c.op == "std") {
    const auto f = c.op == "var" ? [](const Tensor& x, const Shape& d, double k, bool kd) { return graph::var(x, d, k, kd); }
                                 : [](const Tensor& x, const Shape& d, double k, bool kd) { return graph::std(x, d, k, kd); };
    if (!has_dims) return c.op == "var" ? graph::var(in[0]) : graph::std(in[0]);
    return f(in[0], dims_attr(c), std::stod(c.attrs.at("correction")), keep);
  }
  if (c.attrs.count("reduction")) {
    const std::string& r = c.attrs.at("reduction");
    const graph::Reduction red = r == "sum" ? graph::kSum : r == "none" ? graph::kNone : graph::kMean;
    const auto opt = [&](const char* key, size_t k) { return c.attrs.count(key) ? in.at(k) : Tensor(); };
    if (c.op == "nll_loss")
      return graph::nll_loss(in[0], in[1], opt("weight", 2), red,
                             c.attrs.count("ignore_index") ? std::stoll(c.attrs.at("ignore_index")) : -100);
    if (c.op == "binary_cross_entropy") return graph::binary_cross_entropy(in[0], in[1], red, opt("weight", 2));
    if (c.op == "binary_cross_entropy_with_logits")
      return graph::binary_cross_entropy_with_logits(in[0], in[1], red, opt("pos_weight", 3), opt("weight", 2));
  }
  if (c.op == "select" || c.op == "narrow" || c.op == "unbind" || c.op == "split" || c.op == "split_sizes" ||
      c.op == "chunk")
    return parts(c, in[0]);
  if (c.op == "max_dim" || c.op == "min_dim") {
    const auto [v, i] = c.op == "max_dim" ? in[0].max(std::stoll(c.attrs.at("dim")), keep)
                                            : graph::min(in[0], std::stoll(c.attrs.at("dim")), keep);
    return c.attrs.at("out") == "indices" ? i : v;
  }
  if (c.op == "argmin") return in[0].argmin(std::stoll(c.attrs.at("dim")), keep);
  // nn_functional.h (issue 19); `in` holds the optional weight and bias when given.
  const auto num = [&](const char* key) { return std::stoll(c.attrs.at(key)); };
  if (c.op == "group_norm")
    return graph::group_norm(in[0], num("groups"), in.size() > 1 ? in[1] : Tensor(), in.size() > 2 ? in[2] : Tensor(),
                             std::stod(c.attrs.at("eps")));
  if (c.op == "conv1d")
    return graph::conv1d(in[0], in[1], in.size() > 2 ? in[2] : Tensor(), num("stride"), num("padding"), num("dilation"),
                         num("groups"));
  if (c.op == "max_pool1d") return graph::max_pool1d(in[0], num("kernel"), num("stride"), num("padding"));
  if (c.op == "avg_pool1d") return graph::avg_pool1d(in[0], num("kernel"), num("stride"), num("padding"));
  if (c.op == "adaptive_avg_pool2d") return graph::adaptive_avg_pool2d(in[0], pair("output"));
  if (c.op == "adaptive_max_pool2d") return graph::adaptive_max_pool2d(in[0], pair("output"));
  if (c.op == "interpolate") {
    const std::string& m = c.attrs.at("mode");
    const graph::InterpolateMode mode = m == "nearest" ? graph::kNearest : m == "linear" ? graph::kLinear : graph::kBilinear;
    const bool ac = num("align") != 0;
    return c.attrs.count("scale") ? graph::interpolate_scale(in[0], std::stod(c.attrs.at("scale")), mode, ac)
                                  : graph::interpolate(in[0], pair("size"), mode, ac);
  }  if (c.op == "pad") {
    const std::string& v = c.attrs.at("value");
    const bool integral = v.find_first_of(".e") == std::string::npos;
    return graph::pad(in[0], pair("pad"), integral ? graph::Scalar(std::stoll(v)) : graph::Scalar(std::stod(v)));
  }
  if (c.op == "one_hot") return num("classes") < 0 ? graph::one_hot(in[0]) : graph::one_hot(in[0], num("classes"));
  // Issue 19: scatter_add, argsort / sort / topk (ops.h), norm, einsum.
  if (c.op == "scatter_add") return in[0].scatter_add(num("dim"), in[1], in[2]);
  if (c.op == "argsort") return in[0].argsort(num("dim"), num("descending") != 0);
  if (c.op == "sort" || c.op == "topk") {
    const auto [v, i] = c.op == "sort" ? graph::sort(in[0], num("dim"), num("descending") != 0)
                                       : in[0].topk(num("k"), num("dim"), num("largest") != 0);
    return c.attrs.at("out") == "indices" ? i : v;
  }
  if (c.op == "norm") return graph::norm(in[0], std::stod(c.attrs.at("p")), has_dims ? dims_attr(c) : Shape{}, keep);
  if (c.op == "einsum") return graph::einsum(c.attrs.at("eq"), in);
  throw std::runtime_error("no runner for op " + c.op);
}

double tolerance(DType d, bool gradient) {
  switch (d) {
    case graph::kFloat64: return 1e-12;
    case graph::kFloat32: return gradient ? 1e-4 : 1e-5;
    case graph::kFloat16: return 2e-3;
    case graph::kBFloat16: return 1.6e-2;
    default: return 0;
  }
}

void expect_equal(const Tensor& want, const Tensor& got, const std::string& what, bool gradient) {
  ASSERT_TRUE(got.defined()) << what << ": undefined";
  ASSERT_EQ(got.dtype(), want.dtype()) << what << ": dtype " << graph::dtype_name(got.dtype()) << " vs "
                                       << graph::dtype_name(want.dtype());
  ASSERT_EQ(got.sizes(), want.sizes()) << what;
  const Tensor a = want.to(graph::kFloat64).contiguous(), b = got.to(graph::kFloat64).contiguous();
  const double tol = tolerance(want.dtype(), gradient);
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    if ((std::isnan(x) && std::isnan(y)) || x == y) continue;  // NaN, and infinities (masked_fill's -inf)
    ASSERT_NEAR(y, x, tol * (1 + std::fabs(x))) << what << " element " << i;
  }
}

TEST(OpFixtures, MatchPyTorch) {
  const std::vector<Case> cases = load();
  ASSERT_GT(cases.size(), 200u);
  int checked_grads = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::vector<Tensor> in;
    for (const Tensor& t : c.inputs) {
      Tensor leaf = t.clone();
      if (!c.grads.empty() && graph::is_floating(t.dtype())) leaf.requires_grad_();
      in.push_back(leaf);
    }
    Tensor out = run(c, in);
    expect_equal(c.output, out, c.name + " output", false);
    if (c.grads.empty()) continue;
    out.backward(c.upstream);
    for (const auto& [k, g] : c.grads) {
      expect_equal(g, in[k].grad(), c.name + " grad " + std::to_string(k), true);
      ++checked_grads;
    }
  }
  EXPECT_GE(checked_grads, 140);
}

}  // namespace
