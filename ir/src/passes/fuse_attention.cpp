// fuse_attention: attention written out becomes scaled_dot_product_attention.
//
//   matmul(softmax(matmul(q, transpose(k, -2, -1)) * c [+ mask], -1), v)
//     -> scaled_dot_product_attention(q, k, v, mask or undefined())
//
// The op's scale is 1/sqrt(E) (E = k's last dim), so the rewrite needs the
// scale in one of the forms `* c`, `c *`, `/ c` with a constant c equal to
// 1/sqrt(E) (or sqrt(E) for `/`) up to float rounding; any other scale
// leaves the chain alone. It fires only when every intermediate value
// (scores, scaled, masked, probabilities) has the next node as its only user
// and no block returns it, all nodes in one block, with floating q, k, v of
// one dtype (float32 or float64) and known ranks >= 2 (from the types, or
// from the reshape and transpose views that split the heads); a mask must be a tensor
// of that dtype that leaves the scores' shape unchanged. The replaced nodes
// are erased (the transpose and the constant when nothing else reads them).
// Runs after infer_types and before fuse_elementwise (which would take the
// scale into a matmul epilogue). The op has a backward (recomputing the
// probabilities), so gradients computed after this pass stay right; autodiff
// itself runs before it and so sees the unfused chain.
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"
#include "../rewrite.h"

namespace graph::ir {

namespace {

using detail::constant_number;

// The producer of v when it runs `id` with static attributes, in block b.
Node* producer_in(const Value* v, OpId id, const Block* b) {
  Node* p = v->producer();
  return p && p->is(id) && p->owner() == b && !has_dynamic_attrs(*p) ? p : nullptr;
}

bool returned_anywhere(const Graph& g, const Value* v) {
  bool found = false;
  auto check = [&](const Block* b) {
    for (const Value* r : b->returns()) found = found || r == v;
  };
  check(g.top());
  walk(g.top(), [&](const Node* n) {
    for (const auto& inner : n->blocks()) check(inner.get());
  });
  return found;
}

// v's only use is by `user`, once, and no block returns it.
bool only_feeds(const Graph& g, const Value* v, const Node* user) {
  return v->users().size() == 1 && v->users()[0] == user && !returned_anywhere(g, v);
}

// v's sizes as its type or the views that made it tell them (-1: not known
// at build time); nullopt when even the rank is unknown. A graph's inputs
// have unknown shapes, but heads split by `reshape` to a constant shape and
// `transpose` (the usual way) have static ones.
std::optional<std::vector<int64_t>> sizes_of(const Value* v, int depth = 0) {
  const Type& t = v->type();
  if (!t.is_tensor()) return std::nullopt;
  if (t.dims) {
    std::vector<int64_t> out;
    for (const Dim& d : *t.dims) out.push_back(d.is_static() ? d.size : -1);
    return out;
  }
  const Node* p = v->producer();
  if (!p || depth > 16 || has_dynamic_attrs(*p)) return std::nullopt;
  if (p->is(OpId::reshape) && p->has_attr("shape") &&
      std::holds_alternative<std::vector<int64_t>>(p->attrs().at("shape")))
    return p->ints("shape");  // a -1 stays unknown
  if (p->is(OpId::transpose) && p->has_attr("dim0") && p->has_attr("dim1")) {
    auto in = sizes_of(p->input(0), depth + 1);
    if (!in) return std::nullopt;
    const int64_t r = static_cast<int64_t>(in->size()), a = p->i("dim0"), b = p->i("dim1");
    const int64_t wa = a < 0 ? a + r : a, wb = b < 0 ? b + r : b;
    if (wa < 0 || wb < 0 || wa >= r || wb >= r) return std::nullopt;
    std::swap((*in)[wa], (*in)[wb]);
    return in;
  }
  return std::nullopt;
}

std::optional<int64_t> rank(const Value* v) {
  const auto s = sizes_of(v);
  if (!s) return std::nullopt;
  return static_cast<int64_t>(s->size());
}


// a equals b up to float32 rounding (a scale written as 0.125f or 1/8.0).
bool same_scale(double a, double b) { return std::fabs(a - b) <= 1.2e-7 * std::fabs(b); }

// dim (possibly negative) names the last of `r` dims.
bool is_last(int64_t dim, int64_t r) { return dim == -1 || dim == r - 1; }

// k when t is transpose(k, -2, -1) (either order, any spelling), else null.
Value* transposed_operand(const Node* t) {
  if (!t || !t->has_attr("dim0") || !t->has_attr("dim1")) return nullptr;
  const auto r = rank(t->input(0));
  if (!r || *r < 2) return nullptr;
  auto norm = [&](int64_t d) { return d < 0 ? d + *r : d; };
  const int64_t a = norm(t->i("dim0")), b = norm(t->i("dim1"));
  return (a == *r - 2 && b == *r - 1) || (a == *r - 1 && b == *r - 2) ? t->input(0) : nullptr;
}

// The scores' sizes, q [..., L, E] @ k^T [..., E, S] with broadcast batch dims.
std::vector<int64_t> score_sizes(const std::vector<int64_t>& q, const std::vector<int64_t>& k) {
  const size_t r = std::max(q.size(), k.size());
  std::vector<int64_t> out(r);
  for (size_t i = 0; i + 2 < r; ++i) {
    const int64_t a = i + q.size() >= r ? q[i + q.size() - r] : 1, b = i + k.size() >= r ? k[i + k.size() - r] : 1;
    out[i] = a == 1 ? b : b == 1 ? a : a == b ? a : -1;
  }
  out[r - 2] = q[q.size() - 2];
  out[r - 1] = k[k.size() - 2];
  return out;
}

// An added mask of these sizes broadcasts into the scores without growing
// them (sizes known at build time).
bool mask_fits(const std::vector<int64_t>& mask, const std::vector<int64_t>& scores) {
  if (mask.size() > scores.size()) return false;
  for (size_t i = 0; i < mask.size(); ++i) {
    const int64_t m = mask[mask.size() - 1 - i], s = scores[scores.size() - 1 - i];
    if (m != 1 && (m < 0 || m != s)) return false;
  }
  return true;
}

struct Match {
  Node *scores, *scaled, *masked, *probs, *out, *transpose;
  Value *q, *k, *v, *mask;
};

// The chain ending at `out` (a matmul), when it has the shape above.
std::optional<Match> match(const Graph& g, Node* out) {
  Block* b = out->owner();
  Match m{};
  m.out = out;
  m.probs = producer_in(out->input(0), OpId::softmax, b);
  if (!m.probs || !only_feeds(g, m.probs->output(), out) || !m.probs->has_attr("dim")) return std::nullopt;
  Value* pre = m.probs->input(0);
  if ((m.masked = producer_in(pre, OpId::add, b))) {
    if (!only_feeds(g, pre, m.probs)) return std::nullopt;
    // The scaled scores are whichever operand a multiply or divide made.
    for (size_t i = 0; i < 2 && !m.scaled; ++i) {
      Node* s = m.masked->input(i)->producer();
      if (s && s->owner() == b && (s->is(OpId::mul) || s->is(OpId::div))) {
        m.scaled = s;
        m.mask = m.masked->input(1 - i);
      }
    }
    if (!m.scaled || !m.mask->type().is_tensor() || m.mask->type().dtype != m.scaled->output()->type().dtype)
      return std::nullopt;
    if (!only_feeds(g, m.scaled->output(), m.masked)) return std::nullopt;
  } else {
    m.scaled = pre->producer();
    if (!m.scaled || m.scaled->owner() != b || !(m.scaled->is(OpId::mul) || m.scaled->is(OpId::div)))
      return std::nullopt;
    if (!only_feeds(g, pre, m.probs)) return std::nullopt;
  }
  // scores * c, c * scores or scores / c.
  const bool div = m.scaled->is(OpId::div);
  std::optional<double> c;
  for (size_t i = 0; i < 2 && !m.scores; ++i) {
    if (div && i == 1) break;
    Node* s = producer_in(m.scaled->input(i), OpId::matmul, b);
    if (s && (c = constant_number(m.scaled->input(1 - i)))) m.scores = s;
  }
  if (!m.scores || !only_feeds(g, m.scores->output(), m.scaled)) return std::nullopt;
  m.q = m.scores->input(0), m.v = out->input(1);
  m.transpose = producer_in(m.scores->input(1), OpId::transpose, b);
  m.k = transposed_operand(m.transpose);
  if (!m.k) return std::nullopt;
  // Floating q, k, v of one dtype, known ranks >= 2, a static embedding size;
  // the softmax along the scores' last dim (their rank: the larger operand's).
  const Type &tq = m.q->type(), &tk = m.k->type(), &tv = m.v->type();
  const auto sq = sizes_of(m.q), sk = sizes_of(m.k), sv = sizes_of(m.v);
  if (!sq || !sk || !sv || sq->size() < 2 || sk->size() < 2 || sv->size() < 2) return std::nullopt;
  for (const Type* t : {&tq, &tk, &tv})
    if (!t->dtype) return std::nullopt;
  if (*tq.dtype != *tk.dtype || *tv.dtype != *tq.dtype) return std::nullopt;
  if (*tq.dtype != DType::Float32 && *tq.dtype != DType::Float64) return std::nullopt;
  if (m.scaled->output()->type().dtype != tq.dtype) return std::nullopt;  // no promotion by the constant
  const std::vector<int64_t> scores = score_sizes(*sq, *sk);
  if (!is_last(m.probs->i("dim"), static_cast<int64_t>(scores.size()))) return std::nullopt;
  if (m.mask) {
    const auto sm = sizes_of(m.mask);
    if (!sm || !mask_fits(*sm, scores)) return std::nullopt;
  }
  const int64_t e = sk->back();
  if (e <= 0) return std::nullopt;
  const double want = div ? std::sqrt(static_cast<double>(e)) : 1.0 / std::sqrt(static_cast<double>(e));
  if (!same_scale(*c, want)) return std::nullopt;
  return m;
}

void erase_if_unused(Block* b, Node* n) {
  if (!n) return;
  for (const Value* o : n->outputs())
    if (!o->users().empty()) return;
  b->erase(n);
}

void rewrite(const Match& m) {
  Block* b = m.out->owner();
  Node* sdpa = b->insert_before(m.out, "scaled_dot_product_attention");
  sdpa->set_loc(m.out->loc());
  sdpa->add_input(m.q);
  sdpa->add_input(m.k);
  sdpa->add_input(m.v);
  if (m.mask) {
    sdpa->add_input(m.mask);
  } else {
    Node* none = b->insert_before(sdpa, "undefined");
    none->set_loc(m.out->loc());
    sdpa->add_input(none->add_output(Type::tensor()));
  }
  Value* y = sdpa->add_output(m.out->output()->type(), m.out->output()->name());
  replace_uses(b, m.out->output(), y);
  Node* constant = nullptr;
  for (const Value* in : m.scaled->inputs())
    if (in->producer() && in->producer()->is(OpId::constant)) constant = in->producer();
  for (Node* n : {m.out, m.probs, m.masked, m.scaled, m.scores}) erase_if_unused(b, n);
  erase_if_unused(b, m.transpose);
  erase_if_unused(constant ? constant->owner() : b, constant);
}

void fuse_block(const Graph& g, Block* b) {
  std::vector<Node*> order;
  for (const auto& n : b->nodes()) order.push_back(n.get());
  std::vector<Match> found;
  for (Node* n : order) {
    for (const auto& inner : n->blocks()) fuse_block(g, inner.get());
    if (n->is(OpId::matmul) && !has_dynamic_attrs(*n))
      if (auto m = match(g, n)) found.push_back(*m);
  }
  // Chains that share a node (attention feeding attention's q) fuse once.
  std::set<const Node*> used;
  for (const Match& m : found) {
    const Node* nodes[] = {m.scores, m.scaled, m.masked, m.probs, m.out};
    bool overlaps = false;
    for (const Node* n : nodes) overlaps = overlaps || (n && used.count(n));
    if (overlaps) continue;
    for (const Node* n : nodes) used.insert(n);
    rewrite(m);
  }
}

}  // namespace

void fuse_attention(Graph& g) { fuse_block(g, g.top()); }

}  // namespace graph::ir
