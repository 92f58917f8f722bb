// The SSA environment: C++ variables to their current values, globals and
// members read through `this` as graph inputs, std::tuple/std::pair
// variables one entry per element, and the node builders.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

auto FunctionLowering::synthetic(Key k) const -> bool { return synthetic_.count(k) != 0; }

auto FunctionLowering::key_name(Key k) const -> std::string {
  auto it = synthetic_.find(k);
  return it != synthetic_.end() ? it->second : static_cast<const VarDecl*>(k)->getName().str();
}

auto FunctionLowering::define(Key k, ir::Value* value) -> void {
  if (value && !synthetic(k)) {
    const auto* v = static_cast<const VarDecl*>(k);
    auto t = is_int_list(v->getType()) ? std::optional(ir::Type::tensor()) : ir_type(v->getType());
    const bool scalar = is_scalar_record(v->getType()) && is_host_number(value->type());  // a Scalar parameter
    if (!scalar && (!t || t->kind != value->type().kind))
      unsupported(v->getLocation(), "the value assigned to " + quote(v->getName()) + " is a " +
                                        value->type().str() + ", not the variable's " + type_name(v->getType()));
  }
  if (ordered_.insert(k).second) order_.push_back(k);
  env_[k] = value;
  if (value) partial_.erase(k);
  maybe_undefined_.erase(k);
  if (value && value->name().empty()) value->set_name(identifier(key_name(k)));
}

auto FunctionLowering::resolve(Key k) const -> Key {
  for (auto it = aliases_.find(k); it != aliases_.end(); it = aliases_.find(k)) k = it->second;
  return k;
}

auto FunctionLowering::read_key(Key k, SourceLocation at) -> ir::Value* {
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

auto FunctionLowering::read(const ValueDecl* d, SourceLocation at) -> ir::Value* {
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

auto FunctionLowering::global_name(const VarDecl* v, SourceLocation at) -> std::string {
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

auto FunctionLowering::hidden_by(const VarDecl* v) -> const DeclContext* {
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

auto FunctionLowering::optional_operand(const Expr* e) -> ir::Value* {
  if (!isa<DeclRefExpr>(strip(e))) return expr(e);
  bool saved = optional_read_;
  optional_read_ = true;
  ir::Value* v = expr(e);
  optional_read_ = saved;
  return v;
}

auto FunctionLowering::accessible(const NamedDecl* d) const -> bool {
  if (d->getAccess() == AS_public || d->getAccess() == AS_none) return true;
  const auto* top = dyn_cast<CXXMethodDecl>(fd_);
  return top && d->getDeclContext()->getPrimaryContext() == top->getParent()->getPrimaryContext();
}

auto FunctionLowering::check_access(const NamedDecl* d, SourceLocation at) const -> void {
  if (!accessible(d))
    unsupported(at, "the member " + quote(d->getQualifiedNameAsString()) + " is not accessible from " +
                        quote(fd_->getQualifiedNameAsString()) + ", which must pass it to the graph");
}

auto FunctionLowering::pointer(const Expr* e) -> std::string {
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

auto FunctionLowering::lvalue(const Expr* e) -> std::string {
  e = e->IgnoreParenImpCasts();
  if (const auto* m = dyn_cast<MemberExpr>(e); m && isa<FieldDecl>(m->getMemberDecl())) return field(m);
  if (const auto* u = dyn_cast<UnaryOperator>(e); u && u->getOpcode() == UO_Deref)
    return "(*" + pointer(u->getSubExpr()) + ")";
  if (const auto* d = dyn_cast<DeclRefExpr>(e))
    if (const auto* v = dyn_cast<VarDecl>(d->getDecl()); v && v->hasGlobalStorage() && !v->isStaticLocal())
      return global_name(v, e->getExprLoc());
  return "(*" + pointer(e) + ")";
}

auto FunctionLowering::field(const MemberExpr* m) -> std::string {
  check_access(m->getMemberDecl(), m->getMemberLoc());
  std::string name = m->getMemberDecl()->getNameAsString();
  return m->isArrow() ? pointer(m->getBase()) + "->" + name : lvalue(m->getBase()) + "." + name;
}

auto FunctionLowering::object_pointer(const CXXMemberCallExpr* mc) -> std::string {
  const auto* callee = dyn_cast<MemberExpr>(mc->getCallee()->IgnoreParens());
  if (!callee) unsupported(mc->getExprLoc(), "this member call cannot be lowered");
  return callee->isArrow() ? pointer(callee->getBase()) : "(&" + lvalue(callee->getBase()) + ")";
}

auto FunctionLowering::member(const MemberExpr* m) -> ir::Value* {
  SourceLocation at = m->getMemberLoc();
  if (auto i = pair_member(m)) return element_of(m->getBase(), *i, at);
  if (const auto* v = dyn_cast<VarDecl>(m->getMemberDecl())) return read(v, at);  // a static data member
  const auto* f = dyn_cast<FieldDecl>(m->getMemberDecl());
  if (!f) unsupported(at, "the member " + quote(m->getMemberDecl()->getNameAsString()) + " cannot be read here");
  auto t = ir_type(f->getType());
  if (!t || f->getType()->isReferenceType())
    unsupported(at, "the member " + quote(f->getName()) + " has type " + type_name(f->getType()) +
                        ", which a static graph cannot read; " + kAcceptedTypes);
  if (stepped_ && t->is_tensor())
    unsupported(at, "the member " + quote(f->getName()) + " is read after the optimizer's step() in the graph, "
                    "which updates the parameters in place; read it before the step or after the call");
  std::string path = field(m);
  if (ir::Value* v = member_state(path)) return v;  // updated in place earlier (State.cpp)
  if (auto it = members_.find(path); it != members_.end()) return it->second;
  if (t->is_tensor()) t->dtype = member_dtype(f);
  ir::Value* in = graph_->add_input(*t, identifier(f->getName()));
  captures_.push_back(path);
  members_[path] = in;
  return in;
}

auto FunctionLowering::declare_tuple(const ValueDecl* v, const std::vector<QualType>& elems,
                                     SourceLocation at) -> const TupleVar& {
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

auto FunctionLowering::check_elements(const std::vector<ir::Type>& want, const std::vector<ir::Value*>& values,
                                      SourceLocation at) -> void {
  if (values.size() != want.size())
    unsupported(at, "this tuple has " + std::to_string(values.size()) + " elements, not " +
                        std::to_string(want.size()));
  for (size_t i = 0; i < want.size(); ++i)
    if (values[i]->type().kind != want[i].kind)
      unsupported(at, "element " + std::to_string(i) + " of this tuple is a " + values[i]->type().str() +
                          ", not a " + want[i].str() + "; the graph does not convert it");
}

auto FunctionLowering::tuple_param(const ParmVarDecl* p) -> void {
  if (p->getType()->isReferenceType() && !p->getType().getNonReferenceType().isConstQualified())
    unsupported(p->getLocation(), "parameter " + quote(p->getName()) +
                                      " is a non-const reference; the graph cannot write to it");
}

auto FunctionLowering::tuple_decl(const VarDecl* v, const std::vector<QualType>& elems) -> void {
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

auto FunctionLowering::decompose(const DecompositionDecl* d) -> void {
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

auto FunctionLowering::tuple_values(const Expr* e) -> std::vector<ir::Value*> {
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

auto FunctionLowering::get_index(const CallExpr* c) const -> std::optional<size_t> {
  const FunctionDecl* f = c->getDirectCallee();
  if (!is_std(f, "get") || c->getNumArgs() != 1 || !tuple_elements(c->getArg(0)->getType())) return std::nullopt;
  const TemplateArgumentList* args = f->getTemplateSpecializationArgs();
  if (!args || args->size() == 0 || args->get(0).getKind() != TemplateArgument::Integral) return std::nullopt;
  return static_cast<size_t>(args->get(0).getAsIntegral().getZExtValue());
}

auto FunctionLowering::pair_member(const MemberExpr* m) -> std::optional<size_t> {
  const auto* f = dyn_cast<FieldDecl>(m->getMemberDecl());
  if (!f || m->isArrow() || !tuple_elements(m->getBase()->getType())) return std::nullopt;
  if (f->getName() == "first") return 0;
  if (f->getName() == "second") return 1;
  return std::nullopt;
}

auto FunctionLowering::element_key(const Expr* tuple, size_t i) const -> std::optional<Key> {
  const auto* d = dyn_cast<DeclRefExpr>(tuple->IgnoreParenImpCasts());
  if (!d) return std::nullopt;
  auto it = tuples_.find(d->getDecl());
  if (it == tuples_.end() || i >= it->second.keys.size()) return std::nullopt;
  return it->second.keys[i];
}

auto FunctionLowering::element_of(const Expr* tuple, size_t i, SourceLocation l) -> ir::Value* {
  if (auto k = element_key(tuple, i)) return read_key(*k, l);  // the other elements may be unassigned
  std::vector<ir::Value*> values = tuple_values(tuple);
  if (i >= values.size()) unsupported(l, "this tuple has no element " + std::to_string(i));
  return values[i];
}

auto FunctionLowering::lvalue_key(const Expr* e) const -> std::optional<Key> {
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

auto FunctionLowering::tuple_assign(const Expr* lhs, const Expr* rhs) -> bool {
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

auto FunctionLowering::loc(SourceLocation l) const -> graph::ir::SourceLoc {
  PresumedLoc p = sm_.getPresumedLoc(sm_.getFileLoc(l));
  if (p.isInvalid()) return {};
  return {p.getFilename(), static_cast<int>(p.getLine()), static_cast<int>(p.getColumn())};
}

auto FunctionLowering::node(const std::string& op, const std::vector<ir::Value*>& inputs, ir::Type out,
                            SourceLocation l) -> ir::Node* {
  ir::Node* n = block_->append(op);
  for (ir::Value* v : inputs) n->add_input(v);
  n->add_output(std::move(out));
  n->set_loc(loc(l));
  return n;
}

}  // namespace cxxgraph::lower
