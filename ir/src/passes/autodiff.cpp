// Reverse-mode autodiff (autodiff.h): the driver, the activity analysis, and
// the Scopes that walk each block backwards, saving the forward values the
// backward needs across If and Loop boundaries. The per-op rules are in
// autodiff_rules.cpp.
#include "graph/ir/autodiff.h"

#include <algorithm>
#include <unordered_set>

#include "autodiff_scope.h"
#include "graph/error.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"

namespace graph::ir {

namespace autodiff_detail {

namespace {

std::string where(const Node* n) {
  if (!n || !n->loc().valid()) return "";
  return " at " + n->loc().file + ":" + std::to_string(n->loc().line) + ":" + std::to_string(n->loc().col);
}

}  // namespace

// The state shared by the Scopes of one differentiation.
class Differentiator {
 public:
  Differentiator(Graph& forward, Graph& backward) : forward_(forward), backward_(backward) {}

  bool active(const Value* v) const { return active_.count(v) != 0; }
  // Tensors and lists of tensors carry gradients (a list's gradient is a
  // list of its elements' gradients).
  void mark(const Value* v) {
    if (v->type().is_tensor() || v->type().is_list()) active_.insert(v);
  }

  // Values that depend on an input requiring grad, through ops that carry
  // gradients; Loop-carried values iterate to a fixed point.
  void activity(const Block* b) {
    for (const auto& n : b->nodes()) {
      if (n->is(OpId::If)) {
        for (const auto& blk : n->blocks()) activity(blk.get());
        for (size_t i = 0; i < n->num_outputs(); ++i)
          if (active(n->block(0)->returns()[i]) || active(n->block(1)->returns()[i])) mark(n->output(i));
      } else if (n->is(OpId::Loop)) {
        loop_activity(n.get());
      } else if (std::any_of(n->inputs().begin(), n->inputs().end(), [&](const Value* v) { return active(v); })) {
        // A node that reads a value carrying a gradient either passes it on,
        // provably does not (comparisons, metadata reads), or is refused
        // here: a gradient is never dropped silently.
        switch (gradient_flow(*n)) {
          case Flow::Through:
            for (Value* o : n->outputs()) mark(o);
            break;
          case Flow::None: break;
          case Flow::Unknown:
            throw Error("autodiff: '" + n->op() + "'" + where(n.get()) +
                        " has no gradient, and it reads a value that carries one: the gradient would be lost");
        }
      }
    }
  }

  // A forward value of the top block, saved for the backward: a forward
  // output and a backward parameter.
  Value* save(Value* v) {
    forward_.top()->add_return(v);
    Value* p = backward_.top()->add_param(v->type(), v->name());
    saved_.push_back(p);
    return p;
  }
  const std::vector<Value*>& saved() const { return saved_; }

 private:
  void loop_activity(const Node* n) {
    const Block* body = n->block(0);
    const size_t carried = n->num_outputs();
    for (size_t j = 0; j < carried; ++j)
      if (active(n->input(j + 2))) mark(body->param(j + 1));
    for (bool changed = true; changed;) {
      activity(body);
      changed = false;
      for (size_t j = 0; j < carried; ++j)
        if (active(body->returns()[j + 1]) && !active(body->param(j + 1))) {
          mark(body->param(j + 1));
          changed = true;
        }
    }
    for (size_t j = 0; j < carried; ++j)
      if (active(body->param(j + 1))) mark(n->output(j));
  }

  Graph& forward_;
  Graph& backward_;
  std::unordered_set<const Value*> active_;
  std::vector<Value*> saved_;
};

namespace {

// What a branch that did not compute a value returns for it.
Value* placeholder(Block* b, const Type& t) {
  switch (t.kind) {
    case Type::Kind::Tensor: {
      Node* n = b->append("undefined");
      return n->add_output(Type::tensor());
    }
    case Type::Kind::List: return b->append("list_new")->add_output(Type::list());
    case Type::Kind::Int: return add_constant(b, int64_t{0});
    case Type::Kind::Float: return add_constant(b, 0.0);
    case Type::Kind::Bool: return add_constant(b, false);
  }
  return nullptr;
}

}  // namespace

Scope::Scope(Differentiator& d, Scope* parent, Kind kind, Block* fwd, Block* bwd, Node* fwd_node, size_t branch)
    : d_(d), parent_(parent), kind_(kind), fwd_(fwd), bwd_(bwd), fwd_node_(fwd_node), branch_(branch) {}

Node* Scope::emit(const std::string& op, const std::vector<Value*>& inputs, size_t outputs) {
  Node* n = anchor_ ? bwd_->insert_before(anchor_, op) : bwd_->append(op);
  for (Value* v : inputs) n->add_input(v);
  for (size_t i = 0; i < outputs; ++i) n->add_output(Type::tensor());
  if (current_) n->set_loc(current_->loc());
  return n;
}

Value* Scope::fwd(Value* v) {
  if (auto it = memo_.find(v); it != memo_.end()) return it->second;
  Value* r = nullptr;
  if (v->producer() && v->producer()->is(OpId::constant)) {  // cheaper to repeat than to save
    Node* c = emit("constant", {}, 0);
    c->attrs() = v->producer()->attrs();
    r = c->add_output(v->type());
  } else if (v->owning_block() == fwd_) {
    r = save(v);
  } else {
    r = parent_->fwd(v);
  }
  return memo_[v] = r;
}

Value* Scope::save(Value* v) {
  switch (kind_) {
    case Kind::Top: return d_.save(v);
    case Kind::Branch: return save_in_branch(v);
    case Kind::Body: return save_in_body(v);
  }
  return nullptr;
}

// The forward If returns `v` from this branch (and a placeholder from the
// other); the backward reads that output.
Value* Scope::save_in_branch(Value* v) {
  for (size_t b = 0; b < 2; ++b) {
    Block* blk = fwd_node_->block(b);
    blk->add_return(b == branch_ ? v : placeholder(blk, v->type()));
  }
  return parent_->fwd(fwd_node_->add_output(v->type(), v->name()));
}

// The forward Loop appends `v` to a list it carries, once per iteration; the
// backward iteration reads the element of the iteration it undoes. A host int
// (a reversed index, `t - 1`) travels as a one-element i64 tensor, and so does
// a host bool as 0 or 1 (the condition of an `if`, the skip flag of a
// `break`/`continue`/`return` in the body).
Value* Scope::save_in_body(Value* v) {
  if (v == fwd_->param(0)) return iter_;
  const bool host_bool = v->type().kind == Type::Kind::Bool;
  const bool boxed_scalar = host_bool || v->type().kind == Type::Kind::Int;
  if (!v->type().is_tensor() && !boxed_scalar)
    throw Error("autodiff: the backward of the Loop" + where(fwd_node_) + " needs each iteration's value of '%" +
                v->name() + "' (" + v->type().str() +
                "), which cannot be saved yet: only tensors, host ints and bools are (a Loop inside a Loop, a list "
                "or a host float computed in the body is not supported)");
  Value* item = v;
  if (host_bool) item = bool_as_int(v);
  if (boxed_scalar) {
    Node* boxed = fwd_->append("make_shape");
    boxed->add_input(item);
    item = boxed->add_output(Type::tensor());
  }
  Node* init = fwd_node_->owner()->insert_before(fwd_node_, "list_new");
  fwd_node_->add_input(init->add_output(Type::list()));
  Value* list = fwd_->add_param(Type::list());
  Node* append = fwd_->append("list_append");
  append->add_input(list);
  append->add_input(item);
  fwd_->add_return(append->add_output(Type::list()));
  Value* saved = parent_->fwd(fwd_node_->add_output(Type::list(), "saved_" + v->name()));
  Value* got = emit("list_get", {saved, iter_})->output();
  if (!boxed_scalar) return got;
  Node* unboxed = emit("shape_get", {got, int_constant(0)}, 0);
  if (!host_bool) return unboxed->add_output(Type::int_(), v->name());
  Node* test = emit("ne", {unboxed->add_output(Type::int_()), int_constant(0)}, 0);
  return test->add_output(Type::bool_(), v->name());
}

// A backward constant int.
Value* Scope::int_constant(int64_t value) {
  Node* c = emit("constant", {}, 0);
  c->attrs()["value"] = value;
  return c->add_output(Type::int_());
}

// A backward constant bool, before the node being built.
Value* Scope::bool_constant(bool value) {
  Node* c = emit("constant", {}, 0);
  c->attrs()["value"] = value;
  return c->add_output(Type::bool_());
}

// `v ? 1 : 0` at the end of the forward body, as the plugin lowers a bool to int.
Value* Scope::bool_as_int(Value* v) {
  return add_bool_to_int(fwd_, v, v->producer() ? v->producer()->loc() : SourceLoc{});
}

void Scope::accumulate(Value* v, Value* g, Value* reached) {
  if (!g || !d_.active(v)) return;
  auto [it, fresh] = grads_.emplace(v, g);
  if (fresh) {
    grad_order_.push_back(v);
    if (reached) reach_[v] = reached;
    return;
  }
  it->second = v->type().is_list() ? emit_list("list_add", {it->second, g}) : emit1("add", {it->second, g});
  auto r = reach_.find(v);
  if (r == reach_.end()) return;  // already unconditional
  if (reached) r->second = any_of(r->second, reached);
  else reach_.erase(r);
}

Value* Scope::reached(const Value* v) const {
  auto it = reach_.find(v);
  return it == reach_.end() ? nullptr : it->second;
}

Value* Scope::any_of(Value* a, Value* b) {
  Node* n = emit("If", {a}, 0);
  n->add_block()->add_return(add_constant(n->block(0), true));
  n->add_block()->add_return(b);
  return n->add_output(Type::bool_());
}

Value* Scope::emit_list(const std::string& op, const std::vector<Value*>& inputs) {
  Value* r = emit1(op, inputs);
  r->set_type(Type::list());
  return r;
}

Value* Scope::zeros(Value* like) {
  return like->type().is_list() ? emit_list("list_zeros_like", {like}) : emit1("zeros_like", {like});
}

// The type of the gradient of `v`: a list's is a list.
static Type grad_type(const Value* v) { return v->type().is_list() ? Type::list() : Type::tensor(); }

Value* Scope::grad(const Value* v) const {
  auto it = grads_.find(v);
  return it == grads_.end() ? nullptr : it->second;
}

std::vector<Value*> Scope::outer_grads() const {
  std::vector<Value*> out;
  for (const Value* v : grad_order_)
    if (v->owning_block() != fwd_) out.push_back(const_cast<Value*>(v));
  return out;
}

void Scope::run() {
  std::vector<Node*> nodes;
  for (const auto& n : fwd_->nodes()) nodes.push_back(n.get());
  for (auto it = nodes.rbegin(); it != nodes.rend(); ++it) node(*it);
  current_ = nullptr;
}

void Scope::node(Node* n) {
  std::vector<Value*> out_grads;
  bool any = false;
  for (Value* o : n->outputs()) {
    out_grads.push_back(grad(o));
    any = any || out_grads.back();
  }
  if (!any) return;
  current_ = n;
  Value* flag = nullptr;  // set when every output gradient is conditional
  for (size_t j = 0; j < out_grads.size(); ++j) {
    if (!out_grads[j]) continue;
    Value* r = reached(n->output(j));
    if (!r) {
      flag = nullptr;
      break;
    }
    flag = flag ? any_of(flag, r) : r;
  }
  if (flag) return gated(n, out_grads, flag);
  backward_of(n, out_grads);
}

// The backward of `n` inside `If(flag)`: the gradients it adds to are the
// If's outputs, their old values when the flag does not hold; those it starts
// are conditional on `flag` in turn. Inside, gradients count as unconditional
// but n's own outputs' (a nested branch still gates its own values).
void Scope::gated(Node* n, const std::vector<Value*>& out_grads, Value* flag) {
  // Forward values the rules read, mapped out here so that the mapping is
  // usable after the If; what is mapped inside stays inside.
  for (Value* v : n->inputs()) fwd(v);
  for (Value* v : n->outputs()) fwd(v);
  const auto memo = memo_;
  const auto before = grads_;
  // The flags stay as they are inside: n's outputs keep theirs, which an
  // If's backward passes to its branches (if_), so a branch value only an
  // untaken output reads stays gated there, where the gate's flag (any
  // output's) may hold (K6); and a gradient added to inside keeps whether the
  // taken branch of a nested If reached it (K10's pg19).
  const auto reach = reach_;
  Node* gate = emit("If", {flag}, 0);
  Block* then_b = gate->add_block();
  Block* else_b = gate->add_block();
  Block* outer = bwd_;
  Node* anchor = anchor_;
  bwd_ = then_b;
  anchor_ = nullptr;
  backward_of(n, out_grads);
  std::vector<std::pair<const Value*, Value*>> changed;  // (value, its gradient before)
  for (const Value* v : grad_order_) {
    auto it = before.find(v);
    Value* old = it == before.end() ? nullptr : it->second;
    if (grads_.at(v) != old) changed.emplace_back(v, old);
  }
  // A gradient the gate starts is zeros when the flag does not hold, shaped
  // like its forward value. That value is mapped before the gate: a mapping
  // made inside the then-branch (an If or Loop's outer value, read by its
  // backward only) is not visible in the else-branch.
  memo_ = memo;
  bwd_ = outer;
  anchor_ = gate;
  std::vector<Value*> likes;
  for (const auto& [v, old] : changed) likes.push_back(old ? nullptr : fwd(const_cast<Value*>(v)));
  const auto mapped = memo_;
  bwd_ = else_b;
  anchor_ = nullptr;
  for (size_t i = 0; i < changed.size(); ++i) {
    const auto& [v, old] = changed[i];
    then_b->add_return(grads_.at(v));
    else_b->add_return(old ? old : zeros(likes[i]));
  }
  // A gradient whose contribution inside is itself conditional (a nested
  // If's taken branch may not have reached it) keeps that flag: the gate
  // returns it from its then-branch and the old flag (or whether there was
  // an old gradient) from its else-branch. Otherwise, as the gate's flag.
  std::vector<Value*> inner;  // per changed: its flag inside, or null
  for (const auto& [v, old] : changed) {
    auto in = reach_.find(v);
    inner.push_back(in == reach_.end() ? nullptr : in->second);
    if (!inner.back()) continue;
    auto out = reach.find(v);
    then_b->add_return(inner.back());
    else_b->add_return(out != reach.end() ? out->second : add_constant(else_b, old != nullptr));
  }
  bwd_ = outer;
  anchor_ = anchor;
  current_ = n;
  memo_ = mapped;
  reach_ = reach;
  for (const auto& [v, old] : changed) grads_[v] = gate->add_output(grad_type(v));
  for (size_t i = 0; i < changed.size(); ++i) {
    const auto& [v, old] = changed[i];
    if (inner[i]) reach_[v] = gate->add_output(Type::bool_());
    else if (!old) reach_[v] = flag;
    else if (auto r = reach_.find(v); r != reach_.end()) r->second = any_of(r->second, flag);
  }
}

// The backward of `n` from its outputs' gradients, added to its inputs'.
void Scope::backward_of(Node* n, const std::vector<Value*>& out_grads) {
  if (n->is(OpId::If)) return if_(n, out_grads);
  if (n->is(OpId::Loop)) return loop(n, out_grads);
  std::vector<bool> wanted;
  for (Value* v : n->inputs()) wanted.push_back(d_.active(v));
  const std::vector<Value*> in_grads = op_gradients(*this, *n, out_grads, wanted);
  for (size_t i = 0; i < in_grads.size() && i < n->inputs().size(); ++i)
    if (wanted[i]) accumulate(n->input(i), in_grads[i]);
}

// Backward of an If: an If on the same condition whose branches run each
// branch's backward and return the gradients of the outer values they reach
// (zeros from a branch that does not reach one).
void Scope::if_(Node* n, const std::vector<Value*>& out_grads) {
  Node* bif = emit("If", {fwd(n->input(0))}, 0);
  anchor_ = bif;
  std::vector<std::unique_ptr<Scope>> branches;
  std::vector<Value*> outer;
  for (size_t b = 0; b < 2; ++b) {
    auto s = std::make_unique<Scope>(d_, this, Kind::Branch, n->block(b), bif->add_block(), n, b);
    // A conditional output gradient stays conditional inside: a node there
    // whose gradients all are runs its backward gated (gated), so a value
    // only the untaken return path reads adds no 0 * NaN (K6, docs/fuzzing.md).
    for (size_t i = 0; i < out_grads.size(); ++i)
      s->accumulate(n->block(b)->returns()[i], out_grads[i], out_grads[i] ? reached(n->output(i)) : nullptr);
    s->run();
    for (Value* v : s->outer_grads())
      if (std::find(outer.begin(), outer.end(), v) == outer.end()) outer.push_back(v);
    branches.push_back(std::move(s));
  }
  // Each outer value's gradient, then, when some branch does not reach it
  // (or reaches it only conditionally), whether the taken one did (reach_).
  std::vector<std::pair<Value*, Value*>> results;  // (gradient, flag or null)
  for (Value* v : outer) {
    bool conditional = false;
    for (auto& s : branches) {
      s->current_ = n;
      Value* g = s->grad(v);
      s->bwd_->add_return(g ? g : s->zeros(s->fwd(v)));
      conditional = conditional || !g || s->reached(v);
    }
    Value* g = bif->add_output(grad_type(v), v->name().empty() ? "" : "grad_" + v->name());
    Value* flag = nullptr;
    if (conditional) {
      for (auto& s : branches) {
        Value* r = s->grad(v) ? s->reached(v) : nullptr;
        s->bwd_->add_return(r ? r : add_constant(s->bwd_, s->grad(v) != nullptr));
      }
      flag = bif->add_output(Type::bool_(), v->name().empty() ? "" : "reached_" + v->name());
    }
    results.emplace_back(g, flag);
  }
  anchor_ = nullptr;
  current_ = n;
  for (size_t i = 0; i < outer.size(); ++i) accumulate(outer[i], results[i].first, results[i].second);
}

namespace {

// Every value a nested block reads: its nodes' inputs (nested blocks
// included) and its returns, which may be outer values themselves.
void reads_of(const Block* b, std::unordered_set<const Value*>& into) {
  for (const auto& n : b->nodes()) {
    for (const Value* v : n->inputs()) into.insert(v);
    for (const auto& nb : n->blocks()) reads_of(nb.get(), into);
  }
  for (const Value* v : b->returns()) into.insert(v);
}

// Of the carried values act (indices into the Loop's carried values), those
// whose gradient is defined in every backward iteration: defined at the last
// forward iteration (`defined`), and whose body parameter feeds, within one
// iteration, the new value of one that is so again (the greatest such set).
// Plain data flow: a superset of the gradient flow, so a value left out is
// surely undefined in some iteration.
std::vector<bool> always_defined(const Block* body, const std::vector<size_t>& act, std::vector<bool> defined) {
  for (bool changed = true; changed;) {
    std::unordered_set<const Value*> feeds;  // body values some kept return depends on
    for (size_t a = 0; a < act.size(); ++a)
      if (defined[a]) feeds.insert(body->returns()[act[a] + 1]);
    for (auto it = body->nodes().rbegin(); it != body->nodes().rend(); ++it) {
      const Node* n = it->get();
      const std::vector<Value*> outs = n->outputs();  // a copy: begin and end of one vector
      if (std::none_of(outs.begin(), outs.end(), [&](const Value* o) { return feeds.count(o); })) continue;
      for (const Value* v : n->inputs()) feeds.insert(v);
      for (const auto& nb : n->blocks()) reads_of(nb.get(), feeds);
    }
    changed = false;
    for (size_t a = 0; a < act.size(); ++a)
      if (defined[a] && !feeds.count(body->param(act[a] + 1))) {
        defined[a] = false;
        changed = true;
      }
  }
  return defined;
}

}  // namespace

// Backward of a Loop: the forward counts its iterations; the backward runs
// that many, undoing iteration count - 1 - it, carrying the gradients of the
// carried values and one accumulator per outer value the body reaches.
//
// A carried value's gradient is undefined in an iteration when its new value
// reaches no output from there (K10, docs/fuzzing.md: a value the loop
// carries but nothing after the loop reads). Eager autograd never visits it;
// running its producers' backward on zeros would give 0 * NaN = NaN where the
// forward is NaN. So a carried gradient that is not defined in every
// iteration (always_defined) travels with a flag, and seeds the body's
// backward conditionally on it (gated): nodes reached only from undefined
// gradients do not run. Outer values reached only conditionally get a flag
// too, true once any iteration reached them.
void Scope::loop(Node* n, const std::vector<Value*>& out_grads) {
  Block* body = n->block(0);
  const size_t carried = n->num_outputs();
  // The iteration count, one more carried int of the forward Loop.
  Node* zero = n->owner()->insert_before(n, "constant");
  zero->attrs()["value"] = int64_t{0};
  n->add_input(zero->add_output(Type::int_()));
  Value* counter = body->add_param(Type::int_(), "count");
  Value* one = add_constant(body, int64_t{1});
  Node* inc = body->append("add");
  inc->add_input(counter);
  inc->add_input(one);
  body->add_return(inc->add_output(Type::int_()));
  Value* count = fwd(n->add_output(Type::int_(), "count"));

  std::vector<size_t> act;  // the carried values that carry gradients
  for (size_t j = 0; j < carried; ++j)
    if (d_.active(body->param(j + 1))) act.push_back(j);
  std::vector<bool> defined_last;
  for (size_t j : act) defined_last.push_back(out_grads[j] && !reached(n->output(j)));
  const std::vector<bool> always = always_defined(body, act, defined_last);
  std::vector<size_t> flagged;  // indices into act of the gradients that carry a flag
  for (size_t a = 0; a < act.size(); ++a)
    if (!always[a]) flagged.push_back(a);

  std::vector<Value*> inputs{count, add_constant(bwd_, true)};
  for (size_t j : act) inputs.push_back(out_grads[j] ? out_grads[j] : zeros(fwd(n->output(j))));
  for (size_t a : flagged) {
    const size_t j = act[a];
    Value* r = out_grads[j] ? reached(n->output(j)) : nullptr;
    inputs.push_back(r ? r : bool_constant(out_grads[j] != nullptr));
  }
  Node* bl = emit("Loop", inputs, 0);
  anchor_ = bl;
  Block* bb = bl->add_block();
  Value* it = bb->add_param(Type::int_(), "it");
  std::vector<Value*> carried_grads, flags;
  for (size_t j : act) carried_grads.push_back(bb->add_param(grad_type(body->param(j + 1)), "grad_" + body->param(j + 1)->name()));
  for (size_t a : flagged) flags.push_back(bb->add_param(Type::bool_(), "defined_" + body->param(act[a] + 1)->name()));

  Scope s(d_, this, Kind::Body, body, bb, n);
  s.current_ = n;
  Node* last = s.emit("sub", {count, add_constant(bb, int64_t{1})}, 0);
  Value* last_v = last->add_output(Type::int_());
  Node* k = s.emit("sub", {last_v, it}, 0);
  s.iter_ = k->add_output(Type::int_(), "k");
  for (size_t a = 0, f = 0; a < act.size(); ++a) {
    const bool has_flag = f < flagged.size() && flagged[f] == a;
    s.accumulate(body->returns()[act[a] + 1], carried_grads[a], has_flag ? flags[f++] : nullptr);
  }
  s.run();

  s.current_ = n;
  std::vector<Value*> rets{add_constant(bb, true)};
  for (size_t a = 0; a < act.size(); ++a) {
    Value* g = s.grad(body->param(act[a] + 1));
    rets.push_back(g ? g : s.zeros(carried_grads[a]));
    bl->add_output(grad_type(body->param(act[a] + 1)));
  }
  std::vector<Value*> flag_outs;
  for (size_t a : flagged) {
    const Value* p = body->param(act[a] + 1);
    Value* r = s.grad(p) ? s.reached(p) : nullptr;
    rets.push_back(r ? r : add_constant(bb, s.grad(p) != nullptr));
    flag_outs.push_back(bl->add_output(Type::bool_()));
  }
  const std::vector<Value*> outer = s.outer_grads();
  std::vector<Value*> acc_outs, reached_outs;
  for (Value* v : outer) {
    bl->add_input(zeros(fwd(v)));
    Value* acc = bb->add_param(grad_type(v), "acc_" + v->name());
    rets.push_back(v->type().is_list() ? s.emit_list("list_add", {acc, s.grad(v)}) : s.emit1("add", {acc, s.grad(v)}));
    acc_outs.push_back(bl->add_output(grad_type(v), v->name().empty() ? "" : "grad_" + v->name()));
  }
  for (Value* v : outer) {  // whether any iteration reached v, where one may not
    Value* r = s.reached(v);
    if (!r) {
      reached_outs.push_back(nullptr);
      continue;
    }
    bl->add_input(bool_constant(false));
    Value* any = bb->add_param(Type::bool_(), "reached_" + v->name());
    rets.push_back(s.any_of(any, r));
    reached_outs.push_back(bl->add_output(Type::bool_()));
  }
  bb->set_returns(rets);
  anchor_ = nullptr;
  current_ = n;
  for (size_t a = 0, f = 0; a < act.size(); ++a) {
    const bool has_flag = f < flagged.size() && flagged[f] == a;
    accumulate(n->input(act[a] + 2), bl->output(a), has_flag ? flag_outs[f++] : nullptr);
  }
  for (size_t i = 0; i < outer.size(); ++i) accumulate(outer[i], acc_outs[i], reached_outs[i]);
}

}  // namespace autodiff_detail

namespace {

// `g` with its parameters in the order `order` (a permutation of them).
std::unique_ptr<Graph> with_params(Graph& g, const std::vector<Value*>& order) {
  auto out = std::make_unique<Graph>(g.name());
  for (Value* old : order) replace_uses(g.top(), old, out->add_input(old->type(), old->name()));
  while (!g.top()->nodes().empty()) out->top()->move_to_end(g.top()->nodes().front().get());
  out->top()->set_returns(g.top()->returns());
  return out;
}

void check_request(const Graph& g, const std::vector<bool>& requires_grad) {
  if (requires_grad.size() != g.inputs().size())
    throw Error("autodiff: graph '" + g.name() + "' has " + std::to_string(g.inputs().size()) +
                " inputs but requires_grad has " + std::to_string(requires_grad.size()) + " entries");
  for (size_t i = 0; i < requires_grad.size(); ++i)
    if (requires_grad[i] && !g.inputs()[i]->type().is_tensor())
      throw Error("autodiff: input " + std::to_string(i) + " ('%" + g.inputs()[i]->name() + "' : " +
                  g.inputs()[i]->type().str() + ") of graph '" + g.name() + "' is not a tensor and cannot require grad");
}

}  // namespace

GradGraphs differentiate(const Graph& g, const std::vector<bool>& requires_grad) {
  using namespace autodiff_detail;
  verify_or_throw(g);
  check_request(g, requires_grad);
  GradGraphs r;
  r.forward = parse(print(g));  // a copy we may extend with saved values
  r.forward->set_name(g.name() + "_forward");
  split_dropout(*r.forward);  // a training dropout's backward needs its mask
  Graph& fwd = *r.forward;
  Graph bwd(g.name() + "_backward");
  Differentiator d(fwd, bwd);
  for (size_t i = 0; i < requires_grad.size(); ++i)
    if (requires_grad[i]) d.mark(fwd.inputs()[i].get());
  d.activity(fwd.top());

  Scope top(d, nullptr, Scope::Kind::Top, fwd.top(), bwd.top());
  r.num_outputs = fwd.outputs().size();
  std::vector<Value*> grad_outputs;
  for (size_t i = 0; i < r.num_outputs; ++i) {
    Value* out = fwd.outputs()[i];
    if (out->type().is_list() && d.active(out))
      throw Error("autodiff: output " + std::to_string(i) + " of graph '" + g.name() +
                  "' is a list of tensors that carry gradients; the static backward receives gradients of tensor "
                  "outputs only");
    grad_outputs.push_back(bwd.add_input(Type::tensor(), out->name().empty() ? "" : "grad_" + out->name()));
    top.accumulate(out, grad_outputs.back());
  }
  top.run();
  std::vector<Value*> grads;
  for (size_t i = 0; i < requires_grad.size(); ++i) {
    if (!requires_grad[i]) continue;
    r.grad_inputs.push_back(i);
    Value* gi = top.grad(fwd.inputs()[i].get());
    grads.push_back(gi ? gi : top.emit1("undefined", {}));
  }
  bwd.top()->set_returns(grads);

  std::vector<Value*> order = d.saved();
  r.num_saved = order.size();
  order.insert(order.end(), grad_outputs.begin(), grad_outputs.end());
  r.backward = with_params(bwd, order);
  verify_or_throw(*r.forward);
  verify_or_throw(*r.backward);
  return r;
}

std::unique_ptr<Graph> differentiate_combined(const Graph& g, const std::vector<bool>& requires_grad) {
  GradGraphs r = differentiate(g, requires_grad);
  Graph& f = *r.forward;
  Block* b = r.backward->top();
  const std::vector<Value*> fwd_outputs = f.outputs();
  for (size_t i = 0; i < b->params().size(); ++i) {
    Value* p = b->param(i);
    Value* to = i < r.num_saved ? fwd_outputs[r.num_outputs + i] : f.add_input(p->type(), p->name());
    replace_uses(b, p, to);
  }
  while (!b->nodes().empty()) f.top()->move_to_end(b->nodes().front().get());
  std::vector<Value*> rets(fwd_outputs.begin(), fwd_outputs.begin() + static_cast<long>(r.num_outputs));
  rets.insert(rets.end(), b->returns().begin(), b->returns().end());
  f.top()->set_returns(rets);
  f.set_name(g.name() + "_grad");
  verify_or_throw(f);
  return std::move(r.forward);
}

}  // namespace graph::ir
