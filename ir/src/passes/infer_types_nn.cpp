// infer_types' rules for the nn ops: linear, convolutions, pools, pad, interpolate, the
// normalizations and embedding (the rest are in infer_types_rules.cpp).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/error.h"
#include "infer_types_rules.h"

namespace graph::ir::type_rules {

// x [..., in] with weight [out, in] and bias [out] (or undefined).
Type linear(const Node* n) {
  Type out = Type::tensor();
  out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
  const Dims* x = dims_of(n->input(0));
  const Dims* w = dims_of(n->input(1));
  if (w && w->size() != 2) shape_error(n, "the weight must be 2-D, is " + dims_str(*w));
  if (x && x->empty()) shape_error(n, "the input needs at least one dimension");
  if (x && w) require_equal(n, x->back(), (*w)[1], "input features and weight columns differ " + dims_str(*x) + " x " + dims_str(*w));
  if (const Dims* b = dims_of(n->input(2)); b && w) {
    if (b->size() != 1) shape_error(n, "the bias must be 1-D, is " + dims_str(*b));
    require_equal(n, (*b)[0], (*w)[0], "bias and weight rows differ");
  }
  if (x && w) {
    Dims d = *x;
    d.back() = (*w)[0];
    out.dims = std::move(d);
  }
  return out;
}

// conv2d and the pools: (size + 2 * padding - dilation * (kernel - 1) - 1) / stride + 1.
Dim window_out(const Node* n, const Dim& size, int64_t kernel, int64_t stride, int64_t pad, int64_t dil) {
  if (!size.is_static()) return Dim::unknown();
  if (stride <= 0) shape_error(n, "the stride must be positive");
  const int64_t o = (size.size + 2 * pad - dil * (kernel - 1) - 1) / stride + 1;
  if (o <= 0) shape_error(n, "the input size " + std::to_string(size.size) + " is too small for the kernel");
  return Dim::of(o);
}

Type conv2d(const Node* n) {
  Type out = Type::tensor();
  out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
  const Dims* x = dims_of(n->input(0));
  const Dims* w = dims_of(n->input(1));
  if (x && x->size() != 4) shape_error(n, "the input must be 4-D [N, C, H, W], is " + dims_str(*x));
  if (w && w->size() != 4) shape_error(n, "the weight must be 4-D [O, C/groups, kH, kW], is " + dims_str(*w));
  if (!x || !w) return out;
  const auto stride = ints_or(n, "stride", {1, 1}), pad = ints_or(n, "padding", {0, 0}),
             dil = ints_or(n, "dilation", {1, 1});
  const int64_t groups = attr_or(n, "groups", 1);
  if ((*w)[1].is_static()) require_equal(n, (*x)[1], Dim::of((*w)[1].size * groups), "input channels and weight channels * groups differ");
  Dims d{(*x)[0], (*w)[0]};
  for (size_t i = 0; i < 2; ++i) {
    const Dim& k = (*w)[2 + i];
    d.push_back(k.is_static() ? window_out(n, (*x)[2 + i], k.size, stride.at(i % stride.size()), pad.at(i % pad.size()),
                                           dil.at(i % dil.size()))
                              : Dim::unknown());
  }
  out.dims = std::move(d);
  return out;
}

// (size - 1) * stride - 2 * padding + dilation * (kernel - 1) + output_padding + 1;
// the weight is [C_in, C_out / groups, kH, kW].
Type conv_transpose2d(const Node* n) {
  Type out = Type::tensor();
  out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
  const Dims* x = dims_of(n->input(0));
  const Dims* w = dims_of(n->input(1));
  if (x && x->size() != 4) shape_error(n, "the input must be 4-D [N, C, H, W], is " + dims_str(*x));
  if (w && w->size() != 4) shape_error(n, "the weight must be 4-D [C_in, C_out/groups, kH, kW], is " + dims_str(*w));
  if (!x || !w) return out;
  const auto stride = ints_or(n, "stride", {1, 1}), pad = ints_or(n, "padding", {0, 0}),
             opad = ints_or(n, "output_padding", {0, 0}), dil = ints_or(n, "dilation", {1, 1});
  const int64_t groups = attr_or(n, "groups", 1);
  require_equal(n, (*x)[1], (*w)[0], "input channels and weight dim 0 differ");
  Dims d{(*x)[0], (*w)[1].is_static() ? Dim::of((*w)[1].size * groups) : Dim::unknown()};
  for (size_t i = 0; i < 2; ++i) {
    const Dim& k = (*w)[2 + i];
    const Dim& in = (*x)[2 + i];
    if (!k.is_static() || !in.is_static()) {
      d.push_back(Dim::unknown());
      continue;
    }
    const int64_t o = (in.size - 1) * stride.at(i % stride.size()) - 2 * pad.at(i % pad.size()) +
                      dil.at(i % dil.size()) * (k.size - 1) + opad.at(i % opad.size()) + 1;
    if (o <= 0) shape_error(n, "the output size " + std::to_string(o) + " is not positive");
    d.push_back(Dim::of(o));
  }
  out.dims = std::move(d);
  return out;
}

Type pool2d(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  const Dims* x = dims_of(n->input(0));
  if (!x) return out;
  if (x->size() != 3 && x->size() != 4) shape_error(n, "the input must be 3-D or 4-D, is " + dims_str(*x));
  const auto kernel = ints_or(n, "kernel", {});
  if (kernel.empty()) return out;
  auto stride = ints_or(n, "stride", kernel);
  if (stride.empty()) stride = kernel;  // stride=[]: the default, as the eager op
  const auto pad = ints_or(n, "padding", {0, 0});
  Dims d(x->begin(), x->end() - 2);
  for (size_t i = 0; i < 2; ++i)
    d.push_back(window_out(n, (*x)[x->size() - 2 + i], kernel.at(i % kernel.size()), stride.at(i % stride.size()),
                           pad.at(i % pad.size()), 1));
  out.dims = std::move(d);
  return out;
}

Type adaptive_pool2d(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  const Dims* x = dims_of(n->input(0));
  if (!x) return out;
  if (x->size() != 3 && x->size() != 4) shape_error(n, "the input must be 3-D or 4-D, is " + dims_str(*x));
  const auto size = ints_or(n, "output_size", {});
  if (size.empty()) return out;
  if (size.size() > 2) shape_error(n, "output_size must have 1 or 2 elements");
  Dims d(x->begin(), x->end() - 2);
  for (size_t i = 0; i < 2; ++i) {
    const int64_t o = size[i % size.size()];
    if (o <= 0) shape_error(n, "output_size must be positive");
    d.push_back(Dim::of(o));
  }
  out.dims = std::move(d);
  return out;
}

Type layer_norm(const Node* n) {
  Type out = n->input(0)->type();
  const Dims* x = dims_of(n->input(0));
  if (!x || !n->has_attr("normalized_shape")) return out;
  const auto norm = ints_or(n, "normalized_shape", {});
  if (norm.size() > x->size()) shape_error(n, "normalized_shape has more dimensions than the input " + dims_str(*x));
  for (size_t i = 0; i < norm.size(); ++i)
    require_equal(n, (*x)[x->size() - norm.size() + i], Dim::of(norm[i]), "the input's trailing dimensions and normalized_shape differ");
  return out;
}

// batch_norm(x [N, C, ...], running_mean, running_var, weight, bias: [C] or
// undefined) -> x's type.
Type batch_norm(const Node* n) {
  Type out = n->input(0)->type();
  const Dims* x = dims_of(n->input(0));
  if (!x) return out;
  if (x->size() < 2) shape_error(n, "the input must have at least 2 dimensions [N, C, ...], is " + dims_str(*x));
  for (size_t i = 1; i < 5 && i < n->inputs().size(); ++i) {
    const Dims* p = dims_of(n->input(i));
    if (!p) continue;
    if (p->size() != 1) shape_error(n, "the per-channel operands must be 1-D [C], got " + dims_str(*p));
    require_equal(n, (*x)[1], (*p)[0], "the input's channels (dim 1) and a per-channel operand differ " + dims_str(*x) +
                                           " and " + dims_str(*p));
  }
  return out;
}

// embedding(weight [num, dim], indices [...]) -> [..., dim].
Type embedding(const Node* n) {
  Type out = Type::tensor();
  out.dtype = n->input(0)->type().dtype;
  const Dims* w = dims_of(n->input(0));
  const Dims* idx = dims_of(n->input(1));
  if (w && w->size() != 2) shape_error(n, "the weight must be 2-D, is " + dims_str(*w));
  if (n->input(1)->type().dtype && !is_integral(*n->input(1)->type().dtype))
    shape_error(n, "the indices must be integers");
  if (w && idx) {
    Dims d = *idx;
    d.push_back((*w)[1]);
    out.dims = std::move(d);
  }
  return out;
}

// pad{pad=[before, after, ...]}(x): pairs from the last dim backwards, each
// dim grown (or, negative, cropped) by its pair; at most one pair per dim.
Type pad(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  const Dims* x = dims_of(n->input(0));
  const auto amounts = ints_or(n, "pad", {});
  if (amounts.size() % 2 != 0)
    shape_error(n, "expected pairs of amounts (before, after), got " + std::to_string(amounts.size()) + " amounts");
  if (!x) return out;
  if (amounts.size() / 2 > x->size())
    shape_error(n, std::to_string(amounts.size() / 2) + " pairs of amounts for a tensor of shape " + dims_str(*x));
  Dims d = *x;
  for (size_t i = 0; i < amounts.size() / 2; ++i) {
    Dim& s = d[d.size() - 1 - i];
    if (!s.is_static()) {
      s = Dim::unknown();
      continue;
    }
    const int64_t size = s.size + amounts[2 * i] + amounts[2 * i + 1];
    if (size < 0)
      shape_error(n, "the input size " + std::to_string(s.size) + " plus the amounts " + std::to_string(amounts[2 * i]) +
                         " and " + std::to_string(amounts[2 * i + 1]) + " is negative");
    s = Dim::of(size);
  }
  out.dims = std::move(d);
  return out;
}

// interpolate{size | scale_factor, mode, align_corners}(x [N, C, L] or [N, C, H, W]):
// the eager checks (runtime/src/interpolate.cpp), so a graph refuses what the
// eager call would; the spatial dims are the sizes, or floor(in * scale_factor).
Type interpolate(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  const int64_t mode = attr_or(n, "mode", 0);
  const bool ac = n->has_attr("align_corners") && std::get_if<bool>(&n->attrs().at("align_corners")) &&
                  std::get<bool>(n->attrs().at("align_corners"));
  if (mode < 0 || mode > 2) shape_error(n, "unknown mode " + std::to_string(mode) + " (0 nearest, 1 linear, 2 bilinear)");
  if (mode == 0 && ac) shape_error(n, "align_corners can only be set with the interpolating modes (linear, bilinear)");
  if (mode != 0 && out.dtype && !is_floating(*out.dtype))
    shape_error(n, "linear modes need a floating input, got " + std::string(dtype_name(*out.dtype)));
  const Dims* x = dims_of(n->input(0));
  if (!x) return out;
  if (x->size() != 3 && x->size() != 4)
    shape_error(n, "expected a 3-D [N, C, L] or 4-D [N, C, H, W] input, got " + dims_str(*x));
  if ((mode == 1 && x->size() != 3) || (mode == 2 && x->size() != 4))
    shape_error(n, std::string(mode == 1 ? "linear mode needs a 3-D" : "bilinear mode needs a 4-D") + " input, got " +
                       dims_str(*x));
  const size_t spatial = x->size() - 2;
  Dims d(x->begin(), x->begin() + 2);
  const ir::AttrValue* scale = n->has_attr("scale_factor") ? &n->attrs().at("scale_factor") : nullptr;
  if (scale) {
    const double* f = std::get_if<double>(scale);
    const int64_t* i = std::get_if<int64_t>(scale);
    const std::optional<double> s = f ? std::optional<double>(*f) : i ? std::optional<double>(double(*i)) : std::nullopt;
    if (s && !(*s > 0)) shape_error(n, "expected a positive scale_factor, got " + std::to_string(*s));
    for (size_t k = 0; k < spatial; ++k) {
      const Dim& in = (*x)[2 + k];
      if (!s || !in.is_static()) {
        d.push_back(Dim::unknown());
        continue;
      }
      const auto o = static_cast<int64_t>(std::floor(static_cast<double>(in.size) * *s));
      if (o < 1) shape_error(n, "scale_factor " + std::to_string(*s) + " gives an empty output for input " + dims_str(*x));
      d.push_back(Dim::of(o));
    }
  } else {
    if (!n->has_attr("size")) shape_error(n, "needs a size or a scale_factor attribute");
    const auto size = ints_or(n, "size", {});
    if (!std::get_if<std::vector<int64_t>>(&n->attrs().at("size")) && !std::get_if<int64_t>(&n->attrs().at("size"))) {
      d.resize(x->size(), Dim::unknown());  // sizes known at run time
      out.dims = std::move(d);
      return out;
    }
    bool ok = size.size() == spatial;
    for (int64_t s : size) ok = ok && s > 0;
    if (!ok)
      shape_error(n, "expected " + std::to_string(spatial) + " positive output sizes for input " + dims_str(*x) +
                         ", got " + std::to_string(size.size()) + " sizes");
    for (int64_t s : size) d.push_back(Dim::of(s));
  }
  out.dims = std::move(d);
  return out;
}

}  // namespace graph::ir::type_rules
