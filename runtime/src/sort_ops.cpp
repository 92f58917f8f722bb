// argsort (issue 19), the kernel of sort and topk (inline in ops.h: argsort,
// then gather), and the eager checks of topk and norm's string p.
#include <algorithm>
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

// The permutation that sorts each line along dim, stably; NaN (x != x) is the
// largest value, so it comes last ascending and first descending, as PyTorch.
template <class T>
void argsort_lines(const T* x, int64_t* out, int64_t outer, int64_t n, int64_t inner, bool descending) {
  auto before = [descending](T a, T b) {
    const bool na = a != a, nb = b != b;
    return descending ? (na && !nb) || a > b : (!na && nb) || a < b;
  };
  // (value, position) pairs sorted with the position as the tie-break: the
  // stable order, without stable_sort's buffer per line nor indirect reads.
  auto pair_before = [&](const std::pair<T, int64_t>& a, const std::pair<T, int64_t>& b) {
    return before(a.first, b.first) || (!before(b.first, a.first) && a.second < b.second);
  };
  const int64_t grain = std::max<int64_t>(1, cpu::kElementwiseGrain / std::max<int64_t>(n * 8, 1));
  cpu::parallel_for(outer * inner, grain, [&](int64_t begin, int64_t end) {
    std::vector<std::pair<T, int64_t>> line(static_cast<size_t>(n));
    for (int64_t l = begin; l < end; ++l) {
      const int64_t base = (l / inner) * n * inner + l % inner;
      for (int64_t j = 0; j < n; ++j) line[j] = {x[base + j * inner], j};
      std::sort(line.begin(), line.end(), pair_before);
      for (int64_t j = 0; j < n; ++j) out[base + j * inner] = line[j].second;
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
    argsort_lines<T>(xc.data_ptr<T>(), out.data_ptr<int64_t>(), outer, x.size(d), inner, descending);
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
