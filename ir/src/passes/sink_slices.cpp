// sink_slices: moves a slice above the elementwise op that produces what it
// slices, so the op's work joins the slice users' fusion group:
//
//   %g = add(%xw, %mm)                      %a = slice{dim=1, start=0, end=64}(%xw)
//   %s = slice{dim=1, start=0, end=64}(%g)  %b = slice{dim=1, start=0, end=64}(%mm)
//   %i = sigmoid(%s)                ==>     %s = add(%a, %b)
//                                           %i = sigmoid(%s)
//
// (an LSTM step: fuse_elementwise then makes one group of the adds and the
// gate math instead of one for the add and one behind the slices).
//
// Precondition: the graph verifies and has run infer_types. A producer moves
// only when that neither repeats work nor splits a kernel:
//  - it is a pure elementwise op-table node (OpKind::Elementwise) with one
//    tensor output of known dtype;
//  - every use is a constant-attribute slice in the producer's own block,
//    the slices read each element at most once (one slice, or disjoint
//    ranges along one dim), and the value is returned by no block;
//  - every use of each slice is an elementwise node of that block, so the
//    sunk op fuses with it (a slice feeding a matmul or a reduction would
//    turn one kernel into one per slice).
// Operands are sliced where they line up with the output along the sliced
// dim, left whole where they broadcast there (size 1 or a lower rank), and
// host scalars stay. Where the types cannot tell (ranks unknown at build
// time, as in most static graphs), the operand is first expanded to the
// output's shape, which broadcast_sizes computes at run time: an expand is a
// view, so nothing is copied. Repeats to a fixed point, so chains
// (slice(sigmoid(add(x, y)))) sink all the way. Postcondition: `g` verifies
// and every value keeps its dtype and shape.
#include <algorithm>
#include <climits>
#include <optional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

struct SliceAttrs {
  int64_t dim = 0, start = 0, end = INT64_MAX, step = 1;
};

// The attributes of a slice whose attributes are all constants (as
// infer_types reads them: dim 0, start 0, end past the last, step 1 when absent).
std::optional<SliceAttrs> constant_slice(const Node* n) {
  if (!n->is(OpId::slice) || has_dynamic_attrs(*n)) return std::nullopt;
  SliceAttrs s;
  for (auto [key, field] : {std::pair{"dim", &s.dim}, {"start", &s.start}, {"end", &s.end}, {"step", &s.step}}) {
    if (!n->has_attr(key)) continue;
    const auto* v = std::get_if<int64_t>(&n->attrs().at(key));
    if (!v) return std::nullopt;
    *field = *v;
  }
  if (s.step <= 0) return std::nullopt;
  return s;
}

const std::vector<Dim>* dims_of(const Value* v) {
  const auto& d = v->type().dims;
  return d ? &*d : nullptr;
}

bool returned_anywhere(const Block* b, const Value* v) {
  if (std::find(b->returns().begin(), b->returns().end(), v) != b->returns().end()) return true;
  for (const auto& n : b->nodes())
    for (const auto& inner : n->blocks())
      if (returned_anywhere(inner.get(), v)) return true;
  return false;
}

bool elementwise(const Node* n) {
  const OpInfo* info = n->table_op();
  return info && info->kind == OpKind::Elementwise && n->blocks().empty();
}

// A producer the pass may move: pure elementwise, one tensor output.
bool sinkable(const Node* n) {
  if (!elementwise(n) || n->num_outputs() != 1 || !n->table_op()->has(op_trait::Pure) || is_random(*n)) return false;
  const Type& out = n->output()->type();
  return out.is_tensor() && out.dtype.has_value();
}

// A slice the sunk op fuses into: all its uses elementwise, in its block.
bool pays(const Node* slice) {
  const Value* v = slice->output();
  if (v->users().empty() || returned_anywhere(slice->owner(), v)) return false;
  for (const Node* u : v->users())
    if (u->owner() != slice->owner() || !elementwise(u)) return false;
  return true;
}

// Whether the slices (of a value of type `t`) read each element at most once.
bool disjoint(const std::vector<Node*>& slices, const Type& t) {
  if (slices.size() == 1) return true;
  std::vector<std::pair<int64_t, int64_t>> ranges;
  const SliceAttrs first = *constant_slice(slices.front());
  for (const Node* n : slices) {
    SliceAttrs s = *constant_slice(n);
    if (s.dim != first.dim) return false;
    if (s.start < 0 || s.end < 0) {
      // Negative bounds count from the end: comparable only with a static size.
      const auto* d = t.dims ? &*t.dims : nullptr;
      const int64_t rank = d ? static_cast<int64_t>(d->size()) : 0;
      const int64_t dim = s.dim < 0 ? s.dim + rank : s.dim;
      if (!d || dim < 0 || dim >= rank || !(*d)[dim].is_static()) return false;
      const int64_t size = (*d)[dim].size;
      auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + size : i, int64_t{0}, size); };
      s.start = clamp(s.start);
      s.end = clamp(s.end);
    }
    ranges.emplace_back(s.start, s.end);
  }
  std::sort(ranges.begin(), ranges.end());
  for (size_t i = 1; i < ranges.size(); ++i)
    if (ranges[i - 1].second > ranges[i].first) return false;
  return true;
}

// The slices that use `e`, when the pass may sink `e` into them; empty otherwise.
std::vector<Node*> sink_targets(Node* e) {
  if (!sinkable(e)) return {};
  const Value* v = e->output();
  if (v->users().empty() || returned_anywhere(e->owner(), v)) return {};
  if (const auto* d = dims_of(v); d && d->empty()) return {};  // slicing it is an error; keep that
  std::vector<Node*> slices;
  for (Node* u : v->users()) {
    if (u->owner() != e->owner() || !constant_slice(u) || !pays(u)) return {};
    if (std::find(slices.begin(), slices.end(), u) == slices.end()) slices.push_back(u);
  }
  return disjoint(slices, v->type()) ? slices : std::vector<Node*>{};
}

// How one operand of the producer is cut for one slice.
enum class Cut { Keep, Slice, ExpandThenSlice };

struct OperandCut {
  Cut cut = Cut::Keep;
  int64_t dim = 0;  // for Slice: the operand's own dim
};

// `v` against the producer's output `out` along slice dim `dim`: sliced where
// its dim lines up with the output's (the same static size or symbol), kept
// where it broadcasts (static size 1 against a static size, or no such
// dim: a slice past a size-1 output must still give 0), decided at run time
// (expanded to the output's shape) where the types cannot tell.
OperandCut cut_for(const Value* v, const Value* out, int64_t dim, size_t tensor_operands) {
  if (!v->type().is_tensor()) return {};
  // The only tensor operand has the output's shape (scalars broadcast into it).
  if (tensor_operands == 1) return {Cut::Slice, dim};
  const auto* vd = dims_of(v);
  const auto* od = dims_of(out);
  // A 0-d operand broadcasts; another operand has the sliced dim (a slice of
  // a 0-d output is never sunk).
  if (vd && vd->empty()) return {};
  if (!vd || !od) return {Cut::ExpandThenSlice, dim};
  const int64_t R = static_cast<int64_t>(od->size()), r = static_cast<int64_t>(vd->size());
  const int64_t d = dim < 0 ? dim + R : dim;
  if (d < 0 || d >= R) return {Cut::ExpandThenSlice, dim};  // the slice's own error, at run time
  const int64_t aligned = d - (R - r);
  if (aligned < 0) return {};
  const Dim& here = (*vd)[aligned];
  const Dim& there = (*od)[d];
  if (here == there && (here.is_static() || !here.symbol.empty())) return {Cut::Slice, aligned};
  // Kept whole, it broadcasts to the slice's length, which another operand
  // (one with the output's static size there, not 1) sets.
  if (here.is_static() && here.size == 1 && there.is_static()) return {};
  return {Cut::ExpandThenSlice, dim};
}

class Sinker {
 public:
  explicit Sinker(Node* e) : e_(e), block_(e->owner()) {
    for (const Value* v : e->inputs()) tensor_operands_ += v->type().is_tensor() ? 1 : 0;
  }

  // Erases the producer and `slices`; adds them to `erased`.
  void run(const std::vector<Node*>& slices, std::unordered_set<const Node*>& erased) {
    for (Node* s : slices) {
      sink_into(s);
      erased.insert(s);
    }
    block_->erase(e_);
    erased.insert(e_);
  }

 private:
  // Replaces `s` = slice(e(a, b, ...)) by e(cut(a), cut(b), ...), placed at `s`.
  void sink_into(Node* s) {
    const SliceAttrs at = *constant_slice(s);
    std::unordered_map<const Value*, Value*> cut_of;  // x*x slices x once
    std::vector<Value*> inputs;
    for (Value* v : e_->inputs()) {
      auto it = cut_of.find(v);
      if (it == cut_of.end()) it = cut_of.emplace(v, cut(v, s, at)).first;
      inputs.push_back(it->second);
    }
    Node* copy = block_->insert_before(s, e_->op());
    copy->attrs() = e_->attrs();
    copy->set_loc(e_->loc());
    for (Value* v : inputs) copy->add_input(v);
    Value* out = copy->add_output(s->output()->type(), s->output()->name());
    replace_uses(block_, s->output(), out);
    block_->erase(s);
  }

  Value* cut(Value* v, const Node* s, const SliceAttrs& at) {
    const OperandCut c = cut_for(v, e_->output(), at.dim, tensor_operands_);
    if (c.cut == Cut::Keep) return v;
    Type type = v->type();
    int64_t dim = c.dim;
    if (c.cut == Cut::ExpandThenSlice) {
      v = expanded(v);
      type = v->type();
    }
    // The new slice's extent along `dim` is the original slice's (the
    // operand lines up with the output there); the other dims are its own.
    if (type.dims) {
      const auto* sd = dims_of(s->output());
      const auto* od = dims_of(e_->output());
      const int64_t rank = static_cast<int64_t>(type.dims->size());
      const int64_t d = dim < 0 ? dim + rank : dim;
      const int64_t od_index = od ? (at.dim < 0 ? at.dim + static_cast<int64_t>(od->size()) : at.dim) : -1;
      if (d < 0 || d >= rank) type.dims.reset();
      else (*type.dims)[d] = sd && od_index >= 0 ? (*sd)[od_index] : Dim::unknown();
    }
    Node* n = block_->insert_before(s, "slice");
    n->attrs() = {{"dim", dim}, {"start", at.start}, {"end", at.end}, {"step", at.step}};
    n->set_loc(s->loc());
    n->add_input(v);
    return n->add_output(type, v->name() + ".slice");
  }

  // expand(v, broadcast_sizes(e's tensor operands)): v as e broadcasts it,
  // one per operand, placed where e was.
  Value* expanded(Value* v) {
    if (auto it = expanded_.find(v); it != expanded_.end()) return it->second;
    if (!sizes_) {
      Node* b = block_->insert_before(e_, "broadcast_sizes");
      b->set_loc(e_->loc());
      for (Value* x : e_->inputs())
        if (x->type().is_tensor()) b->add_input(x);
      const auto* od = dims_of(e_->output());
      sizes_ = b->add_output(Type::tensor(DType::Int64, {od ? Dim::of(static_cast<int64_t>(od->size())) : Dim::unknown()}),
                             e_->output()->name() + ".sizes");
    }
    Node* x = block_->insert_before(e_, "expand");
    x->attrs() = {{"shape", dynamic_attr_ref(1, 2, false)}};
    x->set_loc(e_->loc());
    x->add_input(v);
    x->add_input(sizes_);
    Type t = e_->output()->type();
    t.dtype = v->type().dtype;
    return expanded_[v] = x->add_output(t, v->name() + ".expand");
  }

  Node* e_;
  Block* block_;
  size_t tensor_operands_ = 0;
  Value* sizes_ = nullptr;
  std::unordered_map<const Value*, Value*> expanded_;
};

// One walk over `b` and its nested blocks (FusionGroup bodies are left
// alone); true when something moved. Nodes added by a move are seen by the
// next walk.
bool sink_block(Block* b) {
  bool changed = false;
  std::vector<Node*> order;
  for (const auto& n : b->nodes()) order.push_back(n.get());
  std::unordered_set<const Node*> erased;
  for (Node* n : order) {
    if (erased.count(n)) continue;
    if (!n->is(OpId::FusionGroup))
      for (const auto& inner : n->blocks()) changed = sink_block(inner.get()) || changed;
    const std::vector<Node*> slices = sink_targets(n);
    if (slices.empty()) continue;
    Sinker(n).run(slices, erased);
    changed = true;
  }
  return changed;
}

}  // namespace

void sink_slices(Graph& g) {
  while (sink_block(g.top())) {
  }
}

}  // namespace graph::ir
