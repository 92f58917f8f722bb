// ONNX export, the op rules for library calls and the ops with their own
// kernels (matmul, linear, conv2d, conv_transpose2d, pooling, layer_norm, softmax, losses,
// attention, masked_fill, triu/tril, index_select, gather, cumsum, bmm, ...), by OpId. Decompositions follow
// the eager kernels (runtime/src/nn_ops.cpp, pool.cpp, select.cpp) so that
// ONNX computes the same values.
#include <algorithm>
#include <cmath>
#include <limits>
#include <variant>
#include <vector>

#include "graph/detail/backward_kernels.h"
#include "graph/ops.h"
#include "rule.h"

namespace graph::onnx::detail {
namespace {

std::string transpose_last2(Rule& r, const std::string& x, int64_t rank) {
  std::vector<int64_t> perm;
  for (int64_t k = 0; k < rank; ++k) perm.push_back(k);
  std::swap(perm[rank - 1], perm[rank - 2]);
  std::string out;
  Exporter::attr(r.last_node("Transpose", {x}, out), "perm", perm);
  return out;
}

void linear(Rule& r) {
  const DType d = r.out_dtype();
  const std::string x = r.x_as(0, d), w = r.x_as(1, d);
  const bool bias = r.defined(2);
  std::string out;
  if (r.in(0)->type().dims && r.rank(0) == 2) {  // Gemm: x W^T + b
    std::vector<std::string> inputs{x, w};
    if (bias) inputs.push_back(r.x_as(2, d));
    Exporter::attr(r.last_node("Gemm", inputs, out), "transB", int64_t{1});
    return r.done(out);
  }
  out = r.emit("MatMul", {x, transpose_last2(r, w, 2)});
  if (bias) out = r.emit("Add", {out, r.x_as(2, d)});
  r.done(out);
}

// Conv and ConvTranspose take the same inputs and attributes; ONNX's
// ConvTranspose has PyTorch's semantics (weight [C_in, C_out / group, kH, kW],
// symmetric pads) plus output_padding, added at the end.
void conv(Rule& r, bool transposed) {
  const DType d = r.out_dtype();
  std::vector<std::string> inputs{r.x_as(0, d), r.x_as(1, d)};
  if (r.defined(2)) inputs.push_back(r.x_as(2, d));
  const auto pad = r.ints("padding");
  const auto w = r.ex.need_sizes(r.n, r.in(1));
  std::string out;
  auto& node = r.last_node(transposed ? "ConvTranspose" : "Conv", inputs, out);
  Exporter::attr(node, "kernel_shape", std::vector<int64_t>(w.begin() + 2, w.end()));
  Exporter::attr(node, "strides", r.ints("stride"));
  Exporter::attr(node, "pads", {pad.at(0), pad.at(1), pad.at(0), pad.at(1)});
  if (transposed) Exporter::attr(node, "output_padding", r.ints("output_padding"));
  Exporter::attr(node, "dilations", r.ints("dilation"));
  Exporter::attr(node, "group", r.i("groups"));
  r.done(out);
}

void conv2d(Rule& r) { conv(r, false); }
void conv_transpose2d(Rule& r) { conv(r, true); }

void pool(Rule& r, bool max) {
  const auto kernel = r.ints("kernel");
  auto stride = r.has("stride") ? r.ints("stride") : std::vector<int64_t>{};
  if (stride.empty()) stride = kernel;  // PyTorch's default
  const auto pad = r.has("padding") ? r.ints("padding") : std::vector<int64_t>{0, 0};
  std::string out;
  auto& node = r.last_node(max ? "MaxPool" : "AveragePool", {r.x(0)}, out);
  Exporter::attr(node, "kernel_shape", kernel);
  Exporter::attr(node, "strides", stride);
  Exporter::attr(node, "pads", {pad.at(0), pad.at(1), pad.at(0), pad.at(1)});
  if (!max) Exporter::attr(node, "count_include_pad", int64_t{1});  // as the eager kernel
  r.done(out);
}

// adaptive_avg_pool2d: a 1x1 output is GlobalAveragePool; any other, whose
// windows may overlap, is two products with the averaging matrices of the
// input's (known) height and width, as the op runs on the device.
void adaptive_avg_pool(Rule& r) {
  auto size = r.ints("output_size");
  if (size.size() == 1) size.push_back(size[0]);
  const DType d = r.out_dtype();
  if (size == std::vector<int64_t>{1, 1}) return r.done(r.emit("GlobalAveragePool", {r.x_as(0, d)}));
  const std::vector<int64_t> x = r.ex.need_sizes(r.n, r.in(0));
  const std::string rows = r.ex.fresh("adaptive_rows"), cols = r.ex.fresh("adaptive_cols");
  r.ex.add_initializer(rows, ::graph::detail::adaptive_averaging(x[x.size() - 2], size.at(0), d));
  r.ex.add_initializer(cols, ::graph::detail::adaptive_averaging(x.back(), size.at(1), d).t().contiguous());
  r.done(r.emit("MatMul", {r.emit("MatMul", {rows, r.x_as(0, d)}), cols}));
}

// pad{pad, value}: a Slice for the negative amounts (crops), then Pad in
// constant mode for the positive ones, its pads laid out as ONNX wants
// (every axis's begin, then every axis's end).
void pad(Rule& r) {
  const auto amounts = r.ints("pad");
  const int64_t rank = r.rank(0);
  std::vector<int64_t> starts, ends, axes, pads(static_cast<size_t>(2 * rank), 0);
  for (size_t i = 0; i < amounts.size() / 2; ++i) {
    const int64_t axis = rank - 1 - static_cast<int64_t>(i), lo = amounts[2 * i], hi = amounts[2 * i + 1];
    if (lo < 0 || hi < 0) {
      starts.push_back(std::max<int64_t>(-lo, 0));
      ends.push_back(hi < 0 ? hi : std::numeric_limits<int64_t>::max());
      axes.push_back(axis);
    }
    pads[static_cast<size_t>(axis)] = std::max<int64_t>(lo, 0);
    pads[static_cast<size_t>(rank + axis)] = std::max<int64_t>(hi, 0);
  }
  std::string x = r.x(0);
  if (!axes.empty())
    x = r.emit("Slice", {x, r.ex.const_ints(starts), r.ex.const_ints(ends), r.ex.const_ints(axes)});
  double value = 0.0;
  if (r.has("value"))
    value = std::holds_alternative<bool>(r.at("value")) ? (r.b("value", false) ? 1.0 : 0.0) : r.f("value");
  r.done(r.emit("Pad", {x, r.ex.const_ints(pads), r.ex.const_scalar(value, r.out_dtype())}));
}

// interpolate{size | scale_factor, mode, align_corners}: per resized axis (the
// last first, as the eager kernel), a Gather of the source indices; the linear
// modes blend two Gathers with constant weights x[i0] * (1 - w) + x[i1] * w, in
// the output's dtype, so ONNX computes what the eager kernel does.
void interpolate(Rule& r) {
  const std::vector<int64_t> x = r.ex.need_sizes(r.n, r.in(0));
  const int64_t rank = static_cast<int64_t>(x.size()), mode = r.has("mode") ? r.i("mode") : 0;
  const double scale = r.has("scale_factor") ? r.f("scale_factor") : 0.0;
  const std::vector<int64_t> size = scale > 0 ? std::vector<int64_t>{} : r.ints("size");
  const bool ac = r.b("align_corners", false);
  const DType d = r.out_dtype();
  std::string y = mode == 0 ? r.x(0) : r.x_as(0, d);
  for (int64_t axis = rank - 1; axis >= 2; --axis) {
    const int64_t in = x[static_cast<size_t>(axis)];
    const int64_t out = scale > 0 ? static_cast<int64_t>(std::floor(static_cast<double>(in) * scale))
                                  : size.at(static_cast<size_t>(axis - 2));
    const std::vector<Tensor> src = ::graph::detail::interpolate_sources(in, out, scale, mode, ac);
    auto gather = [&](const Tensor& idx) {
      const std::string name = r.ex.fresh("interp_index");
      r.ex.add_initializer(name, idx);
      std::string g;
      auto& node = r.last_node("Gather", {y, name}, g);
      Exporter::attr(node, "axis", axis);
      return g;
    };
    if (mode == 0) {
      y = gather(src[0]);
      continue;
    }
    const Shape wshape = axis == rank - 1 ? Shape{out} : Shape{out, 1};
    const Tensor w1 = src[2].to(d).reshape(wshape);
    const Tensor w0 = ::graph::sub(1.0, w1).contiguous();  // in d, as the kernel's 1 - w
    const std::string n0 = r.ex.fresh("interp_w0"), n1 = r.ex.fresh("interp_w1");
    r.ex.add_initializer(n0, w0);
    r.ex.add_initializer(n1, w1.contiguous());
    const std::string a = gather(src[0]), b = gather(src[1]);
    y = r.emit("Add", {r.emit("Mul", {a, n0}), r.emit("Mul", {b, n1})});
  }
  r.done(y);
}

void layer_norm(Rule& r) {
  const DType d = r.out_dtype();
  const auto shape = r.ints("normalized_shape");
  std::string scale;
  if (r.defined(1)) scale = r.x_as(1, d);
  else {  // LayerNormalization needs a scale
    scale = r.ex.fresh("ln_ones");
    r.ex.add_initializer(scale, full(Shape(shape.begin(), shape.end()), 1.0, d));
  }
  std::vector<std::string> inputs{r.x_as(0, d), scale};
  if (r.defined(2)) inputs.push_back(r.x_as(2, d));
  std::string out;
  auto& node = r.last_node("LayerNormalization", inputs, out);
  Exporter::attr(node, "axis", -static_cast<int64_t>(shape.size()));
  Exporter::attr(node, "epsilon", static_cast<float>(r.f("eps")));
  r.done(out);
}

// Eval mode only: BatchNormalization with its training_mode off normalizes
// with the running stats, as the eager kernel does; it needs a scale and a bias.
void batch_norm(Rule& r) {
  if (r.b("training", false)) r.ex.fail(r.n, "batch_norm in training mode uses the batch's statistics; export in eval mode");
  const DType d = r.out_dtype();
  std::string params[2];
  for (int k = 0; k < 2; ++k) {
    if (r.defined(3 + k)) {
      params[k] = r.x_as(3 + k, d);
      continue;
    }
    const int64_t C = r.ex.need_sizes(r.n, r.in(0)).at(1);
    params[k] = r.ex.fresh(k == 0 ? "bn_ones" : "bn_zeros");
    r.ex.add_initializer(params[k], full(Shape{C}, k == 0 ? 1.0 : 0.0, d));
  }
  std::string out;
  auto& node = r.last_node("BatchNormalization", {r.x_as(0, d), params[0], params[1], r.x_as(1, d), r.x_as(2, d)}, out);
  Exporter::attr(node, "epsilon", static_cast<float>(r.has("eps") ? r.f("eps") : 1e-5));
  r.done(out);
}

void cat(Rule& r, bool stack) {
  const DType d = r.out_dtype();
  const size_t k = ir::num_op_inputs(r.n);
  if (k == 0) r.ex.fail(r.n, "no tensors to join");
  int64_t dim = r.i("dim");
  const int64_t out_rank = r.rank(0) + (stack ? 1 : 0);
  dim = r.axis(dim, out_rank);
  std::vector<std::string> parts;
  for (size_t i = 0; i < k; ++i) {
    std::string p = r.x_as(i, d);
    if (stack) p = r.ex.emit("Unsqueeze", {p, r.ex.const_ints({dim})}, r.hint());
    parts.push_back(p);
  }
  std::string out;
  Exporter::attr(r.last_node("Concat", parts, out), "axis", dim);
  r.done(out);
}

void cross_entropy(Rule& r) {
  const DType d = r.out_dtype();
  const int64_t rk = r.rank(0);
  const int64_t cdim = rk == 1 ? 0 : 1;
  std::string logits = r.x_as(0, d);
  if (is_floating(r.ex.dtype(r.n, r.in(1)))) {  // class probabilities: mean of -sum(p * log_softmax)
    std::string lsm;
    Exporter::attr(r.last_node("LogSoftmax", {logits}, lsm), "axis", cdim);
    const std::string per = r.emit("ReduceSum", {r.emit("Mul", {r.x_as(1, d), lsm}), r.ex.const_ints({cdim})});
    std::string m;
    Exporter::attr(r.last_node("ReduceMean", {r.emit("Neg", {per})}, m), "keepdims", int64_t{0});
    return r.done(m);
  }
  std::string target = r.x_as(1, DType::Int64);
  if (rk == 1) {  // one sample: [C] -> [1, C]
    logits = r.emit("Unsqueeze", {logits, r.ex.const_ints({0})});
    target = r.emit("Unsqueeze", {target, r.ex.const_ints({0})});
  }
  std::string out;
  auto& node = r.last_node("SoftmaxCrossEntropyLoss", {logits, target}, out);
  Rule::str_attr(node, "reduction", "mean");
  Exporter::attr(node, "ignore_index", int64_t{-100});  // the eager kernel's (PyTorch's)
  r.done(out);
}

void attention(Rule& r) {
  if (r.has("dropout_p") && r.f("dropout_p") != 0) r.ex.fail(r.n, "attention with dropout is training-only");
  const DType d = r.out_dtype();
  const auto qs = r.ex.need_sizes(r.n, r.in(0)), ks = r.ex.need_sizes(r.n, r.in(1));
  const std::string q = r.x_as(0, d), k = r.x_as(1, d), v = r.x_as(2, d);
  const double scale = 1.0 / std::sqrt(static_cast<double>(qs.back()));
  std::string s = r.emit("Mul", {r.emit("MatMul", {q, transpose_last2(r, k, static_cast<int64_t>(ks.size()))}),
                                 r.ex.const_scalar(scale, d)});
  const std::string minus_inf = r.ex.const_scalar(-std::numeric_limits<double>::infinity(), d);
  if (r.b("is_causal", false)) {  // top-left aligned lower triangle, as the eager kernel
    const int64_t L = qs[qs.size() - 2], S = ks[ks.size() - 2];
    Tensor mask = zeros({L, S}, kBool);
    bool* m = mask.data_ptr<bool>();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) m[i * S + j] = j <= i;
    const std::string name = r.ex.fresh("causal_mask");
    r.ex.add_initializer(name, mask);
    s = r.emit("Where", {name, s, minus_inf});
  }
  if (r.defined(3)) {
    if (r.ex.dtype(r.n, r.in(3)) == DType::Bool) s = r.emit("Where", {r.x(3), s, minus_inf});
    else s = r.emit("Add", {s, r.x_as(3, d)});
  }
  std::string p;
  Exporter::attr(r.last_node("Softmax", {s}, p), "axis", int64_t{-1});
  r.done(r.emit("MatMul", {p, v}));
}

// masked_fill{value, invert, promote}(x, mask): Where(mask, fill, x), or
// Where(mask, x, fill) with invert. The fill is a constant of the result dtype
// (infer_types applied promote), made as the eager kernel makes it (full of
// the Scalar: a float fill of an int tensor truncates).
void masked_fill(Rule& r) {
  const DType d = r.out_dtype();
  const ir::AttrValue& v = r.at("value");
  Scalar value(0.0);
  if (const auto* i = std::get_if<int64_t>(&v)) value = Scalar(static_cast<long long>(*i));
  else if (const auto* f = std::get_if<double>(&v)) value = Scalar(*f);
  else if (const auto* b = std::get_if<bool>(&v)) value = Scalar(*b);
  else r.ex.fail(r.n, "the attribute 'value' is not a number");
  const Tensor fill_value = full(Shape{}, value, d);
  const std::string x = r.x_as(0, d), mask = r.x_as(1, DType::Bool);
  const bool invert = r.b("invert", false);
  if (d == DType::Bool) {  // ONNX Runtime has no bool Where: the same in logic ops
    if (fill_value.data_ptr<bool>()[0]) return r.done(r.emit("Or", {invert ? r.emit("Not", {mask}) : mask, x}));
    return r.done(r.emit("And", {invert ? mask : r.emit("Not", {mask}), x}));
  }
  const std::string fill = r.ex.fresh("fill");
  r.ex.add_initializer(fill, fill_value);
  if (invert) return r.done(r.emit("Where", {mask, x, fill}));
  r.done(r.emit("Where", {mask, fill, x}));
}

// triu / tril: Trilu (opset 14), the diagonal as its 0-d int64 input k.
void triangle(Rule& r, bool upper) {
  const int64_t k = r.has("diagonal") ? r.i("diagonal") : 0;
  std::string out;
  auto& node = r.last_node("Trilu", {r.x(0), r.ex.const_scalar(static_cast<double>(k), DType::Int64)}, out);
  Exporter::attr(node, "upper", int64_t{upper});
  r.done(out);
}

// index_select{dim}(x, index): Gather along dim, the index reshaped to 1-D
// (a 0-d index keeps its dim, as the eager kernel does); gather:
// GatherElements; cumsum: CumSum in the result dtype (bool and integers
// give int64), the axis its 0-d int64 input.
void indexing(Rule& r, OpId id) {
  std::string out;
  if (id == OpId::cumsum) {
    const DType d = r.out_dtype();
    r.last_node("CumSum", {r.x_as(0, d), r.ex.const_scalar(static_cast<double>(r.i("dim")), DType::Int64)}, out);
    return r.done(out);
  }
  std::string index = r.x(1);
  if (id == OpId::index_select) index = r.emit("Reshape", {index, r.ex.const_ints({-1})});
  auto& node = r.last_node(id == OpId::index_select ? "Gather" : "GatherElements", {r.x(0), index}, out);
  Exporter::attr(node, "axis", r.i("dim"));
  r.done(out);
}

// scatter_add{dim}: ScatterElements with reduction "add" (opset 16); src is
// sliced to the index's shape first (ONNX wants them equal; the eager kernel
// reads only that part). argsort{dim, descending, k}: TopK of the first k, or
// of the whole dim without k (its ties keep the lower index first: stable, as
// the eager kernel).
void scatter_or_sort(Rule& r, OpId id) {
  std::string out;
  const int64_t a = r.axis(r.i("dim"), r.rank(0));
  if (id == OpId::argsort) {
    const std::string k =
        r.has("k") ? r.ex.const_ints({r.i("k")})
                           : r.emit("Slice", {r.emit("Shape", {r.x(0)}), r.ex.const_ints({a}), r.ex.const_ints({a + 1})});
    const std::string values = r.ex.fresh(r.hint());
    out = r.ex.fresh(r.hint());
    auto& node = r.ex.node("TopK", {r.x(0), k}, {values, out});
    Exporter::attr(node, "axis", a);
    Exporter::attr(node, "largest", int64_t{r.b("descending", false) ? 1 : 0});
    Exporter::attr(node, "sorted", int64_t{1});
    return r.done(out);
  }
  const std::string src = r.emit("Slice", {r.x(2), r.ex.const_ints(std::vector<int64_t>(r.rank(0), 0)),
                                           r.emit("Shape", {r.x(1)})});
  auto& node = r.last_node("ScatterElements", {r.x(0), r.x(1), src}, out);
  Exporter::attr(node, "axis", a);
  Rule::str_attr(node, "reduction", "add");
  r.done(out);
}

}  // namespace

void lower_nn_op(Rule& r, const OpInfo& op) {
  if (op.num_outputs != 1)
    r.ex.fail(r.n, "a gradient op has no ONNX mapping; export the forward graph");
  std::string out;
  switch (op.id) {
    case OpId::matmul: return r.done(r.emit("MatMul", {r.x_as(0, r.out_dtype()), r.x_as(1, r.out_dtype())}));
    case OpId::linear: return linear(r);
    case OpId::conv2d: return conv2d(r);
    case OpId::conv_transpose2d: return conv_transpose2d(r);
    case OpId::max_pool2d: return pool(r, true);
    case OpId::avg_pool2d: return pool(r, false);
    case OpId::adaptive_avg_pool2d: return adaptive_avg_pool(r);
    case OpId::pad: return pad(r);
    case OpId::interpolate: return interpolate(r);
    case OpId::layer_norm: return layer_norm(r);
    case OpId::batch_norm: return batch_norm(r);
    case OpId::softmax:
    case OpId::log_softmax: {
      auto& node = r.last_node(op.id == OpId::softmax ? "Softmax" : "LogSoftmax", {r.x_as(0, r.out_dtype())}, out);
      Exporter::attr(node, "axis", r.i("dim"));
      return r.done(out);
    }
    case OpId::where: {
      const DType d = r.out_dtype();
      return r.done(r.emit("Where", {r.x_as(0, DType::Bool), r.x_as(1, d), r.x_as(2, d)}));
    }
    case OpId::masked_fill: return masked_fill(r);
    case OpId::triu: return triangle(r, true);
    case OpId::tril: return triangle(r, false);
    case OpId::index_select:
    case OpId::gather:
    case OpId::cumsum: return indexing(r, op.id);
    case OpId::scatter_add:
    case OpId::argsort: return scatter_or_sort(r, op.id);
    case OpId::bmm: return r.done(r.emit("MatMul", {r.x_as(0, r.out_dtype()), r.x_as(1, r.out_dtype())}));
    case OpId::to:
    case OpId::type_as: {  // Cast (type_as: to the inferred dtype); x itself (an Identity) when it has it already
      const std::string c = r.x_as(0, r.out_dtype());
      return r.done(c == r.x(0) ? r.emit("Identity", {c}) : c);
    }
    case OpId::contiguous: return r.done(r.emit("Identity", {r.x(0)}));
    case OpId::embedding: {
      auto& node = r.last_node("Gather", {r.x(0), r.x(1)}, out);
      Exporter::attr(node, "axis", int64_t{0});
      return r.done(out);
    }
    case OpId::cat: return cat(r, false);
    case OpId::stack: return cat(r, true);
    case OpId::dropout:
      if (r.b("training", false) && (!r.has("p") || r.f("p") != 0)) r.ex.fail(r.n, "dropout in training mode is random; export in eval mode");
      return r.done(r.emit("Identity", {r.x(0)}));
    case OpId::rand_like:  // x's shape and dtype; ONNX draws its own numbers
      return r.done(r.emit("RandomUniformLike", {r.x(0)}));
    case OpId::randn_like: return r.done(r.emit("RandomNormalLike", {r.x(0)}));
    case OpId::mse_loss: {
      const DType d = r.out_dtype();
      const std::string diff = r.emit("Sub", {r.x_as(0, d), r.x_as(1, d)});
      Exporter::attr(r.last_node("ReduceMean", {r.emit("Mul", {diff, diff})}, out), "keepdims", int64_t{0});
      return r.done(out);
    }
    case OpId::cross_entropy: return cross_entropy(r);
    case OpId::scaled_dot_product_attention: return attention(r);
    default: r.ex.fail(r.n, "no ONNX mapping for this op");
  }
}

}  // namespace graph::onnx::detail
