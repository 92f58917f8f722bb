#pragma once
// Helpers for the C++ that codegen writes (graph-codegen, the plugin's
// generator). Header-only so generated sources need nothing beyond the
// runtime library. Users never call these directly: graph/detail/ holds the
// headers only generated code and the runtime include, apart from the public
// API (<graph/graph.h> and the headers beside it), and may change with any
// release.
//
// A generated graph function first checks every input against its graph's
// signature (check_inputs below: kind, dtype, rank): a failed guard writes a
// reason into *why and the function returns false, so the eager body runs
// instead. Inside the graph,
// If and Loop conditions go through truth() (while a CUDA Graph is captured,
// those on device tensors go to device_if / device_loop instead:
// device_control.h); every tensor the function
// allocates itself comes from its GraphBuffers (below), so a second call with
// the same input shapes allocates nothing.
#include <algorithm>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <variant>
#include <vector>

#include "graph/device_control.h"  // If and Loop as CUDA conditional nodes while capturing
#include "graph/detail/loop_support.h"  // the fused loops: GRAPH_DENSE_LOOP, instruction-set variants
#include "graph/reduce_order.h"  // the fused reductions' accumulation order
#include "graph/error.h"
#include "graph/detail/list_grad.h"  // the static backward's gradients of lists
#include "graph/static.h"
#include "graph/tensor.h"

// A graph function (the glue around the fused loops and library calls) is
// compiled at -O1 by GCC: it mostly calls into the runtime, and -O2 spent a
// fifth of a generated source's compile time on it with no measurable gain.
// The loops keep their own levels (cpu_isa.h). Not at -O0, so that
// CXXGRAPH_DEBUG_GENERATED builds stay debuggable.
#if defined(__GNUC__) && !defined(__clang__) && defined(__OPTIMIZE__)
#define GRAPH_GLUE __attribute__((optimize("O1")))
#else
#define GRAPH_GLUE
#endif


namespace graph::detail {

// ---- conditions -------------------------------------------------------------
// What `if (c)` / `while (c)` mean for each kind an IR condition can have; a
// tensor must hold one element (Tensor's explicit operator bool checks that).
inline bool truth(bool b) { return b; }
inline bool truth(int64_t v) { return v != 0; }
inline bool truth(double v) { return v != 0.0; }
inline bool truth(const Tensor& t) { return static_cast<bool>(t); }

// ---- guards -----------------------------------------------------------------
// What a graph's inputs must be is its signature (ir/signature.h), which the
// generated source holds as a constexpr table of InputGuard rows (static.h).
// The graph function checks its inputs against that table, and interpret
// mode checks a call against the same table (the registry's CompiledGraph
// points to it), so both accept the same calls and explain a refused one
// the same way.

// The count, then each input in order: its kind; for a tensor its dtype
// ("input 0 'x': expected a float tensor, got long"), rank and static sizes,
// none of them when it may be undefined and is, nor for an input the graph
// never reads. False at the first mismatch, which explains itself in *why;
// the eager body runs instead.
bool check_inputs(const InputGuard* sig, size_t n, const IValue* in, size_t n_in, std::string* why);

// A static train step's set_grads (ir/passes.h's expand_backward): refuses a
// data tensor that requires grad and a step where no parameter gets a
// gradient (eager backward() throws then too), then adds each parameter's
// gradient into its .grad as backward() does (autograd::accumulate_grad). A
// parameter that does not require grad, or that the loss does not reach
// (undefined gradient), is left alone, and so is one a DistributedDataParallel
// owns (grad_sync.h): grad_sync_wait, before it, wrote that .grad.
// A gradient the graph computed becomes the .grad without a copy (as eager's
// AccumulateGrad takes a fresh gradient) when the .grad was empty, it spans
// its whole storage, and no parameter, data tensor or other gradient shares
// that storage; inside a TakenGrads scope only (the train-step runner's),
// which afterwards copies any taken .grad that a graph output shares.
void set_grads(const std::vector<Tensor>& params, const std::vector<Tensor>& grads, const std::vector<Tensor>& data);

class TakenGrads {
 public:
  TakenGrads();
  ~TakenGrads();
  TakenGrads(const TakenGrads&) = delete;
  TakenGrads& operator=(const TakenGrads&) = delete;
  // Gives each taken .grad whose storage an output shares a copy of its own.
  void unshare(const IValue* out, size_t n_out);

 private:
  friend void set_grads(const std::vector<Tensor>&, const std::vector<Tensor>&, const std::vector<Tensor>&);
  std::vector<Tensor> params_;  // whose .grad was taken this step
  TakenGrads* prev_;
};

// ---- the optimizer in a static train step (ops.def: optimizer_*) ------------
// The prologue reads the optimizer as a handle (static.h: optimizer_handle),
// an int input read at every call, so a changed pointer is seen;
// optimizer_guard refuses a handle that is null, destroyed, or not exactly an optim::SGD or optim::Adam (a subclass
// may override step()): the call then runs its eager body, explained.
bool optimizer_guard(int64_t opt, std::string* why);
// opt.zero_grad(), in program order.
void optimizer_zero_grad(int64_t opt);
// opt.step(), with the gradient of each optimizer parameter that is one of
// `params` taken from `grads` (the graph's values) and of any other from its
// .grad, as eager step() reads it. With no params, every gradient is .grad.
void optimizer_step(int64_t opt, const std::vector<Tensor>& params, const std::vector<Tensor>& grads);
// The live optimizers (optim.cpp's constructor and destructor).
void register_optimizer(const optim::Optimizer* opt, bool alive);

// ---- the gradient all-reduce in a static train step (ops.def: grad_sync_*) ---
// Without a DistributedDataParallel owning a parameter (grad_sync.h) both are
// no-ops for it. grad_sync_start hands the parameters' gradients to their DDP,
// which starts each bucket they complete; grad_sync_wait waits for all of
// them and returns the gradients the rest of the step uses: for a DDP
// parameter its new .grad (the average; under no_sync() the local sum), for
// any other its gradient unchanged. A gradient whose shape is not its
// parameter's is an error.
void grad_sync_start(const std::vector<Tensor>& params, const std::vector<Tensor>& grads);
std::vector<Tensor> grad_sync_wait(const std::vector<Tensor>& params, const std::vector<Tensor>& grads);

// The count alone: a backward graph's inputs come from its forward.
bool fail_num_inputs(size_t got, size_t want, std::string* why);
inline bool guard_num_inputs(size_t got, size_t want, std::string* why) {
  return got == want || fail_num_inputs(got, want, why);
}

// ---- host ints ----------------------------------------------------------------
// C++'s / and % on int64 (truncating), where C++ leaves a zero divisor and
// INT64_MIN / -1 undefined: here they are errors.
inline int64_t int_div(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer division by zero: " + std::to_string(a) + " / 0");
  if (b == -1 && a == INT64_MIN) throw Error("integer division overflows: " + std::to_string(a) + " / -1");
  return a / b;
}
inline int64_t int_mod(int64_t a, int64_t b) {
  if (b == 0) throw Error("integer remainder by zero: " + std::to_string(a) + " % 0");
  return b == -1 ? 0 : a % b;
}
// static_cast<int64_t>(v), where C++ leaves NaN and out-of-range values undefined.
inline int64_t float_to_int(double v) {
  // +-2^63 are exact doubles; [-2^63, 2^63) truncates into int64, NaN fails both tests.
  if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))
    throw Error("the conversion of " + std::to_string(v) + " to an integer is out of range");
  return static_cast<int64_t>(v);
}

// An int list attribute known at run time, held in a 1-D int64 tensor (a
// `Shape` member passed to the graph); interpreter_kernels.cpp.
std::vector<int64_t> int_list(const Tensor& t);

// Int lists the graph computes (`x.sizes()`, a local `Shape`), held like a
// `Shape` member in a 1-D int64 CPU tensor (ir/value_primitives.h).
inline Tensor sizes_tensor(const Tensor& t) { return int_list_tensor(t.sizes()); }
// broadcast_sizes: the shape `ts` broadcast to (interpreter_kernels.cpp).
Tensor broadcast_sizes(const std::vector<Tensor>& ts);
// The assign primitive (ops.def): writes `value` into the storage of `dst`, an
// input the graph updated in place, with autograd off, bumping its version;
// nothing when `value` is `dst` itself (interpreter_kernels.cpp).
void assign(const Tensor& dst, const Tensor& value);
inline Tensor make_shape(std::initializer_list<int64_t> v) {
  Shape s;
  for (int64_t i : v) s.push_back(i);
  return int_list_tensor(s);
}
// The index of element `i` (negative from the end) of an int list of n.
inline int64_t shape_index(int64_t i, int64_t n, const char* what) {
  if (i < -n || i >= n)
    throw Error(std::string(what) + ": index " + std::to_string(i) + " is out of range for a shape of " +
                std::to_string(n) + " dims");
  return i < 0 ? i + n : i;
}
inline int64_t shape_get(const Tensor& s, int64_t i) {
  const std::vector<int64_t> v = int_list(s);
  return v[static_cast<size_t>(shape_index(i, static_cast<int64_t>(v.size()), "shape_get"))];
}
inline Tensor shape_set(const Tensor& s, int64_t i, int64_t value) {
  std::vector<int64_t> v = int_list(s);
  v[static_cast<size_t>(shape_index(i, static_cast<int64_t>(v.size()), "shape_set"))] = value;
  Shape out(v.begin(), v.end());
  return int_list_tensor(out);
}

// permute's gradient permutes by the inverse of `p` (1-D int64).
inline Tensor inverse_permutation(const Tensor& p) {
  const std::vector<int64_t> dims = int_list(p);
  const auto rank = static_cast<int64_t>(dims.size());
  Shape inv(dims.size(), -1);
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = dims[static_cast<size_t>(i)] < 0 ? dims[static_cast<size_t>(i)] + rank : dims[static_cast<size_t>(i)];
    if (d < 0 || d >= rank || inv[static_cast<size_t>(d)] != -1)
      throw Error("permute: the dims are not a permutation of " + std::to_string(rank) + " dims");
    inv[static_cast<size_t>(d)] = i;
  }
  return int_list_tensor(inv);
}

// list_get: element `i` of `l`, negative from the end, range-checked.
inline const Tensor& list_get(const std::vector<Tensor>& l, int64_t i) {
  const int64_t n = static_cast<int64_t>(l.size());
  if (i < -n || i >= n)
    throw Error("list_get: index " + std::to_string(i) + " is out of range for a list of " + std::to_string(n));
  return l[static_cast<size_t>(i < 0 ? i + n : i)];
}

inline std::vector<Tensor> list_append(std::vector<Tensor> l, const Tensor& t) {
  l.push_back(t);
  return l;
}

// ---- fusion groups on the CUDA device ------------------------------------------
// A generated fusion group first asks whether any tensor input is on the
// device; then, instead of its CPU loop, it runs its generated kernel (the
// .graph.cu of the same source, registered under `key`) through
// cuda_fused. `shape` is the loop's shape, already checked on the host.
inline bool any_on_cuda(std::initializer_list<const Tensor*> inputs) {
  for (const Tensor* t : inputs)
    if (t->device() == Device::CUDA) return true;
  return false;
}

// A host scalar the kernel reads: ints and bools in i, floats in f.
struct HostScalar {
  int64_t i = 0;
  double f = 0;
};
inline HostScalar host_scalar(int64_t v) { return {v, 0.0}; }
inline HostScalar host_scalar(double v) { return {0, v}; }
inline HostScalar host_scalar(bool v) { return {v ? 1 : 0, 0.0}; }

// The outputs (dense, on the device, of `out_dtypes`) of the kernel
// registered under `key`, run over `shape` with `inputs` broadcast to it
// (a 0-d CPU tensor goes to the device, as in the eager ops). Throws
// graph::Error naming `kernel` when no kernel is registered under `key`
// (the .graph.cu was not built), for inputs on different devices, and in a
// build without the CUDA backend.
std::vector<Tensor> cuda_fused(const char* key, const char* kernel, const Shape& shape,
                               std::initializer_list<DType> out_dtypes, std::initializer_list<const Tensor*> inputs,
                               std::initializer_list<HostScalar> scalars);

// A reduce group as one fused reduce kernel on the device (codegen:
// reduce_kernel, registered under `key`): the result, of `dtype` and
// `shape` (fused_reduction_shape's, for Device::CUDA), `rows` slots of
// `count` elements, computed from `inputs` (dense, one shape, on the
// device) and `scalars`. Stage-1 partials of a single output live in a
// scratch tensor from the caching allocator. Throws graph::Error naming
// `kernel` when no kernel is registered under `key`, for inputs that are
// not dense device tensors of one shape, and in a build without the CUDA
// backend.
Tensor cuda_fused_reduce(const char* key, const char* kernel, const Shape& shape, int64_t rows, int64_t count,
                         DType dtype, std::initializer_list<const Tensor*> inputs,
                         std::initializer_list<HostScalar> scalars);

// A matmul_epilogue group whose ops cuBLASLt's epilogues compute (codegen's
// match_lt_epilogue): on the device, one cuBLASLt GEMM instead of the GEMM
// and the group's kernel. `bias` is linear's bias or the added vector
// (undefined: none). Falls back to the eager ops (same result) for anything
// the epilogue does not cover: non-float32, non-contiguous operands, a bias
// that is not a [n] vector, empty products, no cuBLASLt algorithm.
enum class GemmEpilogue { Bias, Relu, ReluBias };
Tensor cuda_gemm_epilogue(const Tensor& a, const Tensor& b, bool linear, const Tensor& bias, GemmEpilogue e);

// ---- slices read in place by fused loops ----------------------------------------
// Where a slice starts and how long it is, after Tensor::slice's checks and
// PyTorch's clamping (the same function computes Tensor::slice, tensor.cpp).
// Throws Tensor::slice's errors: undefined or 0-d tensor, dim out of range,
// step <= 0.
struct SliceBounds {
  int64_t dim = 0, start = 0, end = 0, len = 0;
};
SliceBounds slice_bounds(const Tensor& t, int64_t dim, int64_t start, int64_t end, int64_t step);

// A slice in generated code (codegen: every `slice` node). It is checked
// where the source takes it (errors carry that line), and a CPU fused loop
// reads it in place: a pointer into the base and its geometry, no Tensor
// made. Anything else (an eager op, a GEMM, the CUDA path, a returned or
// loop-carried value) calls get(), which makes the view Tensor once, as
// Tensor::slice would (with autograd). `base` must outlive the LazySlice:
// the generator passes a local of an enclosing scope.
class LazySlice {
 public:
  LazySlice(const Tensor& base, int64_t dim, int64_t start, int64_t end, int64_t step) : base_(&base), step_(step) {
    const Shape& s = base.sizes();
    if (base.defined() && dim >= 0 && dim < static_cast<int64_t>(s.size()) && step > 0) {
      // slice_bounds' arithmetic, inline for the common case (nothing to report).
      const int64_t n = s[static_cast<size_t>(dim)];
      const auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
      start = clamp(start);
      end = std::max(clamp(end), start);
      b_ = {dim, start, end, end == start ? 0 : (end - start - 1) / step + 1};
    } else {
      b_ = slice_bounds(base, dim, start, end, step);  // a negative dim, or an error
    }
  }
  LazySlice(Tensor&&, int64_t, int64_t, int64_t, int64_t) = delete;  // would dangle

  const Tensor& get() const {
    if (!view_) view_.emplace(base_->slice(b_.dim, b_.start, b_.end, step_));
    return *view_;
  }
  const Tensor& base() const { return *base_; }
  int64_t dim() const { return b_.dim; }
  int64_t start() const { return b_.start; }
  int64_t step() const { return step_; }
  int64_t len() const { return b_.len; }

 private:
  const Tensor* base_;
  SliceBounds b_;
  int64_t step_;
  mutable std::optional<Tensor> view_;
};

// ---- the dense fast path of a fused loop -----------------------------------------
// Before any broadcast or StridedLoop work, a fused loop asks whether every
// tensor operand is dense with the first one's shape: on the CPU, sizes equal
// to `shape`, flat element i at data + i (the strides of size-1 dims do not
// matter). Then the group's dense kernel runs on the operands' pointers
// directly. Nothing here allocates.
inline const Shape& operand_sizes(const Tensor& t) { return t.sizes(); }
inline Shape operand_sizes(const LazySlice& v) {
  Shape s = v.base().sizes();
  if (!s.empty()) s[static_cast<size_t>(v.dim())] = v.len();
  return s;
}

inline bool operand_dense(const Tensor& t, const Shape& shape) {
  if (!t.defined()) return false;
  const Shape& s = t.sizes();
  const Shape& st = t.strides();
  if (s.size() != shape.size()) return false;
  int64_t expect = 1;
  for (size_t d = s.size(); d-- > 0;) {
    if (s[d] != shape[d]) return false;
    if (s[d] != 1 && st[d] != expect) return false;
    expect *= s[d];
  }
  return t.device() == Device::CPU;
}
inline bool operand_dense(const LazySlice& v, const Shape& shape) {
  const Tensor& b = v.base();
  const Shape& s = b.sizes();
  const Shape& st = b.strides();
  if (s.size() != shape.size()) return false;
  const auto sd = static_cast<size_t>(v.dim());
  int64_t expect = 1;
  for (size_t d = s.size(); d-- > 0;) {
    const int64_t size = d == sd ? v.len() : s[d];
    const int64_t stride = d == sd ? st[d] * v.step() : st[d];
    if (size != shape[d]) return false;
    if (size != 1 && stride != expect) return false;
    expect *= size;
  }
  return b.device() == Device::CPU;
}

template <class T>
const T* operand_data(const Tensor& t) {
  return t.data_ptr<T>();
}
template <class T>
const T* operand_data(const LazySlice& v) {
  const T* p = v.base().template data_ptr<T>();
  return v.len() == 0 ? p : p + v.start() * v.base().strides()[static_cast<size_t>(v.dim())];
}

inline int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

// ---- buffers kept between calls ----------------------------------------------
// Each tensor a generated graph function writes itself (a fused loop's
// output, a GEMM's) has a numbered slot in the function's GraphBuffers. A
// slot keeps the buffers of earlier calls and hands one out again when its
// shape and dtype match and nobody else holds it (its storage's use count is
// 1: the caller dropped the output it was returned as, the loop moved on
// from the carried value it held, the autograd tape let go of it). So in
// steady state a call allocates nothing, and a buffer someone still holds is
// never overwritten: correctness never depends on a lifetime analysis. The
// slot keeps a few buffers so a value carried around a Loop (two alive at
// once) and callers that alternate between a few input shapes still reuse.
class GraphBuffers {
 public:
  static constexpr size_t kPerSlot = 3;
  // GRAPH_BUFFERS=off: every lease takes its tensors from the caching
  // allocator, as eager code does (to compare the two, or to rule buffer
  // reuse out when debugging). Zero-initialized: kept buffers unless the
  // environment says otherwise once the runtime is initialized.
  static bool buffers_off;
  using Slot = std::array<Tensor, kPerSlot>;

  explicit GraphBuffers(size_t slots) : slots_(slots) {}

  // One call's use of the buffers. A call made while another holds them (a
  // second thread, a recursive call) allocates plainly instead of waiting.
  class Lease {
   public:
    explicit Lease(GraphBuffers& b)
        : b_(b), owned_(!buffers_off && !b.busy_.exchange(true, std::memory_order_acquire)) {}
    ~Lease() {
      if (owned_) b_.busy_.store(false, std::memory_order_release);
    }
    Lease(const Lease&) = delete;
    Lease& operator=(const Lease&) = delete;

    // A dense tensor of `shape` and `dtype` for slot `slot`, contents unspecified.
    Tensor take(size_t slot, const Shape& shape, DType dtype) {
      if (!owned_) return empty(shape, dtype);
      return b_.take(b_.slots_.at(slot), shape, dtype);
    }

   private:
    GraphBuffers& b_;
    bool owned_;
  };

 private:
  // The last other holder let go: its writes happen before ours (the
  // fence pairs with the release in shared_ptr's decrement).
  static bool free_buffer(const Tensor& t) {
    if (!t.defined() || t.storage().use_count() != 1) return false;
    std::atomic_thread_fence(std::memory_order_acquire);
    return true;
  }

  static Tensor take(Slot& slot, const Shape& shape, DType dtype) {
    // A reused buffer is about to be overwritten: a new version, so nothing
    // cached from its old contents (packed GEMM weights) is taken for it.
    for (const Tensor& t : slot)
      if (free_buffer(t) && t.dtype() == dtype && t.sizes() == shape) {
        t.bump_version();
        return t;
      }
    // None fits: a fresh buffer, kept in an empty place, else in place of a
    // free one of another shape. When every kept buffer is still held, the
    // new one is not kept (it is handed out and freed as eager code would).
    Tensor fresh = empty(shape, dtype);
    for (Tensor& t : slot)
      if (!t.defined()) return t = fresh;
    for (Tensor& t : slot)
      if (free_buffer(t)) return t = fresh;
    return fresh;
  }

  std::vector<Slot> slots_;
  std::atomic<bool> busy_{false};
};

// ---- GEMM into kept buffers --------------------------------------------------
// matmul(a, b), or linear(a, b, bias) with b the [out, in] weight and bias
// undefined or [out], into a buffer of `slot`, by the eager matmul's kernel
// (BLAS, or a register-blocked loop for tiny products) and then + bias, as
// the eager ops compute it. A float or double contiguous `a` (2-D for
// matmul, any rank >= 2 for linear) and a 2-D `b` take this path; other
// shapes and dtypes, and any shape error, go to the eager op.
//
// A float32 linear (b the weight) bigger than the small-product kernel's
// range runs oneDNN's matmul primitive instead, with b packed once into the
// primitive's layout and kept (keyed on b's storage, geometry and
// Tensor::version, so an in-place update packs again), the bias added by the
// primitive: a few ulps from the eager op's sums (docs/bench/2026-11-25.md, Static vs eager).
Tensor gemm(GraphBuffers::Lease& buffers, size_t slot, const Tensor& a, const Tensor& b, bool linear,
            const Tensor& bias);

// relu(conv2d(x, weight, bias, ...)) as one oneDNN convolution with a relu
// post-op (conv.cpp), for a matmul_epilogue group that is exactly that:
// float32 on the CPU, no gradient recorded. Anything else (another dtype or
// device, inputs that require grad, a case oneDNN refuses) runs the eager
// conv2d, then relu. The post-op maps a NaN to 0, graph::relu keeps it.
Tensor conv2d_relu(const Tensor& x, const Tensor& weight, const Tensor& bias, Shape stride, Shape padding,
                   Shape dilation, int64_t groups);


// ---- reductions fused with their producers ----------------------------------
// Whether a reduce group (codegen/src/fused_groups.cpp) can run as one loop
// nest: every tensor operand on `device` (the CPU unless told; Device::CUDA
// for the fused reduce kernel), contiguous and of the same sizes
// (no broadcast), and the reduced dims (all of them when `dims` is empty)
// exactly a trailing run of those sizes. Then `out` is the result's shape
// (keepdim applied), `rows` the number of output slots and `count` the
// elements reduced into each. False when anything differs, and for input
// the eager reduction refuses (a dim out of range or given twice, amax/amin
// of an empty slot: `needs_elements`), so the eager op reports it.
inline bool fused_reduction_shape(std::initializer_list<const Tensor*> operands, std::initializer_list<int64_t> dims,
                                  bool keepdim, bool needs_elements, Shape& out, int64_t& rows, int64_t& count,
                                  Device device = Device::CPU) {
  const Tensor* first = *operands.begin();
  const Shape& sizes = first->sizes();
  for (const Tensor* t : operands)
    if (t->device() != device || !t->is_contiguous() || t->sizes() != sizes) return false;
  const int64_t rank = static_cast<int64_t>(sizes.size());
  int64_t lowest = dims.size() == 0 ? 0 : rank;
  if (rank == 0 && dims.size() != 0) return false;
  uint64_t seen = 0;
  for (int64_t d : dims) {
    const int64_t w = d < 0 ? d + rank : d;
    if (w < 0 || w >= rank || w >= 64 || (seen >> w & 1)) return false;
    seen |= uint64_t{1} << w;
    lowest = w < lowest ? w : lowest;
  }
  // Trailing: every dim from the lowest reduced one to the last is reduced.
  if (dims.size() != 0 && static_cast<int64_t>(dims.size()) != rank - lowest) return false;
  out.clear();
  rows = 1;
  count = 1;
  for (int64_t d = 0; d < rank; ++d) {
    if (d < lowest) {
      rows *= sizes[d];
      out.push_back(sizes[d]);
    } else {
      count *= sizes[d];
      if (keepdim) out.push_back(1);
    }
  }
  return !(needs_elements && count == 0 && rows > 0);
}

// The packed-weight cache behind gemm (runtime/src/packed_gemm.cpp): calls
// that used it, hits (weight already packed at its current version), packs
// (second use of a weight version: packed then), unpacked (first use of a
// weight version: the primitive reads the weight as it is, same bits, no
// reorder), evictions (least recently used, bounded count and bytes), and
// entries now held. For tests and tuning.
struct PackedGemmStats {
  uint64_t calls = 0, hits = 0, packs = 0, unpacked = 0, evictions = 0;
  size_t entries = 0;
};
PackedGemmStats packed_gemm_stats();
void clear_packed_gemm_cache();

}  // namespace graph::detail
