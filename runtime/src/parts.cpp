// The parts of a tensor along one dim (ops.h): unbind, and the argument checks
// of select, narrow, split and chunk (their bodies are inline in ops.h).
#include <string>

#include "graph/autograd.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph {

namespace detail {

namespace {
[[noreturn]] void fail(const std::string& op, const std::string& what, const Tensor& x) {
  throw Error(op + ": " + what + " (tensor of shape " + shape_str(x.sizes()) + ")");
}
}  // namespace

void check_select(const Tensor& x, int64_t dim, int64_t index) {
  check_defined("select", x);
  if (x.dim() == 0) fail("select", "cannot select from a 0-d tensor", x);
  const int64_t d = wrap_dim("select", dim, x.sizes());
  const int64_t n = x.size(d);
  if (index < -n || index >= n)
    fail("select", "index " + std::to_string(index) + " is out of range for dim " + std::to_string(d) + " of size " +
                       std::to_string(n),
         x);
}

void check_narrow(const Tensor& x, int64_t dim, int64_t start, int64_t length) {
  check_defined("narrow", x);
  if (x.dim() == 0) fail("narrow", "cannot narrow a 0-d tensor", x);
  const int64_t d = wrap_dim("narrow", dim, x.sizes());
  const int64_t n = x.size(d);
  if (start < -n || start > n)
    fail("narrow", "start " + std::to_string(start) + " is out of range for dim " + std::to_string(d) + " of size " +
                       std::to_string(n),
         x);
  const int64_t s = start < 0 ? start + n : start;
  if (length < 0) fail("narrow", "length must be non-negative, got " + std::to_string(length), x);
  if (s + length > n)
    fail("narrow", "start " + std::to_string(s) + " + length " + std::to_string(length) + " exceeds the size " +
                       std::to_string(n) + " of dim " + std::to_string(d),
         x);
}

// split's split_size (0 only for an empty dim) or chunk's chunks (> 0).
void check_split(const char* op, const Tensor& x, int64_t size, int64_t dim) {
  check_defined(op, x);
  if (x.dim() == 0) fail(op, "cannot split a 0-d tensor", x);
  const int64_t d = wrap_dim(op, dim, x.sizes());
  const bool is_chunk = std::string(op) == "chunk";
  if (is_chunk && size <= 0) fail(op, "chunks must be positive, got " + std::to_string(size), x);
  if (!is_chunk && (size < 0 || (size == 0 && x.size(d) != 0)))
    fail(op, "split_size must be positive (0 only for a dim of size 0), got " + std::to_string(size), x);
}

void check_split_sizes(const Tensor& x, const Shape& sizes, int64_t dim) {
  check_defined("split", x);
  if (x.dim() == 0) fail("split", "cannot split a 0-d tensor", x);
  const int64_t d = wrap_dim("split", dim, x.sizes());
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) fail("split", "split_sizes " + shape_str(sizes) + " has a negative size", x);
    total += s;
  }
  if (total != x.size(d))
    fail("split", "split_sizes " + shape_str(sizes) + " add up to " + std::to_string(total) + ", not the size " +
                      std::to_string(x.size(d)) + " of dim " + std::to_string(d),
         x);
}

}  // namespace detail

std::vector<Tensor> unbind(const Tensor& x, int64_t dim) {
  detail::check_defined("unbind", x);
  if (x.dim() == 0) throw Error("unbind: cannot unbind a 0-d tensor");
  const int64_t d = detail::wrap_dim("unbind", dim, x.sizes());
  const int64_t n = x.size(d);
  std::vector<Tensor> out;
  out.reserve(static_cast<size_t>(n));
  {
    // The pieces are views; one node below gives all of them their history.
    autograd::NoGradGuard no_grad;
    for (int64_t i = 0; i < n; ++i) out.push_back(x.slice(d, i, i + 1).squeeze(d));
  }
  if (n == 0 || !autograd::needs_grad({&x})) return out;
  std::vector<Tensor*> outs;
  for (Tensor& t : out) outs.push_back(&t);
  Shape piece = x.sizes();
  piece.erase(piece.begin() + d);
  // One stack of the pieces' gradients (zeros where none arrived): O(numel) in
  // all, where a slice's gradient per piece would be a full-size tensor each.
  autograd::record_multi("unbind", outs, {x},
                         [piece, d, dtype = x.dtype(), device = x.device()](const std::vector<Tensor>& grads) {
                           std::vector<Tensor> g = grads;
                           for (Tensor& t : g)
                             if (!t.defined()) t = zeros(piece, dtype, device);
                           return std::vector<Tensor>{stack(g, d)};
                         });
  return out;
}

}  // namespace graph
