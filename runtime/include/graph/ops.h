#pragma once
// Eager ops. Each declaration names its op-table entry (GRAPH_OP), so the
// plugin maps a call to the IR op by declaration. Elementwise ops broadcast as
// NumPy/PyTorch do and promote dtypes (bool < int64 < float32); bad shapes or
// dtypes throw graph::Error naming the op and the operand shapes.
#include <algorithm>
#include <cmath>
#include <string_view>
#include <tuple>

#include "graph/tensor.h"

namespace graph {

// ---- elementwise, unary -------------------------------------------------
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) GRAPH_OP(#name) Tensor name(const Tensor& x);
#include "graph/ops.def"

// ---- elementwise, binary: tensor-tensor, tensor-scalar, scalar-tensor ---
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                  \
  GRAPH_OP(#name) Tensor name(const Tensor& a, const Tensor& b); \
  GRAPH_OP(#name) Tensor name(const Tensor& a, Scalar b);        \
  GRAPH_OP(#name) Tensor name(Scalar a, const Tensor& b);
#include "graph/ops.def"

// PyTorch's defaults of the ops whose scalar parameter is their second
// operand (ops.def); leaky_relu(x, Scalar negative_slope), elu(x, Scalar alpha).
Tensor leaky_relu(const Tensor& a, Scalar b = 0.01);
Tensor elu(const Tensor& a, Scalar b = 1.0);

// clamp(x, lo, hi) = clamp_max(clamp_min(x, lo), hi), as PyTorch computes it
// (hi wins where lo > hi); the two ops fuse in static graphs. Inline, so
// the plugin lowers it. hardtanh is clamp with PyTorch's default bounds.
inline Tensor clamp(const Tensor& x, Scalar lo, Scalar hi) { return clamp_max(clamp_min(x, lo), hi); }
inline Tensor Tensor::clamp(Scalar lo, Scalar hi) const { return graph::clamp(*this, lo, hi); }
inline Tensor hardtanh(const Tensor& x, Scalar min_val = -1.0, Scalar max_val = 1.0) {
  return clamp_max(clamp_min(x, min_val), max_val);
}

// ---- reductions ---------------------------------------------------------
// Over the whole tensor (0-d result), along one dim, or over a set of dims;
// keepdim keeps reduced dims as size 1. sum of integral/bool gives int64;
// mean needs a floating dtype; amax/amin propagate NaN.
GRAPH_OP("sum") Tensor sum(const Tensor& x);
GRAPH_OP("sum") Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);
GRAPH_OP("sum") Tensor sum(const Tensor& x, const Shape& dim, bool keepdim = false);
GRAPH_OP("mean") Tensor mean(const Tensor& x);
GRAPH_OP("mean") Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
GRAPH_OP("mean") Tensor mean(const Tensor& x, const Shape& dim, bool keepdim = false);
GRAPH_OP("amax") Tensor amax(const Tensor& x);
GRAPH_OP("amax") Tensor amax(const Tensor& x, const Shape& dim, bool keepdim = false);
GRAPH_OP("amin") Tensor amin(const Tensor& x);
GRAPH_OP("amin") Tensor amin(const Tensor& x, const Shape& dim, bool keepdim = false);
GRAPH_OP("argmax") Tensor argmax(const Tensor& x);  // index into the flattened tensor
GRAPH_OP("argmax") Tensor argmax(const Tensor& x, int64_t dim, bool keepdim = false);
GRAPH_OP("softmax") Tensor softmax(const Tensor& x, int64_t dim);
GRAPH_OP("log_softmax") Tensor log_softmax(const Tensor& x, int64_t dim);

// ---- selection ----------------------------------------------------------
// where(cond, a, b): a where cond is true, else b (broadcasting all three).
GRAPH_OP("where") Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
// masked_fill(x, mask, value): value where the bool mask is true, x elsewhere
// (broadcasting x and mask), in x's dtype. The 5-argument form is the kernel
// of where with a host scalar: invert fills where the mask is false, and
// promote raises the dtype to value's category (int64 x, 0.5 -> float32).
GRAPH_OP("masked_fill") Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value);
GRAPH_OP("masked_fill") Tensor masked_fill(const Tensor& x, const Tensor& mask, Scalar value, bool invert, bool promote);
// where(cond, a, s) / where(cond, s, b): a scalar operand, PyTorch's dtypes.
inline Tensor where(const Tensor& cond, const Tensor& a, Scalar b) { return masked_fill(a, cond, b, true, true); }
inline Tensor where(const Tensor& cond, Scalar a, const Tensor& b) { return masked_fill(b, cond, a, false, true); }
// triu / tril: the upper (lower) triangle of the last two dims, from the
// `diagonal`-th diagonal on (above the main one when positive); zeros elsewhere.
GRAPH_OP("triu") Tensor triu(const Tensor& x, int64_t diagonal = 0);
GRAPH_OP("tril") Tensor tril(const Tensor& x, int64_t diagonal = 0);
// index_select(x, dim, index): x's slices along dim at the 1-D int64 (or
// int32) index; gather(x, dim, index): out[i][j][k] = x[i][index[i][j][k]][k]
// for dim 1, index int64 of x's rank. Indices out of range are errors.
GRAPH_OP("index_select") Tensor index_select(const Tensor& x, int64_t dim, const Tensor& index);
GRAPH_OP("gather") Tensor gather(const Tensor& x, int64_t dim, const Tensor& index);
// cumsum(x, dim): running sums along dim; bool and integers give int64.
GRAPH_OP("cumsum") Tensor cumsum(const Tensor& x, int64_t dim);

// scatter_add(self, dim, index, src): self with src[i][j][k] added at
// [i][index[i][j][k]][k] (dim 1), as torch.scatter_add: index int64 of self's
// rank, no larger than src anywhere nor than self outside dim; self and src of
// one dtype. Repeated indices add up. Out of place.
GRAPH_OP("scatter_add") Tensor scatter_add(const Tensor& self, int64_t dim, const Tensor& index, const Tensor& src);
// argsort(x, dim, descending): int64 indices that sort x along dim, stable
// (equal elements keep their order, as torch.sort(stable=True)); NaN sorts as
// the largest value. Not differentiable (sort's values are, through gather).
GRAPH_OP("argsort") Tensor argsort(const Tensor& x, int64_t dim = -1, bool descending = false);
namespace detail {
// The first k indices of argsort along dim, found by a partial selection
// (topk's kernel); k in [0, size of dim].
GRAPH_OP("argsort") Tensor argsort_first(const Tensor& x, int64_t dim, bool descending, int64_t k);
}  // namespace detail

// ---- library ------------------------------------------------------------
// Matrix product with PyTorch's matmul semantics: 1-D operands are vectors,
// leading (batch) dims broadcast. float32/float64 through the CPU BLAS.
GRAPH_OP("matmul") Tensor matmul(const Tensor& a, const Tensor& b);
// bmm(a [B, n, k], b [B, k, m]) -> [B, n, m]: matmul's batched GEMMs, no broadcasting.
GRAPH_OP("bmm") Tensor bmm(const Tensor& a, const Tensor& b);

// ---- operators ----------------------------------------------------------
#define GRAPH_DEFINE_BINARY_OPERATOR(sym, name)                                                  \
  GRAPH_OP(#name) inline Tensor operator sym(const Tensor& a, const Tensor& b) { return name(a, b); } \
  GRAPH_OP(#name) inline Tensor operator sym(const Tensor& a, Scalar b) { return name(a, b); }        \
  GRAPH_OP(#name) inline Tensor operator sym(Scalar a, const Tensor& b) { return name(a, b); }
GRAPH_DEFINE_BINARY_OPERATOR(+, add)
GRAPH_DEFINE_BINARY_OPERATOR(-, sub)
GRAPH_DEFINE_BINARY_OPERATOR(*, mul)
GRAPH_DEFINE_BINARY_OPERATOR(/, div)
GRAPH_DEFINE_BINARY_OPERATOR(<, lt)
GRAPH_DEFINE_BINARY_OPERATOR(<=, le)
GRAPH_DEFINE_BINARY_OPERATOR(>, gt)
GRAPH_DEFINE_BINARY_OPERATOR(>=, ge)
GRAPH_DEFINE_BINARY_OPERATOR(==, eq)
GRAPH_DEFINE_BINARY_OPERATOR(!=, ne)
#undef GRAPH_DEFINE_BINARY_OPERATOR
GRAPH_OP("neg") inline Tensor operator-(const Tensor& x) { return neg(x); }

GRAPH_OP("logical_not") inline Tensor operator!(const Tensor& x) { return logical_not(x); }

// `h += x` rebinds h to h + x: a new tensor, as `h = h + x` (views of the old
// value keep it; nothing is written in place). Static graphs lower it so.
#define GRAPH_DEFINE_COMPOUND_OPERATOR(sym, name)                                           \
  inline Tensor& operator sym##=(Tensor& a, const Tensor& b) { return a = name(a, b); } \
  inline Tensor& operator sym##=(Tensor& a, Scalar b) { return a = name(a, b); }
GRAPH_DEFINE_COMPOUND_OPERATOR(+, add)
GRAPH_DEFINE_COMPOUND_OPERATOR(-, sub)
GRAPH_DEFINE_COMPOUND_OPERATOR(*, mul)
GRAPH_DEFINE_COMPOUND_OPERATOR(/, div)
#undef GRAPH_DEFINE_COMPOUND_OPERATOR

// ---- reductions built from the ops above --------------------------------
// logsumexp, var and std are decompositions into the ops above (no table
// entry): inline, so the plugin lowers them like user code, the reductions stay
// the vectorized sum/amax/mean kernels, and their gradients are those ops'.
// logsumexp(x, dims, keepdim) = m + log(sum(exp(x - m))), m the max over dims
// (taken as 0 where infinite, as PyTorch: a row of -inf gives -inf, not NaN).
// sum over m's size-1 dims drops them when !keepdim; its gradient is softmax.
inline Tensor logsumexp(const Tensor& x, const Shape& dims, bool keepdim = false) {
  Tensor m = amax(x, dims, true);
  m = where(abs(m) == INFINITY, 0.0, m);
  return log(sum(exp(x - m), dims, keepdim)) + sum(m, dims, keepdim);
}
// var(x, dims, correction, keepdim): sum((x - mean)^2) / max(0, n - correction),
// n the count over dims (PyTorch: correction 1 is unbiased, a bool converts to
// it; correction >= n divides by 0, giving inf, or nan for a zero sum). var(x)
// reduces every dim, unbiased. Two passes (mean, then squared deviations).
inline Tensor var(const Tensor& x, const Shape& dims, double correction = 1.0, bool keepdim = false) {
  Tensor d = x - mean(x, dims, true);
  Tensor ss = sum(d * d, dims, keepdim);
  const int64_t n = x.numel() / std::max<int64_t>(ss.numel(), 1);  // an empty x gives an empty ss
  return ss / std::max(0.0, static_cast<double>(n) - correction);
}
inline Tensor var(const Tensor& x) {
  Tensor d = x - mean(x);
  return sum(d * d) / std::max(0.0, static_cast<double>(x.numel()) - 1.0);
}
inline Tensor std(const Tensor& x, const Shape& dims, double correction = 1.0, bool keepdim = false) {
  return sqrt(var(x, dims, correction, keepdim));
}
inline Tensor std(const Tensor& x) { return sqrt(var(x)); }

// ---- parts along one dim (LibTorch's select, narrow, unbind, split, chunk) ----
// Views of x (no copy). select and narrow wrap negative dims and indices and
// check ranges as LibTorch does; select drops the dim. unbind(x, dim) is every
// select along dim, one op whose gradient is one stack of the pieces'
// gradients (O(numel), not a full-size tensor per piece). split cuts pieces of
// split_size (the last one shorter), or of the given sizes (their sum must be
// the dim's size); chunk(x, chunks) is split(x, ceil(size / chunks)), so it may
// give fewer than `chunks` pieces. select, narrow, split and chunk are built
// from slice (inline, so the plugin lowers them like user code; a piece's
// gradient is slice's); unbind is the list_unbind primitive in graphs.
namespace detail {
// Throw graph::Error naming the op, the argument and the shape (eager only; in
// a graph the same bad range fails in the op after it, see narrow).
GRAPH_EAGER_CHECK void check_select(const Tensor& x, int64_t dim, int64_t index);
GRAPH_EAGER_CHECK void check_narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length);
GRAPH_EAGER_CHECK void check_split(const char* op, const Tensor& x, int64_t size, int64_t dim);
GRAPH_EAGER_CHECK void check_split_sizes(const Tensor& x, const Shape& sizes, int64_t dim);
}  // namespace detail

// `dim` goes to slice and squeeze as given (a constant in graphs, which slice
// with run-time bounds needs); `d`, wrapped, indexes shapes.
inline Tensor narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  detail::check_narrow(x, dim, start, length);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  const int64_t n = x.size(d);
  const int64_t s = start < 0 && start >= -n ? start + n : start;
  // In a graph (no check) a bad range slices nothing and the expand to a
  // length of 1 fails, naming the shapes: never a wrong or clamped piece.
  const bool ok = length >= 0 && s >= 0 && s <= n - length;
  Shape want = x.sizes();
  want[d] = ok ? length : 1;
  return x.slice(dim, ok ? s : n, ok ? s + length : n + 1).expand(want);
}

inline Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  detail::check_select(x, dim, index);
  return narrow(x, dim, index, 1).squeeze(dim);
}

GRAPH_OP("list_unbind") std::vector<Tensor> unbind(const Tensor& x, int64_t dim = 0);

inline std::vector<Tensor> split(const Tensor& x, int64_t split_size, int64_t dim = 0) {
  detail::check_split("split", x, split_size, dim);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  const int64_t n = x.size(d);
  std::vector<Tensor> out;
  if (n == 0) out.push_back(x);  // LibTorch: one empty piece
  if (split_size <= 0 && n > 0) out.push_back(narrow(x, dim, 0, -1));  // in a graph: fails (see narrow)
  const int64_t step = split_size > 0 ? split_size : n;
  for (int64_t s = 0; s < n; s += step) out.push_back(x.slice(dim, s, std::min(s + step, n)));
  return out;
}

inline std::vector<Tensor> split(const Tensor& x, const Shape& split_sizes, int64_t dim = 0) {
  detail::check_split_sizes(x, split_sizes, dim);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  std::vector<Tensor> out;
  int64_t s = 0;
  const int64_t k = static_cast<int64_t>(split_sizes.size());
  for (int64_t i = 0; i < k; ++i) {
    out.push_back(narrow(x, dim, s, split_sizes[i]));  // in a graph, narrow checks each piece
    s += split_sizes[i];
  }
  if (s != x.size(d)) out.push_back(narrow(x, dim, 0, -1));  // sizes that do not add up: fails in a graph
  return out;
}

inline std::vector<Tensor> chunk(const Tensor& x, int64_t chunks, int64_t dim = 0) {
  detail::check_split("chunk", x, chunks, dim);
  const int64_t d = dim < 0 ? dim + x.dim() : dim;
  const int64_t n = x.size(d);
  std::vector<Tensor> out;
  if (chunks <= 0) out.push_back(narrow(x, dim, 0, -1));  // in a graph: fails (see narrow)
  if (n == 0)  // LibTorch: `chunks` empty pieces
    for (int64_t i = 0; i < chunks; ++i) out.push_back(x);
  const int64_t step = (n + chunks - 1) / std::max<int64_t>(chunks, 1);
  for (int64_t s = 0; s < n; s += step) out.push_back(x.slice(dim, s, std::min(s + step, n)));
  return out;
}

// ---- min / max along a dim with their indices, argmin -----------------------
// max(x, dim, keepdim) -> (values, indices), as LibTorch's x.max(dim, keepdim):
// the index of the first largest element (a NaN counts as the largest, as in
// argmax) and the value gathered there, so the gradient reaches that one
// element (amax's spreads over ties). min and argmin the same through -x
// (exact for floating and int dtypes).
inline std::tuple<Tensor, Tensor> max(const Tensor& x, int64_t dim, bool keepdim = false) {
  Tensor i = argmax(x, dim, true);
  Tensor v = gather(x, dim, i);
  if (keepdim) return {v, i};
  return {v.squeeze(dim), i.squeeze(dim)};
}
inline Tensor argmin(const Tensor& x, int64_t dim, bool keepdim = false) { return argmax(-x, dim, keepdim); }
inline std::tuple<Tensor, Tensor> min(const Tensor& x, int64_t dim, bool keepdim = false) {
  Tensor i = argmax(-x, dim, true);
  Tensor v = gather(x, dim, i);
  if (keepdim) return {v, i};
  return {v.squeeze(dim), i.squeeze(dim)};
}
inline std::tuple<Tensor, Tensor> Tensor::max(int64_t dim, bool keepdim) const { return graph::max(*this, dim, keepdim); }
inline std::tuple<Tensor, Tensor> Tensor::min(int64_t dim, bool keepdim) const { return graph::min(*this, dim, keepdim); }
inline Tensor Tensor::argmin(int64_t dim, bool keepdim) const { return graph::argmin(*this, dim, keepdim); }
// Over all elements, a 0-d tensor (PyTorch's x.max(), x.min(), x.argmax()).
inline Tensor max(const Tensor& x) { return amax(x); }
inline Tensor min(const Tensor& x) { return amin(x); }
inline Tensor Tensor::max() const { return graph::amax(*this); }
inline Tensor Tensor::min() const { return graph::amin(*this); }
inline Tensor Tensor::amax() const { return graph::amax(*this); }
inline Tensor Tensor::amin() const { return graph::amin(*this); }
inline Tensor Tensor::argmax() const { return graph::argmax(*this); }

// ---- sort, topk ---------------------------------------------------------------
// sort(x, dim, descending) -> (values, indices) and topk(x, k, dim, largest,
// sorted) -> the k largest (smallest) along dim, as LibTorch; indices int64.
// Both are argsort then gather, so the values' gradient is gather's: grad
// scattered back to the input's shape at the indices. topk's argsort selects
// only the first k (a partial sort of each line). sort is stable; topk always
// returns its k values sorted, ties in position order (PyTorch leaves the
// order of sorted=false unspecified, and of ties). k outside [0, size] is an
// error.
namespace detail {
GRAPH_EAGER_CHECK void check_topk(const Tensor& x, int64_t k, int64_t dim);
}  // namespace detail
inline std::tuple<Tensor, Tensor> sort(const Tensor& x, int64_t dim = -1, bool descending = false) {
  Tensor i = argsort(x, dim, descending);
  return {gather(x, dim, i), i};
}
inline std::tuple<Tensor, Tensor> topk(const Tensor& x, int64_t k, int64_t dim = -1, bool largest = true,
                                       bool /*sorted: always*/ = true) {
  detail::check_topk(x, k, dim);
  Tensor i = detail::argsort_first(x, dim, largest, k);
  return {gather(x, dim, i), i};
}

// ---- norms --------------------------------------------------------------------
// norm(x, p, dims, keepdim): the vector p-norm over dims (every dim when empty),
// as torch.norm / torch.linalg.vector_norm: p = 2 (also "fro"), 1, INFINITY
// (max |x|), -INFINITY (min |x|), 0 (the count of nonzeros) or any other p,
// (sum |x|^p)^(1/p). Over the ops above, so static graphs fuse it. The gradient
// at a zero norm is 0, as PyTorch's (sqrt's and pow's would give NaN there):
// the root is taken of 1 where the sum is 0 and masked back to 0.
namespace detail {
// sum(|x|^p) with |x|^p of 1 where x is 0, masked back to 0: no 0 * inf in
// the gradient for p < 1.
inline Tensor abs_pow_sum(const Tensor& x, double p, const Shape& dims, bool keepdim) {
  Tensor a = abs(x);
  Tensor az = a == 0.0;
  return sum(masked_fill(pow(masked_fill(a, az, 1.0), p), az, 0.0), dims, keepdim);
}
}  // namespace detail
inline Tensor norm(const Tensor& x, double p = 2.0, const Shape& dims = {}, bool keepdim = false) {
  if (p == INFINITY) return amax(abs(x), dims, keepdim);
  if (p == -INFINITY) return amin(abs(x), dims, keepdim);
  if (p == 1.0) return sum(abs(x), dims, keepdim);
  if (p == 0.0) return sum(masked_fill(x * 0.0, x != 0.0, 1.0), dims, keepdim);
  Tensor s = p == 2.0 ? sum(x * x, dims, keepdim) : detail::abs_pow_sum(x, p, dims, keepdim);
  Tensor z = s == 0.0;
  Tensor safe = masked_fill(s, z, 1.0);
  return masked_fill(p == 2.0 ? sqrt(safe) : pow(safe, 1.0 / p), z, 0.0);
}
namespace detail {
// The p of norm(x, "fro"): 2; anything else ("nuc": matrix norms) is an error.
GRAPH_EAGER_CHECK double norm_p(std::string_view p);
}  // namespace detail
inline Tensor norm(const Tensor& x, std::string_view p, const Shape& dims = {}, bool keepdim = false) {
  return norm(x, detail::norm_p(p), dims, keepdim);
}
inline Tensor linalg_vector_norm(const Tensor& x, double ord = 2.0, const Shape& dim = {}, bool keepdim = false) {
  return norm(x, ord, dim, keepdim);
}

// ---- einsum -------------------------------------------------------------------
// einsum(equation, tensors), as torch.einsum without ellipsis or broadcasting:
// "ij,jk->ik", "bij,bjk->bik", "bhqd,bhkd->bhqk", "i,j->ij", "ij->ji",
// "ij->i", "i,i->", and an implicit output ("ij,jk": the letters seen once, in
// alphabetical order). Each pair of operands becomes sums over the letters
// only it has, one permute + reshape per side and one bmm; the gradient is
// those ops'. A letter repeated within one operand, "...", or sizes that
// disagree are errors naming the equation. Eager only: the equation is
// parsed at run time, so a static function calling it falls back to eager.
Tensor einsum(std::string_view equation, const std::vector<Tensor>& tensors);

// The method forms (tensor.h).
inline std::tuple<Tensor, Tensor> Tensor::sort(int64_t dim, bool descending) const {
  return graph::sort(*this, dim, descending);
}
inline Tensor Tensor::argsort(int64_t dim, bool descending) const { return graph::argsort(*this, dim, descending); }
inline std::tuple<Tensor, Tensor> Tensor::topk(int64_t k, int64_t dim, bool largest, bool sorted) const {
  return graph::topk(*this, k, dim, largest, sorted);
}
inline Tensor Tensor::norm(double p, const Shape& dims, bool keepdim) const {
  return graph::norm(*this, p, dims, keepdim);
}
inline Tensor Tensor::select(int64_t dim, int64_t index) const { return graph::select(*this, dim, index); }
inline Tensor Tensor::narrow(int64_t dim, int64_t start, int64_t length) const {
  return graph::narrow(*this, dim, start, length);
}
inline std::vector<Tensor> Tensor::unbind(int64_t dim) const { return graph::unbind(*this, dim); }
inline std::vector<Tensor> Tensor::split(int64_t split_size, int64_t dim) const {
  return graph::split(*this, split_size, dim);
}
inline std::vector<Tensor> Tensor::split(const Shape& split_sizes, int64_t dim) const {
  return graph::split(*this, split_sizes, dim);
}
inline std::vector<Tensor> Tensor::chunk(int64_t chunks, int64_t dim) const { return graph::chunk(*this, chunks, dim); }

}  // namespace graph
