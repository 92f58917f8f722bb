// Tensor geometry, views, conversions, printing and factories.
#include "graph/tensor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ostream>
#include <sstream>

#include "graph/autograd.h"
#include "graph/memory.h"
#include "device.h"
#include "graph/trace.h"
#include "graph/detail/generated_support.h"
#include "storage.h"

namespace graph {

// ---- Storage ------------------------------------------------------------

// Storage comes from the caching allocator (memory.h): eager temporaries of
// recurring sizes reuse freed blocks instead of calling malloc each time.
// Device storage comes from the device's caching allocator (device.h).
Storage::Storage(size_t bytes, Device d)
    : data(d == Device::CPU ? memory::allocate(bytes) : detail::device_allocate(d, bytes)),
      nbytes(bytes),
      device(d) {}

Storage::~Storage() {
  if (device == Device::CPU) memory::release(data, nbytes);
  else detail::device_release(device, data, nbytes);
}

namespace {

// Hands the shared_ptr control block (reference counts plus the Storage,
// one block through allocate_shared) to the caching allocator as well: the
// system allocator's malloc and free were a fifth of a small eager op.
template <class T>
struct CachedAllocator {
  using value_type = T;
  CachedAllocator() = default;
  template <class U>
  CachedAllocator(const CachedAllocator<U>&) {}  // NOLINT: rebinding, as std::allocator
  T* allocate(size_t n) { return static_cast<T*>(memory::allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) { memory::release(p, n * sizeof(T)); }
  friend bool operator==(CachedAllocator, CachedAllocator) { return true; }
};

}  // namespace

// ---- shared helpers -----------------------------------------------------

std::string shape_str(const Shape& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

Shape contiguous_strides(const Shape& sizes) {
  Shape strides(sizes.size());
  int64_t running = 1;
  for (size_t d = sizes.size(); d-- > 0;) {
    strides[d] = running;
    running *= std::max<int64_t>(sizes[d], 1);
  }
  return strides;
}

namespace detail {

void check_defined(std::string_view op, const Tensor& t) {
  if (!t.defined())
    throw Error(std::string(op) + ": expected a defined tensor, got an undefined one");
}

int64_t wrap_dim(std::string_view op, int64_t dim, const Shape& shape) {
  const int64_t n = std::max<int64_t>(static_cast<int64_t>(shape.size()), 1);
  if (dim < -n || dim >= n) {
    throw Error(std::string(op) + ": dim " + std::to_string(dim) +
                " is out of range for a tensor of shape " + shape_str(shape));
  }
  return dim < 0 ? dim + n : dim;
}

}  // namespace detail

namespace {

// Product of sizes; throws naming `op` on negative sizes or int64 overflow.
// The element count. The product with zeros counted as ones must fit too:
// contiguous strides are made of it, even for a shape with no elements.
int64_t checked_numel(std::string_view op, const Shape& sizes) {
  int64_t n = 1, strided = 1;
  for (int64_t s : sizes) {
    if (s < 0) {
      throw Error(std::string(op) + ": negative dimension " + std::to_string(s) + " in shape " +
                  shape_str(sizes));
    }
    if (__builtin_mul_overflow(n, s, &n) || __builtin_mul_overflow(strided, std::max<int64_t>(s, 1), &strided)) {
      throw Error(std::string(op) + ": shape " + shape_str(sizes) + " has too many elements");
    }
  }
  return n;
}

// The value at `p` (of dtype `t`) as T.
template <class T>
T load_as(DType t, const void* p) {
  return dispatch_dtype(t, [&](auto v) {
    using S = decltype(v);
    return detail::convert<T>(*static_cast<const S*>(p));
  });
}

}  // namespace

// ---- Tensor geometry ----------------------------------------------------

Tensor::Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape sizes, Shape strides,
               DType dtype)
    : storage_(std::move(storage)),
      offset_(offset),
      sizes_(std::move(sizes)),
      strides_(std::move(strides)),
      dtype_(dtype) {
  // Views are built from this constructor, so check once here that every
  // element it can address lies inside the storage.
  if (!storage_) throw Error("Tensor: null storage");
  if (sizes_.size() != strides_.size()) {
    throw Error("Tensor: shape " + shape_str(sizes_) + " and strides " + shape_str(strides_) +
                " differ in rank");
  }
  if (checked_numel("Tensor", sizes_) == 0) return;
  int64_t lo = offset_, hi = offset_;
  bool overflow = false;
  for (size_t d = 0; d < sizes_.size(); ++d) {
    int64_t reach = 0;
    overflow |= __builtin_mul_overflow(sizes_[d] - 1, strides_[d], &reach);
    overflow |= __builtin_add_overflow(reach < 0 ? lo : hi, reach, reach < 0 ? &lo : &hi);
  }
  const int64_t capacity = static_cast<int64_t>(storage_->nbytes / element_size(dtype_));
  if (overflow || lo < 0 || hi >= capacity) {
    throw Error("Tensor: view of shape " + shape_str(sizes_) + " with strides " +
                shape_str(strides_) + " at offset " + std::to_string(offset_) +
                " exceeds its storage of " + std::to_string(capacity) + " elements");
  }
}

int64_t Tensor::size(int64_t d) const {
  if (dim() == 0) throw Error("size: a 0-d tensor has no dimension " + std::to_string(d));
  return sizes_[detail::wrap_dim("size", d, sizes_)];
}

int64_t Tensor::stride(int64_t d) const {
  if (dim() == 0) throw Error("stride: a 0-d tensor has no dimension " + std::to_string(d));
  return strides_[detail::wrap_dim("stride", d, sizes_)];
}

int64_t Tensor::numel() const {
  if (!defined()) return 0;
  int64_t n = 1;
  for (int64_t s : sizes_) n *= s;
  return n;
}

bool Tensor::is_contiguous() const {
  // Size-1 dims can carry any stride (they are never stepped), and a tensor
  // with no elements is trivially contiguous.
  if (numel() == 0) return true;
  int64_t expected = 1;
  for (size_t d = sizes_.size(); d-- > 0;) {
    if (sizes_[d] == 1) continue;
    if (strides_[d] != expected) return false;
    expected *= sizes_[d];
  }
  return true;
}

Device Tensor::device() const { return storage_ ? storage_->device : Device::CPU; }

template <class T>
T* Tensor::data_ptr() const {
  detail::check_defined("data_ptr", *this);
  if (dtype_of<T>::value != dtype_) {
    throw Error("data_ptr: tensor is " + std::string(dtype_name(dtype_)) + ", not " +
                std::string(dtype_name(dtype_of<T>::value)));
  }
  // Every CPU kernel reads through here: an op without a CUDA kernel stops
  // with this error instead of dereferencing device memory.
  if (storage_->device != Device::CPU) {
    throw Error("data_ptr: the tensor of shape " + shape_str(sizes_) + " is on " +
                std::string(device_name(storage_->device)) +
                ", and this op has no CUDA kernel yet; move it with .to(kCPU)");
  }
  return static_cast<T*>(storage_->data) + offset_;
}
#define GRAPH_X(name, type, token, torch, attr) template type* Tensor::data_ptr<type>() const;
GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X

void* Tensor::raw_data() const {
  detail::check_defined("raw_data", *this);
  return static_cast<char*>(storage_->data) + offset_ * element_size(dtype_);
}

// noinline: the trace hook reads the caller's return address.
template <class T>
[[gnu::noinline]] T Tensor::item() const {
  if (detail::tracing()) detail::trace_host_read(*this, "item", __builtin_return_address(0));
  detail::check_defined("item", *this);
  if (numel() != 1) {
    throw Error("item: a tensor with " + std::to_string(numel()) +
                " elements cannot be converted to a scalar (shape " + shape_str(sizes_) + ")");
  }
  if (device() != Device::CPU) return load_as<T>(dtype_, detail::cuda_to(*this, Device::CPU).raw_data());
  return load_as<T>(dtype_, raw_data());
}
template float Tensor::item<float>() const;
template double Tensor::item<double>() const;
template int64_t Tensor::item<int64_t>() const;
template int Tensor::item<int>() const;
template bool Tensor::item<bool>() const;

[[gnu::noinline]] Tensor::operator bool() const {
  if (detail::tracing()) detail::trace_host_read(*this, "bool", __builtin_return_address(0));
  detail::check_defined("bool", *this);
  if (numel() != 1) {
    throw Error("bool value of a tensor with more than one value is ambiguous (shape " +
                shape_str(sizes_) + ")");
  }
  if (device() != Device::CPU) return load_as<bool>(dtype_, detail::cuda_to(*this, Device::CPU).raw_data());
  return load_as<bool>(dtype_, raw_data());
}

// ---- copies -------------------------------------------------------------

Tensor Tensor::contiguous() const {
  detail::check_defined("contiguous", *this);
  if (detail::tracing()) return detail::trace_op("contiguous", {*this}, {}, [&] { return contiguous(); });
  return is_contiguous() ? *this : clone();
}

Tensor Tensor::clone() const {
  if (detail::tracing()) return detail::trace_op("clone", {*this}, {}, [&] { return clone(); });
  detail::check_defined("clone", *this);
  Tensor out = detail::empty_on(device(), sizes_, dtype_);
  detail::copy_into(out, *this);
  return autograd::record_unary("clone", out, *this, [](const Tensor& g) { return g; });
}

Tensor Tensor::to(DType t) const {
  detail::check_defined("to", *this);
  if (t == dtype_) return *this;
  if (detail::tracing())
    return detail::trace_op("to", {*this}, {{"dtype", std::string(dtype_token(t))}}, [&] { return to(t); });
  Tensor out = detail::empty_on(device(), sizes_, t);
  detail::copy_into(out, *this);
  // The engine converts the gradient back to this tensor's dtype.
  return autograd::record_unary("to", out, *this, [](const Tensor& g) { return g; });
}

Tensor Tensor::type_as(const Tensor& other) const {
  detail::check_defined("type_as", *this);
  detail::check_defined("type_as", other);
  if (detail::tracing()) return detail::trace_op("type_as", {*this, other}, {}, [&] { return to(other.dtype()); });
  return to(other.dtype());
}

Tensor Tensor::to(Device d) const {
  detail::check_defined("to", *this);
  const Device from = device();
  if (d == from) return *this;
  Tensor out = detail::cuda_to(*this, d);
  return autograd::record_unary("to", out, *this, [from](const Tensor& g) { return g.to(from); });
}

// ---- views --------------------------------------------------------------

Tensor Tensor::t() const {
  if (detail::tracing()) return detail::trace_op("t", {*this}, {}, [&] { return t(); });
  detail::check_defined("t", *this);
  if (dim() < 2) return *this;
  if (dim() > 2) {
    throw Error("t: expects a tensor with <= 2 dimensions, but got shape " + shape_str(sizes_) +
                "; use transpose");
  }
  return transpose(0, 1);
}

Tensor Tensor::transpose(int64_t d0, int64_t d1) const {
  if (detail::tracing())
    return detail::trace_op("transpose", {*this}, {{"dim0", d0}, {"dim1", d1}}, [&] { return transpose(d0, d1); });
  detail::check_defined("transpose", *this);
  d0 = detail::wrap_dim("transpose", d0, sizes_);
  d1 = detail::wrap_dim("transpose", d1, sizes_);
  if (dim() == 0) return *this;
  Shape sizes = sizes_, strides = strides_;
  std::swap(sizes[d0], sizes[d1]);
  std::swap(strides[d0], strides[d1]);
  return autograd::record_unary("transpose", Tensor(storage_, offset_, std::move(sizes), std::move(strides), dtype_),
                                *this, [d0, d1](const Tensor& g) { return g.transpose(d0, d1); });
}

Tensor Tensor::permute(const Shape& dims) const {
  if (detail::tracing())
    return detail::trace_op("permute", {*this}, {{"dims", detail::ints(dims)}}, [&] { return permute(dims); });
  detail::check_defined("permute", *this);
  if (static_cast<int64_t>(dims.size()) != dim())
    throw Error("permute: " + shape_str(dims) + " does not list the " + std::to_string(dim()) +
                " dims of shape " + shape_str(sizes_));
  Shape sizes(dims.size()), strides(dims.size()), inverse(dims.size(), -1);
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = detail::wrap_dim("permute", dims[i], sizes_);
    if (inverse[d] != -1) throw Error("permute: dim " + std::to_string(dims[i]) + " repeats in " + shape_str(dims));
    inverse[d] = static_cast<int64_t>(i);
    sizes[i] = sizes_[d];
    strides[i] = strides_[d];
  }
  return autograd::record_unary("permute", Tensor(storage_, offset_, std::move(sizes), std::move(strides), dtype_),
                                *this, [inverse](const Tensor& g) { return g.permute(inverse); });
}

Tensor Tensor::squeeze() const {
  if (detail::tracing()) return detail::trace_op("squeeze", {*this}, {}, [&] { return squeeze(); });
  detail::check_defined("squeeze", *this);
  Shape sizes;
  for (int64_t s : sizes_)
    if (s != 1) sizes.push_back(s);
  return reshape(sizes);  // dropping size-1 dims is always a view
}

Tensor Tensor::squeeze(int64_t d) const {
  if (detail::tracing())
    return detail::trace_op("squeeze", {*this}, {{"dim", d}}, [&] { return squeeze(d); });
  detail::check_defined("squeeze", *this);
  if (dim() == 0) return *this;
  d = detail::wrap_dim("squeeze", d, sizes_);
  if (sizes_[d] != 1) return *this;
  // A view even of strided data (select, unbind): drop the dim's size and stride.
  Shape sizes = sizes_, strides = strides_;
  sizes.erase(sizes.begin() + d);
  strides.erase(strides.begin() + d);
  const Shape in = sizes_;
  return autograd::record_unary("squeeze", Tensor(storage_, offset_, std::move(sizes), std::move(strides), dtype_),
                                *this, [in](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::unsqueeze(int64_t d) const {
  if (detail::tracing())
    return detail::trace_op("unsqueeze", {*this}, {{"dim", d}}, [&] { return unsqueeze(d); });
  detail::check_defined("unsqueeze", *this);
  const int64_t n = dim() + 1;
  if (d < -n || d >= n)
    throw Error("unsqueeze: dim " + std::to_string(d) + " is out of range for shape " + shape_str(sizes_));
  if (d < 0) d += n;
  Shape sizes = sizes_, strides = strides_;
  sizes.insert(sizes.begin() + d, 1);
  strides.insert(strides.begin() + d, d < dim() ? strides_[d] * sizes_[d] : 1);
  const Shape in = sizes_;
  return autograd::record_unary("unsqueeze", Tensor(storage_, offset_, std::move(sizes), std::move(strides), dtype_),
                                *this, [in](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::flatten(int64_t start, int64_t end) const {
  if (detail::tracing())
    return detail::trace_op("flatten", {*this}, {{"start_dim", start}, {"end_dim", end}},
                            [&] { return flatten(start, end); });
  detail::check_defined("flatten", *this);
  if (dim() == 0) return reshape({1});
  start = detail::wrap_dim("flatten", start, sizes_);
  end = detail::wrap_dim("flatten", end, sizes_);
  if (start > end) throw Error("flatten: start_dim comes after end_dim for shape " + shape_str(sizes_));
  Shape sizes(sizes_.begin(), sizes_.begin() + start);
  int64_t n = 1;
  for (int64_t d = start; d <= end; ++d) n *= sizes_[d];
  sizes.push_back(n);
  sizes.insert(sizes.end(), sizes_.begin() + end + 1, sizes_.end());
  return reshape(sizes);
}

namespace detail {
SliceBounds slice_bounds(const Tensor& t, int64_t d, int64_t start, int64_t end, int64_t step) {
  check_defined("slice", t);
  if (t.dim() == 0) throw Error("slice: cannot slice a 0-d tensor");
  d = wrap_dim("slice", d, t.sizes());
  if (step <= 0) {
    throw Error("slice: step must be positive, got " + std::to_string(step) + " (shape " + shape_str(t.sizes()) +
                ")");
  }
  // Clamp like PyTorch: negative bounds count from the end, then both are
  // clipped to [0, size] and an empty range yields size 0.
  const int64_t n = t.sizes()[static_cast<size_t>(d)];
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  start = clamp(start);
  end = std::max(clamp(end), start);
  return {d, start, end, end == start ? 0 : (end - start - 1) / step + 1};
}
}  // namespace detail

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  if (detail::tracing())
    return detail::trace_op("slice", {*this}, {{"dim", d}, {"start", start}, {"end", end}, {"step", step}},
                            [&] { return slice(d, start, end, step); });
  const detail::SliceBounds b = detail::slice_bounds(*this, d, start, end, step);
  d = b.dim;
  start = b.start;
  end = b.end;
  Shape sizes = sizes_, strides = strides_;
  sizes[d] = b.len;
  strides[d] = strides_[d] * step;
  return autograd::record_unary(
      "slice", Tensor(storage_, offset_ + start * strides_[d], std::move(sizes), std::move(strides), dtype_), *this,
      [in = sizes_, d, start, end, step](const Tensor& g) {
        Tensor full = zeros(in, g.dtype());
        detail::copy_into(full.slice(d, start, end, step), g);
        return full;
      });
}

Tensor Tensor::expand(const Shape& target) const {
  if (detail::tracing())
    return detail::trace_op("expand", {*this}, {{"shape", detail::ints(target)}}, [&] { return expand(target); });
  detail::check_defined("expand", *this);
  auto fail = [&] {
    return Error("expand: cannot expand shape " + shape_str(sizes_) + " to " + shape_str(target));
  };
  if (target.size() < sizes_.size()) throw fail();
  const size_t lead = target.size() - sizes_.size();
  Shape sizes(target.size()), strides(target.size(), 0);
  for (size_t d = 0; d < target.size(); ++d) {
    if (d < lead) {  // new leading dim: every index reads the same data
      if (target[d] < 0) throw fail();
      sizes[d] = target[d];
      continue;
    }
    const int64_t have = sizes_[d - lead];
    const int64_t want = target[d] == -1 ? have : target[d];
    if (want == have) {
      sizes[d] = have;
      strides[d] = strides_[d - lead];
    } else if (have == 1 && want >= 0) {
      sizes[d] = want;
    } else {
      throw fail();
    }
  }
  // The engine sums the gradient back over the expanded dims.
  return autograd::record_unary("expand", Tensor(storage_, offset_, std::move(sizes), std::move(strides), dtype_),
                                *this, [](const Tensor& g) { return g; });
}

namespace {

// `sizes` with a single -1 replaced so that the element count is `numel`.
Shape infer_shape(std::string_view op, const Shape& sizes, int64_t numel) {
  Shape out = sizes;
  int64_t known = 1;
  int infer = -1;
  for (size_t d = 0; d < out.size(); ++d) {
    if (out[d] == -1) {
      if (infer >= 0)
        throw Error(std::string(op) + ": only one dimension can be -1, got " + shape_str(sizes));
      infer = static_cast<int>(d);
    } else if (out[d] < 0 || __builtin_mul_overflow(known, out[d], &known)) {
      throw Error(std::string(op) + ": invalid shape " + shape_str(sizes));
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0) {
      throw Error(std::string(op) + ": shape " + shape_str(sizes) +
                  " is invalid for input of size " + std::to_string(numel));
    }
    out[infer] = numel / known;
    known = numel;
  }
  if (known != numel) {
    throw Error(std::string(op) + ": shape " + shape_str(sizes) + " is invalid for input of size " +
                std::to_string(numel));
  }
  return out;
}

}  // namespace

Tensor Tensor::view(const Shape& sizes) const {
  if (detail::tracing())
    return detail::trace_op("reshape", {*this}, {{"shape", detail::ints(sizes)}}, [&] { return view(sizes); });
  detail::check_defined("view", *this);
  Shape shape = infer_shape("view", sizes, numel());
  if (!is_contiguous()) {
    throw Error("view: input of shape " + shape_str(sizes_) + " with strides " +
                shape_str(strides_) + " is not contiguous; use reshape(" + shape_str(sizes) +
                ") instead");
  }
  Shape strides = contiguous_strides(shape);
  const Shape in = sizes_;
  return autograd::record_unary("view", Tensor(storage_, offset_, std::move(shape), std::move(strides), dtype_),
                                *this, [in](const Tensor& g) { return g.reshape(in); });
}

Tensor Tensor::reshape(const Shape& sizes) const {
  if (detail::tracing())
    return detail::trace_op("reshape", {*this}, {{"shape", detail::ints(sizes)}}, [&] { return reshape(sizes); });
  detail::check_defined("reshape", *this);
  infer_shape("reshape", sizes, numel());  // report shape errors as reshape's
  return is_contiguous() ? view(sizes) : clone().view(sizes);
}

// ---- printing -----------------------------------------------------------

namespace {

void print_element(std::string& out, DType t, const void* p) {
  char buf[64];
  if (t == DType::Bool) {
    std::snprintf(buf, sizeof buf, "%s", *static_cast<const bool*>(p) ? "true" : "false");
  } else if (is_floating(t)) {
    std::snprintf(buf, sizeof buf, "%.4f", load_as<double>(t, p));
  } else {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(load_as<int64_t>(t, p)));
  }
  out += buf;
}

// Prints dims [d, ndim) of `t` starting at element offset `off`. Large tensors
// show the first and last three entries of each long dim, as PyTorch does.
void print_dims(std::string& out, const Tensor& t, size_t d, int64_t off, bool summarize,
                size_t indent) {
  const char* base = static_cast<const char*>(t.storage()->data);
  const size_t esize = element_size(t.dtype());
  if (d == t.sizes().size()) {
    print_element(out, t.dtype(), base + off * esize);
    return;
  }
  const int64_t n = t.sizes()[d];
  const bool skip = summarize && n > 6;
  const bool last = d + 1 == t.sizes().size();
  std::string sep = last ? ", " : ",\n" + std::string(indent + d + 1, ' ');
  out += '[';
  for (int64_t i = 0; i < n; ++i) {
    if (skip && i == 3) {
      out += "..." + sep;
      i = n - 3;
    }
    print_dims(out, t, d + 1, off + i * t.strides()[d], summarize, indent);
    if (i + 1 < n) out += sep;
  }
  out += ']';
}

}  // namespace

std::string Tensor::to_string() const {
  if (!defined()) return "tensor(undefined)";
  if (device() != Device::CPU) {  // printed from a host copy
    std::string s = detail::cuda_to(*this, Device::CPU).to_string();
    return s.insert(s.size() - 1, ", device=" + std::string(device_name(device())));
  }
  std::string out = "tensor(";
  print_dims(out, *this, 0, offset_, numel() > 1000, out.size());
  return out + ", shape=" + shape_str(sizes_) + ", dtype=" + std::string(dtype_name(dtype_)) + ")";
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

// ---- factories ----------------------------------------------------------

Tensor empty(const Shape& sizes, DType dtype) {
  const int64_t n = checked_numel("empty", sizes);
  size_t bytes = 0;
  if (__builtin_mul_overflow(static_cast<size_t>(n), element_size(dtype), &bytes)) {
    throw Error("empty: shape " + shape_str(sizes) + " is too large");
  }
  return Tensor(std::allocate_shared<Storage>(CachedAllocator<Storage>(), bytes), 0, sizes,
                contiguous_strides(sizes), dtype);
}

Tensor zeros(const Shape& sizes, DType dtype) {
  Tensor out = empty(sizes, dtype);
  // All-zero bytes are 0.0f, 0 and false.
  std::memset(out.raw_data(), 0, static_cast<size_t>(out.numel()) * element_size(dtype));
  return out;
}

Tensor ones(const Shape& sizes, DType dtype) { return full(sizes, 1, dtype); }

Tensor full(const Shape& sizes, Scalar value, DType dtype) {
  Tensor out = empty(sizes, dtype);
  dispatch_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    std::fill_n(out.data_ptr<T>(), out.numel(), detail::scalar_as<T>(value));
  });
  return out;
}

Tensor empty(const Shape& sizes, DType dtype, Device device) {
  if (device == Device::CPU) return empty(sizes, dtype);
  checked_numel("empty", sizes);
  detail::require_cuda("empty(kCUDA)");
  return detail::empty_on(device, sizes, dtype);
}
Tensor zeros(const Shape& sizes, DType dtype, Device device) {
  checked_numel("zeros", sizes);
  return detail::full_on(device, sizes, 0, dtype);
}
Tensor ones(const Shape& sizes, DType dtype, Device device) {
  checked_numel("ones", sizes);
  return detail::full_on(device, sizes, 1, dtype);
}
Tensor full(const Shape& sizes, Scalar value, DType dtype, Device device) {
  checked_numel("full", sizes);
  return detail::full_on(device, sizes, value, dtype);
}
Tensor arange(Scalar start, Scalar end, Scalar step, Device device) { return arange(start, end, step).to(device); }

Tensor arange(Scalar end) { return arange(0, end, 1); }

Tensor arange(Scalar start, Scalar end, Scalar step) {
  const bool integral = !start.is_floating() && !end.is_floating() && !step.is_floating();
  const double s = start.to_double(), e = end.to_double(), st = step.to_double();
  if (!std::isfinite(s) || !std::isfinite(e) || !std::isfinite(st)) {
    throw Error("arange: start, end and step must be finite");
  }
  if (st == 0) throw Error("arange: step must be nonzero");
  if ((st > 0 && e < s) || (st < 0 && e > s)) {
    throw Error("arange: upper bound and lower bound are inconsistent with the step sign");
  }
  // The element count is computed in double as PyTorch does; the values
  // themselves are exact for integers.
  const double count = std::ceil((e - s) / st);
  if (count > 1e15) throw Error("arange: too many elements");
  const int64_t n = static_cast<int64_t>(count);
  if (integral) {
    Tensor out = empty({n}, kInt64);
    int64_t* p = out.data_ptr<int64_t>();
    // Unsigned arithmetic wraps instead of overflowing at the int64 limits.
    const auto first = static_cast<uint64_t>(start.to_int());
    const auto delta = static_cast<uint64_t>(step.to_int());
    for (int64_t i = 0; i < n; ++i)
      p[i] = static_cast<int64_t>(first + static_cast<uint64_t>(i) * delta);
    return out;
  }
  Tensor out = empty({n}, kFloat32);
  float* p = out.data_ptr<float>();
  for (int64_t i = 0; i < n; ++i) p[i] = static_cast<float>(s + static_cast<double>(i) * st);
  return out;
}

Tensor from_vector(const std::vector<float>& v, const Shape& sizes) {
  const int64_t n = checked_numel("from_vector", sizes);
  if (n != static_cast<int64_t>(v.size())) {
    throw Error("from_vector: shape " + shape_str(sizes) + " needs " + std::to_string(n) +
                " elements, got " + std::to_string(v.size()));
  }
  Tensor out = empty(sizes, kFloat32);
  std::copy(v.begin(), v.end(), out.data_ptr<float>());
  return out;
}

namespace {

// The element type a C++ literal type is stored as: integers -> int64,
// floating -> float32, bool -> bool.
template <class T>
using literal_t = std::conditional_t<std::is_same_v<T, bool>, bool,
                                     std::conditional_t<std::is_integral_v<T>, int64_t, float>>;

}  // namespace

template <class T>
Tensor tensor(std::initializer_list<T> values) {
  using S = literal_t<T>;
  Tensor out = empty({static_cast<int64_t>(values.size())}, dtype_of<S>::value);
  std::transform(values.begin(), values.end(), out.data_ptr<S>(),
                 [](T v) { return static_cast<S>(v); });
  return out;
}

template <class T>
Tensor tensor(std::initializer_list<std::initializer_list<T>> rows) {
  using S = literal_t<T>;
  const size_t cols = rows.size() ? rows.begin()->size() : 0;
  size_t r = 0;
  for (const auto& row : rows) {
    if (row.size() != cols) {
      throw Error("tensor: ragged nested list: row " + std::to_string(r) + " has " +
                  std::to_string(row.size()) + " elements, expected " + std::to_string(cols));
    }
    ++r;
  }
  Tensor out =
      empty({static_cast<int64_t>(rows.size()), static_cast<int64_t>(cols)}, dtype_of<S>::value);
  S* p = out.data_ptr<S>();
  for (const auto& row : rows)
    p = std::transform(row.begin(), row.end(), p, [](T v) { return static_cast<S>(v); });
  return out;
}

#define GRAPH_INSTANTIATE_TENSOR(T)                    \
  template Tensor tensor<T>(std::initializer_list<T>); \
  template Tensor tensor<T>(std::initializer_list<std::initializer_list<T>>);
GRAPH_INSTANTIATE_TENSOR(int)
GRAPH_INSTANTIATE_TENSOR(long)
GRAPH_INSTANTIATE_TENSOR(long long)
GRAPH_INSTANTIATE_TENSOR(float)
GRAPH_INSTANTIATE_TENSOR(double)
GRAPH_INSTANTIATE_TENSOR(bool)
#undef GRAPH_INSTANTIATE_TENSOR

}  // namespace graph
