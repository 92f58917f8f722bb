// The type mapping from C++ types to graph types (Types.h), and the names
// and spellings the plugin shares (Lower.h: identifier, break_type).
#include "Types.h"

#include <cctype>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/StmtCXX.h"

namespace cxxgraph {

namespace lower {

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
  // An enum over a signed integer (graph::Reduction) is its value, as a signed
  // integer is; DType is an attribute only, std::byte is unsigned.
  if (const auto* et = t->getAs<EnumType>()) {
    const EnumDecl* d = et->getDecl();
    if (d->getName() == "DType" || d->getIntegerType().isNull() || !d->getIntegerType()->isSignedIntegerType())
      return std::nullopt;
    return ir::Type::int_();
  }
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

// The op-table entry a declaration is annotated with (GRAPH_OP), or null.
const graph::OpInfo* annotated_op(const FunctionDecl* fd) {
  if (!fd) return nullptr;
  for (const auto* a : fd->specific_attrs<AnnotateAttr>()) {
    if (a->getAnnotation() != "graph.op" || a->args_size() != 1) continue;
    const auto* lit = dyn_cast<StringLiteral>((*a->args_begin())->IgnoreParenCasts());
    if (!lit) continue;
    if (const graph::OpInfo* op = graph::find_op(lit->getString().str())) return op;
    // graph::unbind is the list primitive that stack's gradient also uses.
    if (graph::resolve_op(lit->getString().str()) == graph::OpId::list_unbind)
      return &graph::op_info(graph::OpId::list_unbind);
  }
  return nullptr;
}

bool is_eager_check(const FunctionDecl* fd) {
  if (!fd || !fd->getReturnType()->isVoidType()) return false;
  for (const auto* a : fd->specific_attrs<AnnotateAttr>())
    if (a->getAnnotation() == "graph.eager_check") return true;
  return false;
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

}  // namespace lower

using namespace clang;
using lower::ir_type;
using lower::tuple_elements;

std::string identifier(llvm::StringRef name) {
  std::string out = name.str();
  for (char& c : out)
    if (!(std::isalnum(static_cast<unsigned char>(c)) && static_cast<unsigned char>(c) < 0x80) && c != '_') c = '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(out.begin(), '_');
  return out;
}

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

}  // namespace cxxgraph
