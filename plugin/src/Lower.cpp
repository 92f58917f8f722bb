// AST -> IR lowering of one [[graph::static]] function (Lower.h).
#include "Lower.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <optional>
#include <unordered_map>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Basic/Stack.h"
#include "graph/op_table.h"

namespace cxxgraph {

using namespace clang;
namespace ir = graph::ir;

std::string identifier(llvm::StringRef name) {
  std::string out = name.str();
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80) && c != '_') c = '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

namespace {

[[noreturn]] void unsupported(SourceLocation loc, std::string msg) { throw Unsupported{loc, std::move(msg)}; }

std::string type_name(QualType t) { return quote(t.getAsString()); }

bool in_graph_namespace(const DeclContext* dc) {
  const auto* ns = dyn_cast<NamespaceDecl>(dc);
  return ns && ns->getName() == "graph" && isa<TranslationUnitDecl>(ns->getDeclContext());
}

bool is_tensor_record(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = t->getAsCXXRecordDecl();
  return rd && rd->getName() == "Tensor" && in_graph_namespace(rd->getDeclContext());
}

bool is_scalar_record(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = t->getAsCXXRecordDecl();
  return rd && rd->getName() == "Scalar" && in_graph_namespace(rd->getDeclContext());
}

// The IR type of a C++ type, if it is one the subset accepts. Host ints are
// int64 in the graph, so only signed integers (whose overflow is undefined
// anyway) keep their C++ meaning there: unsigned types wrap, and character
// types are not numbers. Likewise host floats are doubles: float and double.
std::optional<ir::Type> ir_type(QualType t) {
  if (is_tensor_record(t)) return ir::Type::tensor();
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* bt = dyn_cast<BuiltinType>(t.getTypePtr());
  if (!bt) return std::nullopt;
  switch (bt->getKind()) {
    case BuiltinType::Bool: return ir::Type::bool_();
    case BuiltinType::Short:
    case BuiltinType::Int:
    case BuiltinType::Long:
    case BuiltinType::LongLong: return ir::Type::int_();
    case BuiltinType::Float:
    case BuiltinType::Double: return ir::Type::float_();
    default: return std::nullopt;
  }
}

// How deep If/Loop blocks may nest. The IR text format reads back at most
// 100 levels (ir/src/parser.cpp) and fusion adds one (a FusionGroup's
// block); real code stays far below either.
constexpr int kMaxBlockDepth = 64;

const char* kAcceptedTypes = "accepted are 'graph::Tensor', bool, signed integers, float and double";

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

bool is_lambda_call(const FunctionDecl* fd) {
  const auto* m = dyn_cast_or_null<CXXMethodDecl>(fd);
  return m && m->getParent()->isLambda();
}

const char* statement_name(const Stmt* s) {
  switch (s->getStmtClass()) {
    case Stmt::BreakStmtClass: return "'break' cannot be lowered yet";
    case Stmt::ContinueStmtClass: return "'continue' cannot be lowered yet";
    case Stmt::SwitchStmtClass: return "'switch' cannot be lowered yet";
    case Stmt::DoStmtClass: return "'do'-'while' loops cannot be lowered yet";
    case Stmt::CXXForRangeStmtClass: return "range-based 'for' loops cannot be lowered yet";
    case Stmt::GotoStmtClass:
    case Stmt::IndirectGotoStmtClass:
    case Stmt::LabelStmtClass: return "'goto' and labels cannot be lowered";
    case Stmt::CXXTryStmtClass: return "'try' blocks cannot be lowered";
    case Stmt::CoreturnStmtClass: return "coroutines cannot be lowered";
    case Stmt::GCCAsmStmtClass:
    case Stmt::MSAsmStmtClass: return "inline assembly cannot be lowered";
    default: return nullptr;
  }
}

const char* expression_name(const Expr* e) {
  switch (e->getStmtClass()) {
    case Stmt::LambdaExprClass: return "lambdas cannot be lowered yet";
    case Stmt::CXXThrowExprClass: return "'throw' cannot be lowered";
    case Stmt::CXXNewExprClass: return "'new' cannot be lowered";
    case Stmt::CXXDeleteExprClass: return "'delete' cannot be lowered";
    case Stmt::CXXThisExprClass: return "'this' cannot be lowered";
    case Stmt::StringLiteralClass: return "string literals cannot be lowered";
    case Stmt::StmtExprClass: return "statement expressions cannot be lowered";
    case Stmt::CoawaitExprClass:
    case Stmt::CoyieldExprClass: return "coroutines cannot be lowered";
    case Stmt::ArraySubscriptExprClass: return "subscripts cannot be lowered yet";
    case Stmt::InitListExprClass: return "this braced initializer cannot be lowered";
    case Stmt::BinaryConditionalOperatorClass: return "the operator '?:' without a middle operand cannot be lowered";
    default: return nullptr;
  }
}

class FunctionLowering {
 public:
  FunctionLowering(ASTContext& ctx, const FunctionDecl* fd) : ctx_(ctx), sm_(ctx.getSourceManager()), fd_(fd) {}

  Lowered run() {
    check_kind();
    Lowered out;
    out.graph = std::make_unique<ir::Graph>(identifier(fd_->getNameAsString()));
    graph_ = out.graph.get();
    block_ = graph_->top();
    for (const ParmVarDecl* p : fd_->parameters()) {
      auto t = ir_type(p->getType());
      if (!t)
        unsupported(p->getLocation(), "parameter " + quote(p->getName()) + " has type " + type_name(p->getType()) +
                                          "; " + kAcceptedTypes);
      if (p->getType()->isReferenceType() && !p->getType().getNonReferenceType().isConstQualified())
        unsupported(p->getLocation(), "parameter " + quote(p->getName()) +
                                          " is a non-const reference; the graph cannot write to it");
      if (p->getName().empty()) continue;  // cannot be read: not a graph input
      define(p, graph_->add_input(*t, identifier(p->getName())));
      out.call_args.push_back(p->getNameAsString());
    }

    const auto* body = cast<CompoundStmt>(fd_->getBody());  // check_kind made sure
    const ReturnStmt* ret = nullptr;
    for (const Stmt* s : body->body()) {
      if (ret) unsupported(s->getBeginLoc(), "code after the final 'return' cannot be lowered");
      if ((ret = dyn_cast<ReturnStmt>(s))) continue;
      stmt(s);
    }
    if (!ret || !ret->getRetValue())
      unsupported(body->getRBracLoc(), "the function must end with 'return <tensor>;'");
    ir::Value* result = expr(ret->getRetValue());
    if (!result->type().is_tensor()) unsupported(ret->getRetValue()->getExprLoc(), "the result must be a tensor");
    graph_->top()->add_return(result);
    for (const auto& name : captures_) out.call_args.push_back(name);
    return out;
  }

 private:
  // What kind of function this is, before anything looks at the body: the
  // body of a template is dependent and must not be evaluated.
  void check_kind() {
    SourceLocation at = fd_->getLocation();
    if (is_lambda_call(fd_)) unsupported(at, "'graph::static' on a lambda is not supported yet");
    if (isa<CXXMethodDecl>(fd_)) unsupported(at, "member functions are not supported yet");
    if (fd_->getDescribedFunctionTemplate() || fd_->isTemplateInstantiation())
      unsupported(at, "function templates are not supported yet");
    if (fd_->isTemplated()) unsupported(at, "functions inside templates are not supported yet");
    if (fd_->isConsteval() || fd_->isConstexpr())
      unsupported(at, std::string(fd_->isConsteval() ? "'consteval'" : "'constexpr'") +
                          " functions cannot be lowered: the dispatch prologue is not a constant expression");
    const Stmt* body = fd_->getBody();
    if (isa_and_nonnull<CoroutineBodyStmt>(body)) unsupported(at, "coroutines cannot be lowered");
    if (isa_and_nonnull<CXXTryStmt>(body))
      unsupported(body->getBeginLoc(), "function-try-blocks cannot be lowered");
    if (!isa_and_nonnull<CompoundStmt>(body)) unsupported(at, "the function has no body to lower");
    if (fd_->isVariadic()) unsupported(at, "variadic functions cannot be lowered");
    // The prologue returns a graph::Tensor local: a reference result would
    // dangle, and decltype(auto) could deduce two different types.
    QualType r = fd_->getReturnType();
    SourceLocation rloc = fd_->getReturnTypeSourceRange().getBegin();
    if (!is_tensor_record(r))
      unsupported(rloc, "the result must be a 'graph::Tensor', not " + type_name(r));
    if (r->isReferenceType())
      unsupported(rloc, "the result must be a 'graph::Tensor' returned by value, not " + type_name(r));
  }

  // ---- environment -----------------------------------------------------
  // Variables are bound to their current value; nullptr means declared but
  // not yet assigned (`Tensor y;` before an if/else assigns it). Globals are
  // not variables of the graph: they are graph inputs, read-only.
  using Env = std::unordered_map<const VarDecl*, ir::Value*>;

  void define(const VarDecl* v, ir::Value* value) {
    if (value) {
      auto t = ir_type(v->getType());
      if (!t || t->kind != value->type().kind)
        unsupported(v->getLocation(), "the value assigned to " + quote(v->getName()) + " is a " +
                                          value->type().str() + ", not the variable's " + type_name(v->getType()));
    }
    if (!env_.count(v)) order_.push_back(v);
    env_[v] = value;
    if (value && value->name().empty()) value->set_name(identifier(v->getName()));
  }

  ir::Value* read(const VarDecl* v, SourceLocation at) {
    auto it = env_.find(v);
    if (it != env_.end()) {
      if (!it->second) unsupported(at, quote(v->getName()) + " may be used before it is assigned on every path");
      return it->second;
    }
    if (auto g = globals_.find(v); g != globals_.end()) return g->second;
    if (v->hasGlobalStorage() && !v->isStaticLocal() && !v->isLocalExternDecl() && is_tensor_record(v->getType())) {
      if (isa<VarTemplateSpecializationDecl>(v))
        unsupported(at, "variable templates cannot be read in a static graph yet");
      // A global tensor: a graph input bound at each call. The prologue names
      // it from the global scope; anonymous and inline namespaces are implied.
      if (const DeclContext* named = hidden_by(v))
        unsupported(at, "the global " + quote(v->getName()) + " in an anonymous namespace cannot be passed to the "
                        "graph: another " + quote(v->getName()) + " in " +
                        (isa<TranslationUnitDecl>(named) ? std::string("the global namespace")
                                                         : quote(cast<NamedDecl>(named)->getQualifiedNameAsString())) +
                        " hides it");
      ir::Value* in = graph_->add_input(ir::Type::tensor(), identifier(v->getName()));
      PrintingPolicy policy(ctx_.getLangOpts());
      policy.SuppressUnwrittenScope = true;
      std::string name;
      llvm::raw_string_ostream os(name);
      v->printQualifiedName(os, policy);
      captures_.push_back("::" + os.str());
      globals_[v] = in;
      return in;
    }
    unsupported(at, quote(v->getName()) + " is not a local, a parameter or a global tensor");
  }

  // For a global in an anonymous namespace: the enclosing named scope, if a
  // declaration of the same name there would win over it when the prologue
  // spells it without the anonymous namespace.
  static const DeclContext* hidden_by(const VarDecl* v) {
    const DeclContext* dc = v->getDeclContext();
    bool anonymous = false;
    while (const auto* ns = dyn_cast<NamespaceDecl>(dc)) {
      if (!ns->isAnonymousNamespace() && !ns->isInline()) break;
      anonymous = anonymous || ns->isAnonymousNamespace();
      dc = dc->getParent();
    }
    if (!anonymous || !isa<NamespaceDecl, TranslationUnitDecl>(dc)) return nullptr;
    for (const NamedDecl* d : dc->getPrimaryContext()->lookup(v->getDeclName()))
      if (d->getCanonicalDecl() != v->getCanonicalDecl()) return dc;
    return nullptr;
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

  template <class T>
  ir::Value* constant(T v, SourceLocation l) {
    ir::Value* c = ir::add_constant(block_, v);
    c->producer()->set_loc(loc(l));
    return c;
  }

  // ---- expressions -----------------------------------------------------
  // Wrappers that change nothing the graph can see: parentheses, no-op and
  // widening casts, temporaries, copies and moves of tensors, conversions to
  // graph::Scalar, braces around one scalar.
  const Expr* strip(const Expr* e) {
    while (true) {
      e = e->IgnoreParens();
      if (const auto* c = dyn_cast<CastExpr>(e); c && passthrough(c)) {
        e = c->getSubExpr();
        continue;
      }
      if (const auto* f = dyn_cast<FullExpr>(e)) { e = f->getSubExpr(); continue; }
      if (const auto* m = dyn_cast<MaterializeTemporaryExpr>(e)) { e = m->getSubExpr(); continue; }
      if (const auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) { e = b->getSubExpr(); continue; }
      if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
        const CXXConstructorDecl* ctor = ce->getConstructor();
        bool through = ce->getNumArgs() >= 1 &&
                       ((is_tensor_record(ce->getType()) && ctor->isCopyOrMoveConstructor()) ||
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

  bool passthrough(const CastExpr* c) {
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

  // A host scalar expression the compiler can evaluate (constexpr values,
  // sizeof, enumerators, calls to consteval functions) becomes a constant.
  ir::Value* fold(const Expr* e) {
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

  // Expressions and statements recurse as deep as the code nests; Clang
  // itself stops a little further (a 2000-term `a + b + ...` is fine).
  void check_stack(SourceLocation at) {
    if (isStackNearlyExhausted()) unsupported(at, "this code is nested too deeply to lower");
  }

  ir::Value* expr(const Expr* e) {
    check_stack(e->getExprLoc());
    if (ir::Value* c = fold(e)) return c;
    e = strip(e);
    SourceLocation l = e->getExprLoc();
    if (ir::Value* c = fold(e)) return c;  // constants behind the conversions strip() removed
    if (const auto* d = dyn_cast<DeclRefExpr>(e)) {
      if (const auto* v = dyn_cast<VarDecl>(d->getDecl())) return read(v, l);
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
    if (const auto* m = dyn_cast<MemberExpr>(e))
      unsupported(m->getMemberLoc(), "the member " + quote(m->getMemberDecl()->getNameAsString()) +
                                         " cannot be read in a static graph yet");
    if (const char* what = expression_name(e)) unsupported(l, what);
    unsupported(l, std::string("this expression (") + e->getStmtClassName() + ") cannot be lowered");
  }

  ir::Value* conversion(const CastExpr* c) {
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
        if (from->isBooleanType() && ir_type(c->getType())) return bool_to_int(expr(c->getSubExpr()), l);
        if (ir_type(from) && ir_type(c->getType()))
          unsupported(l, "the conversion from " + type_name(from) + " to " + type_name(c->getType()) +
                             " may change the value and cannot be lowered");
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

  // C++ bool -> int is 0 or 1; the graph has no conversion op, so an If.
  ir::Value* bool_to_int(ir::Value* b, SourceLocation l) {
    ir::Node* n = block_->append("If");
    n->add_input(b);
    n->set_loc(loc(l));
    for (int64_t v : {int64_t{1}, int64_t{0}}) {
      ir::Block* b = add_block(n, l);
      in_block(b, [&] { b->add_return(constant(v, l)); });
    }
    return n->add_output(ir::Type::int_());
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
      case UO_AddrOf:
      case UO_Deref:
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
        unsupported(l, "the operator " + quote(BinaryOperator::getOpcodeStr(b->getOpcode())) +
                           " cannot be lowered yet");
    }
    auto out = ir_type(b->getType());
    if (!out) unsupported(l, "the result type " + type_name(b->getType()) + " cannot be lowered");
    if (b->getOpcode() == BO_Div && out->kind == ir::Type::Kind::Int)
      unsupported(l, "integer division of host scalars cannot be lowered yet");
    // Operand promotions (int -> double) are implied by the op's float result.
    ir::Value* lhs = operand(b->getLHS());
    ir::Value* rhs = operand(b->getRHS());
    return node(op, {lhs, rhs}, *out, l)->output();
  }

  ir::Value* operand(const Expr* e) {
    if (ir::Value* c = fold(e)) return c;
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
      if (is_lambda_call(callee)) unsupported(l, "calls to lambdas cannot be lowered yet");
      if (const auto* m = dyn_cast_or_null<CXXMethodDecl>(callee);
          m && (m->isCopyAssignmentOperator() || m->isMoveAssignmentOperator()))
        unsupported(l, "an assignment inside an expression cannot be lowered; assign in its own statement");
      if (callee && callee->getCanonicalDecl() == fd_->getCanonicalDecl())
        unsupported(l, "the recursive call to " + quote(callee->getNameAsString()) + " cannot be lowered");
      std::string name = callee ? quote(callee->getQualifiedNameAsString()) : "an indirect callee";
      unsupported(l, "the call to " + name + " cannot be lowered: it is not a graph op");
    }
    std::vector<const Expr*> args;
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c)) args.push_back(m->getImplicitObjectArgument());
    for (unsigned i = 0; i < c->getNumArgs(); ++i) {
      if (isa<CXXDefaultArgExpr>(c->getArg(i)) && op->kind != graph::OpKind::Reduce) continue;
      args.push_back(c->getArg(i));
    }
    if (op->kind == graph::OpKind::Reduce) return reduce(*op, args, l);
    if (static_cast<int>(args.size()) != op->num_inputs)
      unsupported(l, quote(op->name) + " takes " + std::to_string(op->num_inputs) + " operands here");
    std::vector<ir::Value*> in;
    bool any_tensor = false;
    for (const Expr* a : args) {
      in.push_back(expr(a));
      any_tensor = any_tensor || in.back()->type().is_tensor();
    }
    if (!any_tensor) unsupported(l, quote(op->name) + " needs a tensor operand");
    return node(std::string(op->name), in, ir::Type::tensor(), l)->output();
  }

  ir::Value* reduce(const graph::OpInfo& op, const std::vector<const Expr*>& args, SourceLocation l) {
    if (args.empty()) unsupported(l, quote(op.name) + " needs a tensor");
    ir::Value* x = expr(args[0]);
    if (!x->type().is_tensor()) unsupported(l, quote(op.name) + " needs a tensor");
    ir::Node* n = node(std::string(op.name), {x}, ir::Type::tensor(), l);
    if (args.size() >= 2) {
      auto dim = args[1]->getIntegerConstantExpr(ctx_);
      if (!dim) unsupported(args[1]->getExprLoc(), "the dim of " + quote(op.name) + " must be a constant");
      n->attrs()["dim"] = static_cast<int64_t>(dim->getSExtValue());
      bool keepdim = false;
      if (args.size() >= 3 && !args[2]->EvaluateAsBooleanCondition(keepdim, ctx_))
        unsupported(args[2]->getExprLoc(), "keepdim of " + quote(op.name) + " must be a constant");
      n->attrs()["keepdim"] = keepdim;
    }
    return n->output();
  }

  // `c ? a : b` -> If with one output.
  ir::Value* conditional(const ConditionalOperator* c) {
    ir::Value* cond = condition(c->getCond());
    auto out = ir_type(c->getType());
    if (!out) unsupported(c->getExprLoc(), "'?:' of type " + type_name(c->getType()) + " cannot be lowered");
    ir::Node* n = block_->append("If");
    n->add_input(cond);
    n->set_loc(loc(c->getQuestionLoc()));
    for (const Expr* arm : {c->getTrueExpr(), c->getFalseExpr()}) {
      ir::Block* b = add_block(n, c->getQuestionLoc());
      in_block(b, [&] {
        ir::Value* v = expr(arm);
        if (v->type().kind != out->kind)
          unsupported(arm->getExprLoc(), "this operand of '?:' is a " + v->type().str() + ", not a " + out->str());
        b->add_return(v);
      });
    }
    return n->add_output(*out);
  }

  // A condition: a host bool/int, or a tensor tested by its explicit
  // operator bool (the If then reads the one-element tensor).
  ir::Value* condition(const Expr* e) {
    if (ir::Value* c = fold(e)) return c;
    const Expr* s = strip(e);
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(s)) {
      if (isa<CXXConversionDecl>(m->getMethodDecl()) && is_tensor_record(m->getObjectType()))
        return expr(m->getImplicitObjectArgument());
    }
    if (const auto* c = dyn_cast<ImplicitCastExpr>(s);
        c && (c->getCastKind() == CK_IntegralToBoolean || c->getCastKind() == CK_UserDefinedConversion)) {
      if (c->getCastKind() == CK_UserDefinedConversion) {
        const auto* m = dyn_cast<CXXMemberCallExpr>(strip(c->getSubExpr()));
        if (m && isa<CXXConversionDecl>(m->getMethodDecl()) && is_tensor_record(m->getObjectType()))
          return expr(m->getImplicitObjectArgument());
        return expr(e);  // diagnosed by conversion()
      }
      return expr(c->getSubExpr());  // If and Loop test ints directly
    }
    ir::Value* v = expr(e);
    if (v->type().kind == ir::Type::Kind::Float)
      unsupported(e->getExprLoc(), "a floating-point condition cannot be lowered");
    return v;
  }

  // ---- statements ------------------------------------------------------
  void stmt(const Stmt* s) {
    check_stack(s->getBeginLoc());
    if (const auto* c = dyn_cast<CompoundStmt>(s)) {
      for (const Stmt* inner : c->body()) stmt(inner);
      return;
    }
    if (isa<NullStmt>(s)) return;
    if (const auto* a = dyn_cast<AttributedStmt>(s)) return stmt(a->getSubStmt());  // [[likely]]
    if (const auto* d = dyn_cast<DeclStmt>(s)) return decl(d);
    if (const auto* i = dyn_cast<IfStmt>(s)) return if_(i);
    if (const auto* w = dyn_cast<WhileStmt>(s)) return while_(w);
    if (const auto* f = dyn_cast<ForStmt>(s)) return for_(f);
    if (isa<ReturnStmt>(s)) unsupported(s->getBeginLoc(), "an early 'return' cannot be lowered yet");
    if (const auto* e = dyn_cast<Expr>(s)) return expr_stmt(e);
    if (const char* what = statement_name(s)) unsupported(s->getBeginLoc(), what);
    unsupported(s->getBeginLoc(), std::string("this statement (") + s->getStmtClassName() + ") cannot be lowered");
  }

  void decl(const DeclStmt* d) {
    for (const Decl* dd : d->decls()) {
      // Declarations that only name things: nothing to run.
      if (isa<TypedefNameDecl, UsingDecl, UsingDirectiveDecl, UsingEnumDecl, NamespaceAliasDecl, StaticAssertDecl,
              TagDecl, FunctionDecl>(dd))
        continue;
      const auto* v = dyn_cast<VarDecl>(dd);
      if (!v) unsupported(dd->getLocation(), "this declaration cannot be lowered");
      if (isa<DecompositionDecl>(v)) unsupported(v->getLocation(), "structured bindings cannot be lowered yet");
      if (v->isLocalExternDecl()) unsupported(v->getLocation(), "local 'extern' declarations cannot be lowered");
      if (v->isStaticLocal())
        unsupported(v->getLocation(), std::string(v->getTSCSpec() == TSCS_unspecified ? "static" : "thread_local") +
                                          " local variables cannot be lowered");
      const Expr* init = v->getInit();
      if (const auto* lambda = init ? dyn_cast<LambdaExpr>(strip(init)) : nullptr)
        unsupported(lambda->getBeginLoc(), "lambdas cannot be lowered yet");
      if (v->getType()->isReferenceType())
        unsupported(v->getLocation(), "reference variables cannot be lowered yet; use a value");
      if (!ir_type(v->getType()))
        unsupported(v->getLocation(), quote(v->getName()) + " has type " + type_name(v->getType()) +
                                          ", which a static graph cannot hold");
      if (const auto* ce = init ? dyn_cast<CXXConstructExpr>(strip(init)) : nullptr; ce && ce->getNumArgs() == 0)
        init = nullptr;  // `Tensor y;`: assigned later
      if (!init && !is_tensor_record(v->getType()))
        unsupported(v->getLocation(), quote(v->getName()) + " must be initialized");
      define(v, init ? expr(init) : nullptr);
    }
  }

  const VarDecl* assigned_var(const Expr* lhs) {
    const auto* d = dyn_cast<DeclRefExpr>(lhs->IgnoreParenImpCasts());
    const auto* v = d ? dyn_cast<VarDecl>(d->getDecl()) : nullptr;
    if (v && !env_.count(v) && v->hasGlobalStorage())
      unsupported(lhs->getExprLoc(), "the global " + quote(v->getName()) +
                                         " cannot be assigned in a static graph: the graph only reads globals");
    if (!v || !env_.count(v)) unsupported(lhs->getExprLoc(), "only local variables and parameters can be assigned");
    return v;
  }

  // `a = b = c`, `a = b += 1`: the inner assignment's value, else nullptr.
  ir::Value* assignment(const Expr* e) {
    e = strip(e);
    if (const auto* b = dyn_cast<BinaryOperator>(e)) {
      if (b->getOpcode() == BO_Assign) return assign(b->getLHS(), b->getRHS());
      if (const auto* ca = dyn_cast<CompoundAssignOperator>(b)) return compound(ca);
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e); oc && oc->getOperator() == OO_Equal)
      return assign(oc->getArg(0), oc->getArg(1));
    return nullptr;
  }

  ir::Value* assign(const Expr* lhs, const Expr* rhs) {
    const VarDecl* v = assigned_var(lhs);
    ir::Value* value = assignment(rhs);
    if (!value) value = expr(rhs);
    define(v, value);
    return value;
  }

  void expr_stmt(const Expr* e) {
    e = e->IgnoreParens();
    if (const auto* fe = dyn_cast<FullExpr>(e)) e = fe->getSubExpr()->IgnoreParens();
    if (assignment(e)) return;
    if (const auto* b = dyn_cast<BinaryOperator>(e); b && b->getOpcode() == BO_Comma) {
      expr_stmt(b->getLHS());  // `a = a + 1, b = b * 2;` and `++i, ++j` in a for
      expr_stmt(b->getRHS());
      return;
    }
    if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->isIncrementDecrementOp()) {
      const VarDecl* v = assigned_var(u->getSubExpr());
      ir::Value* cur = read(v, u->getExprLoc());
      if (cur->type().kind != ir::Type::Kind::Int) unsupported(u->getExprLoc(), "'++'/'--' apply to integers here");
      SourceLocation l = u->getOperatorLoc();
      return define(v, node(u->isIncrementOp() ? "add" : "sub", {cur, constant(int64_t{1}, l)}, ir::Type::int_(), l)
                           ->output());
    }
    if (const auto* c = dyn_cast<CastExpr>(e); c && c->getCastKind() == CK_ToVoid) e = c->getSubExpr();
    // Anything else is evaluated for nothing: a graph op or a read has no
    // effect to keep, and expr() diagnoses whatever has one (a call that is
    // not an op, throw, new, an assignment it cannot place).
    expr(e);
  }

  ir::Value* compound(const CompoundAssignOperator* ca) {
    const char* op = nullptr;
    switch (ca->getOpcode()) {
      case BO_AddAssign: op = "add"; break;
      case BO_SubAssign: op = "sub"; break;
      case BO_MulAssign: op = "mul"; break;
      case BO_DivAssign: op = "div"; break;
      default:
        unsupported(ca->getOperatorLoc(), "the operator " + quote(BinaryOperator::getOpcodeStr(ca->getOpcode())) +
                                              " cannot be lowered yet");
    }
    const VarDecl* v = assigned_var(ca->getLHS());
    ir::Value* cur = read(v, ca->getExprLoc());
    ir::Value* rhs = operand(ca->getRHS());
    if (cur->type().kind == ir::Type::Kind::Bool)
      unsupported(ca->getOperatorLoc(), "compound assignment to the bool " + quote(v->getName()) + " cannot be lowered");
    if (ca->getOpcode() == BO_DivAssign && cur->type().kind == ir::Type::Kind::Int)
      unsupported(ca->getOperatorLoc(), "integer division of host scalars cannot be lowered yet");
    if (cur->type().kind == ir::Type::Kind::Int && rhs->type().kind == ir::Type::Kind::Float)
      unsupported(ca->getOperatorLoc(), "this assignment truncates a floating-point value to an integer");
    ir::Value* value = node(op, {cur, rhs}, cur->type(), ca->getOperatorLoc())->output();
    define(v, value);
    return value;
  }

  // Runs `f` with block_ = `b` and a copy of the environment; returns that
  // environment afterwards.
  template <class F>
  Env in_block(ir::Block* b, F&& f) {
    ir::Block* saved_block = block_;
    Env saved_env = env_;
    block_ = b;
    ++depth_;
    f();
    --depth_;
    Env result = std::move(env_);
    env_ = std::move(saved_env);
    block_ = saved_block;
    return result;
  }

  // A new block of `n` (an If or Loop at `at`), one level deeper than block_.
  ir::Block* add_block(ir::Node* n, SourceLocation at) {
    if (depth_ + 1 > kMaxBlockDepth)
      unsupported(at, "control flow nested more than " + std::to_string(kMaxBlockDepth) +
                          " levels deep cannot be lowered");
    return n->add_block();
  }

  void if_(const IfStmt* s) {
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
      out->set_name(identifier(v->getName()));
    }
  }

  // Outer variables a statement assigns (the values a Loop must carry).
  void assigned_in(const Stmt* s, std::vector<const VarDecl*>& out) {
    if (!s) return;
    check_stack(s->getBeginLoc());
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
    assigned_in(cond_expr, carried);
    // Keep declaration order so the IR is stable.
    std::vector<const VarDecl*> ordered;
    for (const VarDecl* v : order_)
      if (std::find(carried.begin(), carried.end(), v) != carried.end()) ordered.push_back(v);
    for (const VarDecl* v : ordered)
      if (!env_.at(v))
        unsupported(at, quote(v->getName()) + " must be assigned before the loop that updates it");

    ir::Value* max_trips = constant(std::numeric_limits<int64_t>::max(), at);
    ir::Value* cond0 = condition(cond_expr);
    ir::Node* n = block_->append("Loop");
    n->set_loc(loc(at));
    n->add_input(max_trips);
    n->add_input(cond0);
    for (const VarDecl* v : ordered) n->add_input(env_.at(v));
    ir::Block* b = add_block(n, at);
    b->add_param(ir::Type::int_(), "iter");
    std::vector<ir::Value*> params;
    for (const VarDecl* v : ordered) params.push_back(b->add_param(env_.at(v)->type(), identifier(v->getName())));
    in_block(b, [&] {
      for (size_t i = 0; i < ordered.size(); ++i) env_[ordered[i]] = params[i];
      stmt(body);
      if (inc) expr_stmt(inc);
      b->add_return(condition(cond_expr));
      for (const VarDecl* v : ordered) {
        ir::Value* r = env_.at(v);
        if (!r) unsupported(at, quote(v->getName()) + " is not assigned on every path through the loop");
        b->add_return(r);
      }
    });
    for (const VarDecl* v : ordered) {
      ir::Value* out = n->add_output(env_.at(v)->type());
      define(v, out);
      out->set_name(identifier(v->getName()));
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
  std::unordered_map<const VarDecl*, ir::Value*> globals_;
  std::vector<std::string> captures_;
  int depth_ = 0;  // of block_: 0 for the graph's own block
};

}  // namespace

Lowered lower_function(ASTContext& ctx, const FunctionDecl* fd) { return FunctionLowering(ctx, fd).run(); }

}  // namespace cxxgraph
