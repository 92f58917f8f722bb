// infer_types: dtype and shape inference over the whole graph.
//
// Precondition: the graph verifies. Walks every block in order, so each node
// sees its inputs' final types; Loop bodies are re-walked until the carried
// types stop changing. Types only become more precise than "unknown" when the
// inputs determine them; anything else is left unknown rather than guessed,
// because codegen specializes on what this pass claims.
#include <algorithm>
#include <optional>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

using Dims = std::vector<Dim>;

// ---- shapes ----------------------------------------------------------------

// One broadcast dimension (NumPy rules) when it can be told from the IR. A
// static 1 always yields to the other side; a static size above 1 wins over a
// symbol or an unknown, since those must be 1 or equal for the op to run.
Dim broadcast_dim(const Dim& a, const Dim& b) {
  if (a.is_static() && a.size == 1) return b;
  if (b.is_static() && b.size == 1) return a;
  if (a == b) return a;
  if (a.is_static()) return a;
  if (b.is_static()) return b;
  return Dim::unknown();
}

std::optional<Dims> broadcast_dims(const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  Dims out(rank, Dim::of(1));
  for (const Dims* s : shapes) {
    const size_t lead = rank - s->size();
    for (size_t i = 0; i < s->size(); ++i) out[lead + i] = broadcast_dim(out[lead + i], (*s)[i]);
  }
  return out;
}

// The type two values share: equal parts kept, the rest unknown. Used where
// control flow joins (If outputs, Loop-carried values).
Type join(const Type& a, const Type& b) {
  if (a == b) return a;
  if (a.kind != b.kind) return a;  // the verifier rejects this; keep the declared kind
  if (!a.is_tensor()) return a;
  Type t = Type::tensor();
  if (a.dtype == b.dtype) t.dtype = a.dtype;
  if (a.dims && b.dims && a.dims->size() == b.dims->size()) {
    Dims d;
    for (size_t i = 0; i < a.dims->size(); ++i)
      d.push_back((*a.dims)[i] == (*b.dims)[i] ? (*a.dims)[i] : Dim::unknown());
    t.dims = std::move(d);
  }
  return t;
}

// ---- scalars -----------------------------------------------------------------

// The dtype category a host scalar brings to promotion.
DType scalar_category(Type::Kind k) {
  switch (k) {
    case Type::Kind::Float: return DType::Float32;
    case Type::Kind::Int: return DType::Int64;
    default: return DType::Bool;
  }
}

// The kind of an elementwise op over host scalars only, as C++ would type
// the expression: comparisons give bool; a float operand gives float; ints
// (and bools, which C++ promotes to int in arithmetic) give int; unary float
// functions (tanh, exp, sigmoid) give float.
Type::Kind scalar_result_kind(const OpInfo& op, const Node* n) {
  if (op.rule == DTypeRule::ToBool) return Type::Kind::Bool;
  bool any_float = false;
  for (const Value* v : n->inputs()) any_float = any_float || v->type().kind == Type::Kind::Float;
  if (any_float || (op.rule == DTypeRule::ToFloat && op.num_inputs == 1)) return Type::Kind::Float;
  return Type::Kind::Int;
}

Type scalar_type(Type::Kind k) {
  switch (k) {
    case Type::Kind::Float: return Type::float_();
    case Type::Kind::Bool: return Type::bool_();
    default: return Type::int_();
  }
}

// ---- per-op rules ------------------------------------------------------------

Type elementwise(const OpInfo& op, const Node* n) {
  std::vector<const Dims*> shapes;
  std::optional<DType> tensors;  // promoted dtype of the tensor inputs
  bool any_tensor = false, dtype_known = true, dims_known = true;
  for (const Value* v : n->inputs()) {
    const Type& t = v->type();
    if (!t.is_tensor()) continue;
    any_tensor = true;
    if (!t.dtype) dtype_known = false;
    else tensors = tensors ? promote_types(*tensors, *t.dtype) : *t.dtype;
    if (!t.dims) dims_known = false;
    else shapes.push_back(&*t.dims);
  }
  if (!any_tensor) return scalar_type(scalar_result_kind(op, n));

  Type out = Type::tensor();
  if (dtype_known) {
    DType promoted = *tensors;
    for (const Value* v : n->inputs())
      if (v->type().is_scalar()) promoted = promote_with_scalar(promoted, scalar_category(v->type().kind));
    out.dtype = result_dtype(op, promoted);
  }
  if (dims_known) out.dims = broadcast_dims(shapes);
  return out;
}

Type reduce(const OpInfo& op, const Node* n) {
  const Type& in = n->input(0)->type();
  Type out = Type::tensor();
  if (in.dtype) out.dtype = result_dtype(op, *in.dtype);
  if (!n->has_attr("dim")) {
    out.dims = Dims{};  // a whole-tensor reduction is 0-d
    return out;
  }
  if (!in.dims || !std::holds_alternative<int64_t>(n->attrs().at("dim"))) return out;  // a dim list: unknown
  const int64_t rank = static_cast<int64_t>(in.dims->size());
  int64_t d = n->i("dim");
  if (d < 0) d += rank;
  if (rank == 0 && (d == 0 || d == -1)) {  // a 0-d tensor reduces along dim 0 / -1 to itself
    out.dims = Dims{};
    return out;
  }
  if (d < 0 || d >= rank) return out;  // out of range: the runtime reports it
  Dims dims = *in.dims;
  const bool keepdim = n->has_attr("keepdim") && n->b("keepdim");
  if (keepdim) dims[d] = Dim::of(1);
  else dims.erase(dims.begin() + d);
  out.dims = std::move(dims);
  return out;
}

// The op's dtype rule applied to input 0; the shape left unknown.
Type same_dtype(const OpInfo& op, const Node* n) {
  Type out = Type::tensor();
  if (!n->inputs().empty() && n->input(0)->type().dtype) out.dtype = result_dtype(op, *n->input(0)->type().dtype);
  return out;
}

Type matmul(const Node* n) {
  Type out = Type::tensor(DType::Float32);
  const Type& a = n->input(0)->type();
  const Type& b = n->input(1)->type();
  if (a.dims && b.dims && a.dims->size() == 2 && b.dims->size() == 2)
    out.dims = Dims{(*a.dims)[0], (*b.dims)[1]};
  return out;
}

Type transpose(const Node* n) {
  Type out = n->input(0)->type();
  if (out.dims && out.dims->size() == 2) std::swap((*out.dims)[0], (*out.dims)[1]);
  else if (out.dims && out.dims->size() > 2) out.dims.reset();
  return out;
}

// where(cond, a, b): a and b promote; cond only selects.
Type where(const Node* n) {
  Type out = Type::tensor();
  const Type& a = n->input(1)->type();
  const Type& b = n->input(2)->type();
  if (a.dtype && b.dtype) out.dtype = promote_types(*a.dtype, *b.dtype);
  return out;
}

// ---- the walk ----------------------------------------------------------------

class TypeInference {
 public:
  void block(Block* b) {
    for (const auto& n : b->nodes()) node(n.get());
  }

 private:
  void node(Node* n) {
    const std::string& op = n->op();
    if (op == "constant") return;  // typed by its value
    if (op == "If") return if_(n);
    if (op == "Loop") return loop(n);
    if (op == "FusionGroup") return fusion_group(n);
    const OpInfo* info = find_op(op);
    if (!info || n->num_outputs() != 1) return;
    switch (info->kind) {
      case OpKind::Elementwise: n->output()->set_type(elementwise(*info, n)); break;
      case OpKind::Reduce: n->output()->set_type(reduce(*info, n)); break;
      case OpKind::Library:
        n->output()->set_type(info->id == OpId::matmul ? matmul(n) : same_dtype(*info, n));
        break;
      case OpKind::View:
        n->output()->set_type(info->id == OpId::t ? transpose(n) : same_dtype(*info, n));
        break;
      case OpKind::Other:
        n->output()->set_type(info->id == OpId::where ? where(n) : same_dtype(*info, n));
        break;
    }
  }

  void if_(Node* n) {
    if (n->blocks().size() != 2) return;
    block(n->block(0));
    block(n->block(1));
    const auto& then_r = n->block(0)->returns();
    const auto& else_r = n->block(1)->returns();
    for (size_t i = 0; i < n->num_outputs() && i < then_r.size() && i < else_r.size(); ++i) {
      const Type& a = then_r[i]->type();
      const Type& b = else_r[i]->type();
      if (a.kind != n->output(i)->type().kind) continue;
      n->output(i)->set_type(join(a, b));
    }
  }

  // Carried parameters start as the initial values' types; each round walks
  // the body and widens a parameter to its join with the body's return, until
  // nothing changes. Joins only lose information, so this terminates; the
  // round limit is a guard against a join that oscillates.
  void loop(Node* n) {
    if (n->blocks().size() != 1) return;
    Block* body = n->block(0);
    const size_t carried = n->num_outputs();
    if (body->params().size() != carried + 1 || body->returns().size() != carried + 1) return;
    body->param(0)->set_type(Type::int_());
    for (size_t i = 0; i < carried; ++i) body->param(i + 1)->set_type(n->input(i + 2)->type());
    constexpr int kMaxRounds = 16;
    for (int round = 0;; ++round) {
      block(body);
      bool changed = false;
      for (size_t i = 0; i < carried; ++i) {
        Value* p = body->param(i + 1);
        Type joined = join(p->type(), body->returns()[i + 1]->type());
        if (round == kMaxRounds && p->type().is_tensor()) joined = Type::tensor();
        if (joined != p->type()) {
          p->set_type(joined);
          changed = true;
        }
      }
      if (!changed || round > kMaxRounds) break;
    }
    for (size_t i = 0; i < carried; ++i) n->output(i)->set_type(body->param(i + 1)->type());
  }

  // Re-running inference after fusion: the block sees the node's inputs.
  void fusion_group(Node* n) {
    if (n->blocks().size() != 1) return;
    Block* body = n->block(0);
    if (body->params().size() != n->inputs().size()) return;
    for (size_t i = 0; i < n->inputs().size(); ++i) body->param(i)->set_type(n->input(i)->type());
    block(body);
    for (size_t i = 0; i < n->num_outputs() && i < body->returns().size(); ++i)
      n->output(i)->set_type(body->returns()[i]->type());
  }
};

}  // namespace

void infer_types(Graph& g, DType tensor_default) {
  for (const auto& in : g.inputs()) {
    if (!in->type().is_tensor() || in->type().dtype) continue;
    Type t = in->type();
    t.dtype = tensor_default;
    in->set_type(std::move(t));
  }
  TypeInference().block(g.top());
}

}  // namespace graph::ir
