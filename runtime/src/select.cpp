// where(cond, a, b), and the clamp methods.
#include "graph/autograd.h"
#include "graph/cpu_loop.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/trace.h"
#include "device.h"
#include "storage.h"

namespace graph {

namespace {

Tensor where_impl(const Tensor& cond, const Tensor& a, const Tensor& b) {
  const Shape shape = cpu::broadcast_shapes("where", {cond.sizes(), a.sizes(), b.sizes()});
  const DType dtype = promote_types(a.dtype(), b.dtype());
  const Tensor ca = a.to(dtype), cb = b.to(dtype);
  // Device operands (0-d CPU ones go along, as host scalars): the CUDA kernel.
  bool on_cuda = false;
  for (const Tensor* t : {&cond, &a, &b}) on_cuda = on_cuda || t->device() == Device::CUDA;
  if (on_cuda) {
    for (const Tensor* t : {&cond, &a, &b})
      if (t->device() != Device::CUDA && t->dim() != 0)
        throw Error("where: expected tensors on one device, got a cpu tensor of shape " + shape_str(t->sizes()) +
                    " among cuda tensors; move it with .to(kCUDA)");
    return detail::cuda_where(cond, ca, cb, shape);
  }
  Tensor out = empty(shape, dtype);
  const cpu::StridedLoop<4> loop(shape, {out.strides(), cpu::broadcast_strides(cond, shape),
                                         cpu::broadcast_strides(ca, shape), cpu::broadcast_strides(cb, shape)});
  dispatch_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    T* o = out.data_ptr<T>();
    const bool* c = cond.data_ptr<bool>();
    const T* pa = ca.data_ptr<T>();
    const T* pb = cb.data_ptr<T>();
    cpu::parallel_for(loop.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
      loop.run_range(begin, end, [&](int64_t n, const auto& off, const auto& st) {
        for (int64_t i = 0; i < n; ++i)
          o[off[0] + i * st[0]] = c[off[1] + i * st[1]] ? pa[off[2] + i * st[2]] : pb[off[3] + i * st[3]];
      });
    });
  });
  return out;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  if (detail::tracing())
    return detail::trace_op("where", {cond, a, b}, {}, [&] { return where(cond, a, b); });
  for (const Tensor* t : {&cond, &a, &b}) detail::check_defined("where", *t);
  if (cond.dtype() != kBool)
    throw Error("where: the condition must be bool, got " + std::string(dtype_name(cond.dtype())) + " (shape " +
                shape_str(cond.sizes()) + ")");
  Tensor out = where_impl(cond, a, b);
  if (!autograd::needs_grad({&a, &b}) || !is_floating(out.dtype())) return out;
  Tensor cs = cond.detach();
  autograd::record("where", out, {cond, a, b}, [cs](const Tensor& g) {
    const Tensor zero = zeros({}, g.dtype());
    return std::vector<Tensor>{Tensor(), where_impl(cs, g, zero), where_impl(cs, zero, g)};
  });
  return out;
}

Tensor Tensor::clamp_min(Scalar lo) const { return ::graph::clamp_min(*this, lo); }
Tensor Tensor::clamp_max(Scalar hi) const { return ::graph::clamp_max(*this, hi); }
Tensor Tensor::clamp(Scalar lo, Scalar hi) const { return ::graph::clamp(*this, lo, hi); }

}  // namespace graph
