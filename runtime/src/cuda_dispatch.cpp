// The eager ops on CUDA tensors (device.h): tensors become device pointers
// and a Geometry, and the kernels of the CUDA backend (graph/cuda/cuda.h) run
// on them. Shape checks, dtype promotion and autograd stay in the ops' own
// files, shared with the CPU.
#include <algorithm>
#include <memory>
#include <mutex>
#include <numeric>
#include <string>

#include "device.h"
#include "graph/cpu_loop.h"
#include "graph/cuda/capture.h"
#include "graph/cuda/conditional.h"
#include "graph/cuda/cuda.h"
#include "graph/cuda/dnn.h"
#include "graph/cuda/fused.h"
#include "graph/device_control.h"
#include "graph/detail/generated_support.h"
#include "graph/memory.h"
#include "graph/nn_ops.h"
#include "graph/ops.h"
#include "graph/optim.h"
#include "storage.h"

namespace graph::detail {

namespace {

// Operands at `shape`: the output's strides, then each input's broadcast
// strides, collapsed for the kernels.
cuda::Geometry geometry(const char* op, const Shape& shape, std::initializer_list<const Tensor*> operands) {
  std::vector<Shape> strides;
  for (const Tensor* t : operands) strides.push_back(cpu::broadcast_strides(*t, shape));
  std::vector<const int64_t*> rows;
  for (const Shape& s : strides) rows.push_back(s.data());
  return cuda::collapse(op, static_cast<int>(shape.size()), shape.data(), static_cast<int>(rows.size()),
                        rows.data());
}

// A 0-d CPU operand (a host scalar) mixed with CUDA tensors goes to the device.
Tensor on_device(const Tensor& t) { return t.device() == Device::CUDA ? t : cuda_to(t, Device::CUDA); }

}  // namespace

}  // namespace graph::detail

namespace graph {
bool cuda_is_available() { return cuda::device_count() > 0; }
}  // namespace graph

namespace graph::detail {

void* device_allocate(Device d, size_t nbytes) {
  if (d == Device::CPU) return memory::allocate(nbytes);
  // Without a device cudaMalloc fails like an out-of-memory: say why instead.
  static const bool has_device = cuda::device_count() > 0;
  if (!has_device) cuda::require_device("allocate on cuda");
  return cuda::device_allocator().allocate(nbytes, cuda::current_stream());
}

void device_release(Device d, void* p, size_t nbytes) {
  if (d == Device::CPU) return memory::release(p, nbytes);
  cuda::device_allocator().release(p);
}

Tensor cuda_to(const Tensor& t, Device d) {
  if (t.device() == d) return t;
  if (d == Device::CUDA) {
    cuda::require_device("to(kCUDA)");
    const Tensor src = t.contiguous();
    Tensor out = empty_on(Device::CUDA, src.sizes(), src.dtype());
    cuda::copy_host_to_device(out.raw_data(), src.raw_data(), static_cast<size_t>(src.numel()) * element_size(src.dtype()));
    return out;
  }
  const Tensor src = t.contiguous();  // on the device
  Tensor out = empty(src.sizes(), src.dtype());
  cuda::copy_device_to_host(out.raw_data(), src.raw_data(), static_cast<size_t>(src.numel()) * element_size(src.dtype()));
  return out;
}

void cuda_copy_into(const Tensor& dst, const Tensor& src) {
  // A CPU destination: an op without a CUDA kernel writing its CPU result.
  if (dst.device() != Device::CUDA)
    throw Error("copy: the source of shape " + shape_str(src.sizes()) +
                " is on cuda and the destination on cpu: this op has no CUDA kernel yet; move its inputs "
                "with .to(kCPU)");
  if (src.device() != Device::CUDA && src.dim() != 0)
    throw Error("copy: cannot copy a cpu tensor of shape " + shape_str(src.sizes()) +
                " into a cuda tensor in place; use .to(kCUDA)");
  const Tensor s = on_device(src);
  if (dst.dtype() == s.dtype() && dst.is_contiguous() && s.is_contiguous() && dst.sizes() == s.sizes()) {
    cuda::copy_device_to_device(dst.raw_data(), s.raw_data(), static_cast<size_t>(dst.numel()) * element_size(dst.dtype()));
    return;
  }
  cuda::convert(dst.dtype(), dst.raw_data(), s.dtype(), s.raw_data(), geometry("copy", dst.sizes(), {&dst, &s}));
}

Tensor cuda_unary(OpId op, const Tensor& x, DType compute) {
  const OpInfo& info = op_info(op);
  Tensor out = empty_on(Device::CUDA, x.sizes(), info.rule == DTypeRule::ToBool ? kBool : compute);
  const char* name = info.name.data();
  cuda::unary(op, compute, out.raw_data(), x.raw_data(), geometry(name, x.sizes(), {&out, &x}));
  return out;
}

Tensor cuda_binary(OpId op, const Tensor& a, const Tensor& b, const Shape& shape, DType compute) {
  const OpInfo& info = op_info(op);
  const Tensor da = on_device(a), db = on_device(b);
  Tensor out = empty_on(Device::CUDA, shape, info.rule == DTypeRule::ToBool ? kBool : compute);
  const char* name = info.name.data();
  cuda::binary(op, compute, out.raw_data(), da.raw_data(), db.raw_data(), geometry(name, shape, {&out, &da, &db}));
  return out;
}

Tensor cuda_reduce(std::string_view op, const Tensor& x, const std::vector<int64_t>& dims, const Shape& out_shape,
                   DType out_dtype) {
  const cuda::Reduction r = op == "sum"    ? cuda::Reduction::Sum
                            : op == "mean" ? cuda::Reduction::Mean
                            : op == "amax" ? cuda::Reduction::Max
                            : op == "amin" ? cuda::Reduction::Min
                                           : cuda::Reduction::ArgMax;
  // The kept dims first, then the reduced ones: each output is one row.
  Shape perm;
  std::vector<bool> reduced(static_cast<size_t>(x.dim()), false);
  for (int64_t d : dims) reduced[d] = true;
  int64_t n = 1;
  for (int64_t d = 0; d < x.dim(); ++d)
    if (!reduced[d]) perm.push_back(d);
  for (int64_t d : dims) perm.push_back(d), n *= x.size(d);
  const Tensor in = is_reduced_float(x.dtype()) ? x.to(kFloat32) : x;
  // Kernels accumulate in float, double or int64 (argmax gives int64).
  const DType acc = r == cuda::Reduction::ArgMax ? kInt64 : is_floating(in.dtype()) ? in.dtype() : kInt64;
  // The reduced dims leading a dense input (a bias gradient's sum over the
  // batch): a kernel over its columns, no transposed copy.
  const bool leading = n > 0 && !dims.empty() && dims.size() < static_cast<size_t>(x.dim()) &&
                       dims.back() == static_cast<int64_t>(dims.size()) - 1 && in.is_contiguous();
  if (leading) {
    Tensor out = empty_on(Device::CUDA, out_shape, acc);
    cuda::reduce_columns(r, in.dtype(), in.raw_data(), acc, out.raw_data(), n, in.numel() / n);
    return out.dtype() == out_dtype ? out : out.to(out_dtype);
  }
  const Tensor rows = x.dim() ? in.permute(perm).contiguous() : in.contiguous();
  const int64_t count = n ? rows.numel() / n : 0;
  const int64_t nrows = n ? count : [&] {  // reducing nothing: one output per kept element
    int64_t k = 1;
    for (int64_t s : out_shape) k *= s;
    return k;
  }();
  Tensor out = empty_on(Device::CUDA, out_shape, acc);
  cuda::reduce_rows(r, in.dtype(), rows.raw_data(), acc, out.raw_data(), nrows, n);
  return out.dtype() == out_dtype ? out : out.to(out_dtype);
}

Tensor cuda_softmax(bool log, const Tensor& x, int64_t dim) {
  const Tensor in = is_reduced_float(x.dtype()) ? x.to(kFloat32) : x;
  const int64_t last = x.dim() - 1;
  const bool moved = x.dim() > 0 && dim != last;
  const Tensor rows = moved ? in.transpose(dim, last).contiguous() : in.contiguous();
  const int64_t n = x.dim() ? rows.size(-1) : 1;
  Tensor out = empty_on(Device::CUDA, rows.sizes(), in.dtype());
  cuda::softmax_rows(log, in.dtype(), rows.raw_data(), out.raw_data(), n ? rows.numel() / n : 0, n);
  Tensor res = moved ? out.transpose(dim, last).contiguous() : out;
  return res.dtype() == x.dtype() ? res : res.to(x.dtype());
}

Tensor cuda_matmul(const Tensor& a, const Tensor& b) {
  Shape shape = a.sizes();
  shape.back() = b.size(-1);
  const int64_t m = a.size(-2), k = a.size(-1), n = b.size(-1);
  Tensor out = empty_on(Device::CUDA, shape, a.dtype());
  if (out.numel() == 0) return out;
  if (k == 0) {  // an empty sum: zeros
    cuda::memset_zero(out.raw_data(), static_cast<size_t>(out.numel()) * element_size(out.dtype()));
    return out;
  }
  if (!is_floating(a.dtype()))
    throw Error("matmul: cuda: float32 or float64 operands only, got " + std::string(dtype_name(a.dtype())));
  // Operands cuBLAS can read as they are stored (row-major, or a t() view:
  // the backward's g.t() @ x, linear's weight.t()) take no copy.
  const auto operand = [](const Tensor& t, Tensor& keep) {
    keep = t;
    cuda::GemmOperand o = cuda::gemm_operand(static_cast<int>(t.dim()), t.sizes().data(), t.strides().data());
    if (o.in_place) return o;
    keep = t.contiguous();
    return cuda::gemm_operand(static_cast<int>(keep.dim()), keep.sizes().data(), keep.strides().data());
  };
  Tensor ca, cb;
  const cuda::GemmOperand oa = operand(a, ca), ob = operand(b, cb);
  const int64_t batch = out.numel() / (m * n);
  cuda::gemm(a.dtype(), ca.raw_data(), oa, cb.raw_data(), ob, out.raw_data(), batch, m, n, k);
  return out;
}

void cuda_sgd_update(const Tensor& p, const Tensor& g, const Tensor& buf, const optim::SGDOptions& o, bool first) {
  cuda::SgdStep s;
  s.lr = o.lr(), s.momentum = o.momentum(), s.dampening = o.dampening(), s.weight_decay = o.weight_decay();
  s.nesterov = o.nesterov(), s.first = first;
  cuda::sgd_update(p.dtype(), p.raw_data(), g.raw_data(), buf.defined() ? buf.raw_data() : nullptr, p.numel(), s);
}

void cuda_adam_update(const Tensor& p, const Tensor& g, const Tensor& m, const Tensor& v, const Tensor& vmax,
                      const optim::AdamOptions& o, int64_t step) {
  cuda::AdamStep s;
  s.lr = o.lr(), s.beta1 = o.betas().first, s.beta2 = o.betas().second, s.eps = o.eps(), s.weight_decay = o.weight_decay();
  s.step = step;
  cuda::adam_update(p.dtype(), p.raw_data(), g.raw_data(), m.raw_data(), v.raw_data(),
                    vmax.defined() ? vmax.raw_data() : nullptr, p.numel(), s);
}

void require_cuda(const std::string& what) { cuda::require_device(what); }

Tensor full_on(Device d, const Shape& sizes, Scalar value, DType dtype) {
  if (d == Device::CPU) return full(sizes, value, dtype);
  cuda::require_device("full(kCUDA)");
  Tensor out = empty_on(Device::CUDA, sizes, dtype);
  if (out.numel()) cuda_copy_into(out, full({}, value, dtype));
  return out;
}

// ---- nn ops ------------------------------------------------------------------

namespace {

cuda::ConvShape conv_shape(const Shape& x, const Shape& w, DType t, const Conv2dParams& p) {
  cuda::ConvShape s;
  s.N = x[0], s.C = x[1], s.H = x[2], s.W = x[3];
  s.Cout = w[0], s.kH = w[2], s.kW = w[3];
  s.sH = p.sH, s.sW = p.sW, s.pH = p.pH, s.pW = p.pW, s.dH = p.dH, s.dW = p.dW, s.groups = p.groups;
  s.dtype = t;
  return s;
}

Shape dims4(const int (&d)[4]) { return {d[0], d[1], d[2], d[3]}; }

cuda::PoolShape pool_shape(const Shape& x, DType t, const Pool2dParams& p) {
  cuda::PoolShape s;
  s.planes = x.size() == 4 ? x[0] * x[1] : x[0];
  s.H = x[x.size() - 2], s.W = x[x.size() - 1];
  s.kH = p.kH, s.kW = p.kW, s.sH = p.sH, s.sW = p.sW, s.pH = p.pH, s.pW = p.pW;
  s.max = p.max;
  s.dtype = t;
  return s;
}

void zero_fill(const Tensor& t) {
  cuda::memset_zero(t.raw_data(), static_cast<size_t>(t.numel()) * element_size(t.dtype()));
}

}  // namespace

Tensor cuda_conv2d(const Tensor& x, const Tensor& w, const Conv2dParams& p) {
  const cuda::ConvShape s = conv_shape(x.sizes(), w.sizes(), x.dtype(), p);
  const cuda::ConvDescriptors d = cuda::conv_descriptors(s);
  Tensor out = empty_on(Device::CUDA, dims4(d.y), x.dtype());
  if (out.numel() == 0) return out;
  if (s.C == 0) {  // an empty sum
    zero_fill(out);
    return out;
  }
  cuda::conv2d_forward(s, x.raw_data(), w.raw_data(), out.raw_data());
  return out;
}

Tensor cuda_conv2d_grad_input(const Tensor& w, const Tensor& go, const Shape& x_shape, const Conv2dParams& p) {
  const cuda::ConvShape s = conv_shape(x_shape, w.sizes(), w.dtype(), p);
  Tensor gx = empty_on(Device::CUDA, x_shape, w.dtype());
  if (gx.numel() == 0) return gx;
  if (go.numel() == 0) {
    zero_fill(gx);
    return gx;
  }
  cuda::conv2d_backward_data(s, w.raw_data(), go.raw_data(), gx.raw_data());
  return gx;
}

Tensor cuda_conv2d_grad_weight(const Tensor& x, const Tensor& go, const Shape& w_shape, const Conv2dParams& p) {
  const cuda::ConvShape s = conv_shape(x.sizes(), w_shape, x.dtype(), p);
  Tensor gw = empty_on(Device::CUDA, w_shape, x.dtype());
  if (gw.numel() == 0) return gw;
  if (go.numel() == 0) {
    zero_fill(gw);
    return gw;
  }
  cuda::conv2d_backward_filter(s, x.raw_data(), go.raw_data(), gw.raw_data());
  return gw;
}

Tensor cuda_pool2d(const Tensor& x, const Pool2dParams& p, const Shape& out_shape) {
  Tensor out = empty_on(Device::CUDA, out_shape, x.dtype());
  if (out.numel() == 0) return out;
  cuda::pool2d_forward(pool_shape(x.sizes(), x.dtype(), p), x.raw_data(), out.raw_data());
  return out;
}

Tensor cuda_pool2d_backward(const Tensor& x, const Tensor& y, const Tensor& go, const Pool2dParams& p) {
  Tensor gx = empty_on(Device::CUDA, x.sizes(), x.dtype());
  if (gx.numel() == 0) return gx;
  if (go.numel() == 0) {
    zero_fill(gx);
    return gx;
  }
  cuda::pool2d_backward(pool_shape(x.sizes(), x.dtype(), p), x.raw_data(), y.raw_data(), go.raw_data(), gx.raw_data());
  return gx;
}

std::vector<Tensor> cuda_layer_norm(const Tensor& x, const Tensor& w, const Tensor& b, int64_t M, double eps) {
  const int64_t rows = M == 0 ? 0 : x.numel() / M;
  Tensor y = empty_on(Device::CUDA, x.sizes(), x.dtype());
  Tensor mean = empty_on(Device::CUDA, {rows}, x.dtype()), rstd = empty_on(Device::CUDA, {rows}, x.dtype());
  cuda::layer_norm_rows(x.dtype(), x.raw_data(), w.defined() ? w.raw_data() : nullptr,
                        b.defined() ? b.raw_data() : nullptr, y.raw_data(), mean.raw_data(), rstd.raw_data(), rows, M,
                        eps);
  return {y, mean, rstd};
}

std::vector<Tensor> cuda_layer_norm_backward(const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                                             const Tensor& rstd, int64_t M, bool need_x, bool need_w, bool need_b) {
  const int64_t rows = M == 0 ? 0 : x.numel() / M;
  Tensor gx = need_x ? empty_on(Device::CUDA, x.sizes(), x.dtype()) : Tensor();
  Tensor gw = need_w ? empty_on(Device::CUDA, w.sizes(), x.dtype()) : Tensor();
  Tensor gb = need_b ? empty_on(Device::CUDA, w.defined() ? w.sizes() : Shape{M}, x.dtype()) : Tensor();
  if (rows == 0) {  // no rows: zero weight and bias gradients
    for (Tensor* t : {&gw, &gb})
      if (t->defined()) zero_fill(*t);
    return {gx, gw, gb};
  }
  cuda::layer_norm_backward_rows(x.dtype(), g.raw_data(), x.raw_data(), w.defined() ? w.raw_data() : nullptr,
                                 mean.raw_data(), rstd.raw_data(), need_x ? gx.raw_data() : nullptr,
                                 need_w ? gw.raw_data() : nullptr, need_b ? gb.raw_data() : nullptr, rows, M);
  return {gx, gw, gb};
}

Tensor cuda_where(const Tensor& cond, const Tensor& a, const Tensor& b, const Shape& shape) {
  const Tensor dc = on_device(cond), da = on_device(a), db = on_device(b);
  Tensor out = empty_on(Device::CUDA, shape, a.dtype());
  std::vector<Shape> strides{out.strides(), cpu::broadcast_strides(dc, shape), cpu::broadcast_strides(da, shape),
                             cpu::broadcast_strides(db, shape)};
  const int64_t* rows[4] = {strides[0].data(), strides[1].data(), strides[2].data(), strides[3].data()};
  const cuda::FusedGeometry g = cuda::collapse_fused("where", static_cast<int>(shape.size()), shape.data(), 4, rows);
  cuda::where_select(element_size(a.dtype()), out.raw_data(), dc.raw_data(), da.raw_data(), db.raw_data(), g);
  return out;
}

Tensor cuda_embedding(const Tensor& weight, const Tensor& idx, const std::string& shapes, bool checked) {
  const int64_t num = weight.size(0), D = weight.size(1), n = idx.numel();
  Shape shape = idx.sizes();
  shape.push_back(D);
  Tensor out = empty_on(Device::CUDA, shape, weight.dtype());
  int64_t bad = 0;
  if (!cuda::gather_rows(element_size(weight.dtype()), weight.raw_data(), num, D, static_cast<const int64_t*>(idx.raw_data()),
                         n, out.raw_data(), checked ? nullptr : &bad))
    throw Error("embedding: index " + std::to_string(bad) + " is out of range for a table of " + std::to_string(num) +
                " rows (" + shapes + ")");
  return out;
}

Tensor cuda_embedding_backward(const Tensor& grad, const Tensor& idx, const Shape& weight_shape, DType dtype) {
  Tensor gw = empty_on(Device::CUDA, weight_shape, dtype);
  zero_fill(gw);
  cuda::scatter_add_rows(dtype, grad.raw_data(), static_cast<const int64_t*>(idx.raw_data()), idx.numel(),
                         weight_shape[1], gw.raw_data());
  return gw;
}

}  // namespace graph::detail

// ---- generated fusion-group kernels (generated_support.h) ------------------

namespace graph::detail {

namespace {

// a @ b (linear: a @ b.t()) (+ bias) (then relu) in one cuBLASLt call, or
// undefined where that does not apply (the caller runs the eager ops).
Tensor gemm_lt(const Tensor& a, const Tensor& b, bool linear, const Tensor& bias, bool relu) {
  const auto on = [](const Tensor& t) { return t.device() == Device::CUDA; };
  if (!on(a) || !on(b) || (bias.defined() && !on(bias)) || a.dtype() != kFloat32 || b.dtype() != kFloat32 ||
      a.dim() < 2 || b.dim() != 2 || !a.is_contiguous() || !b.is_contiguous())
    return Tensor();
  const int64_t k = a.size(-1), n = linear ? b.size(0) : b.size(1);
  const int64_t rows = k == 0 ? 0 : a.numel() / k;
  if ((linear ? b.size(1) : b.size(0)) != k || rows == 0 || k == 0 || n == 0) return Tensor();
  if (bias.defined() && (bias.dtype() != kFloat32 || bias.dim() != 1 || bias.size(0) != n || !bias.is_contiguous()))
    return Tensor();
  Shape shape = a.sizes();
  shape.back() = n;
  // One row and no epilogue (an LSTM step's [1, k] @ [k, 4h]): classic
  // cuBLAS's gemv, twice as fast as cuBLASLt's GEMM kernel there.
  if (rows == 1 && !bias.defined() && !relu) return cuda_matmul(a.reshape({1, k}), linear ? b.t() : b).reshape(shape);
  const cuda::LtGemmPlan plan = cuda::plan_lt_gemm(rows, k, n, linear, bias.defined(), relu);
  Tensor out = empty_on(Device::CUDA, shape, kFloat32);
  if (!cuda::gemm_lt(plan, kFloat32, a.raw_data(), b.raw_data(), bias.defined() ? bias.raw_data() : nullptr,
                     out.raw_data()))
    return Tensor();
  return out;
}

}  // namespace

Tensor cuda_gemm_epilogue(const Tensor& a, const Tensor& b, bool linear, const Tensor& bias, GemmEpilogue e) {
  const bool relu = e != GemmEpilogue::Bias;
  if (Tensor y = gemm_lt(a, b, linear, bias, relu); y.defined()) return y;
  Tensor y = linear ? graph::linear(a, b, bias) : graph::matmul(a, b);
  if (!linear && bias.defined()) y = y + bias;
  return relu ? graph::relu(y) : y;
}

Tensor cuda_linear_bias(const Tensor& x, const Tensor& w, const Tensor& bias) {
  return gemm_lt(x, w, true, bias, false);
}

std::vector<Tensor> cuda_fused(const char* key, const char* kernel, const Shape& shape,
                               std::initializer_list<DType> out_dtypes, std::initializer_list<const Tensor*> inputs,
                               std::initializer_list<HostScalar> scalars) {
  const cuda::FusedLauncher launcher = cuda::find_fused_kernel(key);
  if (!launcher)
    throw Error(std::string(kernel) + ": no CUDA kernel is registered for this fusion group ('" + key +
                "'): the generated .graph.cu of its source was not built into this program");
  const size_t n = out_dtypes.size() + inputs.size();
  if (n > static_cast<size_t>(cuda::kMaxFusedOperands) || scalars.size() > static_cast<size_t>(cuda::kMaxFusedScalars))
    throw Error(std::string(kernel) + ": cuda: too many operands for a fused kernel");
  // Operands: outputs (dense), then inputs at the loop's shape; a 0-d CPU
  // tensor goes to the device, any other CPU tensor is an error.
  for (const Tensor* t : inputs)
    if (t->device() != Device::CUDA && t->dim() != 0)
      throw Error(std::string(kernel) + ": expected tensors on one device, got a cpu tensor of shape " +
                  shape_str(t->sizes()) + " among cuda inputs; move it with .to(kCUDA)");
  std::vector<Tensor> ins;
  for (const Tensor* t : inputs) ins.push_back(on_device(*t));
  std::vector<Tensor> outs;
  for (DType d : out_dtypes) outs.push_back(empty_on(Device::CUDA, shape, d));
  std::vector<Shape> strides;
  cuda::FusedArgs args;
  size_t k = 0;
  for (const Tensor& t : outs) {
    strides.push_back(t.strides());
    args.data[k++] = t.raw_data();
  }
  for (const Tensor& t : ins) {
    strides.push_back(cpu::broadcast_strides(t, shape));
    args.data[k++] = t.raw_data();
  }
  std::vector<const int64_t*> rows;
  for (const Shape& s : strides) rows.push_back(s.data());
  args.geometry = cuda::collapse_fused(kernel, static_cast<int>(shape.size()), shape.data(), static_cast<int>(n),
                                       rows.data());
  size_t s = 0;
  for (const HostScalar& h : scalars) args.scalars[s++] = cuda::FusedScalar{h.i, h.f};
  // The dense path reads 16 / (the widest element) elements per step
  // (codegen's V): one such pack per thread.
  const bool vec = cuda::fused_vectorizable(args.geometry, args.data, static_cast<int>(n));
  size_t widest = 1;
  for (DType d : out_dtypes) widest = std::max(widest, element_size(d));
  for (const Tensor& t : ins) widest = std::max(widest, element_size(t.dtype()));
  const int64_t per_thread = vec ? static_cast<int64_t>(16 / widest) : 1;
  args.launch = cuda::fused_launch((args.geometry.numel + per_thread - 1) / per_thread, cuda::device_limits());
  if (vec) args.launch.vec = 2;  // the kernel's flag
  args.launch.pdl = cuda::pdl_allowed();
  args.stream = cuda::current_stream();
  cuda::run_fused(kernel, launcher, args);
  return outs;
}

Tensor cuda_fused_reduce(const char* key, const char* kernel, const Shape& shape, int64_t rows, int64_t count,
                         DType dtype, std::initializer_list<const Tensor*> inputs,
                         std::initializer_list<HostScalar> scalars) {
  const cuda::FusedLauncher launcher = cuda::find_fused_kernel(key);
  if (!launcher)
    throw Error(std::string(kernel) + ": no CUDA kernel is registered for this fused reduction ('" + key +
                "'): the generated .graph.cu of its source was not built into this program");
  if (inputs.size() == 0 || inputs.size() + 1 > static_cast<size_t>(cuda::kMaxFusedOperands) ||
      scalars.size() > static_cast<size_t>(cuda::kMaxFusedScalars))
    throw Error(std::string(kernel) + ": cuda: " + std::to_string(inputs.size()) + " inputs and " +
                std::to_string(scalars.size()) + " scalars for a fused reduction");
  if (dtype != kFloat32 && dtype != kFloat64)
    throw Error(std::string(kernel) + ": cuda: a fused reduction of " + std::string(dtype_name(dtype)) + " (float32, float64 only)");
  if (rows < 0 || count < 0 || shape_numel(shape) != rows)
    throw Error(std::string(kernel) + ": cuda: a fused reduction of " + std::to_string(rows) + " rows of " +
                std::to_string(count) + " into shape " + shape_str(shape));
  const Shape& sizes = (*inputs.begin())->sizes();
  for (const Tensor* t : inputs) {
    if (t->device() != Device::CUDA || !t->is_contiguous() || t->sizes() != sizes)
      throw Error(std::string(kernel) + ": cuda: a fused reduction needs dense cuda inputs of one shape, got a " +
                  std::string(t->device() == Device::CUDA ? "cuda" : "cpu") + " tensor of shape " +
                  shape_str(t->sizes()) + (t->is_contiguous() ? "" : " (strided)"));
  }
  if (shape_numel(sizes) != rows * count)
    throw Error(std::string(kernel) + ": cuda: inputs of shape " + shape_str(sizes) + " do not hold " +
                std::to_string(rows) + " rows of " + std::to_string(count));
  Tensor out = empty_on(Device::CUDA, shape, dtype);
  cuda::FusedArgs args;
  args.data[0] = out.raw_data();
  size_t k = 1;
  for (const Tensor* t : inputs) args.data[k++] = const_cast<void*>(t->raw_data());
  size_t s = 0;
  for (const HostScalar& h : scalars) args.scalars[s++] = cuda::FusedScalar{h.i, h.f};
  args.reduce.rows = rows;
  args.reduce.count = count;
  args.reduce.plan = cuda::fused_reduce_launch(rows, count, sizeof(double), cuda::device_limits());
  // Stage-1 partials: a tensor from the caching allocator, alive until the
  // launches are queued (the allocator's blocks are stream-ordered).
  Tensor partials;
  if (args.reduce.plan.two_stage) {
    partials = empty_on(Device::CUDA, Shape{args.reduce.plan.blocks}, kFloat64);
    args.reduce.partials = partials.raw_data();
  }
  args.launch.blocks = args.reduce.plan.blocks;
  args.launch.threads = args.reduce.plan.threads;
  args.stream = cuda::current_stream();
  cuda::run_fused(kernel, launcher, args);
  return out;
}

}  // namespace graph::detail

// ---- CUDA Graph capture of static graphs (capture.h) ---------------------------

namespace graph::detail {

namespace {

// A replay skips the copy of an input that is the tensor last copied into
// that slot, unchanged since (ValueStamp, storage.h): weights and other
// unchanged inputs cost no launch, as PyTorch's CUDA graph trees skip static
// inputs. In-place writes bump the version (Tensor::version); graphs never
// write their inputs.

// What a captured executable reads and writes: the static inputs (copies
// the replays copy each call's inputs into) and the outputs it writes.
struct CapturePayload {
  // Declared first, destroyed last: the graph's blocks (its outputs among
  // them) return to the cache only after everything here let go of them.
  struct PoolOwner {
    uint64_t id = 0;
    ~PoolOwner() {
      if (id) cuda::device_allocator().free_pool(id);
    }
  } pool;
  std::vector<IValue> in, out;
  // Where each static input tensor (in order, list elements flattened) was
  // last copied from.
  std::vector<ValueStamp> sources;
  // One call at a time uses the static inputs and `sources` (replays of one
  // executable from two threads); the stream orders the device side.
  std::mutex use;
  // Copies `src` into the static input `dst` (source slot `slot`) unless it
  // is the tensor last copied there, unchanged since.
  void refresh(size_t slot, const Tensor& dst, const Tensor& src) {
    if (slot >= sources.size()) sources.resize(slot + 1);
    if (sources[slot].matches(src)) return;
    sources[slot] = ValueStamp(src);  // before the copy: a later write bumps past it
    copy_into(dst, src);
  }
};

// A copy of a device tensor argument (tensors and lists of them) on the
// current stream; scalars as they are.
IValue copy_arg(const IValue& a) {
  if (const Tensor* t = std::get_if<Tensor>(&a)) return t->defined() ? t->clone() : *t;
  if (const auto* l = std::get_if<std::vector<Tensor>>(&a)) {
    std::vector<Tensor> c;
    for (const Tensor& t : *l) c.push_back(t.defined() ? t.clone() : t);
    return c;
  }
  return a;
}

// If and Loop on device conditions as conditional nodes (device_control.h)
// over the CUDA runtime (conditional.h); the bodies' blocks join the pool of
// the stream whose capture they nest in.
const ConditionalBackend& cuda_conditional_backend() {
  static const ConditionalBackend backend{
      [](void* s) { return cuda::conditional_handle(s); },
      [](void* s, uint64_t h, ConditionalBackend::Kind k, int bodies) {
        return cuda::add_conditional_node(s, h, k == ConditionalBackend::Kind::While, bodies);
      },
      [](int depth) { return cuda::conditional_body_stream(depth); },
      [](void* s, void* body, void* parent) {
        cuda::device_allocator().share_pool(s, parent);
        try {
          cuda::begin_body_capture(s, body);
        } catch (...) {
          cuda::device_allocator().close_pool(s);
          throw;
        }
      },
      [](void* s) {
        struct Close {
          void* s;
          ~Close() { cuda::device_allocator().close_pool(s); }
        } close{s};
        cuda::end_body_capture(s);
      },
      [](void* s, uint64_t h, const void* data, DType dtype, bool host, ConditionalBackend::Counter c, int64_t* count,
         int64_t trips) { cuda::set_conditional(s, h, data, dtype, host, static_cast<int>(c), count, trips); },
      [] { return cuda::current_stream(); },
      [](void* s) { cuda::set_current_stream(s); },
      [](const Tensor& t) { return t.device() == Device::CUDA; }};
  return backend;
}

}  // namespace

int cuda_run_captured(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, size_t n_out, std::string* why) {
  cuda::SignatureKey key(std::string(g.mangled_name) + "#" + g.body_hash);
  bool host_tensor = false;
  const auto add_tensor = [&](const Tensor& t) {
    if (!t.defined()) return key.undefined_tensor();
    host_tensor = host_tensor || t.device() != Device::CUDA;
    key.tensor(t.dtype(), t.device() == Device::CUDA ? 1 : 0, static_cast<int>(t.dim()), t.sizes().data(),
               t.strides().data());
  };
  for (size_t i = 0; i < n_in; ++i) {
    if (const Tensor* t = std::get_if<Tensor>(&in[i])) add_tensor(*t);
    else if (const auto* l = std::get_if<std::vector<Tensor>>(&in[i])) {
      key.list(l->size());
      for (const Tensor& t : *l) add_tensor(t);
    } else if (const int64_t* v = std::get_if<int64_t>(&in[i])) key.integer(*v);
    else if (const double* d = std::get_if<double>(&in[i])) key.real(*d);
    else key.boolean(std::get<bool>(in[i]));
  }
  cuda::GraphCaptureCache& cache = cuda::graph_capture_cache();
  // A CPU tensor among the inputs would be copied to the device from host
  // memory the replay no longer owns.
  if (host_tensor) cache.block(key.str(), "a cpu tensor among the inputs");
  const cuda::GraphCaptureCache::Action action = cache.plan(key.str());
  if (action == cuda::GraphCaptureCache::Action::Eager) return 0;
  void* s = cache.stream();
  if (action == cuda::GraphCaptureCache::Action::Capture) {
    auto payload = std::make_shared<CapturePayload>();
    for (size_t i = 0; i < n_in; ++i) {
      payload->in.push_back(copy_arg(in[i]));
      if (const Tensor* t = std::get_if<Tensor>(&in[i])) payload->sources.emplace_back(*t);
      else if (const auto* l = std::get_if<std::vector<Tensor>>(&in[i]))
        for (const Tensor& e : *l) payload->sources.emplace_back(e);
    }
    payload->out.resize(n_out);
    cuda::stream_wait(s, cuda::current_stream());  // the copies first
    bool guard_failed = false;
    std::string reason;
    bool ok = false;
    {
      const cuda::StreamGuard on(s);
      // Every block the capture allocates belongs to the graph (its replays
      // write them) until the executable is dropped.
      payload->pool.id = cuda::device_allocator().open_pool(s);
      struct Close {
        void* s;
        ~Close() { cuda::device_allocator().close_pool(s); }
      } close{s};
      ok = cache.capture(
          key.str(),
          [&] {
            const DeviceControlScope device_control(&cuda_conditional_backend());
            if (!g.fn(payload->in.data(), n_in, payload->out.data(), why)) {
              guard_failed = true;
              throw Error("a guard failed");
            }
          },
          payload, &reason);
    }
    if (!ok) {
      if (guard_failed) return -1;
      if (explain_enabled()) explain(g.mangled_name, "not captured into a CUDA Graph: " + reason);
      return 0;  // blocked from now on; this call runs uncaptured
    }
  }
  // Replay: this call's inputs that changed into the static ones, one
  // launch, the outputs copied out (the next replay overwrites the static
  // ones).
  const auto p = std::static_pointer_cast<CapturePayload>(cache.payload(key.str()));
  if (!p) return 0;  // evicted meanwhile
  cuda::stream_wait(s, cuda::current_stream());  // after the work that made the inputs
  {
    const std::lock_guard lock(p->use);
    const cuda::StreamGuard on(s);
    size_t slot = 0;
    for (size_t i = 0; i < n_in; ++i) {
      if (const Tensor* t = std::get_if<Tensor>(&p->in[i])) {
        if (t->defined()) p->refresh(slot, *t, std::get<Tensor>(in[i]));
        ++slot;
      } else if (const auto* l = std::get_if<std::vector<Tensor>>(&p->in[i])) {
        const auto& src = std::get<std::vector<Tensor>>(in[i]);
        for (size_t j = 0; j < l->size(); ++j, ++slot)
          if ((*l)[j].defined()) p->refresh(slot, (*l)[j], src[j]);
      }
    }
    if (!cache.replay(key.str())) return 0;
    for (size_t i = 0; i < n_out; ++i) out[i] = copy_arg(p->out[i]);
  }
  cuda::stream_wait(cuda::current_stream(), s);  // later work on this thread's stream after the outputs
  return 1;
}

}  // namespace graph::detail
