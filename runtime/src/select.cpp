// where(cond, a, b), masked_fill (and where with a host scalar), triu/tril
// (on the device: cuda/src/index.cu), and the clamp methods.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "graph/autograd.h"
#include "graph/cpu_loop.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/trace.h"
#include "device.h"
#include "device_ops.h"
#include "storage.h"

namespace graph {

namespace {

// o[i] = c[i] ? a[i] : b[i] over one dense run; an operand that is not
// dense (A or B false) is one value broadcast along the run. Chosen by bit
// masks, not a branch: a random mask mispredicted about every other element
// (half of a small masked_fill), and the masks vectorize. The bits are
// copied, so the values are exactly a's or b's.
template <class T, bool A, bool B>
void select_run(int64_t n, T* __restrict o, const bool* __restrict c, const T* __restrict a, const T* __restrict b) {
  using U = std::conditional_t<sizeof(T) == 1, uint8_t,
                               std::conditional_t<sizeof(T) == 2, uint16_t,
                                                  std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;
  static_assert(sizeof(U) == sizeof(T) && std::is_trivially_copyable_v<T>);
  for (int64_t i = 0; i < n; ++i) {
    U ua, ub;
    std::memcpy(&ua, a + (A ? i : 0), sizeof(T));
    std::memcpy(&ub, b + (B ? i : 0), sizeof(T));
    const uint8_t ci = reinterpret_cast<const uint8_t*>(c)[i];  // a bool's byte: GCC vectorizes no bool to int
    const U m = static_cast<U>(U(0) - U(ci != 0));
    const U r = static_cast<U>((ua & m) | (ub & static_cast<U>(~m)));
    std::memcpy(static_cast<void*>(o + i), &r, sizeof(T));  // T may be Half: a class, trivially copyable
  }
}

Tensor where_impl(const Tensor& cond, const Tensor& a, const Tensor& b, const char* op = "where") {
  const Shape shape = cpu::broadcast_shapes(op, {cond.sizes(), a.sizes(), b.sizes()});
  const DType dtype = promote_types(a.dtype(), b.dtype());
  const Tensor ca = a.to(dtype), cb = b.to(dtype);
  // Device operands (0-d CPU ones go along, as host scalars): the CUDA kernel.
  bool on_cuda = false;
  for (const Tensor* t : {&cond, &a, &b}) on_cuda = on_cuda || t->device() == Device::CUDA;
  if (on_cuda) {
    for (const Tensor* t : {&cond, &a, &b})
      if (t->device() != Device::CUDA && t->dim() != 0)
        throw Error(std::string(op) + ": expected tensors on one device, got a cpu tensor of shape " + shape_str(t->sizes()) +
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
        T* oo = o + off[0];
        const bool* cc = c + off[1];
        const T *aa = pa + off[2], *bb = pb + off[3];
        // Dense runs, each value operand dense or one broadcast scalar (where
        // with a scalar, masked_fill): plain indexing the compiler can unroll.
        if (st[0] == 1 && st[1] == 1 && (st[2] | 1) == 1 && (st[3] | 1) == 1) {
          if (st[2] && st[3]) return select_run<T, true, true>(n, oo, cc, aa, bb);
          if (st[2]) return select_run<T, true, false>(n, oo, cc, aa, bb);
          if (st[3]) return select_run<T, false, true>(n, oo, cc, aa, bb);
          return select_run<T, false, false>(n, oo, cc, aa, bb);
        }
        for (int64_t i = 0; i < n; ++i) oo[i * st[0]] = cc[i * st[1]] ? aa[i * st[2]] : bb[i * st[3]];
      });
    });
  });
  return out;
}

// triu (upper) or tril of the last two dims of a contiguous copy of x.
Tensor triangle_impl(const Tensor& x, int64_t diagonal, bool upper) {
  if (x.device() == Device::CUDA) return detail::cuda_triangle(x, diagonal, upper);
  const Tensor c = x.contiguous();
  Tensor out = empty(x.sizes(), x.dtype());
  const int64_t rows = x.sizes()[x.dim() - 2], cols = x.sizes()[x.dim() - 1];
  const int64_t lines = cols == 0 ? 0 : x.numel() / cols;  // rows of every matrix
  // Each row is a run of zeros and a run copied (j - i >= diagonal for triu,
  // j - i <= diagonal for tril): a memset and a memcpy, whatever the dtype, as
  // every dtype's zero is all zero bytes. A select per element cost 4x more.
  const size_t es = element_size(x.dtype());
  const char* in = static_cast<const char*>(c.raw_data());
  char* o = static_cast<char*>(out.raw_data());
  const int64_t dg = std::clamp<int64_t>(diagonal, -rows - 1, cols + 1);  // no overflow below
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(cols, 1));
  cpu::parallel_for(lines, grain, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t i = k % rows;  // the row within its matrix
      // The first column of the row's second run: copied from there for triu, zeroed for tril.
      const int64_t split = std::clamp<int64_t>(upper ? i + dg : i + dg + 1, 0, cols);
      const size_t row = static_cast<size_t>(k * cols) * es, head = static_cast<size_t>(split) * es;
      const size_t tail = static_cast<size_t>(cols - split) * es;
      if (upper) {
        std::memset(o + row, 0, head);
        std::memcpy(o + row + head, in + row + head, tail);
      } else {
        std::memcpy(o + row, in + row, head);
        std::memset(o + row + head, 0, tail);
      }
    }
  });
  return out;
}

Tensor triangle(const char* op, const Tensor& x, int64_t diagonal, bool upper) {
  if (detail::tracing())
    return detail::trace_op(op, {x}, {{"diagonal", diagonal}}, [&] { return triangle(op, x, diagonal, upper); });
  detail::check_defined(op, x);
  if (x.dim() < 2)
    throw Error(std::string(op) + ": the input must have at least 2 dims, got shape " + shape_str(x.sizes()));
  Tensor out = triangle_impl(x, diagonal, upper);
  if (!autograd::needs_grad({&x}) || !is_floating(out.dtype())) return out;
  autograd::record(op, out, {x}, [diagonal, upper](const Tensor& g) {
    return std::vector<Tensor>{triangle_impl(g, diagonal, upper)};
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

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value, bool invert, bool promote) {
  if (detail::tracing())
    return detail::trace_op("masked_fill", {x, mask},
                            {{"value", detail::scalar_attr(value)},
                             {"invert", invert},
                             {"promote", promote}},
                            [&] { return masked_fill(x, mask, value, invert, promote); });
  // The where forms report as where, naming their condition.
  const char* op = promote ? "where" : "masked_fill";
  detail::check_defined(op, x);
  detail::check_defined(op, mask);
  if (mask.dtype() != kBool)
    throw Error(std::string(op) + (promote ? ": the condition" : ": the mask") + " must be bool, got " +
                std::string(dtype_name(mask.dtype())) + " (shape " + shape_str(mask.sizes()) + ")");
  const DType dtype = promote ? promote_with_scalar(x.dtype(), value.dtype()) : x.dtype();
  const Tensor fill = full({}, value, dtype);
  Tensor out = invert ? where_impl(mask, x, fill, op) : where_impl(mask, fill, x, op);
  if (!autograd::needs_grad({&x}) || !is_floating(out.dtype())) return out;
  Tensor ms = mask.detach();
  autograd::record(op, out, {x, mask}, [ms, invert, op](const Tensor& g) {
    const Tensor zero = zeros({}, g.dtype());
    return std::vector<Tensor>{invert ? where_impl(ms, g, zero, op) : where_impl(ms, zero, g, op), Tensor()};
  });
  return out;
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value) {
  return masked_fill(x, mask, value, false, false);
}

Tensor triu(const Tensor& x, int64_t diagonal) { return triangle("triu", x, diagonal, true); }
Tensor tril(const Tensor& x, int64_t diagonal) { return triangle("tril", x, diagonal, false); }

Tensor Tensor::masked_fill(const Tensor& mask, Scalar value) const { return ::graph::masked_fill(*this, mask, value); }
Tensor Tensor::triu(int64_t diagonal) const { return ::graph::triu(*this, diagonal); }
Tensor Tensor::tril(int64_t diagonal) const { return ::graph::tril(*this, diagonal); }

Tensor Tensor::clamp_min(Scalar lo) const { return ::graph::clamp_min(*this, lo); }
Tensor Tensor::clamp_max(Scalar hi) const { return ::graph::clamp_max(*this, hi); }
Tensor Tensor::pow(const Tensor& exponent) const { return ::graph::pow(*this, exponent); }
Tensor Tensor::pow(Scalar exponent) const { return ::graph::pow(*this, exponent); }

}  // namespace graph
