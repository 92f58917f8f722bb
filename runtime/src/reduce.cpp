// Eager sum and mean, over the whole tensor or along one dim.
//
// Both reduce into an accumulator laid out like the keepdim result, read
// through strides that are 0 along the reduced dims, so one StridedLoop covers
// every layout. Floats accumulate in double for accuracy; integers and bools
// in uint64_t, which wraps on overflow like PyTorch's int64 instead of being
// undefined.
#include <string>
#include <vector>

#include "graph/cpu_loop.h"
#include "graph/ops.h"
#include "storage.h"

namespace graph {

namespace {

// acc[...] += x over `loop` (operand 0 the accumulator, 1 the input).
template <class Acc, class In>
void accumulate(const cpu::StridedLoop<2>& loop, Acc* acc, const In* x) {
  loop.run([&](int64_t n, const auto& off, const auto& st) {
    Acc* a = acc + off[0];
    const In* p = x + off[1];
    if (st[0] == 0 && st[1] == 1) {  // reducing a dense run into one slot
      Acc s = 0;
      for (int64_t i = 0; i < n; ++i) s += static_cast<Acc>(p[i]);
      *a += s;
    } else if (st[0] == 1 && st[1] == 1) {  // adding a dense row into dense slots
      for (int64_t i = 0; i < n; ++i) a[i] += static_cast<Acc>(p[i]);
    } else {
      for (int64_t i = 0; i < n; ++i) a[i * st[0]] += static_cast<Acc>(p[i * st[1]]);
    }
  });
}

struct Plan {
  Shape out_shape;    // result shape (keepdim applied)
  Shape acc_strides;  // accumulator strides over x's shape, 0 along reduced dims
  int64_t out_numel = 1;
  int64_t count = 0;  // elements reduced into each output
};

// The geometry of reducing `x` entirely (`all`) or along `dim`.
Plan make_plan(std::string_view op, const Tensor& x, bool all, int64_t dim, bool keepdim) {
  Plan p;
  const Shape& sizes = x.sizes();
  p.acc_strides.assign(sizes.size(), 0);
  if (all || x.dim() == 0) {
    if (!all) detail::wrap_dim(op, dim, sizes);  // a 0-d tensor accepts dim 0 / -1
    p.count = x.numel();
    return p;
  }
  const int64_t d = detail::wrap_dim(op, dim, sizes);
  Shape keep = sizes;
  keep[d] = 1;
  p.acc_strides = contiguous_strides(keep);
  p.acc_strides[d] = 0;
  for (int64_t s : keep) p.out_numel *= s;
  p.count = sizes[d];
  p.out_shape = keep;
  if (!keepdim) p.out_shape.erase(p.out_shape.begin() + d);
  return p;
}

Tensor reduce(std::string_view op, const Tensor& x, bool all, int64_t dim, bool keepdim,
              bool mean) {
  detail::check_defined(op, x);
  if (mean && !is_floating(x.dtype())) {
    throw Error("mean: expected a floating dtype, got " + std::string(dtype_name(x.dtype())) +
                " (shape " + shape_str(x.sizes()) + "); convert with .to(kFloat32)");
  }
  const Plan p = make_plan(op, x, all, dim, keepdim);
  const cpu::StridedLoop<2> loop(x.sizes(), {p.acc_strides, x.strides()});
  if (is_floating(x.dtype())) {
    std::vector<double> acc(static_cast<size_t>(p.out_numel), 0.0);
    accumulate(loop, acc.data(), x.data_ptr<float>());
    Tensor out = empty(p.out_shape, kFloat32);
    float* o = out.data_ptr<float>();
    // Mean over zero elements is 0.0 / 0 = NaN, as in PyTorch.
    const double count = static_cast<double>(p.count);
    for (int64_t i = 0; i < p.out_numel; ++i)
      o[i] = static_cast<float>(mean ? acc[i] / count : acc[i]);
    return out;
  }
  std::vector<uint64_t> acc(static_cast<size_t>(p.out_numel), 0);
  dispatch_dtype(x.dtype(), [&](auto v) {
    using In = decltype(v);
    accumulate(loop, acc.data(), x.data_ptr<In>());
  });
  Tensor out = empty(p.out_shape, kInt64);
  int64_t* o = out.data_ptr<int64_t>();
  for (int64_t i = 0; i < p.out_numel; ++i) o[i] = static_cast<int64_t>(acc[i]);
  return out;
}

}  // namespace

Tensor sum(const Tensor& x) { return reduce("sum", x, true, 0, false, false); }
Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce("sum", x, false, dim, keepdim, false);
}
Tensor mean(const Tensor& x) { return reduce("mean", x, true, 0, false, true); }
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce("mean", x, false, dim, keepdim, true);
}

Tensor Tensor::sum() const { return graph::sum(*this); }
Tensor Tensor::sum(int64_t dim, bool keepdim) const { return graph::sum(*this, dim, keepdim); }
Tensor Tensor::mean() const { return graph::mean(*this); }
Tensor Tensor::mean(int64_t dim, bool keepdim) const { return graph::mean(*this, dim, keepdim); }

}  // namespace graph
