// Calls and ops: calls mapped through the op table (GRAPH_OP annotations),
// factories, list and shape arguments, tensor metadata, and calls to visible
// functions inlined in place.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

auto FunctionLowering::is_std(const FunctionDecl* f, llvm::StringRef name) -> bool {
  return f && f->isInStdNamespace() && f->getIdentifier() && f->getName() == name;
}

auto FunctionLowering::is_vector_method(const CXXMemberCallExpr* m, llvm::StringRef name) const -> bool {
  const CXXMethodDecl* md = m->getMethodDecl();
  return md && md->getIdentifier() && md->getName() == name && is_tensor_vector(m->getObjectType());
}

auto FunctionLowering::call(const CallExpr* c) -> ir::Value* {
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
  if (ir::Value* v = item(c)) return v;
  if (ir::Value* v = host_getter(c)) return v;
  if (const auto* m = dyn_cast<CXXMemberCallExpr>(c))
    if (ir::Value* v = inplace_update(m)) return v;
  if (ir::Value* v = host_math(c, callee)) return v;
  if (ir::Value* v = factory(c, callee)) return v;
  if (ir::Value* v = arange(c, callee)) return v;
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

auto FunctionLowering::factory(const CallExpr* c, const FunctionDecl* callee) -> ir::Value* {
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
  ir::Node* n = node("full_dyn", {sizes, value}, ir::Type::tensor(), l);
  n->attrs()["dtype"] = dtype_token_of(c->getArg(is_full ? 2 : 1), name);
  return n->output();
}

auto FunctionLowering::arange(const CallExpr* c, const FunctionDecl* callee) -> ir::Value* {
  if (!callee || !callee->getIdentifier() || callee->getName() != "arange" || isa<CXXMethodDecl>(callee) ||
      !in_graph_namespace(callee->getDeclContext()) || (c->getNumArgs() != 1 && c->getNumArgs() != 3))
    return nullptr;  // the device overload is not lowered
  SourceLocation l = c->getExprLoc();
  std::vector<ir::Value*> bounds;
  for (const Expr* a : c->arguments()) {
    ir::Value* v = expr(a);  // through its graph::Scalar: int, bool or float, as the argument
    if (!is_host_number(v->type()))
      unsupported(a->getExprLoc(), "a bound of 'arange' must be a host scalar, not a " + v->type().str());
    bounds.push_back(v);
  }
  if (bounds.size() == 1) bounds = {constant(int64_t{0}, l), bounds[0], constant(int64_t{1}, l)};
  return node("arange_dyn", bounds, ir::Type::tensor(), l)->output();
}

auto FunctionLowering::dtype_token_of(const Expr* d, llvm::StringRef what) -> std::string {
  if (const auto* da = dyn_cast<CXXDefaultArgExpr>(d)) d = da->getExpr();
  Expr::EvalResult r;
  if (d->isValueDependent() || d->containsErrors() || !d->EvaluateAsRValue(r, ctx_) || !r.Val.isInt() ||
      r.HasSideEffects)
    unsupported(d->getExprLoc(), "the dtype of " + quote(what) + " must be a compile-time constant ('graph::kFloat32')");
  const uint64_t index = r.Val.getInt().getZExtValue();
  if (index >= std::size(graph::kAllDTypes)) unsupported(d->getExprLoc(), "this dtype is not one cxxgraph knows");
  return std::string(graph::dtype_token(static_cast<graph::DType>(index)));
}

auto FunctionLowering::list_get(const Expr* list, const Expr* index, SourceLocation l) -> ir::Value* {
  ir::Value* lv = expr(list);
  return node("list_get", {lv, index_value(index, l)}, ir::Type::tensor(), l)->output();
}

auto FunctionLowering::index_value(const Expr* index, SourceLocation l) -> ir::Value* {
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

auto FunctionLowering::tensor_metadata(const CallExpr* c) -> ir::Value* {
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

auto FunctionLowering::item(const CallExpr* c) -> ir::Value* {
  const auto* m = dyn_cast<CXXMemberCallExpr>(c);
  if (!m || !tensor_method(m, "item", 0)) return nullptr;
  SourceLocation l = c->getExprLoc();
  const QualType t = c->getType();
  if (!t->isIntegerType() && !t->isFloatingType()) unsupported(l, "'item' is lowered for int, float and bool results");
  const ir::Type type = t->isBooleanType() ? ir::Type::bool_() : t->isIntegerType() ? ir::Type::int_() : ir::Type::float_();
  ir::Value* x = expr(m->getImplicitObjectArgument());
  return node("item", {x}, type, l)->output();
}

auto FunctionLowering::host_math(const CallExpr* c, const FunctionDecl* callee) -> ir::Value* {
  // std:: names, or the C library's (libstdc++'s std::sqrt(double) is ::sqrt).
  static const std::pair<llvm::StringRef, const char*> kMath[] = {
      {"sqrt", "sqrt"}, {"exp", "exp"},     {"log", "log"},     {"sin", "sin"},   {"cos", "cos"},
      {"tanh", "tanh"}, {"erf", "erf"},     {"log1p", "log1p"}, {"expm1", "expm1"}, {"abs", "abs"},
      {"fabs", "abs"},  {"pow", "pow"},     {"fmin", "minimum"}, {"fmax", "maximum"}};
  if (!callee || !callee->getIdentifier() || isa<CXXMethodDecl>(callee)) return nullptr;
  const DeclContext* dc = callee->getDeclContext()->getRedeclContext();
  if (!callee->isInStdNamespace() && !(dc->isTranslationUnit() && callee->isExternC())) return nullptr;
  const char* op = nullptr;
  for (const auto& [name, o] : kMath)
    if (callee->getName() == name) op = o;
  const QualType rt = callee->getReturnType().getCanonicalType();
  const bool to_double = rt->isSpecificBuiltinType(BuiltinType::Double);
  if (!op || c->getNumArgs() == 0) return nullptr;
  SourceLocation l = c->getExprLoc();
  if (rt->isFloatingType() && !to_double)
    unsupported(l, quote(callee->getQualifiedNameAsString()) + " of a 'float' computes in single precision, which a graph's "
                   "host values (double) do not; convert its argument to 'double'");
  if (!to_double && !(rt->isIntegerType() && !rt->isBooleanType())) return nullptr;
  std::vector<ir::Value*> in;
  for (const Expr* a : c->arguments()) {
    ir::Value* v = expr(a);
    if (!is_host_number(v->type())) return nullptr;
    if (v->type().kind == ir::Type::Kind::Bool) v = bool_to_int(v, l);
    if (to_double && v->type().kind == ir::Type::Kind::Int) v = node("int_to_float", {v}, ir::Type::float_(), l)->output();
    in.push_back(v);
  }
  const graph::OpInfo* info = graph::find_op(op);
  if (!info || info->kind != graph::OpKind::Elementwise || info->num_inputs != static_cast<int>(in.size())) return nullptr;
  return node(op, in, to_double ? ir::Type::float_() : ir::Type::int_(), l)->output();
}

auto FunctionLowering::tensor_method(const CXXMemberCallExpr* m, llvm::StringRef name, unsigned args) -> bool {
  const CXXMethodDecl* md = m->getMethodDecl();
  return md && md->getIdentifier() && md->getName() == name && m->getNumArgs() == args &&
         is_tensor_record(m->getObjectType());
}

auto FunctionLowering::new_list(const CXXConstructExpr* ce) -> ir::Value* {
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

auto FunctionLowering::op_call(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee) -> ir::Value* {
  SourceLocation l = c->getExprLoc();
  std::vector<const Expr*> args;
  unsigned first = 0;
  if (const auto* m = dyn_cast<CXXMemberCallExpr>(c)) args.push_back(m->getImplicitObjectArgument());
  else if (isa<CXXOperatorCallExpr>(c) && isa<CXXMethodDecl>(callee)) args.push_back(c->getArg(first++));
  if (op.kind == graph::OpKind::Elementwise) {
    // A defaulted operand is PyTorch's default of a parameter (leaky_relu's
    // negative_slope): an operand like any other.
    for (unsigned i = first; i < c->getNumArgs(); ++i) args.push_back(c->getArg(i));
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
  if (op.id == graph::OpId::list_unbind) return unbind(c, l);
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
      // The operands the op table marks optional may be undefined.
      const bool optional = graph::optional_input(op.id, in.size());
      if (ce && ce->getNumArgs() == 0) in.push_back(node("undefined", {}, ir::Type::tensor(), l)->output());
      else in.push_back(optional ? optional_operand(a) : expr(a));
      if (!in.back()->type().is_tensor()) unsupported(a->getExprLoc(), "this operand of " + quote(op.name) + " must be a tensor");
    } else if (is_tensor_vector(p->getType())) {
      in.push_back(expr(a));
    } else {
      attrs[p->getName().str()] = attribute(a, op, p, &runtime);
    }
  }
  if (op.id == graph::OpId::batch_norm) check_batch_norm_pure(l, in, attrs);
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

// unbind(x, dim) (ops.h): the list_unbind primitive, its dim a host int.
auto FunctionLowering::unbind(const CallExpr* c, SourceLocation l) -> ir::Value* {
  if (c->getNumArgs() != 2 || isa<CXXMemberCallExpr>(c)) unsupported(l, "'unbind' takes a tensor and a dim here");
  ir::Value* x = expr(c->getArg(0));
  if (!x->type().is_tensor()) unsupported(c->getArg(0)->getExprLoc(), "the operand of 'unbind' must be a tensor");
  return node("list_unbind", {x, index_value(c->getArg(1), l)}, ir::Type::list(), l)->output();
}

// batch_norm is lowered where it is pure: in eval mode (training a constant
// false) or without running stats. Training with running stats updates them in
// place, an effect the IR cannot hold (ops.def): the function runs eagerly.
void FunctionLowering::check_batch_norm_pure(SourceLocation l, const std::vector<ir::Value*>& in,
                                             const ir::Attributes& attrs) {
  const auto it = attrs.find("training");
  const bool* training = it == attrs.end() ? nullptr : std::get_if<bool>(&it->second);
  if (it == attrs.end() || (training && !*training)) return;
  const ir::Node* rm = in.size() > 1 && in[1] ? in[1]->producer() : nullptr;
  if (rm && rm->is(graph::OpId::undefined)) return;
  unsupported(l, "'batch_norm' in training mode updates 'running_mean' and 'running_var' in place, which a graph "
                 "cannot express; pass 'training' as the constant false (eval) or no running stats to lower it");
}

auto FunctionLowering::attribute(const Expr* a, const graph::OpInfo& op, const ParmVarDecl* p,
                                 std::vector<ir::Value*>* runtime) -> ir::AttrValue {
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
  // A graph::Scalar (masked_fill's value): an attribute of its argument's
  // kind, int, float or bool, so that it keeps the Scalar's category.
  if (is_scalar_record(t)) return scalar_attribute(e, at, op, p, runtime);
  // A graph::DType (to's dtype): its token, a constant.
  if (const auto* et = t->getAs<EnumType>(); et && et->getDecl()->getName() == "DType" &&
                                             in_graph_namespace(et->getDecl()->getDeclContext()))
    return dtype_token_of(e, op.name);
  if (t->isBooleanType()) {
    bool b = false;
    if (!e->EvaluateAsBooleanCondition(b, ctx_, /*InConstantContext=*/true) || e->HasSideEffects(ctx_)) return fail();
    return b;
  }
  // An enum (interpolate's InterpolateMode) is its value, an int attribute
  // (a scoped enum is not an integer type to Clang).
  if (t->isIntegerType() || t->isEnumeralType()) {
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

auto FunctionLowering::scalar_attribute(const Expr* e, SourceLocation at, const graph::OpInfo& op,
                                        const ParmVarDecl* p, std::vector<ir::Value*>* runtime) -> ir::AttrValue {
  const Expr* s = strip(e);  // the Scalar's construction from a number
  if (!s->isValueDependent() && !s->containsErrors() && !is_scalar_record(s->getType())) {
    Expr::EvalResult r;
    if (s->getType()->isBooleanType() && s->EvaluateAsRValue(r, ctx_) && !r.HasSideEffects && r.Val.isInt())
      return r.Val.getInt().getBoolValue();
    if (s->getType()->isIntegerType() && s->EvaluateAsInt(r, ctx_) && !r.HasSideEffects &&
        r.Val.getInt().getSignificantBits() <= 64)
      return static_cast<int64_t>(r.Val.getInt().getExtValue());
    llvm::APFloat f(0.0);
    if (s->getType()->isRealFloatingType() && s->EvaluateAsFloat(f, ctx_) && !s->HasSideEffects(ctx_)) {
      bool lost = false;
      f.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven, &lost);
      return f.convertToDouble();
    }
  }
  if (!runtime)
    unsupported(at, "the argument " + quote(p->getName()) + " of " + quote(op.name) + " must be a constant number");
  // A host number known at run time (a Scalar parameter of an inline helper too).
  ir::Value* v = expr(e);
  if (!is_host_number(v->type()))
    unsupported(at, "the argument " + quote(p->getName()) + " of " + quote(op.name) + " must be a number, not a " +
                        v->type().str());
  const size_t first = runtime->size();
  runtime->push_back(v);
  return ir::dynamic_attr_ref(first, first + 1, false);
}

auto FunctionLowering::runtime_attribute(const Expr* e, SourceLocation at, const graph::OpInfo& op,
                                         const ParmVarDecl* p, QualType t,
                                         std::vector<ir::Value*>& runtime) -> ir::AttrValue {
  const std::string what = "the argument " + quote(p->getName()) + " of " + quote(op.name);
  const size_t first = runtime.size();
  auto scalar = [&](ir::Type::Kind want, const char* kind) -> ir::AttrValue {
    ir::Value* v = expr(e);
    const ir::Type::Kind k = v->type().kind;
    // A constant of the graph (a literal passed to an inlined helper's
    // parameter, as graph::narrow's dim): folded like the literal.
    if (const ir::Node* c = v->producer(); c && c->is(graph::OpId::constant) && k == want && c->has_attr("value")) {
      if (const auto* i = std::get_if<int64_t>(&c->attrs().at("value")); i && k == ir::Type::Kind::Int) return *i;
      if (const auto* b = std::get_if<bool>(&c->attrs().at("value")); b && k == ir::Type::Kind::Bool) return *b;
    }
    const bool ok = k == want || (want == ir::Type::Kind::Float && k == ir::Type::Kind::Int);
    if (!ok) unsupported(at, what + " must be " + kind + ", not a " + v->type().str());
    runtime.push_back(v);
    return ir::dynamic_attr_ref(first, first + 1, false);
  };
  if (t->isBooleanType()) return scalar(ir::Type::Kind::Bool, "a bool");
  if (t->isIntegerType() || t->isEnumeralType()) return scalar(ir::Type::Kind::Int, "an integer");
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

auto FunctionLowering::shape_value(const Expr* e, SourceLocation at, bool required) -> ir::Value* {
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

auto FunctionLowering::list_member(const MemberExpr* m) -> ir::Value* {
  const auto* f = cast<FieldDecl>(m->getMemberDecl());
  std::string path = field(m);
  if (auto it = members_.find(path); it != members_.end()) return it->second;
  ir::Value* in = graph_->add_input(ir::Type::tensor(graph::DType::Int64, {ir::Dim::unknown()}), identifier(f->getName()));
  captures_.push_back(path);
  members_[path] = in;
  return in;
}

auto FunctionLowering::dynamic_view(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee,
                                    unsigned first, ir::Value* self) -> ir::Value* {
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
    std::vector<ir::Value*> runtime;  // a dim known only at run time is refused below
    ir::AttrValue d = attribute(dim, op, callee->getParamDecl(0), &runtime);
    if (!runtime.empty())
      unsupported(dim->getExprLoc(), "the argument 'dim' of 'slice' with run-time bounds must be a compile-time "
                                     "constant (a literal or a constexpr value)");
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

auto FunctionLowering::braced_inits(const Expr* e) -> std::optional<std::vector<const Expr*>> {
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

auto FunctionLowering::int_list(const Expr* e) -> std::optional<std::vector<int64_t>> {
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

auto FunctionLowering::inline_call(const CallExpr* c, const FunctionDecl* callee) -> ir::Value* {
  if (callee && tuple_elements(callee->getReturnType()))
    unsupported(c->getExprLoc(), "the tuple this call returns must be unpacked ('auto [a, b] = ...', 'std::get', "
                                 "'std::tie') or assigned to a tuple variable");
  std::vector<ir::Value*> results = inline_results(c, callee);
  return results.at(0);
}

auto FunctionLowering::inline_results(const CallExpr* c, const FunctionDecl* callee) -> std::vector<ir::Value*> {
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
  ir::Value* self_tensor = nullptr;
  unsigned first = 0;
  if (const auto* m = dyn_cast<CXXMethodDecl>(def); m && m->isInstance()) {
    const auto* mc = dyn_cast<CXXMemberCallExpr>(c);
    if (mc && is_tensor_record(mc->getObjectType()) && def->isOutOfLine()) {
      // A Tensor method defined out of the class (x.select(...), ops.h):
      // `*this` is the object's value.
      self_tensor = expr(mc->getImplicitObjectArgument());
    } else if (mc) {
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
  frame.this_tensor = self_tensor;
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
    if (is_scalar_record(p->getType())) {  // a graph::Scalar: its argument's kind (int, float or bool)
      ir::Value* v = expr(a);
      if (!is_host_number(v->type()))
        unsupported(a->getExprLoc(), "this argument is a " + v->type().str() + ", not a number for the parameter " +
                                         quote(p->getName()) + " of " + name);
      params.push_back({p, v});
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
  carry_state(saved_env, env_);  // members updated in place (State.cpp)
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
  carry_state(env_, saved_env);
  env_ = std::move(saved_env);
  partial_ = std::move(saved_partial);
  return results;
}

auto FunctionLowering::conditional(const ConditionalOperator* c) -> ir::Value* {
  ir::Value* cond = condition(c->getCond());
  auto out = ir_type(c->getType());
  if (!out) unsupported(c->getExprLoc(), "'?:' of type " + type_name(c->getType()) + " cannot be lowered");
  ir::Node* n = block_->append("If");
  n->add_input(cond);
  n->set_loc(loc(c->getQuestionLoc()));
  for (const Expr* arm : {c->getTrueExpr(), c->getFalseExpr()}) {
    ir::Block* b = add_block(n, c->getQuestionLoc());
    in_block(b, [&] {
      ++in_conditional_;
      ir::Value* v = expr(arm);
      --in_conditional_;
      if (v->type().kind != out->kind)
        unsupported(arm->getExprLoc(), "this operand of '?:' is a " + v->type().str() + ", not a " + out->str());
      b->add_return(v);
    });
  }
  return n->add_output(*out);
}

auto FunctionLowering::condition(const Expr* e) -> ir::Value* {
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

}  // namespace cxxgraph::lower
