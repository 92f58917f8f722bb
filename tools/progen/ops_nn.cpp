// Emitters of matmul and the nn ops (ops.def's GRAPH_LIBRARY_OP and
// GRAPH_OTHER_OP entries): weights, biases and indices are new inputs of the
// function, images and sequences are reshapes of a drawn value.
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "gen.h"

namespace progen {

using graph::OpId;

namespace {

std::string s(int64_t v) { return std::to_string(v); }

// When the function has no room for another input, a plain op instead.
Val fallback(Gen& g, Val& x) { return g.op(OpId::tanh, "tanh(" + x.code + ")", x.shape, 1, {&x}); }

Val emit_matmul(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const Dims xs = x.shape;
  const int64_t k = xs.back();
  Dims out(xs.begin(), xs.end() - 1);
  if (xs.size() >= 2 && g.coin(0.3)) {  // x @ x^T
    Val y = g.op(OpId::transpose, x.code + ".transpose(" + s(xs.size() - 2) + ", " + s(xs.size() - 1) + ")", {},
               x.bound, {&x});
    out.push_back(xs[xs.size() - 2]);
    return g.bounded(g.op(id, "matmul(" + x.code + ", " + y.code + ")", out, x.bound * x.bound * k, {&x, &y}));
  }
  const int64_t m = g.uni(1, 4);
  Dims ws = {k, m};
  if (xs.size() >= 3 && g.coin()) {
    ws.insert(ws.begin(), xs.begin(), xs.end() - 2);
    g.f.cov.constructs.insert("matmul_batched");
  }
  auto w = g.new_input(ws);
  if (!w) return fallback(g, x);
  out.push_back(m);
  return g.bounded(g.op(id, "matmul(" + x.code + ", " + w->code + ")", out, x.bound * 2 * k, {&x, &*w}));
}

Val emit_linear(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const int64_t k = x.shape.back(), m = g.uni(1, 4);
  auto w = g.new_input({m, k});
  if (!w) return fallback(g, x);
  std::string code = "linear(" + x.code + ", " + w->code;
  if (g.coin(0.7))
    if (auto bias = g.new_input({m})) code += ", " + bias->code;
  Dims out(x.shape.begin(), x.shape.end() - 1);
  out.push_back(m);
  return g.bounded(g.op(id, code + ")", out, x.bound * 2 * k + 2, {&x, &*w}));
}

Val emit_conv2d(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 4);
  const Dims xs = x.shape;
  const int64_t pad = g.uni(0, 1), kh = g.uni(1, std::min<int64_t>(3, xs[2] + 2 * pad)),
                kw = g.uni(1, std::min<int64_t>(3, xs[3] + 2 * pad)), stride = g.uni(1, 2), cout = g.uni(1, 3);
  auto w = g.new_input({cout, xs[1], kh, kw});
  if (!w) return fallback(g, x);
  std::string bias = "Tensor()";
  if (g.coin(0.6))
    if (auto bv = g.new_input({cout})) bias = bv->code;
  Dims out = {xs[0], cout, (xs[2] + 2 * pad - kh) / stride + 1, (xs[3] + 2 * pad - kw) / stride + 1};
  const std::string code = "conv2d(" + x.code + ", " + w->code + ", " + bias + ", {" + s(stride) + ", " +
                           s(stride) + "}, {" + s(pad) + ", " + s(pad) + "})";
  return g.bounded(g.op(id, code, out, x.bound * 2 * xs[1] * kh * kw + 2, {&x, &*w}));
}

// Output (size - 1) * stride - 2 * pad + k + opad; opad < stride.
Val emit_conv_transpose2d(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 4);
  const Dims xs = x.shape;
  const int64_t stride = g.uni(1, 2), k = g.uni(1, 3), pad = g.uni(0, (k - 1) / 2), opad = g.uni(0, stride - 1),
                cout = g.uni(1, 3);
  auto w = g.new_input({xs[1], cout, k, k});
  if (!w) return fallback(g, x);
  std::string bias = "Tensor()";
  if (g.coin(0.6))
    if (auto bv = g.new_input({cout})) bias = bv->code;
  const auto size = [&](int64_t n) { return (n - 1) * stride - 2 * pad + k + opad; };
  Dims out = {xs[0], cout, size(xs[2]), size(xs[3])};
  const std::string code = "conv_transpose2d(" + x.code + ", " + w->code + ", " + bias + ", {" + s(stride) + ", " +
                           s(stride) + "}, {" + s(pad) + ", " + s(pad) + "}, {" + s(opad) + ", " + s(opad) + "})";
  return g.bounded(g.op(id, code, out, x.bound * 2 * xs[1] * k * k + 2, {&x, &*w}));
}

Val emit_pool2d(Gen& g, OpId id, Val x) {
  const std::string name(graph::op_info(id).name);
  x = g.to_rank(x, 4);
  const Dims xs = x.shape;
  const int64_t kh = g.uni(1, std::min<int64_t>(3, xs[2])), kw = g.uni(1, std::min<int64_t>(3, xs[3]));
  const int64_t ph = g.uni(0, kh / 2), pw = g.uni(0, kw / 2);
  std::string code = name + "(" + x.code + ", {" + s(kh) + ", " + s(kw) + "}";
  int64_t sh = kh, sw = kw;
  if (ph || pw || g.coin()) {
    sh = g.uni(1, 2), sw = g.uni(1, 2);
    code += ", {" + s(sh) + ", " + s(sw) + "}, {" + s(ph) + ", " + s(pw) + "}";
  }
  Dims out = {xs[0], xs[1], (xs[2] + 2 * ph - kh) / sh + 1, (xs[3] + 2 * pw - kw) / sw + 1};
  return g.op(id, code + ")", out, x.bound, {&x});
}

// Output sizes up to the input's, so that windows of 1 to all rows, and
// overlapping ones, are drawn.
Val emit_adaptive_pool2d(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 4);
  const Dims xs = x.shape;
  const int64_t oh = g.uni(1, xs[2]), ow = g.uni(1, xs[3]);
  const std::string code = "adaptive_avg_pool2d(" + x.code + ", {" + s(oh) + ", " + s(ow) + "})";
  return g.op(id, code, {xs[0], xs[1], oh, ow}, x.bound, {&x});
}

// One to three pairs from the last dim, each amount in [-1, 2] (negative
// crops) as long as the dim keeps at least one element; a fill of 0 or not.
Val emit_pad(Gen& g, OpId id, Val x) {
  if (x.shape.empty()) x = g.to_rank(x, 1);
  Dims out = x.shape;
  const int pairs = static_cast<int>(g.uni(1, std::min<int64_t>(3, static_cast<int64_t>(out.size()))));
  std::string amounts;
  for (int i = 0; i < pairs; ++i) {
    int64_t& size = out[out.size() - 1 - static_cast<size_t>(i)];
    int64_t lo = g.uni(-1, 2), hi = g.uni(-1, 2);
    if (size + lo + hi < 1) lo = hi = 0;
    size += lo + hi;
    amounts += (i ? ", " : "") + s(lo) + ", " + s(hi);
  }
  const double value = g.coin() ? 0.0 : 0.5 * static_cast<double>(g.uni(-2, 2));
  const std::string code = "pad(" + x.code + ", {" + amounts + "}, " + g.fmt(value) + ")";
  return g.op(id, code, out, std::max(x.bound, std::abs(value)), {&x});
}

// Nearest or bilinear (with or without align_corners) to 1 to twice each
// spatial size: a blend of the input's elements, within its bound.
Val emit_interpolate(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 4);
  const Dims xs = x.shape;
  const int64_t oh = g.uni(1, 2 * xs[2]), ow = g.uni(1, 2 * xs[3]);
  std::string code = "interpolate(" + x.code + ", {" + s(oh) + ", " + s(ow) + "}";
  if (g.coin()) code += std::string(", kBilinear, ") + (g.coin() ? "true" : "false");
  return g.op(id, code + ")", {xs[0], xs[1], oh, ow}, x.bound, {&x});
}

Val emit_embedding(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 2);
  const Dims xs = x.shape;
  Dims is = {g.uni(1, 4)};
  if (g.coin()) is.insert(is.begin(), g.uni(1, 3));
  auto idx = g.new_input(is, VType::Int, xs[0]);
  if (!idx) return fallback(g, x);
  Dims out = is;
  out.push_back(xs[1]);
  return g.op(id, "embedding(" + x.code + ", " + idx->code + ")", out, x.bound, {&x});
}

Val emit_cross_entropy(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 2);
  auto target = g.new_input({x.shape[0]}, VType::Int, x.shape[1]);
  if (!target) return fallback(g, x);
  return g.op(id, "cross_entropy(" + x.code + ", " + target->code + ")", {}, 2 * x.bound + 2, {&x});
}

Val emit_attention(Gen& g, OpId id, Val x) {
  const std::string name(graph::op_info(id).name);
  x = g.to_rank(x, 3);
  const Dims qs = x.shape;
  const bool self = g.coin(0.4);
  Val k = x, v = x;
  if (!self) {
    const int64_t len = g.uni(1, 4);
    auto kk = g.new_input({qs[0], len, qs[2]});
    auto vv = g.new_input({qs[0], len, g.uni(1, 4)});
    if (!kk || !vv) return fallback(g, x);
    k = *kk, v = *vv;
  }
  std::string code = name + "(" + x.code + ", " + k.code + ", " + v.code;
  // The causal mask is built on the CPU while the op is CudaPartly.
  const bool causal_ok = !g.device || !graph::op_info(id).has(graph::op_trait::CudaPartly);
  if (self && g.coin() && causal_ok) {
    code += ", Tensor(), 0.0, true";
    g.f.cov.constructs.insert("attention_causal");
  }
  Dims out = {qs[0], qs[1], v.shape[2]};
  return g.op(id, code + ")", out, v.bound, {&x, &k, &v});
}

Val emit_softmax_like(Gen& g, OpId id, Val x) {
  const std::string name(graph::op_info(id).name);
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const int d = g.uni(0, x.shape.size() - 1);
  const double bound = id == OpId::softmax ? 1 : 2 * x.bound + 4;
  return g.bounded(g.op(id, name + "(" + x.code + ", " + s(d) + ")", x.shape, bound, {&x}));
}

Val emit_layer_norm(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const int nd = g.uni(1, x.shape.size());
  const Dims ns(x.shape.end() - nd, x.shape.end());
  std::string code = "layer_norm(" + x.code + ", " + dims_str(ns);
  const bool affine = g.coin(0.6);
  if (affine) {
    auto w = g.new_input(ns), bias = g.new_input(ns);
    code += ", " + (w ? w->code : "Tensor()") + ", " + (bias ? bias->code : "Tensor()") + ", 1e-5";
  }
  return g.bounded(g.op(id, code + ")", x.shape, affine ? 3 * (numel(ns) + 2) : numel(ns) + 1, {&x}));
}

Val emit_cat(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const Dims xs = x.shape;
  const int d = g.uni(0, xs.size() - 1);
  Dims out = xs;
  std::string code = "cat({" + x.code;
  double bound = x.bound;
  std::vector<Val> parts;
  for (int p = g.uni(1, 2); p > 0; --p) {
    Dims ps = xs;
    ps[d] = g.uni(1, 3);
    std::optional<Val> part;
    if (g.coin(0.4)) part = g.same_shape_operand(xs, x), ps = xs;
    else part = g.new_input(ps);
    if (!part) continue;
    out[d] += ps[d];
    code += ", " + part->code;
    bound = std::max(bound, part->bound);
    parts.push_back(*part);
  }
  std::vector<const Val*> ops = {&x};
  for (const Val& p : parts) ops.push_back(&p);
  return g.op(id, code + "}, " + s(d) + ")", out, bound, ops);
}

Val emit_stack(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r >= 4) x = g.to_rank(x, 2);
  const Dims xs = x.shape;
  const int d = g.uni(0, xs.size());
  std::vector<Val> parts;
  for (int p = g.uni(1, 2); p > 0; --p) parts.push_back(g.same_shape_operand(xs, x));
  std::string code = "stack({" + x.code;
  std::vector<const Val*> ops = {&x};
  double bound = x.bound;
  for (const Val& p : parts) code += ", " + p.code, ops.push_back(&p), bound = std::max(bound, p.bound);
  Dims out = xs;
  out.insert(out.begin() + d, 1 + parts.size());
  return g.op(id, code + "}, " + s(d) + ")", out, bound, ops);
}

Val emit_mse_loss(Gen& g, OpId id, Val x) {
  Val t = g.same_shape_operand(x.shape, x);
  return g.bounded(g.op(id, "mse_loss(" + x.code + ", " + t.code + ")", {}, (x.bound + t.bound) * (x.bound + t.bound),
                    {&x, &t}));
}

// x.masked_fill(c, v), masked_fill(x, c, v), where(c, x, v), where(c, v, x)
Val emit_masked_fill(Gen& g, OpId id, int depth) {
  Val c = g.bool_expr(depth);
  Val a = g.broadcast_operand(c.shape, depth);
  Dims sh;
  broadcastable(c.shape, a.shape, &sh);
  Val v{g.fmt(g.uni(-20, 20) / 8.0), {}, VType::Float, 2.5, false, {}, true};
  if (g.coin(0.3)) v = g.host_scalar(false);  // known at run time
  const int form = g.uni(0, 3);
  const std::string code = form == 0   ? a.code + ".masked_fill(" + c.code + ", " + v.code + ")"
                           : form == 1 ? "masked_fill(" + a.code + ", " + c.code + ", " + v.code + ")"
                           : form == 2 ? "where(" + c.code + ", " + a.code + ", " + v.code + ")"
                                       : "where(" + c.code + ", " + v.code + ", " + a.code + ")";
  return g.op(id, code, sh, std::max(a.bound, v.bound), {&c, &a, &v});
}

Val emit_triangle(Gen& g, OpId id, Val x) {
  const std::string name(graph::op_info(id).name);
  const int r = x.shape.size();
  if (r < 2) x = g.to_rank(x, 2);
  const int d = g.uni(-2, 2);
  const std::string code = g.coin() ? name + "(" + x.code + ", " + s(d) + ")" : x.code + "." + name + "(" + s(d) + ")";
  return g.op(id, code, x.shape, x.bound, {&x});
}

// function or method form; the index a new int input
Val emit_index_pick(Gen& g, OpId id, Val x) {
  const std::string name(graph::op_info(id).name);
  const int r = x.shape.size();
  if (r == 0) x = g.to_rank(x, 1);
  const Dims xs = x.shape;
  const int64_t d = g.uni(0, static_cast<int>(xs.size()) - 1);
  Dims is = {g.uni(1, 4)};
  if (id == OpId::gather) {
    is = xs;
    for (size_t i = 0; i < is.size(); ++i) is[i] = static_cast<int64_t>(i) == d ? g.uni(1, 4) : g.uni(1, xs[i]);
  }
  auto idx = g.new_input(is, VType::Int, xs[d]);
  if (!idx) return fallback(g, x);
  Dims out = id == OpId::gather ? is : xs;
  if (id == OpId::index_select) out[d] = is[0];
  const std::string dim = s(g.coin(0.3) ? d - static_cast<int64_t>(xs.size()) : d);
  const std::string code = g.coin() ? name + "(" + x.code + ", " + dim + ", " + idx->code + ")"
                                  : x.code + "." + name + "(" + dim + ", " + idx->code + ")";
  return g.op(id, code, out, x.bound, {&x});
}

// scatter_add: a new int index no larger than x outside dim (repeats add up),
// a new src of the index's shape; function or method form.
Val emit_scatter_add(Gen& g, OpId id, Val x) {
  if (x.shape.empty()) x = g.to_rank(x, 1);
  const Dims xs = x.shape;
  const int64_t d = g.uni(0, static_cast<int>(xs.size()) - 1);
  Dims is = xs;
  for (size_t i = 0; i < is.size(); ++i) is[i] = static_cast<int64_t>(i) == d ? g.uni(1, 4) : g.uni(1, xs[i]);
  auto idx = g.new_input(is, VType::Int, xs[d]);
  auto src = g.new_input(is);
  if (!idx || !src) return fallback(g, x);
  const std::string args = s(d) + ", " + idx->code + ", " + src->code;
  const std::string code = g.coin() ? "scatter_add(" + x.code + ", " + args + ")" : x.code + ".scatter_add(" + args + ")";
  return g.bounded(g.op(id, code, xs, x.bound + static_cast<double>(is[d]), {&x, &*src}));
}

// argsort, as sort's or topk's values are built (gather at its indices, all or the
// first k, or topk itself).
Val emit_sorted(Gen& g, OpId id, Val x) {
  if (x.shape.empty()) x = g.to_rank(x, 1);
  const int r = x.shape.size();
  const int64_t d = g.uni(0, r - 1);
  const std::string desc = g.coin() ? "true" : "false";
  if (g.coin()) {
    const std::string code = x.code + ".gather(" + s(d) + ", argsort(" + x.code + ", " + s(d) + ", " + desc + "))";
    return g.op(id, code, x.shape, x.bound, {&x});
  }
  Dims out = x.shape;
  out[d] = g.uni(1, x.shape[d]);
  // topk's own argsort (the first k only), or the full one narrowed.
  const std::string code = g.coin() ? "std::get<0>(" + x.code + ".topk(" + s(out[d]) + ", " + s(d) + ", " + desc + "))"
                                    : x.code + ".gather(" + s(d) + ", " + x.code + ".argsort(" + s(d) + ", " + desc +
                                          ").narrow(" + s(d) + ", 0, " + s(out[d]) + "))";
  return g.op(id, code, out, x.bound, {&x});
}

Val emit_cumsum(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  const int64_t d = r == 0 ? 0 : g.uni(-r, r - 1);
  const int64_t n = r == 0 ? 1 : x.shape[d < 0 ? d + r : d];
  const std::string code = g.coin() ? "cumsum(" + x.code + ", " + s(d) + ")" : x.code + ".cumsum(" + s(d) + ")";
  return g.bounded(g.op(id, code, x.shape, x.bound * n, {&x}));
}

Val emit_bmm(Gen& g, OpId id, Val x) {
  x = g.to_rank(x, 3);
  const Dims xs = x.shape;
  auto w = g.new_input({xs[0], xs[2], g.uni(1, 4)});
  if (!w) return fallback(g, x);
  const std::string code = g.coin() ? "bmm(" + x.code + ", " + w->code + ")" : x.code + ".bmm(" + w->code + ")";
  return g.bounded(g.op(id, code, {xs[0], xs[1], w->shape[2]}, x.bound * 2 * xs[2], {&x, &*w}));
}

// training without running stats: pure, so it lowers
Val emit_batch_norm(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r < 2) x = g.to_rank(x, 2);
  const int64_t C = x.shape[1], M = numel(x.shape) / std::max<int64_t>(1, C);
  if (M < 2) return fallback(g, x);
  std::string code = "batch_norm(" + x.code + ", Tensor(), Tensor()";
  const bool affine = g.coin(0.6);
  if (affine) {
    auto w = g.new_input({C}), bias = g.new_input({C});
    code += ", " + (w ? w->code : "Tensor()") + ", " + (bias ? bias->code : "Tensor()");
  } else {
    code += ", Tensor(), Tensor()";
  }
  // eps 0.1, not 1e-5: over a batch of equal values (a broadcast 0-d
  // tensor, G5) the backward multiplies the gradient's rounding by
  // 1 / sqrt(var + eps), 316 at 1e-5, and a loop of batch norms by its power.
  return g.bounded(g.op(id, code + ", true, 0.1, 0.1)", x.shape, affine ? 3 * (M + 2) : M + 1, {&x}));
}

Val emit_contiguous(Gen& g, OpId id, Val x) {
  const int r = x.shape.size();
  if (r < 2) x = g.to_rank(x, 2);
  Dims out = x.shape;
  std::swap(out[0], out[1]);
  return g.op(id, x.code + ".transpose(0, 1).contiguous()", out, x.bound, {&x});
}

}  // namespace

bool runs_on_device(OpId id) {
  auto cpu_only = [](OpId o) { return graph::op_info(o).has(graph::op_trait::CpuOnly); };
  // emit_sorted writes gather (and topk) around argsort without drawing them.
  if (id == OpId::argsort && cpu_only(OpId::gather)) return false;
  return !cpu_only(id);
}

Val Gen::apply_nn(OpId id, Val x, int depth) {
  switch (id) {
    case OpId::matmul: return emit_matmul(*this, id, x);
    case OpId::linear: return emit_linear(*this, id, x);
    case OpId::conv2d: return emit_conv2d(*this, id, x);
    case OpId::conv_transpose2d: return emit_conv_transpose2d(*this, id, x);
    case OpId::max_pool2d: case OpId::avg_pool2d: return emit_pool2d(*this, id, x);
    case OpId::adaptive_avg_pool2d: return emit_adaptive_pool2d(*this, id, x);
    case OpId::pad: return emit_pad(*this, id, x);
    case OpId::interpolate: return emit_interpolate(*this, id, x);
    case OpId::embedding: return emit_embedding(*this, id, x);
    case OpId::cross_entropy: return emit_cross_entropy(*this, id, x);
    case OpId::scaled_dot_product_attention: return emit_attention(*this, id, x);
    case OpId::dropout:  // evaluation mode: the identity, deterministic
      return op(id, "dropout(" + x.code + ", 0.3, false)", x.shape, x.bound, {&x});
    case OpId::dropout_mask:  // evaluation mode: ones
      return op(id, "(" + x.code + " * dropout_mask(" + x.code + ", 0.3, false))", x.shape, x.bound, {&x});
    case OpId::where: return where_of(bool_expr(depth), depth);
    case OpId::softmax: case OpId::log_softmax: return emit_softmax_like(*this, id, x);
    case OpId::layer_norm: return emit_layer_norm(*this, id, x);
    case OpId::cat: return emit_cat(*this, id, x);
    case OpId::stack: return emit_stack(*this, id, x);
    case OpId::mse_loss: return emit_mse_loss(*this, id, x);
    case OpId::masked_fill: return emit_masked_fill(*this, id, depth);
    case OpId::triu: case OpId::tril: return emit_triangle(*this, id, x);
    case OpId::index_select: case OpId::gather: return emit_index_pick(*this, id, x);
    case OpId::cumsum: return emit_cumsum(*this, id, x);
    case OpId::scatter_add: return emit_scatter_add(*this, id, x);
    case OpId::argsort: return emit_sorted(*this, id, x);
    case OpId::bmm: return emit_bmm(*this, id, x);
    case OpId::batch_norm: return emit_batch_norm(*this, id, x);
    case OpId::to:  // a float64 round trip (exact), or a mask made float
      if (coin()) return op(id, x.code + ".to(kFloat64).to(kFloat32)", x.shape, x.bound, {&x});
      return op(id, "(" + x.code + " > 0.0).to(kFloat32)", x.shape, 1, {&x});
    case OpId::contiguous: return emit_contiguous(*this, id, x);
    case OpId::type_as:  // a float64 round trip through another tensor's dtype (exact)
      return op(id, x.code + ".to(kFloat64).type_as(" + x.code + ")", x.shape, x.bound, {&x});
    case OpId::rand_like:
    case OpId::randn_like:  // drawn, then times zero: the three runs draw differently
      return op(id, "(" + x.code + " + " + std::string(graph::op_info(id).name) + "(" + x.code + ") * 0.0)", x.shape,
                x.bound, {&x});
    default:
      throw std::runtime_error("progen: no emitter for op " + std::string(graph::op_info(id).name) +
                               " (tools/progen/ops_nn.cpp)");
  }
}

}  // namespace progen
