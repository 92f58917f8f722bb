// pad (torch.nn.functional.pad, constant mode): the output filled with the
// value, then the part of x that survives any crop copied into its place.
// One fill and one strided copy, on either device. Its gradient is pad again
// with the amounts negated and 0: what was padded is cropped away, what was
// cropped gets zeros.
#include <algorithm>
#include <string>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/nn_ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// The padded shape, or pad's error: pairs (before, after) from the last dim
// backwards, at most one pair per dim, no size below 0.
Shape padded_shape(const char* op, const Tensor& x, const Shape& pad) {
  detail::check_defined(op, x);
  const size_t n = pad.size();
  if (n % 2 != 0)
    throw Error(std::string(op) + ": expected pairs of amounts (before, after) from the last dim backwards, got " +
                std::to_string(n) + " amounts");
  if (static_cast<int64_t>(n / 2) > x.dim())
    throw Error(std::string(op) + ": " + std::to_string(n / 2) + " pairs of amounts for a tensor of shape " +
                shape_str(x.sizes()));
  Shape out = x.sizes();
  for (size_t i = 0; i < n / 2; ++i) {
    int64_t& s = out[out.size() - 1 - i];
    s += pad[2 * i] + pad[2 * i + 1];
    if (s < 0)
      throw Error(std::string(op) + ": the input size " + std::to_string(x.size(x.dim() - 1 - int64_t(i))) +
                  " plus the amounts " + std::to_string(pad[2 * i]) + " and " + std::to_string(pad[2 * i + 1]) +
                  " is negative (input shape " + shape_str(x.sizes()) + ", pad " + shape_str(pad) + ")");
  }
  return out;
}

Tensor compute(const Tensor& x, const Shape& pad, Scalar value, const Shape& shape) {
  Tensor out = full(shape, value, x.dtype(), x.device());
  Tensor dst = out, src = x;
  for (size_t i = 0; i < pad.size() / 2; ++i) {
    const int64_t d = x.dim() - 1 - static_cast<int64_t>(i), lo = pad[2 * i], hi = pad[2 * i + 1];
    const int64_t kept = x.size(d) + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0);
    if (kept <= 0) return out;  // nothing of x survives
    src = src.slice(d, std::max<int64_t>(-lo, 0), std::max<int64_t>(-lo, 0) + kept);
    dst = dst.slice(d, std::max<int64_t>(lo, 0), std::max<int64_t>(lo, 0) + kept);
  }
  if (src.numel() > 0) detail::copy_into(dst, src);
  return out;
}

Shape negated(const Shape& pad) {
  Shape n = pad;
  for (int64_t& v : n) v = -v;
  return n;
}

}  // namespace

Tensor pad(const Tensor& x, const Shape& pad, Scalar value) {
  if (detail::tracing())
    return detail::trace_op("pad", {x}, {{"pad", detail::ints(pad)}, {"value", detail::scalar_attr(value)}},
                            [&] { return graph::pad(x, pad, value); });
  const Shape shape = padded_shape("pad", x, pad);
  Tensor out = compute(x.detach(), pad, value, shape);
  const Shape back = negated(pad);
  return autograd::record_unary("pad", out, x, [back](const Tensor& g) { return graph::pad(g, back, 0); });
}

namespace detail {

Tensor pad_backward(const Tensor& grad, const Tensor& x, const Shape& pad) {
  const Shape shape = padded_shape("pad_backward", x, pad);
  check_defined("pad_backward", grad);
  if (grad.sizes() != shape)
    throw Error("pad_backward: gradient of shape " + shape_str(grad.sizes()) + " does not match the result " +
                shape_str(shape) + " (input shape " + shape_str(x.sizes()) + ")");
  return compute(grad, negated(pad), 0, x.sizes());
}

}  // namespace detail

}  // namespace graph
