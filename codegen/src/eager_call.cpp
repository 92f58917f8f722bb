// Nodes that run one eager op with its attributes: views, reductions along
// dims, and the ops with their own kernels (softmax, linear, layer_norm, ...).
// The attributes follow the conventions at the top of ops.def; the C++ call
// is the public eager function the plugin lowered the node from, so eager and
// static results agree by construction. Also the list primitives.
#include <cmath>
#include <functional>
#include <string>

#include "emitter.h"
#include "graph/error.h"
#include "graph/ir/value_primitives.h"

namespace graph::codegen::detail {

namespace {

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "::graph::Shape{";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "}";
}

using Names = std::function<std::string(const ir::Value*)>;

// Attribute `k` of `n` as a C++ argument, or `fallback` when absent. One
// known at run time (ir/value_primitives.h) is read from the node's inputs
// (named by `name`).
std::string attr(const Names& name, const ir::Node* n, const std::string& k, const std::string& fallback = "") {
  if (!n->has_attr(k)) {
    if (fallback.empty()) throw Error("codegen: '" + n->op() + "' needs the attribute '" + k + "'");
    return fallback;
  }
  if (auto d = ir::dynamic_attr(*n, k)) {
    if (d->range) {
      std::string s = "::graph::Shape{";
      for (size_t i = d->begin; i < d->end; ++i) s += (i > d->begin ? ", " : "") + name(n->input(i));
      return s + "}";
    }
    const ir::Value* v = n->input(d->begin);
    if (v->type().is_tensor()) return "::graph::detail::int_list(" + name(v) + ")";
    return name(v);
  }
  const ir::AttrValue& a = n->attrs().at(k);
  if (auto* i = std::get_if<int64_t>(&a)) return "int64_t{" + std::to_string(*i) + "}";
  if (auto* d = std::get_if<double>(&a)) {
    // masked_fill's -inf (attention masks), spelled as generated constants are.
    if (std::isnan(*d)) return "std::numeric_limits<double>::quiet_NaN()";
    if (std::isinf(*d)) return *d > 0 ? "std::numeric_limits<double>::infinity()" : "-std::numeric_limits<double>::infinity()";
    std::string s = std::to_string(*d);
    char buf[64];
    snprintf(buf, sizeof buf, "%.17g", *d);
    s = buf;
    if (s.find_first_of(".en") == std::string::npos) s += ".0";
    return s;
  }
  if (auto* b = std::get_if<bool>(&a)) return *b ? "true" : "false";
  if (auto* l = std::get_if<std::vector<int64_t>>(&a)) return ints(*l);
  throw Error("codegen: the attribute '" + k + "' of '" + n->op() + "' has an unexpected kind");
}

// `dim` as a dim list (amax, amin and lists for sum/mean).
std::string dims(const Names& name, const ir::Node* n) {
  const ir::AttrValue& a = n->attrs().at("dim");
  if (auto* i = std::get_if<int64_t>(&a)) return ints({*i});
  if (auto d = ir::dynamic_attr(*n, "dim"); d && !d->range && !n->input(d->begin)->type().is_tensor())
    return "::graph::Shape{" + name(n->input(d->begin)) + "}";
  return attr(name, n, "dim");
}

}  // namespace

// The eager call computing `n` (whose inputs are named by name()).
std::string Emitter::eager_call(const ir::Node* n, const OpInfo& op) {
  auto in = [&](size_t i) { return name(n->input(i)); };
  const Names nm = [&](const ir::Value* v) { return name(v); };
  const std::string f = "::graph::" + std::string(op.name);
  switch (op.id) {
    case OpId::matmul: return f + "(" + in(0) + ", " + in(1) + ")";
    case OpId::t: return in(0) + ".t()";
    case OpId::transpose: return in(0) + ".transpose(" + attr(nm, n, "dim0") + ", " + attr(nm, n, "dim1") + ")";
    case OpId::permute: return in(0) + ".permute(" + attr(nm, n, "dims") + ")";
    case OpId::reshape: return in(0) + ".reshape(" + attr(nm, n, "shape") + ")";
    case OpId::expand: return in(0) + ".expand(" + attr(nm, n, "shape") + ")";
    case OpId::slice:
      return in(0) + ".slice(" + attr(nm, n, "dim") + ", " + attr(nm, n, "start") + ", " + attr(nm, n, "end") + ", " +
             attr(nm, n, "step", "1") + ")";
    case OpId::squeeze: return in(0) + ".squeeze(" + (n->has_attr("dim") ? attr(nm, n, "dim") : "") + ")";
    case OpId::unsqueeze: return in(0) + ".unsqueeze(" + attr(nm, n, "dim") + ")";
    case OpId::flatten: return in(0) + ".flatten(" + attr(nm, n, "start_dim", "0") + ", " + attr(nm, n, "end_dim", "-1") + ")";
    case OpId::sum:
    case OpId::mean:
    case OpId::argmax:
      if (!n->has_attr("dim")) return f + "(" + in(0) + ")";
      return f + "(" + in(0) + ", " + attr(nm, n, "dim") + ", " + attr(nm, n, "keepdim", "false") + ")";
    case OpId::amax:
    case OpId::amin:
      if (!n->has_attr("dim")) return f + "(" + in(0) + ")";
      return f + "(" + in(0) + ", " + dims(nm, n) + ", " + attr(nm, n, "keepdim", "false") + ")";
    case OpId::softmax:
    case OpId::log_softmax: return f + "(" + in(0) + ", " + attr(nm, n, "dim") + ")";
    case OpId::where: return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ")";
    case OpId::masked_fill:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "value") + ", " + attr(nm, n, "invert", "false") +
             ", " + attr(nm, n, "promote", "false") + ")";
    case OpId::triu: case OpId::tril: return f + "(" + in(0) + ", " + attr(nm, n, "diagonal", "int64_t{0}") + ")";
    case OpId::index_select:
    case OpId::gather: return f + "(" + in(0) + ", " + attr(nm, n, "dim") + ", " + in(1) + ")";
    case OpId::cumsum: return f + "(" + in(0) + ", " + attr(nm, n, "dim") + ")";
    case OpId::bmm: return f + "(" + in(0) + ", " + in(1) + ")";
    case OpId::scatter_add: return f + "(" + in(0) + ", " + attr(nm, n, "dim") + ", " + in(1) + ", " + in(2) + ")";
    case OpId::argsort:
      if (n->has_attr("k"))
        return "::graph::detail::argsort_first(" + in(0) + ", " + attr(nm, n, "dim", "int64_t{-1}") + ", " +
               attr(nm, n, "descending", "false") + ", " + attr(nm, n, "k") + ")";
      return f + "(" + in(0) + ", " + attr(nm, n, "dim", "int64_t{-1}") + ", " + attr(nm, n, "descending", "false") + ")";
    case OpId::to: {
      DType dt{};
      if (!n->has_attr("dtype") || !dtype_from_token(n->s("dtype"), dt))
        throw Error("codegen: 'to' needs 'dtype', a dtype token (\"f32\")");
      return in(0) + ".to(static_cast<::graph::DType>(" + std::to_string(static_cast<int>(dt)) + "))";
    }
    case OpId::contiguous: return in(0) + ".contiguous()";
    case OpId::type_as: return in(0) + ".type_as(" + in(1) + ")";
    case OpId::rand_like:
    case OpId::randn_like: return f + "(" + in(0) + ")";
    case OpId::linear: return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ")";
    case OpId::layer_norm:
      return f + "(" + in(0) + ", " + attr(nm, n, "normalized_shape") + ", " + in(1) + ", " + in(2) + ", " +
             attr(nm, n, "eps", "1e-5") + ")";
    case OpId::conv2d:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + attr(nm, n, "stride", "{1, 1}") + ", " +
             attr(nm, n, "padding", "{0, 0}") + ", " + attr(nm, n, "dilation", "{1, 1}") + ", " + attr(nm, n, "groups", "1") + ")";
    case OpId::conv_transpose2d:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + attr(nm, n, "stride", "{1, 1}") + ", " +
             attr(nm, n, "padding", "{0, 0}") + ", " + attr(nm, n, "output_padding", "{0, 0}") + ", " +
             attr(nm, n, "groups", "1") + ", " + attr(nm, n, "dilation", "{1, 1}") + ")";
    case OpId::max_pool2d:
    case OpId::avg_pool2d:
      return f + "(" + in(0) + ", " + attr(nm, n, "kernel") + ", " + attr(nm, n, "stride", "{}") + ", " +
             attr(nm, n, "padding", "{0, 0}") + ")";
    case OpId::adaptive_avg_pool2d: return f + "(" + in(0) + ", " + attr(nm, n, "output_size") + ")";
    case OpId::interpolate: {
      // The enum is an int attribute (0 nearest, 1 linear, 2 bilinear).
      const std::string mode = "static_cast<::graph::InterpolateMode>(" + attr(nm, n, "mode", "int64_t{0}") + ")";
      const std::string ac = attr(nm, n, "align_corners", "false");
      if (n->has_attr("scale_factor"))
        return "::graph::interpolate_scale(" + in(0) + ", " + attr(nm, n, "scale_factor") + ", " + mode + ", " + ac + ")";
      return f + "(" + in(0) + ", " + attr(nm, n, "size") + ", " + mode + ", " + ac + ")";
    }
    case OpId::pad: return f + "(" + in(0) + ", " + attr(nm, n, "pad") + ", " + attr(nm, n, "value", "0.0") + ")";
    case OpId::embedding:
    case OpId::mse_loss:
    case OpId::cross_entropy: return f + "(" + in(0) + ", " + in(1) + ")";
    case OpId::cat:
    case OpId::stack: {
      std::string list = in(0);
      if (!n->input(0)->type().is_list()) {
        list = "std::vector<::graph::Tensor>{";
        for (size_t i = 0; i < ir::num_op_inputs(*n); ++i) list += (i ? ", " : "") + in(i);
        list += "}";
      }
      return f + "(" + list + ", " + attr(nm, n, "dim", "0") + ")";
    }
    case OpId::dropout:
    case OpId::dropout_mask: return f + "(" + in(0) + ", " + attr(nm, n, "p", "0.5") + ", " + attr(nm, n, "training", "true") + ")";
    case OpId::scaled_dot_product_attention:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + attr(nm, n, "dropout_p", "0.0") + ", " +
             attr(nm, n, "is_causal", "false") + ")";
    case OpId::batch_norm:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + in(4) + ", " +
             attr(nm, n, "training", "false") + ", " + attr(nm, n, "momentum", "0.1") + ", " + attr(nm, n, "eps", "1e-5") + ")";
    default: break;
  }
  throw Error("codegen: no CPU lowering for op '" + std::string(op.name) + "'");
}

namespace {

// grad_mask (1 per wanted input; absent: all) as a GradMask literal.
std::string grad_mask(const ir::Node* n) {
  if (!n->has_attr("grad_mask")) return "::graph::detail::kAllGrads";
  const auto* v = std::get_if<std::vector<int64_t>>(&n->attrs().at("grad_mask"));
  if (!v || v->size() > 32) throw Error("codegen: '" + n->op() + "': 'grad_mask' must be a list of at most 32 integers");
  uint32_t bits = 0;
  for (size_t i = 0; i < v->size(); ++i)
    if ((*v)[i]) bits |= uint32_t{1} << i;
  return "::graph::detail::GradMask{" + std::to_string(bits) + "u}";
}

}  // namespace

// The call of the backward kernel (graph/detail/backward_kernels.h) computing
// the gradient op `n`: a Tensor for the helpers and reductions, a
// std::vector<Tensor> (one per input of the forward op) for the others.
std::string Emitter::gradient_call(const ir::Node* n, const OpInfo& op) {
  auto in = [&](size_t i) { return name(n->input(i)); };
  const Names nm = [&](const ir::Value* v) { return name(v); };
  const std::string f = "::graph::detail::" + std::string(op.name);
  const std::string mask = runtime_mask(n, grad_mask(n));
  switch (op.id) {
    case OpId::sum_to:
    case OpId::reshape_as: return f + "_backward(" + in(0) + ", " + in(1) + ")";
    case OpId::zeros_like: return f + "_backward(" + in(0) + ")";
    case OpId::cat_backward: {
      std::string xs;
      for (size_t i = 1; i < ir::num_op_inputs(*n); ++i) xs += (i > 1 ? ", " : "") + in(i);
      return f + "(" + in(0) + ", std::vector<::graph::Tensor>{" + xs + "}, " + attr(nm, n, "dim", "0") + ", " +
             attr(nm, n, "index") + ")";
    }
    case OpId::sum_backward:
    case OpId::mean_backward:
    case OpId::amax_backward:
    case OpId::amin_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + (n->has_attr("dim") ? dims(nm, n) : "::graph::Shape{}") + ", " +
             attr(nm, n, "keepdim", "false") + ")";
    case OpId::matmul_backward:
    case OpId::mse_loss_backward:
    case OpId::cross_entropy_backward: return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + mask + ")";
    case OpId::linear_backward:
    case OpId::embedding_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + (op.id == OpId::linear_backward ? ", " + in(3) : "") +
             ", " + mask + ")";
    case OpId::slice_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "dim") + ", " + attr(nm, n, "start") + ", " +
             attr(nm, n, "end") + ", " + attr(nm, n, "step", "1") + ")";
    case OpId::layer_norm_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "normalized_shape") + ", " + in(2) + ", " + in(3) +
             ", " + attr(nm, n, "eps", "1e-5") + ", " + mask + ")";
    case OpId::conv2d_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + attr(nm, n, "stride", "{1, 1}") +
             ", " + attr(nm, n, "padding", "{0, 0}") + ", " + attr(nm, n, "dilation", "{1, 1}") + ", " +
             attr(nm, n, "groups", "1") + ", " + mask + ")";
    case OpId::conv_transpose2d_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + attr(nm, n, "stride", "{1, 1}") +
             ", " + attr(nm, n, "padding", "{0, 0}") + ", " + attr(nm, n, "output_padding", "{0, 0}") + ", " +
             attr(nm, n, "groups", "1") + ", " + attr(nm, n, "dilation", "{1, 1}") + ", " + mask + ")";
    case OpId::max_pool2d_backward:
    case OpId::avg_pool2d_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "kernel") + ", " + attr(nm, n, "stride", "{}") + ", " +
             attr(nm, n, "padding", "{0, 0}") + ")";
    case OpId::adaptive_avg_pool2d_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "output_size") + ")";
    case OpId::pad_backward: return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "pad") + ")";
    case OpId::interpolate_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "size", "::graph::Shape{}") + ", " +
             attr(nm, n, "scale_factor", "0.0") + ", " + attr(nm, n, "mode", "int64_t{0}") + ", " +
             attr(nm, n, "align_corners", "false") + ")";
    case OpId::scaled_dot_product_attention_backward:
      if (n->has_attr("dropout_p") && !ir::dynamic_attr(*n, "dropout_p") && attr(nm, n, "dropout_p") != "0.0")
        throw Error("codegen: '" + n->op() + "': no gradient with dropout_p > 0 (the backward would need the forward's "
                    "random mask)");
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + in(4) + ", " +
             attr(nm, n, "is_causal", "false") + ", " + mask + ")";
    case OpId::index_select_backward:
    case OpId::gather_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + attr(nm, n, "dim") + ", " + mask + ")";
    case OpId::cumsum_backward: return f + "(" + in(0) + ", " + in(1) + ", " + attr(nm, n, "dim") + ", " + mask + ")";
    case OpId::bmm_backward: return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + mask + ")";
    case OpId::scatter_add_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + attr(nm, n, "dim") + ", " + mask + ")";
    case OpId::batch_norm_backward:
      return f + "(" + in(0) + ", " + in(1) + ", " + in(2) + ", " + in(3) + ", " + in(4) + ", " + in(5) + ", " +
             attr(nm, n, "training", "false") + ", " + attr(nm, n, "eps", "1e-5") + ", " + mask + ")";
    default: break;
  }
  throw Error("codegen: no backward kernel for the gradient op '" + std::string(op.name) + "'");
}

void Emitter::lazy_slice(const ir::Node* n) {
  const Names nm = [&](const ir::Value* v) { return name(v); };
  const std::string local = name(n->output());
  line("const ::graph::detail::LazySlice " + local + " = " +
       at_source(n, "slice",
                 "::graph::detail::LazySlice(" + name(n->input(0)) + ", " + attr(nm, n, "dim") + ", " +
                     attr(nm, n, "start") + ", " + attr(nm, n, "end") + ", " + attr(nm, n, "step", "1") + ")") +
       ";");
  alias(n->output(), local + ".get()");
  lazy_[local + ".get()"] = local;
}

std::string Emitter::operand(const ir::Value* v) {
  const std::string& n = name(v);
  auto it = lazy_.find(n);
  return it == lazy_.end() ? n : it->second;
}

void Emitter::eager_op(const ir::Node* n, const OpInfo& op) {
  if (op.id == OpId::slice) return lazy_slice(n);
  line(constness(n->output()) + "::graph::Tensor " + name(n->output()) + " = " +
       at_source(n, std::string(op.name), eager_call(n, op)) + ";");
}

namespace {
bool list_gradient_primitive(OpId op) {
  return op == OpId::list_split_like || op == OpId::list_unbind || op == OpId::list_add || op == OpId::list_zeros_like ||
         op == OpId::list_last || op == OpId::list_drop_last || op == OpId::list_onehot;
}
}  // namespace

// undefined() and the list primitives (ir.h).
bool Emitter::primitive(const ir::Node* n) {
  const OpId op = n->op_id();
  const std::string& nm = n->op();  // for the generated call and its diagnostics
  const std::string out = n->num_outputs() == 1 ? name(n->output()) : "";
  auto in = [&](size_t i) { return name(n->input(i)); };
  if (op == OpId::undefined) line("const ::graph::Tensor " + out + "{};");
  else if (op == OpId::list_new) line("const std::vector<::graph::Tensor> " + out + "{};");
  else if (op == OpId::list_append)
    line("const std::vector<::graph::Tensor> " + out + " = ::graph::detail::list_append(" + in(0) + ", " + in(1) + ");");
  else if (op == OpId::list_get)
    line(constness(n->output()) + "::graph::Tensor " + out + " = " +
         at_source(n, "list_get", "::graph::detail::list_get(" + in(0) + ", " + in(1) + ")") + ";");
  else if (op == OpId::list_len) line("const int64_t " + out + " = static_cast<int64_t>(" + in(0) + ".size());");
  else if (list_gradient_primitive(op)) {
    // The gradients of lists (graph/detail/list_grad.h): one call each, inputs in order.
    std::string args;
    for (size_t i = 0; i < n->inputs().size(); ++i) args += (i ? ", " : "") + in(i);
    const bool tensor = op == OpId::list_last;
    line(constness(n->output()) + (tensor ? "::graph::Tensor " : "std::vector<::graph::Tensor> ") + out + " = " +
         at_source(n, nm, "::graph::detail::" + nm + "(" + args + ")") + ";");
  }
  else if (op == OpId::assign) line(at_source(n, nm, "::graph::detail::assign(" + in(0) + ", " + in(1) + ")") + ";");
  else if (op == OpId::defined) line("const bool " + out + " = " + in(0) + ".defined();");
  else if (op == OpId::tensor_dim) line("const int64_t " + out + " = " + in(0) + ".dim();");
  else if (op == OpId::tensor_numel) line("const int64_t " + out + " = " + in(0) + ".numel();");
  else if (op == OpId::tensor_size)
    line("const int64_t " + out + " = " + at_source(n, "size", in(0) + ".size(" + in(1) + ")") + ";");
  else if (op == OpId::int_div || op == OpId::int_mod)
    line("const int64_t " + out + " = " + at_source(n, nm, "::graph::detail::" + nm + "(" + in(0) + ", " + in(1) + ")") + ";");
  else if (op == OpId::item) {
    const std::string t = cpp_type(n->output()->type());
    line("const " + t + " " + out + " = " + at_source(n, "item", in(0) + ".item<" + t + ">()") + ";");
  }
  else if (op == OpId::int_to_float) line("const double " + out + " = static_cast<double>(" + in(0) + ");");
  else if (op == OpId::float_to_int)
    line("const int64_t " + out + " = " + at_source(n, nm, "::graph::detail::float_to_int(" + in(0) + ")") + ";");
  else if (op == OpId::tensor_sizes) line("const ::graph::Tensor " + out + " = ::graph::detail::sizes_tensor(" + in(0) + ");");
  else if (op == OpId::broadcast_sizes) {
    std::string args;
    for (size_t i = 0; i < n->inputs().size(); ++i) args += (i ? ", " : "") + in(i);
    line("const ::graph::Tensor " + out + " = " + at_source(n, "broadcast", "::graph::detail::broadcast_sizes({" + args + "})") + ";");
  }
  else if (op == OpId::inverse_permutation)
    line("const ::graph::Tensor " + out + " = " + at_source(n, "permute", "::graph::detail::inverse_permutation(" + in(0) + ")") + ";");
  else if (op == OpId::full_dyn) {
    DType dt{};
    if (!dtype_from_token(n->s("dtype"), dt)) throw Error("codegen: full_dyn: unknown dtype '" + n->s("dtype") + "'");
    line("const ::graph::Tensor " + out + " = " +
         at_source(n, "full", "::graph::full(::graph::detail::int_list(" + in(0) + "), " + in(1) +
                                  ", static_cast<::graph::DType>(" + std::to_string(static_cast<int>(dt)) + "))") +
         ";");
  } else if (op == OpId::arange_dyn) {  // each bound keeps its C++ type: int64_t, bool or double
    line("const ::graph::Tensor " + out + " = " +
         at_source(n, "arange", "::graph::arange(" + in(0) + ", " + in(1) + ", " + in(2) + ")") + ";");
  } else if (op == OpId::make_shape) {
    std::string ints;
    for (size_t i = 0; i < n->inputs().size(); ++i) ints += (i ? ", " : "") + in(i);
    line("const ::graph::Tensor " + out + " = ::graph::detail::make_shape({" + ints + "});");
  } else if (op == OpId::shape_get)
    line("const int64_t " + out + " = " + at_source(n, nm, "::graph::detail::shape_get(" + in(0) + ", " + in(1) + ")") + ";");
  else if (op == OpId::shape_set)
    line("const ::graph::Tensor " + out + " = " +
         at_source(n, nm, "::graph::detail::shape_set(" + in(0) + ", " + in(1) + ", " + in(2) + ")") + ";");
  else if (op == OpId::reshape_dyn) {
    std::string sizes;
    for (size_t i = 1; i < n->inputs().size(); ++i) sizes += (i > 1 ? ", " : "") + in(i);
    line("const ::graph::Tensor " + out + " = " + at_source(n, "reshape", in(0) + ".reshape({" + sizes + "})") + ";");
  } else if (op == OpId::slice_dyn)
    line("const ::graph::Tensor " + out + " = " +
         at_source(n, "slice", in(0) + ".slice(int64_t{" + std::to_string(n->i("dim")) + "}, " + in(1) + ", " + in(2) +
                                   ", " + in(3) + ")") +
         ";");
  else if (op == OpId::set_grads) train_step_effect(n);
  else if (op == OpId::optimizer_guard)  // first in the graph: before any effect
    line("if (!::graph::detail::optimizer_guard(" + in(0) + ", why)) return false;");
  else if (op == OpId::optimizer_zero_grad)
    line(at_source(n, "zero_grad", "::graph::detail::optimizer_zero_grad(" + in(0) + ")") + ";");
  else if (op == OpId::optimizer_step) optimizer_step(n);
  else if (op == OpId::grad_sync_start || op == OpId::grad_sync_wait) grad_sync(n);
  else if (op == OpId::backward_loss)
    throw Error("codegen: backward_loss must be expanded by ir::compile (expand_backward) before codegen");
  else return false;
  return true;
}

namespace {

// `{a, b, ...}`: inputs [from, to) of `n`, each spelled by `operand`.
template <class Operand>
std::string braced(const ir::Node* n, size_t from, size_t to, Operand operand) {
  std::string s;
  for (size_t i = from; i < to; ++i) s += (i > from ? ", " : "") + operand(n->input(i));
  return "{" + s + "}";
}

}  // namespace

// A static train step's set_grads (ir/passes.h's expand_backward): one call
// into the runtime, which writes each parameter's .grad as backward() does.
void Emitter::train_step_effect(const ir::Node* n) {
  const size_t np = static_cast<size_t>(n->i("params"));
  auto list = [&](size_t from, size_t to) { return braced(n, from, to, [&](const ir::Value* v) { return operand(v); }); };
  line(at_source(n, "backward", "::graph::detail::set_grads(" + list(0, np) + ", " + list(np, 2 * np) + ", " +
                                    list(2 * np, n->inputs().size()) + ")") +
       ";");
}

// opt.step() in a static train step: the optimizer's own update, with the
// graph's gradients (ops.def: optimizer_step).
void Emitter::optimizer_step(const ir::Node* n) {
  const size_t np = static_cast<size_t>(n->i("params"));
  auto list = [&](size_t from, size_t to) { return braced(n, from, to, [&](const ir::Value* v) { return operand(v); }); };
  line(at_source(n, "step", "::graph::detail::optimizer_step(" + operand(n->input(0)) + ", " + list(1, 1 + np) + ", " +
                                list(1 + np, 1 + 2 * np) + ")") +
       ";");
}

// The gradient all-reduce of a static train step (ops.def: grad_sync_*):
// calls into the runtime, which finds the parameters' DDP (if any) per call.
void Emitter::grad_sync(const ir::Node* n) {
  const size_t np = static_cast<size_t>(n->i("params"));
  auto list = [&](size_t from, size_t to) { return braced(n, from, to, [&](const ir::Value* v) { return operand(v); }); };
  const std::string args = list(0, np) + ", " + list(np, 2 * np);
  if (n->is(OpId::grad_sync_start)) {
    line(at_source(n, "all_reduce", "::graph::detail::grad_sync_start(" + args + ")") + ";");
    return;
  }
  const std::string synced = fresh("synced");
  line("const std::vector<::graph::Tensor> " + synced + " = " +
       at_source(n, "all_reduce", "::graph::detail::grad_sync_wait(" + args + ")") + ";");
  for (size_t i = 0; i < n->num_outputs(); ++i)
    line("const ::graph::Tensor " + name(n->output(i)) + " = " + synced + "[" + std::to_string(i) + "];");
}

}  // namespace graph::codegen::detail
