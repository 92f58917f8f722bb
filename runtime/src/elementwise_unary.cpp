// Eager unary ops and the dtype-converting copy. Every unary op of ops.def
// gets its public entry point from the X-macro below; the math is
// graph::scalar::<op>, shared with generated fused code. Kernels run on
// cpu::StridedLoop with operand 0 the output (elementwise_impl.h).
#include "elementwise_impl.h"

namespace graph {

using namespace elementwise;

// ---- public ops, one per ops.def unary entry ----------------------------

#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                                      \
  Tensor name(const Tensor& x) {                                                                      \
    if (detail::tracing()) return detail::trace_op(#name, {x}, {}, [&] { return name(x); });          \
    return compute_and_record(                                                                        \
        [&] { return unary_op(OpId::name, x, [](auto v) { return scalar::name(v); }); },              \
        [&](Tensor& out) {                                                                            \
          record_unary(OpId::name, out, x, [](const Tensor& g, const Tensor& x, const Tensor& r) {    \
            return derivatives::name##_backward(g, x, r);                                             \
          });                                                                                         \
        });                                                                                           \
  }
#include "graph/ops.def"

#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) \
  Tensor Tensor::name() const { return ::graph::name(*this); }
#include "graph/ops.def"

// ---- dtype-converting copy (used by to(), clone(), contiguous()) --------

void detail::copy_into(const Tensor& dst, const Tensor& src) {
  check_defined("copy", dst);
  check_defined("copy", src);
  if (dst.device() != Device::CPU || src.device() != Device::CPU) return cuda_copy_into(dst, src);
  const bool dense = dst.is_contiguous() && dense_at(src, dst.sizes());
  dispatch_dtype(dst.dtype(), [&](auto d) {
    using D = decltype(d);
    dispatch_dtype(src.dtype(), [&](auto s) {
      using S = decltype(s);
      D* o = dst.data_ptr<D>();
      const S* x = src.data_ptr<S>();
      const auto convert_one = [](S v) { return convert<D>(v); };
      if (dense) {
        unary_run(dst.numel(), o, x, {1, 1}, convert_one);
        return;
      }
      const StridedLoop<2> loop(dst.sizes(), {dst.strides(), cpu::broadcast_strides(src, dst.sizes())});
      loop.run([&](int64_t n, const auto& off, const auto& st) {
        unary_run(n, o + off[0], x + off[1], st, convert_one);
      });
    });
  });
}

}  // namespace graph
