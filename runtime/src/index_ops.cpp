// index_select, gather, scatter_add, cumsum and bmm (issue 19), with their backward kernels
// (graph/detail/backward_kernels.h): index_select's and gather's gradients
// scatter-add grad into zeros of the input's shape, cumsum's is the reverse
// cumsum of grad, bmm's is matmul's.
//
// On the device (device_ops.h) one strided gather and one atomic
// scatter-add walk serve index_select, gather, scatter_add and their
// gradients; indices are checked there and the verdict read on the host,
// with the CPU's messages. bmm runs matmul's GEMMs, so it runs wherever
// matmul does.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "graph/autograd.h"
#include "graph/detail/backward_kernels.h"
#include "graph/ops.h"
#include "graph/parallel.h"
#include "device.h"
#include "device_ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// Calls f with a value of the unsigned type one element of `dtype` wide: these
// ops move elements without reading them, so one copy per width serves every dtype.
template <class F>
void by_element_size(DType dtype, F&& f) {
  switch (element_size(dtype)) {
    case 1: f(uint8_t{}); break;
    case 2: f(uint16_t{}); break;
    case 4: f(uint32_t{}); break;
    default: f(uint64_t{}); break;
  }
}

// A contiguous shape seen as [outer, n, inner] around `dim`.
struct Around {
  int64_t outer = 1, n = 1, inner = 1;
};
Around around(const Shape& s, int64_t dim) {
  Around a;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d) (d < dim ? a.outer : d == dim ? a.n : a.inner) *= s[d];
  return a;
}

std::string shapes_of(const Tensor& x, const Tensor& index) {
  return "input shape " + shape_str(x.sizes()) + ", index shape " + shape_str(index.sizes());
}

void check_same_device(const char* op, const Tensor& x, const Tensor& other, const char* name) {
  if (other.device() != x.device())
    throw Error(std::string(op) + ": expected the " + name + " on the input's device (" +
                std::string(device_name(x.device())) + "), got " + std::string(device_name(other.device())) + " (" +
                "input shape " + shape_str(x.sizes()) + ", " + name + " shape " + shape_str(other.sizes()) + ")");
}

// The checks index_select and gather share; returns dim wrapped.
int64_t check_index_op(const char* op, const Tensor& x, int64_t dim, const Tensor& index, bool int32_ok) {
  detail::check_defined(op, x);
  detail::check_defined(op, index);
  check_same_device(op, x, index, "index");
  if (x.dim() == 0) throw Error(std::string(op) + ": the input must have at least 1 dim, got shape []");
  if (index.dtype() != kInt64 && !(int32_ok && index.dtype() == kInt32))
    throw Error(std::string(op) + ": expected an int64 index, got " + std::string(dtype_name(index.dtype())) + " (" +
                shapes_of(x, index) + ")");
  return detail::wrap_dim(op, dim, x.sizes());
}

[[noreturn]] void range_error(const char* op, int64_t value, int64_t dim, int64_t size, const Tensor& x,
                              const Tensor& index) {
  throw Error(std::string(op) + ": index " + std::to_string(value) + " is out of range for dim " + std::to_string(dim) +
              " of size " + std::to_string(size) + " (" + shapes_of(x, index) + ")");
}

// Every index in [0, size), else an error naming the op, the index and the shapes.
void check_range(const char* op, const int64_t* p, int64_t count, int64_t dim, int64_t size, const Tensor& x,
                 const Tensor& index) {
  // One unsigned compare per index, or-ed without a branch (a negative index
  // is a huge unsigned one); the loop that names the culprit runs on failure only.
  // p | (size - 1 - p) has the sign bit set exactly when p < 0 or p >= size
  // (unsigned arithmetic: no overflow), and subtracts and ors vectorize in
  // 2-lane SSE2 where 64-bit compares do not. Two accumulators of one
  // register each (a 32-byte vector went through the stack every step).
  typedef uint64_t V __attribute__((vector_size(16)));
  const uint64_t last = static_cast<uint64_t>(size) - 1;
  V acc0 = {}, acc1 = {};
  int64_t i = 0;
  for (; i + 4 <= count; i += 4) {
    V v0, v1;
    std::memcpy(&v0, p + i, sizeof v0);
    std::memcpy(&v1, p + i + 2, sizeof v1);
    acc0 |= v0 | (last - v0);
    acc1 |= v1 | (last - v1);
  }
  const V acc = acc0 | acc1;
  uint64_t bits = acc[0] | acc[1];
  for (; i < count; ++i) bits |= static_cast<uint64_t>(p[i]) | (last - static_cast<uint64_t>(p[i]));
  if (!(bits >> 63)) return;
  for (int64_t i = 0; i < count; ++i)
    if (p[i] < 0 || p[i] >= size) range_error(op, p[i], dim, size, x, index);
}

// check_range of idx (contiguous int64) on its device. On the device the
// check synchronizes; `device_check` false skips it there (a backward op
// reusing its forward's checked index: the kernels skip a bad one).
void check_range_of(const char* op, const Tensor& idx, int64_t dim, int64_t size, const Tensor& x, const Tensor& index,
                    bool device_check = true) {
  if (idx.device() != Device::CUDA) return check_range(op, idx.data_ptr<int64_t>(), idx.numel(), dim, size, x, index);
  if (!device_check) return;
  const int64_t at = detail::cuda_first_bad_index(idx, size);
  if (at < 0) return;
  const Tensor bad = idx.reshape({idx.numel()}).slice(0, at, at + 1).to(Device::CPU);
  range_error(op, bad.data_ptr<int64_t>()[0], dim, size, x, index);
}

// The dtype gradients accumulate in: 16-bit floats in float32.
DType acc_dtype(DType d) { return d == kFloat64 ? kFloat64 : kFloat32; }

// ---- on the device ------------------------------------------------------------
// The walks of device_ops.h over a position shape; idx is contiguous int64.

// index_select's index read along dim only.
Shape along(size_t rank, int64_t dim) {
  Shape s(rank, 0);
  s[dim] = 1;
  return s;
}

Tensor zeros_on_device(const Shape& sizes, DType dtype) { return detail::full_on(Device::CUDA, sizes, 0, dtype); }

Tensor index_select_cuda(const Tensor& x, int64_t dim, const Tensor& idx) {
  Shape shape = x.sizes();
  shape[dim] = idx.numel();
  Tensor out = detail::empty_on(Device::CUDA, shape, x.dtype());
  detail::cuda_index_walk(false, out, x, idx, shape, along(shape.size(), dim), dim, false, x.size(dim));
  return out;
}

// out[at] = x[at with dim := idx[at]] over the positions of the index.
Tensor gather_cuda(const Tensor& x, int64_t dim, const Tensor& idx) {
  Tensor out = detail::empty_on(Device::CUDA, idx.sizes(), x.dtype());
  detail::cuda_index_walk(false, out, x, idx, idx.sizes(), idx.strides(), dim, false, x.size(dim));
  return out;
}

// out[at with dim := idx[at]] += src[at] (atomic adds).
void scatter_add_cuda(const Tensor& out, int64_t dim, const Tensor& idx, const Tensor& src) {
  detail::cuda_index_walk(true, out, src, idx, idx.sizes(), idx.strides(), dim, true, out.size(dim));
}

// ---- index_select -------------------------------------------------------------

Tensor index_select_impl(const Tensor& x_in, int64_t dim, const Tensor& idx) {
  const Tensor x = x_in.contiguous();
  const Around a = around(x.sizes(), dim);
  const int64_t k = idx.numel();
  Shape shape = x.sizes();
  shape[dim] = k;
  Tensor out = empty(shape, x.dtype());
  const size_t row = static_cast<size_t>(a.inner) * element_size(x.dtype());
  const char* src = static_cast<const char*>(x.raw_data());
  char* dst = static_cast<char*>(out.raw_data());
  const int64_t* p = idx.data_ptr<int64_t>();
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(a.inner, 1));
  if (a.inner == 1) {  // along the last dim: one element per index, not a memcpy call each
    const auto run = [&](auto e) {
      using E = decltype(e);
      const E* s = reinterpret_cast<const E*>(src);
      E* d = reinterpret_cast<E*>(dst);
      cpu::parallel_for(a.outer, std::max<int64_t>(1, grain / std::max<int64_t>(k, 1)), [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o)
          for (int64_t j = 0; j < k; ++j) d[o * k + j] = s[o * a.n + p[j]];
      });
    };
    by_element_size(x.dtype(), run);
    return out;
  }
  cpu::parallel_for(a.outer * k, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin; r < end; ++r) {
      const int64_t o = r / k, j = r % k;
      std::memcpy(dst + r * row, src + (o * a.n + p[j]) * row, row);
    }
  });
  return out;
}

// index_add of grad into zeros of x's shape, in x's dtype.
Tensor index_select_grad(const Tensor& grad, const Shape& xsizes, DType xdtype, int64_t dim, const Tensor& idx) {
  const DType acc = acc_dtype(xdtype);
  if (grad.device() == Device::CUDA) {
    Tensor gx = zeros_on_device(xsizes, acc);
    const Tensor g = grad.to(acc);
    detail::cuda_index_walk(true, gx, g, idx, g.sizes(), along(g.sizes().size(), dim), dim, true, xsizes[dim]);
    return gx.to(xdtype);
  }
  const Tensor g = grad.to(acc).contiguous();
  Tensor gx = zeros(xsizes, acc);
  const Around a = around(xsizes, dim);
  const int64_t k = idx.numel();
  const int64_t* p = idx.data_ptr<int64_t>();
  dispatch_dtype(acc, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      const T* pg = g.data_ptr<T>();
      T* px = gx.data_ptr<T>();
      // Rows of one outer index never meet another's: parallel over outer.
      cpu::parallel_for(a.outer, 1, [&](int64_t begin, int64_t end) {
        for (int64_t o = begin; o < end; ++o)
          for (int64_t j = 0; j < k; ++j) {
            T* dst = px + (o * a.n + p[j]) * a.inner;
            const T* src = pg + (o * k + j) * a.inner;
            for (int64_t i = 0; i < a.inner; ++i) dst[i] += src[i];
          }
      });
    }
  });
  return gx.to(xdtype);
}

// ---- gather -------------------------------------------------------------------

// Offsets into contiguous x of the index's positions before and after dim.
struct GatherPlan {
  Around idx;                   // the index's shape around dim
  int64_t xstride = 1;          // x's stride of dim
  // x offsets of each outer and each inner position (inline up to 16: small
  // gathers allocate nothing here).
  SmallVector<int64_t, 16> outer;
  SmallVector<int64_t, 16> inner;
};

// x is contiguous, or has the given strides.
GatherPlan gather_plan(const Shape& xs, const Shape& is, int64_t dim, const Shape* strides = nullptr) {
  GatherPlan g;
  g.idx = around(is, dim);
  const int64_t r = static_cast<int64_t>(xs.size());
  Shape stride(static_cast<size_t>(r), 1);
  if (strides) stride = *strides;
  else
    for (int64_t d = r - 2; d >= 0; --d) stride[d] = stride[d + 1] * xs[d + 1];
  g.xstride = stride[dim];
  // The offsets of positions in row-major order, an odometer over dims
  // [from, to) of the index (no division per position and dim).
  auto offsets = [&](int64_t from, int64_t to, int64_t count) {
    SmallVector<int64_t, 16> off(static_cast<size_t>(count), 0);
    Shape c(static_cast<size_t>(std::max<int64_t>(to - from, 0)), 0);
    int64_t at = 0;
    for (int64_t i = 0; i < count; ++i) {
      off[i] = at;
      for (int64_t d = to - 1; d >= from; --d) {  // the next position
        at += stride[d];
        if (++c[d - from] < is[d]) break;
        at -= c[d - from] * stride[d];
        c[d - from] = 0;
      }
    }
    return off;
  };
  g.outer = offsets(0, dim, g.idx.outer);
  g.inner = offsets(dim + 1, r, g.idx.inner);
  return g;
}

// An index as gather and scatter_add read it: its shape, and its values
// contiguous; or, when it is broadcast (stride 0) over every dim after dim
// and spans there the full extent of every tensor it addresses, one value
// per row (`rows`): x.gather(0, i.unsqueeze(1).expand({-1, F})), the message
// passing of graph networks. Each row then moves one contiguous block of
// `inner` elements instead of `inner` single ones.
struct Index {
  Tensor idx;   // int64, contiguous: the index, or its first column of each row
  Shape shape;  // the index's shape
  bool rows = false;
};

Index index_of(const Tensor& index, int64_t d, std::initializer_list<Shape> full) {
  const int64_t rank = index.dim();
  bool rows = d + 1 < rank;
  for (int64_t j = d + 1; rows && j < rank; ++j) {
    rows = index.stride(j) == 0 || index.size(j) == 1;
    for (const Shape& f : full) rows = rows && index.size(j) == f[j];
  }
  if (!rows) return {index.contiguous(), index.sizes(), false};
  Tensor first = index;
  for (int64_t j = d + 1; j < rank; ++j) first = first.slice(j, 0, 1);
  return {first.contiguous(), index.sizes(), true};
}

// out[r, i] = x[outer(r) + p[r or at] * xstride + inner(i)], elements of type E.
// Rows r = (o, j) are walked with o and j counted, not divided out of r: an
// integer division per element was most of a small gather's time. A gather
// along the last dim (inner 1, as sort's, topk's and max's) is one load per
// element.
template <class E>
void gather_elems(E* dst, const E* src, const int64_t* p, const GatherPlan& g, bool rows) {
  const int64_t k = g.idx.n, inner = g.idx.inner, xs = g.xstride;
  if (inner == 0) return;  // nothing to move (and no index value to read for `rows`)
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(inner, 1));
  cpu::parallel_for(g.idx.outer * k, grain, [&](int64_t begin, int64_t end) {
    for (int64_t r = begin, o = begin / k; r < end; ++o) {
      const E* s = src + g.outer[o];
      const int64_t stop = std::min(end, (o + 1) * k);
      if (rows) {
        for (; r < stop; ++r) std::memcpy(dst + r * inner, s + p[r] * xs, sizeof(E) * inner);
      } else if (inner == 1) {
        for (; r < stop; ++r) dst[r] = s[p[r] * xs];
      } else {
        for (; r < stop; ++r)
          for (int64_t i = 0; i < inner; ++i) dst[r * inner + i] = s[p[r * inner + i] * xs + g.inner[i]];
      }
    }
  });
}

Tensor gather_impl(const Tensor& x_in, int64_t dim, const Index& ix) {
  const Tensor x = x_in.contiguous();
  const GatherPlan g = gather_plan(x.sizes(), ix.shape, dim);
  Tensor out = empty(ix.shape, x.dtype());
  const int64_t* p = ix.idx.data_ptr<int64_t>();
  const auto run = [&](auto e) {
    using E = decltype(e);
    gather_elems(static_cast<E*>(out.raw_data()), static_cast<const E*>(x.raw_data()), p, g, ix.rows);
  };
  by_element_size(x.dtype(), run);
  return out;
}

// A gather along the last dim of contiguous x and index, the index as large
// as x in every other dim (topk's and sort's values, max's): row o's values
// at row o of x, one load each. No plan, no Index: their offset tables and
// copies were most of a small gather's time (and of topk's second half).
bool gathers_rows(const Tensor& x, int64_t d, const Tensor& index) {
  if (d != x.dim() - 1 || !x.is_contiguous() || !index.is_contiguous()) return false;
  for (int64_t j = 0; j < d; ++j)
    if (index.sizes()[j] != x.sizes()[j]) return false;
  return true;
}

Tensor gather_rows(const Tensor& x, const Tensor& index) {
  Tensor out = empty(index.sizes(), x.dtype());
  const int64_t n = x.sizes().back(), k = index.sizes().back();
  if (out.numel() == 0) return out;
  const int64_t* __restrict p = index.data_ptr<int64_t>();
  by_element_size(x.dtype(), [&](auto e) {
    using E = decltype(e);
    const E* __restrict src = static_cast<const E*>(x.raw_data());
    E* __restrict dst = static_cast<E*>(out.raw_data());
    const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / k);
    cpu::parallel_for(out.numel() / k, grain, [&](int64_t begin, int64_t end) {
      for (int64_t o = begin; o < end; ++o)
        for (int64_t j = 0; j < k; ++j) dst[o * k + j] = src[o * n + p[o * k + j]];
    });
  });
  return out;
}

// ---- scatter_add (and gather's gradient, which is a scatter_add into zeros) --------

// out[P(at)] += src[Q(at)] for every position `at` of the index: P puts the
// index's value at dim into out's layout, Q the position itself into src's.
// Sequential: two positions may add to one element. out contiguous; src read
// through its strides (contiguous for `rows`).
void scatter_add_into(Tensor& out, int64_t dim, const Index& ix, const Tensor& src) {
  const GatherPlan P = gather_plan(out.sizes(), ix.shape, dim);
  const GatherPlan Q = gather_plan(src.sizes(), ix.shape, dim, &src.strides());
  if (P.idx.inner == 0) return;  // an empty index: nothing to add, no value to read for `rows`
  const int64_t* p = ix.idx.data_ptr<int64_t>();
  dispatch_dtype(out.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_arithmetic_v<T> && !std::is_same_v<T, bool>) {
      const T* ps = src.data_ptr<T>();
      T* po = out.data_ptr<T>();
      const int64_t k = P.idx.n, inner = P.idx.inner;
      // (o, j) counted rather than divided out of r, as in gather_elems.
      for (int64_t o = 0, r = 0; o < P.idx.outer; ++o)
        for (int64_t j = 0; j < k; ++j, ++r) {
          T* out_o = po + P.outer[o];
          const T* s = ps + Q.outer[o] + j * Q.xstride;
          if (ix.rows) {  // a contiguous row of each: vectorizable
            out_o += p[r] * P.xstride;
            for (int64_t i = 0; i < inner; ++i) out_o[i] += s[i];
          } else if (inner == 1) {
            out_o[p[r] * P.xstride] += *s;
          } else {
            for (int64_t i = 0; i < inner; ++i) out_o[p[r * inner + i] * P.xstride + P.inner[i]] += s[Q.inner[i]];
          }
        }
    }
  });
}

// scatter_add of grad into zeros of x's shape, in x's dtype.
Tensor gather_grad(const Tensor& grad, const Shape& xsizes, DType xdtype, int64_t dim, const Index& ix) {
  const DType acc = acc_dtype(xdtype);
  if (grad.device() == Device::CUDA) {  // ix is the whole index there (never `rows`)
    Tensor gx = zeros_on_device(xsizes, acc);
    scatter_add_cuda(gx, dim, ix.idx, grad.to(acc));
    return gx.to(xdtype);
  }
  Tensor gx = zeros(xsizes, acc);
  scatter_add_into(gx, dim, ix, grad.to(acc).contiguous());
  return gx.to(xdtype);
}

// The dtype scatter_add adds in: 16-bit floats in float32, bool in int64 (a
// sum converted back to bool is PyTorch's logical or).
DType scatter_dtype(DType d) { return d == kFloat16 || d == kBFloat16 ? kFloat32 : d == kBool ? kInt64 : d; }

std::string scatter_shapes(const Tensor& self, const Tensor& index, const Tensor& src) {
  return "self shape " + shape_str(self.sizes()) + ", index shape " + shape_str(index.sizes()) + ", src shape " +
         shape_str(src.sizes());
}

// torch.scatter_add's checks; returns dim wrapped.
int64_t check_scatter_add(const char* op, const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  detail::check_defined(op, src);
  check_same_device(op, self, src, "src");
  const int64_t d = check_index_op(op, self, dim, index, false);
  const auto shapes = [&] {  // the message's shapes, built only on failure
    return std::string(" (" + scatter_shapes(self, index, src) + ")");
  };
  if (index.dim() != self.dim() || src.dim() != self.dim())
    throw Error(std::string(op) + ": index and src must have self's number of dims" + shapes());
  if (src.dtype() != self.dtype())
    throw Error(std::string(op) + ": expected src of self's dtype " + std::string(dtype_name(self.dtype())) + ", got " +
                std::string(dtype_name(src.dtype())) + shapes());
  for (int64_t i = 0; i < self.dim(); ++i)
    if (index.size(i) > src.size(i) || (i != d && index.size(i) > self.size(i)))
      throw Error(std::string(op) + ": the index is larger than " + (index.size(i) > src.size(i) ? "src" : "self") +
                  " in dim " + std::to_string(i) + shapes());
  return d;
}

Tensor scatter_add_impl(const Tensor& self, int64_t d, const Index& ix, const Tensor& src) {
  const DType work = scatter_dtype(self.dtype());
  Tensor out = self.to(work).contiguous().clone();
  if (out.device() == Device::CUDA) {
    scatter_add_cuda(out, d, ix.idx, src.to(work));
    return out.to(self.dtype());
  }
  // A strided src is read in place (a slice, say), except by whole rows.
  scatter_add_into(out, d, ix, ix.rows ? src.to(work).contiguous() : src.to(work));
  return out.to(self.dtype());
}

// src's gradient: grad read at the scattered positions, zeros where src reaches
// past the index (PyTorch's grad.gather(dim, index) when they have one shape).
Tensor scatter_src_grad(const Tensor& grad, const Shape& ssizes, DType sdtype, int64_t dim, const Index& ix) {
  const DType acc = acc_dtype(sdtype);
  if (grad.device() == Device::CUDA) {  // gs[at] = grad[at with dim := index]
    Tensor gs = zeros_on_device(ssizes, acc);
    const Tensor g = grad.to(acc);
    detail::cuda_index_walk(false, gs, g, ix.idx, ix.idx.sizes(), ix.idx.strides(), dim, false, g.size(dim));
    return gs.to(sdtype);
  }
  const Tensor g = grad.to(acc).contiguous();
  Tensor gs = zeros(ssizes, acc);
  const GatherPlan P = gather_plan(g.sizes(), ix.shape, dim);
  const GatherPlan Q = gather_plan(ssizes, ix.shape, dim);
  const int64_t* p = ix.idx.data_ptr<int64_t>();
  dispatch_dtype(acc, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_floating_point_v<T>) {
      const T* pg = g.data_ptr<T>();
      T* ps = gs.data_ptr<T>();
      const int64_t k = P.idx.n, inner = P.idx.inner;
      for (int64_t r = 0; r < P.idx.outer * k; ++r) {
        T* s = ps + Q.outer[r / k] + (r % k) * Q.xstride;
        const T* from = pg + P.outer[r / k];
        if (ix.rows) {
          std::memcpy(s, from + p[r] * P.xstride, sizeof(T) * inner);
          continue;
        }
        for (int64_t i = 0; i < inner; ++i) s[Q.inner[i]] = from[p[r * inner + i] * P.xstride + P.inner[i]];
      }
    }
  });
  return gs.to(sdtype);
}

// ---- cumsum -------------------------------------------------------------------

// The running sums of lines [line, line + B) along a dim, in lockstep: each
// line's sum is a chain of dependent adds, and B independent chains hide each
// other's latency (one line at a time was bound by it). Every line still adds
// in its own order, so the bits are those of one line at a time.
template <int B, class T, class Acc>
void cumsum_lines(const T* in, T* o, int64_t line, const Around& a, bool reverse) {
  int64_t base[B];
  Acc s[B];
  for (int b = 0; b < B; ++b) {
    base[b] = ((line + b) / a.inner) * a.n * a.inner + (line + b) % a.inner;
    s[b] = 0;
  }
  const int64_t step = reverse ? -a.inner : a.inner;
  for (int64_t j = 0, off = reverse ? (a.n - 1) * a.inner : 0; j < a.n; ++j, off += step) {
#pragma GCC unroll 8
    for (int b = 0; b < B; ++b) {
      s[b] += static_cast<Acc>(in[base[b] + off]);
      o[base[b] + off] = static_cast<T>(s[b]);
    }
  }
}

// The running sum along dim (from the end with `reverse`), accumulated in
// double (int64 for integers, as PyTorch's CPU kernel); bool and integers
// give int64.
Tensor cumsum_impl(const Tensor& x_in, int64_t dim, bool reverse) {
  const DType out_dtype = is_floating(x_in.dtype()) ? x_in.dtype() : kInt64;
  const Tensor x = x_in.to(opmath_dtype(out_dtype)).contiguous();
  if (x.device() == Device::CUDA) return detail::cuda_cumsum(x, x.dim() == 0 ? 0 : dim, reverse).to(out_dtype);
  Tensor out = empty(x.sizes(), x.dtype());
  const Around a = around(x.sizes(), x.dim() == 0 ? 0 : dim);
  dispatch_dtype(x.dtype(), [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, int64_t>) {
      using Acc = std::conditional_t<std::is_same_v<T, int64_t>, int64_t, double>;
      const T* in = x.data_ptr<T>();
      T* o = out.data_ptr<T>();
      cpu::parallel_for(a.outer * a.inner, std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(a.n, 1)),
                        [&](int64_t begin, int64_t end) {
                          int64_t line = begin;
                          for (; line + 8 <= end; line += 8) cumsum_lines<8, T, Acc>(in, o, line, a, reverse);
                          for (; line < end; ++line) cumsum_lines<1, T, Acc>(in, o, line, a, reverse);
                        });
    }
  });
  return out.to(out_dtype);
}

void check_bmm(const Tensor& a, const Tensor& b) {
  detail::check_defined("bmm", a);
  detail::check_defined("bmm", b);
  // The message is built only on failure: this runs on every call.
  const auto shapes = [&] { return "shapes " + shape_str(a.sizes()) + " and " + shape_str(b.sizes()); };
  if (a.dim() != 3 || b.dim() != 3)
    throw Error("bmm: expected two 3-D tensors [B, n, k] and [B, k, m], got " + shapes());
  if (a.size(0) != b.size(0)) throw Error("bmm: the batch sizes differ, got " + shapes());
  if (a.size(2) != b.size(1)) throw Error("bmm: the inner dims differ, got " + shapes());
  if (a.dtype() != b.dtype())
    throw Error("bmm: expected one dtype, got " + std::string(dtype_name(a.dtype())) + " and " +
                std::string(dtype_name(b.dtype())) + " (" + shapes() + ")");
}

}  // namespace

Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index) {
  if (detail::tracing())
    return detail::trace_op("index_select", {x, index}, {{"dim", dim}}, [&] { return index_select(x, dim, index); });
  const int64_t d = check_index_op("index_select", x, dim, index, true);
  if (index.dim() > 1)
    throw Error("index_select: expected a 1-D (or 0-d) index, got " + shapes_of(x, index));
  const Tensor idx = index.to(kInt64).contiguous();
  check_range_of("index_select", idx, d, x.size(d), x, index);
  const Shape xs = x.sizes();
  const DType xd = x.dtype();
  const Tensor out = x.device() == Device::CUDA ? index_select_cuda(x, d, idx) : index_select_impl(x, d, idx);
  return autograd::record_unary("index_select", out, x, [xs, xd, d, idx](const Tensor& g) {
    return index_select_grad(g, xs, xd, d, idx);
  });
}

Tensor gather(const Tensor& x, int64_t dim, const Tensor& index) {
  if (detail::tracing())
    return detail::trace_op("gather", {x, index}, {{"dim", dim}}, [&] { return gather(x, dim, index); });
  const int64_t d = check_index_op("gather", x, dim, index, false);
  if (index.dim() != x.dim())
    throw Error("gather: the index must have the input's number of dims, got " + shapes_of(x, index));
  for (int64_t i = 0; i < x.dim(); ++i)
    if (i != d && index.size(i) > x.size(i))
      throw Error("gather: the index is larger than the input in dim " + std::to_string(i) + " (" +
                  shapes_of(x, index) + ")");
  if (x.device() == Device::CUDA) {
    const Index ix{index.contiguous(), index.sizes(), false};
    check_range_of("gather", ix.idx, d, x.size(d), x, index);
    const Shape xs = x.sizes();
    const DType xd = x.dtype();
    return autograd::record_unary("gather", gather_cuda(x, d, ix.idx), x,
                                  [xs, xd, d, ix](const Tensor& g) { return gather_grad(g, xs, xd, d, ix); });
  }
  if (gathers_rows(x, d, index) && !(is_floating(x.dtype()) && autograd::needs_grad({&x}))) {
    check_range("gather", index.data_ptr<int64_t>(), index.numel(), d, x.sizes()[d], x, index);
    return gather_rows(x, index);  // nothing to record
  }
  const Index ix = index_of(index, d, {x.sizes()});
  check_range("gather", ix.idx.data_ptr<int64_t>(), ix.idx.numel(), d, x.size(d), x, index);
  const Shape xs = x.sizes();
  const DType xd = x.dtype();
  return autograd::record_unary("gather", gather_impl(x, d, ix), x, [xs, xd, d, ix](const Tensor& g) {
    return gather_grad(g, xs, xd, d, ix);
  });
}

Tensor cumsum(const Tensor& x, int64_t dim) {
  if (detail::tracing()) return detail::trace_op("cumsum", {x}, {{"dim", dim}}, [&] { return cumsum(x, dim); });
  detail::check_defined("cumsum", x);
  const int64_t d = detail::wrap_dim("cumsum", dim, x.sizes());
  return autograd::record_unary("cumsum", cumsum_impl(x, d, false), x,
                                [d](const Tensor& g) { return cumsum_impl(g, d, true); });
}

Tensor bmm(const Tensor& a, const Tensor& b) {
  if (detail::tracing()) return detail::trace_op("bmm", {a, b}, {}, [&] { return bmm(a, b); });
  check_bmm(a, b);
  return matmul(a, b);  // matmul's batched GEMMs and its autograd node
}

Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src) {
  if (detail::tracing())
    return detail::trace_op("scatter_add", {self, index, src}, {{"dim", dim}},
                            [&] { return scatter_add(self, dim, index, src); });
  const int64_t d = check_scatter_add("scatter_add", self, dim, index, src);
  const Index ix = self.device() == Device::CUDA ? Index{index.contiguous(), index.sizes(), false}
                                                 : index_of(index, d, {self.sizes(), src.sizes()});
  check_range_of("scatter_add", ix.idx, d, self.size(d), self, index);
  Tensor out = scatter_add_impl(self, d, ix, src);
  if (!is_floating(out.dtype()) || !autograd::needs_grad({&self, &src})) return out;
  autograd::record("scatter_add", out, {self, src},
                   [d, ix, ss = src.sizes(), sd = src.dtype()](const Tensor& g) -> std::vector<Tensor> {
                     return {g, scatter_src_grad(g, ss, sd, d, ix)};
                   });
  return out;
}

Tensor Tensor::scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const {
  return ::graph::scatter_add(*this, dim, index, src);
}
Tensor Tensor::index_select(int64_t dim, const Tensor& index) const { return ::graph::index_select(*this, dim, index); }
Tensor Tensor::gather(int64_t dim, const Tensor& index) const { return ::graph::gather(*this, dim, index); }
Tensor Tensor::cumsum(int64_t dim) const { return ::graph::cumsum(*this, dim); }
Tensor Tensor::bmm(const Tensor& b) const { return ::graph::bmm(*this, b); }

namespace detail {

std::vector<Tensor> index_select_backward(const Tensor& grad, const Tensor& x, const Tensor& index, int64_t dim,
                                          GradMask mask) {
  observe_grad_mask("index_select_backward", mask);
  if (!wants(mask, 0)) return {Tensor(), Tensor()};
  const int64_t d = check_index_op("index_select_backward", x, dim, index, true);
  const Tensor idx = index.to(kInt64).contiguous();
  check_range_of("index_select_backward", idx, d, x.size(d), x, index, false);
  return {index_select_grad(grad, x.sizes(), x.dtype(), d, idx), Tensor()};
}

std::vector<Tensor> gather_backward(const Tensor& grad, const Tensor& x, const Tensor& index, int64_t dim,
                                    GradMask mask) {
  observe_grad_mask("gather_backward", mask);
  if (!wants(mask, 0)) return {Tensor(), Tensor()};
  const int64_t d = check_index_op("gather_backward", x, dim, index, false);
  if (index.dim() != x.dim() || grad.sizes() != index.sizes())
    throw Error("gather_backward: expected an index of the input's rank and a gradient of its shape, got " +
                shapes_of(x, index) + ", gradient shape " + shape_str(grad.sizes()));
  const Index ix = x.device() == Device::CUDA ? Index{index.contiguous(), index.sizes(), false}
                                              : index_of(index, d, {x.sizes()});
  check_range_of("gather_backward", ix.idx, d, x.size(d), x, index, false);
  return {gather_grad(grad, x.sizes(), x.dtype(), d, ix), Tensor()};
}

std::vector<Tensor> cumsum_backward(const Tensor& grad, const Tensor& x, int64_t dim, GradMask mask) {
  observe_grad_mask("cumsum_backward", mask);
  if (!wants(mask, 0)) return {Tensor()};
  const int64_t d = wrap_dim("cumsum_backward", dim, x.sizes());
  Tensor g = cumsum_impl(grad, d, true);
  return {is_floating(x.dtype()) ? g.to(x.dtype()) : g};
}

std::vector<Tensor> bmm_backward(const Tensor& grad, const Tensor& a, const Tensor& b, GradMask mask) {
  check_bmm(a, b);
  return matmul_backward(grad, a, b, mask);
}

std::vector<Tensor> scatter_add_backward(const Tensor& grad, const Tensor& self, const Tensor& index,
                                         const Tensor& src, int64_t dim, GradMask mask) {
  observe_grad_mask("scatter_add_backward", mask);
  const int64_t d = check_scatter_add("scatter_add_backward", self, dim, index, src);
  if (grad.sizes() != self.sizes())
    throw Error("scatter_add_backward: expected a gradient of self's shape, got " + shape_str(grad.sizes()) + " (" +
                scatter_shapes(self, index, src) + ")");
  const Index ix = self.device() == Device::CUDA ? Index{index.contiguous(), index.sizes(), false}
                                                 : index_of(index, d, {self.sizes(), src.sizes()});
  check_range_of("scatter_add_backward", ix.idx, d, self.size(d), self, index, false);
  return {wants(mask, 0) ? grad.to(self.dtype()) : Tensor(), Tensor(),
          wants(mask, 2) ? scatter_src_grad(grad, src.sizes(), src.dtype(), d, ix) : Tensor()};
}

}  // namespace detail

}  // namespace graph
