// AST -> IR lowering of one [[graph::static]] function (Lower.h).
#include "Lower.h"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <optional>
#include <unordered_map>
#include <unordered_set>

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
#include "graph/ir/value_primitives.h"

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

// std::vector<graph::Tensor>: a `list` value in the graph.
bool is_tensor_vector(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = dyn_cast_or_null<ClassTemplateSpecializationDecl>(t->getAsCXXRecordDecl());
  if (!rd || rd->getName() != "vector" || !rd->isInStdNamespace()) return false;
  const TemplateArgumentList& args = rd->getTemplateArgs();
  return args.size() >= 1 && args[0].getKind() == TemplateArgument::Type && is_tensor_record(args[0].getAsType());
}

// graph::Shape (graph::SmallVector<int64_t, N>) or a std::vector of a signed
// integer: an int list. A local one (`auto s = x.sizes();`) is a 1-D int64
// tensor in the graph (ir/value_primitives.h), which a run-time list
// attribute reads.
bool is_int_list(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = dyn_cast_or_null<ClassTemplateSpecializationDecl>(t->getAsCXXRecordDecl());
  if (!rd || !rd->getIdentifier()) return false;
  const bool vec = rd->getName() == "vector" && rd->isInStdNamespace();
  const bool small = rd->getName() == "SmallVector" && in_graph_namespace(rd->getDeclContext());
  if (!vec && !small) return false;
  const TemplateArgumentList& args = rd->getTemplateArgs();
  if (args.size() < 1 || args[0].getKind() != TemplateArgument::Type) return false;
  const auto* bt = dyn_cast<BuiltinType>(args[0].getAsType().getCanonicalType().getTypePtr());
  return bt && (bt->getKind() == BuiltinType::Int || bt->getKind() == BuiltinType::Long ||
                bt->getKind() == BuiltinType::LongLong);
}

// std::tuple<...> or std::pair<...>: its element types, else nullopt.
std::optional<std::vector<QualType>> tuple_elements(QualType t) {
  t = t.getNonReferenceType().getCanonicalType().getUnqualifiedType();
  const auto* rd = dyn_cast_or_null<ClassTemplateSpecializationDecl>(t->getAsCXXRecordDecl());
  if (!rd || !rd->isInStdNamespace() || (rd->getName() != "tuple" && rd->getName() != "pair")) return std::nullopt;
  std::vector<QualType> out;
  for (const TemplateArgument& a : rd->getTemplateArgs().asArray()) {
    if (a.getKind() == TemplateArgument::Type) out.push_back(a.getAsType());
    else if (a.getKind() == TemplateArgument::Pack)
      for (const TemplateArgument& p : a.pack_elements()) out.push_back(p.getAsType());
  }
  return out;
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
  if (is_tensor_vector(t)) return ir::Type::list();
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

const char* kAcceptedTypes =
    "accepted are 'graph::Tensor', 'std::vector<graph::Tensor>', bool, signed integers, float and double";

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

// The lowering keeps, per C++ variable, its current SSA value. Early exits
// (`return`, `break`, `continue`) are lowered structurally: three bool flags
// per function being lowered, ordinary variables of the environment:
//   returned  the function has returned (its result values are bound);
//   skip      the rest of the current body is skipped (return, break or
//             continue happened);
//   stop      the innermost loop stops after this iteration (return, break).
// After a statement that may have set `skip`, the statements that follow run
// in the else-block of an If on it; a loop that may stop tests `stop` before
// its increment and its condition; `returned` and the results are carried
// out of loops and Ifs like any variable. While a flag is a constant the
// lowering folds it (no If is emitted), so code without early exits lowers to
// the same graph as before; the constants it leaves unused are removed at
// the end.
class FunctionLowering {
 public:
  FunctionLowering(ASTContext& ctx, const FunctionDecl* fd) : ctx_(ctx), sm_(ctx.getSourceManager()), fd_(fd) {}

  Lowered run() {
    check_kind();
    Lowered out;
    out.graph = std::make_unique<ir::Graph>(identifier(fd_->getNameAsString()));
    graph_ = out.graph.get();
    block_ = graph_->top();
    Frame frame(fd_, isa<CXXMethodDecl>(fd_) && cast<CXXMethodDecl>(fd_)->isInstance() ? "this" : "");
    frame.results = result_types(fd_->getReturnType(), fd_->getReturnTypeSourceRange().getBegin(),
                                 &out.result_type);
    for (const ParmVarDecl* p : fd_->parameters()) {
      if (auto elems = tuple_elements(p->getType()); elems && !p->getName().empty()) {
        // One graph input per element, passed by the prologue as std::get<i>(p).
        tuple_param(p);
        const TupleVar& tv = declare_tuple(p, *elems, p->getLocation());
        for (size_t i = 0; i < tv.keys.size(); ++i) {
          define(tv.keys[i], graph_->add_input(tv.types[i], identifier(key_name(tv.keys[i]))));
          out.call_args.push_back("::std::get<" + std::to_string(i) + ">(" + p->getNameAsString() + ")");
        }
        continue;
      }
      // An int list (`const Shape&`, `std::vector<int64_t>`): the prologue passes it as a 1-D int64 tensor.
      auto t = is_int_list(p->getType()) ? std::optional(ir::Type::tensor(graph::DType::Int64, {ir::Dim::unknown()}))
                                         : ir_type(p->getType());
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

    for (ir::Value* r : function_body(frame)) graph_->top()->add_return(r);
    for (const auto& name : captures_) out.call_args.push_back(name);
    remove_unused_flags();
    return out;
  }

  // One static region of a function split by graph breaks (Lower.h).
  Lowered run_region(const Region& region) {
    check_kind();
    Lowered out;
    out.graph = std::make_unique<ir::Graph>(identifier(fd_->getNameAsString()) + "_region" +
                                            std::to_string(region.index));
    graph_ = out.graph.get();
    block_ = graph_->top();
    Frame frame(fd_, isa<CXXMethodDecl>(fd_) && cast<CXXMethodDecl>(fd_)->isInstance() ? "this" : "");
    if (region.last)
      frame.results = result_types(fd_->getReturnType(), fd_->getReturnTypeSourceRange().getBegin(),
                                   &out.result_type);
    frame.range = {region.begin, region.end};
    for (const ValueDecl* v : region.inputs) {
      const auto* var = dyn_cast<VarDecl>(v);
      if (auto elems = tuple_elements(v->getType()); elems && var) {
        // One graph input per element, passed as std::get<i>(t).
        const TupleVar& tv = declare_tuple(var, *elems, var->getLocation());
        for (size_t i = 0; i < tv.keys.size(); ++i) {
          define(tv.keys[i], graph_->add_input(tv.types[i], identifier(key_name(tv.keys[i]))));
          out.call_args.push_back("::std::get<" + std::to_string(i) + ">(" + v->getNameAsString() + ")");
        }
        continue;
      }
      auto t = ir_type(v->getType());
      if (!t)
        throw Unsupported{v->getLocation(), quote(v->getName()) + " cannot cross a graph break: " + kAcceptedTypes,
                          {}, /*breakable=*/false};
      if (!var) synthetic_[v] = v->getName().str();  // a structured binding
      define(v, graph_->add_input(*t, identifier(v->getName())));
      out.call_args.push_back(v->getNameAsString());
    }
    std::vector<ir::Value*> results = function_body(frame);
    if (region.last) {
      for (ir::Value* r : results) graph_->top()->add_return(r);
    } else {
      std::string types;
      size_t index = 0;
      auto output = [&](ir::Value* value, QualType t) {
        graph_->top()->add_return(value);
        std::string spelling = value->type().is_tensor() ? "::graph::Tensor"
                               : value->type().is_list()
                                   ? "::std::vector<::graph::Tensor>"
                                   : t.getNonReferenceType().getCanonicalType().getUnqualifiedType().getAsString(
                                         ctx_.getPrintingPolicy());
        types += (types.empty() ? "" : ", ") + spelling;
        return "::std::get<" + std::to_string(index++) + ">(_graph_o)";
      };
      for (const ValueDecl* v : region.outputs) {
        if (auto elems = tuple_elements(v->getType()); elems && tuples_.count(v)) {
          const TupleVar& tv = tuples_.at(v);
          std::string args;
          for (size_t i = 0; i < tv.keys.size(); ++i)
            args += (args.empty() ? "" : ", ") + output(read_key(resolve(tv.keys[i]), region.boundary), (*elems)[i]);
          out.outputs.push_back(*break_type(v->getType(), ctx_.getPrintingPolicy()) + "(" + args + ")");
          continue;
        }
        // `Tensor y;` not assigned yet (an island after the region assigns
        // it): the next piece gets an undefined tensor, as in C++.
        if (Key k = resolve(v); is_tensor_record(v->getType()) && env_.count(k) && !env_.at(k) &&
                                !partial_.count(k) && !maybe_undefined_.count(k)) {
          out.outputs.push_back("::graph::Tensor()");
          continue;
        }
        out.outputs.push_back(output(read(v, region.boundary), v->getType()));
      }
      out.result_type = "::std::tuple<" + types + ">";
    }
    for (const auto& name : captures_) out.call_args.push_back(name);
    remove_unused_flags();
    return out;
  }

 private:
  // One function being lowered: the annotated one, or a callee inlined into it.
  struct Frame {
    Frame(const FunctionDecl* f, std::string self) : fd(f), this_ptr(std::move(self)) {}
    const FunctionDecl* fd;
    std::string this_ptr;  // `this` as the prologue spells it; empty without one
    std::vector<ir::Type> results;
    // Their addresses are the keys of the flags and results in the environment.
    char returned = 0, skip = 0, stop = 0;
    std::deque<char> slots;
    // A static region's statements instead of the whole body (run_region).
    std::optional<std::pair<Region::StmtIt, Region::StmtIt>> range = std::nullopt;
  };

  // What kind of function this is, before anything looks at the body: the
  // body of a template is dependent and must not be evaluated.
  void check_kind() {
    SourceLocation at = fd_->getLocation();
    if (is_lambda_call(fd_)) unsupported(at, "'graph::static' on a lambda is not supported yet");
    if (isa<CXXConstructorDecl, CXXDestructorDecl, CXXConversionDecl>(fd_))
      unsupported(at, "constructors, destructors and conversion functions cannot be lowered");
    if (fd_->getDescribedFunctionTemplate() || fd_->isTemplateInstantiation())
      unsupported(at, "function templates are not supported yet");
    if (fd_->isTemplated()) unsupported(at, "functions inside templates are not supported yet");
    if (const auto* m = dyn_cast<CXXMethodDecl>(fd_); m && m->getParent()->isLocalClass())
      unsupported(at, "member functions of local classes are not supported yet");
    if (fd_->isConsteval() || fd_->isConstexpr())
      unsupported(at, std::string(fd_->isConsteval() ? "'consteval'" : "'constexpr'") +
                          " functions cannot be lowered: the dispatch prologue is not a constant expression");
    const Stmt* body = fd_->getBody();
    if (isa_and_nonnull<CoroutineBodyStmt>(body)) unsupported(at, "coroutines cannot be lowered");
    if (isa_and_nonnull<CXXTryStmt>(body))
      unsupported(body->getBeginLoc(), "function-try-blocks cannot be lowered");
    if (!isa_and_nonnull<CompoundStmt>(body)) unsupported(at, "the function has no body to lower");
    if (fd_->isVariadic()) unsupported(at, "variadic functions cannot be lowered");
  }

  // The graph outputs a result of type `r` becomes, and (when `spelling` is
  // given) how the prologue names that type. A Tensor, a host scalar, a
  // std::vector<Tensor> (one list), or a std::tuple/std::pair of tensors and
  // scalars (one output each), returned by value.
  std::vector<ir::Type> result_types(QualType r, SourceLocation at, std::string* spelling) {
    const char* accepted = "; accepted are 'graph::Tensor', host scalars, 'std::vector<graph::Tensor>' and "
                           "'std::tuple'/'std::pair' of tensors and scalars, returned by value";
    if (r->isReferenceType())
      unsupported(at, "the result must be a 'graph::Tensor' returned by value, not " + type_name(r));
    auto one = [&](QualType t) -> std::pair<ir::Type, std::string> {
      auto it = ir_type(t);
      if (!it || t->isReferenceType())
        unsupported(at, "the result must be a 'graph::Tensor', not " + type_name(r) + accepted);
      if (it->is_tensor()) return {*it, "::graph::Tensor"};
      if (it->is_list()) return {*it, "::std::vector<::graph::Tensor>"};
      return {*it, t.getCanonicalType().getUnqualifiedType().getAsString()};
    };
    if (auto elems = tuple_elements(r)) {
      std::vector<ir::Type> out;
      std::string s;
      for (QualType e : *elems) {
        auto [t, name] = one(e);
        out.push_back(t);
        s += (s.empty() ? "" : ", ") + name;
      }
      if (out.empty()) unsupported(at, "an empty tuple cannot be a result");
      const bool pair = r.getCanonicalType()->getAsCXXRecordDecl()->getName() == "pair";
      if (spelling) *spelling = std::string(pair ? "::std::pair<" : "::std::tuple<") + s + ">";
      return out;
    }
    if (r->isVoidType()) unsupported(at, "the result must be a 'graph::Tensor', not 'void'");
    auto [t, name] = one(r);
    if (spelling) *spelling = name;
    return {t};
  }

  // ---- environment -----------------------------------------------------
  // Keys are VarDecls, or the addresses of a Frame's flags and result slots.
  // A variable is bound to its current value; nullptr means declared but
  // not yet assigned (`Tensor y;` before an if/else assigns it). Globals and
  // members are not variables of the graph: they are graph inputs, read-only.
  using Key = const void*;
  using Env = std::unordered_map<Key, ir::Value*>;

  bool synthetic(Key k) const { return synthetic_.count(k) != 0; }
  std::string key_name(Key k) const {
    auto it = synthetic_.find(k);
    return it != synthetic_.end() ? it->second : static_cast<const VarDecl*>(k)->getName().str();
  }

  void define(Key k, ir::Value* value) {
    if (value && !synthetic(k)) {
      const auto* v = static_cast<const VarDecl*>(k);
      auto t = is_int_list(v->getType()) ? std::optional(ir::Type::tensor()) : ir_type(v->getType());
      if (!t || t->kind != value->type().kind)
        unsupported(v->getLocation(), "the value assigned to " + quote(v->getName()) + " is a " +
                                          value->type().str() + ", not the variable's " + type_name(v->getType()));
    }
    if (ordered_.insert(k).second) order_.push_back(k);
    env_[k] = value;
    if (value) partial_.erase(k);
    maybe_undefined_.erase(k);
    if (value && value->name().empty()) value->set_name(identifier(key_name(k)));
  }

  // The key a value lives under: its own, or for a const reference (or a
  // structured binding) bound to another variable or tuple element, that one's.
  Key resolve(Key k) const {
    for (auto it = aliases_.find(k); it != aliases_.end(); it = aliases_.find(k)) k = it->second;
    return k;
  }

  ir::Value* read_key(Key k, SourceLocation at) {
    ir::Value* value = env_.at(k);
    if (auto p = maybe_undefined_.find(k); p != maybe_undefined_.end() && !optional_read_)
      throw Unsupported{at, quote(key_name(k)) + " is used here but is not assigned on every path through the " +
                                p->second.what + " before it", p->second.notes};
    if (!value) {
      if (auto p = partial_.find(k); p != partial_.end())
        throw Unsupported{at, quote(key_name(k)) + " is used here but is not assigned on every path through the " +
                                  p->second.what + " before it", p->second.notes};
      unsupported(at, quote(key_name(k)) + " may be used before it is assigned on every path");
    }
    return value;
  }

  ir::Value* read(const ValueDecl* d, SourceLocation at) {
    Key k = resolve(d);
    if (env_.count(k)) return read_key(k, at);
    if (tuples_.count(d))
      unsupported(at, "the tuple " + quote(d->getName()) + " cannot be used as one value here; read its elements "
                      "with 'std::get' or a structured binding");
    const auto* v = dyn_cast<VarDecl>(d);
    if (!v) unsupported(at, quote(d->getName()) + " cannot be read in a static graph");
    if (auto g = globals_.find(v); g != globals_.end()) return g->second;
    if (v->hasGlobalStorage() && !v->isStaticLocal() && !v->isLocalExternDecl() && is_tensor_record(v->getType())) {
      if (isa<VarTemplateSpecializationDecl>(v))
        unsupported(at, "variable templates cannot be read in a static graph yet");
      // A global tensor: a graph input bound at each call. The prologue names
      // it from the global scope; anonymous and inline namespaces are implied.
      ir::Value* in = graph_->add_input(ir::Type::tensor(), identifier(v->getName()));
      captures_.push_back(global_name(v, at));
      globals_[v] = in;
      return in;
    }
    unsupported(at, quote(v->getName()) + " is not a local, a parameter or a global tensor");
  }

  std::string global_name(const VarDecl* v, SourceLocation at) {
    if (const DeclContext* named = hidden_by(v))
      unsupported(at, "the global " + quote(v->getName()) + " in an anonymous namespace cannot be passed to the "
                      "graph: another " + quote(v->getName()) + " in " +
                      (isa<TranslationUnitDecl>(named) ? std::string("the global namespace")
                                                       : quote(cast<NamedDecl>(named)->getQualifiedNameAsString())) +
                      " hides it");
    PrintingPolicy policy(ctx_.getLangOpts());
    policy.SuppressUnwrittenScope = true;
    std::string name;
    llvm::raw_string_ostream os(name);
    v->printQualifiedName(os, policy);
    return "::" + os.str();
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

  // A variable read where an undefined tensor is fine (ir::may_be_undefined):
  // one that `Tensor y;` left undefined on some path may be read here.
  ir::Value* optional_operand(const Expr* e) {
    if (!isa<DeclRefExpr>(strip(e))) return expr(e);
    bool saved = optional_read_;
    optional_read_ = true;
    ir::Value* v = expr(e);
    optional_read_ = saved;
    return v;
  }

  // ---- members read through `this` -------------------------------------
  // A member the graph reads becomes a graph input that the prologue passes
  // at each call, spelled from `this` ("this->fc1.operator->()->weight"), so
  // a parameter updated by training is seen by the next call. The spelling
  // only uses members and getters the annotated function can access.
  bool accessible(const NamedDecl* d) const {
    if (d->getAccess() == AS_public || d->getAccess() == AS_none) return true;
    const auto* top = dyn_cast<CXXMethodDecl>(fd_);
    return top && d->getDeclContext()->getPrimaryContext() == top->getParent()->getPrimaryContext();
  }

  void check_access(const NamedDecl* d, SourceLocation at) const {
    if (!accessible(d))
      unsupported(at, "the member " + quote(d->getQualifiedNameAsString()) + " is not accessible from " +
                          quote(fd_->getQualifiedNameAsString()) + ", which must pass it to the graph");
  }

  // A pointer-typed expression as the prologue spells it.
  std::string pointer(const Expr* e) {
    e = e->IgnoreParenImpCasts();
    SourceLocation at = e->getExprLoc();
    if (isa<CXXThisExpr>(e)) {
      if (frame_->this_ptr.empty()) unsupported(at, "'this' cannot be lowered here");
      return frame_->this_ptr;
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(e); oc && oc->getOperator() == OO_Arrow) {
      if (const auto* m = dyn_cast_or_null<CXXMethodDecl>(oc->getDirectCallee())) check_access(m, at);
      return "(" + lvalue(oc->getArg(0)) + ").operator->()";
    }
    if (const auto* mc = dyn_cast<CXXMemberCallExpr>(e)) {
      // A getter: a const member function without arguments returning a pointer.
      const CXXMethodDecl* m = mc->getMethodDecl();
      if (m && mc->getNumArgs() == 0 && m->isConst() && m->getReturnType()->isPointerType()) {
        check_access(m, at);
        return object_pointer(mc) + "->" + m->getNameAsString() + "()";
      }
    }
    if (const auto* m = dyn_cast<MemberExpr>(e); m && isa<FieldDecl>(m->getMemberDecl())) return field(m);
    if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_AddrOf)
      return "(&" + lvalue(u->getSubExpr()) + ")";
    unsupported(at, "this object cannot be reached from 'this' or a global, so the graph cannot read it");
  }

  // A class-typed lvalue as the prologue spells it.
  std::string lvalue(const Expr* e) {
    e = e->IgnoreParenImpCasts();
    if (const auto* m = dyn_cast<MemberExpr>(e); m && isa<FieldDecl>(m->getMemberDecl())) return field(m);
    if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_Deref)
      return "(*" + pointer(u->getSubExpr()) + ")";
    if (const auto* d = dyn_cast<DeclRefExpr>(e))
      if (const auto* v = dyn_cast<VarDecl>(d->getDecl()); v && v->hasGlobalStorage() && !v->isStaticLocal())
        return global_name(v, e->getExprLoc());
    return "(*" + pointer(e) + ")";
  }

  std::string field(const MemberExpr* m) {
    check_access(m->getMemberDecl(), m->getMemberLoc());
    std::string name = m->getMemberDecl()->getNameAsString();
    return m->isArrow() ? pointer(m->getBase()) + "->" + name : lvalue(m->getBase()) + "." + name;
  }

  // `this` of a member call, as a pointer.
  std::string object_pointer(const CXXMemberCallExpr* mc) {
    const auto* callee = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
    if (!callee) unsupported(mc->getExprLoc(), "this member call cannot be lowered");
    return callee->isArrow() ? pointer(callee->getBase()) : "(&" + lvalue(callee->getBase()) + ")";
  }

  ir::Value* member(const MemberExpr* m) {
    SourceLocation at = m->getMemberLoc();
    if (auto i = pair_member(m)) return element_of(m->getBase(), *i, at);
    if (const auto* v = dyn_cast<VarDecl>(m->getMemberDecl())) return read(v, at);  // a static data member
    const auto* f = dyn_cast<FieldDecl>(m->getMemberDecl());
    if (!f) unsupported(at, "the member " + quote(m->getMemberDecl()->getNameAsString()) + " cannot be read here");
    auto t = ir_type(f->getType());
    if (!t || f->getType()->isReferenceType())
      unsupported(at, "the member " + quote(f->getName()) + " has type " + type_name(f->getType()) +
                          ", which a static graph cannot read; " + kAcceptedTypes);
    std::string path = field(m);
    if (auto it = members_.find(path); it != members_.end()) return it->second;
    ir::Value* in = graph_->add_input(*t, identifier(f->getName()));
    captures_.push_back(path);
    members_[path] = in;
    return in;
  }
  // ---- tuples ----------------------------------------------------------
  // A std::tuple/std::pair local or parameter is one environment entry per
  // element (keys named "t_0", "t_1", ...), so Ifs and Loops merge and carry
  // each element like any variable. A structured binding is such an entry
  // (its BindingDecl is the key), or an alias of one when it binds by
  // reference; a const reference is an alias of the variable it names. A
  // tuple-typed expression lowers to its element values: a call returning a
  // tuple gives one value per result.
  struct TupleVar {
    std::vector<Key> keys;
    std::vector<ir::Type> types;
  };

  const TupleVar& declare_tuple(const ValueDecl* v, const std::vector<QualType>& elems, SourceLocation at) {
    if (auto it = tuples_.find(v); it != tuples_.end()) return it->second;
    TupleVar tv;
    for (size_t i = 0; i < elems.size(); ++i) {
      auto t = ir_type(elems[i]);
      if (!t || elems[i]->isReferenceType())
        unsupported(at, "element " + std::to_string(i) + " of " + quote(v->getName()) + " has type " +
                            type_name(elems[i]) + "; " + kAcceptedTypes);
      tuple_slots_.push_back(0);
      Key k = &tuple_slots_.back();
      synthetic_[k] = v->getName().str() + "_" + std::to_string(i);
      tv.keys.push_back(k);
      tv.types.push_back(*t);
    }
    return tuples_[v] = std::move(tv);
  }

  void check_elements(const std::vector<ir::Type>& want, const std::vector<ir::Value*>& values, SourceLocation at) {
    if (values.size() != want.size())
      unsupported(at, "this tuple has " + std::to_string(values.size()) + " elements, not " +
                          std::to_string(want.size()));
    for (size_t i = 0; i < want.size(); ++i)
      if (values[i]->type().kind != want[i].kind)
        unsupported(at, "element " + std::to_string(i) + " of this tuple is a " + values[i]->type().str() +
                            ", not a " + want[i].str() + "; the graph does not convert it");
  }

  void tuple_param(const ParmVarDecl* p) {
    if (p->getType()->isReferenceType() && !p->getType().getNonReferenceType().isConstQualified())
      unsupported(p->getLocation(), "parameter " + quote(p->getName()) +
                                        " is a non-const reference; the graph cannot write to it");
  }

  // `std::tuple<...> t = ...;`, `auto t = f(x);`, `const auto& t = u;`.
  void tuple_decl(const VarDecl* v, const std::vector<QualType>& elems) {
    const Expr* init = v->getInit();
    if (v->getType()->isReferenceType()) {
      if (!v->getType().getNonReferenceType().isConstQualified())
        unsupported(v->getLocation(), "non-const references to tuples cannot be lowered; use a value");
      if (const auto* d = init ? dyn_cast<DeclRefExpr>(init->IgnoreParenImpCasts()) : nullptr)
        if (auto it = tuples_.find(d->getDecl()); it != tuples_.end()) {
          tuples_[v] = it->second;  // the same elements
          return;
        }
    }
    if (!init) unsupported(v->getLocation(), quote(v->getName()) + " must be initialized");
    std::vector<ir::Value*> values = tuple_values(init);  // before `v` exists: it may shadow
    const TupleVar& tv = declare_tuple(v, elems, v->getLocation());
    check_elements(tv.types, values, init->getExprLoc());
    for (size_t i = 0; i < values.size(); ++i) define(tv.keys[i], values[i]);
  }

  // `auto [h, c] = f(x);` (each binding a new entry) or `auto& [h, c] = t;`
  // (aliases of t's elements).
  void decompose(const DecompositionDecl* d) {
    QualType t = d->getType();
    auto elems = tuple_elements(t);
    if (!elems)
      unsupported(d->getLocation(), "structured bindings of " + type_name(t) +
                                        " cannot be lowered; only of 'std::tuple' and 'std::pair'");
    auto bindings = d->bindings();
    const Expr* init = d->getInit();
    if (t->isReferenceType())
      if (const auto* r = init ? dyn_cast<DeclRefExpr>(init->IgnoreParenImpCasts()) : nullptr)
        if (auto it = tuples_.find(r->getDecl()); it != tuples_.end()) {
          for (size_t i = 0; i < bindings.size(); ++i) aliases_[bindings[i]] = it->second.keys.at(i);
          return;
        }
    if (t->isLValueReferenceType() && !t.getNonReferenceType().isConstQualified())
      unsupported(d->getLocation(), "this reference binding cannot be lowered; bind by value ('auto [a, b] = ...')");
    if (!init) unsupported(d->getLocation(), "structured bindings must be initialized");
    std::vector<ir::Value*> values = tuple_values(init);
    std::vector<ir::Type> types;
    for (QualType e : *elems) {
      auto it = ir_type(e);
      if (!it || e->isReferenceType())
        unsupported(d->getLocation(), "a binding of type " + type_name(e) + " cannot be lowered; " + kAcceptedTypes);
      types.push_back(*it);
    }
    check_elements(types, values, init->getExprLoc());
    for (size_t i = 0; i < bindings.size(); ++i) {
      synthetic_[bindings[i]] = bindings[i]->getName().str();
      define(bindings[i], values[i]);
    }
  }

  // The element values of a tuple-typed expression.
  std::vector<ir::Value*> tuple_values(const Expr* e) {
    check_stack(e->getExprLoc());
    const Expr* s = strip(e);
    SourceLocation l = s->getExprLoc();
    auto each = [&](auto range) {
      std::vector<ir::Value*> out;
      for (const Expr* a : range) out.push_back(expr(a));
      return out;
    };
    if (const auto* d = dyn_cast<DeclRefExpr>(s)) {
      auto it = tuples_.find(d->getDecl());
      if (it == tuples_.end()) unsupported(l, quote(d->getDecl()->getName()) + " is not a tuple the graph holds");
      std::vector<ir::Value*> out;
      for (Key k : it->second.keys) out.push_back(read_key(k, l));
      return out;
    }
    if (const auto* c = dyn_cast<CallExpr>(s)) {
      const FunctionDecl* callee = c->getDirectCallee();
      if ((is_std(callee, "move") || is_std(callee, "forward")) && c->getNumArgs() == 1) return tuple_values(c->getArg(0));
      if (is_std(callee, "make_tuple") || is_std(callee, "make_pair") || is_std(callee, "forward_as_tuple"))
        return each(c->arguments());
      const auto* oc = dyn_cast<CXXOperatorCallExpr>(c);
      if ((!oc || oc->getOperator() == OO_Call) && !annotated_op(callee) && !is_lambda_call(callee))
        return inline_results(c, callee);  // a function, method or `module(x)` returning a tuple
    }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(s)) {
      if (ce->getNumArgs() == 1 && tuple_elements(ce->getArg(0)->getType())) return tuple_values(ce->getArg(0));
      if (ce->getNumArgs() == 0) {  // value-initialized: undefined tensors, zeros
        std::vector<ir::Value*> out;
        const std::vector<QualType> elems = tuple_elements(ce->getType()).value_or(std::vector<QualType>{});
        for (QualType t : elems) {
          auto it = ir_type(t);
          if (!it) unsupported(l, "an element of type " + type_name(t) + " cannot be lowered; " + kAcceptedTypes);
          out.push_back(default_value(*it, block_, l));
        }
        return out;
      }
      return each(ce->arguments());
    }
    if (const auto* il = dyn_cast<InitListExpr>(s)) return each(il->inits());
    unsupported(l, "this tuple cannot be lowered; build it from its elements ('{a, b}', 'std::make_tuple') or "
                   "from a call");
  }

  // The N of `std::get<N>(t)`, when `c` is one.
  std::optional<size_t> get_index(const CallExpr* c) const {
    const FunctionDecl* f = c->getDirectCallee();
    if (!is_std(f, "get") || c->getNumArgs() != 1 || !tuple_elements(c->getArg(0)->getType())) return std::nullopt;
    const TemplateArgumentList* args = f->getTemplateSpecializationArgs();
    if (!args || args->size() == 0 || args->get(0).getKind() != TemplateArgument::Integral) return std::nullopt;
    return static_cast<size_t>(args->get(0).getAsIntegral().getZExtValue());
  }

  // `t.first` / `t.second` of a std::pair: 0 or 1.
  static std::optional<size_t> pair_member(const MemberExpr* m) {
    const auto* f = dyn_cast<FieldDecl>(m->getMemberDecl());
    if (!f || m->isArrow() || !tuple_elements(m->getBase()->getType())) return std::nullopt;
    if (f->getName() == "first") return 0;
    if (f->getName() == "second") return 1;
    return std::nullopt;
  }

  // The key of element `i` of a tuple variable, if `tuple` names one.
  std::optional<Key> element_key(const Expr* tuple, size_t i) const {
    const auto* d = dyn_cast<DeclRefExpr>(tuple->IgnoreParenImpCasts());
    if (!d) return std::nullopt;
    auto it = tuples_.find(d->getDecl());
    if (it == tuples_.end() || i >= it->second.keys.size()) return std::nullopt;
    return it->second.keys[i];
  }

  ir::Value* element_of(const Expr* tuple, size_t i, SourceLocation l) {
    if (auto k = element_key(tuple, i)) return read_key(*k, l);  // the other elements may be unassigned
    std::vector<ir::Value*> values = tuple_values(tuple);
    if (i >= values.size()) unsupported(l, "this tuple has no element " + std::to_string(i));
    return values[i];
  }

  // The environment key an lvalue names: a local or parameter, a binding,
  // or an element of a tuple variable.
  std::optional<Key> lvalue_key(const Expr* e) const {
    e = e->IgnoreParenImpCasts();
    if (const auto* d = dyn_cast<DeclRefExpr>(e)) {
      Key k = resolve(d->getDecl());
      if (env_.count(k)) return k;
      return std::nullopt;
    }
    if (const auto* m = dyn_cast<MemberExpr>(e))
      if (auto i = pair_member(m)) return element_key(m->getBase(), *i);
    if (const auto* c = dyn_cast<CallExpr>(e))
      if (auto i = get_index(c)) return element_key(c->getArg(0), *i);
    return std::nullopt;
  }

  // `std::tie(a, b) = f(x);` and `t = f(x);` for a tuple variable `t`; false
  // when `lhs` is neither.
  bool tuple_assign(const Expr* lhs, const Expr* rhs) {
    std::vector<std::optional<Key>> targets;
    const Expr* l = lhs->IgnoreParenImpCasts();
    if (const auto* c = dyn_cast<CallExpr>(strip(lhs)); c && is_std(c->getDirectCallee(), "tie")) {
      for (const Expr* a : c->arguments()) {
        const auto* d = dyn_cast<DeclRefExpr>(a->IgnoreParenImpCasts());
        if (d && d->getDecl()->isInStdNamespace() && d->getDecl()->getName() == "ignore") targets.push_back(std::nullopt);
        else targets.push_back(assigned_var(a));
      }
    } else if (const auto* d = dyn_cast<DeclRefExpr>(l); d && tuples_.count(d->getDecl())) {
      for (Key k : tuples_.at(d->getDecl()).keys) targets.push_back(k);
    } else {
      return false;
    }
    std::vector<ir::Value*> values = tuple_values(rhs);
    if (const auto* d = dyn_cast<DeclRefExpr>(l); d && tuples_.count(d->getDecl()))
      check_elements(tuples_.at(d->getDecl()).types, values, rhs->getExprLoc());
    if (values.size() != targets.size())
      unsupported(rhs->getExprLoc(), "this tuple has " + std::to_string(values.size()) + " elements, not " +
                                         std::to_string(targets.size()));
    for (size_t i = 0; i < values.size(); ++i)
      if (targets[i]) define(*targets[i], values[i]);
    return true;
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
    // Operand promotions (int -> double) are implied by the op's float result.
    ir::Value* lhs = operand(b->getLHS());
    ir::Value* rhs = operand(b->getRHS());
    return node(op, {lhs, rhs}, *out, l)->output();
  }

  // `a && b`, `a || b` on host scalars or one-element tensors: an If, so `b`
  // is evaluated only when C++ would evaluate it.
  ir::Value* logical(const BinaryOperator* b) {
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

  ir::Value* operand(const Expr* e) {
    if (ir::Value* c = fold(e)) return c;
    const Expr* s = strip(e);
    if (const auto* c = dyn_cast<ImplicitCastExpr>(s); c && c->getCastKind() == CK_IntegralToFloating)
      return expr(c->getSubExpr());
    return expr(e);
  }

  // ---- calls -----------------------------------------------------------
  static bool is_std(const FunctionDecl* f, llvm::StringRef name) {
    return f && f->isInStdNamespace() && f->getIdentifier() && f->getName() == name;
  }

  bool is_vector_method(const CXXMemberCallExpr* m, llvm::StringRef name) const {
    const CXXMethodDecl* md = m->getMethodDecl();
    return md && md->getIdentifier() && md->getName() == name && is_tensor_vector(m->getObjectType());
  }

  ir::Value* call(const CallExpr* c) {
    SourceLocation l = c->getExprLoc();
    const FunctionDecl* callee = c->getDirectCallee();
    if (const graph::OpInfo* op = annotated_op(callee)) return op_call(*op, c, callee);
    // std::move and std::forward change nothing the graph sees.
    if ((is_std(callee, "move") || is_std(callee, "forward")) && c->getNumArgs() == 1) return expr(c->getArg(0));
    if (is_std(callee, "get") && c->getNumArgs() == 1 && tuple_elements(c->getArg(0)->getType())) {
      auto i = get_index(c);
      if (!i) unsupported(l, "'std::get' is lowered with an index ('std::get<0>(t)'), not a type");
      return element_of(c->getArg(0), *i, l);
    }
    if ((is_std(callee, "min") || is_std(callee, "max")) && c->getNumArgs() == 2) {
      ir::Value* a = expr(c->getArg(0));
      ir::Value* b = expr(c->getArg(1));
      if (!a->type().is_scalar() || a->type().kind != b->type().kind)
        unsupported(l, quote(callee->getQualifiedNameAsString()) + " is lowered for two host scalars of one type");
      return node(callee->getName() == "min" ? "minimum" : "maximum", {a, b}, a->type(), l)->output();
    }
    if (ir::Value* v = tensor_metadata(c)) return v;
    if (ir::Value* v = factory(c, callee)) return v;
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c)) {
      if (is_vector_method(m, "size")) unsupported(l, "'size()' of a vector is lowered only when converted to 'int'");
      if (is_vector_method(m, "at") || is_vector_method(m, "operator[]")) return list_get(m->getImplicitObjectArgument(), c->getArg(0), l);
    }
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(c);
        oc && oc->getOperator() == OO_Subscript && is_tensor_vector(oc->getArg(0)->getType()))
      return list_get(oc->getArg(0), oc->getArg(1), l);
    // `s[i]`, `s.at(i)` of an int list (`x.sizes()`, a local Shape).
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(c);
        oc && oc->getOperator() == OO_Subscript && is_int_list(oc->getArg(0)->getType())) {
      ir::Value* sv = shape_value(oc->getArg(0), l);
      return node("shape_get", {sv, index_value(oc->getArg(1), l)}, ir::Type::int_(), l)->output();
    }
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c); m && m->getMethodDecl() && m->getMethodDecl()->getIdentifier() &&
                                                        m->getMethodDecl()->getName() == "at" && m->getNumArgs() == 1 &&
                                                        is_int_list(m->getObjectType())) {
      ir::Value* sv = shape_value(m->getImplicitObjectArgument(), l);
      return node("shape_get", {sv, index_value(m->getArg(0), l)}, ir::Type::int_(), l)->output();
    }
    if (is_int_list(c->getType()) && !annotated_op(callee)) {
      if (const auto* m = dyn_cast<CXXMemberCallExpr>(c); m && tensor_method(m, "sizes", 0)) return shape_value(c, l);
    }
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c); m && is_int_list(m->getObjectType()))
      unsupported(l, "the call to " + quote(m->getMethodDecl() ? m->getMethodDecl()->getNameAsString() : "?") +
                         " on an int list cannot be lowered: an int list in a static graph is read ('s[i]', "
                         "'s.at(i)', 's.size()') and its elements assigned ('s[i] = v'); build it from a tensor's "
                         "'sizes()' or a braced list");
    if (is_lambda_call(callee)) unsupported(l, "calls to lambdas cannot be lowered yet");
    if (const auto* m = dyn_cast_or_null<CXXMethodDecl>(callee);
        m && (m->isCopyAssignmentOperator() || m->isMoveAssignmentOperator()))
      unsupported(l, "an assignment inside an expression cannot be lowered; assign in its own statement");
    return inline_call(c, callee);
  }

  // `zeros(sizes)`, `ones(sizes, dtype)`, `full(sizes, value, dtype)` (graph's
  // factories): full_dyn{dtype}(sizes, value), the sizes an int list known at
  // run time (`y.sizes()`, a local Shape, `{n, 4}`), the dtype a constant.
  // nullptr for other calls.
  ir::Value* factory(const CallExpr* c, const FunctionDecl* callee) {
    if (!callee || !callee->getIdentifier() || !in_graph_namespace(callee->getDeclContext()) || isa<CXXMethodDecl>(callee))
      return nullptr;
    const llvm::StringRef name = callee->getName();
    const bool is_full = name == "full";
    if ((name != "zeros" && name != "ones" && !is_full) || callee->getNumParams() != (is_full ? 3u : 2u) ||
        c->getNumArgs() != callee->getNumParams() || !is_int_list(callee->getParamDecl(0)->getType()))
      return nullptr;
    SourceLocation l = c->getExprLoc();
    ir::Value* sizes = shape_value(c->getArg(0), c->getArg(0)->getExprLoc());
    ir::Value* value = is_full ? expr(c->getArg(1)) : constant(name == "ones" ? 1.0 : 0.0, l);
    if (!value->type().is_scalar())
      unsupported(c->getArg(1)->getExprLoc(), "the value of 'full' must be a host scalar, not a " + value->type().str());
    const Expr* d = c->getArg(is_full ? 2 : 1);
    if (const auto* da = dyn_cast<CXXDefaultArgExpr>(d)) d = da->getExpr();
    Expr::EvalResult r;
    if (d->isValueDependent() || !d->EvaluateAsRValue(r, ctx_) || !r.Val.isInt())
      unsupported(d->getExprLoc(), "the dtype of " + quote(name) + " must be a compile-time constant ('graph::kFloat32')");
    const uint64_t index = r.Val.getInt().getZExtValue();
    if (index >= std::size(graph::kAllDTypes)) unsupported(d->getExprLoc(), "this dtype is not one cxxgraph knows");
    ir::Node* n = node("full_dyn", {sizes, value}, ir::Type::tensor(), l);
    n->attrs()["dtype"] = std::string(graph::dtype_token(static_cast<graph::DType>(index)));
    return n->output();
  }

  ir::Value* list_get(const Expr* list, const Expr* index, SourceLocation l) {
    ir::Value* lv = expr(list);
    return node("list_get", {lv, index_value(index, l)}, ir::Type::tensor(), l)->output();
  }

  ir::Value* index_value(const Expr* index, SourceLocation l) {
    ir::Value* i = nullptr;
    if (auto k = index->getIntegerConstantExpr(ctx_)) i = constant(static_cast<int64_t>(k->getExtValue()), l);
    else if (const auto* c = dyn_cast<ImplicitCastExpr>(index->IgnoreParens());
             c && c->getCastKind() == CK_IntegralCast && ir_type(c->getSubExpr()->getType()) &&
             c->getSubExpr()->getType()->isSignedIntegerType())
      i = expr(c->getSubExpr());  // a signed index made size_t: the primitive checks the range
    else
      i = expr(index);
    if (i->type().kind != ir::Type::Kind::Int) unsupported(index->getExprLoc(), "an index must be an integer");
    return i;
  }

  // A tensor's metadata as host values: `x.defined()`, `x.dim()`,
  // `x.numel()`, `x.size(d)`, `x.sizes()[d]`; nullptr for other calls. The
  // sizes are read at run time: the graph stays shape-generic.
  ir::Value* tensor_metadata(const CallExpr* c) {
    SourceLocation l = c->getExprLoc();
    if (const auto* oc = dyn_cast<CXXOperatorCallExpr>(c); oc && oc->getOperator() == OO_Subscript) {
      const auto* sizes = dyn_cast<CXXMemberCallExpr>(strip(oc->getArg(0)));
      if (!sizes || !tensor_method(sizes, "sizes", 0)) return nullptr;
      ir::Value* t = expr(sizes->getImplicitObjectArgument());
      return node("tensor_size", {t, index_value(oc->getArg(1), l)}, ir::Type::int_(), l)->output();
    }
    const auto* m = dyn_cast<CXXMemberCallExpr>(c);
    if (!m) return nullptr;
    const char* op = tensor_method(m, "defined", 0) ? "defined"
                     : tensor_method(m, "dim", 0)   ? "tensor_dim"
                     : tensor_method(m, "numel", 0) ? "tensor_numel"
                     : tensor_method(m, "size", 1)  ? "tensor_size"
                                                    : nullptr;
    if (!op) return nullptr;
    std::vector<ir::Value*> in = {std::string(op) == "defined" ? optional_operand(m->getImplicitObjectArgument())
                                                                : expr(m->getImplicitObjectArgument())};
    if (m->getNumArgs() == 1) in.push_back(index_value(m->getArg(0), l));
    return node(op, in, std::string(op) == "defined" ? ir::Type::bool_() : ir::Type::int_(), l)->output();
  }

  static bool tensor_method(const CXXMemberCallExpr* m, llvm::StringRef name, unsigned args) {
    const CXXMethodDecl* md = m->getMethodDecl();
    return md && md->getIdentifier() && md->getName() == name && m->getNumArgs() == args &&
           is_tensor_record(m->getObjectType());
  }

  // `std::vector<Tensor> v;`, `{a, b}`: list_new and one list_append each.
  ir::Value* new_list(const CXXConstructExpr* ce) {
    SourceLocation l = ce->getExprLoc();
    ir::Value* list = node("list_new", {}, ir::Type::list(), l)->output();
    if (ce->getNumArgs() == 0 || isa<CXXDefaultArgExpr>(ce->getArg(0))) return list;
    const auto* il = dyn_cast<CXXStdInitializerListExpr>(strip(ce->getArg(0)));
    const auto* inits = il ? dyn_cast<InitListExpr>(strip(il->getSubExpr())) : nullptr;
    for (unsigned i = 1; i < ce->getNumArgs(); ++i)
      if (!isa<CXXDefaultArgExpr>(ce->getArg(i))) inits = nullptr;  // an allocator
    if (!inits)
      unsupported(l, "this 'std::vector<graph::Tensor>' cannot be lowered; build it from '{a, b}' or 'push_back'");
    for (const Expr* e : inits->inits()) {
      ir::Value* t = expr(e);
      if (!t->type().is_tensor()) unsupported(e->getExprLoc(), "a list element must be a tensor");
      list = node("list_append", {list, t}, ir::Type::list(), e->getExprLoc())->output();
    }
    return list;
  }

  // A call of an op-table op. Elementwise ops take every argument as an
  // input (host scalars too). Other ops follow their declaration: parameters
  // of type Tensor are inputs (a defaulted `Tensor()` is undefined()), a
  // std::vector<Tensor> is a list input, and every other parameter is the
  // attribute of the same name (ops.def's conventions): a compile-time
  // constant, or a value read at run time (attribute()).
  ir::Value* op_call(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee) {
    SourceLocation l = c->getExprLoc();
    std::vector<const Expr*> args;
    unsigned first = 0;
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(c)) args.push_back(m->getImplicitObjectArgument());
    else if (isa<CXXOperatorCallExpr>(c) && isa<CXXMethodDecl>(callee)) args.push_back(c->getArg(first++));
    if (op.kind == graph::OpKind::Elementwise) {
      for (unsigned i = first; i < c->getNumArgs(); ++i)
        if (!isa<CXXDefaultArgExpr>(c->getArg(i))) args.push_back(c->getArg(i));
      if (static_cast<int>(args.size()) != op.num_inputs)
        unsupported(l, quote(op.name) + " takes " + std::to_string(op.num_inputs) + " operands here");
      std::vector<ir::Value*> in;
      bool any_tensor = false;
      for (const Expr* a : args) {
        in.push_back(expr(a));
        any_tensor = any_tensor || in.back()->type().is_tensor();
      }
      if (!any_tensor) unsupported(l, quote(op.name) + " needs a tensor operand");
      return node(std::string(op.name), in, ir::Type::tensor(), l)->output();
    }
    std::vector<ir::Value*> in;
    for (const Expr* a : args) in.push_back(expr(a));  // the object of a method
    if (in.size() == 1)
      if (ir::Value* v = dynamic_view(op, c, callee, first, in[0])) return v;
    ir::Attributes attrs;
    std::vector<ir::Value*> runtime;  // the values of attributes known at run time
    for (unsigned i = 0; i < callee->getNumParams() && first + i < c->getNumArgs(); ++i) {
      const ParmVarDecl* p = callee->getParamDecl(i);
      const Expr* a = c->getArg(first + i);
      if (is_tensor_record(p->getType())) {
        const auto* ce = dyn_cast<CXXConstructExpr>(strip(a));
        // The operands ir::may_be_undefined accepts undefined.
        const size_t k = in.size();
        const bool optional = ((op.id == graph::OpId::linear || op.id == graph::OpId::conv2d) && k == 2) ||
                              (op.id == graph::OpId::layer_norm && (k == 1 || k == 2)) ||
                              (op.id == graph::OpId::scaled_dot_product_attention && k == 3);
        if (ce && ce->getNumArgs() == 0) in.push_back(node("undefined", {}, ir::Type::tensor(), l)->output());
        else in.push_back(optional ? optional_operand(a) : expr(a));
        if (!in.back()->type().is_tensor()) unsupported(a->getExprLoc(), "this operand of " + quote(op.name) + " must be a tensor");
      } else if (is_tensor_vector(p->getType())) {
        in.push_back(expr(a));
      } else {
        attrs[p->getName().str()] = attribute(a, op, p, &runtime);
      }
    }
    // Attributes known at run time name the inputs after the op's own.
    for (auto& [k, v] : attrs) {
      const auto* r = std::get_if<std::string>(&v);
      if (!r || r->rfind("@", 0) != 0) continue;
      size_t colon = r->find(':');
      size_t b = std::stoul(r->substr(1, colon == std::string::npos ? std::string::npos : colon - 1)) + in.size();
      v = colon == std::string::npos ? ir::dynamic_attr_ref(b, b + 1, false)
                                     : ir::dynamic_attr_ref(b, std::stoul(r->substr(colon + 1)) + in.size(), true);
    }
    in.insert(in.end(), runtime.begin(), runtime.end());
    for (ir::Value* v : in)
      if (!v) unsupported(l, quote(op.name) + " cannot be lowered here");
    ir::Node* n = node(std::string(op.name), in, ir::Type::tensor(), l);
    n->attrs() = std::move(attrs);
    return n->output();
  }

  // The value of an attribute argument, evaluated at build time. With
  // `runtime`, an argument that is not a constant is read at run time (a
  // host scalar, a braced list of host ints, or a `Shape` member, which the
  // prologue passes as an int64 tensor): its values are appended to
  // `runtime` and the attribute is "@i" / "@i:j", indices into `runtime`
  // (ir/value_primitives.h; op_call shifts them past the op's own inputs).
  ir::AttrValue attribute(const Expr* a, const graph::OpInfo& op, const ParmVarDecl* p,
                          std::vector<ir::Value*>* runtime = nullptr) {
    SourceLocation at = isa<CXXDefaultArgExpr>(a) ? a->getExprLoc() : a->getBeginLoc();
    const Expr* e = a;
    if (const auto* d = dyn_cast<CXXDefaultArgExpr>(e)) e = d->getExpr();
    QualType t = p->getType().getNonReferenceType();
    auto fail = [&]() -> ir::AttrValue {
      if (runtime && !e->isValueDependent() && !e->containsErrors()) return runtime_attribute(e, at, op, p, t, *runtime);
      unsupported(at, "the argument " + quote(p->getName()) + " of " + quote(op.name) +
                          " must be a compile-time constant (a literal or a constexpr value)");
    };
    if (e->isValueDependent() || e->containsErrors()) return fail();
    if (t->isBooleanType()) {
      bool b = false;
      if (!e->EvaluateAsBooleanCondition(b, ctx_, /*InConstantContext=*/true) || e->HasSideEffects(ctx_)) return fail();
      return b;
    }
    if (t->isIntegerType()) {
      Expr::EvalResult r;
      if (!e->EvaluateAsInt(r, ctx_) || r.HasSideEffects) return fail();
      return static_cast<int64_t>(r.Val.getInt().getExtValue());
    }
    if (t->isRealFloatingType()) {
      llvm::APFloat f(0.0);
      if (!e->EvaluateAsFloat(f, ctx_) || e->HasSideEffects(ctx_)) return fail();
      return f.convertToDouble();
    }
    if (auto list = int_list(e)) return *list;
    return fail();
  }

  // An attribute argument known only at run time (see attribute()).
  ir::AttrValue runtime_attribute(const Expr* e, SourceLocation at, const graph::OpInfo& op, const ParmVarDecl* p,
                                  QualType t, std::vector<ir::Value*>& runtime) {
    const std::string what = "the argument " + quote(p->getName()) + " of " + quote(op.name);
    const size_t first = runtime.size();
    auto scalar = [&](ir::Type::Kind want, const char* kind) -> ir::AttrValue {
      ir::Value* v = expr(e);
      const ir::Type::Kind k = v->type().kind;
      const bool ok = k == want || (want == ir::Type::Kind::Float && k == ir::Type::Kind::Int);
      if (!ok) unsupported(at, what + " must be " + kind + ", not a " + v->type().str());
      runtime.push_back(v);
      return ir::dynamic_attr_ref(first, first + 1, false);
    };
    if (t->isBooleanType()) return scalar(ir::Type::Kind::Bool, "a bool");
    if (t->isIntegerType()) return scalar(ir::Type::Kind::Int, "an integer");
    if (t->isRealFloatingType()) return scalar(ir::Type::Kind::Float, "a number");
    // A braced list of host ints: one input per element.
    if (auto inits = braced_inits(e)) {
      for (const Expr* i : *inits) {
        ir::Value* v = expr(i);
        if (v->type().kind != ir::Type::Kind::Int)
          unsupported(i->getExprLoc(), "an element of " + what + " must be an integer, not a " + v->type().str());
        runtime.push_back(v);
      }
      if (runtime.size() == first) return std::vector<int64_t>{};
      return ir::dynamic_attr_ref(first, runtime.size(), true);
    }
    // An int list the graph computes: `y.sizes()`, a local `Shape`.
    if (is_int_list(t))
      if (ir::Value* s = shape_value(e, at, /*required=*/false)) {
        runtime.push_back(s);
        return ir::dynamic_attr_ref(first, first + 1, false);
      }
    // A member of the parameter's own list type (`this->normalized_shape`).
    const Expr* m = strip(e);
    while (const auto* ce = dyn_cast<CXXConstructExpr>(m)) {
      if (ce->getNumArgs() != 1 || !ce->getConstructor()->isCopyOrMoveConstructor()) break;
      m = strip(ce->getArg(0));
    }
    if (const auto* me = dyn_cast<MemberExpr>(m); me && isa<FieldDecl>(me->getMemberDecl()) &&
                                                   ctx_.hasSameUnqualifiedType(me->getType().getNonReferenceType(), t)) {
      runtime.push_back(list_member(me));
      return ir::dynamic_attr_ref(first, first + 1, false);
    }
    unsupported(at, what + " must be a constant, a host scalar, a braced list of host integers, a tensor's "
                           "'sizes()', a local int list or a member holding the list (read at each call)");
  }

  // An int list as a graph value, a 1-D int64 tensor (value_primitives.h):
  // `x.sizes()` (tensor_sizes), a local int list variable, a braced list of
  // host ints (make_shape), or a copy or conversion of one of those. Other
  // expressions are unsupported (nullptr when not `required`).
  ir::Value* shape_value(const Expr* e, SourceLocation at, bool required = true) {
    if (!e) return node("make_shape", {}, ir::Type::tensor(graph::DType::Int64, {ir::Dim::of(0)}), at)->output();
    const Expr* s = strip(e);
    while (const auto* ce = dyn_cast<CXXConstructExpr>(s)) {
      if (ce->getNumArgs() == 1 && is_int_list(ce->getArg(0)->getType())) {
        s = strip(ce->getArg(0));
        continue;
      }
      // std::vector's (initializer_list, allocator = {}).
      bool defaulted_rest = ce->getNumArgs() >= 2;
      for (unsigned i = 1; i < ce->getNumArgs(); ++i) defaulted_rest = defaulted_rest && isa<CXXDefaultArgExpr>(ce->getArg(i));
      if (defaulted_rest && isa<CXXStdInitializerListExpr>(ce->getArg(0)->IgnoreImplicit())) {
        s = ce->getArg(0)->IgnoreImplicit();
        break;
      }
      break;
    }
    if (const auto* ce = dyn_cast<CXXConstructExpr>(s); ce && ce->getNumArgs() == 0)
      return node("make_shape", {}, ir::Type::tensor(graph::DType::Int64, {ir::Dim::of(0)}), at)->output();
    SourceLocation l = s->getExprLoc();
    if (const auto* m = dyn_cast<CXXMemberCallExpr>(s); m && tensor_method(m, "sizes", 0))
      return node("tensor_sizes", {expr(m->getImplicitObjectArgument())}, ir::Type::tensor(), l)->output();
    if (const auto* d = dyn_cast<DeclRefExpr>(s); d && isa<VarDecl>(d->getDecl()) && is_int_list(d->getType()) &&
                                                   env_.count(resolve(d->getDecl())))
      return read(cast<ValueDecl>(d->getDecl()), l);
    // A member (`this->dims`): a graph input the prologue passes at each call.
    if (const auto* me = dyn_cast<MemberExpr>(s); me && isa<FieldDecl>(me->getMemberDecl()) && is_int_list(me->getType()))
      return list_member(me);
    if (auto inits = braced_inits(s)) {
      std::vector<ir::Value*> ints;
      for (const Expr* i : *inits) {
        ints.push_back(expr(i));
        if (ints.back()->type().kind != ir::Type::Kind::Int)
          unsupported(i->getExprLoc(), "an element of an int list must be an integer, not a " + ints.back()->type().str());
      }
      return node("make_shape", ints, ir::Type::tensor(), l)->output();
    }
    if (!required) return nullptr;
    unsupported(at, "this int list cannot be lowered: build it from a tensor's 'sizes()', a braced list of "
                    "integers or another local int list");
  }

  // A list member used as an attribute (`Shape normalized_shape`): a graph
  // input that the prologue passes at each call as a 1-D int64 tensor.
  ir::Value* list_member(const MemberExpr* m) {
    const auto* f = cast<FieldDecl>(m->getMemberDecl());
    std::string path = field(m);
    if (auto it = members_.find(path); it != members_.end()) return it->second;
    ir::Value* in = graph_->add_input(ir::Type::tensor(graph::DType::Int64, {ir::Dim::unknown()}), identifier(f->getName()));
    captures_.push_back(path);
    members_[path] = in;
    return in;
  }

  // `x.slice(d, a, b)` and `x.view({...})` / `x.reshape({...})` with bounds
  // or sizes that are host ints known at run time (`x.view({x.size(0), -1})`):
  // slice_dyn and reshape_dyn. nullptr when they are constants (the op
  // itself), or not of that form.
  ir::Value* dynamic_view(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee, unsigned first,
                          ir::Value* self) {
    if (!isa<CXXMemberCallExpr>(c) || (op.name != std::string_view("slice") && op.name != std::string_view("reshape")))
      return nullptr;
    auto arg = [&](llvm::StringRef name) -> const Expr* {
      for (unsigned i = 0; i < callee->getNumParams() && first + i < c->getNumArgs(); ++i)
        if (callee->getParamDecl(i)->getName() == name) return c->getArg(first + i);
      return nullptr;
    };
    auto is_constant = [&](const Expr* e) {
      if (const auto* d = dyn_cast<CXXDefaultArgExpr>(e)) e = d->getExpr();
      Expr::EvalResult r;
      return !e->isValueDependent() && e->EvaluateAsInt(r, ctx_) && !r.HasSideEffects;
    };
    auto int_value = [&](const Expr* e) {
      ir::Value* v = expr(isa<CXXDefaultArgExpr>(e) ? cast<CXXDefaultArgExpr>(e)->getExpr() : e);
      if (v->type().kind != ir::Type::Kind::Int) unsupported(e->getExprLoc(), "this size must be an integer");
      return v;
    };
    SourceLocation l = c->getExprLoc();
    if (op.name == std::string_view("slice")) {
      const Expr *dim = arg("dim"), *start = arg("start"), *end = arg("end"), *step = arg("step");
      if (!dim || !start || !end || !step || (is_constant(start) && is_constant(end) && is_constant(step)))
        return nullptr;
      ir::AttrValue d = attribute(dim, op, callee->getParamDecl(0));
      ir::Node* n = node("slice_dyn", {self, int_value(start), int_value(end), int_value(step)}, ir::Type::tensor(), l);
      n->attrs()["dim"] = d;
      return n->output();
    }
    const Expr* shape = arg("shape");
    if (!shape || int_list(shape)) return nullptr;
    auto sizes = braced_inits(shape);
    if (!sizes) return nullptr;
    std::vector<ir::Value*> in = {self};
    for (const Expr* e : *sizes) in.push_back(int_value(e));
    return node("reshape_dyn", in, ir::Type::tensor(), l)->output();
  }

  // The elements of a braced list (`{a, b}`, `Shape{a, b}`), else nullopt.
  std::optional<std::vector<const Expr*>> braced_inits(const Expr* e) {
    while (true) {
      e = e->IgnoreParenImpCasts();
      if (const auto* f = dyn_cast<FullExpr>(e)) { e = f->getSubExpr(); continue; }
      if (const auto* m = dyn_cast<MaterializeTemporaryExpr>(e)) { e = m->getSubExpr(); continue; }
      if (const auto* b = dyn_cast<CXXBindTemporaryExpr>(e)) { e = b->getSubExpr(); continue; }
      if (const auto* il = dyn_cast<CXXStdInitializerListExpr>(e)) { e = il->getSubExpr(); continue; }
      if (const auto* ce = dyn_cast<CXXConstructExpr>(e)) {
        if (ce->getNumArgs() == 0) return std::vector<const Expr*>{};
        if (ce->getNumArgs() == 1 && (ce->getConstructor()->isCopyOrMoveConstructor() ||
                                      isa<CXXStdInitializerListExpr>(ce->getArg(0)->IgnoreImplicit()) ||
                                      isa<InitListExpr>(ce->getArg(0)->IgnoreImplicit()))) {
          e = ce->getArg(0);
          continue;
        }
        return std::nullopt;
      }
      break;
    }
    const auto* il = dyn_cast<InitListExpr>(e);
    if (!il) return std::nullopt;
    return std::vector<const Expr*>(il->inits().begin(), il->inits().end());
  }

  // A braced list of integer constants (`{1, 0}`, `Shape{2, -1}`, `{}`).
  std::optional<std::vector<int64_t>> int_list(const Expr* e) {
    auto inits = braced_inits(e);
    if (!inits) return std::nullopt;
    std::vector<int64_t> out;
    for (const Expr* i : *inits) {
      Expr::EvalResult r;
      if (i->isValueDependent() || !i->EvaluateAsInt(r, ctx_) || r.HasSideEffects) return std::nullopt;
      out.push_back(r.Val.getInt().getExtValue());
    }
    return out;
  }

  // ---- inlining --------------------------------------------------------
  // A call to a function whose body is visible is lowered in place: its
  // parameters are bound to the arguments' values, `this` to the object's
  // spelling, and its own early exits use its own flags.
  static constexpr int kMaxInlineDepth = 32;

  ir::Value* inline_call(const CallExpr* c, const FunctionDecl* callee) {
    if (callee && tuple_elements(callee->getReturnType()))
      unsupported(c->getExprLoc(), "the tuple this call returns must be unpacked ('auto [a, b] = ...', 'std::get', "
                                   "'std::tie') or assigned to a tuple variable");
    std::vector<ir::Value*> results = inline_results(c, callee);
    return results.at(0);
  }

  // The results of an inlined call: one, or one per tuple element.
  std::vector<ir::Value*> inline_results(const CallExpr* c, const FunctionDecl* callee) {
    SourceLocation l = c->getExprLoc();
    std::string name = callee ? quote(callee->getQualifiedNameAsString()) : "an indirect callee";
    const FunctionDecl* def = nullptr;
    if (!callee || !callee->hasBody(def) || !def || callee->isInStdNamespace())
      unsupported(l, "the call to " + name + " cannot be lowered: it is not a graph op");
    for (const Frame* f : frames_)
      if (f->fd->getCanonicalDecl() == def->getCanonicalDecl())
        unsupported(l, "the recursive call to " + quote(callee->getNameAsString()) + " cannot be lowered");
    if (frames_.size() > kMaxInlineDepth) unsupported(l, "calls nested too deeply to inline");
    if (def->isVariadic()) unsupported(l, "the call to the variadic " + name + " cannot be lowered");
    if (isa_and_nonnull<CoroutineBodyStmt>(def->getBody()) || !isa_and_nonnull<CompoundStmt>(def->getBody()))
      unsupported(l, "the body of " + name + " cannot be lowered");
    if (isa<CXXConstructorDecl, CXXDestructorDecl>(def)) unsupported(l, "the call to " + name + " cannot be lowered");

    // The object, for member functions.
    std::string self;
    unsigned first = 0;
    if (const auto* m = dyn_cast<CXXMethodDecl>(def); m && m->isInstance()) {
      if (const auto* mc = dyn_cast<CXXMemberCallExpr>(c)) {
        if (m->isVirtual() && !cast<CXXMethodDecl>(callee)->getDevirtualizedMethod(
                                  mc->getImplicitObjectArgument(), /*IsAppleKext=*/false))
          unsupported(l, "the virtual call to " + name + " cannot be lowered: the graph cannot know which "
                         "override runs (call it qualified, or make the class or the function 'final')");
        self = object_pointer(mc);
      } else if (isa<CXXOperatorCallExpr>(c)) {
        if (m->isVirtual()) unsupported(l, "the virtual call to " + name + " cannot be lowered");
        self = "(&" + lvalue(c->getArg(0)) + ")";
        first = 1;
      } else {
        unsupported(l, "the call to " + name + " cannot be lowered");
      }
    }
    Frame frame(def, self);
    frame.results = result_types(def->getReturnType(), l, nullptr);

    // Arguments are evaluated in the caller's environment.
    std::vector<std::pair<const ParmVarDecl*, ir::Value*>> params;
    std::vector<std::pair<const ParmVarDecl*, std::vector<ir::Value*>>> tuple_params;
    for (unsigned i = 0; i < def->getNumParams(); ++i) {
      const ParmVarDecl* p = def->getParamDecl(i);
      if (first + i >= c->getNumArgs()) unsupported(l, "the call to " + name + " cannot be lowered");
      const Expr* a = c->getArg(first + i);
      if (tuple_elements(p->getType())) {
        tuple_param(p);
        tuple_params.push_back({p, tuple_values(a)});
        continue;
      }
      if (is_int_list(p->getType())) {  // `const Shape& s`: the list as a graph value
        params.push_back({p, shape_value(a, a->getExprLoc())});
        continue;
      }
      auto t = ir_type(p->getType());
      if (!t)
        unsupported(a->getExprLoc(), "the parameter " + quote(p->getName()) + " of " + name + " has type " +
                                         type_name(p->getType()) + "; " + kAcceptedTypes);
      ir::Value* v = expr(a);
      if (v->type().kind != t->kind)
        unsupported(a->getExprLoc(), "this argument is a " + v->type().str() + ", not the parameter's " +
                                         type_name(p->getType()));
      params.push_back({p, v});
    }

    Env saved_env = std::move(env_);
    auto saved_partial = std::move(partial_);
    env_.clear();
    partial_.clear();
    for (auto& [p, v] : params) {
      if (p->getName().empty()) continue;
      define(p, v);
    }
    for (auto& [p, values] : tuple_params) {
      if (p->getName().empty()) continue;
      const TupleVar& tv = declare_tuple(p, *tuple_elements(p->getType()), p->getLocation());
      check_elements(tv.types, values, c->getArg(first + p->getFunctionScopeIndex())->getExprLoc());
      for (size_t i = 0; i < values.size(); ++i) define(tv.keys[i], values[i]);
    }
    std::vector<ir::Value*> results = function_body(frame);
    env_ = std::move(saved_env);
    partial_ = std::move(saved_partial);
    return results;
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

  // ---- function bodies and early exits ---------------------------------
  // Lowers `frame`'s body; returns its result values.
  std::vector<ir::Value*> function_body(Frame& frame) {
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

  static SourceLocation first_return(Region::StmtIt it, Region::StmtIt end) {
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

  bool is_const(const ir::Value* v, bool b) const {
    if (!v || !v->producer() || v->producer()->op() != "constant") return false;
    const auto* x = std::get_if<bool>(&v->producer()->attrs().at("value"));
    return x && *x == b;
  }
  // Unbound flags are false: `stop` outside loops.
  bool flag_true(Key k) const {
    auto it = env_.find(k);
    return it != env_.end() && is_const(it->second, true);
  }
  bool flag_true_in(const Env& env, Key k) const {
    auto it = env.find(k);
    return it != env.end() && is_const(it->second, true);
  }
  bool flag_false(Key k) const {
    auto it = env_.find(k);
    return it == env_.end() || is_const(it->second, false);
  }
  void set_flag(Key k, bool b, SourceLocation at) {
    ir::Value* c = constant(b, at);
    flag_constants_.insert(c->producer());
    define(k, c);
  }

  // Statements in order; once `skip` may be set, the rest runs in the else
  // block of an If on it.
  void seq(CompoundStmt::const_body_iterator it, CompoundStmt::const_body_iterator end) {
    for (; it != end; ++it) {
      if (flag_true(&frame_->skip)) return;  // unreachable, as in the eager body
      if (!flag_false(&frame_->skip)) return guarded(it, end);
      stmt(*it);
    }
  }

  using StmtIt = CompoundStmt::const_body_iterator;
  void guarded(StmtIt it, StmtIt end, const std::function<void(StmtIt, StmtIt)>& rest = {}) {
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

  void return_(const ReturnStmt* r) {
    if (frame_->results.empty())  // only a static region before a graph break has no results
      throw Unsupported{r->getBeginLoc(), "this 'return' comes before a graph break, which a static region cannot end with"};
    if (!r->getRetValue()) unsupported(r->getBeginLoc(), "a 'return' without a value cannot be lowered");
    std::vector<ir::Value*> values = result_values(r->getRetValue());
    for (size_t i = 0; i < values.size(); ++i) define(&frame_->slots[i], values[i]);
    set_flag(&frame_->returned, true, r->getBeginLoc());
    set_flag(&frame_->skip, true, r->getBeginLoc());
    if (env_.count(&frame_->stop)) set_flag(&frame_->stop, true, r->getBeginLoc());
  }

  void break_or_continue(const Stmt* s) {
    if (!env_.count(&frame_->stop))
      unsupported(s->getBeginLoc(), "this 'break' or 'continue' is not inside a loop the graph lowers");
    set_flag(&frame_->skip, true, s->getBeginLoc());
    if (isa<BreakStmt>(s)) set_flag(&frame_->stop, true, s->getBeginLoc());
  }

  // The values a `return` gives: one per result (a tuple's elements).
  std::vector<ir::Value*> result_values(const Expr* e) {
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

  // The default value of type `t` (C++'s `T{}`: an undefined tensor, an empty
  // list, 0, false), emitted into block `b`: a default-constructed tuple's
  // elements, a result slot on a path that has not returned (never read:
  // `returned` is false there), a `Tensor y;` assigned on one path only.
  ir::Value* default_value(const ir::Type& t, ir::Block* b, SourceLocation at) {
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

  const ir::Type* slot_type(Key k) const {
    for (const Frame* f : frames_)
      for (size_t i = 0; i < f->slots.size(); ++i)
        if (k == &f->slots[i]) return &f->results[i];
    return nullptr;
  }

  // Flag constants nothing reads (the usual case: no early exit) go away.
  void remove_unused_flags() {
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
  // ---- statements ------------------------------------------------------
  void stmt(const Stmt* s) {
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

  void decl(const DeclStmt* d) {
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

  // The key an assignment writes: a local, a parameter, a binding or a
  // tuple variable's element.
  Key assigned_var(const Expr* lhs) {
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

  // `a = b = c`, `a = b += 1`: the inner assignment's value, else nullptr.
  ir::Value* assignment(const Expr* e) {
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

  ir::Value* assign(const Expr* lhs, const Expr* rhs) {
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
    if (tuple_elements(e->getType())) {
      tuple_values(e);  // a call whose tuple result is dropped
      return;
    }
    // Anything else is evaluated for nothing: a graph op or a read has no
    // effect to keep, and expr() diagnoses whatever has one (a call that is
    // not an op, throw, new, an assignment it cannot place).
    expr(e);
  }

  static const char* compound_op(OverloadedOperatorKind k) {
    switch (k) {
      case OO_PlusEqual: return "add";
      case OO_MinusEqual: return "sub";
      case OO_StarEqual: return "mul";
      case OO_SlashEqual: return "div";
      default: return nullptr;
    }
  }

  ir::Value* compound(const CompoundAssignOperator* ca) {
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

  // `v op= rhs` on a host scalar or a tensor (Tensor's `+=` rebinds v).
  ir::Value* compound(const char* op, const Expr* lhs, const Expr* rhs_expr, SourceLocation l, llvm::StringRef spelling) {
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
    SourceLocation else_at = s->getElse() ? s->getElse()->getBeginLoc() : s->getIfLoc();
    merge(n, then_env, else_env,
          {"'if'", s->getThen()->getBeginLoc(), else_at,
           s->getElse() ? "but not in this branch" : "but not when the condition is false"});
  }

  // Where a variable assigned on one path only was left unassigned: the
  // notes of the diagnostic at its next use.
  struct Site {
    std::string what;  // "'if'"
    SourceLocation then_at, else_at;
    std::string else_note;
  };
  struct Partial {
    std::string what;
    std::vector<std::pair<SourceLocation, std::string>> notes;
  };

  // After an If's two blocks: every outer variable that either block rebound
  // becomes an output of the If (equal constants fold); one assigned on one
  // path only is unusable afterwards, and its next use is diagnosed.
  void merge(ir::Node* n, Env& then_env, Env& else_env, const Site& site) {
    ir::Block* blocks[2] = {n->block(0), n->block(1)};
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
      if (t->producer() && e->producer() && t->producer()->op() == "constant" && e->producer()->op() == "constant" &&
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

  // Outer variables a statement assigns (the values a Loop must carry).
  void assigned_in(const Stmt* s, std::vector<Key>& out) {
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

  // Whether `s` may leave the current iteration early: a `break` or
  // `continue` of this loop, or a `return` anywhere.
  static bool exits(const Stmt* s, bool loop_level, bool returns_only = false) {
    if (!s || isa<LambdaExpr>(s)) return false;
    if (isa<ReturnStmt>(s)) return true;
    if (loop_level && !returns_only && isa<BreakStmt, ContinueStmt>(s)) return true;
    if (isa<SwitchStmt>(s) && !returns_only) loop_level = false;  // its `break`s are its own (not lowered anyway)
    bool inner_loop = isa<ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(s);
    for (const Stmt* c : s->children())
      if (c && exits(c, loop_level && !inner_loop, returns_only)) return true;
    return false;
  }

  // A value that is true or false as `v` is (for a Loop's next condition).
  ir::Value* to_bool(ir::Value* v, SourceLocation at) {
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

  // A Loop: `while (cond) body`, `for (; cond; inc) body`, or a range-for
  // (max_trips given, no condition, `prelude` binding the element).
  struct LoopSpec {
    const Expr* cond = nullptr;
    const Stmt* body = nullptr;
    const Expr* inc = nullptr;
    SourceLocation at;
    ir::Value* max_trips = nullptr;
    std::function<void(ir::Value* iteration)> prelude;
    bool test_first = true;            // false for `do`-`while`
    std::function<void()> run_body;    // lowers the body, when not stmt(body)
  };

  void loop(const LoopSpec& spec) {
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

  // ---- switch ------------------------------------------------------------
  // `switch (v)` with its labels directly in its body: a bool `active` (as
  // an environment entry) turns true at the matching label (or at `default`
  // when no label matches) and stays true, so fallthrough runs what follows;
  // each statement runs in an If on it. A `break` of the switch makes the
  // body a Loop of one trip, whose `break` machinery already skips the rest.
  struct Switch {
    ir::Value* value = nullptr;
    ir::Value* none = nullptr;  // no case label matches (when there is a default)
    char active = 0;            // its address keys the flag
  };

  void switch_(const SwitchStmt* s) {
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

  ir::Value* case_test(const Switch& sw, const CaseStmt* c) {
    if (c->caseStmtIsGNURange()) unsupported(c->getBeginLoc(), "case ranges cannot be lowered");
    llvm::APSInt v = c->getLHS()->EvaluateKnownConstInt(ctx_);
    if (v.getSignificantBits() > 64) unsupported(c->getBeginLoc(), "this case value does not fit in 64 bits");
    SourceLocation l = c->getBeginLoc();
    return node("eq", {sw.value, constant(static_cast<int64_t>(v.getExtValue()), l)}, ir::Type::bool_(), l)->output();
  }

  // a || b of two bool values already computed (no short circuit needed).
  ir::Value* either(ir::Value* a, ir::Value* b, SourceLocation l) {
    ir::Node* n = block_->append("If");
    n->add_input(a);
    n->set_loc(loc(l));
    for (int branch = 0; branch < 2; ++branch) {
      ir::Block* blk = add_block(n, l);
      in_block(blk, [&] { blk->add_return(branch == 0 ? constant(true, l) : b); });
    }
    return n->add_output(ir::Type::bool_());
  }

  // The body's statements, as seq() runs them, each behind its labels.
  void switch_body(StmtIt it, StmtIt end, Switch& sw) {
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

  // `if (flag) f();` as an If whose else-block is empty.
  template <class F>
  void when(Key flag, SourceLocation at, F&& f) {
    if (flag_true(flag)) return f();
    ir::Node* n = block_->append("If");
    n->add_input(env_.at(flag));
    n->set_loc(loc(at));
    ir::Block* then_b = add_block(n, at);
    ir::Block* else_b = add_block(n, at);
    Env then_env = in_block(then_b, [&] { f(); });
    Env else_env = in_block(else_b, [] {});
    merge(n, then_env, else_env, {"'switch'", at, at, "but not when this case does not run"});
  }

  // A `continue` of an enclosing loop inside `s` (not of a loop in it).
  static const Stmt* continue_in(const Stmt* s) {
    if (!s || isa<LambdaExpr, ForStmt, WhileStmt, DoStmt, CXXForRangeStmt>(s)) return nullptr;
    if (isa<ContinueStmt>(s)) return s;
    for (const Stmt* c : s->children())
      if (const Stmt* found = continue_in(c)) return found;
    return nullptr;
  }

  // `if (!flag) f();` as an If whose then-block is empty.
  template <class F>
  void unless(Key flag, SourceLocation at, F&& f) {
    ir::Node* n = block_->append("If");
    n->add_input(env_.at(flag));
    n->set_loc(loc(at));
    ir::Block* then_b = add_block(n, at);
    ir::Block* else_b = add_block(n, at);
    Env then_env = in_block(then_b, [] {});
    Env else_env = in_block(else_b, [&] { f(); });
    merge(n, then_env, else_env, {"loop", at, at, "but not when the loop stops"});
  }

  void while_(const WhileStmt* s) {
    if (s->getConditionVariable())
      unsupported(s->getBeginLoc(), "a 'while' with a declaration in its condition cannot be lowered yet");
    loop({s->getCond(), s->getBody(), nullptr, s->getWhileLoc(), nullptr, {}});
  }

  void for_(const ForStmt* s) {
    if (!s->getCond()) unsupported(s->getForLoc(), "a 'for' without a condition cannot be lowered");
    if (s->getConditionVariable())
      unsupported(s->getBeginLoc(), "a 'for' with a declaration in its condition cannot be lowered yet");
    if (s->getInit()) stmt(s->getInit());
    loop({s->getCond(), s->getBody(), s->getInc(), s->getForLoc(), nullptr, {}});
  }

  // `for (const Tensor& t : xs)` over a std::vector<Tensor>: a Loop of
  // list_len(xs) trips whose body starts with t = list_get(xs, iteration).
  void range_for(const CXXForRangeStmt* s) {
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

  ASTContext& ctx_;
  const SourceManager& sm_;
  const FunctionDecl* fd_;
  ir::Graph* graph_ = nullptr;
  ir::Block* block_ = nullptr;
  Env env_;
  std::vector<Key> order_;
  std::unordered_map<Key, std::string> synthetic_;  // flags and result slots: their names
  std::unordered_map<Key, Partial> partial_;        // unassigned after a branch: why
  std::unordered_map<Key, Partial> maybe_undefined_;  // a tensor undefined on some path: why
  bool optional_read_ = false;                        // reading an optional operand or testing defined()
  std::unordered_set<Key> ordered_;                  // the keys in order_
  std::unordered_map<Key, Key> aliases_;             // const references and bindings: what they name
  std::unordered_map<const ValueDecl*, TupleVar> tuples_;
  std::deque<char> tuple_slots_;                     // their addresses key tuple elements
  std::vector<std::unique_ptr<Switch>> switches_;
  std::unordered_map<const VarDecl*, ir::Value*> globals_;
  std::unordered_map<std::string, ir::Value*> members_;  // by the prologue's spelling
  std::vector<std::string> captures_;                    // globals and members, in input order
  std::unordered_set<ir::Node*> flag_constants_;
  Frame* frame_ = nullptr;
  std::vector<Frame*> frames_;  // the annotated function, then the callees being inlined
  int depth_ = 0;  // of block_: 0 for the graph's own block
};
}  // namespace

Lowered lower_function(ASTContext& ctx, const FunctionDecl* fd) { return FunctionLowering(ctx, fd).run(); }

std::optional<std::string> break_type(QualType t, const PrintingPolicy& policy) {
  if (auto elems = tuple_elements(t)) {
    std::string s;
    for (QualType e : *elems) {
      if (e->isReferenceType()) return std::nullopt;
      auto one = break_type(e, policy);
      if (!one || tuple_elements(e)) return std::nullopt;
      s += (s.empty() ? "" : ", ") + *one;
    }
    const bool pair = t.getNonReferenceType().getCanonicalType()->getAsCXXRecordDecl()->getName() == "pair";
    return std::string(pair ? "::std::pair<" : "::std::tuple<") + s + ">";
  }
  auto it = ir_type(t);
  if (!it) return std::nullopt;
  if (it->is_tensor()) return "::graph::Tensor";
  if (it->is_list()) return "::std::vector<::graph::Tensor>";
  return t.getNonReferenceType().getCanonicalType().getUnqualifiedType().getAsString(policy);
}

Lowered lower_region(ASTContext& ctx, const FunctionDecl* fd, const Region& region) {
  return FunctionLowering(ctx, fd).run_region(region);
}

}  // namespace cxxgraph
