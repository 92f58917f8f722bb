// The verifier (invariants listed in verifier.h). It walks blocks in order,
// keeping the set of values in scope, and checks each node against the op
// table or the primitive's rules.
#include "graph/ir/verifier.h"

#include <unordered_set>

#include "graph/error.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

class Verifier {
 public:
  std::vector<std::string> run(const Graph& g) {
    std::unordered_set<const Value*> scope;
    block(g.top(), scope);
    return std::move(errors_);
  }

 private:
  void error(const Node* n, const std::string& note, const std::string& msg) {
    std::string where = "'" + n->op() + "'";
    if (n->loc().valid())
      where += " at " + n->loc().file + ":" + std::to_string(n->loc().line) + ":" +
               std::to_string(n->loc().col);
    errors_.push_back("[" + note + "] node " + where + ": " + msg);
  }

  void block(const Block* b, std::unordered_set<const Value*> scope) {
    for (const auto& p : b->params()) scope.insert(p.get());
    for (const auto& n : b->nodes()) {
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (!scope.count(n->input(i)))
          error(n.get(), "scoping", "input " + std::to_string(i) + " is not defined before its use");
      node(n.get());
      for (const auto& inner : n->blocks()) block(inner.get(), scope);
      for (Value* out : n->outputs()) scope.insert(out);
    }
    for (const Value* r : b->returns())
      if (!scope.count(r)) {
        std::string who = b->owner() ? "a block of '" + b->owner()->op() + "'" : "the graph";
        errors_.push_back("[scoping] " + who + " returns a value that is not in scope");
      }
  }

  void node(const Node* n) {
    switch (n->op_id()) {
      case OpId::constant: return constant(n);
      case OpId::If: return if_(n);
      case OpId::Loop: return loop(n);
      case OpId::FusionGroup: return fusion_group(n);
      case OpId::call: return call(n);
      case OpId::backward_loss:
      case OpId::set_grads: return train_step(n);
      case OpId::optimizer_guard:
      case OpId::optimizer_zero_grad:
      case OpId::optimizer_step: return optimizer(n);
      case OpId::grad_sync_start:
      case OpId::grad_sync_wait: return grad_sync(n);
      default: break;
    }
    if (n->info() && n->info()->primitive()) return primitive(n);  // undefined, list_*, value primitives
    const OpInfo* info = n->table_op();
    if (!info) return error(n, "op", "unknown op");
    if (!n->blocks().empty()) error(n, "op", "only If, Loop and FusionGroup own blocks");
    // Inputs past the op's own carry attributes known at run time.
    const size_t own = num_op_inputs(*n);
    if (!dynamic_attrs(n, own)) return;
    if (info->num_inputs >= 0 && static_cast<int>(own) != info->num_inputs)
      return error(n, "op", "expects " + std::to_string(info->num_inputs) + " inputs, has " + std::to_string(own));
    if (info->num_inputs < 0 && own == 0) return error(n, "op", "expects at least one input");
    if (static_cast<int>(n->num_outputs()) != info->num_outputs)
      return error(n, "op", "expects " + std::to_string(info->num_outputs) + " output" +
                                (info->num_outputs == 1 ? "" : "s"));
    if (own != n->inputs().size() && info->kind == OpKind::Elementwise)
      return error(n, "attrs", "an elementwise op has no attributes");
    bool any_tensor = false;
    for (const Value* v : n->inputs()) any_tensor = any_tensor || v->type().is_tensor();
    const Type& out = n->output()->type();
    if (info->kind == OpKind::Elementwise) {
      if (any_tensor != out.is_tensor())
        error(n, "types", any_tensor ? "a tensor input gives a tensor output"
                                     : "scalar inputs give a scalar output");
      if (!any_tensor && info->rule == DTypeRule::ToBool && out.kind != Type::Kind::Bool)
        error(n, "types", "a comparison of scalars gives a bool");
      if (out.is_tensor() && out.dtype && info->rule == DTypeRule::ToBool && *out.dtype != DType::Bool)
        error(n, "types", "a comparison gives an i1 tensor");
      return;
    }
    // A list op (cat, stack) takes its tensors one per input, or as one list
    // whose length is known only at run time.
    const bool one_list = info->num_inputs < 0 && own == 1 && n->input(0)->type().is_list();
    for (size_t i = 0; i < own && !one_list; ++i)
      if (!n->input(i)->type().is_tensor()) error(n, "types", "input " + std::to_string(i) + " must be a tensor");
    for (const Value* o : n->outputs())
      if (!o->type().is_tensor()) error(n, "types", "the outputs must be tensors");
    if (info->kind == OpKind::Reduce) {
      if (n->has_attr("dim") && !dynamic_attr(*n, "dim") && !std::holds_alternative<int64_t>(n->attrs().at("dim")) &&
          !std::holds_alternative<std::vector<int64_t>>(n->attrs().at("dim")))
        error(n, "attrs", "'dim' must be an integer or a list of integers");
      if (n->has_attr("keepdim") && !dynamic_attr(*n, "keepdim") && !std::holds_alternative<bool>(n->attrs().at("keepdim")))
        error(n, "attrs", "'keepdim' must be a bool");
      if (n->has_attr("keepdim") && !n->has_attr("dim")) error(n, "attrs", "'keepdim' needs 'dim'");
    }
  }

  // Run-time attributes (value_primitives.h): each names inputs past the
  // op's own, of the kinds an attribute can have; every such input belongs
  // to exactly one attribute. False when the node is too broken to go on.
  bool dynamic_attrs(const Node* n, size_t own) {
    std::vector<int> owner(n->inputs().size(), 0);
    for (const auto& [k, v] : n->attrs()) {
      const auto* text = std::get_if<std::string>(&v);
      if (!text || text->empty() || (*text)[0] != '@') continue;  // other strings are free-form
      auto d = dynamic_attr(*n, k);
      if (!d) {
        error(n, "attrs", "the attribute '" + k + "' starts with '@' but is not \"@i\" or \"@i:j\" (run-time inputs)");
        return false;
      }
      if (d->end > n->inputs().size() || d->begin == d->end) {
        error(n, "attrs", "the attribute '" + k + "' names inputs the node does not have");
        return false;
      }
      for (size_t i = d->begin; i < d->end; ++i) {
        ++owner[i];
        const Type& t = n->input(i)->type();
        if (d->range ? t.kind != Type::Kind::Int : !(t.is_scalar() || (t.is_tensor() && (!t.dtype || *t.dtype == DType::Int64))))
          error(n, "types", "input " + std::to_string(i) + " (the attribute '" + k + "') is " + t.str() +
                                (d->range ? ", expected an int" : ", expected a host scalar or an i64 tensor"));
      }
    }
    for (size_t i = own; i < owner.size(); ++i)
      if (owner[i] != 1) {
        error(n, "attrs", "input " + std::to_string(i) + " is " + (owner[i] ? "used by several attributes" : "not an attribute's"));
        return false;
      }
    return true;
  }

  void constant(const Node* n) {
    if (!n->inputs().empty() || !n->blocks().empty() || n->num_outputs() != 1)
      return error(n, "op", "a constant has no inputs or blocks and one output");
    auto it = n->attrs().find("value");
    if (it == n->attrs().end()) return error(n, "attrs", "a constant needs 'value'");
    Type::Kind want = std::holds_alternative<int64_t>(it->second)  ? Type::Kind::Int
                      : std::holds_alternative<double>(it->second) ? Type::Kind::Float
                      : std::holds_alternative<bool>(it->second)   ? Type::Kind::Bool
                                                                   : Type::Kind::Tensor;
    if (want == Type::Kind::Tensor) return error(n, "attrs", "'value' must be a number or bool");
    if (n->output()->type().kind != want) error(n, "types", "the output type does not match 'value'");
  }

  static bool same_kind(const Type& a, const Type& b) { return a.kind == b.kind; }

  // call{callee="f"}: any inputs and outputs; the callee is resolved in the
  // module by inline_calls, which checks the signature.
  void call(const Node* n) {
    if (!n->blocks().empty()) error(n, "op", "a call owns no blocks");
    auto it = n->attrs().find("callee");
    if (it == n->attrs().end() || !std::holds_alternative<std::string>(it->second) ||
        std::get<std::string>(it->second).empty())
      error(n, "attrs", "a call needs 'callee', the name of a graph");
  }

  // A static train step's effects (passes.h's expand_backward), in the top
  // block only: backward_loss(loss, params...) and
  // set_grads(params..., grads..., data...) with attribute `params`; no outputs.
  void train_step(const Node* n) {
    if (!n->blocks().empty() || n->num_outputs() != 0) return error(n, "op", "has no outputs and no blocks");
    if (n->owner() && n->owner()->owner()) error(n, "op", "must be in the graph's top block, not in an If or Loop");
    for (size_t i = 0; i < n->inputs().size(); ++i)
      if (!n->input(i)->type().is_tensor()) error(n, "types", "input " + std::to_string(i) + " must be a tensor");
    if (n->is(OpId::backward_loss)) {
      if (n->inputs().empty()) error(n, "op", "expects the loss and the parameters");
      return;
    }
    const auto* k = n->has_attr("params") ? std::get_if<int64_t>(&n->attrs().at("params")) : nullptr;
    if (!k || *k < 0 || static_cast<size_t>(2 * *k) > n->inputs().size())
      error(n, "attrs", "set_grads needs 'params', the number of parameters (then as many gradients)");
  }

  // The optimizer's effects (ops.def): input 0 the optimizer's int handle;
  // optimizer_step{params}(opt, params..., grads...). No outputs, top block.
  void optimizer(const Node* n) {
    if (!n->blocks().empty() || n->num_outputs() != 0) return error(n, "op", "has no outputs and no blocks");
    if (n->owner() && n->owner()->owner()) error(n, "op", "must be in the graph's top block, not in an If or Loop");
    if (n->inputs().empty() || n->input(0)->type().kind != Type::Kind::Int)
      return error(n, "types", "input 0 must be the optimizer's handle, an int");
    if (!n->is(OpId::optimizer_step)) {
      if (n->inputs().size() != 1) error(n, "op", "expects the optimizer's handle only");
      return;
    }
    const auto* k = n->has_attr("params") ? std::get_if<int64_t>(&n->attrs().at("params")) : nullptr;
    if (!k || *k < 0 || static_cast<size_t>(1 + 2 * *k) != n->inputs().size())
      return error(n, "attrs", "optimizer_step needs 'params', the number of parameters (then as many gradients)");
    for (size_t i = 1; i < n->inputs().size(); ++i)
      if (!n->input(i)->type().is_tensor()) error(n, "types", "input " + std::to_string(i) + " must be a tensor");
  }

  // The gradient all-reduce (ops.def): grad_sync_start{params}(params...,
  // grads...) with no outputs; grad_sync_wait, the same inputs, one output per
  // gradient. Tensors only, top block.
  void grad_sync(const Node* n) {
    if (!n->blocks().empty()) return error(n, "op", "owns no blocks");
    if (n->owner() && n->owner()->owner()) error(n, "op", "must be in the graph's top block, not in an If or Loop");
    const auto* k = n->has_attr("params") ? std::get_if<int64_t>(&n->attrs().at("params")) : nullptr;
    if (!k || *k < 0 || static_cast<size_t>(2 * *k) != n->inputs().size())
      return error(n, "attrs", n->op() + " needs 'params', the number of parameters (then as many gradients)");
    const size_t outs = n->is(OpId::grad_sync_wait) ? static_cast<size_t>(*k) : 0;
    if (n->num_outputs() != outs)
      error(n, "op", "has " + std::to_string(n->num_outputs()) + " outputs, expected " + std::to_string(outs));
    for (size_t i = 0; i < n->inputs().size(); ++i)
      if (!n->input(i)->type().is_tensor()) error(n, "types", "input " + std::to_string(i) + " must be a tensor");
  }

  // undefined() -> Tensor; list_new() -> list; list_append(list, Tensor) ->
  // list; list_get(list, int) -> Tensor; list_len(list) -> int.
  void primitive(const Node* n) {
    struct Sig { OpId op; std::vector<Type::Kind> in; Type::Kind out; };
    using K = Type::Kind;
    static const Sig sigs[] = {{OpId::undefined, {}, K::Tensor},
                               {OpId::list_new, {}, K::List},
                               {OpId::list_append, {K::List, K::Tensor}, K::List},
                               {OpId::list_get, {K::List, K::Int}, K::Tensor},
                               {OpId::list_len, {K::List}, K::Int},
                               // gradients of lists (autodiff): list_grad.h
                               {OpId::list_split_like, {K::Tensor, K::List, K::Int}, K::List},
                               {OpId::list_unbind, {K::Tensor, K::Int}, K::List},
                               {OpId::list_add, {K::List, K::List}, K::List},
                               {OpId::list_zeros_like, {K::List}, K::List},
                               {OpId::list_last, {K::List}, K::Tensor},
                               {OpId::list_drop_last, {K::List}, K::List},
                               {OpId::list_onehot, {K::List, K::Int, K::Tensor}, K::List},
                               {OpId::defined, {K::Tensor}, K::Bool},
                               {OpId::tensor_dim, {K::Tensor}, K::Int},
                               {OpId::tensor_size, {K::Tensor, K::Int}, K::Int},
                               {OpId::tensor_numel, {K::Tensor}, K::Int},
                               {OpId::int_div, {K::Int, K::Int}, K::Int},
                               {OpId::int_mod, {K::Int, K::Int}, K::Int},
                               {OpId::int_to_float, {K::Int}, K::Float},
                               {OpId::float_to_int, {K::Float}, K::Int},
                               {OpId::slice_dyn, {K::Tensor, K::Int, K::Int, K::Int}, K::Tensor},
                               {OpId::tensor_sizes, {K::Tensor}, K::Tensor},
                               {OpId::inverse_permutation, {K::Tensor}, K::Tensor},
                               {OpId::shape_get, {K::Tensor, K::Int}, K::Int},
                               {OpId::shape_set, {K::Tensor, K::Int, K::Int}, K::Tensor}};
    if (n->is(OpId::slice_dyn) && !(n->has_attr("dim") && std::holds_alternative<int64_t>(n->attrs().at("dim"))))
      error(n, "attrs", "slice_dyn needs the integer 'dim'");
    if (n->is(OpId::full_dyn)) {
      // (Tensor sizes, scalar value) -> Tensor, with a dtype token
      if (!n->blocks().empty() || n->inputs().size() != 2 || n->num_outputs() != 1)
        return error(n, "op", "expects sizes and a value, 1 output and no blocks");
      if (!n->input(0)->type().is_tensor()) error(n, "types", "input 0 must be the sizes (an i64 tensor)");
      if (!n->input(1)->type().is_scalar()) error(n, "types", "input 1 must be a host scalar");
      const auto* d = n->has_attr("dtype") ? std::get_if<std::string>(&n->attrs().at("dtype")) : nullptr;
      DType dt{};
      if (!d || !dtype_from_token(*d, dt)) error(n, "attrs", "full_dyn needs 'dtype', a dtype token (\"f32\")");
      if (!n->output()->type().is_tensor()) error(n, "types", "the output must be Tensor");
      return;
    }
    if (n->is(OpId::assign)) {
      // (Tensor dst, Tensor value) -> nothing: value written into dst, a graph input
      if (!n->blocks().empty() || n->inputs().size() != 2 || n->num_outputs() != 0)
        return error(n, "op", "expects the input written and its value, no outputs and no blocks");
      if (!n->input(0)->type().is_tensor() || !n->input(1)->type().is_tensor())
        error(n, "types", "both inputs must be tensors");
      return;
    }
    if (n->is(OpId::item)) {
      // (Tensor) -> int, float or bool: x.item<T>()
      if (!n->blocks().empty() || n->inputs().size() != 1 || n->num_outputs() != 1)
        return error(n, "op", "expects a tensor, 1 output and no blocks");
      if (!n->input(0)->type().is_tensor()) error(n, "types", "input 0 must be a tensor");
      if (!n->output()->type().is_scalar()) error(n, "types", "the output must be a host int, float or bool");
      return;
    }
    if (n->is(OpId::arange_dyn)) {
      // (start, end, step: host scalars) -> Tensor
      if (!n->blocks().empty() || n->inputs().size() != 3 || n->num_outputs() != 1)
        return error(n, "op", "expects start, end and step, 1 output and no blocks");
      for (const Value* v : n->inputs())
        if (!v->type().is_scalar()) error(n, "types", "start, end and step must be host scalars");
      if (!n->output()->type().is_tensor()) error(n, "types", "the output must be Tensor");
      return;
    }
    if (n->is(OpId::broadcast_sizes)) {
      // (Tensor, Tensor...) -> Tensor
      if (!n->blocks().empty() || n->inputs().empty() || n->num_outputs() != 1)
        return error(n, "op", "expects tensors, 1 output and no blocks");
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (!n->input(i)->type().is_tensor()) error(n, "types", "input " + std::to_string(i) + " must be a tensor");
      if (!n->output()->type().is_tensor()) error(n, "types", "the output must be Tensor");
      return;
    }
    if (n->is(OpId::make_shape)) {
      // (int...) -> Tensor
      if (!n->blocks().empty() || n->num_outputs() != 1)
        return error(n, "op", "expects ints, 1 output and no blocks");
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (n->input(i)->type().kind != K::Int) error(n, "types", "input " + std::to_string(i) + " must be an int");
      if (!n->output()->type().is_tensor()) error(n, "types", "the output must be Tensor");
      return;
    }
    if (n->is(OpId::reshape_dyn)) {
      // (Tensor, int...) -> Tensor
      if (!n->blocks().empty() || n->inputs().empty() || n->num_outputs() != 1)
        return error(n, "op", "expects a tensor and sizes, 1 output and no blocks");
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (n->input(i)->type().kind != (i == 0 ? K::Tensor : K::Int))
          error(n, "types", "input " + std::to_string(i) + " must be " + (i == 0 ? "a tensor" : "an int"));
      if (!n->output()->type().is_tensor()) error(n, "types", "the output must be Tensor");
      return;
    }
    for (const Sig& s : sigs) {
      if (!n->is(s.op)) continue;
      if (!n->blocks().empty() || n->inputs().size() != s.in.size() || n->num_outputs() != 1)
        return error(n, "op", "expects " + std::to_string(s.in.size()) + " inputs, 1 output and no blocks");
      for (size_t i = 0; i < s.in.size(); ++i)
        if (n->input(i)->type().kind != s.in[i])
          error(n, "types", "input " + std::to_string(i) + " is " + n->input(i)->type().str() + ", expected " +
                                Type{s.in[i], {}, {}}.str());
      if (n->output()->type().kind != s.out)
        error(n, "types", "the output must be " + Type{s.out, {}, {}}.str());
      return;
    }
    error(n, "op", "unknown op");
  }

  void if_(const Node* n) {
    if (n->inputs().size() != 1) return error(n, "op", "If takes exactly one condition");
    const Type& c = n->input(0)->type();
    if (c.kind != Type::Kind::Bool && c.kind != Type::Kind::Int && !c.is_tensor())
      error(n, "types", "the condition must be a bool, an int or a one-element tensor");
    if (n->blocks().size() != 2) return error(n, "op", "If needs two blocks (then, else)");
    for (size_t b = 0; b < 2; ++b) {
      const Block* blk = n->block(b);
      std::string which = b == 0 ? "then" : "else";
      if (!blk->params().empty()) error(n, "op", "the " + which + " block takes no parameters");
      if (blk->returns().size() != n->num_outputs()) {
        error(n, "op", "the " + which + " block returns " + std::to_string(blk->returns().size()) +
                           " values for " + std::to_string(n->num_outputs()) + " outputs");
        continue;
      }
      for (size_t i = 0; i < n->num_outputs(); ++i)
        if (!same_kind(blk->returns()[i]->type(), n->output(i)->type()))
          error(n, "types", "the " + which + " block's value " + std::to_string(i) + " is " +
                                blk->returns()[i]->type().str() + ", the output is " +
                                n->output(i)->type().str());
    }
  }

  void loop(const Node* n) {
    if (n->inputs().size() < 2) return error(n, "op", "Loop takes (max trip count, condition, carried...)");
    if (n->input(0)->type().kind != Type::Kind::Int) error(n, "types", "the max trip count must be an int");
    size_t carried = n->inputs().size() - 2;
    if (n->num_outputs() != carried)
      return error(n, "op", "Loop has " + std::to_string(carried) + " carried values but " +
                                std::to_string(n->num_outputs()) + " outputs");
    if (n->blocks().size() != 1) return error(n, "op", "Loop needs one body block");
    const Block* body = n->block(0);
    if (body->params().size() != carried + 1)
      return error(n, "op", "the body takes (iteration, carried...): " + std::to_string(carried + 1) +
                                " parameters, has " + std::to_string(body->params().size()));
    if (body->param(0)->type().kind != Type::Kind::Int) error(n, "types", "the iteration parameter must be an int");
    if (body->returns().size() != carried + 1)
      return error(n, "op", "the body returns (condition, carried...): " + std::to_string(carried + 1) +
                                " values, has " + std::to_string(body->returns().size()));
    for (size_t i = 0; i < carried; ++i) {
      const Type& init = n->input(i + 2)->type();
      if (!same_kind(init, body->param(i + 1)->type()) || !same_kind(init, body->returns()[i + 1]->type()) ||
          !same_kind(init, n->output(i)->type()))
        error(n, "types", "carried value " + std::to_string(i) + " changes kind across the loop");
    }
  }

  // A FusionGroup (made by fuse_elementwise) is one loop: its block mirrors
  // the node's inputs as parameters, returns one value per output, and holds
  // only elementwise ops and constants that read nothing from outside, so
  // codegen can turn it into a single kernel. fuse_groups adds two kinds
  // (attribute `kind`): "reduce" also holds one reduction, its last node, and
  // "matmul_epilogue" one matmul, linear or conv2d, its first node, reading only the
  // group's parameters.
  void fusion_group(const Node* n) {
    if (n->blocks().size() != 1) return error(n, "op", "FusionGroup needs exactly one block");
    const Block* body = n->block(0);
    if (body->params().size() != n->inputs().size())
      return error(n, "op", "the block takes one parameter per input: " + std::to_string(n->inputs().size()) +
                                " inputs, " + std::to_string(body->params().size()) + " parameters");
    for (size_t i = 0; i < n->inputs().size(); ++i)
      if (!same_kind(n->input(i)->type(), body->param(i)->type()))
        error(n, "types", "parameter " + std::to_string(i) + " is " + body->param(i)->type().str() +
                              ", the input is " + n->input(i)->type().str());
    if (body->returns().size() != n->num_outputs())
      return error(n, "op", "the block returns " + std::to_string(body->returns().size()) + " values for " +
                                std::to_string(n->num_outputs()) + " outputs");
    for (size_t i = 0; i < n->num_outputs(); ++i)
      if (!same_kind(body->returns()[i]->type(), n->output(i)->type()))
        error(n, "types", "the block's value " + std::to_string(i) + " is " + body->returns()[i]->type().str() +
                              ", the output is " + n->output(i)->type().str());
    std::string kind = "elementwise";
    if (n->has_attr("kind")) {
      const auto* k = std::get_if<std::string>(&n->attrs().at("kind"));
      kind = k ? *k : "";
      if (kind != "elementwise" && kind != "reduce" && kind != "matmul_epilogue")
        return error(n, "attrs", "unknown FusionGroup kind '" + kind + "'");
    }
    std::unordered_set<const Value*> inside, params;
    for (const auto& p : body->params()) inside.insert(p.get()), params.insert(p.get());
    int heavy = 0;  // the reduction or matmul the kind allows
    for (const auto& m : body->nodes()) {
      const OpInfo* info = m->table_op();
      const bool reduction = info && info->kind == OpKind::Reduce;
      const bool product = info && (info->id == OpId::matmul || info->id == OpId::linear || info->id == OpId::conv2d);
      bool allowed = m->is(OpId::constant) || (info && info->kind == OpKind::Elementwise);
      if (kind == "reduce" && reduction) {
        ++heavy;
        allowed = true;
        if (heavy > 1 || m.get() != body->nodes().back().get())
          error(n, "op", "a reduce FusionGroup holds one reduction, as its last node");
      } else if (kind == "matmul_epilogue" && product) {
        ++heavy;
        allowed = true;
        bool reads_params = true;
        for (const Value* v : m->inputs()) reads_params = reads_params && params.count(v);
        if (heavy > 1 || m.get() != body->nodes().front().get() || !reads_params)
          error(n, "op", "the matmul, linear or conv2d of a matmul_epilogue FusionGroup comes first and reads only "
                         "parameters");
      }
      if (!allowed || !m->blocks().empty())
        error(n, "op", "'" + m->op() + "' cannot be fused: a FusionGroup holds only elementwise ops and constants" +
                           (kind == "elementwise" ? "" : " besides its " + kind + " node"));
      for (const Value* v : m->inputs())
        if (!inside.count(v)) error(n, "scoping", "'" + m->op() + "' inside reads a value from outside the group");
      for (const Value* v : m->outputs()) inside.insert(v);
    }
    if (kind != "elementwise" && heavy == 0)
      error(n, "op", "a " + kind + " FusionGroup needs its " + (kind == "reduce" ? "reduction" : "matmul or linear"));
  }

  std::vector<std::string> errors_;
};

}  // namespace

std::vector<std::string> verify(const Graph& g) { return Verifier().run(g); }

void verify_or_throw(const Graph& g) {
  auto errors = verify(g);
  if (errors.empty()) return;
  std::string msg = "graph '" + g.name() + "' is malformed:";
  for (const auto& e : errors) msg += "\n  " + e;
  throw Error(msg);
}

}  // namespace graph::ir
