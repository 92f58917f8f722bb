// const_fold: constant folding and the removal of control flow decided by
// constants.
//
// Precondition: the graph verifies. One walk in block order, so a folded
// value is a constant by the time its users are visited. Arithmetic runs
// through graph::scalar::<op><T> with T chosen exactly as codegen's
// scalar_elementwise chooses it (the output's C++ type; for comparisons the
// promoted input type), so a folded graph computes what the unfolded
// generated code would have. Folds that would raise, trap or hit undefined
// behaviour at run time are left alone, so the runtime still reports them.
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <vector>

#include "../rewrite.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"
#include "graph/scalar_ops.h"

namespace graph::ir {

namespace {

using Number = std::variant<int64_t, double, bool>;

std::optional<Number> constant_of(const Value* v) {
  const Node* p = v->producer();
  if (!p || !p->is(OpId::constant) || !p->has_attr("value")) return std::nullopt;
  const AttrValue& a = p->attrs().at("value");
  if (auto* i = std::get_if<int64_t>(&a)) return *i;
  if (auto* d = std::get_if<double>(&a)) return *d;
  if (auto* b = std::get_if<bool>(&a)) return *b;
  return std::nullopt;
}

template <class T>
T as(const Number& n) {
  return std::visit([](auto v) { return static_cast<T>(v); }, n);
}

template <class T>
std::optional<Number> apply(OpId id, const std::vector<Number>& in) {
  switch (id) {
#define GRAPH_UNARY_OP(name, rule, cost, body, grad_x) \
  case OpId::name: return Number(graph::scalar::name<T>(as<T>(in[0])));
#define GRAPH_BINARY_OP(name, rule, cost, body, grad_a, grad_b) \
  case OpId::name: return Number(graph::scalar::name<T>(as<T>(in[0]), as<T>(in[1])));
#include "graph/ops.def"
    default: return std::nullopt;
  }
}

// Integer operations whose C++ evaluation is undefined or raises.
bool int_fold_is_safe(OpId id, const std::vector<Number>& in) {
  if (in.size() != 2) return !(id == OpId::neg && as<int64_t>(in[0]) == std::numeric_limits<int64_t>::min());
  const int64_t a = as<int64_t>(in[0]), b = as<int64_t>(in[1]);
  int64_t r;
  switch (id) {
    case OpId::add: return !__builtin_add_overflow(a, b, &r);
    case OpId::sub: return !__builtin_sub_overflow(a, b, &r);
    case OpId::mul: return !__builtin_mul_overflow(a, b, &r);
    case OpId::div: return b != 0 && !(a == std::numeric_limits<int64_t>::min() && b == -1);
    case OpId::pow: {
      // std::pow in double, then back to int64: only when it fits.
      const double p = std::pow(static_cast<double>(a), static_cast<double>(b));
      return std::isfinite(p) && std::fabs(p) < 9.2e18;
    }
    default: return true;
  }
}

// The C++ type codegen computes a host-scalar node in (cpp.cpp,
// scalar_compute_type): the output's kind, or for comparisons the widest
// input kind.
Type::Kind compute_kind(const Node* n, const OpInfo& op) {
  if (op.rule != DTypeRule::ToBool) return n->output()->type().kind;
  Type::Kind k = Type::Kind::Bool;
  for (const Value* v : n->inputs()) {
    if (v->type().kind == Type::Kind::Float) k = Type::Kind::Float;
    else if (v->type().kind == Type::Kind::Int && k == Type::Kind::Bool) k = Type::Kind::Int;
  }
  return k;
}

std::optional<Number> evaluate(const Node* n, const OpInfo& op, const std::vector<Number>& in) {
  switch (compute_kind(n, op)) {
    case Type::Kind::Float: return apply<double>(op.id, in);
    case Type::Kind::Int: return int_fold_is_safe(op.id, in) ? apply<int64_t>(op.id, in) : std::nullopt;
    case Type::Kind::Bool: return apply<bool>(op.id, in);
    default: return std::nullopt;
  }
}

// The output as a constant of the output's kind (as the generated
// `const T v = scalar::op<U>(...)` converts).
Value* make_constant(Node* at, const Number& v) {
  Node* c = at->owner()->insert_before(at, "constant");
  c->set_loc(at->loc());
  const Type::Kind k = at->output()->type().kind;
  if (k == Type::Kind::Float) c->attrs()["value"] = as<double>(v);
  else if (k == Type::Kind::Int) c->attrs()["value"] = as<int64_t>(v);
  else c->attrs()["value"] = as<bool>(v);
  return c->add_output(at->output()->type(), at->output()->name());
}

// The truth of a constant condition (a bool or an int, as C++ tests it).
std::optional<bool> constant_truth(const Value* v) {
  auto c = constant_of(v);
  if (!c || std::holds_alternative<double>(*c)) return std::nullopt;
  return as<bool>(*c);
}

class Folder {
 public:
  void block(Block* b) {
    std::vector<Node*> order;
    for (const auto& n : b->nodes()) order.push_back(n.get());
    for (Node* n : order) node(n);
  }

 private:
  void node(Node* n) {
    if (n->is(OpId::If)) return if_(n);
    if (n->is(OpId::Loop)) return loop(n);
    for (const auto& inner : n->blocks()) block(inner.get());
    const OpInfo* info = n->table_op();
    if (info && has_dynamic_attrs(*n)) constant_lists(n);
    if (!info || info->kind != OpKind::Elementwise || n->num_outputs() != 1 || !n->output()->type().is_scalar())
      return;
    std::vector<Number> in;
    for (const Value* v : n->inputs()) {
      auto c = constant_of(v);
      if (!c) return;
      in.push_back(*c);
    }
    auto result = evaluate(n, *info, in);
    if (!result) return;
    Value* folded = make_constant(n, *result);
    replace_uses(n->owner(), n->output(), folded);
    detail::erase_node(n);
  }

  // The ints of a run-time list attribute (value_primitives.h) when all are
  // constants: "@i:j" over constant ints, or "@i" naming a make_shape of
  // constant ints (`std::vector<int64_t> dims = {1, 0}; x.permute(dims)`).
  static std::optional<std::vector<int64_t>> constant_list(const Node* n, const DynamicAttr& d) {
    std::vector<const Value*> ints;
    if (d.range) {
      for (size_t i = d.begin; i < d.end; ++i) ints.push_back(n->input(i));
    } else {
      const Node* p = n->input(d.begin)->producer();
      if (!p || !p->is(OpId::make_shape)) return std::nullopt;
      for (const Value* v : p->inputs()) ints.push_back(v);
    }
    std::vector<int64_t> out;
    for (const Value* v : ints) {
      auto c = constant_of(v);
      if (!c || !std::holds_alternative<int64_t>(*c)) return std::nullopt;
      out.push_back(std::get<int64_t>(*c));
    }
    return out;
  }

  // Such attributes become constant ones and their inputs go (shape
  // inference then sees them); the other run-time attributes are renumbered.
  static void constant_lists(Node* n) {
    Attributes attrs = n->attrs();
    std::vector<bool> drop(n->inputs().size(), false);
    bool changed = false;
    for (const auto& [k, v] : n->attrs()) {
      auto d = dynamic_attr(*n, k);
      if (!d || d->end > n->inputs().size()) continue;
      auto list = constant_list(n, *d);
      if (!list) continue;
      attrs[k] = *list;
      for (size_t i = d->begin; i < d->end; ++i) drop[i] = true;
      changed = true;
    }
    if (!changed) return;
    std::vector<size_t> index(n->inputs().size(), 0);
    std::vector<Value*> kept;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      index[i] = kept.size();
      if (!drop[i]) kept.push_back(n->input(i));
    }
    for (const auto& [k, v] : n->attrs()) {
      auto d = dynamic_attr(*n, k);
      if (!d || drop[d->begin]) continue;
      attrs[k] = dynamic_attr_ref(index[d->begin], index[d->end - 1] + 1, d->range);
    }
    n->drop_inputs();
    for (Value* v : kept) n->add_input(v);
    n->attrs() = std::move(attrs);
  }

  // The taken block's nodes move before the If; its returns replace the
  // outputs. The untaken block goes with the If.
  void if_(Node* n) {
    auto truth = constant_truth(n->input(0));
    if (!truth || n->blocks().size() != 2) {
      for (const auto& inner : n->blocks()) block(inner.get());
      return;
    }
    Block* taken = n->block(*truth ? 0 : 1);
    std::vector<Node*> nodes;
    for (const auto& m : taken->nodes()) nodes.push_back(m.get());
    detail::move_before(nodes, n);
    for (size_t i = 0; i < n->num_outputs(); ++i) replace_uses(n->owner(), n->output(i), taken->returns()[i]);
    taken->set_returns({});
    detail::erase_node(n);
    for (Node* m : nodes) node(m);
  }

  // A loop that never runs its body yields its initial carried values.
  void loop(Node* n) {
    const auto trips = constant_of(n->input(0));
    const auto go = constant_truth(n->input(1));
    const bool never = (trips && std::holds_alternative<int64_t>(*trips) && std::get<int64_t>(*trips) <= 0) ||
                       (go && !*go);
    if (!never) {
      for (const auto& inner : n->blocks()) block(inner.get());
      return;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) replace_uses(n->owner(), n->output(i), n->input(i + 2));
    detail::erase_node(n);
  }
};

}  // namespace

void const_fold(Graph& g) { Folder().block(g.top()); }

}  // namespace graph::ir
