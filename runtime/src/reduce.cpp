// Eager reductions: sum, mean, amax, amin over any set of dims (with
// keepdim), argmax, and softmax / log_softmax along a dim.
//
// sum/mean/amax/amin reduce into an accumulator laid out like the keepdim
// result, read through strides that are 0 along the reduced dims, so one
// StridedLoop covers every layout and every set of dims. Floats accumulate in
// double; integers and bools sum in uint64_t, which wraps on overflow like
// PyTorch's int64 instead of being undefined. A dense run into one slot (a
// whole contiguous tensor, a row of trailing dims) accumulates in the
// vectorized, thread-count-independent order of graph/reduce_order.h, which
// the generated fused reductions follow too; a whole contiguous tensor's
// chunks run on all cores.
#include <array>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "device.h"
#include "graph/autograd.h"
#include "graph/cpu_loop.h"
#include "graph/detail/backward_kernels.h"
#include "graph/fast_math.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/reduce_order.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

struct Plan {
  Shape out_shape;    // result shape (keepdim applied)
  Shape keep_shape;   // result shape with reduced dims kept as 1
  Shape acc_strides;  // accumulator strides over x's shape, 0 along reduced dims
  Shape dims;         // sorted, wrapped
  int64_t out_numel = 1;
  int64_t count = 1;  // elements reduced into each output
};

// Reducing `x` over `dims` (all dims when `dims` is empty).
Plan make_plan(std::string_view op, const Tensor& x, const Shape& dims, bool keepdim) {
  Plan p;
  const Shape& sizes = x.sizes();
  SmallVector<bool, 6> reduced(sizes.size(), dims.empty());
  for (int64_t d : dims) {
    const int64_t w = detail::wrap_dim(op, d, sizes);
    if (x.dim() == 0) continue;
    if (reduced[w] && !dims.empty())
      throw Error(std::string(op) + ": dim " + std::to_string(d) + " appears twice in the dims of shape " +
                  shape_str(sizes));
    reduced[w] = true;
  }
  p.keep_shape = sizes;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (!reduced[d]) continue;
    p.dims.push_back(static_cast<int64_t>(d));
    p.count *= sizes[d];
    p.keep_shape[d] = 1;
  }
  p.acc_strides = contiguous_strides(p.keep_shape);
  for (int64_t d : p.dims) p.acc_strides[d] = 0;
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (reduced[d] && !keepdim) continue;
    p.out_shape.push_back(p.keep_shape[d]);
    p.out_numel *= p.keep_shape[d];
  }
  return p;
}

// acc[i * st[0]] = combine(acc[i * st[0]], x[i * st[1]]) for i < n; a
// dense run into one slot in the order of graph/reduce_order.h (lanes, chunks).
template <class Op, class Acc, class In>
void accumulate_run(int64_t n, Acc* a, const In* p, const std::array<int64_t, 2>& st) {
  if (st[0] == 0 && st[1] == 1) {  // a dense run into one slot
    *a = reduce_order::dense<Op>(*a, p, n);
  } else {
    for (int64_t i = 0; i < n; ++i) a[i * st[0]] = Op::combine(a[i * st[0]], static_cast<Acc>(p[i * st[1]]));
  }
}

// acc = combine(acc, x) over the reduction `p` of `x` (acc laid out as p.keep_shape).
template <class Op, class Acc, class In>
void accumulate(const Plan& p, const Tensor& x, Acc* acc, const In* px) {
  if (p.out_numel == 1 && x.is_contiguous()) {
    // One dense run into one slot: its chunks on all cores, their partials
    // combined in chunk order (the same bits for any thread count).
    const int64_t n = x.numel(), chunks = reduce_order::num_chunks(n);
    if (chunks < 2) {
      *acc = reduce_order::dense<Op>(*acc, px, n);
      return;
    }
    std::vector<Acc> partial(static_cast<size_t>(chunks));
    cpu::parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
      for (int64_t c = b; c < e; ++c) {
        const int64_t at = c * reduce_order::kChunk;
        partial[c] = reduce_order::ChunkKernel<Op, Acc, In>::run(px + at, std::min(reduce_order::kChunk, n - at));
      }
    });
    for (const Acc& v : partial) *acc = Op::combine(*acc, v);
    return;
  }
  const cpu::StridedLoop<2> loop(x.sizes(), {p.acc_strides, x.strides()});
  loop.run([&](int64_t n, const auto& off, const auto& st) { accumulate_run<Op>(n, acc + off[0], px + off[1], st); });
}

// The accumulator: inline for the common whole-tensor reduction.
template <class Acc>
using AccBuffer = SmallVector<Acc, 8>;

enum class Kind { Sum, Mean, Max, Min };

Tensor reduce(Kind kind, std::string_view op, const Tensor& x, const Shape& dims, bool keepdim) {
  detail::check_defined(op, x);
  if (kind == Kind::Mean && !is_floating(x.dtype())) {
    throw Error("mean: expected a floating dtype, got " + std::string(dtype_name(x.dtype())) + " (shape " +
                shape_str(x.sizes()) + "); convert with .to(kFloat32)");
  }
  const Plan p = make_plan(op, x, dims, keepdim);
  if ((kind == Kind::Max || kind == Kind::Min) && p.count == 0 && x.numel() == 0 && p.out_numel > 0) {
    throw Error(std::string(op) + ": cannot reduce over a zero-size dimension of shape " + shape_str(x.sizes()));
  }
  const bool sum_like = kind == Kind::Sum || kind == Kind::Mean;
  const DType out_dtype = sum_like && !is_floating(x.dtype()) ? kInt64 : x.dtype();
  if (x.device() == Device::CUDA) return detail::cuda_reduce(op, x, p.dims, p.out_shape, out_dtype);
  Tensor out = empty(p.out_shape, out_dtype);
  dispatch_dtype(x.dtype(), [&](auto v) {
    using In = decltype(v);
    const In* px = x.data_ptr<In>();
    if (is_floating(x.dtype())) {
      double init = kind == Kind::Max ? reduce_order::Max::identity<double>()
                    : kind == Kind::Min ? reduce_order::Min::identity<double>()
                                        : reduce_order::Sum::identity<double>();
      AccBuffer<double> acc(static_cast<size_t>(p.out_numel), init);
      if (sum_like) accumulate<reduce_order::Sum>(p, x, acc.data(), px);
      else if (kind == Kind::Max) accumulate<reduce_order::Max>(p, x, acc.data(), px);
      else accumulate<reduce_order::Min>(p, x, acc.data(), px);
      // Mean over zero elements is 0.0 / 0 = NaN, as in PyTorch.
      const double count = static_cast<double>(p.count);
      dispatch_dtype(out_dtype, [&](auto o) {
        using Out = decltype(o);
        Out* po = out.data_ptr<Out>();
        for (int64_t i = 0; i < p.out_numel; ++i)
          po[i] = detail::convert<Out>(kind == Kind::Mean ? acc[i] / count : acc[i]);
      });
    } else if (sum_like) {
      AccBuffer<uint64_t> acc(static_cast<size_t>(p.out_numel), 0);
      accumulate<reduce_order::Sum>(p, x, acc.data(), px);
      int64_t* po = out.data_ptr<int64_t>();
      for (int64_t i = 0; i < p.out_numel; ++i) po[i] = static_cast<int64_t>(acc[i]);
    } else {
      using Acc = std::conditional_t<std::is_same_v<In, bool>, uint8_t, int64_t>;
      Acc init = kind == Kind::Max ? std::numeric_limits<Acc>::lowest() : std::numeric_limits<Acc>::max();
      AccBuffer<Acc> acc(static_cast<size_t>(p.out_numel), init);
      if (kind == Kind::Max) accumulate<reduce_order::Max>(p, x, acc.data(), px);
      else accumulate<reduce_order::Min>(p, x, acc.data(), px);
      In* po = out.data_ptr<In>();
      for (int64_t i = 0; i < p.out_numel; ++i) po[i] = static_cast<In>(acc[i]);
    }
  });
  return out;
}

// ---- autograd --------------------------------------------------------------

// The gradient of a reduction broadcast back over the input: unsqueeze the
// reduced dims (when !keepdim), then expand to the input's shape.
Tensor expand_back(const Tensor& grad, const Plan& p, const Shape& in_sizes) {
  return grad.reshape(p.keep_shape).expand(in_sizes);
}

// The backward kernels of sum/mean/amax/amin (backward_kernels.h).
Tensor reduce_backward(Kind kind, const char* op, const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim,
                       const Tensor& result) {
  const Plan p = make_plan(op, x, dims, keepdim);
  const Tensor g = expand_back(grad, p, x.sizes());
  switch (kind) {
    case Kind::Sum: return g;
    case Kind::Mean: return g / static_cast<double>(p.count);
    case Kind::Max:
    case Kind::Min: {
      // The extreme itself is one reduction, recomputed when not saved.
      const Tensor os = result.defined() ? result : reduce(kind, op, x, dims, keepdim);
      // Ties share the gradient evenly, as PyTorch's amax/amin do.
      const Tensor hit = eq(x, expand_back(os, p, x.sizes())).to(grad.dtype());
      const Tensor ties = reduce(Kind::Sum, "sum", hit, p.dims, true);
      return g * hit / ties.reshape(p.keep_shape).expand(x.sizes());
    }
  }
  return Tensor();
}

Tensor record_reduce(Kind kind, const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  Tensor out = reduce(kind, op, x, dims, keepdim);
  if (!autograd::needs_grad({&x})) return out;
  Tensor xs = x.detach(), os = kind == Kind::Max || kind == Kind::Min ? out.detach() : Tensor();
  autograd::record(op, out, {x}, [kind, op, dims, keepdim, xs, os](const Tensor& grad) -> std::vector<Tensor> {
    return {reduce_backward(kind, op, grad, xs, dims, keepdim, os)};
  });
  return out;
}

// A public reduction: traced as one node, else computed and recorded.
Tensor reduce_op(Kind kind, const char* op, const Tensor& x, const Shape& dims, bool keepdim) {
  if (detail::tracing())
    return detail::trace_op(op, {x}, detail::reduce_attrs(dims, keepdim, x.dim()),
                            [&] { return record_reduce(kind, op, x, dims, keepdim); });
  return record_reduce(kind, op, x, dims, keepdim);
}

// `x` with `dim` moved last and made contiguous, as [rows, n].
Tensor rows_along(const Tensor& x, int64_t dim) {
  return x.transpose(dim, x.dim() - 1).contiguous();
}

// The largest of n values, NaNs skipped, over 16-byte vectors (the GCC/Clang
// vector extension; x86 maxps has exactly these semantics). The compilers
// keep a scalar loop for a float max without -ffast-math, even one spread
// over independent lanes, and on a 64-float row that loop was a sixth of softmax.
template <class C>
C row_max(const C* x, int64_t n) {
  typedef C V __attribute__((vector_size(16)));
  constexpr int kWidth = 16 / sizeof(C);
  constexpr C kNegInf = -std::numeric_limits<C>::infinity();
  V m0 = V{} + kNegInf, m1 = m0;
  int64_t j = 0;
  for (; j + 2 * kWidth <= n; j += 2 * kWidth) {
    V a, b;
    std::memcpy(&a, x + j, sizeof a);
    std::memcpy(&b, x + j + kWidth, sizeof b);
    m0 = a > m0 ? a : m0;
    m1 = b > m1 ? b : m1;
  }
  m0 = m1 > m0 ? m1 : m0;
  C m = kNegInf;
  for (int l = 0; l < kWidth; ++l) m = m0[l] > m ? m0[l] : m;
  for (; j < n; ++j) m = x[j] > m ? x[j] : m;
  return m;
}

// One softmax (or log_softmax) row of n contiguous values, x and o distinct.
// Three passes that vectorize: the max (row_max), exp(x - m) with
// graph::math::exp into o and into kLanes partial sums, then the scaling by
// 1 / sum (as ATen does). NaNs are skipped by the max but poison the sum, so
// a row with a NaN is all NaN, as in PyTorch.
template <bool Log, class C>
void softmax_row(const C* __restrict x, C* __restrict o, int64_t n) {
  constexpr int kLanes = 16 / sizeof(C) * 2;
  C m = row_max(x, n);
  if (m == -std::numeric_limits<C>::infinity()) m = 0;  // all -inf: keep exp(-inf - 0) = 0
  C lane[kLanes];
  for (int l = 0; l < kLanes; ++l) lane[l] = 0;
  int64_t j = 0;
  for (; j + kLanes <= n; j += kLanes)
    for (int l = 0; l < kLanes; ++l) lane[l] += (o[j + l] = math::exp(x[j + l] - m));
  C s = 0;
  for (int l = 0; l < kLanes; ++l) s += lane[l];
  for (; j < n; ++j) s += (o[j] = math::exp(x[j] - m));
  if constexpr (Log) {
    const C shift = m + std::log(s);
    for (j = 0; j < n; ++j) o[j] = x[j] - shift;
  } else {
    const C inv = 1 / s;
    for (j = 0; j < n; ++j) o[j] *= inv;
  }
}

template <bool Log>
Tensor softmax_impl(const char* op, const Tensor& x, int64_t dim) {
  detail::check_defined(op, x);
  if (!is_floating(x.dtype()))
    throw Error(std::string(op) + ": expected a floating dtype, got " + std::string(dtype_name(x.dtype())) +
                " (shape " + shape_str(x.sizes()) + ")");
  if (x.dim() == 0) return (Log ? zeros({}, x.dtype()) : ones({}, x.dtype())).to(x.device());
  const int64_t d = detail::wrap_dim(op, dim, x.sizes());
  if (x.device() == Device::CUDA) return detail::cuda_softmax(Log, x, d);
  const bool last = d == x.dim() - 1;
  // Rows in place when they already are (no handle copy either).
  const Tensor moved = last && x.is_contiguous() ? Tensor() : rows_along(x, d);
  const Tensor& rows = moved.defined() ? moved : x;
  Tensor out = empty(rows.sizes(), x.dtype());
  const int64_t n = rows.sizes().back(), r = n ? rows.numel() / n : 0;
  dispatch_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* in = rows.data_ptr<T>();
    T* o = out.data_ptr<T>();
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      for (int64_t i = 0; i < r; ++i) softmax_row<Log>(in + i * n, o + i * n, n);
    } else {  // 16-bit floats: through float rows
      std::vector<float> bx(static_cast<size_t>(n)), bo(static_cast<size_t>(n));
      for (int64_t i = 0; i < r; ++i) {
        for (int64_t j = 0; j < n; ++j) bx[j] = static_cast<float>(in[i * n + j]);
        softmax_row<Log>(bx.data(), bo.data(), n);
        for (int64_t j = 0; j < n; ++j) o[i * n + j] = static_cast<T>(bo[j]);
      }
    }
  });
  if (!last) out = out.transpose(d, x.dim() - 1).contiguous();
  return out;
}

template <bool Log>
Tensor record_softmax(const char* op, const Tensor& x, int64_t dim) {
  Tensor out = softmax_impl<Log>(op, x, dim);
  if (!autograd::needs_grad({&x})) return out;
  Tensor os = out.detach();
  autograd::record(op, out, {x}, [os, dim](const Tensor& grad) -> std::vector<Tensor> {
    if (Log) return {grad - exp(os) * sum(grad, Shape{dim}, true)};
    return {os * (grad - sum(grad * os, Shape{dim}, true))};
  });
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce_op(Kind::Sum, "sum", x, {}, false); }
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) { return reduce_op(Kind::Sum, "sum", x, {dim}, keepdim); }
Tensor sum(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_op(Kind::Sum, "sum", x, dims, keepdim);
}
Tensor mean(const Tensor& x) { return reduce_op(Kind::Mean, "mean", x, {}, false); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_op(Kind::Mean, "mean", x, {dim}, keepdim);
}
Tensor mean(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_op(Kind::Mean, "mean", x, dims, keepdim);
}
Tensor amax(const Tensor& x) { return reduce_op(Kind::Max, "amax", x, {}, false); }
Tensor amax(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_op(Kind::Max, "amax", x, dims, keepdim);
}
Tensor amin(const Tensor& x) { return reduce_op(Kind::Min, "amin", x, {}, false); }
Tensor amin(const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_op(Kind::Min, "amin", x, dims, keepdim);
}

// argmax of rows [i0, i0 + B) of n values each, in lockstep: a row's scan is
// a chain of dependent compares, and B rows hide each other's latency. The
// first largest wins; the first NaN wins over everything (as in PyTorch): once
// a row's best is NaN nothing replaces it.
template <int B, class T>
void argmax_rows(const T* in, int64_t* o, int64_t i0, int64_t n) {
  using C = std::conditional_t<std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>, float, T>;
  C bv[B];
  int64_t best[B];
  for (int b = 0; b < B; ++b) bv[b] = static_cast<C>(in[(i0 + b) * n]), best[b] = 0;
  for (int64_t j = 1; j < n; ++j) {
#pragma GCC unroll 4
    for (int b = 0; b < B; ++b) {
      const C c = static_cast<C>(in[(i0 + b) * n + j]);
      bool take = c > bv[b];
      if constexpr (std::is_floating_point_v<C>) take = take || (c != c && bv[b] == bv[b]);
      bv[b] = take ? c : bv[b];
      best[b] = take ? j : best[b];
    }
  }
  for (int b = 0; b < B; ++b) o[i0 + b] = best[b];
}

Tensor argmax(const Tensor& x) {
  if (detail::tracing()) return detail::trace_op("argmax", {x}, {}, [&] { return argmax(x); });
  return argmax(x.reshape({-1}), 0, false);
}

Tensor argmax(const Tensor& x, int64_t dim, bool keepdim) {
  if (detail::tracing())
    return detail::trace_op("argmax", {x}, {{"dim", dim}, {"keepdim", keepdim}}, [&] { return argmax(x, dim, keepdim); });
  detail::check_defined("argmax", x);
  if (x.dim() == 0) return zeros({}, kInt64).to(x.device());
  const int64_t d = detail::wrap_dim("argmax", dim, x.sizes());
  if (x.size(d) == 0) throw Error("argmax: cannot reduce over a zero-size dimension of shape " + shape_str(x.sizes()));
  if (x.device() == Device::CUDA) {
    Shape out_shape = x.sizes();
    if (keepdim) out_shape[d] = 1;
    else out_shape.erase(out_shape.begin() + d);
    return detail::cuda_reduce("argmax", x, {d}, out_shape, kInt64);
  }
  const bool last = d == x.dim() - 1;
  // Rows in place when they already are (no handle copy either), as softmax.
  const Tensor moved = last && x.is_contiguous() ? Tensor() : rows_along(x, d);
  const Tensor& rows = moved.defined() ? moved : x;
  const int64_t n = rows.size(-1), r = rows.numel() / n;
  Shape out_shape = rows.sizes();
  out_shape.back() = 1;
  Tensor out = empty(out_shape, kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  dispatch_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    const T* in = rows.data_ptr<T>();
    int64_t i = 0;
    for (; i + 4 <= r; i += 4) argmax_rows<4>(in, o, i, n);
    for (; i < r; ++i) argmax_rows<1>(in, o, i, n);
  });
  Tensor res = last ? out : out.transpose(d, x.dim() - 1).contiguous();
  return keepdim ? res : res.reshape([&] {
    Shape s = x.sizes();
    s.erase(s.begin() + d);
    return s;
  }());
}

Tensor softmax(const Tensor& x, int64_t dim) {
  if (detail::tracing()) return detail::trace_op("softmax", {x}, {{"dim", dim}}, [&] { return softmax(x, dim); });
  return record_softmax<false>("softmax", x, dim);
}
Tensor log_softmax(const Tensor& x, int64_t dim) {
  if (detail::tracing())
    return detail::trace_op("log_softmax", {x}, {{"dim", dim}}, [&] { return log_softmax(x, dim); });
  return record_softmax<true>("log_softmax", x, dim);
}

namespace detail {

Tensor sum_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_backward(Kind::Sum, "sum", grad, x, dims, keepdim, Tensor());
}
Tensor mean_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim) {
  return reduce_backward(Kind::Mean, "mean", grad, x, dims, keepdim, Tensor());
}
Tensor amax_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim, const Tensor& result) {
  return reduce_backward(Kind::Max, "amax", grad, x, dims, keepdim, result);
}
Tensor amin_backward(const Tensor& grad, const Tensor& x, const Shape& dims, bool keepdim, const Tensor& result) {
  return reduce_backward(Kind::Min, "amin", grad, x, dims, keepdim, result);
}

}  // namespace detail

Tensor Tensor::sum() const { return graph::sum(*this); }
Tensor Tensor::sum(int64_t dim, bool keepdim) const { return graph::sum(*this, dim, keepdim); }
Tensor Tensor::sum(const Shape& dims, bool keepdim) const { return graph::sum(*this, dims, keepdim); }
Tensor Tensor::mean() const { return graph::mean(*this); }
Tensor Tensor::mean(int64_t dim, bool keepdim) const { return graph::mean(*this, dim, keepdim); }
Tensor Tensor::mean(const Shape& dims, bool keepdim) const { return graph::mean(*this, dims, keepdim); }
Tensor Tensor::amax(const Shape& dims, bool keepdim) const { return graph::amax(*this, dims, keepdim); }
Tensor Tensor::amin(const Shape& dims, bool keepdim) const { return graph::amin(*this, dims, keepdim); }
Tensor Tensor::argmax(int64_t dim, bool keepdim) const { return graph::argmax(*this, dim, keepdim); }

}  // namespace graph
