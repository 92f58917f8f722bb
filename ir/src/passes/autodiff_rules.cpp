// The autodiff pass's per-op rules: the gradients of one node's inputs from
// the gradients of its outputs, built as IR nodes.
//
// Elementwise ops instantiate graph/derivatives.h (the formulas eager autograd
// runs) with Sym, a value that emits a node for each operation, so there is
// one copy of every formula. The other ops are rules below, keyed by op kind
// and name: views and softmax in terms of existing ops, and the ops whose
// backward is a kernel of its own through their OP_backward gradient op.
#include <algorithm>
#include <memory>
#include <optional>
#include <type_traits>
#include <variant>

#include "autodiff_scope.h"
#include "graph/derivatives.h"
#include "graph/error.h"
#include "graph/op_table.h"
#include "graph/ir/value_primitives.h"

namespace graph::ir::autodiff_detail {

namespace {

// ---- Sym: an IR value for the generic gradient formulas -----------------------

// A formula builds an expression first; only the gradients that are wanted
// are emitted (get()), and a forward value is saved for the backward only
// when an emitted gradient reads it: `neg` saves nothing, `mul` saves the
// other operand, and an input that needs no gradient costs nothing.
class Sym {
 public:
  Sym() = default;
  static Sym backward(Scope* s, Value* v) { return Sym(std::make_shared<Expr>(Expr{s, nullptr, v})); }
  static Sym forward(Scope* s, Value* v) { return Sym(std::make_shared<Expr>(Expr{s, v, nullptr})); }
  template <class N>
  static Sym number(Scope* s, N v) {
    Expr e{s, nullptr, nullptr};
    e.number = v;
    return Sym(std::make_shared<Expr>(std::move(e)));
  }
  static Sym op(OpId id, std::vector<Sym> args) {
    Expr e{args.at(0).scope(), nullptr, nullptr};
    e.op = id;
    e.args = std::move(args);
    return Sym(std::make_shared<Expr>(std::move(e)));
  }

  bool defined() const { return e_ != nullptr; }
  Scope* scope() const { return e_->s; }
  Value* get() const;  // emits the expression (once)

 private:
  struct Expr {
    Scope* s;
    Value* fwd;          // a forward value, or
    mutable Value* v;    // a backward value (also the memo of get()), or
    std::variant<std::monostate, int64_t, double> number{};  // a C++ number, or
    std::optional<OpId> op{};                                 // an op of args
    std::vector<Sym> args{};
  };
  explicit Sym(std::shared_ptr<const Expr> e) : e_(std::move(e)) {}
  std::shared_ptr<const Expr> e_;
};

bool is_tensor(const Value* v) { return v->type().is_tensor(); }

// The result type of an elementwise node: a tensor when an input is one, else
// the host scalar C++ arithmetic gives.
Type elementwise_type(const OpInfo& op, const std::vector<Value*>& in) {
  bool any_float = false;
  for (const Value* v : in) {
    if (is_tensor(v)) return Type::tensor();
    any_float = any_float || v->type().kind == Type::Kind::Float;
  }
  if (op.rule == DTypeRule::ToBool) return Type::bool_();
  if (op.rule == DTypeRule::ToFloat || any_float) return Type::float_();
  return Type::int_();
}

Value* Sym::get() const {
  const Expr& e = *e_;
  if (e.v) return e.v;
  if (e.fwd) return e.v = e.s->fwd(e.fwd);
  if (e.op) {
    std::vector<Value*> in;
    for (const Sym& a : e.args) in.push_back(a.get());
    const OpInfo& info = op_info(*e.op);
    Node* n = e.s->emit(std::string(info.name), in);
    n->output()->set_type(elementwise_type(info, in));
    return e.v = n->output();
  }
  Node* n = e.s->emit("constant", {});
  if (auto* d = std::get_if<double>(&e.number)) {
    n->attrs()["value"] = *d;
    n->output()->set_type(Type::float_());
  } else {
    n->attrs()["value"] = std::get<int64_t>(e.number);
    n->output()->set_type(Type::int_());
  }
  return e.v = n->output();
}

// A C++ number in a formula (`1 - result`, `grad * 0.5`) becomes a constant
// of its kind, as the eager formulas pass it as a Scalar of its kind.
template <class N>
  requires std::is_arithmetic_v<N>
Sym lift(const Sym& like, N v) {
  if constexpr (std::is_floating_point_v<N>) return Sym::number(like.scope(), double(v));
  else return Sym::number(like.scope(), int64_t(v));
}

// One function per elementwise op, found by argument-dependent lookup from
// the formulas (exp(x), sign(x), pow(a, b), ...).
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) \
  [[maybe_unused]] Sym name(const Sym& x) { return Sym::op(OpId::name, {x}); }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) \
  [[maybe_unused]] Sym name(const Sym& a, const Sym& b) { return Sym::op(OpId::name, {a, b}); }
#include "graph/ops.def"

Sym operator-(const Sym& x) { return neg(x); }

#define GRAPH_SYM_OPERATOR(sym, name)                                                 \
  [[maybe_unused]] Sym operator sym(const Sym& a, const Sym& b) { return name(a, b); } \
  template <class N>                                                                  \
    requires std::is_arithmetic_v<N>                                                  \
  Sym operator sym(const Sym& a, N b) { return name(a, lift(a, b)); }                  \
  template <class N>                                                                  \
    requires std::is_arithmetic_v<N>                                                  \
  Sym operator sym(N a, const Sym& b) { return name(lift(b, a), b); }
GRAPH_SYM_OPERATOR(+, add)
GRAPH_SYM_OPERATOR(-, sub)
GRAPH_SYM_OPERATOR(*, mul)
GRAPH_SYM_OPERATOR(/, div)
GRAPH_SYM_OPERATOR(<, lt)
GRAPH_SYM_OPERATOR(>, gt)
GRAPH_SYM_OPERATOR(<=, le)
GRAPH_SYM_OPERATOR(>=, ge)
GRAPH_SYM_OPERATOR(==, eq)
#undef GRAPH_SYM_OPERATOR

// ---- elementwise ---------------------------------------------------------------

// Whether shape inference proved `a` and `b` of one dtype and shape, so no
// broadcast happened between them.
bool same_known_type(const Type& a, const Type& b) {
  if (!a.dtype || !a.dims || a != b) return false;
  return std::all_of(a.dims->begin(), a.dims->end(), [](const Dim& d) { return d.is_static() || !d.symbol.empty(); });
}

// The gradient of a broadcast operand is summed back to its shape (which
// needs the operand at run time, unless types show there was no broadcast).
Value* reduce_to_input(Scope& s, const Sym& g, Value* input, const Value* result, bool wanted) {
  if (!wanted || !g.defined() || !is_tensor(input)) return nullptr;
  if (same_known_type(input->type(), result->type())) return g.get();
  return s.emit1("sum_to", {g.get(), s.fwd(input)});
}

std::vector<Value*> elementwise(Scope& s, const Node& n, OpId id, Value* grad, const std::vector<bool>& wanted) {
  const Sym g = Sym::backward(&s, grad), result = Sym::forward(&s, n.output());
  switch (id) {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x)                                            \
  case OpId::name: {                                                                        \
    const Sym gx = derivatives::name##_backward(g, Sym::forward(&s, n.input(0)), result);  \
    return {gx.defined() && wanted[0] ? gx.get() : nullptr};                                \
  }
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b)                                    \
  case OpId::name: {                                                                        \
    const auto gs = derivatives::name##_backward(g, Sym::forward(&s, n.input(0)),            \
                                                 Sym::forward(&s, n.input(1)), result);     \
    return {reduce_to_input(s, gs[0], n.input(0), n.output(), wanted[0]),                   \
            reduce_to_input(s, gs[1], n.input(1), n.output(), wanted[1])};                  \
  }
#include "graph/ops.def"
    default: break;
  }
  return {};
}

// ---- ops with their own gradient ops -------------------------------------------

// OP_backward(grad, inputs...) with OP's attributes and the mask of wanted
// gradients: one output per input.
// Attributes known at run time (value_primitives.h) are passed on as the
// gradient op's inputs after its own, and name them there.
std::vector<Value*> through_backward_op(Scope& s, const Node& n, Value* grad, const std::vector<bool>& wanted) {
  const size_t own = num_op_inputs(n);
  std::vector<Value*> in{grad};
  std::vector<int64_t> mask;
  for (size_t i = 0; i < own; ++i) {
    in.push_back(s.fwd(n.input(i)));
    mask.push_back(wanted[i] ? 1 : 0);
  }
  for (size_t i = own; i < n.inputs().size(); ++i) in.push_back(s.fwd(n.input(i)));
  Node* b = s.emit(n.op() + "_backward", in, own);
  b->attrs() = n.attrs();
  for (auto& [k, v] : b->attrs())
    if (auto d = dynamic_attr(n, k)) v = dynamic_attr_ref(d->begin + 1, d->end + 1, d->range);
  b->attrs()["grad_mask"] = mask;
  std::vector<Value*> out;
  for (size_t i = 0; i < n.inputs().size(); ++i) out.push_back(i < own && wanted[i] ? b->output(i) : nullptr);
  return out;
}

Node* with_attrs(Node* b, const Attributes& attrs) {
  b->attrs() = attrs;
  return b;
}

// permute's gradient permutes back; negative dims count from the end of a
// rank-dims.size() tensor.
std::vector<int64_t> inverse_permutation(const Node& n) {
  std::vector<int64_t> dims = n.ints("dims"), inv(dims.size());
  const auto rank = static_cast<int64_t>(dims.size());
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = dims[i] < 0 ? dims[i] + rank : dims[i];
    if (d < 0 || d >= rank) throw Error("autodiff: 'permute' has an invalid dims attribute");
    inv[d] = i;
  }
  return inv;
}

// `x` and, after it, the forward node's run-time attribute inputs
// (value_primitives.h), for a backward node of one own input that takes the
// forward node's attributes as they are: their "@i" indices stay right.
std::vector<Value*> with_runtime_inputs(Scope& s, const Node& n, Value* x) {
  std::vector<Value*> in{x};
  for (size_t i = num_op_inputs(n); i < n.inputs().size(); ++i) in.push_back(s.fwd(n.input(i)));
  return in;
}

Value* softmax_grad(Scope& s, const Node& n, Value* g) {
  Value* y = s.fwd(n.output());
  // `dim` may be known only at run time: sum's own input is one, as softmax's.
  Attributes along{{"dim", n.attrs().at("dim")}, {"keepdim", true}};
  if (n.is(OpId::softmax)) {  // y * (g - sum(g * y, dim, keepdim))
    Value* gy = s.emit1("mul", {g, y});
    Value* sum = with_attrs(s.emit("sum", with_runtime_inputs(s, n, gy)), along)->output();
    return s.emit1("mul", {y, s.emit1("sub", {g, sum})});
  }
  // log_softmax: g - exp(y) * sum(g, dim, keepdim)
  Value* sum = with_attrs(s.emit("sum", with_runtime_inputs(s, n, g)), along)->output();
  return s.emit1("sub", {g, s.emit1("mul", {s.emit1("exp", {y}), sum})});
}

std::vector<Value*> where_grad(Scope& s, const Node& n, Value* g) {
  Value* cond = s.fwd(n.input(0));
  Value* zero = s.emit1("zeros_like", {g});
  return {nullptr, s.emit1("sum_to", {s.emit1("where", {cond, g, zero}), s.fwd(n.input(1))}),
          s.emit1("sum_to", {s.emit1("where", {cond, zero, g}), s.fwd(n.input(2))})};
}

// masked_fill{value, invert}(x, mask): g where x was kept, summed to x's shape.
std::vector<Value*> masked_fill_grad(Scope& s, const Node& n, Value* g) {
  Value* mask = s.fwd(n.input(1));
  Value* zero = s.emit1("zeros_like", {g});
  const bool invert = n.has_attr("invert") && n.b("invert");
  Value* kept = invert ? s.emit1("where", {mask, g, zero}) : s.emit1("where", {mask, zero, g});
  std::vector<Value*> out(n.inputs().size(), nullptr);  // mask and a run-time value: none
  out[0] = s.emit1("sum_to", {kept, s.fwd(n.input(0))});
  return out;
}

// triu / tril: the same triangle of g.
Value* triangle_grad(Scope& s, const Node& n, Value* g) {
  return with_attrs(s.emit(std::string(n.table_op()->name), with_runtime_inputs(s, n, g)), n.attrs())->output();
}

[[noreturn]] void no_gradient(const Node& n, const std::string& why);

// cat's and stack's `dim`: a constant, or a host int known at run time
// (value_primitives.h) that a backward node with one own input reads as "@1".
struct ListDim {
  AttrValue attr;
  std::vector<Value*> extra;  // the run-time value, after the backward node's own inputs
};
ListDim list_dim(Scope& s, const Node& n) {
  if (auto d = dynamic_attr(n, "dim")) {
    if (d->range || !n.input(d->begin)->type().is_scalar())
      no_gradient(n, "with a run-time 'dim' that is not one host int has no gradient in a static graph");
    return {std::string("@"), {s.fwd(n.input(d->begin))}};
  }
  return {n.has_attr("dim") ? n.i("dim") : int64_t{0}, {}};
}
// The "@k" of a ListDim for a backward node with `own` own inputs.
AttrValue dim_for(const ListDim& d, size_t own) {
  if (d.extra.empty()) return d.attr;
  return dynamic_attr_ref(own, own + 1, false);
}
std::vector<Value*> plus(std::vector<Value*> in, const ListDim& d) {
  in.insert(in.end(), d.extra.begin(), d.extra.end());
  return in;
}

// cat and stack of one list value (`cat(parts, 0)` of a std::vector, or a
// braced list the plugin built with list_append): the list's gradient is the
// list of its elements' gradients, made at run time, when its length is known.
bool list_operand(const Node& n) { return num_op_inputs(n) == 1 && n.input(0)->type().is_list(); }

// `dim` as a host int of the backward: a constant, or the run-time value.
Value* dim_value(Scope& s, const Node& n) {
  if (auto d = dynamic_attr(n, "dim")) {
    if (d->range || n.input(d->begin)->type().kind != Type::Kind::Int)
      no_gradient(n, "with a run-time 'dim' that is not one host int has no gradient in a static graph");
    return s.fwd(n.input(d->begin));
  }
  Node* c = s.emit("constant", {}, 0);
  c->attrs()["value"] = n.has_attr("dim") ? n.i("dim") : int64_t{0};
  return c->add_output(Type::int_());
}

std::vector<Value*> list_cat_stack_grad(Scope& s, const Node& n, Value* g) {
  std::vector<Value*> out(n.inputs().size(), nullptr);
  Value* dim = dim_value(s, n);
  out[0] = n.is(OpId::cat) ? s.emit_list("list_split_like", {g, s.fwd(n.input(0)), dim})
                           : s.emit_list("list_unbind", {g, dim});
  return out;
}

// stack's gradient of input i: slice i of grad along dim, without that dim.
std::vector<Value*> stack_grad(Scope& s, const Node& n, Value* g) {
  if (list_operand(n)) return list_cat_stack_grad(s, n, g);
  const ListDim dim = list_dim(s, n);
  std::vector<Value*> out;
  for (size_t i = 0; i < num_op_inputs(n); ++i) {
    const auto k = static_cast<int64_t>(i);
    Node* slice = with_attrs(s.emit("slice", plus({g}, dim)),
                             {{"dim", dim_for(dim, 1)}, {"start", k}, {"end", k + 1}, {"step", int64_t{1}}});
    out.push_back(with_attrs(s.emit("squeeze", plus({slice->output()}, dim)), {{"dim", dim_for(dim, 1)}})->output());
  }
  out.resize(n.inputs().size(), nullptr);
  return out;
}

std::vector<Value*> cat_grad(Scope& s, const Node& n, Value* g, const std::vector<bool>& wanted) {
  if (list_operand(n)) return list_cat_stack_grad(s, n, g);
  const ListDim dim = list_dim(s, n);
  const size_t own = num_op_inputs(n);
  std::vector<Value*> in{g};
  for (size_t i = 0; i < own; ++i) in.push_back(s.fwd(n.input(i)));
  std::vector<Value*> out(n.inputs().size(), nullptr);
  for (size_t i = 0; i < own; ++i) {
    if (!wanted[i]) continue;
    out[i] = with_attrs(s.emit("cat_backward", plus(in, dim)),
                        {{"dim", dim_for(dim, own + 1)}, {"index", static_cast<int64_t>(i)}})->output();
  }
  return out;
}

[[noreturn]] void no_gradient(const Node& n, const std::string& why) {
  std::string where;
  if (n.loc().valid())
    where = " at " + n.loc().file + ":" + std::to_string(n.loc().line) + ":" + std::to_string(n.loc().col);
  throw Error("autodiff: '" + n.op() + "'" + where + " " + why);
}

// permute{dims="@1"} / {dims="@1:k"}: the inverse permutation at run time.
Value* inverse_permutation_at_run_time(Scope& s, const Node& n) {
  const DynamicAttr d = *dynamic_attr(n, "dims");
  Value* dims = nullptr;
  if (d.range) {
    std::vector<Value*> ints;
    for (size_t i = d.begin; i < d.end; ++i) ints.push_back(s.fwd(n.input(i)));
    dims = s.emit1("make_shape", ints);
  } else {
    dims = s.fwd(n.input(d.begin));
    if (!dims->type().is_tensor()) dims = s.emit1("make_shape", {dims});
  }
  return s.emit1("inverse_permutation", {dims});
}

std::vector<Value*> view_grad(Scope& s, const Node& n, Value* g, const std::vector<bool>& wanted) {
  const OpId op = n.op_id();
  if (has_dynamic_attrs(n)) {
    // Attributes known at run time: the same rules, with those values.
    std::vector<Value*> out(n.inputs().size(), nullptr);
    if (op == OpId::transpose) out[0] = with_attrs(s.emit("transpose", with_runtime_inputs(s, n, g)), n.attrs())->output();
    else if (op == OpId::permute) out[0] = with_attrs(s.emit("permute", {g, inverse_permutation_at_run_time(s, n)}), {{"dims", std::string("@1")}})->output();
    else if (op == OpId::slice) return through_backward_op(s, n, g, wanted);
    else if (op == OpId::expand) out[0] = s.emit1("sum_to", {g, s.fwd(n.input(0))});
    else out[0] = s.emit1("reshape_as", {g, s.fwd(n.input(0))});  // reshape, flatten, squeeze, unsqueeze
    return out;
  }
  if (op == OpId::t) return {s.emit1("t", {g})};
  if (op == OpId::transpose) return {with_attrs(s.emit("transpose", {g}), n.attrs())->output()};
  if (op == OpId::permute) return {with_attrs(s.emit("permute", {g}), {{"dims", inverse_permutation(n)}})->output()};
  if (op == OpId::expand) return {s.emit1("sum_to", {g, s.fwd(n.input(0))})};
  if (op == OpId::slice) return through_backward_op(s, n, g, wanted);
  // reshape, flatten, squeeze, unsqueeze: the same elements in another shape
  return {s.emit1("reshape_as", {g, s.fwd(n.input(0))})};
}

std::vector<Value*> other_grad(Scope& s, const Node& n, Value* g, const std::vector<bool>& wanted) {
  const OpId op = n.op_id();
  if (op == OpId::softmax || op == OpId::log_softmax) return {softmax_grad(s, n, g)};
  if (op == OpId::where) return where_grad(s, n, g);
  if (op == OpId::masked_fill) return masked_fill_grad(s, n, g);
  if (op == OpId::triu || op == OpId::tril) return {triangle_grad(s, n, g)};
  if (op == OpId::contiguous) return {g};
  if (op == OpId::to || op == OpId::type_as) {  // back to x's dtype, as the eager engine does; none for an integral x
    std::vector<Value*> out(n.inputs().size(), nullptr);  // type_as: only other's dtype is read
    const Type& x = n.input(0)->type();
    if (!x.dtype || is_floating(*x.dtype)) out[0] = s.emit1("sum_to", {g, s.fwd(n.input(0))});
    return out;
  }
  if (op == OpId::stack) return stack_grad(s, n, g);
  if (op == OpId::cat) return cat_grad(s, n, g, wanted);
  if (op == OpId::dropout) return {g};  // evaluation: differentiate() split the others (split_dropout)
  if (backward_op(*n.table_op())) return through_backward_op(s, n, g, wanted);
  no_gradient(n, "has no gradient");
}

}  // namespace

// The list primitives (ir.h) the forward uses: a list's gradient is a list
// of its elements' gradients, one per element.
static std::vector<Value*> list_primitive_grad(Scope& s, const Node& n, Value* g, const std::vector<bool>& wanted) {
  if (n.is(OpId::list_append))  // list_append(l, t): t was the last element
    return {wanted[0] ? s.emit_list("list_drop_last", {g}) : nullptr, wanted[1] ? s.emit1("list_last", {g}) : nullptr};
  // list_get(l, i): g at element i, zeros elsewhere
  return {s.emit_list("list_onehot", {s.fwd(n.input(0)), s.fwd(n.input(1)), g}), nullptr};
}

// unbind's (list_unbind in a forward): the pieces' gradients stacked along
// dim, the constant one or the host int known at run time.
static std::vector<Value*> unbind_grad(Scope& s, const Node& n, Value* g) {
  const Node* d = n.input(1)->producer();
  if (d && d->is(OpId::constant)) return {with_attrs(s.emit("stack", {g}), {{"dim", d->i("value")}})->output(), nullptr};
  Node* st = with_attrs(s.emit("stack", {g, s.fwd(n.input(1))}), {{"dim", dynamic_attr_ref(1, 2, false)}});
  return {st->output(), nullptr};
}

Flow gradient_flow(const Node& n) {
  const OpId op = n.op_id();
  if (op == OpId::list_append || op == OpId::list_get || op == OpId::list_unbind || op == OpId::reshape_dyn || op == OpId::slice_dyn ||
      op == OpId::If || op == OpId::Loop || op == OpId::call || op == OpId::FusionGroup)
    return Flow::Through;
  // Reads of metadata, and host values read from a tensor (item), carry no
  // gradient, as in eager autograd.
  if (op == OpId::defined || op == OpId::tensor_dim || op == OpId::tensor_size || op == OpId::tensor_numel ||
      op == OpId::tensor_sizes || op == OpId::broadcast_sizes || op == OpId::list_len || op == OpId::item ||
      op == OpId::assign)  // a buffer update, written with autograd off
    return Flow::None;
  const OpInfo* info = n.table_op();
  if (!info || info->has(op_trait::Backward)) return Flow::Unknown;  // gradient ops included
  // A cast to an integral or bool dtype ends the gradient.
  if (op == OpId::to && n.has_attr("dtype")) {
    DType d{};
    const auto* token = std::get_if<std::string>(&n.attrs().at("dtype"));
    return !token || !dtype_from_token(*token, d) || is_floating(d) ? Flow::Through : Flow::None;
  }
  if (info->has(op_trait::ValuesUnread)) return Flow::None;  // rand_like: x's values are not read
  if (op == OpId::type_as) {
    const Type& other = n.input(1)->type();
    return !other.dtype || is_floating(*other.dtype) ? Flow::Through : Flow::None;
  }
  // Comparisons and index results (argmax) carry no gradient.
  return info->rule != DTypeRule::ToBool && info->rule != DTypeRule::ToIndex ? Flow::Through : Flow::None;
}

std::vector<Value*> op_gradients(Scope& s, const Node& n, const std::vector<Value*>& out_grads,
                                 const std::vector<bool>& wanted) {
  const OpInfo* info = n.table_op();
  if (n.is(OpId::list_append) || n.is(OpId::list_get)) return list_primitive_grad(s, n, out_grads.at(0), wanted);
  if (n.is(OpId::list_unbind)) return unbind_grad(s, n, out_grads.at(0));
  if (n.is(OpId::reshape_dyn)) return {s.emit1("reshape_as", {out_grads.at(0), s.fwd(n.input(0))})};
  if (n.is(OpId::slice_dyn)) {
    // slice_backward with its bounds known at run time (value_primitives.h).
    Node* b = s.emit("slice_backward", {out_grads.at(0), s.fwd(n.input(0)), s.fwd(n.input(1)), s.fwd(n.input(2)),
                                        s.fwd(n.input(3))});
    b->attrs() = {{"dim", n.attrs().at("dim")},
                  {"start", dynamic_attr_ref(2, 3, false)},
                  {"end", dynamic_attr_ref(3, 4, false)},
                  {"step", dynamic_attr_ref(4, 5, false)},
                  {"grad_mask", std::vector<int64_t>{1}}};
    return {b->output(), nullptr, nullptr, nullptr};
  }
  if (!info) {
    if (n.is(OpId::call)) no_gradient(n, "cannot be differentiated: run inline_calls first");
    if (n.is(OpId::FusionGroup)) no_gradient(n, "cannot be differentiated: differentiate before fusion");
    no_gradient(n, "has no gradient");
  }
  if (info->has(op_trait::Backward)) no_gradient(n, "is a gradient op and has no gradient itself");
  if (info->id == OpId::scaled_dot_product_attention && is_random(n))
    no_gradient(n, "with dropout_p > 0 has no gradient in a static graph yet: the backward would need the forward's "
                   "attention mask");
  Value* g = out_grads.at(0);
  if (has_dynamic_attrs(n)) {
    if (info->id == OpId::cat || info->id == OpId::stack)
      return info->id == OpId::cat ? cat_grad(s, n, g, wanted) : stack_grad(s, n, g);
    if (info->kind != OpKind::Elementwise && backward_op(*info)) return through_backward_op(s, n, g, wanted);
    if (info->kind == OpKind::View) return view_grad(s, n, g, wanted);
    if (info->id == OpId::softmax || info->id == OpId::log_softmax) {
      std::vector<Value*> out(n.inputs().size(), nullptr);
      out[0] = softmax_grad(s, n, g);
      return out;
    }
    if (info->id == OpId::masked_fill && !dynamic_attr(n, "invert")) return masked_fill_grad(s, n, g);
    if (info->id == OpId::triu || info->id == OpId::tril) {
      std::vector<Value*> out(n.inputs().size(), nullptr);
      out[0] = triangle_grad(s, n, g);
      return out;
    }
    no_gradient(n, "with attributes known only at run time has no gradient in a static graph yet");
  }
  switch (info->kind) {
    case OpKind::Elementwise: return elementwise(s, n, info->id, g, wanted);
    case OpKind::Reduce:
    case OpKind::Library: return through_backward_op(s, n, g, wanted);
    case OpKind::View: return view_grad(s, n, g, wanted);
    case OpKind::Other: return other_grad(s, n, g, wanted);
    default: break;  // primitives: handled above
  }
  no_gradient(n, "has no gradient");
}

}  // namespace graph::ir::autodiff_detail
