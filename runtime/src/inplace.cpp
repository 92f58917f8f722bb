// In-place ops and the version counter (Tensor::version, tensor.h).
//
// Each in-place op is its out-of-place op followed by a copy of the result
// into this tensor's elements (detail::copy_into), then a version bump:
// the same values as the out-of-place op, bit for bit, and no kernels of its
// own to keep in step with the rest of the runtime.
#include <string>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph {

uint64_t Tensor::version() const {
  return storage_ ? storage_->version.load(std::memory_order_acquire) : 0;
}

void Tensor::bump_version() const {
  if (storage_) storage_->version.fetch_add(1, std::memory_order_acq_rel);
}

namespace {

bool floating(DType t) { return t == kFloat32 || t == kFloat64 || t == kFloat16 || t == kBFloat16; }

void check_target(const char* op, const Tensor& self) {
  detail::check_defined(op, self);
  if (self.requires_grad() && autograd::grad_mode_enabled())
    throw Error(std::string(op) +
                ": a tensor that requires grad cannot be written in place while grad mode is on (the tape would "
                "see the new values); use NoGradGuard, or the out-of-place op");
  for (int64_t d = 0; d < self.dim(); ++d)
    if (self.stride(d) == 0 && self.size(d) > 1)
      throw Error(std::string(op) + ": cannot write in place into a broadcast (expanded) view of shape " +
                  shape_str(self.sizes()) + ": several elements share one memory location");
}

// Writes `result` (the out-of-place op's value) into `self`.
Tensor& assign(const char* op, Tensor& self, const Tensor& result) {
  if (result.sizes() != self.sizes())
    throw Error(std::string(op) + ": the result has shape " + shape_str(result.sizes()) +
                ", which is not the shape " + shape_str(self.sizes()) + " of the tensor written in place");
  if (floating(result.dtype()) && !floating(self.dtype()))
    throw Error(std::string(op) + ": the result has dtype " + std::string(dtype_name(result.dtype())) +
                ", which cannot be written into a " + std::string(dtype_name(self.dtype())) + " tensor");
  detail::copy_into(self, result);
  self.bump_version();
  return self;
}

}  // namespace

#define GRAPH_INPLACE_BINARY(name)                                   \
  Tensor& Tensor::name##_(const Tensor& other) {                      \
    check_target(#name "_", *this);                                   \
    detail::check_defined(#name "_", other);                          \
    NoGradGuard no_grad;                                              \
    return assign(#name "_", *this, ::graph::name(*this, other));     \
  }                                                                   \
  Tensor& Tensor::name##_(Scalar other) {                             \
    check_target(#name "_", *this);                                   \
    NoGradGuard no_grad;                                              \
    return assign(#name "_", *this, ::graph::name(*this, other));     \
  }
GRAPH_INPLACE_BINARY(add)
GRAPH_INPLACE_BINARY(sub)
GRAPH_INPLACE_BINARY(mul)
GRAPH_INPLACE_BINARY(div)
#undef GRAPH_INPLACE_BINARY

Tensor& Tensor::clamp_(Scalar lo, Scalar hi) {
  check_target("clamp_", *this);
  NoGradGuard no_grad;
  return assign("clamp_", *this, ::graph::clamp(*this, lo, hi));
}

Tensor& Tensor::copy_(const Tensor& src) {
  check_target("copy_", *this);
  detail::check_defined("copy_", src);
  NoGradGuard no_grad;
  // src broadcasts to this shape and converts to this dtype (PyTorch's copy_).
  Tensor b;
  try {
    b = src.expand(sizes());
  } catch (const Error&) {
    throw Error("copy_: the source shape " + shape_str(src.sizes()) + " does not broadcast to " +
                shape_str(sizes()));
  }
  // A source that shares this storage is read whole before anything is written.
  if (b.storage() == storage()) b = b.clone();
  detail::copy_into(*this, b);
  bump_version();
  return *this;
}

Tensor& Tensor::fill_(Scalar value) {
  check_target("fill_", *this);
  NoGradGuard no_grad;
  detail::copy_into(*this, full({}, value, dtype()));
  bump_version();
  return *this;
}

Tensor& Tensor::zero_() { return fill_(0); }

}  // namespace graph
