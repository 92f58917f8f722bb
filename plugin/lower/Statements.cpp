// Statements: declarations, assignments and compound assignments,
// expression statements.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

auto FunctionLowering::stmt(const Stmt* s) -> void {
  check_stack(s->getBeginLoc());
  if (const auto* c = dyn_cast<CompoundStmt>(s)) return seq(c->body_begin(), c->body_end());
  if (isa<NullStmt>(s)) return;
  if (const auto* a = dyn_cast<AttributedStmt>(s)) return stmt(a->getSubStmt());  // [[likely]]
  if (const auto* d = dyn_cast<DeclStmt>(s)) return decl(d);
  if (const auto* i = dyn_cast<IfStmt>(s)) return if_(i);
  if (const auto* w = dyn_cast<WhileStmt>(s)) return while_(w);
  if (const auto* d = dyn_cast<DoStmt>(s))
    return loop({d->getCond(), d->getBody(), nullptr, d->getDoLoc(), nullptr, {}, /*test_first=*/false, {}});
  if (const auto* sw = dyn_cast<SwitchStmt>(s)) return switch_(sw);
  if (isa<SwitchCase>(s))
    unsupported(s->getBeginLoc(), "this 'case' label is not directly in its 'switch' body, which cannot be lowered");
  if (const auto* f = dyn_cast<ForStmt>(s)) return for_(f);
  if (const auto* f = dyn_cast<CXXForRangeStmt>(s)) return range_for(f);
  if (const auto* r = dyn_cast<ReturnStmt>(s)) return return_(r);
  if (isa<BreakStmt, ContinueStmt>(s)) return break_or_continue(s);
  if (const auto* e = dyn_cast<Expr>(s)) return expr_stmt(e);
  if (const char* what = statement_name(s)) unsupported(s->getBeginLoc(), what);
  unsupported(s->getBeginLoc(), std::string("this statement (") + s->getStmtClassName() + ") cannot be lowered");
}

auto FunctionLowering::decl(const DeclStmt* d) -> void {
  for (const Decl* dd : d->decls()) {
    // Declarations that only name things: nothing to run.
    if (isa<TypedefNameDecl, UsingDecl, UsingDirectiveDecl, UsingEnumDecl, NamespaceAliasDecl, StaticAssertDecl,
            TagDecl, FunctionDecl>(dd))
      continue;
    const auto* v = dyn_cast<VarDecl>(dd);
    if (!v) unsupported(dd->getLocation(), "this declaration cannot be lowered");
    if (const auto* dd = dyn_cast<DecompositionDecl>(v)) {
      decompose(dd);
      continue;
    }
    if (v->isLocalExternDecl()) unsupported(v->getLocation(), "local 'extern' declarations cannot be lowered");
    // `static const int k = 3;`: a constant, folded where it is read.
    if (v->isStaticLocal() && v->isUsableInConstantExpressions(ctx_)) continue;
    if (v->isStaticLocal())
      unsupported(v->getLocation(), std::string(v->getTSCSpec() == TSCS_unspecified ? "static" : "thread_local") +
                                        " local variables cannot be lowered");
    const Expr* init = v->getInit();
    if (const auto* lambda = init ? dyn_cast<LambdaExpr>(strip(init)) : nullptr)
      unsupported(lambda->getBeginLoc(), "lambdas cannot be lowered yet");
    if (auto elems = tuple_elements(v->getType())) {
      tuple_decl(v, *elems);
      continue;
    }
    if (v->getType()->isReferenceType()) {
      if (!v->getType().getNonReferenceType().isConstQualified())
        unsupported(v->getLocation(), "non-const reference variables cannot be lowered; use a value");
      // A const reference to a variable reads that variable; one bound to
      // a temporary, a member or a global holds a value nothing here changes.
      if (auto k = init ? lvalue_key(init) : std::nullopt) {
        aliases_[v] = *k;
        continue;
      }
    }
    if (is_int_list(v->getType())) {
      define(v, shape_value(init, v->getLocation()));
      continue;
    }
    if (!ir_type(v->getType()))
      unsupported(v->getLocation(), quote(v->getName()) + " has type " + type_name(v->getType()) +
                                        ", which a static graph cannot hold");
    if (const auto* ce = init ? dyn_cast<CXXConstructExpr>(strip(init)) : nullptr;
        ce && ce->getNumArgs() == 0 && !is_tensor_vector(v->getType()))
      init = nullptr;  // `Tensor y;`: assigned later
    if (!init && !is_tensor_record(v->getType()))
      unsupported(v->getLocation(), quote(v->getName()) + " must be initialized");
    define(v, init ? expr(init) : nullptr);
  }
}

auto FunctionLowering::assigned_var(const Expr* lhs) -> Key {
  const auto* d = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts());
  const auto* v = d ? dyn_cast<VarDecl>(d->getDecl()) : nullptr;
  if (!v || !tuples_.count(v))
    if (auto k = lvalue_key(lhs); k && !(v && isa<ParmVarDecl>(v) && v->getType()->isReferenceType())) return *k;
  if (v && !env_.count(v) && v->hasGlobalStorage())
    unsupported(lhs->getExprLoc(), "the global " + quote(v->getName()) +
                                       " cannot be assigned in a static graph: the graph only reads globals");
  if (!v || !env_.count(v)) unsupported(lhs->getExprLoc(), "only local variables and parameters can be assigned");
  if (isa<ParmVarDecl>(v) && v->getType()->isReferenceType())
    unsupported(lhs->getExprLoc(), "the assignment to the reference parameter " + quote(v->getName()) +
                                       " would write to the caller's variable, which the graph cannot do");
  return v;
}

auto FunctionLowering::assignment(const Expr* e) -> ir::Value* {
  e = strip(e);
  if (const auto* b = dyn_cast<BinaryOperator>(e)) {
    if (b->getOpcode() == BO_Assign) return assign(b->getLHS(), b->getRHS());
    if (const auto* ca = dyn_cast<CompoundAssignOperator>(b)) return compound(ca);
  }
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e)) {
    if (oc->getOperator() == OO_Equal) return assign(oc->getArg(0), oc->getArg(1));
    if (const char* op = compound_op(oc->getOperator()))
      return compound(op, oc->getArg(0), oc->getArg(1), oc->getOperatorLoc(), getOperatorSpelling(oc->getOperator()));
  }
  return nullptr;
}

auto FunctionLowering::assign(const Expr* lhs, const Expr* rhs) -> ir::Value* {
  if (tuple_assign(lhs, rhs)) return constant(true, rhs->getExprLoc());  // (a chain's value: never used)
  // `s[i] = v` on a local int list: shape_set.
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(lhs->IgnoreParenImpCasts());
      oc && oc->getOperator() == OO_Subscript && is_int_list(oc->getArg(0)->getType())) {
    Key k = assigned_var(oc->getArg(0));
    SourceLocation l = oc->getExprLoc();
    ir::Value* cur = read_key(k, l);
    ir::Value* i = index_value(oc->getArg(1), l);
    ir::Value* value = assignment(rhs);
    if (!value) value = expr(rhs);
    if (value->type().kind != ir::Type::Kind::Int)
      unsupported(rhs->getExprLoc(), "an element of an int list must be an integer, not a " + value->type().str());
    define(k, node("shape_set", {cur, i, value}, ir::Type::tensor(), l)->output());
    return value;
  }
  Key v = assigned_var(lhs);
  ir::Value* value = assignment(rhs);
  if (!value) value = expr(rhs);
  define(v, value);
  return value;
}

auto FunctionLowering::expr_stmt(const Expr* e) -> void {
  e = e->IgnoreParens();
  if (const auto* fe = dyn_cast<FullExpr>(e)) e = fe->getSubExpr()->IgnoreParens();
  if (assignment(e)) return;
  if (const auto* b = dyn_cast<BinaryOperator>(e); b && b->getOpcode() == BO_Comma) {
    expr_stmt(b->getLHS());  // `a = a + 1, b = b * 2;` and `++i, ++j` in a for
    expr_stmt(b->getRHS());
    return;
  }
  if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->isIncrementDecrementOp()) {
    Key v = assigned_var(u->getSubExpr());
    ir::Value* cur = read_key(v, u->getExprLoc());
    if (cur->type().kind != ir::Type::Kind::Int) unsupported(u->getExprLoc(), "'++'/'--' apply to integers here");
    SourceLocation l = u->getOperatorLoc();
    return define(v, node(u->isIncrementOp() ? "add" : "sub", {cur, constant(int64_t{1}, l)}, ir::Type::int_(), l)
                         ->output());
  }
  if (const auto* m = dyn_cast<CXXMemberCallExpr>(e);
      m && (is_vector_method(m, "push_back") || is_vector_method(m, "emplace_back")) && m->getNumArgs() == 1) {
    Key v = assigned_var(m->getImplicitObjectArgument());
    ir::Value* list = read_key(v, m->getExprLoc());
    ir::Value* t = expr(m->getArg(0));
    if (!t->type().is_tensor()) unsupported(m->getArg(0)->getExprLoc(), "a list element must be a tensor");
    return define(v, node("list_append", {list, t}, ir::Type::list(), m->getExprLoc())->output());
  }
  if (const auto* c = dyn_cast<CastExpr>(e); c && c->getCastKind() == CK_ToVoid) e = c->getSubExpr();
  if (const auto* c = dyn_cast<CallExpr>(e); c && is_eager_check(c->getDirectCallee())) return;
  if (training_statement(e)) return;
  if (tuple_elements(e->getType())) {
    tuple_values(e);  // a call whose tuple result is dropped
    return;
  }
  // Anything else is evaluated for nothing: a graph op or a read has no
  // effect to keep, and expr() diagnoses whatever has one (a call that is
  // not an op, throw, new, an assignment it cannot place).
  expr(e);
}

auto FunctionLowering::compound_op(OverloadedOperatorKind k) -> const char* {
  switch (k) {
    case OO_PlusEqual: return "add";
    case OO_MinusEqual: return "sub";
    case OO_StarEqual: return "mul";
    case OO_SlashEqual: return "div";
    default: return nullptr;
  }
}

auto FunctionLowering::compound(const CompoundAssignOperator* ca) -> ir::Value* {
  const char* op = nullptr;
  switch (ca->getOpcode()) {
    case BO_AddAssign: op = "add"; break;
    case BO_SubAssign: op = "sub"; break;
    case BO_MulAssign: op = "mul"; break;
    case BO_DivAssign: op = "div"; break;
    case BO_RemAssign: op = "int_mod"; break;
    default:
      unsupported(ca->getOperatorLoc(), "the operator " + quote(BinaryOperator::getOpcodeStr(ca->getOpcode())) +
                                            " cannot be lowered yet");
  }
  return compound(op, ca->getLHS(), ca->getRHS(), ca->getOperatorLoc(), BinaryOperator::getOpcodeStr(ca->getOpcode()));
}

auto FunctionLowering::compound(const char* op, const Expr* lhs, const Expr* rhs_expr, SourceLocation l,
                                llvm::StringRef spelling) -> ir::Value* {
  // `s[i] op= rhs` on a local int list: shape_get, the int op, shape_set.
  if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(lhs->IgnoreParenImpCasts());
      oc && oc->getOperator() == OO_Subscript && is_int_list(oc->getArg(0)->getType())) {
    Key k = assigned_var(oc->getArg(0));
    ir::Value* list = read_key(k, l);
    ir::Value* i = index_value(oc->getArg(1), l);
    ir::Value* rhs = operand(rhs_expr);
    if (rhs->type().kind != ir::Type::Kind::Int)
      unsupported(rhs_expr->getExprLoc(), "an element of an int list must be an integer, not a " + rhs->type().str());
    std::string name = op;
    if (name == "div") name = "int_div";
    ir::Value* cur = node("shape_get", {list, i}, ir::Type::int_(), l)->output();
    ir::Value* value = node(name, {cur, rhs}, ir::Type::int_(), l)->output();
    define(k, node("shape_set", {list, i, value}, ir::Type::tensor(), l)->output());
    return value;
  }
  Key v = assigned_var(lhs);
  ir::Value* cur = read_key(v, l);
  ir::Value* rhs = operand(rhs_expr);
  if (cur->type().kind == ir::Type::Kind::Bool)
    unsupported(l, "compound assignment to the bool " + quote(key_name(v)) + " cannot be lowered");
  if (cur->type().is_list()) unsupported(l, "the operator " + quote(spelling) + " cannot be lowered for a list");
  if (std::string(op) == "div" && cur->type().kind == ir::Type::Kind::Int) op = "int_div";
  if (std::string(op) == "int_mod" && (cur->type().kind != ir::Type::Kind::Int || rhs->type().kind != ir::Type::Kind::Int))
    unsupported(l, "'%=' is lowered for host integers only");
  if (cur->type().kind == ir::Type::Kind::Int && rhs->type().kind == ir::Type::Kind::Float)
    unsupported(l, "this assignment truncates a floating-point value to an integer");
  if (!cur->type().is_tensor() && rhs->type().is_tensor())
    unsupported(l, "a tensor cannot be assigned to the host scalar " + quote(key_name(v)));
  ir::Value* value = node(op, {cur, rhs}, cur->type(), l)->output();
  define(v, value);
  return value;
}

}  // namespace cxxgraph::lower
