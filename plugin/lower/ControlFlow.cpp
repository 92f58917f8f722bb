// Control flow and early exits: function bodies with their returned/skip/stop
// flags, if/else and ?: as If nodes, loops as Loop nodes with carried
// values, switch, break and continue.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

auto FunctionLowering::function_body(Frame& frame) -> std::vector<ir::Value*> {
  Frame* saved = frame_;
  frame_ = &frame;
  frames_.push_back(&frame);
  synthetic_[&frame.returned] = "returned";
  synthetic_[&frame.skip] = "skip";
  synthetic_[&frame.stop] = "stop";
  for (size_t i = 0; i < frame.results.size(); ++i) {
    frame.slots.push_back(0);
    synthetic_[&frame.slots.back()] = frame.results.size() == 1 ? "result" : "result" + std::to_string(i);
    define(&frame.slots.back(), nullptr);
  }
  const auto* body = cast<CompoundStmt>(frame.fd->getBody());
  set_flag(&frame.returned, false, body->getLBracLoc());
  set_flag(&frame.skip, false, body->getLBracLoc());
  if (frame.range) {
    seq(frame.range->first, frame.range->second);
    if (frame.results.empty()) {
      // A region before a graph break: the rest of the body must run.
      if (!is_const(env_.at(&frame.returned), false))
        throw Unsupported{first_return(frame.range->first, frame.range->second),
                          "this 'return' comes before a graph break, which a static region cannot end with"};
    } else if (!is_const(env_.at(&frame.returned), true)) {
      unsupported(body->getRBracLoc(), "the function must end with 'return <tensor>;' on every path");
    }
  } else {
    seq(body->body_begin(), body->body_end());
    if (!is_const(env_.at(&frame.returned), true))
      unsupported(body->getRBracLoc(), "the function must end with 'return <tensor>;' on every path");
  }
  std::vector<ir::Value*> out;
  for (char& slot : frame.slots) out.push_back(env_.at(&slot));
  frames_.pop_back();
  frame_ = saved;
  return out;
}

auto FunctionLowering::first_return(Region::StmtIt it, Region::StmtIt end) -> SourceLocation {
  std::function<const ReturnStmt*(const Stmt*)> find = [&](const Stmt* s) -> const ReturnStmt* {
    if (!s || isa<LambdaExpr>(s)) return nullptr;
    if (const auto* r = dyn_cast<ReturnStmt>(s)) return r;
    for (const Stmt* c : s->children())
      if (const ReturnStmt* r = find(c)) return r;
    return nullptr;
  };
  for (; it != end; ++it)
    if (const ReturnStmt* r = find(*it)) return r->getBeginLoc();
  return it == end ? SourceLocation() : (*it)->getBeginLoc();
}

auto FunctionLowering::is_const(const ir::Value* v, bool b) const -> bool {
  if (!v || !v->producer() || !v->producer()->is(graph::OpId::constant)) return false;
  const auto* x = std::get_if<bool>(&v->producer()->attrs().at("value"));
  return x && *x == b;
}

auto FunctionLowering::flag_true(Key k) const -> bool {
  auto it = env_.find(k);
  return it != env_.end() && is_const(it->second, true);
}

auto FunctionLowering::flag_true_in(const Env& env, Key k) const -> bool {
  auto it = env.find(k);
  return it != env.end() && is_const(it->second, true);
}

auto FunctionLowering::flag_false(Key k) const -> bool {
  auto it = env_.find(k);
  return it == env_.end() || is_const(it->second, false);
}

auto FunctionLowering::set_flag(Key k, bool b, SourceLocation at) -> void {
  ir::Value* c = constant(b, at);
  flag_constants_.insert(c->producer());
  define(k, c);
}

auto FunctionLowering::seq(CompoundStmt::const_body_iterator it, CompoundStmt::const_body_iterator end) -> void {
  for (; it != end; ++it) {
    if (flag_true(&frame_->skip)) return;  // unreachable, as in the eager body
    if (!flag_false(&frame_->skip)) return guarded(it, end);
    stmt(*it);
  }
}

auto FunctionLowering::guarded(StmtIt it, StmtIt end, const std::function<void(StmtIt, StmtIt)>& rest) -> void {
  SourceLocation at = (*it)->getBeginLoc();
  ir::Node* n = block_->append("If");
  n->add_input(env_.at(&frame_->skip));
  n->set_loc(loc(at));
  ir::Block* then_b = add_block(n, at);
  ir::Block* else_b = add_block(n, at);
  Env then_env = in_block(then_b, [&] {
    // Outside loops only a `return` sets skip: the function has returned.
    if (!env_.count(&frame_->stop)) set_flag(&frame_->returned, true, at);
  });
  Env else_env = in_block(else_b, [&] {
    for (Key k : {Key(&frame_->skip), Key(&frame_->stop), Key(&frame_->returned)})
      if (env_.count(k)) set_flag(k, false, at);
    if (rest) rest(it, end);
    else seq(it, end);
  });
  merge(n, then_env, else_env, {"early exit", at, at, "the rest of the body may be skipped here"});
}

auto FunctionLowering::return_(const ReturnStmt* r) -> void {
  if (frame_->results.empty())  // only a static region before a graph break has no results
    throw Unsupported{r->getBeginLoc(), "this 'return' comes before a graph break, which a static region cannot end with"};
  if (!r->getRetValue()) unsupported(r->getBeginLoc(), "a 'return' without a value cannot be lowered");
  std::vector<ir::Value*> values = result_values(r->getRetValue());
  for (size_t i = 0; i < values.size(); ++i) define(&frame_->slots[i], values[i]);
  set_flag(&frame_->returned, true, r->getBeginLoc());
  set_flag(&frame_->skip, true, r->getBeginLoc());
  if (env_.count(&frame_->stop)) set_flag(&frame_->stop, true, r->getBeginLoc());
}

auto FunctionLowering::break_or_continue(const Stmt* s) -> void {
  if (!env_.count(&frame_->stop))
    unsupported(s->getBeginLoc(), "this 'break' or 'continue' is not inside a loop the graph lowers");
  set_flag(&frame_->skip, true, s->getBeginLoc());
  if (isa<BreakStmt>(s)) set_flag(&frame_->stop, true, s->getBeginLoc());
}

auto FunctionLowering::result_values(const Expr* e) -> std::vector<ir::Value*> {
  const std::vector<ir::Type>& want = frame_->results;
  std::vector<const Expr*> parts;
  if (want.size() == 1) {
    parts.push_back(e);
  } else {
    std::vector<ir::Value*> values = tuple_values(e);
    if (values.size() != want.size())
      unsupported(e->getExprLoc(), "this result has " + std::to_string(values.size()) + " elements, not " +
                                       std::to_string(want.size()));
    for (size_t i = 0; i < values.size(); ++i)
      if (values[i]->type().kind != want[i].kind)
        unsupported(e->getExprLoc(), "element " + std::to_string(i) + " of this result is a " +
                                         values[i]->type().str() + ", not a " + want[i].str());
    return values;
  }
  std::vector<ir::Value*> out;
  for (size_t i = 0; i < parts.size(); ++i) {
    ir::Value* v = expr(parts[i]);
    if (v->type().kind != want[i].kind)
      unsupported(parts[i]->getExprLoc(), "this result is a " + v->type().str() + ", not a " + want[i].str());
    out.push_back(v);
  }
  return out;
}

auto FunctionLowering::default_value(const ir::Type& t, ir::Block* b, SourceLocation at) -> ir::Value* {
  ir::Block* saved = block_;
  block_ = b;
  ir::Value* v = nullptr;
  switch (t.kind) {
    case ir::Type::Kind::Tensor: v = node("undefined", {}, ir::Type::tensor(), at)->output(); break;
    case ir::Type::Kind::List: v = node("list_new", {}, ir::Type::list(), at)->output(); break;
    case ir::Type::Kind::Int: v = constant(int64_t{0}, at); break;
    case ir::Type::Kind::Float: v = constant(0.0, at); break;
    case ir::Type::Kind::Bool: v = constant(false, at); break;
  }
  block_ = saved;
  return v;
}

auto FunctionLowering::slot_type(Key k) const -> const ir::Type* {
  for (const Frame* f : frames_)
    for (size_t i = 0; i < f->slots.size(); ++i)
      if (k == &f->slots[i]) return &f->results[i];
  return nullptr;
}

auto FunctionLowering::remove_unused_flags() -> void {
  std::unordered_set<const ir::Value*> returned;
  std::function<void(const ir::Block*)> collect = [&](const ir::Block* b) {
    for (const ir::Value* v : b->returns()) returned.insert(v);
    for (const auto& n : b->nodes())
      for (const auto& inner : n->blocks()) collect(inner.get());
  };
  collect(graph_->top());
  for (ir::Node* n : flag_constants_)
    if (n->output()->users().empty() && !returned.count(n->output())) n->owner()->erase(n);
}

auto FunctionLowering::check_depth(SourceLocation at) -> void {
  if (depth_ + 1 > kMaxBlockDepth)
    unsupported(at, "control flow nested more than " + std::to_string(kMaxBlockDepth) +
                        " levels deep cannot be lowered");
}

auto FunctionLowering::add_block(ir::Node* n, SourceLocation at) -> ir::Block* {
  check_depth(at);
  return n->add_block();
}

auto FunctionLowering::if_(const IfStmt* s) -> void {
  if (s->getInit()) stmt(s->getInit());
  if (s->isConsteval()) {
    // The function is not constexpr, so it never runs in a constant context.
    if (const Stmt* taken = s->isNegatedConsteval() ? s->getThen() : s->getElse()) stmt(taken);
    return;
  }
  if (const DeclStmt* d = s->getConditionVariableDeclStmt()) decl(d);
  if (s->isConstexpr()) {
    bool value = false;
    if (!s->getCond()->EvaluateAsBooleanCondition(value, ctx_, /*InConstantContext=*/true))
      unsupported(s->getCond()->getExprLoc(), "the condition of 'if constexpr' could not be evaluated");
    if (const Stmt* taken = value ? s->getThen() : s->getElse()) stmt(taken);
    return;
  }
  ir::Value* cond = condition(s->getCond());
  ir::Node* n = block_->append("If");
  n->add_input(cond);
  n->set_loc(loc(s->getIfLoc()));
  ir::Block* then_b = add_block(n, s->getIfLoc());
  ir::Block* else_b = add_block(n, s->getIfLoc());
  Env then_env = in_block(then_b, [&] { stmt(s->getThen()); });
  Env else_env = in_block(else_b, [&] { if (s->getElse()) stmt(s->getElse()); });
  SourceLocation else_at = s->getElse() ? s->getElse()->getBeginLoc() : s->getIfLoc();
  merge(n, then_env, else_env,
        {"'if'", s->getThen()->getBeginLoc(), else_at,
         s->getElse() ? "but not in this branch" : "but not when the condition is false"});
}

auto FunctionLowering::merge(ir::Node* n, Env& then_env, Env& else_env, const Site& site) -> void {
  ir::Block* blocks[2] = {n->block(0), n->block(1)};
  merge_state(then_env, else_env);  // members updated in place (State.cpp)
  for (Key k : std::vector<Key>(order_)) {
    auto outer = env_.find(k);
    if (outer == env_.end()) continue;
    ir::Value* t = then_env.at(k);
    ir::Value* e = else_env.at(k);
    if (t == outer->second && e == outer->second) continue;
    // Set when a tensor is assigned on one path only (see below).
    std::optional<Partial> undefined_on_a_path;
    if ((!t || !e) && (t || e)) {
      // The path that did not assign k: its value slot and its block.
      ir::Value*& missing = t ? e : t;
      ir::Block* missing_block = t ? blocks[1] : blocks[0];
      const ir::Type& assigned_type = (t ? t : e)->type();
      const ir::Type* st = slot_type(k);
      const bool gone = flag_true_in(t ? else_env : then_env, &frame_->skip);
      if (st || gone) {  // a result not returned on this path, or a path that left: never read
        missing = default_value(st ? *st : assigned_type, missing_block, site.then_at);
      } else {
        std::string name = quote(key_name(k));
        Partial why{site.what, {{t ? site.then_at : site.else_at, name + " is assigned in this branch"},
                                {t ? site.else_at : site.then_at, site.else_note}}};
        if (!assigned_type.is_tensor()) {
          env_[k] = nullptr;
          partial_[k] = std::move(why);
          continue;
        }
        // `Tensor y;` is an undefined tensor on the other path: usable
        // where an undefined tensor is (an optional operand, `.defined()`).
        missing = default_value(ir::Type::tensor(), missing_block, site.then_at);
        undefined_on_a_path = std::move(why);
      }
    }
    if (!t || !e) {
      env_[k] = nullptr;
      continue;
    }
    if (t->producer() && e->producer() && t->producer()->is(graph::OpId::constant) && e->producer()->is(graph::OpId::constant) &&
        t->type() == e->type() && t->producer()->attrs() == e->producer()->attrs()) {
      ir::Node* c = block_->append("constant");
      c->attrs() = t->producer()->attrs();
      c->add_output(t->type());
      c->set_loc(n->loc());
      if (synthetic(k)) flag_constants_.insert(c);
      define(k, c->output());
      continue;
    }
    blocks[0]->add_return(t);
    blocks[1]->add_return(e);
    ir::Value* out = n->add_output(t->type());
    define(k, out);
    out->set_name(identifier(key_name(k)));
    if (undefined_on_a_path) maybe_undefined_[k] = std::move(*undefined_on_a_path);  // after define(), which clears it
  }
}

auto FunctionLowering::assigned_in(const Stmt* s, std::vector<Key>& out) -> void {
  if (!s) return;
  check_stack(s->getBeginLoc());
  if (isa<LambdaExpr>(s)) return;
  const Expr* lhs = nullptr;
  if (const auto* b = dyn_cast<BinaryOperator>(s); b && b->isAssignmentOp()) lhs = b->getLHS();
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(s); oc && (oc->isAssignmentOp() || compound_op(oc->getOperator())))
    lhs = oc->getArg(0);
  if (const auto* u = dyn_cast<UnaryOperator>(s); u && u->isIncrementDecrementOp()) lhs = u->getSubExpr();
  if (const auto* m = dyn_cast<CXXMemberCallExpr>(s);
      m && (is_vector_method(m, "push_back") || is_vector_method(m, "emplace_back")))
    lhs = m->getImplicitObjectArgument();
  auto add = [&](Key k) {
    if (env_.count(k) && std::find(out.begin(), out.end(), k) == out.end()) out.push_back(k);
  };
  // `s[i] = v` writes the int list `s`.
  if (const auto* oc = lhs ? dyn_cast<CXXOperatorCallExpr>(lhs->IgnoreParenImpCasts()) : nullptr;
      oc && oc->getOperator() == OO_Subscript && is_int_list(oc->getArg(0)->getType()))
    lhs = oc->getArg(0);
  if (lhs) {
    const Expr* target = lhs->IgnoreParenImpCasts();
    const auto* d = dyn_cast<DeclRefExpr>(target);
    if (d && tuples_.count(d->getDecl())) {
      for (Key k : tuples_.at(d->getDecl()).keys) add(k);
    } else if (const auto* c = dyn_cast<CallExpr>(strip(lhs)); c && is_std(c->getDirectCallee(), "tie")) {
      for (const Expr* a : c->arguments())
        if (auto k = lvalue_key(a)) add(*k);
    } else if (auto k = lvalue_key(lhs)) {
      add(*k);
    }
  }
  for (const Stmt* c : s->children()) assigned_in(c, out);
}

auto FunctionLowering::exits(const Stmt* s, bool loop_level, bool returns_only) -> bool {
  if (!s || isa<LambdaExpr>(s)) return false;
  if (isa<ReturnStmt>(s)) return true;
  if (loop_level && !returns_only && isa<BreakStmt, ContinueStmt>(s)) return true;
  if (isa<SwitchStmt>(s) && !returns_only) loop_level = false;  // its `break`s are its own (not lowered anyway)
  bool inner_loop = isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(s);
  for (const Stmt* c : s->children())
    if (c && exits(c, loop_level && !inner_loop, returns_only)) return true;
  return false;
}

auto FunctionLowering::to_bool(ir::Value* v, SourceLocation at) -> ir::Value* {
  switch (v->type().kind) {
    case ir::Type::Kind::Bool: return v;
    case ir::Type::Kind::Int: return node("ne", {v, constant(int64_t{0}, at)}, ir::Type::bool_(), at)->output();
    default: break;
  }
  ir::Node* n = block_->append("If");
  n->add_input(v);
  n->set_loc(loc(at));
  for (bool b : {true, false}) {
    ir::Block* blk = add_block(n, at);
    in_block(blk, [&] { blk->add_return(constant(b, at)); });
  }
  return n->add_output(ir::Type::bool_());
}

auto FunctionLowering::loop(const LoopSpec& spec) -> void {
  SourceLocation at = spec.at;
  std::vector<Key> carried;
  assigned_in(spec.body, carried);
  assigned_in(spec.inc, carried);
  assigned_in(spec.cond, carried);
  // Keep declaration order so the IR is stable.
  std::vector<Key> ordered;
  for (Key k : order_)
    if (std::find(carried.begin(), carried.end(), k) != carried.end()) ordered.push_back(k);
  for (Key k : ordered)
    if (!env_.at(k))
      unsupported(at, quote(key_name(k)) + " must be assigned before the loop that updates it");
  const bool may_exit = exits(spec.body, true);
  const bool may_return = exits(spec.body, true, /*returns_only=*/true);
  if (may_return) {
    ordered.push_back(&frame_->returned);
    for (size_t i = 0; i < frame_->slots.size(); ++i) {
      Key k = &frame_->slots[i];
      if (!env_.at(k)) define(k, default_value(frame_->results[i], block_, at));
      ordered.push_back(k);
    }
  }

  ir::Value* max_trips = spec.max_trips ? spec.max_trips : constant(std::numeric_limits<int64_t>::max(), at);
  ir::Value* cond0 = spec.cond && spec.test_first ? condition(spec.cond) : constant(true, at);
  ir::Node* n = block_->append("Loop");
  n->set_loc(loc(at));
  n->add_input(max_trips);
  n->add_input(cond0);
  for (Key k : ordered) n->add_input(env_.at(k));
  ir::Block* b = add_block(n, at);
  ir::Value* iter = b->add_param(ir::Type::int_(), "iter");
  std::vector<ir::Value*> params;
  for (Key k : ordered) params.push_back(b->add_param(env_.at(k)->type(), identifier(key_name(k))));
  in_block(b, [&] {
    for (size_t i = 0; i < ordered.size(); ++i) env_[ordered[i]] = params[i];
    if (spec.prelude) spec.prelude(iter);
    if (may_exit) {
      set_flag(&frame_->skip, false, at);
      set_flag(&frame_->stop, false, at);
    }
    if (spec.run_body) spec.run_body();
    else stmt(spec.body);
    Key stop = &frame_->stop;
    if (spec.inc && !flag_true(stop)) {
      if (flag_false(stop)) expr_stmt(spec.inc);
      else unless(stop, spec.inc->getBeginLoc(), [&] { expr_stmt(spec.inc); });
    }
    ir::Value* next = nullptr;
    if (flag_true(stop)) {
      next = constant(false, at);
    } else if (flag_false(stop)) {
      next = spec.cond ? condition(spec.cond) : constant(true, at);
    } else {
      // stop ? false : cond, the condition evaluated only when not stopping.
      ir::Node* c = block_->append("If");
      c->add_input(env_.at(stop));
      c->set_loc(loc(at));
      ir::Block* t = add_block(c, at);
      in_block(t, [&] { t->add_return(constant(false, at)); });
      ir::Block* e = add_block(c, at);
      in_block(e, [&] { e->add_return(to_bool(spec.cond ? condition(spec.cond) : constant(true, at), at)); });
      next = c->add_output(ir::Type::bool_());
    }
    b->add_return(next);
    for (Key k : ordered) {
      ir::Value* r = env_.at(k);
      if (!r) unsupported(at, quote(key_name(k)) + " is not assigned on every path through the loop");
      b->add_return(r);
    }
  });
  for (Key k : ordered) {
    ir::Value* out = n->add_output(env_.at(k)->type());
    define(k, out);
    out->set_name(identifier(key_name(k)));
  }
  if (may_return) {  // a return inside the loop skips what follows it, and stops enclosing loops
    define(&frame_->skip, env_.at(&frame_->returned));
    if (env_.count(&frame_->stop)) define(&frame_->stop, env_.at(&frame_->returned));
  }
}

auto FunctionLowering::switch_(const SwitchStmt* s) -> void {
  SourceLocation at = s->getSwitchLoc();
  if (s->getInit()) stmt(s->getInit());
  if (const DeclStmt* d = s->getConditionVariableDeclStmt()) decl(d);
  const auto* body = dyn_cast<CompoundStmt>(s->getBody());
  if (!body) unsupported(s->getBody()->getBeginLoc(), "a 'switch' whose body is not a block cannot be lowered");
  if (const Stmt* c = continue_in(body))
    unsupported(c->getBeginLoc(), "a 'continue' inside a 'switch' cannot be lowered yet");
  std::vector<const SwitchCase*> labels;
  for (const Stmt* child : body->body())
    for (const auto* sc = dyn_cast<SwitchCase>(child); sc; sc = dyn_cast<SwitchCase>(sc->getSubStmt()))
      labels.push_back(sc);
  for (const SwitchCase* sc = s->getSwitchCaseList(); sc; sc = sc->getNextSwitchCase())
    if (std::find(labels.begin(), labels.end(), sc) == labels.end())
      unsupported(sc->getBeginLoc(), "this 'case' label is inside a nested statement, which cannot be lowered");

  auto sw = std::make_unique<Switch>();
  sw->value = expr(s->getCond());
  if (sw->value->type().kind != ir::Type::Kind::Int)
    unsupported(s->getCond()->getExprLoc(), "a 'switch' is lowered on a host integer");
  synthetic_[&sw->active] = "switch_active";
  ir::Value* any = nullptr;
  bool has_default = false;
  for (const SwitchCase* sc : labels) {
    if (isa<DefaultStmt>(sc)) { has_default = true; continue; }
    ir::Value* eq = case_test(*sw, cast<CaseStmt>(sc));
    any = any ? either(any, eq, sc->getBeginLoc()) : eq;
  }
  if (has_default)
    sw->none = any ? node("logical_not", {any}, ir::Type::bool_(), at)->output() : constant(true, at);
  set_flag(&sw->active, false, at);
  // `Tensor y;` assigned in the cases: undefined until then, as in C++.
  std::vector<Key> assigned;
  assigned_in(body, assigned);
  for (Key k : assigned)
    if (!env_.at(k) && !synthetic(k) && is_tensor_record(static_cast<const VarDecl*>(k)->getType()))
      define(k, default_value(ir::Type::tensor(), block_, at));
  auto run = [&] { switch_body(body->body_begin(), body->body_end(), *sw); };
  if (exits(body, true)) loop({nullptr, body, nullptr, at, constant(int64_t{1}, at), {}, true, run});
  else run();
  env_.erase(&sw->active);
  switches_.push_back(std::move(sw));  // keys stay unique while the lowering runs
}

auto FunctionLowering::case_test(const Switch& sw, const CaseStmt* c) -> ir::Value* {
  if (c->caseStmtIsGNURange()) unsupported(c->getBeginLoc(), "case ranges cannot be lowered");
  llvm::APSInt v = c->getLHS()->EvaluateKnownConstInt(ctx_);
  if (v.getSignificantBits() > 64) unsupported(c->getBeginLoc(), "this case value does not fit in 64 bits");
  SourceLocation l = c->getBeginLoc();
  return node("eq", {sw.value, constant(static_cast<int64_t>(v.getExtValue()), l)}, ir::Type::bool_(), l)->output();
}

auto FunctionLowering::either(ir::Value* a, ir::Value* b, SourceLocation l) -> ir::Value* {
  ir::Node* n = block_->append("If");
  n->add_input(a);
  n->set_loc(loc(l));
  for (int branch = 0; branch < 2; ++branch) {
    ir::Block* blk = add_block(n, l);
    in_block(blk, [&] { blk->add_return(branch == 0 ? constant(true, l) : b); });
  }
  return n->add_output(ir::Type::bool_());
}

auto FunctionLowering::switch_body(StmtIt it, StmtIt end, Switch& sw) -> void {
  for (; it != end; ++it) {
    if (flag_true(&frame_->skip)) return;
    if (!flag_false(&frame_->skip))
      return guarded(it, end, [&](StmtIt i, StmtIt e) { switch_body(i, e, sw); });
    const Stmt* s = *it;
    while (const auto* sc = dyn_cast<SwitchCase>(s)) {
      ir::Value* now = isa<DefaultStmt>(sc) ? sw.none : case_test(sw, cast<CaseStmt>(sc));
      ir::Value* active = env_.at(&sw.active);
      define(&sw.active, is_const(active, false) ? now : either(active, now, sc->getBeginLoc()));
      s = sc->getSubStmt();
    }
    if (isa<NullStmt>(s)) continue;
    when(&sw.active, s->getBeginLoc(), [&] { stmt(s); });
  }
}

auto FunctionLowering::continue_in(const Stmt* s) -> const Stmt* {
  if (!s || isa<LambdaExpr, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(s)) return nullptr;
  if (isa<ContinueStmt>(s)) return s;
  for (const Stmt* c : s->children())
    if (const Stmt* found = continue_in(c)) return found;
  return nullptr;
}

auto FunctionLowering::while_(const WhileStmt* s) -> void {
  if (s->getConditionVariable())
    unsupported(s->getBeginLoc(), "a 'while' with a declaration in its condition cannot be lowered yet");
  loop({s->getCond(), s->getBody(), nullptr, s->getWhileLoc(), nullptr, {}});
}

auto FunctionLowering::for_(const ForStmt* s) -> void {
  if (!s->getCond()) unsupported(s->getForLoc(), "a 'for' without a condition cannot be lowered");
  if (s->getConditionVariable())
    unsupported(s->getBeginLoc(), "a 'for' with a declaration in its condition cannot be lowered yet");
  if (s->getInit()) stmt(s->getInit());
  loop({s->getCond(), s->getBody(), s->getInc(), s->getForLoc(), nullptr, {}});
}

auto FunctionLowering::range_for(const CXXForRangeStmt* s) -> void {
  SourceLocation at = s->getForLoc();
  if (s->getInit()) unsupported(s->getInit()->getBeginLoc(), "a range-based 'for' with an initializer cannot be lowered yet");
  const Expr* range = s->getRangeInit();
  if (!is_tensor_vector(range->getType()))
    unsupported(at, "range-based 'for' loops over " + type_name(range->getType()) +
                        " cannot be lowered; only over a 'std::vector<graph::Tensor>'");
  const VarDecl* v = s->getLoopVariable();
  if (!is_tensor_record(v->getType()))
    unsupported(v->getLocation(), "the loop variable " + quote(v->getName()) + " must be a 'graph::Tensor'");
  if (v->getType()->isReferenceType() && !v->getType().getNonReferenceType().isConstQualified())
    unsupported(v->getLocation(), "the loop variable " + quote(v->getName()) +
                                      " is a non-const reference; the graph cannot write to the vector");
  ir::Value* list = expr(range);
  ir::Value* len = node("list_len", {list}, ir::Type::int_(), at)->output();
  loop({nullptr, s->getBody(), nullptr, at, len, [&, list](ir::Value* iter) {
          define(v, node("list_get", {list, iter}, ir::Type::tensor(), v->getLocation())->output());
        }});
}

}  // namespace cxxgraph::lower
