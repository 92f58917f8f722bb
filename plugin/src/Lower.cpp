// AST -> IR lowering of one [[graph::static]] function (Lower.h).
#include "Lower.h"

#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "graph/op_table.h"

namespace cxxgraph {

using namespace clang;
namespace ir = graph::ir;

namespace {

[[noreturn]] void unsupported(SourceLocation loc, std::string msg) { throw Unsupported{loc, std::move(msg)}; }

bool is_tensor_record(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = t->getAsCXXRecordDecl();
  if (!rd || rd->getName() != "Tensor") return false;
  const auto* ns = dyn_cast<NamespaceDecl>(rd->getDeclContext());
  return ns && ns->getName() == "graph" && isa<TranslationUnitDecl>(ns->getDeclContext());
}

bool is_scalar_record(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = t->getAsCXXRecordDecl();
  return rd && rd->getName() == "Scalar" && rd->getDeclContext()->isNamespace();
}

// The IR type of a C++ type, if it is one the subset accepts.
std::optional<ir::Type> ir_type(QualType t) {
  if (is_tensor_record(t)) return ir::Type::tensor();
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  if (t->isBooleanType()) return ir::Type::bool_();
  if (t->isIntegerType() && !t->isEnumeralType()) return ir::Type::int_();
  if (t->isRealFloatingType()) return ir::Type::float_();
  return std::nullopt;
}

// The op-table entry a declaration is annotated with (GRAPH_OP), or null.
const graph::OpInfo* annotated_op(const FunctionDecl* fd) {
  if (!fd) return nullptr;
  for (const auto* a : fd->specific_attrs<AnnotateAttr>()) {
    if (a->getAnnotation() != "graph.op" || a->args_size() != 1) continue;
    const auto* lit = dyn_cast<StringLiteral>((*a->args_begin())->IgnoreParenCasts());
    if (lit) return graph::find_op(lit->getString().str());
  }
  return nullptr;
}

// Wrappers that change nothing the graph can see: parentheses, no-op casts,
// temporaries, copies and moves of tensors, conversions to graph::Scalar.
const Expr* strip(const Expr* e) {
  while (true) {
    e = e->IgnoreParens();
    if (const auto* c = dyn_cast<ImplicitCastExpr>(e)) {
      switch (c->getCastKind()) {
        case CK_NoOp:
        case CK_LValueToRValue:
        case CK_ConstructorConversion:
        case CK_IntegralCast:
        case CK_FloatingCast:
          e = c->getSubExpr();
          continue;
        default:
          return e;
      }
    }
    if (const auto* f = dyn_cast<FullExpr>(e)) { e = f->getSubExpr(); continue; }
    if (const auto* m = dyn_cast<MaterializeTemporaryExpr>(e)) { e = m->getSubExpr(); continue; }
    if (const auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) { e = b->getSubExpr(); continue; }
    if (const auto* fc = dyn_cast<CXXFunctionalCastExpr>(e)) {
      if (fc->getCastKind() == CK_NoOp || fc->getCastKind() == CK_ConstructorConversion) {
        e = fc->getSubExpr();
        continue;
      }
      return e;
    }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
      const CXXConstructorDecl* ctor = ce->getConstructor();
      bool passthrough = ce->getNumArgs() >= 1 &&
                         ((is_tensor_record(ce->getType()) && ctor->isCopyOrMoveConstructor()) ||
                          (is_scalar_record(ce->getType()) && ce->getNumArgs() == 1));
      if (passthrough) { e = ce->getArg(0); continue; }
      return e;
    }
    return e;
  }
}

class FunctionLowering {
 public:
  FunctionLowering(ASTContext& ctx, const FunctionDecl* fd) : ctx_(ctx), sm_(ctx.getSourceManager()), fd_(fd) {}

  Lowered run() {
    if (isa<CXXMethodDecl>(fd_))
      unsupported(fd_->getLocation(), "member functions are not supported yet");
    if (fd_->isTemplated() || fd_->isTemplateInstantiation())
      unsupported(fd_->getLocation(), "function templates are not supported yet");
    if (fd_->isVariadic()) unsupported(fd_->getLocation(), "variadic functions cannot be lowered");
    if (!is_tensor_record(fd_->getReturnType()))
      unsupported(fd_->getReturnTypeSourceRange().getBegin(),
                  "the result must be a graph::Tensor, not '" + fd_->getReturnType().getAsString() + "'");

    Lowered out;
    out.graph = std::make_unique<ir::Graph>(fd_->getNameAsString());
    graph_ = out.graph.get();
    block_ = graph_->top();
    for (const ParmVarDecl* p : fd_->parameters()) {
      auto t = ir_type(p->getType());
      if (!t)
        unsupported(p->getLocation(), "parameter '" + p->getNameAsString() + "' has type '" +
                                          p->getType().getAsString() +
                                          "'; accepted are graph::Tensor, integers, floating point and bool");
      if (p->getType()->isReferenceType() && !p->getType().getNonReferenceType().isConstQualified())
        unsupported(p->getLocation(), "parameter '" + p->getNameAsString() +
                                          "' is a non-const reference; the graph cannot write to it");
      if (p->getName().empty()) continue;  // cannot be read: not a graph input
      define(p, graph_->add_input(*t, p->getNameAsString()));
      out.call_args.push_back(p->getNameAsString());
    }

    const auto* body = dyn_cast<CompoundStmt>(fd_->getBody());
    if (!body) unsupported(fd_->getLocation(), "the function has no body to lower");
    const ReturnStmt* ret = nullptr;
    for (const Stmt* s : body->body()) {
      if (ret) unsupported(s->getBeginLoc(), "code after the final 'return' cannot be lowered");
      if ((ret = dyn_cast<ReturnStmt>(s))) continue;
      stmt(s);
    }
    if (!ret || !ret->getRetValue())
      unsupported(body->getRBracLoc(), "the function must end with 'return <tensor>;'");
    graph_->top()->add_return(expr(ret->getRetValue()));
    for (const auto& name : captures_) out.call_args.push_back(name);
    return out;
  }

 private:
  // ---- environment -----------------------------------------------------
  // Variables are bound to their current value; nullptr means declared but
  // not yet assigned (`Tensor y;` before an if/else assigns it).
  using Env = std::unordered_map<const VarDecl*, ir::Value*>;

  void define(const VarDecl* v, ir::Value* value) {
    if (!env_.count(v)) order_.push_back(v);
    env_[v] = value;
    if (value && value->name().empty()) value->set_name(v->getNameAsString());
  }

  ir::Value* read(const VarDecl* v, SourceLocation at) {
    auto it = env_.find(v);
    if (it != env_.end()) {
      if (!it->second)
        unsupported(at, "'" + v->getNameAsString() + "' may be used before it is assigned on every path");
      return it->second;
    }
    if (auto t = ir_type(v->getType()); t && t->is_scalar() && v->isUsableInConstantExpressions(ctx_)) {
      // A constant (constexpr, or const with a constant initializer): its value.
      if (const APValue* val = v->evaluateValue()) {
        ir::Value* c = nullptr;
        if (val->isInt() && t->kind == ir::Type::Kind::Bool) c = ir::add_constant(block_, val->getInt().getBoolValue());
        else if (val->isInt()) c = ir::add_constant(block_, static_cast<int64_t>(val->getInt().getSExtValue()));
        else if (val->isFloat()) c = ir::add_constant(block_, val->getFloat().convertToDouble());
        if (c) {
          c->producer()->set_loc(loc(at));
          return c;
        }
      }
    }
    if (v->hasGlobalStorage() && !v->isStaticLocal() && is_tensor_record(v->getType())) {
      // A global tensor: a graph input bound at each call.
      ir::Value* in = graph_->add_input(ir::Type::tensor(), v->getNameAsString());
      captures_.push_back("::" + v->getQualifiedNameAsString());
      env_[v] = in;
      order_.push_back(v);
      return in;
    }
    unsupported(at, "'" + v->getNameAsString() + "' is not a local, a parameter or a global tensor");
  }

  // ---- nodes -----------------------------------------------------------
  graph::ir::SourceLoc loc(SourceLocation l) const {
    PresumedLoc p = sm_.getPresumedLoc(sm_.getFileLoc(l));
    if (p.isInvalid()) return {};
    return {p.getFilename(), static_cast<int>(p.getLine()), static_cast<int>(p.getColumn())};
  }

  ir::Node* node(const std::string& op, const std::vector<ir::Value*>& inputs, ir::Type out, SourceLocation l) {
    ir::Node* n = block_->append(op);
    for (ir::Value* v : inputs) n->add_input(v);
    n->add_output(std::move(out));
    n->set_loc(loc(l));
    return n;
  }

  ir::Value* constant_int(int64_t v, SourceLocation l) {
    ir::Value* c = ir::add_constant(block_, v);
    c->producer()->set_loc(loc(l));
    return c;
  }

  // ---- expressions -----------------------------------------------------
  ir::Value* expr(const Expr* e) {
    e = strip(e);
    SourceLocation l = e->getExprLoc();
    if (const auto* d = dyn_cast<DeclRefExpr>(e)) {
      if (const auto* v = dyn_cast<VarDecl>(d->getDecl())) return read(v, l);
      unsupported(l, "'" + d->getDecl()->getNameAsString() + "' cannot be used in a static graph");
    }
    if (const auto* i = dyn_cast<IntegerLiteral>(e)) {
      ir::Value* c = ir::add_constant(block_, static_cast<int64_t>(i->getValue().getSExtValue()));
      c->producer()->set_loc(loc(l));
      return c;
    }
    if (const auto* f = dyn_cast<FloatingLiteral>(e)) {
      ir::Value* c = ir::add_constant(block_, f->getValueAsApproximateDouble());
      c->producer()->set_loc(loc(l));
      return c;
    }
    if (const auto* b = dyn_cast<CXXBoolLiteralExpr>(e)) {
      ir::Value* c = ir::add_constant(block_, b->getValue());
      c->producer()->set_loc(loc(l));
      return c;
    }
    if (const auto* c = dyn_cast<ImplicitCastExpr>(e)) return cast(c);
    if (const auto* u = dyn_cast<UnaryOperator>(e)) return unary(u);
    if (const auto* b = dyn_cast<BinaryOperator>(e)) {
      if (b->isAssignmentOp())
        unsupported(l, "an assignment inside an expression cannot be lowered; assign in its own statement");
      return binary(b);
    }
    if (const auto* c = dyn_cast<ConditionalOperator>(e)) return conditional(c);
    if (const auto* c = dyn_cast<CallExpr>(e)) return call(c);
    unsupported(l, std::string("this expression (") + e->getStmtClassName() + ") cannot be lowered");
  }

  ir::Value* cast(const ImplicitCastExpr* c) {
    SourceLocation l = c->getExprLoc();
    switch (c->getCastKind()) {
      case CK_IntegralToFloating:
        if (auto v = c->getSubExpr()->getIntegerConstantExpr(ctx_)) {
          ir::Value* f = ir::add_constant(block_, static_cast<double>(v->getSExtValue()));
          f->producer()->set_loc(loc(l));
          return f;
        }
        unsupported(l, "an implicit conversion of an integer variable to floating point cannot be lowered yet");
      case CK_IntegralToBoolean:
      case CK_FloatingToBoolean: {
        ir::Value* v = expr(c->getSubExpr());
        ir::Value* zero = c->getCastKind() == CK_IntegralToBoolean ? constant_int(0, l)
                                                                   : ir::add_constant(block_, 0.0);
        return node("ne", {v, zero}, ir::Type::bool_(), l)->output();
      }
      default:
        unsupported(l, std::string("the conversion '") + c->getCastKindName() + "' cannot be lowered yet");
    }
  }

  ir::Value* unary(const UnaryOperator* u) {
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
      default:
        unsupported(l, std::string("the operator '") + UnaryOperator::getOpcodeStr(u->getOpcode()).str() +
                           "' cannot be lowered here");
    }
  }

  // Host scalar arithmetic and comparisons (tensor operators are calls).
  ir::Value* binary(const BinaryOperator* b) {
    SourceLocation l = b->getOperatorLoc();
    const char* op = nullptr;
    switch (b->getOpcode()) {
      case BO_Add: op = "add"; break;
      case BO_Sub: op = "sub"; break;
      case BO_Mul: op = "mul"; break;
      case BO_Div: op = "div"; break;
      case BO_LT: op = "lt"; break;
      case BO_LE: op = "le"; break;
      case BO_GT: op = "gt"; break;
      case BO_GE: op = "ge"; break;
      case BO_EQ: op = "eq"; break;
      case BO_NE: op = "ne"; break;
      default:
        unsupported(l, "the operator '" + BinaryOperator::getOpcodeStr(b->getOpcode()).str() +
                           "' cannot be lowered yet");
    }
    auto out = ir_type(b->getType());
    if (!out) unsupported(l, "the result type '" + b->getType().getAsString() + "' cannot be lowered");
    if (b->getOpcode() == BO_Div && out->kind == ir::Type::Kind::Int)
      unsupported(l, "integer division of host scalars cannot be lowered yet");
    // Operand promotions (int -> double) are implied by the op's float result.
    ir::Value* lhs = operand(b->getLHS());
    ir::Value* rhs = operand(b->getRHS());
    return node(op, {lhs, rhs}, *out, l)->output();
  }

  ir::Value* operand(const Expr* e) {
    const Expr* s = strip(e);
    if (const auto* c = dyn_cast<ImplicitCastExpr>(s); c && c->getCastKind() == CK_IntegralToFloating)
      return expr(c->getSubExpr());
    return expr(e);
  }

  ir::Value* call(const CallExpr* c) {
    SourceLocation l = c->getExprLoc();
    const FunctionDecl* callee = c->getDirectCallee();
    const graph::OpInfo* op = annotated_op(callee);
    if (!op) {
      std::string name = callee ? callee->getQualifiedNameAsString() : "an indirect callee";
      unsupported(l, "the call to '" + name + "' cannot be lowered: it is not a graph op");
    }
    std::vector<const Expr*> args;
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c)) args.push_back(m->getImplicitObjectArgument());
    for (unsigned i = 0; i < c->getNumArgs(); ++i) {
      if (isa<CXXDefaultArgExpr>(c->getArg(i)) && op->kind != graph::OpKind::Reduce) continue;
      args.push_back(c->getArg(i));
    }
    if (op->kind == graph::OpKind::Reduce) return reduce(*op, args, l);
    if (static_cast<int>(args.size()) != op->num_inputs)
      unsupported(l, "'" + std::string(op->name) + "' takes " + std::to_string(op->num_inputs) + " operands here");
    std::vector<ir::Value*> in;
    bool any_tensor = false;
    for (const Expr* a : args) {
      in.push_back(expr(a));
      any_tensor = any_tensor || in.back()->type().is_tensor();
    }
    if (!any_tensor) unsupported(l, "'" + std::string(op->name) + "' needs a tensor operand");
    return node(std::string(op->name), in, ir::Type::tensor(), l)->output();
  }

  ir::Value* reduce(const graph::OpInfo& op, const std::vector<const Expr*>& args, SourceLocation l) {
    ir::Value* x = expr(args.at(0));
    if (!x->type().is_tensor()) unsupported(l, "'" + std::string(op.name) + "' needs a tensor");
    ir::Node* n = node(std::string(op.name), {x}, ir::Type::tensor(), l);
    if (args.size() >= 2) {
      auto dim = args[1]->getIntegerConstantExpr(ctx_);
      if (!dim) unsupported(args[1]->getExprLoc(), "the dim of '" + std::string(op.name) + "' must be a constant");
      n->attrs()["dim"] = static_cast<int64_t>(dim->getSExtValue());
      bool keepdim = false;
      if (args.size() >= 3 && !args[2]->EvaluateAsBooleanCondition(keepdim, ctx_))
        unsupported(args[2]->getExprLoc(), "keepdim of '" + std::string(op.name) + "' must be a constant");
      n->attrs()["keepdim"] = keepdim;
    }
    return n->output();
  }

  // `c ? a : b` -> If with one output.
  ir::Value* conditional(const ConditionalOperator* c) {
    ir::Value* cond = condition(c->getCond());
    auto out = ir_type(c->getType());
    if (!out) unsupported(c->getExprLoc(), "'?:' of type '" + c->getType().getAsString() + "' cannot be lowered");
    ir::Node* n = block_->append("If");
    n->add_input(cond);
    n->set_loc(loc(c->getQuestionLoc()));
    for (const Expr* arm : {c->getTrueExpr(), c->getFalseExpr()}) {
      ir::Block* saved = block_;
      block_ = n->add_block();
      block_->add_return(expr(arm));
      block_ = saved;
    }
    return n->add_output(*out);
  }

  // A condition: a host bool/int, or a tensor tested by its explicit
  // operator bool (the If then reads the one-element tensor).
  ir::Value* condition(const Expr* e) {
    const Expr* s = strip(e);
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(s)) {
      if (isa<CXXConversionDecl>(m->getMethodDecl()) && is_tensor_record(m->getObjectType()))
        return expr(m->getImplicitObjectArgument());
    }
    if (const auto* c = dyn_cast<ImplicitCastExpr>(s);
        c && (c->getCastKind() == CK_IntegralToBoolean || c->getCastKind() == CK_UserDefinedConversion)) {
      if (c->getCastKind() == CK_UserDefinedConversion) return condition(c->getSubExpr());
      return expr(c->getSubExpr());  // If and Loop test ints directly
    }
    ir::Value* v = expr(e);
    if (v->type().kind == ir::Type::Kind::Float) unsupported(e->getExprLoc(), "a floating-point condition cannot be lowered");
    return v;
  }

  // ---- statements ------------------------------------------------------
  void stmt(const Stmt* s) {
    if (const auto* c = dyn_cast<CompoundStmt>(s)) {
      for (const Stmt* inner : c->body()) stmt(inner);
      return;
    }
    if (isa<NullStmt>(s)) return;
    if (const auto* d = dyn_cast<DeclStmt>(s)) return decl(d);
    if (const auto* i = dyn_cast<IfStmt>(s)) return if_(i);
    if (const auto* w = dyn_cast<WhileStmt>(s)) return while_(w);
    if (const auto* f = dyn_cast<ForStmt>(s)) return for_(f);
    if (isa<ReturnStmt>(s)) unsupported(s->getBeginLoc(), "an early 'return' cannot be lowered yet");
    if (const auto* e = dyn_cast<Expr>(s)) return expr_stmt(e);
    unsupported(s->getBeginLoc(), std::string("this statement (") + s->getStmtClassName() + ") cannot be lowered");
  }

  void decl(const DeclStmt* d) {
    for (const Decl* dd : d->decls()) {
      const auto* v = dyn_cast<VarDecl>(dd);
      if (!v) unsupported(dd->getLocation(), "only variable declarations can be lowered");
      if (v->isStaticLocal()) unsupported(v->getLocation(), "static local variables cannot be lowered");
      if (v->getType()->isReferenceType())
        unsupported(v->getLocation(), "reference variables cannot be lowered yet; use a value");
      if (!ir_type(v->getType()))
        unsupported(v->getLocation(), "'" + v->getNameAsString() + "' has type '" + v->getType().getAsString() +
                                          "', which a static graph cannot hold");
      const Expr* init = v->getInit();
      if (const auto* ce = init ? dyn_cast<CXXConstructExpr>(strip(init)) : nullptr; ce && ce->getNumArgs() == 0)
        init = nullptr;  // `Tensor y;`: assigned later
      if (!init && !is_tensor_record(v->getType()))
        unsupported(v->getLocation(), "'" + v->getNameAsString() + "' must be initialized");
      define(v, init ? expr(init) : nullptr);
    }
  }

  const VarDecl* assigned_var(const Expr* lhs) {
    const auto* d = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts());
    const auto* v = d ? dyn_cast<VarDecl>(d->getDecl()) : nullptr;
    if (!v || !env_.count(v))
      unsupported(lhs->getExprLoc(), "only local variables and parameters can be assigned");
    return v;
  }

  void expr_stmt(const Expr* e) {
    e = e->IgnoreParens();
    if (const auto* fe = dyn_cast<FullExpr>(e)) e = fe->getSubExpr()->IgnoreParens();
    if (const auto* b = dyn_cast<BinaryOperator>(e)) {
      if (b->getOpcode() == BO_Assign) return define(assigned_var(b->getLHS()), expr(b->getRHS()));
      if (const auto* ca = dyn_cast<CompoundAssignOperator>(b)) return compound(ca);
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e); oc && oc->getOperator() == OO_Equal)
      return define(assigned_var(oc->getArg(0)), expr(oc->getArg(1)));
    if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->isIncrementDecrementOp()) {
      const VarDecl* v = assigned_var(u->getSubExpr());
      ir::Value* cur = read(v, u->getExprLoc());
      if (cur->type().kind != ir::Type::Kind::Int) unsupported(u->getExprLoc(), "'++'/'--' apply to integers here");
      SourceLocation l = u->getOperatorLoc();
      return define(v, node(u->isIncrementOp() ? "add" : "sub", {cur, constant_int(1, l)}, ir::Type::int_(), l)->output());
    }
    // A call whose result is dropped: an op is pure (nothing to keep); any
    // other call gets the diagnostic for calls.
    if (isa<CallExpr>(strip(e))) {
      expr(e);
      return;
    }
    unsupported(e->getExprLoc(), "this statement has effects a static graph cannot keep (only assignments and "
                                 "declarations are lowered)");
  }

  void compound(const CompoundAssignOperator* ca) {
    const char* op = nullptr;
    switch (ca->getOpcode()) {
      case BO_AddAssign: op = "add"; break;
      case BO_SubAssign: op = "sub"; break;
      case BO_MulAssign: op = "mul"; break;
      case BO_DivAssign: op = "div"; break;
      default:
        unsupported(ca->getOperatorLoc(), "the operator '" + BinaryOperator::getOpcodeStr(ca->getOpcode()).str() +
                                              "' cannot be lowered yet");
    }
    const VarDecl* v = assigned_var(ca->getLHS());
    ir::Value* cur = read(v, ca->getExprLoc());
    ir::Value* rhs = operand(ca->getRHS());
    if (ca->getOpcode() == BO_DivAssign && cur->type().kind == ir::Type::Kind::Int)
      unsupported(ca->getOperatorLoc(), "integer division of host scalars cannot be lowered yet");
    if (cur->type().kind == ir::Type::Kind::Int && rhs->type().kind == ir::Type::Kind::Float)
      unsupported(ca->getOperatorLoc(), "this assignment truncates a floating-point value to an integer");
    define(v, node(op, {cur, rhs}, cur->type(), ca->getOperatorLoc())->output());
  }

  // Runs `f` with block_ = `b` and a copy of the environment; returns that
  // environment afterwards.
  template <class F>
  Env in_block(ir::Block* b, F&& f) {
    ir::Block* saved_block = block_;
    Env saved_env = env_;
    block_ = b;
    f();
    Env result = std::move(env_);
    env_ = std::move(saved_env);
    block_ = saved_block;
    return result;
  }

  void if_(const IfStmt* s) {
    if (s->getInit() || s->getConditionVariable())
      unsupported(s->getBeginLoc(), "an 'if' with an initializer or a declaration cannot be lowered yet");
    if (s->isConsteval() || s->isConstexpr())
      unsupported(s->getBeginLoc(), "'if constexpr' / 'if consteval' cannot be lowered yet");
    ir::Value* cond = condition(s->getCond());
    ir::Node* n = block_->append("If");
    n->add_input(cond);
    n->set_loc(loc(s->getIfLoc()));
    ir::Block* then_b = n->add_block();
    ir::Block* else_b = n->add_block();
    Env then_env = in_block(then_b, [&] { stmt(s->getThen()); });
    Env else_env = in_block(else_b, [&] { if (s->getElse()) stmt(s->getElse()); });
    // Outputs: the outer variables either branch rebinds.
    for (const VarDecl* v : std::vector<const VarDecl*>(order_)) {
      auto outer = env_.find(v);
      if (outer == env_.end()) continue;
      ir::Value* t = then_env.at(v);
      ir::Value* e = else_env.at(v);
      if (t == outer->second && e == outer->second) continue;
      if (!t || !e) {  // assigned on one path only: unusable afterwards
        env_[v] = nullptr;
        continue;
      }
      then_b->add_return(t);
      else_b->add_return(e);
      ir::Value* out = n->add_output(t->type());
      define(v, out);
      out->set_name(v->getNameAsString());
    }
  }

  // Outer variables a statement assigns (the values a Loop must carry).
  void assigned_in(const Stmt* s, std::vector<const VarDecl*>& out) {
    if (!s) return;
    const Expr* lhs = nullptr;
    if (const auto* b = dyn_cast<BinaryOperator>(s); b && b->isAssignmentOp()) lhs = b->getLHS();
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(s); oc && oc->isAssignmentOp()) lhs = oc->getArg(0);
    if (const auto* u = dyn_cast<UnaryOperator>(s); u && u->isIncrementDecrementOp()) lhs = u->getSubExpr();
    if (lhs)
      if (const auto* d = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts()))
        if (const auto* v = dyn_cast<VarDecl>(d->getDecl()); v && env_.count(v) &&
                                                               std::find(out.begin(), out.end(), v) == out.end())
          out.push_back(v);
    for (const Stmt* c : s->children()) assigned_in(c, out);
  }

  // The Loop for `while (cond) body` (and `for`, with `inc` after the body).
  void loop(const Expr* cond_expr, const Stmt* body, const Expr* inc, SourceLocation at) {
    std::vector<const VarDecl*> carried;
    assigned_in(body, carried);
    assigned_in(inc, carried);
    // Keep declaration order so the IR is stable.
    std::vector<const VarDecl*> ordered;
    for (const VarDecl* v : order_)
      if (std::find(carried.begin(), carried.end(), v) != carried.end()) ordered.push_back(v);
    for (const VarDecl* v : ordered)
      if (!env_.at(v))
        unsupported(at, "'" + v->getNameAsString() + "' must be assigned before the loop that updates it");

    ir::Value* max_trips = constant_int(std::numeric_limits<int64_t>::max(), at);
    ir::Value* cond0 = condition(cond_expr);
    ir::Node* n = block_->append("Loop");
    n->set_loc(loc(at));
    n->add_input(max_trips);
    n->add_input(cond0);
    for (const VarDecl* v : ordered) n->add_input(env_.at(v));
    ir::Block* b = n->add_block();
    b->add_param(ir::Type::int_(), "iter");
    std::vector<ir::Value*> params;
    for (const VarDecl* v : ordered) params.push_back(b->add_param(env_.at(v)->type(), v->getNameAsString()));
    std::vector<ir::Value*> rets;
    in_block(b, [&] {
      for (size_t i = 0; i < ordered.size(); ++i) env_[ordered[i]] = params[i];
      stmt(body);
      if (inc) expr_stmt(inc);
      b->add_return(condition(cond_expr));
      for (const VarDecl* v : ordered) {
        ir::Value* r = env_.at(v);
        if (!r) unsupported(at, "'" + v->getNameAsString() + "' is not assigned on every path through the loop");
        b->add_return(r);
      }
    });
    for (const VarDecl* v : ordered) {
      ir::Value* out = n->add_output(env_.at(v)->type());
      define(v, out);
      out->set_name(v->getNameAsString());
    }
  }

  void while_(const WhileStmt* s) {
    if (s->getConditionVariable())
      unsupported(s->getBeginLoc(), "a 'while' with a declaration in its condition cannot be lowered yet");
    loop(s->getCond(), s->getBody(), nullptr, s->getWhileLoc());
  }

  void for_(const ForStmt* s) {
    if (!s->getCond()) unsupported(s->getForLoc(), "a 'for' without a condition cannot be lowered");
    if (s->getConditionVariable())
      unsupported(s->getBeginLoc(), "a 'for' with a declaration in its condition cannot be lowered yet");
    if (s->getInit()) stmt(s->getInit());
    loop(s->getCond(), s->getBody(), s->getInc(), s->getForLoc());
  }

  ASTContext& ctx_;
  const SourceManager& sm_;
  const FunctionDecl* fd_;
  ir::Graph* graph_ = nullptr;
  ir::Block* block_ = nullptr;
  Env env_;
  std::vector<const VarDecl*> order_;
  std::vector<std::string> captures_;
};

}  // namespace

Lowered lower_function(ASTContext& ctx, const FunctionDecl* fd) { return FunctionLowering(ctx, fd).run(); }

}  // namespace cxxgraph
