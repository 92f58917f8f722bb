// The backward kernels of backward_kernels.h that need nothing private to
// their op's forward file: the helpers shared by several ops, linear, the
// losses, attention, and rerun_backward.
#include "graph/detail/backward_kernels.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <limits>
#include <string>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/ops.h"
#include "class_targets.h"
#include "storage.h"

namespace graph::detail {

namespace {
std::atomic<GradMaskObserver> g_mask_observer{nullptr};
}  // namespace

void set_grad_mask_observer(GradMaskObserver observer) { g_mask_observer.store(observer); }

void observe_grad_mask(const char* op, GradMask mask) {
  if (GradMaskObserver f = g_mask_observer.load(std::memory_order_relaxed)) f(op, mask);
}

Tensor sum_to_backward(const Tensor& grad, const Tensor& like) {
  Tensor r = autograd::sum_to(grad, like.sizes());
  if (is_floating(like.dtype()) && r.dtype() != like.dtype()) r = r.to(like.dtype());
  return r;
}

Tensor reshape_as_backward(const Tensor& grad, const Tensor& like) { return grad.reshape(like.sizes()); }

Tensor zeros_like_backward(const Tensor& like) { return zeros(like.sizes(), like.dtype()); }

Tensor cat_backward(const Tensor& grad, const std::vector<Tensor>& xs, int64_t dim, int64_t index) {
  if (index < 0 || static_cast<size_t>(index) >= xs.size())
    throw Error("cat_backward: index " + std::to_string(index) + " out of range for " + std::to_string(xs.size()) +
                " inputs");
  const int64_t d = wrap_dim("cat_backward", dim, grad.sizes());
  // cat skips 1-D empty tensors (PyTorch's legacy rule): they get zeros.
  const auto skipped = [&](const Tensor& t) { return t.dim() == 1 && t.size(0) == 0 && grad.dim() != 1; };
  int64_t offset = 0;
  for (int64_t i = 0; i < index; ++i)
    if (!skipped(xs[static_cast<size_t>(i)])) offset += xs[static_cast<size_t>(i)].size(d);
  const Tensor& x = xs[static_cast<size_t>(index)];
  if (skipped(x)) return zeros(x.sizes(), grad.dtype());
  return grad.slice(d, offset, offset + x.size(d));
}

// x's gradient: zeros with grad written into the slice, as eager's view node.
Tensor slice_backward(const Tensor& grad, const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  Tensor full = zeros(x.sizes(), grad.dtype());
  const Tensor part = full.slice(dim, start, end, step);  // checks dim and step, names the op
  if (part.sizes() != grad.sizes())
    throw Error("slice_backward: gradient of shape " + shape_str(grad.sizes()) + " does not match the slice " +
                shape_str(part.sizes()) + " of an input of shape " + shape_str(x.sizes()));
  copy_into(part, grad);
  return full;
}

std::vector<Tensor> linear_backward(const Tensor& grad, const Tensor& x, const Tensor& weight, const Tensor& bias,
                                    GradMask mask) {
  observe_grad_mask("linear_backward", mask);
  if (weight.dim() != 2 || x.dim() == 0 || x.size(-1) != weight.size(1))
    throw Error("linear_backward: expected input [..., in] and weight [out, in], got input shape " +
                shape_str(x.sizes()) + ", weight shape " + shape_str(weight.sizes()));
  const int64_t out = weight.size(0);
  if (grad.numel() != x.numel() / std::max<int64_t>(x.size(-1), 1) * out || (grad.dim() > 0 && grad.size(-1) != out))
    throw Error("linear_backward: gradient of shape " + shape_str(grad.sizes()) + " does not match the result of input " +
                shape_str(x.sizes()) + " and weight " + shape_str(weight.sizes()));
  // The leading dims flattened: one GEMM each; g2.t() is a view (transpose flag).
  const Tensor g2 = grad.reshape({-1, out});
  Tensor gx, gw, gb;
  if (wants(mask, 0)) gx = matmul(g2, weight).reshape(x.sizes());
  if (wants(mask, 1)) gw = matmul(g2.t(), x.reshape({-1, x.size(-1)}));
  if (wants(mask, 2) && bias.defined()) gb = sum_to_backward(grad, bias);
  return {gx, gw, gb};
}

// mean((input - target)^2): d/d input = 2 (input - target) g / N, summed back
// over broadcast dims; the target's is its negative.
std::vector<Tensor> mse_loss_backward(const Tensor& grad, const Tensor& input, const Tensor& target, GradMask mask) {
  observe_grad_mask("mse_loss_backward", mask);
  const Tensor d = input - target;  // names the shapes when they do not broadcast
  const Tensor gd = (grad / static_cast<double>(d.numel())) * d;
  const Tensor g2 = gd + gd;  // as eager's d * d: the same product from both sides
  return {wants(mask, 0) ? sum_to_backward(g2, input) : Tensor(), wants(mask, 1) ? sum_to_backward(-g2, target) : Tensor()};
}

namespace {

// The permutation that moves the class dim (1) of an n-dim tensor last, and
// its inverse.
Shape class_last(int64_t n) {
  Shape perm{0};
  for (int64_t k = 2; k < n; ++k) perm.push_back(k);
  perm.push_back(1);
  return perm;
}
Shape class_back(int64_t n) {
  Shape inv{0, n - 1};
  for (int64_t k = 1; k < n - 1; ++k) inv.push_back(k);
  return inv;
}

}  // namespace

// Index targets: d logits = (softmax - onehot(target)) g / count per counted
// row (zero for ignored ones), as the gradient through log_softmax of the
// one-hot selection. Probability targets: through log_softmax of -target g / R.
// The log-probabilities are the forward's statistic: recomputed (one
// log_softmax, no autograd) when not handed in.
std::vector<Tensor> cross_entropy_backward(const Tensor& grad, const Tensor& logits, const Tensor& target,
                                           GradMask mask, const Tensor& log_probs) {
  observe_grad_mask("cross_entropy_backward", mask);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string("logits shape " + shape_str(logits.sizes()) + ", target shape " + shape_str(target.sizes()));
  };
  if (logits.dim() == 0 || !is_floating(logits.dtype()))
    throw Error("cross_entropy_backward: expected floating logits [N, C] or [C], got " + shapes());
  const int64_t cdim = logits.dim() == 1 ? 0 : 1;
  const int64_t C = logits.size(cdim);
  if (is_floating(target.dtype())) {
    if (target.sizes() != logits.sizes())
      throw Error("cross_entropy_backward: class-probability targets must have the logits' shape (" + shapes() + ")");
    const Tensor lsm = log_probs.defined() ? log_probs : log_softmax(logits, cdim);
    const int64_t rows = logits.numel() / std::max<int64_t>(C, 1);
    const Tensor gp = -(grad / static_cast<double>(rows));
    Tensor gl, gt;
    if (wants(mask, 0)) {
      const Tensor glsm = gp * target;
      gl = glsm - exp(lsm) * sum(glsm, Shape{cdim}, true);
    }
    if (wants(mask, 1)) gt = gp * lsm;
    return {gl, gt};
  }
  if (target.dtype() != kInt64)
    throw Error("cross_entropy_backward: expected int64 class indices or floating class probabilities as target, got " +
                shapes());
  if (!wants(mask, 0)) return {Tensor(), Tensor()};
  Tensor lsm = log_probs;
  if (!lsm.defined()) {
    Tensor rows = logits.dim() == 1 ? logits.unsqueeze(0) : logits;
    if (rows.dim() > 2) rows = rows.permute(class_last(rows.dim()));
    lsm = log_softmax(rows.reshape({-1, C}), 1);
  }
  const int64_t R = lsm.size(0);
  if (target.numel() != R)
    throw Error("cross_entropy_backward: expected one target per row of the logits (" + shapes() + ")");
  constexpr int64_t kIgnore = -100;  // PyTorch's default ignore_index, as the forward
  // Checked once per version of the targets: the forward's check is reused.
  const int64_t count = check_class_targets("cross_entropy_backward", target, C, kIgnore, shapes()).count;
  // One-hot rows (zero for ignored targets: -100 matches no class), made
  // where the targets are, so device targets are not copied back.
  const Tensor flat = target.reshape({R, 1});
  Tensor onehot = eq(flat, arange(0, C, 1, flat.device())).to(lsm.dtype());
  if (lsm.device() != onehot.device()) onehot = onehot.to(lsm.device());
  const Tensor glsm = onehot * (-(grad.to(lsm.dtype())) / static_cast<double>(count));
  Tensor gl = glsm - exp(lsm) * sum(glsm, Shape{1}, true);
  if (logits.dim() == 1) return {gl.reshape(logits.sizes()), Tensor()};
  if (logits.dim() == 2) return {gl, Tensor()};
  Shape permuted{logits.size(0)};
  for (int64_t k = 2; k < logits.dim(); ++k) permuted.push_back(logits.size(k));
  permuted.push_back(C);
  return {gl.reshape(permuted).permute(class_back(logits.dim())), Tensor()};
}

// softmax(q k^T * scale + mask) v: the attention probabilities are
// recomputed (two GEMMs and a softmax, no autograd), as FlashAttention's
// backward does, rather than saved ([..., L, S] per call).
std::vector<Tensor> scaled_dot_product_attention_backward(const Tensor& grad, const Tensor& q, const Tensor& k,
                                                          const Tensor& v, const Tensor& attn_mask, bool is_causal,
                                                          GradMask mask) {
  const char* op = "scaled_dot_product_attention_backward";
  observe_grad_mask(op, mask);
  if (q.dim() < 2 || k.dim() < 2 || v.dim() < 2 || q.size(-1) != k.size(-1) || k.size(-2) != v.size(-2))
    throw Error(std::string(op) + ": expected query [..., L, E], key [..., S, E] and value [..., S, Ev], got " +
                shape_str(q.sizes()) + ", " + shape_str(k.sizes()) + ", " + shape_str(v.sizes()));
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(-1)));
  Tensor scores = matmul(q, k.transpose(-2, -1)) * scale;
  const Tensor minus_inf = full({}, -std::numeric_limits<double>::infinity(), scores.dtype());
  if (is_causal) {
    const int64_t L = q.size(-2), S = k.size(-2);
    Tensor causal = empty({L, S}, kBool);  // top-left aligned, as the forward
    bool* pc = causal.data_ptr<bool>();
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) pc[i * S + j] = j <= i;
    scores = where(causal.to(scores.device()), scores, minus_inf);
  } else if (attn_mask.defined()) {
    scores = attn_mask.dtype() == kBool ? where(attn_mask, scores, minus_inf) : scores + attn_mask;
  }
  const Tensor attn = softmax(scores, -1);
  if (grad.sizes() != matmul(attn, v).sizes())  // names the shapes when they do not multiply
    throw Error(std::string(op) + ": gradient of shape " + shape_str(grad.sizes()) + " does not match the result");
  const Tensor gattn = matmul(grad, v.transpose(-2, -1));
  const Tensor gscores = attn * (gattn - sum(gattn * attn, Shape{-1}, true));  // through softmax
  const Tensor gs = gscores * scale;
  std::vector<Tensor> r(4);
  if (wants(mask, 0)) r[0] = sum_to_backward(matmul(gs, k), q);
  if (wants(mask, 1)) r[1] = sum_to_backward(matmul(gs.transpose(-2, -1), q), k);
  if (wants(mask, 2)) r[2] = sum_to_backward(matmul(attn.transpose(-2, -1), grad), v);
  if (wants(mask, 3) && attn_mask.defined() && is_floating(attn_mask.dtype()) && !is_causal)
    r[3] = sum_to_backward(gscores, attn_mask);
  return r;
}

std::vector<Tensor> rerun_backward(const Tensor& grad, const std::vector<Tensor>& inputs, GradMask mask,
                                   const std::function<Tensor(const std::vector<Tensor>&)>& forward) {
  std::vector<Tensor> args = inputs, leaves(inputs.size());
  autograd::GradModeGuard grad_on(true);
  for (size_t i = 0; i < args.size(); ++i) {
    if (!wants(mask, i) || !args[i].defined() || !is_floating(args[i].dtype())) continue;
    leaves[i] = args[i].detach();
    leaves[i].requires_grad_();
    args[i] = leaves[i];
  }
  const Tensor y = forward(args);
  if (y.requires_grad()) autograd::backward(y, grad, false);
  std::vector<Tensor> grads;
  for (const Tensor& leaf : leaves) {
    Tensor gi = leaf.defined() ? leaf.grad() : Tensor();
    // A wanted gradient that no path reached is zero, not missing: later
    // gradient code reads it as a tensor.
    if (!gi.defined() && leaf.defined()) gi = zeros(leaf.sizes(), leaf.dtype());
    grads.push_back(gi);
  }
  return grads;
}

}  // namespace graph::detail
