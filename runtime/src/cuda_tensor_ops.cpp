// The device paths of device_ops.h: tensors become device pointers for the
// kernels of graph/cuda/tensor_kernels.h. Built with the CUDA backend only.
#include <string>

#include "device.h"
#include "device_ops.h"
#include "graph/cuda/cuda.h"
#include "graph/cuda/tensor_kernels.h"

namespace graph::detail {

namespace {

const double* f64(const Tensor& t) { return t.defined() ? static_cast<const double*>(t.raw_data()) : nullptr; }
double* f64_mut(const Tensor& t) { return t.defined() ? static_cast<double*>(t.raw_data()) : nullptr; }
const void* data_or_null(const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; }

}  // namespace

int64_t cuda_first_bad_index(const Tensor& idx, int64_t size) {
  return cuda::find_bad_index(static_cast<const int64_t*>(idx.raw_data()), idx.numel(), size);
}

void cuda_index_walk(bool scatter_add, const Tensor& dst, const Tensor& src, const Tensor& idx, const Shape& shape,
                     const Shape& idx_strides, int64_t dim, bool index_dst, int64_t limit) {
  const char* op = scatter_add ? "scatter_add" : "gather";
  if (static_cast<int>(shape.size()) > cuda::kMaxIndexDims)
    throw Error(std::string(op) + ": cuda: at most " + std::to_string(cuda::kMaxIndexDims) + " dims, got shape " +
                shape_str(shape));
  cuda::IndexWalk w;
  w.ndim = static_cast<int>(shape.size());
  w.dim = static_cast<int>(dim);
  w.index_dst = index_dst;
  w.limit = limit;
  for (int d = 0; d < w.ndim; ++d) {
    w.sizes[d] = shape[d];
    w.dst[d] = dst.stride(d);
    w.src[d] = src.stride(d);
    w.idx[d] = idx_strides[d];
  }
  for (int64_t s : shape)
    if (s == 0) return;
  const auto* p = static_cast<const int64_t*>(idx.raw_data());
  if (scatter_add) cuda::index_scatter_add(dst.dtype(), dst.raw_data(), src.raw_data(), p, w);
  else cuda::index_gather(element_size(dst.dtype()), dst.raw_data(), src.raw_data(), p, w);
}

Tensor cuda_triangle(const Tensor& x, int64_t diagonal, bool upper) {
  const Tensor c = x.contiguous();
  Tensor out = empty_on(Device::CUDA, x.sizes(), x.dtype());
  const int64_t rows = x.sizes()[x.dim() - 2], cols = x.sizes()[x.dim() - 1];
  const int64_t lines = cols == 0 ? 0 : x.numel() / cols;
  cuda::triangle(element_size(x.dtype()), out.raw_data(), c.raw_data(), lines, rows, cols, diagonal, upper);
  return out;
}

Tensor cuda_cumsum(const Tensor& x, int64_t dim, bool reverse) {
  Tensor out = empty_on(Device::CUDA, x.sizes(), x.dtype());
  int64_t outer = 1, n = 1, inner = 1;
  for (int64_t d = 0; d < x.dim(); ++d) (d < dim ? outer : d == dim ? n : inner) *= x.size(d);
  cuda::cumsum_lines(x.dtype(), x.raw_data(), out.raw_data(), outer, n, inner, reverse);
  return out;
}

Tensor cuda_argsort_rows(const Tensor& x, bool descending) {
  Tensor out = empty_on(Device::CUDA, x.sizes(), kInt64);
  const int64_t n = x.size(-1), lines = n ? x.numel() / n : 0;
  cuda::argsort_rows(x.dtype(), x.raw_data(), static_cast<int64_t*>(out.raw_data()), lines, n, descending);
  return out;
}

void cuda_bn_stats(const Tensor& x, int64_t N, int64_t C, int64_t S, const Tensor& mean, const Tensor& var) {
  cuda::bn_channel_stats(x.dtype(), x.raw_data(), N, C, S, f64_mut(mean), f64_mut(var));
}

void cuda_bn_finish(const Tensor& mean, const Tensor& var, const Tensor& invstd, double eps, const Tensor& rm,
                    const Tensor& rv, double momentum, double unbias) {
  cuda::bn_finish(f64(mean), f64(var), f64_mut(invstd), mean.numel(), eps, f64_mut(rm), f64_mut(rv), momentum, unbias);
}

void cuda_bn_normalize(const Tensor& x, const Tensor& mean, const Tensor& invstd, const Tensor& w, const Tensor& b,
                       const Tensor& y, int64_t N, int64_t C, int64_t S) {
  cuda::bn_normalize(x.dtype(), x.raw_data(), f64(mean), f64(invstd), data_or_null(w), data_or_null(b), y.raw_data(),
                     N, C, S);
}

void cuda_bn_backward(bool training, const Tensor& g, const Tensor& x, const Tensor& w, const Tensor& mean,
                      const Tensor& invstd, const Tensor& gx, const Tensor& gw, const Tensor& gb, int64_t N, int64_t C,
                      int64_t S) {
  const auto out = [](const Tensor& t) { return t.defined() ? t.raw_data() : nullptr; };
  cuda::bn_backward(x.dtype(), training, g.raw_data(), x.raw_data(), data_or_null(w), f64(mean), f64(invstd), out(gx),
                    out(gw), out(gb), N, C, S);
}

void cuda_interpolate(bool backward, const Tensor& in, const Tensor& out, const DeviceResize& r) {
  cuda::Resample s;
  s.mode = r.mode, s.align_corners = r.align_corners, s.scale = r.scale;
  s.planes = r.planes, s.ih = r.ih, s.iw = r.iw, s.oh = r.oh, s.ow = r.ow;
  if (backward) cuda::interpolate_backward(in.dtype(), in.raw_data(), out.raw_data(), s);
  else cuda::interpolate_forward(in.dtype(), element_size(in.dtype()), in.raw_data(), out.raw_data(), s);
}

}  // namespace graph::detail
