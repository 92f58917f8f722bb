// argsort (issue 19), the kernel of sort and topk (inline in ops.h: argsort,
// all of it or its first k, then gather), and the eager checks of topk and
// norm's string p.
#include <algorithm>
#include <bit>
#include <cstdint>
#include <type_traits>
#include <numeric>
#include <utility>
#include <string>
#include <vector>

#include "graph/ops.h"
#include "graph/parallel.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

// An unsigned key whose order is the value order argsort wants: NaN (any
// payload) the largest, -0.0 equal to 0.0, as PyTorch compares them. Written
// with selects and masks only: the keys of random data are built with no
// mispredicted branch (they were half of a topk's time with branches).
template <class T>
auto order_key(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    U bits = std::bit_cast<U>(v);
    bits = v == T(0) ? U(0) : bits;
    const U flip = U(U(0) - (bits >> (sizeof(T) * 8 - 1))) | sign;  // negative: all bits; else the sign bit
    const U key = bits ^ flip;
    return v != v ? U(~U(0)) : key;
  } else if constexpr (std::is_same_v<T, bool>) {
    return uint32_t(v);
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr U flip = std::is_signed_v<T> ? U(U(1) << (sizeof(T) * 8 - 1)) : U(0);
    return U(U(v) ^ flip);
  }
}

// The permutation that sorts each line along dim, stably, or its first k
// indices (k < n: topk, a partial sort, O(n log k)). Each element is sorted
// as (key, position): the position breaks ties, which is the stable order
// without stable_sort's buffer; descending inverts the key only, so ties stay
// in position order there too. Keys of at most 32 bits and a position below
// 2^32 pack into one uint64 (`packed`), the fastest thing std::sort can
// compare. out has the lines' shape with k in place of n.
template <class T, bool packed>
void argsort_lines(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner, int64_t k, bool descending) {
  using K = decltype(order_key(T{}));
  using Item = std::conditional_t<packed, uint64_t, std::pair<uint64_t, int64_t>>;
  const K flip = descending ? K(~K(0)) : K(0);
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n * 8, 1));
  cpu::parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<Item> line(static_cast<size_t>(n));
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      const auto item = [&](T v, int64_t j) {
        const K key = K(order_key(v) ^ flip);
        if constexpr (packed) return Item(uint64_t(key) << 32 | uint64_t(j));
        else return Item{uint64_t(key), j};
      };
      if (inner == 1)  // a plain loop for the common last-dim case
        for (int64_t j = 0; j < n; ++j) line[j] = item(x[base + j], j);
      else
        for (int64_t j = 0; j < n; ++j) line[j] = item(x[base + j * inner], j);
      if (k < n) std::partial_sort(line.begin(), line.begin() + k, line.end());
      else std::sort(line.begin(), line.end());
      const int64_t at = (l / inner) * k * inner + l % inner;
      for (int64_t j = 0; j < k; ++j) {
        if constexpr (packed) out[at + j * inner] = int64_t(line[j] & 0xffffffffu);
        else out[at + j * inner] = line[j].second;
      }
    }
  });
}

// argsort's first k indices along dim (k < 0: all of them).
Tensor argsort_impl(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  const char* name = k < 0 ? "argsort" : "topk";
  detail::check_defined(name, x);
  if (x.device() == Device::CUDA)
    throw Error(std::string(name) + ": no CUDA kernel yet, got a cuda tensor of shape " + shape_str(x.sizes()) +
                "; move it with .to(kCPU)");
  const int64_t d = detail::wrap_dim(name, dim, x.sizes());
  if (k >= 0) detail::check_topk(x, k, dim);
  if (x.dim() == 0) return k == 0 ? empty({0}, kInt64) : zeros({}, kInt64);
  const int64_t n = x.size(d);
  if (k < 0) k = n;
  // 16-bit floats sort in float32 (the same order); the rest as they are.
  const Tensor xc = x.to(opmath_dtype(x.dtype())).contiguous();
  Shape shape = x.sizes();
  shape[d] = k;
  Tensor out = empty(shape, kInt64);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.dim(); ++i) (i < d ? outer : inner) *= i == d ? 1 : x.size(i);
  dispatch_opmath(xc.dtype(), [&](auto v) {
    using T = decltype(v);
    int64_t* o = out.data_ptr<int64_t>();
    if constexpr (sizeof(order_key(T{})) <= 4) {
      if (n <= int64_t{1} << 32) return argsort_lines<T, true>(xc.data_ptr<T>(), o, outer, n, inner, k, descending);
    }
    argsort_lines<T, false>(xc.data_ptr<T>(), o, outer, n, inner, k, descending);
  });
  return out;
}

}  // namespace

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  if (detail::tracing())
    return detail::trace_op("argsort", {x}, {{"dim", dim}, {"descending", descending}},
                            [&] { return argsort(x, dim, descending); });
  return argsort_impl(x, dim, descending, -1);
}

Tensor detail::argsort_first(const Tensor& x, int64_t dim, bool descending, int64_t k) {
  if (detail::tracing())
    return detail::trace_op("argsort", {x}, {{"dim", dim}, {"descending", descending}, {"k", k}},
                            [&] { return argsort_first(x, dim, descending, k); });
  return argsort_impl(x, dim, descending, k);
}

namespace detail {

void check_topk(const Tensor& x, int64_t k, int64_t dim) {
  check_defined("topk", x);
  const int64_t d = wrap_dim("topk", dim, x.sizes());
  const int64_t n = x.dim() == 0 ? 1 : x.size(d);
  if (k < 0 || k > n)
    throw Error("topk: k = " + std::to_string(k) + " is out of range for dim " + std::to_string(d) + " of size " +
                std::to_string(n) + " (input shape " + shape_str(x.sizes()) + ")");
}

double norm_p(std::string_view p) {
  if (p == "fro") return 2.0;
  throw Error("norm: p = \"" + std::string(p) +
              "\" is not supported (\"fro\" is; the matrix norm \"nuc\" is not): give p as a number, "
              "2, 1, INFINITY or another value");
}

}  // namespace detail

}  // namespace graph
