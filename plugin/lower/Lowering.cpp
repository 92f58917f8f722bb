// The lowering's entry points: a whole function (run), one static region of a
// function split by graph breaks (run_region), what kind of function may be
// lowered, and the graph outputs its result becomes.
#include "FunctionLowering.h"

namespace cxxgraph {
namespace lower {

auto FunctionLowering::run() -> Lowered {
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
    // A by-value tensor is lent to the graph (static.h's run moves it in and
    // back): no reference counts on the call's fast path.
    const bool lend = is_tensor_record(p->getType()) && !p->getType()->isReferenceType() &&
                      !p->getType().isConstQualified();
    out.call_args.push_back(lend ? "::std::move(" + p->getNameAsString() + ")" : p->getNameAsString());
  }

  for (ir::Value* r : function_body(frame)) graph_->top()->add_return(r);
  write_back();  // members updated in place (State.cpp)
  for (const auto& name : captures_) out.call_args.push_back(name);
  remove_unused_flags();
  return out;
}

auto FunctionLowering::run_region(const Region& region) -> Lowered {
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
  write_back();  // members updated in place, before the next piece reads them
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

auto FunctionLowering::check_kind() -> void {
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

auto FunctionLowering::result_types(QualType r, SourceLocation at, std::string* spelling) -> std::vector<ir::Type> {
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

}  // namespace lower

using namespace clang;

Lowered lower_function(ASTContext& ctx, const FunctionDecl* fd) { return lower::FunctionLowering(ctx, fd).run(); }

Lowered lower_region(ASTContext& ctx, const FunctionDecl* fd, const Region& region) {
  return lower::FunctionLowering(ctx, fd).run_region(region);
}

}  // namespace cxxgraph
