// infer_types: dtype and shape inference over the whole graph.
//
// Precondition: the graph verifies. Walks every block in order, so each node
// sees its inputs' final types; Loop bodies are re-walked until the carried
// types stop changing. Types only become more precise than "unknown" when the
// inputs determine them; anything else is left unknown rather than guessed,
// because codegen specializes on what this pass claims.
#include <algorithm>
#include <cstdint>
#include <string>
#include <optional>
#include <vector>

#include "graph/error.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"
#include "infer_types_rules.h"

namespace graph::ir {

namespace {

using namespace type_rules;

// ---- the walk ----------------------------------------------------------------

class TypeInference {
 public:
  void block(Block* b) {
    for (const auto& n : b->nodes()) node(n.get());
  }

 private:
  void node(Node* n) {
    switch (n->op_id()) {
      case OpId::constant: return;  // typed by its value
      case OpId::If: return if_(n);
      case OpId::Loop: return loop(n);
      case OpId::FusionGroup: return fusion_group(n);
      case OpId::reshape_dyn:
      case OpId::slice_dyn: return n->output()->set_type(dynamic_view(n));
      case OpId::full_dyn: return n->output()->set_type(full_dyn(n));
      case OpId::arange_dyn: {  // 1-D; float32 when a bound is a float, as eager arange
        bool floating = false;
        for (const Value* v : n->inputs()) floating = floating || v->type().kind == Type::Kind::Float;
        return n->output()->set_type(Type::tensor(floating ? DType::Float32 : DType::Int64, {Dim::unknown()}));
      }
      case OpId::tensor_sizes:
      case OpId::broadcast_sizes:
      case OpId::make_shape:
      case OpId::shape_set:
      case OpId::inverse_permutation: return n->output()->set_type(shape_value(n));
      case OpId::grad_sync_wait:  // each averaged gradient as the gradient it replaces
        for (size_t i = 0; i < n->num_outputs() && n->num_outputs() + i < n->inputs().size(); ++i)
          n->output(i)->set_type(n->input(n->num_outputs() + i)->type());
        return;
      default: break;
    }
    const OpInfo* info = n->table_op();
    if (info && info->has(op_trait::Backward) && n->num_outputs() > 1) return gradients(n);
    if (!info || n->num_outputs() != 1) return;
    if (info->rule == DTypeRule::Floating) require_floating(n);
    if (has_dynamic_attrs(*n)) return n->output()->set_type(with_dynamic_attrs(*info, n));
    n->output()->set_type(by_op(*info, n));
  }

  // OP_backward(grad, inputs...) gives one gradient per input of OP, of that
  // input's dtype and shape (backward_kernels.h); fusion of the elementwise
  // ops reading them (relu's grad * mask) needs those types. Non-floating
  // inputs get no gradient and their outputs stay untyped.
  static void gradients(Node* n) {
    for (size_t i = 0; i < n->num_outputs() && i + 1 < n->inputs().size(); ++i) {
      const Type& in = n->input(i + 1)->type();
      if (in.is_tensor() && in.dtype && is_floating(*in.dtype)) n->output(i)->set_type(in);
    }
  }

  static Type by_op(const OpInfo& op_info, Node* n) {
    const OpInfo* info = &op_info;
    switch (info->kind) {
      case OpKind::Elementwise: return elementwise(*info, n);
      case OpKind::Reduce: return reduce(*info, n);
      case OpKind::Library:
        return info->id == OpId::matmul   ? matmul(n)
               : info->id == OpId::conv2d ? conv2d(n)
               : info->id == OpId::conv_transpose2d ? conv_transpose2d(n)
                                          : same_dtype(*info, n);
      case OpKind::View: return view(*info, n);
      case OpKind::Other: return other(*info, n);
      default: break;  // primitives: typed above
    }
    return Type::tensor();
  }

  // An op with attributes known only at run time (value_primitives.h): what
  // does not depend on them. The dtype and, for ops whose shape the
  // attributes do not change (layer_norm, softmax, dropout), the shape are
  // inferred as for the op without them; conv2d and the pools keep their
  // rank, batch and channels; other shapes are unknown.
  // The rank of a view whose attributes are known at run time, when it is
  // known anyway: reshape and expand make as many dims as their list has
  // ints, permute and transpose keep the rank, unsqueeze adds one.
  static std::optional<size_t> dynamic_view_rank(const OpInfo& info, const Node* n) {
    const auto& in = n->input(0)->type().dims;
    switch (info.id) {
      case OpId::reshape:
      case OpId::expand: {
        auto d = dynamic_attr(*n, "shape");
        if (!d) return std::nullopt;
        if (d->range) return d->end - d->begin;
        const Type& t = n->input(d->begin)->type();
        if (t.is_tensor() && t.dims && t.dims->size() == 1 && (*t.dims)[0].is_static())
          return static_cast<size_t>((*t.dims)[0].size);
        return std::nullopt;
      }
      case OpId::permute:
      case OpId::transpose: return in ? std::optional<size_t>(in->size()) : std::nullopt;
      case OpId::unsqueeze: return in ? std::optional<size_t>(in->size() + 1) : std::nullopt;
      default: return std::nullopt;
    }
  }

  static Type with_dynamic_attrs(const OpInfo& info, Node* n) {
    if (info.id == OpId::masked_fill) return masked_fill(n);  // reads its run-time value itself
    const std::optional<size_t> view_rank = info.kind == OpKind::View ? dynamic_view_rank(info, n) : std::nullopt;
    const Attributes saved = n->attrs();
    for (auto it = n->attrs().begin(); it != n->attrs().end();)
      it = dynamic_attr(*n, it->first) ? n->attrs().erase(it) : std::next(it);
    Type out = Type::tensor();
    const bool keeps_shape = info.id == OpId::layer_norm || info.id == OpId::softmax ||
                             info.id == OpId::log_softmax || info.id == OpId::dropout || info.id == OpId::dropout_mask ||
                             info.id == OpId::rand_like ||
                             info.id == OpId::randn_like ||
                             info.id == OpId::triu || info.id == OpId::tril || info.id == OpId::cumsum ||
                             info.id == OpId::batch_norm || info.id == OpId::scatter_add || info.id == OpId::argsort;
    try {
      if (info.id == OpId::conv2d || info.id == OpId::conv_transpose2d) {
        out.dtype = same_operand_dtype(n, n->input(0), n->input(1));
        const Dims* x = dims_of(n->input(0));
        const Dims* w = dims_of(n->input(1));
        if (x && x->size() != 4) shape_error(n, "the input must be 4-D [N, C, H, W], is " + dims_str(*x));
        if (x && w && w->size() == 4 && info.id == OpId::conv2d)
          out.dims = Dims{(*x)[0], (*w)[0], Dim::unknown(), Dim::unknown()};
        else if (x && w && w->size() == 4)  // C_out is weight dim 1 times groups, known only with groups
          out.dims = Dims{(*x)[0], Dim::unknown(), Dim::unknown(), Dim::unknown()};
      } else if (info.id == OpId::max_pool2d || info.id == OpId::avg_pool2d ||
                 info.id == OpId::adaptive_avg_pool2d) {
        out = same_dtype(info, n);
        if (const Dims* x = dims_of(n->input(0)); x && x->size() >= 2) {
          Dims d(x->begin(), x->end() - 2);
          d.push_back(Dim::unknown());
          d.push_back(Dim::unknown());
          out.dims = std::move(d);
        }
      } else if (info.kind == OpKind::View || info.id == OpId::cat || info.id == OpId::stack) {
        out.dtype = n->input(0)->type().dtype;  // sizes and dims from the run-time attributes
        if (view_rank) out.dims = std::vector<Dim>(*view_rank, Dim::unknown());
      } else {
        out = by_op(info, n);
        if (!keeps_shape) out.dims.reset();
        // topk's run-time k: the size along dim is unknown.
        if (info.id == OpId::argsort && out.dims && saved.count("k") && !n->has_attr("k")) {
          const int64_t rank = static_cast<int64_t>(out.dims->size());
          const auto* d = n->has_attr("dim") ? std::get_if<int64_t>(&n->attrs().at("dim")) : nullptr;
          if (d && *d >= -rank && *d < rank) (*out.dims)[*d < 0 ? *d + rank : *d] = Dim::unknown();  // checked above
          else out.dims = std::vector<Dim>(out.dims->size(), Dim::unknown());
        }
      }
    } catch (...) {
      n->attrs() = saved;
      throw;
    }
    n->attrs() = saved;
    return out;
  }

  // An int list held in a 1-D int64 tensor (value_primitives.h): its length
  // is the rank of tensor_sizes' tensor, make_shape's number of ints, or the
  // length of the list shape_set copies.
  static Type shape_value(const Node* n) {
    Dim len = Dim::unknown();
    if (n->is(OpId::make_shape)) {
      len = Dim::of(static_cast<int64_t>(n->inputs().size()));
    } else if (n->is(OpId::tensor_sizes)) {
      if (const auto& d = n->input(0)->type().dims) len = Dim::of(static_cast<int64_t>(d->size()));
    } else if (n->is(OpId::broadcast_sizes)) {
      // The largest rank, when every rank is known.
      int64_t rank = 0;
      for (const Value* v : n->inputs()) {
        if (!v->type().dims) return Type::tensor(DType::Int64, {Dim::unknown()});
        rank = std::max(rank, static_cast<int64_t>(v->type().dims->size()));
      }
      len = Dim::of(rank);
    } else if (const auto& d = n->input(0)->type().dims; d && d->size() == 1) {
      len = (*d)[0];
    }
    return Type::tensor(DType::Int64, {len});
  }

  // full_dyn: its dtype, and as many dims as its sizes have ints.
  static Type full_dyn(const Node* n) {
    Type out = Type::tensor();
    DType d{};
    if (n->has_attr("dtype"))
      if (const auto* s = std::get_if<std::string>(&n->attrs().at("dtype")); s && dtype_from_token(*s, d)) out.dtype = d;
    const Type& sizes = n->input(0)->type();
    if (sizes.dims && sizes.dims->size() == 1 && (*sizes.dims)[0].is_static())
      out.dims = std::vector<Dim>(static_cast<size_t>((*sizes.dims)[0].size), Dim::unknown());
    return out;
  }

  // reshape_dyn and slice_dyn: the input's dtype; the rank is known, the
  // sizes they set are not.
  static Type dynamic_view(const Node* n) {
    const Type& in = n->input(0)->type();
    Type out = Type::tensor();
    out.dtype = in.dtype;
    if (n->is(OpId::reshape_dyn)) {
      out.dims = std::vector<Dim>(n->inputs().size() - 1, Dim::unknown());
    } else if (in.dims && !in.dims->empty()) {
      out.dims = in.dims;
      const int64_t rank = static_cast<int64_t>(in.dims->size());
      int64_t d = n->i("dim");
      if (d < 0) d += rank;
      if (d >= 0 && d < rank) (*out.dims)[static_cast<size_t>(d)] = Dim::unknown();
      else out.dims.reset();
    }
    return out;
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

namespace {

// Whether `v` reaches, directly or through views, an operand that must hold
// integer indices: embedding's indices, cross_entropy's class targets, through
// views and masked_fill.
bool used_as_indices(const Value* v, int depth = 0) {
  if (depth > 16) return false;
  for (const Node* n : v->users()) {
    const OpInfo* info = n->table_op();
    // masked_fill keeps its input's dtype: a masked index (nll_loss's ignored
    // targets replaced) is an index still.
    const bool view = n->is(OpId::reshape_dyn) || n->is(OpId::slice_dyn) || n->is(OpId::masked_fill) ||
                      (info && info->kind == OpKind::View);
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      if (n->input(i) != v) continue;
      if (info && (info->id == OpId::embedding || info->id == OpId::cross_entropy || info->id == OpId::index_select ||
                   info->id == OpId::gather || info->id == OpId::scatter_add) && i == 1)
        return true;
      if (view && i == 0 && n->num_outputs() == 1 && used_as_indices(n->output(), depth + 1)) return true;
    }
  }
  return false;
}

}  // namespace

void infer_types(Graph& g, DType tensor_default) {
  for (const auto& in : g.inputs()) {
    if (!in->type().is_tensor() || in->type().dtype) continue;
    Type t = in->type();
    // Index inputs are int64 (the dtype the eager ops take); others get the
    // dtype the graph is specialized for.
    t.dtype = used_as_indices(in.get()) ? DType::Int64 : tensor_default;
    in->set_type(std::move(t));
  }
  TypeInference().block(g.top());
}

}  // namespace graph::ir
