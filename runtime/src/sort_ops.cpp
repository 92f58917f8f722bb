// argsort (issue 19), the kernel of sort and topk (inline in ops.h: argsort,
// then gather), and the eager checks of topk and norm's string p.
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
// payload) the largest, -0.0 equal to 0.0, as PyTorch compares them.
template <class T>
auto order_key(T v) {
  if constexpr (std::is_floating_point_v<T>) {
    using U = std::conditional_t<sizeof(T) == 8, uint64_t, uint32_t>;
    constexpr U sign = U(1) << (sizeof(T) * 8 - 1);
    if (v != v) return ~U(0);
    const U bits = std::bit_cast<U>(v == T(0) ? T(0) : v);
    return (bits & sign) ? U(~bits) : U(bits | sign);
  } else if constexpr (std::is_same_v<T, bool>) {
    return uint32_t(v);
  } else {
    using U = std::make_unsigned_t<T>;
    constexpr U flip = std::is_signed_v<T> ? U(U(1) << (sizeof(T) * 8 - 1)) : U(0);
    return U(U(v) ^ flip);
  }
}

// The permutation that sorts each line along dim, stably. Each element is
// sorted as (key, position): the position breaks ties, which is the stable
// order without stable_sort's buffer; descending inverts the key only, so
// ties stay in position order there too. Keys of at most 32 bits and a
// position below 2^32 pack into one uint64 (`packed`), the fastest thing
// std::sort can compare.
template <class T, bool packed>
void argsort_lines(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool descending) {
  using K = decltype(order_key(T{}));
  using Item = std::conditional_t<packed, uint64_t, std::pair<uint64_t, int64_t>>;
  const K flip = descending ? K(~K(0)) : K(0);
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n * 8, 1));
  cpu::parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<Item> line(static_cast<size_t>(n));
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      for (int64_t j = 0; j < n; ++j) {
        const K key = K(order_key(x[base + j * inner]) ^ flip);
        if constexpr (packed) line[j] = uint64_t(key) << 32 | uint64_t(j);
        else line[j] = {uint64_t(key), j};
      }
      std::sort(line.begin(), line.end());
      for (int64_t j = 0; j < n; ++j) {
        if constexpr (packed) out[base + j * inner] = int64_t(line[j] & 0xffffffffu);
        else out[base + j * inner] = line[j].second;
      }
    }
  });
}

}  // namespace

Tensor argsort(const Tensor& x, int64_t dim, bool descending) {
  if (detail::tracing())
    return detail::trace_op("argsort", {x}, {{"dim", dim}, {"descending", descending}},
                            [&] { return argsort(x, dim, descending); });
  detail::check_defined("argsort", x);
  if (x.device() == Device::CUDA)
    throw Error("argsort: no CUDA kernel yet, got a cuda tensor of shape " + shape_str(x.sizes()) +
                "; move it with .to(kCPU)");
  const int64_t d = detail::wrap_dim("argsort", dim, x.sizes());
  if (x.dim() == 0) return zeros({}, kInt64);
  // 16-bit floats sort in float32 (the same order); the rest as they are.
  const Tensor xc = x.to(opmath_dtype(x.dtype())).contiguous();
  Tensor out = empty(x.sizes(), kInt64);
  int64_t outer = 1, inner = 1;
  for (int64_t i = 0; i < x.dim(); ++i) (i < d ? outer : inner) *= i == d ? 1 : x.size(i);
  dispatch_opmath(xc.dtype(), [&](auto v) {
    using T = decltype(v);
    const int64_t n = x.size(d);
    if constexpr (sizeof(order_key(T{})) <= 4) {
      if (n <= int64_t{1} << 32)
        return argsort_lines<T, true>(xc.data_ptr<T>(), out.data_ptr<int64_t>(), outer, n, inner, descending);
    }
    argsort_lines<T, false>(xc.data_ptr<T>(), out.data_ptr<int64_t>(), outer, n, inner, descending);
  });
  return out;
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
