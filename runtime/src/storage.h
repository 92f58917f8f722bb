#pragma once
// Private to the runtime: the Storage behind every Tensor, plus helpers the
// runtime's source files share (dimension wrapping, safe value conversion,
// strided copy). Nothing here is part of the public API.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <string_view>
#include <type_traits>

#include "graph/tensor.h"

namespace graph {

// A 64-byte-aligned buffer (cache-line and AVX-512 friendly). Tensors share it
// through shared_ptr; it is never resized.
struct Storage {
  explicit Storage(size_t nbytes, Device device = Device::CPU);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data = nullptr;
  size_t nbytes = 0;
  Device device = Device::CPU;  // CUDA storage comes from the device allocator (device.h)
  // The version counter (Tensor::version()): bumped by every in-place write
  // the runtime makes into this storage, shared by all its views, as
  // LibTorch's `_version`. Caches of data derived from a tensor (the packed
  // weights of the static graphs' GEMM, packed_gemm.cpp) key on it.
  std::atomic<uint64_t> version{0};
};

namespace detail {

// What identifies a tensor's values for a cache of something derived from
// them: the same Storage object (alive, so not a new one at a freed one's
// address), offset, sizes, strides and version. Taken before the values are
// read: a later write bumps past it.
struct ValueStamp {
  std::weak_ptr<Storage> storage;
  const Storage* raw = nullptr;
  int64_t offset = 0;
  Shape sizes, strides;
  uint64_t version = 0;

  ValueStamp() = default;
  explicit ValueStamp(const Tensor& t)
      : storage(t.storage()), raw(t.storage().get()), offset(t.storage_offset()), sizes(t.sizes()),
        strides(t.strides()), version(t.version()) {}
  bool matches(const Tensor& t) const {
    return raw && raw == t.storage().get() && !storage.expired() && offset == t.storage_offset() &&
           version == t.version() && sizes == t.sizes() && strides == t.strides();
  }
};

inline constexpr size_t kStorageAlignment = 64;

// Throws "<op>: expected a defined tensor" for a default-constructed Tensor, so
// ops never touch a null storage.
void check_defined(std::string_view op, const Tensor& t);

// Calls f(T{}) with T = double for float64, else float (the kernels of the
// ops that take float32 and float64 only, reduced floats computed in float32).
template <class F>
void dispatch_float(DType t, F&& f) {
  if (t == kFloat64) f(double{});
  else f(float{});
}

// `dim` in [-ndim, ndim) mapped to [0, ndim); throws naming `op` and `shape`.
// A 0-d tensor accepts dim 0 and -1, as in PyTorch.
int64_t wrap_dim(std::string_view op, int64_t dim, const Shape& shape);

// True when `t` has exactly `shape` and is contiguous, so a kernel can index
// it as a flat array with no cpu::StridedLoop to plan: what most eager ops
// see, and on small tensors planning the loop costs more than running it.
inline bool dense_at(const Tensor& t, const Shape& shape) { return t.sizes() == shape && t.is_contiguous(); }

// Copies `src` (broadcast to dst's shape) into `dst`, converting the dtype.
void copy_into(const Tensor& dst, const Tensor& src);

// static_cast, except that a floating value outside the target integer's range
// (or NaN) gives the type's minimum instead of undefined behaviour; that is
// also what x86 conversion instructions produce.
template <class To, class From>
inline To convert(From v) {
  if constexpr (std::is_same_v<From, Half> || std::is_same_v<From, BFloat16>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr ((std::is_same_v<To, Half> || std::is_same_v<To, BFloat16>) && !std::is_same_v<From, float>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To> &&
                !std::is_same_v<To, bool>) {
    constexpr double lo = static_cast<double>(std::numeric_limits<To>::min());
    constexpr double hi = -lo;  // 2^(bits-1), exclusive upper bound
    const double d = static_cast<double>(v);
    if (!(d >= lo && d < hi)) return std::numeric_limits<To>::min();
  }
  return static_cast<To>(v);
}

// A Scalar's value as T (same conversion rules as convert).
template <class T>
inline T scalar_as(const Scalar& s) {
  return s.is_floating() ? convert<T>(s.to_double()) : convert<T>(s.to_int());
}

}  // namespace detail
}  // namespace graph
