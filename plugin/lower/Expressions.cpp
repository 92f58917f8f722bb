// Expressions: casts and conversions, constants folded by Clang, unary,
// binary and logical operators.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

auto FunctionLowering::strip(const Expr* e) -> const Expr* {
  while (true) {
    e = e->IgnoreParens();
    if (const auto* c = dyn_cast<CastExpr>(e); c && passthrough(c)) {
      e = c->getSubExpr();
      continue;
    }
    if (const auto* f = dyn_cast<FullExpr>(e)) { e = f->getSubExpr(); continue; }
    if (const auto* m = dyn_cast<MaterializeTemporaryExpr>(e)) { e = m->getSubExpr(); continue; }
    if (const auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) { e = b->getSubExpr(); continue; }
    if (const auto* d = dyn_cast<CXXDefaultArgExpr>(e)) { e = d->getExpr(); continue; }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
      const CXXConstructorDecl* ctor = ce->getConstructor();
      bool through = ce->getNumArgs() >= 1 &&
                     (((is_tensor_record(ce->getType()) || is_tensor_vector(ce->getType()) ||
                        tuple_elements(ce->getType())) &&
                       ctor->isCopyOrMoveConstructor()) ||
                      (is_scalar_record(ce->getType()) && ce->getNumArgs() == 1));
      if (through) { e = ce->getArg(0); continue; }
      return e;
    }
    if (const auto* il = dyn_cast<InitListExpr>(e);
        il && il->getNumInits() == 1 && ir_type(il->getType()) && !is_tensor_record(il->getType())) {
      e = il->getInit(0);
      continue;
    }
    return e;
  }
}

auto FunctionLowering::passthrough(const CastExpr* c) -> bool {
  switch (c->getCastKind()) {
    case CK_NoOp:
    case CK_LValueToRValue:
    case CK_ConstructorConversion:
    case CK_FloatingCast:
      return true;
    case CK_IntegralCast: {  // int -> long: the graph's int64 holds both
      QualType from = c->getSubExpr()->getType(), to = c->getType();
      return ir_type(from) && ir_type(to) && !from->isBooleanType() &&
             ctx_.getTypeSize(to) >= ctx_.getTypeSize(from);
    }
    default:
      return false;
  }
}

auto FunctionLowering::fold(const Expr* e) -> ir::Value* {
  auto t = ir_type(e->getType());
  if (!t || t->is_tensor() || e->isValueDependent() || e->containsErrors()) return nullptr;
  Expr::EvalResult r;
  if (!e->EvaluateAsRValue(r, ctx_) || r.HasSideEffects || r.HasUndefinedBehavior) return nullptr;
  SourceLocation l = e->getExprLoc();
  if (r.Val.isInt()) {
    const llvm::APSInt& i = r.Val.getInt();
    if (t->kind == ir::Type::Kind::Bool) return constant(i.getBoolValue(), l);
    if (t->kind == ir::Type::Kind::Int && i.getSignificantBits() <= 64) return constant(i.getExtValue(), l);
    return nullptr;
  }
  if (r.Val.isFloat() && t->kind == ir::Type::Kind::Float) return constant(r.Val.getFloat().convertToDouble(), l);
  return nullptr;
}

auto FunctionLowering::check_stack(SourceLocation at) -> void {
  if (isStackNearlyExhausted()) unsupported(at, "this code is nested too deeply to lower");
}

auto FunctionLowering::expr(const Expr* e) -> ir::Value* {
  check_stack(e->getExprLoc());
  if (ir::Value* c = fold(e)) return c;
  e = strip(e);
  SourceLocation l = e->getExprLoc();
  if (ir::Value* c = fold(e)) return c;  // constants behind the conversions strip() removed
  if (is_int_list(e->getType()) && !isa<CallExpr>(e)) return shape_value(e, l);
  if (const auto* d = dyn_cast<DeclRefExpr>(e)) {
    if (isa<VarDecl, BindingDecl>(d->getDecl())) return read(cast<ValueDecl>(d->getDecl()), l);
    unsupported(l, quote(d->getDecl()->getNameAsString()) + " cannot be used in a static graph");
  }
  if (const auto* c = dyn_cast<CastExpr>(e)) return conversion(c);
  if (const auto* u = dyn_cast<UnaryOperator>(e)) return unary(u);
  if (const auto* b = dyn_cast<BinaryOperator>(e)) {
    if (b->isAssignmentOp())
      unsupported(l, "an assignment inside an expression cannot be lowered; assign in its own statement");
    return binary(b);
  }
  if (const auto* c = dyn_cast<ConditionalOperator>(e)) return conditional(c);
  if (const auto* c = dyn_cast<CallExpr>(e)) return call(c);
  if (const auto* m = dyn_cast<MemberExpr>(e)) return member(m);
  if (const auto* ce = dyn_cast<CXXConstructExpr>(e); ce && is_tensor_vector(ce->getType())) return new_list(ce);
  // `Tensor()`: an undefined tensor (an absent optional operand, a default argument).
  if (const auto* ce = dyn_cast<CXXConstructExpr>(e); ce && is_tensor_record(ce->getType()) && ce->getNumArgs() == 0)
    return node("undefined", {}, ir::Type::tensor(), l)->output();
  if (const char* what = expression_name(e)) unsupported(l, what);
  unsupported(l, std::string("this expression (") + e->getStmtClassName() + ") cannot be lowered");
}

auto FunctionLowering::conversion(const CastExpr* c) -> ir::Value* {
  SourceLocation l = c->getExprLoc();
  QualType from = c->getSubExpr()->getType();
  switch (c->getCastKind()) {
    case CK_IntegralToBoolean:
    case CK_FloatingToBoolean: {
      ir::Value* v = expr(c->getSubExpr());
      ir::Value* zero = c->getCastKind() == CK_IntegralToBoolean ? constant(int64_t{0}, l) : constant(0.0, l);
      return node("ne", {v, zero}, ir::Type::bool_(), l)->output();
    }
    case CK_IntegralCast:
      if (const auto* m = dyn_cast<CXXMemberCallExpr>(strip(c->getSubExpr()));
          m && is_vector_method(m, "size") && ir_type(c->getType()) && !c->getType()->isBooleanType())
        return node("list_len", {expr(m->getImplicitObjectArgument())}, ir::Type::int_(), l)->output();
      if (const auto* m = dyn_cast<CXXMemberCallExpr>(strip(c->getSubExpr()));
          m && m->getMethodDecl() && m->getMethodDecl()->getIdentifier() && m->getMethodDecl()->getName() == "size" &&
          m->getNumArgs() == 0 && is_int_list(m->getObjectType()) && ir_type(c->getType()) &&
          !c->getType()->isBooleanType())
        return node("tensor_numel", {shape_value(m->getImplicitObjectArgument(), l)}, ir::Type::int_(), l)->output();
      if (from->isBooleanType() && ir_type(c->getType())) return bool_to_int(expr(c->getSubExpr()), l);
      if (ir_type(from) && ir_type(c->getType()))
        unsupported(l, "the conversion from " + type_name(from) + " to " + type_name(c->getType()) +
                           " may change the value and cannot be lowered");
      break;
    case CK_IntegralToFloating:
      if (ir_type(from) && ir_type(c->getType())) {
        ir::Value* v = expr(c->getSubExpr());
        if (v->type().kind == ir::Type::Kind::Bool) v = bool_to_int(v, l);
        return node("int_to_float", {v}, ir::Type::float_(), l)->output();
      }
      break;
    case CK_FloatingToIntegral:  // truncating; NaN or out of range is an error at run time
      if (ir_type(from) && ir_type(c->getType()))
        return node("float_to_int", {expr(c->getSubExpr())}, ir::Type::int_(), l)->output();
      break;
    case CK_ToVoid:
      unsupported(l, "a cast to 'void' cannot be used as a value");
    case CK_UserDefinedConversion:
      unsupported(l, "the user-defined conversion from " + type_name(from) + " to " + type_name(c->getType()) +
                         " cannot be lowered");
    default:
      break;
  }
  unsupported(l, "the conversion from " + type_name(from) + " to " + type_name(c->getType()) +
                     " cannot be lowered yet");
}

auto FunctionLowering::bool_to_int(ir::Value* b, SourceLocation l) -> ir::Value* {
  check_depth(l);  // its blocks nest one level deeper
  return ir::add_bool_to_int(block_, b, loc(l));
}

auto FunctionLowering::unary(const UnaryOperator* u) -> ir::Value* {
  SourceLocation l = u->getOperatorLoc();
  switch (u->getOpcode()) {
    case UO_Plus: return expr(u->getSubExpr());
    case UO_Minus: {
      ir::Value* v = expr(u->getSubExpr());
      return node("neg", {v}, v->type(), l)->output();
    }
    case UO_LNot: {
      ir::Value* v = expr(u->getSubExpr());
      return node("logical_not", {v}, ir::Type::bool_(), l)->output();
    }
    case UO_Deref:
      // `*this` in a Tensor method (the method forms of ops.h): the object.
      if (isa<CXXThisExpr>(u->getSubExpr()->IgnoreParenImpCasts()) && frame_->this_tensor) return frame_->this_tensor;
      [[fallthrough]];
    case UO_AddrOf:
      unsupported(l, "the operator " + quote(UnaryOperator::getOpcodeStr(u->getOpcode())) +
                         " cannot be lowered: pointers are not supported");
    case UO_PreInc:
    case UO_PreDec:
    case UO_PostInc:
    case UO_PostDec:
      unsupported(l, "the operator " + quote(UnaryOperator::getOpcodeStr(u->getOpcode())) +
                         " inside an expression cannot be lowered; use it as a statement");
    default:
      unsupported(l, "the operator " + quote(UnaryOperator::getOpcodeStr(u->getOpcode())) +
                         " cannot be lowered yet");
  }
}

auto FunctionLowering::binary(const BinaryOperator* b) -> ir::Value* {
  SourceLocation l = b->getOperatorLoc();
  if (b->getOpcode() == BO_LAnd || b->getOpcode() == BO_LOr) return logical(b);
  const char* op = nullptr;
  switch (b->getOpcode()) {
    case BO_Add: op = "add"; break;
    case BO_Sub: op = "sub"; break;
    case BO_Mul: op = "mul"; break;
    case BO_Div: op = "div"; break;
    case BO_Rem: op = "int_mod"; break;
    case BO_LT: op = "lt"; break;
    case BO_LE: op = "le"; break;
    case BO_GT: op = "gt"; break;
    case BO_GE: op = "ge"; break;
    case BO_EQ: op = "eq"; break;
    case BO_NE: op = "ne"; break;
    default:
      unsupported(l, "the operator " + quote(BinaryOperator::getOpcodeStr(b->getOpcode())) +
                         " cannot be lowered yet");
  }
  auto out = ir_type(b->getType());
  if (!out) unsupported(l, "the result type " + type_name(b->getType()) + " cannot be lowered");
  if (b->getOpcode() == BO_Div && out->kind == ir::Type::Kind::Int) op = "int_div";  // C++'s, truncating
  // A float result converts its int operands explicitly: dropping the promotion of
  // both (`static_cast<double>(a) / b`) would make the division an integer one.
  const bool to_float = out->kind == ir::Type::Kind::Float;
  ir::Value* lhs = to_float ? expr(b->getLHS()) : operand(b->getLHS());
  ir::Value* rhs = to_float ? expr(b->getRHS()) : operand(b->getRHS());
  return node(op, {lhs, rhs}, *out, l)->output();
}

auto FunctionLowering::logical(const BinaryOperator* b) -> ir::Value* {
  SourceLocation l = b->getOperatorLoc();
  const bool is_and = b->getOpcode() == BO_LAnd;
  ir::Value* lhs = to_bool(condition(b->getLHS()), l);
  ir::Node* n = block_->append("If");
  n->add_input(lhs);
  n->set_loc(loc(l));
  for (int branch = 0; branch < 2; ++branch) {
    ir::Block* blk = add_block(n, l);
    in_block(blk, [&] {
      const bool short_circuit = is_and ? branch == 1 : branch == 0;
      blk->add_return(short_circuit ? constant(!is_and, l) : to_bool(condition(b->getRHS()), l));
    });
  }
  return n->add_output(ir::Type::bool_());
}

auto FunctionLowering::operand(const Expr* e) -> ir::Value* {
  if (ir::Value* c = fold(e)) return c;
  const Expr* s = strip(e);
  if (const auto* c = dyn_cast<ImplicitCastExpr>(s); c && c->getCastKind() == CK_IntegralToFloating)
    return expr(c->getSubExpr());
  return expr(e);
}

}  // namespace cxxgraph::lower
