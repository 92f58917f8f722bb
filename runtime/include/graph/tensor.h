#pragma once
// graph::Tensor: a strided view over shared storage (float32, int64 or bool,
// on the CPU), and graph::Scalar, a host number that mixes with tensors.
//
// Ownership: a Tensor holds a shared_ptr to its Storage; views (t(),
// transpose, slice, reshape of contiguous data, expand) share it. Copying a
// Tensor copies the handle, never the data (clone() copies data).
#include <cstdint>
#include <initializer_list>
#include <iosfwd>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "graph/dtype.h"
#include "graph/error.h"
#include "graph/small_vector.h"

// Marks a public declaration as the op-table entry `name`, so the plugin maps
// calls by declaration rather than spelling. Empty for other compilers.
#if defined(__clang__)
#define GRAPH_OP(name) [[clang::annotate("graph.op", name)]]
#else
#define GRAPH_OP(name)
#endif

// Marks a void function that only checks its arguments and throws: it runs
// eagerly, and the plugin leaves it out of static graphs (their ops report
// bad shapes themselves, with the C++ line). Empty for other compilers.
#if defined(__clang__)
#define GRAPH_EAGER_CHECK [[clang::annotate("graph.eager_check")]]
#else
#define GRAPH_EAGER_CHECK
#endif

namespace graph {

// Sizes, strides and dim lists: inline up to six dims, so tensor geometry
// never allocates in the common case.
using Shape = SmallVector<int64_t, 6>;

// Where a tensor's data lives. CUDA tensors need a build with the CUDA
// backend (CXXGRAPH_CUDA) and a device; to(kCUDA) throws graph::Error
// otherwise. Ops on CUDA tensors run CUDA kernels; mixing devices in one op
// throws (except a 0-d CPU tensor, which acts as a host scalar).
enum class Device : uint8_t { CPU, CUDA };
inline constexpr Device kCPU = Device::CPU;
inline constexpr Device kCUDA = Device::CUDA;
inline constexpr std::string_view device_name(Device d) { return d == Device::CPU ? "cpu" : "cuda"; }
// True when this build has the CUDA backend and a CUDA device is present.
bool cuda_is_available();

std::string shape_str(const Shape& s);  // "[2, 3]"

// A host number: int64, double or bool. Mixed with a tensor it keeps the
// tensor's dtype unless it is of a higher category (PyTorch's "wrapped
// number" rule, promote_with_scalar): int64 tensor + 1.5 -> float32, float32
// tensor + 2 -> float32, float16 tensor * 0.5 -> float16.
class Scalar {
 public:
  Scalar(bool v) : kind_(DType::Bool), i_(v) {}
  Scalar(int v) : kind_(DType::Int64), i_(v) {}
  Scalar(long v) : kind_(DType::Int64), i_(v) {}
  Scalar(long long v) : kind_(DType::Int64), i_(v) {}
  Scalar(float v) : kind_(DType::Float64), d_(v) {}
  Scalar(double v) : kind_(DType::Float64), d_(v) {}

  // Float64, Int64 or Bool: the value's category. Mix with a tensor's dtype
  // through promote_with_scalar, never promote_types.
  DType dtype() const { return kind_; }
  bool is_floating() const { return kind_ == DType::Float64; }
  double to_double() const { return is_floating() ? d_ : static_cast<double>(i_); }
  int64_t to_int() const { return is_floating() ? static_cast<int64_t>(d_) : i_; }
  template <class T> T to() const {
    return is_floating() ? static_cast<T>(d_) : static_cast<T>(i_);
  }

 private:
  DType kind_;
  int64_t i_ = 0;
  double d_ = 0;
};

struct Storage;
namespace autograd {
struct AutogradMeta;
}

class Tensor {
 public:
  // Undefined: defined() is false. User-provided, so that `Tensor{}` and an
  // IValue's default do not zero all ~180 bytes first (value-initialization
  // of a defaulted constructor does): three such fills were most of a small
  // static call's overhead over eager.
  Tensor() noexcept {}

  bool defined() const { return storage_ != nullptr; }
  DType dtype() const { return dtype_; }
  const Shape& sizes() const { return sizes_; }
  const Shape& strides() const { return strides_; }  // in elements
  int64_t dim() const { return static_cast<int64_t>(sizes_.size()); }
  int64_t size(int64_t d) const;    // negative d counts from the end
  int64_t stride(int64_t d) const;
  int64_t numel() const;
  int64_t storage_offset() const { return offset_; }
  bool is_contiguous() const;

  // Typed pointer to element [0,...,0]; throws if T is not the dtype or the
  // data is not on the CPU.
  template <class T> T* data_ptr() const;
  void* raw_data() const;  // untyped, element [0,...,0], on the tensor's device

  // The value of a one-element tensor, converted to T; throws otherwise.
  template <class T> T item() const;
  // Truth of a one-element tensor (what `if (t)` and `while (t)` test).
  explicit operator bool() const;

  // ---- in-place writes and the version counter (inplace.cpp) ----
  // The storage's version counter, as LibTorch's `_version`: every in-place
  // write the runtime makes bumps it (the ops below, optimizer steps,
  // nn::load, copies into existing tensors), and views share it with their
  // base. Out-of-place ops never change it. Writes through a mutable
  // data_ptr<T>() are NOT tracked (as in PyTorch): code that writes a tensor
  // that way and may have handed it to a static graph calls bump_version().
  // Undefined tensors have version 0.
  uint64_t version() const;
  void bump_version() const;
  // In-place ops: compute the out-of-place op, write the result into this
  // tensor's elements (the result must have this tensor's shape, and a
  // floating result cannot go into an integer tensor) and bump the version.
  // Refused on a tensor that requires grad while grad mode is on (the tape
  // would see the old values), as PyTorch refuses it on leaves.
  Tensor& add_(const Tensor& other);
  Tensor& add_(Scalar other);
  Tensor& sub_(const Tensor& other);
  Tensor& sub_(Scalar other);
  Tensor& mul_(const Tensor& other);
  Tensor& mul_(Scalar other);
  Tensor& div_(const Tensor& other);
  Tensor& div_(Scalar other);
  Tensor& clamp_(Scalar lo, Scalar hi);
  Tensor& copy_(const Tensor& src);  // src broadcast to this shape, converted to this dtype
  Tensor& fill_(Scalar value);
  Tensor& zero_();

  GRAPH_OP("contiguous") Tensor contiguous() const;  // this if already contiguous, else a copy
  Tensor clone() const;       // always a contiguous copy
  GRAPH_OP("to") Tensor to(DType dtype) const;   // converted copy (this if same dtype)
  GRAPH_OP("type_as") Tensor type_as(const Tensor& other) const;  // to(other.dtype()); follows other in graphs
  Device device() const;
  Tensor to(Device d) const;  // this if already there, else a contiguous copy

  // Views (no copy).
  GRAPH_OP("t") Tensor t() const;  // 2-D transpose (0-D and 1-D: itself)
  GRAPH_OP("transpose") Tensor transpose(int64_t dim0, int64_t dim1) const;
  GRAPH_OP("slice") Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  GRAPH_OP("expand") Tensor expand(const Shape& shape) const;  // broadcast view, stride 0
  GRAPH_OP("reshape") Tensor view(const Shape& shape) const;    // contiguous input only; -1 infers
  GRAPH_OP("reshape") Tensor reshape(const Shape& shape) const;  // view if possible, else copy

  GRAPH_OP("permute") Tensor permute(const Shape& dims) const;
  GRAPH_OP("squeeze") Tensor squeeze() const;                 // drops every size-1 dim
  GRAPH_OP("squeeze") Tensor squeeze(int64_t dim) const;      // drops `dim` if it has size 1
  GRAPH_OP("unsqueeze") Tensor unsqueeze(int64_t dim) const;
  GRAPH_OP("flatten") Tensor flatten(int64_t start_dim = 0, int64_t end_dim = -1) const;

  // Reductions: whole tensor (0-d result), along one dim, or over dims.
  GRAPH_OP("sum") Tensor sum() const;
  GRAPH_OP("sum") Tensor sum(int64_t dim, bool keepdim = false) const;
  GRAPH_OP("sum") Tensor sum(const Shape& dim, bool keepdim = false) const;
  GRAPH_OP("mean") Tensor mean() const;
  GRAPH_OP("mean") Tensor mean(int64_t dim, bool keepdim = false) const;
  GRAPH_OP("mean") Tensor mean(const Shape& dim, bool keepdim = false) const;
  GRAPH_OP("amax") Tensor amax(const Shape& dim, bool keepdim = false) const;
  GRAPH_OP("amin") Tensor amin(const Shape& dim, bool keepdim = false) const;
  GRAPH_OP("argmax") Tensor argmax(int64_t dim, bool keepdim = false) const;

  // Elementwise methods: x.exp() is exp(x) (ops.h). Static graphs lower the
  // annotated ones and the inline ones of ops.h (x.clamp(lo, hi)).
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) GRAPH_OP(#name) Tensor name() const;
#include "graph/ops.def"
  GRAPH_OP("clamp_min") Tensor clamp_min(Scalar lo) const;
  GRAPH_OP("clamp_max") Tensor clamp_max(Scalar hi) const;
  Tensor clamp(Scalar lo, Scalar hi) const;  // inline, ops.h
  GRAPH_OP("pow") Tensor pow(const Tensor& exponent) const;
  GRAPH_OP("pow") Tensor pow(Scalar exponent) const;
  GRAPH_OP("masked_fill") Tensor masked_fill(const Tensor& mask, Scalar value) const;
  GRAPH_OP("triu") Tensor triu(int64_t diagonal = 0) const;
  GRAPH_OP("tril") Tensor tril(int64_t diagonal = 0) const;
  GRAPH_OP("index_select") Tensor index_select(int64_t dim, const Tensor& index) const;
  GRAPH_OP("gather") Tensor gather(int64_t dim, const Tensor& index) const;
  GRAPH_OP("cumsum") Tensor cumsum(int64_t dim) const;
  GRAPH_OP("bmm") Tensor bmm(const Tensor& b) const;
  // Parts along one dim, as LibTorch (inline in ops.h, where graph::select and
  // the others say what they do): x.select(dim, index), x.narrow(dim, start,
  // length), x.unbind(dim), x.split(size | sizes, dim), x.chunk(chunks, dim).
  Tensor select(int64_t dim, int64_t index) const;
  Tensor narrow(int64_t dim, int64_t start, int64_t length) const;
  std::vector<Tensor> unbind(int64_t dim = 0) const;
  std::vector<Tensor> split(int64_t split_size, int64_t dim = 0) const;
  std::vector<Tensor> split(const Shape& split_sizes, int64_t dim = 0) const;
  std::vector<Tensor> chunk(int64_t chunks, int64_t dim = 0) const;
  // (values, indices) along dim, and argmin (ops.h: graph::max).
  std::tuple<Tensor, Tensor> max(int64_t dim, bool keepdim = false) const;
  std::tuple<Tensor, Tensor> min(int64_t dim, bool keepdim = false) const;
  // Over all elements (0-d): amax, amin, argmax of the flattened tensor.
  Tensor max() const;
  Tensor min() const;
  Tensor amax() const;
  Tensor amin() const;
  Tensor argmax() const;
  Tensor argmin(int64_t dim, bool keepdim = false) const;
  // scatter_add, sort, argsort, topk, norm (ops.h says what they do).
  GRAPH_OP("scatter_add") Tensor scatter_add(int64_t dim, const Tensor& index, const Tensor& src) const;
  std::tuple<Tensor, Tensor> sort(int64_t dim = -1, bool descending = false) const;
  Tensor argsort(int64_t dim = -1, bool descending = false) const;
  std::tuple<Tensor, Tensor> topk(int64_t k, int64_t dim = -1, bool largest = true, bool sorted = true) const;
  Tensor norm(double p = 2.0, const Shape& dims = {}, bool keepdim = false) const;

  // ---- autograd (autograd.h) ----
  bool requires_grad() const;
  // Marks this handle (and copies made from it afterwards) as a leaf whose
  // gradient accumulates in grad(). Returns *this for chaining.
  Tensor& requires_grad_(bool on = true);
  Tensor grad() const;   // undefined until a backward pass reaches this leaf
  void zero_grad();      // drops the accumulated gradient
  bool is_leaf() const;  // not the result of a recorded op
  Tensor detach() const;  // same data, no autograd history
  // Reverse-mode pass from this tensor, starting from 1 (one element only)
  // or from `grad` (the output's shape).
  void backward() const;
  void backward(const Tensor& grad, bool retain_graph = false) const;
  const std::shared_ptr<autograd::AutogradMeta>& autograd_meta() const { return autograd_; }
  void set_autograd_meta(std::shared_ptr<autograd::AutogradMeta> m) { autograd_ = std::move(m); }

  std::string to_string() const;  // values and shape, for printing

  // Low-level constructor: a view with the given geometry over `storage`.
  Tensor(std::shared_ptr<Storage> storage, int64_t offset, Shape sizes, Shape strides,
         DType dtype);
  const std::shared_ptr<Storage>& storage() const { return storage_; }

 private:
  std::shared_ptr<Storage> storage_;
  std::shared_ptr<autograd::AutogradMeta> autograd_;
  int64_t offset_ = 0;
  Shape sizes_, strides_;
  DType dtype_ = DType::Float32;
};

std::ostream& operator<<(std::ostream& os, const Tensor& t);

// Contiguous (row-major) strides of `sizes`.
Shape contiguous_strides(const Shape& sizes);

// ---- factories ----------------------------------------------------------
Tensor empty(const Shape& sizes, DType dtype = kFloat32);
Tensor zeros(const Shape& sizes, DType dtype = kFloat32);
Tensor ones(const Shape& sizes, DType dtype = kFloat32);
Tensor full(const Shape& sizes, Scalar value, DType dtype = kFloat32);
Tensor arange(Scalar end);                          // int64 unless end is floating
Tensor arange(Scalar start, Scalar end, Scalar step = 1);
Tensor from_vector(const std::vector<float>& v, const Shape& sizes);
// The same on a device: zeros({2, 3}, kFloat32, kCUDA). On kCUDA, empty
// allocates from the caching allocator, zeros/ones/full fill on the device;
// arange computes its values on the host and copies them (one copy).
// Without a device (or a CUDA build) they throw like to(kCUDA).
Tensor empty(const Shape& sizes, DType dtype, Device device);
Tensor zeros(const Shape& sizes, DType dtype, Device device);
Tensor ones(const Shape& sizes, DType dtype, Device device);
Tensor full(const Shape& sizes, Scalar value, DType dtype, Device device);
Tensor arange(Scalar start, Scalar end, Scalar step, Device device);

// tensor({1, 2, 3}) is int64, tensor({1.f, 2.f}) float32, tensor({true}) bool;
// tensor({{1.f, 2.f}, {3.f, 4.f}}) is 2-D.
template <class T> Tensor tensor(std::initializer_list<T> values);
template <class T> Tensor tensor(std::initializer_list<std::initializer_list<T>> rows);

}  // namespace graph
