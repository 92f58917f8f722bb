// The interpreter's kernels: one per op-table entry, each calling the eager
// op with the node's attributes (conventions at the top of ops.def). The
// elementwise entries come from ops.def itself, so a new elementwise op needs
// no line here.
#include <cmath>
#include <string>
#include <unordered_map>

#include "graph/cpu_loop.h"
#include "graph/detail/generated_support.h"
#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/value_primitives.h"
#include "graph/nn_ops.h"
#include "graph/op_table.h"
#include "graph/ops.h"
#include "graph/scalar_ops.h"

namespace graph::detail {

std::string describe(const IValue& v) {
  if (auto* t = std::get_if<Tensor>(&v)) {
    if (!t->defined()) return "undefined tensor";
    return std::string(dtype_token(t->dtype())) + shape_str(t->sizes());
  }
  if (auto* i = std::get_if<int64_t>(&v)) return "int " + std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) return "float " + std::to_string(*d);
  if (auto* b = std::get_if<bool>(&v)) return std::string("bool ") + (*b ? "true" : "false");
  return "list of " + std::to_string(std::get<TensorList>(v).size());
}

const Tensor& tensor_arg(const ir::Node& n, std::span<const IValue> in, size_t i) {
  if (i >= in.size()) throw Error(n.op() + ": missing input " + std::to_string(i));
  if (auto* t = std::get_if<Tensor>(&in[i])) return *t;
  throw Error(n.op() + ": input " + std::to_string(i) + " must be a tensor, got " + describe(in[i]));
}

Tensor broadcast_sizes(const std::vector<Tensor>& ts) {
  std::vector<Shape> shapes;
  shapes.reserve(ts.size());
  for (const Tensor& t : ts) shapes.push_back(t.sizes());
  return int_list_tensor(cpu::broadcast_shapes("broadcast", shapes));
}

std::vector<int64_t> int_list(const Tensor& t) {
  if (!t.defined() || t.dim() != 1 || t.dtype() != kInt64)
    throw Error("an int list must be a 1-D int64 tensor, got " + describe(IValue(t)));
  Tensor c = t.to(kCPU).contiguous();
  const int64_t* p = c.data_ptr<int64_t>();
  return std::vector<int64_t>(p, p + c.numel());
}

namespace {

// n's grad_mask (absent: every output) without the outputs `wanted` lacks.
// A malformed grad_mask stays as it is, for the kernel to report.
void narrow_grad_mask(const ir::Node& n, ir::Node& copy, uint32_t wanted) {
  std::vector<int64_t> mask(n.num_outputs(), 1);
  if (auto it = n.attrs().find("grad_mask"); it != n.attrs().end()) {
    const auto* v = std::get_if<std::vector<int64_t>>(&it->second);
    if (!v) return;
    mask = *v;
  }
  for (size_t i = 0; i < mask.size() && i < 32; ++i)
    if (!((wanted >> i) & 1u)) mask[i] = 0;
  copy.attrs()["grad_mask"] = std::move(mask);
}

}  // namespace

std::vector<IValue> run_kernel(const Kernel& k, const ir::Node& n, std::span<const IValue> in, uint32_t wanted) {
  const bool narrow = wanted != ~uint32_t{0};
  if (!ir::has_dynamic_attrs(n) && !narrow) return k(n, in);
  ir::Graph scratch(n.op());
  ir::Node* copy = scratch.top()->append(n.op());
  copy->attrs() = n.attrs();
  copy->set_loc(n.loc());
  if (narrow) narrow_grad_mask(n, *copy, wanted);
  for (auto& [key, value] : copy->attrs()) {
    auto d = ir::dynamic_attr(n, key);
    if (!d) continue;
    if (d->end > in.size()) throw Error(n.op() + ": the attribute '" + key + "' names missing inputs");
    if (d->range) {
      std::vector<int64_t> list;
      for (size_t i = d->begin; i < d->end; ++i) {
        const auto* v = std::get_if<int64_t>(&in[i]);
        if (!v) throw Error(n.op() + ": the attribute '" + key + "' needs ints, got " + describe(in[i]));
        list.push_back(*v);
      }
      value = std::move(list);
    } else if (const auto* t = std::get_if<Tensor>(&in[d->begin])) {
      value = int_list(*t);
    } else if (const auto* i = std::get_if<int64_t>(&in[d->begin])) {
      value = *i;
    } else if (const auto* f = std::get_if<double>(&in[d->begin])) {
      value = *f;
    } else if (const auto* b = std::get_if<bool>(&in[d->begin])) {
      value = *b;
    } else {
      throw Error(n.op() + ": the attribute '" + key + "' cannot be " + describe(in[d->begin]));
    }
  }
  for (size_t o = 0; o < n.num_outputs(); ++o) copy->add_output(n.output(o)->type());
  return k(*copy, in.first(ir::num_op_inputs(n)));
}

namespace {

using Out = std::vector<IValue>;
using In = std::span<const IValue>;

// ---- attributes --------------------------------------------------------------

int64_t attr_int(const ir::Node& n, const char* key) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) throw Error(n.op() + ": missing attribute '" + key + "'");
  if (auto* i = std::get_if<int64_t>(&it->second)) return *i;
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be an integer");
}
int64_t attr_int(const ir::Node& n, const char* key, int64_t dflt) {
  return n.has_attr(key) ? attr_int(n, key) : dflt;
}
double attr_float(const ir::Node& n, const char* key, double dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  if (auto* i = std::get_if<int64_t>(&it->second)) return static_cast<double>(*i);
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a number");
}
bool attr_bool(const ir::Node& n, const char* key, bool dflt) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) return dflt;
  if (auto* b = std::get_if<bool>(&it->second)) return *b;
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a bool");
}
// An int list attribute; a single integer counts as a list of one.
Shape attr_shape(const ir::Node& n, const char* key) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) throw Error(n.op() + ": missing attribute '" + key + "'");
  if (auto* i = std::get_if<int64_t>(&it->second)) return Shape{*i};
  if (auto* v = std::get_if<std::vector<int64_t>>(&it->second)) return Shape(v->begin(), v->end());
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a list of integers");
}
Shape attr_shape(const ir::Node& n, const char* key, Shape dflt) { return n.has_attr(key) ? attr_shape(n, key) : dflt; }

const Tensor& T(const ir::Node& n, In in, size_t i) { return tensor_arg(n, in, i); }

// ---- elementwise -------------------------------------------------------------

Scalar scalar_of(const ir::Node& n, const IValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return Scalar(*i);
  if (auto* d = std::get_if<double>(&v)) return Scalar(*d);
  if (auto* b = std::get_if<bool>(&v)) return Scalar(*b);
  throw Error(n.op() + ": expected a number, got " + describe(v));
}

template <class C>
C host_as(const IValue& v) {
  if (auto* i = std::get_if<int64_t>(&v)) return static_cast<C>(*i);
  if (auto* d = std::get_if<double>(&v)) return static_cast<C>(*d);
  return static_cast<C>(std::get<bool>(v));
}

// All-scalar nodes compute in C++ arithmetic, as generated code does
// (codegen's scalar_elementwise): in the output's type, or for comparisons in
// the widest input kind.
enum class HostKind { Bool, Int, Float };
HostKind host_kind(const IValue& v) {
  return std::holds_alternative<double>(v) ? HostKind::Float
         : std::holds_alternative<int64_t>(v) ? HostKind::Int
                                              : HostKind::Bool;
}
HostKind compute_kind(const ir::Node& n, const OpInfo& op, In in) {
  HostKind k = HostKind::Bool;
  if (op.rule != DTypeRule::ToBool) {
    switch (n.output()->type().kind) {
      case ir::Type::Kind::Float: return HostKind::Float;
      case ir::Type::Kind::Int: return HostKind::Int;
      case ir::Type::Kind::Bool: return HostKind::Bool;
      default: break;  // unknown: from the inputs
    }
  }
  for (const IValue& v : in) k = std::max(k, host_kind(v));
  if (op.rule == DTypeRule::ToFloat) k = HostKind::Float;
  return k;
}

IValue host_value(double v, HostKind k) {
  switch (k) {
    case HostKind::Float: return v;
    case HostKind::Int: return static_cast<int64_t>(v);
    case HostKind::Bool: return v != 0;
  }
  return v;
}

bool all_host(In in) {
  for (const IValue& v : in)
    if (std::holds_alternative<Tensor>(v) || std::holds_alternative<TensorList>(v)) return false;
  return true;
}

#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                                        \
  Out name##_kernel(const ir::Node& n, In in) {                                                         \
    if (!all_host(in)) return {::graph::name(T(n, in, 0))};                                             \
    switch (compute_kind(n, op_info(OpId::name), in)) {                                                 \
      case HostKind::Float: return {host_value(static_cast<double>(scalar::name<double>(host_as<double>(in[0]))), \
                                               n.output()->type().kind == ir::Type::Kind::Bool ? HostKind::Bool : HostKind::Float)}; \
      case HostKind::Int: {                                                                             \
        auto r = scalar::name<int64_t>(host_as<int64_t>(in[0]));                                        \
        if constexpr (std::is_same_v<decltype(r), bool>) return {IValue(r)};                            \
        else return {IValue(static_cast<int64_t>(r))};                                                   \
      }                                                                                                 \
      case HostKind::Bool: return {IValue(static_cast<bool>(scalar::name<bool>(host_as<bool>(in[0]))))}; \
    }                                                                                                   \
    return {};                                                                                          \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                               \
  Out name##_kernel(const ir::Node& n, In in) {                                                         \
    if (in.size() != 2) throw Error(#name ": expects 2 inputs");                                        \
    const bool ta = std::holds_alternative<Tensor>(in[0]), tb = std::holds_alternative<Tensor>(in[1]);  \
    if (ta && tb) return {::graph::name(T(n, in, 0), T(n, in, 1))};                                     \
    if (ta) return {::graph::name(T(n, in, 0), scalar_of(n, in[1]))};                                   \
    if (tb) return {::graph::name(scalar_of(n, in[0]), T(n, in, 1))};                                   \
    switch (compute_kind(n, op_info(OpId::name), in)) {                                                 \
      case HostKind::Float: {                                                                           \
        auto r = scalar::name<double>(host_as<double>(in[0]), host_as<double>(in[1]));                  \
        if constexpr (std::is_same_v<decltype(r), bool>) return {IValue(r)};                            \
        else return {host_value(r, n.output()->type().kind == ir::Type::Kind::Int ? HostKind::Int : HostKind::Float)}; \
      }                                                                                                 \
      case HostKind::Int: {                                                                             \
        const int64_t a = host_as<int64_t>(in[0]), b = host_as<int64_t>(in[1]);                         \
        if (OpId::name == OpId::div && b == 0) throw Error("div: integer division by zero");             \
        auto r = scalar::name<int64_t>(a, b);                                                           \
        if constexpr (std::is_same_v<decltype(r), bool>) return {IValue(r)};                            \
        else return {IValue(static_cast<int64_t>(r))};                                                   \
      }                                                                                                 \
      case HostKind::Bool: {                                                                            \
        auto r = scalar::name<bool>(host_as<bool>(in[0]), host_as<bool>(in[1]));                        \
        return {IValue(static_cast<bool>(r))};                                                          \
      }                                                                                                 \
    }                                                                                                   \
    return {};                                                                                          \
  }
#include "graph/ops.def"

// ---- reductions --------------------------------------------------------------

template <class Whole, class Dims>
Out reduce(const ir::Node& n, In in, Whole whole, Dims dims) {
  const Tensor& x = T(n, in, 0);
  if (!n.has_attr("dim")) return {whole(x)};
  return {dims(x, attr_shape(n, "dim"), attr_bool(n, "keepdim", false))};
}

Out sum_kernel(const ir::Node& n, In in) {
  return reduce(n, in, [](const Tensor& x) { return graph::sum(x); },
                [](const Tensor& x, const Shape& d, bool k) { return graph::sum(x, d, k); });
}
Out mean_kernel(const ir::Node& n, In in) {
  return reduce(n, in, [](const Tensor& x) { return graph::mean(x); },
                [](const Tensor& x, const Shape& d, bool k) { return graph::mean(x, d, k); });
}
Out amax_kernel(const ir::Node& n, In in) {
  return reduce(n, in, [](const Tensor& x) { return graph::amax(x); },
                [](const Tensor& x, const Shape& d, bool k) { return graph::amax(x, d, k); });
}
Out amin_kernel(const ir::Node& n, In in) {
  return reduce(n, in, [](const Tensor& x) { return graph::amin(x); },
                [](const Tensor& x, const Shape& d, bool k) { return graph::amin(x, d, k); });
}
Out argmax_kernel(const ir::Node& n, In in) {
  const Tensor& x = T(n, in, 0);
  if (!n.has_attr("dim")) return {graph::argmax(x)};
  return {graph::argmax(x, attr_int(n, "dim"), attr_bool(n, "keepdim", false))};
}

// ---- library, views ----------------------------------------------------------

Out matmul_kernel(const ir::Node& n, In in) { return {graph::matmul(T(n, in, 0), T(n, in, 1))}; }
Out conv2d_kernel(const ir::Node& n, In in) {
  return {graph::conv2d(T(n, in, 0), T(n, in, 1), T(n, in, 2), attr_shape(n, "stride", {1, 1}),
                        attr_shape(n, "padding", {0, 0}), attr_shape(n, "dilation", {1, 1}),
                        attr_int(n, "groups", 1))};
}

Out conv_transpose2d_kernel(const ir::Node& n, In in) {
  return {graph::conv_transpose2d(T(n, in, 0), T(n, in, 1), T(n, in, 2), attr_shape(n, "stride", {1, 1}),
                                  attr_shape(n, "padding", {0, 0}), attr_shape(n, "output_padding", {0, 0}),
                                  attr_int(n, "groups", 1), attr_shape(n, "dilation", {1, 1}))};
}

Out t_kernel(const ir::Node& n, In in) { return {T(n, in, 0).t()}; }
Out transpose_kernel(const ir::Node& n, In in) {
  return {T(n, in, 0).transpose(attr_int(n, "dim0"), attr_int(n, "dim1"))};
}
Out permute_kernel(const ir::Node& n, In in) { return {T(n, in, 0).permute(attr_shape(n, "dims"))}; }
Out reshape_kernel(const ir::Node& n, In in) { return {T(n, in, 0).reshape(attr_shape(n, "shape"))}; }
Out expand_kernel(const ir::Node& n, In in) { return {T(n, in, 0).expand(attr_shape(n, "shape"))}; }
Out slice_kernel(const ir::Node& n, In in) {
  return {T(n, in, 0).slice(attr_int(n, "dim"), attr_int(n, "start"), attr_int(n, "end"), attr_int(n, "step", 1))};
}
Out squeeze_kernel(const ir::Node& n, In in) {
  const Tensor& x = T(n, in, 0);
  return {n.has_attr("dim") ? x.squeeze(attr_int(n, "dim")) : x.squeeze()};
}
Out unsqueeze_kernel(const ir::Node& n, In in) { return {T(n, in, 0).unsqueeze(attr_int(n, "dim"))}; }
Out flatten_kernel(const ir::Node& n, In in) {
  return {T(n, in, 0).flatten(attr_int(n, "start_dim", 0), attr_int(n, "end_dim", -1))};
}

// ---- other kernels -----------------------------------------------------------

Out where_kernel(const ir::Node& n, In in) { return {graph::where(T(n, in, 0), T(n, in, 1), T(n, in, 2))}; }
// masked_fill's value: an int, float or bool attribute (its Scalar's category).
Scalar attr_scalar(const ir::Node& n, const char* key) {
  auto it = n.attrs().find(key);
  if (it == n.attrs().end()) throw Error(n.op() + ": missing attribute '" + key + "'");
  if (auto* i = std::get_if<int64_t>(&it->second)) return Scalar(*i);
  if (auto* d = std::get_if<double>(&it->second)) return Scalar(*d);
  if (auto* b = std::get_if<bool>(&it->second)) return Scalar(*b);
  throw Error(n.op() + ": attribute '" + std::string(key) + "' must be a number");
}
Out masked_fill_kernel(const ir::Node& n, In in) {
  return {graph::masked_fill(T(n, in, 0), T(n, in, 1), attr_scalar(n, "value"), attr_bool(n, "invert", false),
                             attr_bool(n, "promote", false))};
}
Out triu_kernel(const ir::Node& n, In in) { return {graph::triu(T(n, in, 0), attr_int(n, "diagonal", 0))}; }
Out tril_kernel(const ir::Node& n, In in) { return {graph::tril(T(n, in, 0), attr_int(n, "diagonal", 0))}; }
Out index_select_kernel(const ir::Node& n, In in) {
  return {graph::index_select(T(n, in, 0), attr_int(n, "dim"), T(n, in, 1))};
}
Out gather_kernel(const ir::Node& n, In in) { return {graph::gather(T(n, in, 0), attr_int(n, "dim"), T(n, in, 1))}; }
Out cumsum_kernel(const ir::Node& n, In in) { return {graph::cumsum(T(n, in, 0), attr_int(n, "dim"))}; }
Out bmm_kernel(const ir::Node& n, In in) { return {graph::bmm(T(n, in, 0), T(n, in, 1))}; }
Out scatter_add_kernel(const ir::Node& n, In in) {
  return {graph::scatter_add(T(n, in, 0), attr_int(n, "dim"), T(n, in, 1), T(n, in, 2))};
}
Out argsort_kernel(const ir::Node& n, In in) {
  const int64_t dim = attr_int(n, "dim", -1);
  const bool descending = attr_bool(n, "descending", false);
  if (n.has_attr("k")) return {graph::detail::argsort_first(T(n, in, 0), dim, descending, attr_int(n, "k"))};
  return {graph::argsort(T(n, in, 0), dim, descending)};
}
Out to_kernel(const ir::Node& n, In in) {
  DType dt{};
  if (!n.has_attr("dtype") || !dtype_from_token(n.s("dtype"), dt)) throw Error("to: needs 'dtype', a dtype token (\"f32\")");
  return {T(n, in, 0).to(dt)};
}
Out contiguous_kernel(const ir::Node& n, In in) { return {T(n, in, 0).contiguous()}; }
Out rand_like_kernel(const ir::Node& n, In in) { return {graph::rand_like(T(n, in, 0))}; }
Out randn_like_kernel(const ir::Node& n, In in) { return {graph::randn_like(T(n, in, 0))}; }
Out type_as_kernel(const ir::Node& n, In in) { return {T(n, in, 0).type_as(T(n, in, 1))}; }
Out softmax_kernel(const ir::Node& n, In in) { return {graph::softmax(T(n, in, 0), attr_int(n, "dim"))}; }
Out log_softmax_kernel(const ir::Node& n, In in) { return {graph::log_softmax(T(n, in, 0), attr_int(n, "dim"))}; }
Out linear_kernel(const ir::Node& n, In in) { return {graph::linear(T(n, in, 0), T(n, in, 1), T(n, in, 2))}; }
Out layer_norm_kernel(const ir::Node& n, In in) {
  return {graph::layer_norm(T(n, in, 0), attr_shape(n, "normalized_shape"), T(n, in, 1), T(n, in, 2),
                            attr_float(n, "eps", 1e-5))};
}
Out max_pool2d_kernel(const ir::Node& n, In in) {
  return {graph::max_pool2d(T(n, in, 0), attr_shape(n, "kernel"), attr_shape(n, "stride", {}),
                            attr_shape(n, "padding", {0, 0}))};
}
Out avg_pool2d_kernel(const ir::Node& n, In in) {
  return {graph::avg_pool2d(T(n, in, 0), attr_shape(n, "kernel"), attr_shape(n, "stride", {}),
                            attr_shape(n, "padding", {0, 0}))};
}
Out adaptive_avg_pool2d_kernel(const ir::Node& n, In in) {
  return {graph::adaptive_avg_pool2d(T(n, in, 0), attr_shape(n, "output_size"))};
}
Out pad_kernel(const ir::Node& n, In in) {
  return {graph::pad(T(n, in, 0), attr_shape(n, "pad"), n.has_attr("value") ? attr_scalar(n, "value") : Scalar(0.0))};
}
// interpolate{size | scale_factor, mode, align_corners}: the call it was lowered from.
Out interpolate_kernel(const ir::Node& n, In in) {
  const auto mode = static_cast<InterpolateMode>(attr_int(n, "mode", 0));
  const bool ac = attr_bool(n, "align_corners", false);
  if (n.has_attr("scale_factor")) return {graph::interpolate_scale(T(n, in, 0), attr_float(n, "scale_factor", 0.0), mode, ac)};
  return {graph::interpolate(T(n, in, 0), attr_shape(n, "size"), mode, ac)};
}
Out embedding_kernel(const ir::Node& n, In in) { return {graph::embedding(T(n, in, 0), T(n, in, 1))}; }
// cat's and stack's operands: one list value (a std::vector the function
// built), or the tensors one per input.
std::vector<Tensor> tensors(const ir::Node& n, In in) {
  if (in.size() == 1)
    if (const auto* l = std::get_if<TensorList>(&in[0])) return *l;
  std::vector<Tensor> ts;
  for (size_t i = 0; i < in.size(); ++i) ts.push_back(T(n, in, i));
  return ts;
}
Out cat_kernel(const ir::Node& n, In in) { return {graph::cat(tensors(n, in), attr_int(n, "dim", 0))}; }
Out stack_kernel(const ir::Node& n, In in) { return {graph::stack(tensors(n, in), attr_int(n, "dim", 0))}; }
Out dropout_kernel(const ir::Node& n, In in) {
  return {graph::dropout(T(n, in, 0), attr_float(n, "p", 0.5), attr_bool(n, "training", true))};
}
Out dropout_mask_kernel(const ir::Node& n, In in) {
  return {graph::dropout_mask(T(n, in, 0), attr_float(n, "p", 0.5), attr_bool(n, "training", true))};
}
Out mse_loss_kernel(const ir::Node& n, In in) { return {graph::mse_loss(T(n, in, 0), T(n, in, 1))}; }
Out cross_entropy_kernel(const ir::Node& n, In in) { return {graph::cross_entropy(T(n, in, 0), T(n, in, 1))}; }
Out scaled_dot_product_attention_kernel(const ir::Node& n, In in) {
  return {graph::scaled_dot_product_attention(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3),
                                              attr_float(n, "dropout_p", 0.0), attr_bool(n, "is_causal", false))};
}
// A graph never updates running stats in place (ops.def): such a node is an error, not a silent effect.
Out batch_norm_kernel(const ir::Node& n, In in) {
  const bool training = attr_bool(n, "training", false);
  if (training && T(n, in, 1).defined())
    throw Error("batch_norm: a graph cannot update running_mean/running_var in place; run it eagerly");
  return {graph::batch_norm(T(n, in, 0), T(n, in, 1), T(n, in, 2), T(n, in, 3), T(n, in, 4), training,
                            attr_float(n, "momentum", 0.1), attr_float(n, "eps", 1e-5))};
}

const std::unordered_map<std::string_view, Kernel>& kernels() {
  static const std::unordered_map<std::string_view, Kernel> table = [] {
    std::unordered_map<std::string_view, Kernel> t;
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) t.emplace(#name, name##_kernel);
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) t.emplace(#name, name##_kernel);
#define GRAPH_REDUCE_OP(name, rule) t.emplace(#name, name##_kernel);
#define GRAPH_LIBRARY_OP(name, inputs) t.emplace(#name, name##_kernel);
#define GRAPH_VIEW_OP(name, inputs) t.emplace(#name, name##_kernel);
#define GRAPH_OTHER_OP(name, inputs, rule, traits) t.emplace(#name, name##_kernel);
#include "graph/ops.def"
    return t;
  }();
  return table;
}

}  // namespace

const Kernel* find_kernel(std::string_view op) {
  const auto& t = kernels();
  auto it = t.find(op);
  if (it != t.end()) return &it->second;
  return find_backward_kernel(op);
}

}  // namespace graph::detail
