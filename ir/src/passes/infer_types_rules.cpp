// infer_types' rules: the dtype and shape of each op-table op's result from
// its inputs' types and attributes (elementwise broadcasting, reductions,
// matmul, views, indexing, losses, attention; linear, convolutions, pools,
// pad, the normalizations and embedding are in infer_types_nn.cpp). The walk
// over blocks, If/Loop joins and run-time attributes are in infer_types.cpp.
#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "infer_types_rules.h"

namespace graph::ir::type_rules {


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

// ---- errors -----------------------------------------------------------------

std::string dims_str(const Dims& d) {
  std::string s = Type::tensor(std::nullopt, d).str();  // "Tensor[2, N]"
  return s.substr(s.find('['));
}

// A shape that cannot work whatever the inputs' values: the node's op and
// source location, so the user sees which line of C++ is wrong.
[[noreturn]] void shape_error(const Node* n, const std::string& msg) {
  std::string where;
  if (n->loc().valid())
    where = " at " + n->loc().file + ":" + std::to_string(n->loc().line) + ":" + std::to_string(n->loc().col);
  throw GraphError("infer_types: '" + n->op() + "'" + where + ": " + msg, n->loc(), n->op() + ": " + msg);
}

const Dims* dims_of(const Value* v) {
  const Type& t = v->type();
  return t.is_tensor() && t.dims ? &*t.dims : nullptr;
}

// `d` wrapped into [0, rank), or a shape error.
int64_t wrap_dim(const Node* n, int64_t d, size_t rank) {
  const int64_t r = static_cast<int64_t>(rank);
  if (d < -r || d >= r)
    shape_error(n, "dimension " + std::to_string(d) + " is out of range for a tensor of rank " + std::to_string(rank));
  return d < 0 ? d + r : d;
}

int64_t attr_or(const Node* n, const std::string& k, int64_t fallback) {
  if (!n->has_attr(k)) return fallback;
  const auto* v = std::get_if<int64_t>(&n->attrs().at(k));
  return v ? *v : fallback;
}

std::vector<int64_t> ints_or(const Node* n, const std::string& k, std::vector<int64_t> fallback) {
  if (!n->has_attr(k)) return fallback;
  if (const auto* v = std::get_if<std::vector<int64_t>>(&n->attrs().at(k))) return *v;
  if (const auto* i = std::get_if<int64_t>(&n->attrs().at(k))) return {*i};
  return fallback;
}

// Two dims that must be equal: an error only when both are static and differ.
void require_equal(const Node* n, const Dim& a, const Dim& b, const std::string& what) {
  if (a.is_static() && b.is_static() && a.size != b.size)
    shape_error(n, what + ": " + std::to_string(a.size) + " vs " + std::to_string(b.size));
}

// The product of dims when all are static.
std::optional<int64_t> numel(const Dims& d) {
  int64_t p = 1;
  for (const Dim& x : d) {
    if (!x.is_static()) return std::nullopt;
    p *= x.size;
  }
  return p;
}

// ---- per-op rules ------------------------------------------------------------

Dims broadcast_or_throw(const Node* n, const std::vector<const Dims*>& shapes) {
  size_t rank = 0;
  for (const Dims* s : shapes) rank = std::max(rank, s->size());
  for (size_t i = 0; i < rank; ++i) {  // aligned from the right
    std::optional<int64_t> seen;
    for (const Dims* s : shapes) {
      if (i >= s->size()) continue;
      const Dim& d = (*s)[s->size() - 1 - i];
      if (!d.is_static() || d.size == 1) continue;
      if (seen && *seen != d.size) {
        std::string all;
        for (const Dims* t : shapes) all += (all.empty() ? "" : " and ") + dims_str(*t);
        shape_error(n, "shapes " + all + " do not broadcast");
      }
      seen = d.size;
    }
  }
  return *broadcast_dims(shapes);
}

// The tensor operands' dtype as the eager kernels (and PyTorch) promote it:
// dimensioned tensors among themselves, then a 0-d tensor only when of a
// higher category (dtype.h: f32 [3] + f64 0-d -> f32). An operand of unknown
// rank is tried both ways: unknown when they disagree, so the node is not
// fused and runs as the eager call, which decides at run time.
std::optional<DType> promote_tensor_operands(const Node* n) {
  struct Operand {
    DType dtype;
    int rank;  // 1: dimensioned, 0: 0-d, -1: unknown
  };
  std::vector<Operand> ops;
  int unknown = 0;
  for (const Value* v : n->inputs()) {
    const Type& t = v->type();
    if (!t.is_tensor()) continue;
    if (!t.dtype) return std::nullopt;
    ops.push_back({*t.dtype, t.dims ? (t.dims->empty() ? 0 : 1) : -1});
    unknown += t.dims ? 0 : 1;
  }
  if (unknown > 8) unknown = 8;  // elementwise ops have two operands; bound the tries
  std::optional<DType> result;
  for (unsigned guess = 0; guess < (1u << unknown); ++guess) {
    std::optional<DType> dim, zero;
    int k = 0;
    for (const Operand& o : ops) {
      const bool zero_dim = o.rank == 0 || (o.rank < 0 && k < unknown && (guess >> k++ & 1u));
      std::optional<DType>& acc = zero_dim ? zero : dim;
      acc = acc ? promote_types(*acc, o.dtype) : o.dtype;
    }
    const DType r = dim && zero ? promote_with_zero_dim(*dim, *zero) : dim ? *dim : *zero;
    if (result && *result != r) return std::nullopt;
    result = r;
  }
  return result;
}

Type elementwise(const OpInfo& op, const Node* n) {
  std::vector<const Dims*> shapes;
  bool any_tensor = false, dims_known = true;
  for (const Value* v : n->inputs()) {
    const Type& t = v->type();
    if (!t.is_tensor()) continue;
    any_tensor = true;
    if (!t.dims) dims_known = false;
    else shapes.push_back(&*t.dims);
  }
  if (!any_tensor) return scalar_type(scalar_result_kind(op, n));

  Type out = Type::tensor();
  if (const std::optional<DType> tensors = promote_tensor_operands(n)) {
    DType promoted = *tensors;
    for (const Value* v : n->inputs())
      if (v->type().is_scalar()) promoted = promote_with_scalar(promoted, scalar_category(v->type().kind));
    out.dtype = result_dtype(op, promoted);
  }
  if (shapes.size() > 1) {
    Dims b = broadcast_or_throw(n, shapes);  // known operands clash even when another is unknown
    if (dims_known) out.dims = std::move(b);
  } else if (dims_known) {
    out.dims = *shapes[0];
  }
  return out;
}

// dim: an int or a list (absent: every dim); keepdim keeps them as 1.
Type reduce(const OpInfo& op, const Node* n) {
  const Type& in = n->input(0)->type();
  Type out = Type::tensor();
  if (in.dtype) out.dtype = result_dtype(op, *in.dtype);
  if (!n->has_attr("dim")) {
    out.dims = Dims{};  // a whole-tensor reduction is 0-d
    return out;
  }
  if (!in.dims) return out;
  const size_t rank = in.dims->size();
  if (rank == 0) {  // a 0-d tensor reduces along dim 0 / -1 to itself
    for (int64_t d : ints_or(n, "dim", {}))
      if (d != 0 && d != -1) wrap_dim(n, d, 0);
    out.dims = Dims{};
    return out;
  }
  std::vector<bool> reduced(rank, false);
  for (int64_t d : ints_or(n, "dim", {})) reduced[wrap_dim(n, d, rank)] = true;
  const bool keepdim = n->has_attr("keepdim") && n->b("keepdim");
  Dims dims;
  for (size_t i = 0; i < rank; ++i) {
    if (!reduced[i]) dims.push_back((*in.dims)[i]);
    else if (keepdim) dims.push_back(Dim::of(1));
  }
  out.dims = std::move(dims);
  return out;
}

// The op's dtype rule applied to input 0; the shape left unknown.
Type same_dtype(const OpInfo& op, const Node* n) {
  Type out = Type::tensor();
  if (!n->inputs().empty() && n->input(0)->type().dtype) out.dtype = result_dtype(op, *n->input(0)->type().dtype);
  return out;
}

// Both operands in one dtype (the runtime rejects a mix), which the result has.
std::optional<DType> same_operand_dtype(const Node* n, const Value* a, const Value* b) {
  const auto& da = a->type().dtype;
  const auto& db = b->type().dtype;
  if (da && db && *da != *db)
    shape_error(n, "operands have different dtypes: " + std::string(dtype_token(*da)) + " and " +
                       std::string(dtype_token(*db)));
  return da ? da : db;
}

void require_floating(const Node* n) {
  if (n->inputs().empty()) return;
  const Type& t = n->input(0)->type();
  if (t.is_tensor() && t.dtype && !is_floating(*t.dtype))
    shape_error(n, "expected a floating input, got " + std::string(dtype_token(*t.dtype)));
}

// [..., m, k] x [..., k, n] with broadcast batch dims; a 1-D operand is a
// row (left) or column (right) vector whose dimension is then dropped.
Type matmul(const Node* n) {
  Type out = Type::tensor();
  out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
  const Dims* a = dims_of(n->input(0));
  const Dims* b = dims_of(n->input(1));
  if (!a || !b) return out;
  if (a->empty() || b->empty()) shape_error(n, "both operands need at least one dimension");
  Dims x = *a, y = *b;
  const bool row = x.size() == 1, col = y.size() == 1;
  if (row) x.insert(x.begin(), Dim::of(1));
  if (col) y.push_back(Dim::of(1));
  const Dim& k1 = x.back();
  const Dim& k2 = y[y.size() - 2];
  if (k1.is_static() && k2.is_static() && k1.size != k2.size)
    shape_error(n, "inner dimensions do not match: " + dims_str(*a) + " x " + dims_str(*b));
  Dims xb(x.begin(), x.end() - 2), yb(y.begin(), y.end() - 2);
  Dims dims = broadcast_or_throw(n, {&xb, &yb});
  if (!row) dims.push_back(x[x.size() - 2]);
  if (!col) dims.push_back(y.back());
  out.dims = std::move(dims);
  return out;
}

std::optional<DType> promoted_inputs(const Node* n, size_t from = 0) {
  std::optional<DType> t;
  for (size_t i = from; i < n->inputs().size(); ++i) {
    const auto& d = n->input(i)->type().dtype;
    if (!d) return std::nullopt;
    t = t ? promote_types(*t, *d) : *d;
  }
  return t;
}

Type cat_or_stack(const OpInfo& op, const Node* n) {
  Type out = Type::tensor();
  out.dtype = promoted_inputs(n);
  std::vector<const Dims*> all;
  for (const Value* v : n->inputs()) {
    if (!dims_of(v)) return out;
    all.push_back(dims_of(v));
  }
  const Dims& first = *all[0];
  for (const Dims* d : all)
    if (d->size() != first.size()) shape_error(n, "inputs have different ranks: " + dims_str(first) + " and " + dims_str(*d));
  const bool stack = op.id == OpId::stack;
  const int64_t dim = wrap_dim(n, attr_or(n, "dim", 0), first.size() + (stack ? 1 : 0));
  Dims d = first;
  std::optional<int64_t> total = 0;
  for (const Dims* s : all)
    for (size_t i = 0; i < first.size(); ++i) {
      if (!stack && static_cast<int64_t>(i) == dim) {
        total = (*s)[i].is_static() && total ? std::optional<int64_t>(*total + (*s)[i].size) : std::nullopt;
        continue;
      }
      require_equal(n, first[i], (*s)[i], "inputs differ in dimension " + std::to_string(i));
      if (!(d[i] == (*s)[i])) d[i] = d[i].is_static() ? d[i] : (*s)[i].is_static() ? (*s)[i] : Dim::unknown();
    }
  if (stack) d.insert(d.begin() + dim, Dim::of(static_cast<int64_t>(all.size())));
  else d[dim] = total ? Dim::of(*total) : Dim::unknown();
  out.dims = std::move(d);
  return out;
}

Type where(const Node* n) {
  Type out = Type::tensor();
  out.dtype = promoted_inputs(n, 1);
  std::vector<const Dims*> shapes;
  for (const Value* v : n->inputs())
    if (const Dims* d = dims_of(v)) shapes.push_back(d);
  Dims b = broadcast_or_throw(n, shapes);
  if (shapes.size() == 3) out.dims = std::move(b);
  return out;
}

// masked_fill{value, invert, promote}(x, mask): x's dtype, raised to the
// value's category with promote (where with a host scalar); x and mask
// broadcast. Read before run-time attributes are set aside: the value's
// category is its input's kind then.
Type masked_fill(const Node* n) {
  Type out = Type::tensor();
  const Type& x = n->input(0)->type();
  const Type& mask = n->input(1)->type();
  if (mask.dtype && *mask.dtype != DType::Bool)
    shape_error(n, "the mask must be bool, is " + std::string(dtype_token(*mask.dtype)));
  const bool promote_known = !n->has_attr("promote") || !dynamic_attr(*n, "promote");
  if (x.dtype && promote_known) {
    out.dtype = *x.dtype;
    if (n->has_attr("promote") && n->b("promote")) {
      DType category = DType::Float32;
      if (auto d = dynamic_attr(*n, "value")) category = scalar_category(n->input(d->begin)->type().kind);
      else if (std::holds_alternative<int64_t>(n->attrs().at("value"))) category = DType::Int64;
      else if (std::holds_alternative<bool>(n->attrs().at("value"))) category = DType::Bool;
      out.dtype = promote_with_scalar(*x.dtype, category);
    }
  }
  const Dims* a = dims_of(n->input(0));
  const Dims* b = dims_of(n->input(1));
  if (a && b) out.dims = broadcast_or_throw(n, {a, b});
  return out;
}

// triu / tril: the input's type; at least 2 dims.
Type triangle(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  out.dims = n->input(0)->type().dims;
  if (out.dims && out.dims->size() < 2) shape_error(n, "the input must have at least 2 dims, is " + dims_str(*out.dims));
  return out;
}

// Losses reduce to a 0-d tensor (reduction "mean").
Type loss(const OpInfo& op, const Node* n) {
  Type out = Type::tensor();
  out.dtype = op.id == OpId::cross_entropy ? n->input(0)->type().dtype : promoted_inputs(n);
  out.dims = Dims{};
  const Dims* a = dims_of(n->input(0));
  const Dims* b = dims_of(n->input(1));
  if (op.id == OpId::mse_loss && a && b) broadcast_or_throw(n, {a, b});
  if (op.id == OpId::cross_entropy && a && b) {
    if (a->size() != 2 || b->size() != 1) shape_error(n, "expects logits [N, C] and targets [N], got " + dims_str(*a) + " and " + dims_str(*b));
    require_equal(n, (*a)[0], (*b)[0], "logits and targets differ in batch size");
  }
  return out;
}

// q [..., L, E], k [..., S, E], v [..., S, Ev] -> [..., L, Ev].
Type attention(const Node* n) {
  Type out = Type::tensor();
  out.dtype = same_operand_dtype(n, n->input(0), n->input(1));  // eager wants one dtype for q, k, v
  out.dtype = same_operand_dtype(n, n->input(0), n->input(2));
  const Dims* q = dims_of(n->input(0));
  const Dims* k = dims_of(n->input(1));
  const Dims* v = dims_of(n->input(2));
  if (!q || !k || !v) return out;
  if (q->size() < 2 || k->size() < 2 || v->size() < 2) shape_error(n, "q, k and v need at least 2 dimensions");
  require_equal(n, q->back(), k->back(), "q and k differ in the embedding dimension");
  require_equal(n, (*k)[k->size() - 2], (*v)[v->size() - 2], "k and v differ in sequence length");
  Dims d = *q;
  d.back() = v->back();
  out.dims = std::move(d);
  return out;
}

// ---- views ---------------------------------------------------------------------

Type reshape(const Node* n, const Dims& in) {
  const auto shape = ints_or(n, "shape", {});
  int infer = -1;
  int64_t known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) shape_error(n, "only one dimension can be -1");
      infer = static_cast<int>(i);
    } else if (shape[i] < 0) {
      shape_error(n, "invalid size " + std::to_string(shape[i]));
    } else {
      known *= shape[i];
    }
  }
  Dims d;
  for (int64_t s : shape) d.push_back(s == -1 ? Dim::unknown() : Dim::of(s));
  if (auto total = numel(in)) {
    if (infer >= 0) {
      if (known == 0 || *total % known != 0)
        shape_error(n, "cannot reshape " + dims_str(in) + " (" + std::to_string(*total) + " elements) to " + dims_str(d));
      d[infer] = Dim::of(*total / known);
    } else if (known != *total) {
      shape_error(n, "cannot reshape " + dims_str(in) + " (" + std::to_string(*total) + " elements) to " + dims_str(d));
    }
  } else if (infer >= 0 && shape.size() == in.size()) {
    // Keeping every other dim in place keeps the inferred one too: [N, 4] -> [-1, 4].
    bool same = true;
    for (size_t i = 0; i < shape.size(); ++i)
      if (static_cast<int>(i) != infer) same = same && in[i] == Dim::of(shape[i]);
    if (same) d[infer] = in[infer];
  }
  return Type::tensor(std::nullopt, d);
}

Dims expand(const Node* n, const Dims& in) {
  const auto shape = ints_or(n, "shape", {});
  if (shape.size() < in.size()) shape_error(n, "cannot expand " + dims_str(in) + " to fewer dimensions");
  const size_t lead = shape.size() - in.size();
  Dims d;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i < lead) {
      if (shape[i] < 0) shape_error(n, "a new leading dimension cannot be -1");
      d.push_back(Dim::of(shape[i]));
      continue;
    }
    const Dim& cur = in[i - lead];
    if (shape[i] == -1) d.push_back(cur);
    else {
      if (cur.is_static() && cur.size != 1 && cur.size != shape[i])
        shape_error(n, "cannot expand dimension " + std::to_string(i) + " of size " + std::to_string(cur.size) +
                           " to " + std::to_string(shape[i]));
      d.push_back(Dim::of(shape[i]));
    }
  }
  return d;
}

Dims slice(const Node* n, const Dims& in) {
  Dims d = in;
  const int64_t dim = wrap_dim(n, attr_or(n, "dim", 0), in.size());
  const int64_t start = attr_or(n, "start", 0), end = attr_or(n, "end", INT64_MAX), step = attr_or(n, "step", 1);
  if (step <= 0) shape_error(n, "the step must be positive");
  const Dim& size = in[dim];
  if (!size.is_static()) {
    if (!(start == 0 && end >= INT64_MAX / 2 && step == 1)) d[dim] = Dim::unknown();
    return d;
  }
  auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + size.size : i, int64_t{0}, size.size); };
  const int64_t b = clamp(start), e = clamp(end);
  d[dim] = Dim::of(e > b ? (e - b + step - 1) / step : 0);
  return d;
}

std::optional<Dims> squeeze(const Node* n, const Dims& in) {
  Dims d;
  if (!n->has_attr("dim")) {
    for (const Dim& x : in) {
      if (!x.is_static()) return std::nullopt;  // a symbol might be 1
      if (x.size != 1) d.push_back(x);
    }
    return d;
  }
  if (in.empty()) return d;
  const int64_t dim = wrap_dim(n, attr_or(n, "dim", 0), in.size());
  if (!in[dim].is_static()) return std::nullopt;
  d = in;
  if (in[dim].size == 1) d.erase(d.begin() + dim);
  return d;
}

Dims flatten(const Node* n, const Dims& in) {
  if (in.empty()) return Dims{Dim::of(1)};
  const int64_t s = wrap_dim(n, attr_or(n, "start_dim", 0), in.size());
  const int64_t e = wrap_dim(n, attr_or(n, "end_dim", -1), in.size());
  if (s > e) shape_error(n, "start_dim comes after end_dim");
  Dims d(in.begin(), in.begin() + s);
  Dims mid(in.begin() + s, in.begin() + e + 1);
  auto p = numel(mid);
  d.push_back(mid.size() == 1 ? mid[0] : p ? Dim::of(*p) : Dim::unknown());
  d.insert(d.end(), in.begin() + e + 1, in.end());
  return d;
}

Type view(const OpInfo& op, const Node* n) {
  Type out = n->input(0)->type();
  if (!out.dims) return out;
  const Dims in = *out.dims;  // a copy: the cases below rewrite out.dims
  const size_t rank = in.size();
  switch (op.id) {
    case OpId::t:
      if (rank > 2) shape_error(n, "t expects at most 2 dimensions, got " + dims_str(in));
      std::reverse(out.dims->begin(), out.dims->end());
      break;
    case OpId::transpose:
      if (rank > 0) std::swap((*out.dims)[wrap_dim(n, attr_or(n, "dim0", 0), rank)], (*out.dims)[wrap_dim(n, attr_or(n, "dim1", 1), rank)]);
      break;
    case OpId::permute: {
      const auto p = ints_or(n, "dims", {});
      if (p.size() != rank) shape_error(n, "permute of " + dims_str(in) + " needs " + std::to_string(rank) + " dims");
      std::vector<bool> seen(rank, false);
      for (size_t i = 0; i < rank; ++i) {
        const int64_t src = wrap_dim(n, p[i], rank);
        if (seen[src]) shape_error(n, "dims is not a permutation");
        seen[src] = true;
        (*out.dims)[i] = in[src];
      }
      break;
    }
    case OpId::reshape: out.dims = reshape(n, in).dims; break;
    case OpId::expand: out.dims = expand(n, in); break;
    case OpId::slice: out.dims = slice(n, in); break;
    case OpId::squeeze: out.dims = squeeze(n, in); break;
    case OpId::unsqueeze: out.dims->insert(out.dims->begin() + wrap_dim(n, attr_or(n, "dim", 0), rank + 1), Dim::of(1)); break;
    case OpId::flatten: out.dims = flatten(n, in); break;
    default: out.dims.reset(); break;
  }
  return out;
}

// index_select{dim}(x, index [k]): x's type with k at dim; gather{dim}(x,
// index): index's dims, x's dtype; cumsum: x's dims (dim checked); bmm:
// [B, n, k] x [B, k, m] -> [B, n, m]. A run-time dim leaves the dims unknown.
Type indexing(const OpInfo& op, const Node* n) {
  Type out = same_dtype(op, n);
  const Dims* x = dims_of(n->input(0));
  const Dims* idx = n->inputs().size() > 1 ? dims_of(n->input(1)) : nullptr;
  if (op.id != OpId::cumsum && op.id != OpId::bmm) {
    if (const auto& d = n->input(1)->type().dtype; d && *d != DType::Int64 && !(op.id == OpId::index_select && *d == DType::Int32))
      shape_error(n, "the index must be int64, is " + std::string(dtype_token(*d)));
    if (x && x->empty()) shape_error(n, "the input must have at least 1 dim, is []");
  }
  const bool dim_known = n->has_attr("dim") && std::holds_alternative<int64_t>(n->attrs().at("dim"));
  const int64_t dim = x && dim_known && !x->empty() ? wrap_dim(n, attr_or(n, "dim", 0), x->size()) : -1;
  switch (op.id) {
    case OpId::index_select:
      if (idx && idx->size() > 1) shape_error(n, "the index must be 1-D, is " + dims_str(*idx));
      if (x && idx && dim >= 0) {
        out.dims = *x;
        (*out.dims)[dim] = idx->empty() ? Dim::of(1) : (*idx)[0];
      }
      return out;
    case OpId::gather:
      if (x && idx && idx->size() != x->size())
        shape_error(n, "the index must have the input's rank: " + dims_str(*x) + " and " + dims_str(*idx));
      if (idx && dim_known) out.dims = *idx;
      return out;
    case OpId::cumsum:
      if (x && dim_known) wrap_dim(n, attr_or(n, "dim", 0), std::max<size_t>(x->size(), 1));
      out.dims = n->input(0)->type().dims;
      return out;
    default: {  // bmm
      out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
      if ((x && x->size() != 3) || (idx && idx->size() != 3))
        shape_error(n, "expected two 3-D operands [B, n, k] and [B, k, m]");
      if (!x || !idx) return out;
      require_equal(n, (*x)[0], (*idx)[0], "the batch sizes differ " + dims_str(*x) + " x " + dims_str(*idx));
      require_equal(n, (*x)[2], (*idx)[1], "the inner dims differ " + dims_str(*x) + " x " + dims_str(*idx));
      out.dims = Dims{(*x)[0], (*x)[1], (*idx)[2]};
      return out;
    }
  }
}

// scatter_add{dim}(self, index, src): self's type; index int64 and src of
// self's dtype, both of self's rank. argsort{dim, k}(x): int64 of x's dims,
// k along dim when given (topk's first k, in [0, size]).
Type scatter_or_sort(const OpInfo& op, const Node* n) {
  Type out = n->input(0)->type();
  const Dims* x = dims_of(n->input(0));
  const bool dim_known = n->has_attr("dim") && std::holds_alternative<int64_t>(n->attrs().at("dim"));
  int64_t d = 0;
  if (x && dim_known) d = wrap_dim(n, attr_or(n, "dim", -1), std::max<size_t>(x->size(), 1));
  if (op.id == OpId::argsort) {
    out.dtype = DType::Int64;
    if (!x || !n->has_attr("k") || x->empty()) return out;
    if (!dim_known) {
      out.dims.reset();
      return out;
    }
    Dim& size = (*out.dims)[d];
    const auto* k = std::get_if<int64_t>(&n->attrs().at("k"));
    if (k && size.is_static() && (*k < 0 || *k > size.size))
      shape_error(n, "k = " + std::to_string(*k) + " is out of range for dim " + std::to_string(d) + " of size " +
                         std::to_string(size.size));
    size = k && *k >= 0 ? Dim::of(*k) : Dim::unknown();
    return out;
  }
  if (const auto& d = n->input(1)->type().dtype; d && *d != DType::Int64)
    shape_error(n, "the index must be int64, is " + std::string(dtype_token(*d)));
  out.dtype = same_operand_dtype(n, n->input(0), n->input(2));
  const Dims* idx = dims_of(n->input(1));
  const Dims* src = dims_of(n->input(2));
  if (x && x->empty()) shape_error(n, "self must have at least 1 dim, is []");
  if (x && ((idx && idx->size() != x->size()) || (src && src->size() != x->size())))
    shape_error(n, "index and src must have self's rank: self " + dims_str(*x) + ", index " +
                       (idx ? dims_str(*idx) : "?") + ", src " + (src ? dims_str(*src) : "?"));
  return out;
}

Type other(const OpInfo& op, const Node* n) {
  switch (op.id) {
    case OpId::scatter_add:
    case OpId::argsort: return scatter_or_sort(op, n);
    case OpId::where: return where(n);
    case OpId::masked_fill: return masked_fill(n);
    case OpId::triu:
    case OpId::tril: return triangle(op, n);
    case OpId::index_select:
    case OpId::gather:
    case OpId::cumsum:
    case OpId::bmm: return indexing(op, n);
    case OpId::to: {  // x's shape, the dtype of the attribute
      Type out = n->input(0)->type();
      DType dt{};
      const auto* d = n->has_attr("dtype") ? std::get_if<std::string>(&n->attrs().at("dtype")) : nullptr;
      if (!d || !dtype_from_token(*d, dt)) shape_error(n, "needs 'dtype', a dtype token (\"f32\")");
      out.dtype = dt;
      return out;
    }
    case OpId::contiguous: return n->input(0)->type();
    case OpId::type_as: {  // x's shape, other's dtype
      Type out = n->input(0)->type();
      out.dtype = n->input(1)->type().dtype;
      return out;
    }
    case OpId::sum_to: {  // in like's dtype (backward_kernels.h): a gradient through `to` changes it
      Type out = same_dtype(op, n);
      if (n->inputs().size() == 2 && n->input(1)->type().dtype) out.dtype = n->input(1)->type().dtype;
      return out;
    }
    case OpId::softmax:
    case OpId::log_softmax: {
      Type out = same_dtype(op, n);
      out.dims = n->input(0)->type().dims;
      if (out.dims && n->has_attr("dim") && !out.dims->empty()) wrap_dim(n, attr_or(n, "dim", -1), out.dims->size());
      return out;
    }
    case OpId::linear: return linear(n);
    case OpId::layer_norm: return layer_norm(n);
    case OpId::max_pool2d:
    case OpId::avg_pool2d: return pool2d(op, n);
    case OpId::adaptive_avg_pool2d: return adaptive_pool2d(op, n);
    case OpId::pad: return pad(op, n);
    case OpId::interpolate: return interpolate(op, n);
    case OpId::embedding: return embedding(n);
    case OpId::cat:
    case OpId::stack: return cat_or_stack(op, n);
    case OpId::dropout:
    case OpId::dropout_mask: return n->input(0)->type();
    case OpId::mse_loss:
    case OpId::cross_entropy: return loss(op, n);
    case OpId::scaled_dot_product_attention: return attention(n);
    case OpId::batch_norm: return batch_norm(n);
    default: return same_dtype(op, n);
  }
}

}  // namespace graph::ir::type_rules
