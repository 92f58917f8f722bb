// simplify: algebraic simplification, a list of small rewrite rules.
//
// Precondition: the graph verifies. Each rule looks at one node (and the
// producers of its inputs) and either returns the value the node's output
// can be replaced by, or nothing. A rule fires only when the replacement is
// exactly the same value with the same dtype and shape:
//  - identities with a host-scalar 0 or 1 (x + 0, x * 1, ...) check that the
//    op table's promotion of x's dtype with the scalar's category gives x's
//    dtype back (a bool tensor + 0 is an i64 tensor), and a host scalar
//    never changes a tensor's shape by broadcasting;
//  - x + 0 is skipped for floats: -0.0 + 0.0 is +0.0 (x - 0 is exact);
//  - x * 0 -> 0 only for host ints: a float x may be NaN or inf (NaN * 0 is
//    NaN), and a tensor result would need a zeros op the table lacks;
//  - view compositions (t(t(x)), permute of permute, ...) only compose the
//    index maps, so they hold for any dtype.
// Users of the replaced output are redirected; the node itself is left for
// dce. Rules run in block order, so chains collapse in one walk.
#include <optional>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"
#include "../rewrite.h"

namespace graph::ir {

namespace {

using detail::constant_number;


bool is_const(const Value* v, double want) {
  auto c = constant_number(v);
  return c && *c == want;
}

DType category(Type::Kind k) { return k == Type::Kind::Float ? DType::Float32 : k == Type::Kind::Int ? DType::Int64 : DType::Bool; }

// Whether `op(x, c)` (c a host scalar constant, on either side) has x's type:
// the same dtype for a tensor x, the same C++ kind for a scalar x.
bool keeps_type(const OpInfo& op, const Value* x, const Value* c) {
  const Type& tx = x->type();
  const Type& tc = c->type();
  if (!tc.is_scalar()) return false;
  if (tx.is_tensor()) {
    if (!tx.dtype) return false;
    return result_dtype(op, promote_with_scalar(*tx.dtype, category(tc.kind))) == *tx.dtype;
  }
  // Host scalars follow C++: bool promotes to int, a float operand wins.
  if (tx.kind == Type::Kind::Bool) return false;
  if (tx.kind == Type::Kind::Int) return tc.kind != Type::Kind::Float;
  return tx.kind == Type::Kind::Float;
}

bool is_float_typed(const Value* x) {
  const Type& t = x->type();
  return t.kind == Type::Kind::Float || (t.is_tensor() && t.dtype && is_floating(*t.dtype));
}

const Node* producer_op(const Value* v, OpId id) {
  const Node* p = v->producer();
  if (!p) return nullptr;
  const OpInfo* info = p->table_op();
  return info && info->id == id && !has_dynamic_attrs(*p) ? p : nullptr;
}

// ---- rules ---------------------------------------------------------------------

Value* arithmetic_identity(Node* n, const OpInfo& op) {
  if (op.num_inputs != 2 || op.kind != OpKind::Elementwise) return nullptr;
  Value* a = n->input(0);
  Value* b = n->input(1);
  auto x_with = [&](Value* x, Value* c, double want) { return is_const(c, want) && keeps_type(op, x, c); };
  switch (op.id) {
    case OpId::add:
      if (x_with(a, b, 0) && !is_float_typed(a)) return a;
      if (x_with(b, a, 0) && !is_float_typed(b)) return b;
      return nullptr;
    case OpId::sub: return x_with(a, b, 0) ? a : nullptr;
    case OpId::mul:
      if (x_with(a, b, 1)) return a;
      if (x_with(b, a, 1)) return b;
      return nullptr;
    case OpId::div: return x_with(a, b, 1) ? a : nullptr;
    default: return nullptr;
  }
}

// x * 0 for host ints: a new constant 0 (x itself may be anything finite).
Value* times_zero(Node* n, const OpInfo& op) {
  if (op.id != OpId::mul || n->output()->type().kind != Type::Kind::Int) return nullptr;
  for (size_t i = 0; i < 2; ++i) {
    const Value* c = n->input(i);
    const Value* x = n->input(1 - i);
    if (c->type().kind == Type::Kind::Int && x->type().kind == Type::Kind::Int && is_const(c, 0)) {
      Node* zero = n->owner()->insert_before(n, "constant");
      zero->attrs()["value"] = int64_t{0};
      zero->set_loc(n->loc());
      return zero->add_output(Type::int_());
    }
  }
  return nullptr;
}

Value* double_negation(Node* n, const OpInfo& op) {
  if (op.id != OpId::neg) return nullptr;
  const Node* inner = producer_op(n->input(0), OpId::neg);
  return inner ? inner->input(0) : nullptr;
}

// t(t(x)) is x for rank <= 2 (t rejects more); transpose(transpose(x, a, b), a, b)
// (either order of the pair) is x.
Value* double_transpose(Node* n, const OpInfo& op) {
  if (op.id == OpId::t) {
    const Node* inner = producer_op(n->input(0), OpId::t);
    return inner ? inner->input(0) : nullptr;
  }
  if (op.id != OpId::transpose) return nullptr;
  const Node* inner = producer_op(n->input(0), OpId::transpose);
  if (!inner || !n->has_attr("dim0") || !n->has_attr("dim1") || !inner->has_attr("dim0") || !inner->has_attr("dim1"))
    return nullptr;
  const int64_t a = n->i("dim0"), b = n->i("dim1"), c = inner->i("dim0"), d = inner->i("dim1");
  // Negative dims need the rank to compare; compare them only when both
  // spellings agree in sign.
  return ((a == c && b == d) || (a == d && b == c)) ? inner->input(0) : nullptr;
}

// permute(permute(x, p), q) is permute(x, r) with r[i] = p[q[i]]; the
// identity when r is 0, 1, 2, ...
Value* permute_of_permute(Node* n, const OpInfo& op) {
  if (op.id != OpId::permute || !n->has_attr("dims")) return nullptr;
  const Node* inner = producer_op(n->input(0), OpId::permute);
  if (!inner || !inner->has_attr("dims")) return nullptr;
  const auto& p = inner->ints("dims");
  const auto& q = n->ints("dims");
  if (p.size() != q.size()) return nullptr;
  const int64_t rank = static_cast<int64_t>(p.size());
  std::vector<int64_t> r;
  bool identity = true;
  for (int64_t qi : q) {
    if (qi < 0) qi += rank;
    if (qi < 0 || qi >= rank) return nullptr;
    int64_t v = p[qi] < 0 ? p[qi] + rank : p[qi];
    identity = identity && v == static_cast<int64_t>(r.size());
    r.push_back(v);
  }
  if (identity) return inner->input(0);
  n->replace_input(0, inner->input(0));
  n->attrs()["dims"] = r;
  return nullptr;  // rewritten in place
}

// reshape(reshape(x, a), b) is reshape(x, b): the elements keep their order.
Value* reshape_of_reshape(Node* n, const OpInfo& op) {
  if (op.id != OpId::reshape) return nullptr;
  if (const Node* inner = producer_op(n->input(0), OpId::reshape)) n->replace_input(0, inner->input(0));
  return nullptr;
}

Value* squeeze_of_unsqueeze(Node* n, const OpInfo& op) {
  if (op.id != OpId::squeeze || !n->has_attr("dim")) return nullptr;
  const Node* inner = producer_op(n->input(0), OpId::unsqueeze);
  if (!inner || !inner->has_attr("dim") || inner->i("dim") != n->i("dim")) return nullptr;
  return inner->input(0);
}

using Rule = Value* (*)(Node*, const OpInfo&);
constexpr Rule kRules[] = {arithmetic_identity, times_zero,         double_negation,     double_transpose,
                           permute_of_permute,  reshape_of_reshape, squeeze_of_unsqueeze};

// The replacement keeps the kind; a tensor replacement may be more precise
// than the node's annotation (a view's output is often left unknown), never
// different where both are known.
bool compatible(const Type& from, const Type& to) {
  if (from.kind != to.kind) return false;
  if (!from.is_tensor()) return true;
  if (from.dtype && to.dtype && *from.dtype != *to.dtype) return false;
  if (from.dims && to.dims && from.dims->size() != to.dims->size()) return false;
  return true;
}

void simplify_block(Block* b) {
  std::vector<Node*> order;
  for (const auto& n : b->nodes()) order.push_back(n.get());
  for (Node* n : order) {
    for (const auto& inner : n->blocks()) simplify_block(inner.get());
    const OpInfo* info = n->table_op();
    // Attributes known only at run time (value_primitives.h) are not compared.
    if (!info || n->num_outputs() != 1 || has_dynamic_attrs(*n)) continue;
    for (Rule rule : kRules) {
      Value* to = rule(n, *info);
      if (!to) continue;
      if (compatible(n->output()->type(), to->type())) replace_uses(b, n->output(), to);
      break;
    }
  }
}

}  // namespace

void simplify(Graph& g) { simplify_block(g.top()); }

}  // namespace graph::ir
