// Module state in static graphs: host getters read at call time
// (is_training(), a module's options), and in-place updates of member
// tensors (a BatchNorm's running stats), functionalized as PyTorch's
// functionalization does: `m.add_(v)` lowers to `add(m, v)` and rebinds the
// member, and the graph ends with one `assign(%m, %last)` per updated member
// (ops.def), which writes the last value into its storage.
//
// An updated member is an environment entry (a synthetic key per member
// path), so Ifs merge it like a variable. Its value before any update is the
// member's graph input, valid in every block: a branch that did not update it
// (or an If before which it was not yet updated) sees that input.
#include "FunctionLowering.h"

namespace cxxgraph::lower {

namespace {

// The in-place Tensor methods the lowering functionalizes, and the op each
// computes out of place.
const char* inplace_op(const CXXMemberCallExpr* mc) {
  const CXXMethodDecl* m = mc->getMethodDecl();
  if (!m || !m->getIdentifier() || !is_tensor_record(mc->getObjectType())) return nullptr;
  static const std::pair<const char*, const char*> ops[] = {{"add_", "add"}, {"sub_", "sub"},   {"mul_", "mul"},
                                                            {"div_", "div"}, {"copy_", "copy"}, {"fill_", "fill"},
                                                            {"zero_", "zero"}};
  for (const auto& [name, op] : ops)
    if (m->getName() == name) return op;
  return nullptr;
}

}  // namespace

auto FunctionLowering::member_dtype(const FieldDecl* f) -> std::optional<graph::DType> {
  for (const auto* a : f->specific_attrs<AnnotateAttr>()) {
    if (a->getAnnotation() != "graph.dtype" || a->args_size() != 1) continue;
    const auto* s = dyn_cast<StringLiteral>((*a->args_begin())->IgnoreParenImpCasts());
    graph::DType d{};
    if (!s || !graph::dtype_from_token(s->getString().str(), d))
      unsupported(f->getLocation(), "GRAPH_MEMBER_DTYPE takes a dtype token (\"i64\")");
    return d;
  }
  return std::nullopt;
}

// True when the getter's expression reads state a graph cannot reach itself
// (a private field, or the result of another call), and reads no tensor.
auto FunctionLowering::host_state_expr(const Stmt* s, bool& tensor) const -> bool {
  bool hidden = false;
  if (const auto* e = dyn_cast<Expr>(s)) {
    if (is_tensor_record(e->getType().getNonReferenceType())) tensor = true;
    if (isa<CallExpr>(e)) hidden = true;
    if (const auto* m = dyn_cast<MemberExpr>(e); m && isa<FieldDecl>(m->getMemberDecl()) && !accessible(m->getMemberDecl()))
      hidden = true;
  }
  for (const Stmt* c : s->children())
    if (c && host_state_expr(c, tensor)) hidden = true;
  return hidden;
}

auto FunctionLowering::host_getter(const CallExpr* c) -> ir::Value* {
  const auto* mc = dyn_cast<CXXMemberCallExpr>(c);
  const CXXMethodDecl* m = mc ? mc->getMethodDecl() : nullptr;
  if (!m || mc->getNumArgs() != 0 || !m->isConst() || !m->getIdentifier() || is_tensor_record(mc->getObjectType()) ||
      m->getReturnType()->isReferenceType() || !accessible(m))
    return nullptr;
  if (m->isVirtual() && !m->getDevirtualizedMethod(mc->getImplicitObjectArgument(), /*IsAppleKext=*/false))
    return nullptr;
  auto t = ir_type(m->getReturnType());
  if (!t || !is_host_number(*t)) return nullptr;
  const FunctionDecl* def = nullptr;
  const auto* body = m->hasBody(def) && def ? dyn_cast_or_null<CompoundStmt>(def->getBody()) : nullptr;
  const auto* r = body && body->size() == 1 ? dyn_cast<ReturnStmt>(body->body_front()) : nullptr;
  bool tensor = false;
  if (!r || !r->getRetValue() || !host_state_expr(r->getRetValue(), tensor) || tensor) return nullptr;
  // A host value of the object's own state: a graph input the prologue reads
  // by calling the getter, so that train()/eval() between calls are seen.
  const std::string path = object_pointer(mc) + "->" + m->getNameAsString() + "()";
  if (auto it = members_.find(path); it != members_.end()) return it->second;
  ir::Value* in = graph_->add_input(*t, identifier(m->getName()));
  captures_.push_back(path);
  members_[path] = in;
  return in;
}

auto FunctionLowering::member_state(const std::string& path) -> ir::Value* {
  auto s = state_of_.find(path);
  if (s == state_of_.end()) return nullptr;
  auto it = env_.find(&s->second->key);
  return it != env_.end() && it->second ? it->second : s->second->input;
}

auto FunctionLowering::updated_member(const Expr* target, const char* method, SourceLocation l) -> const MemberExpr* {
  const Expr* e = target->IgnoreParenImpCasts();
  if (const auto* inner = dyn_cast<CXXMemberCallExpr>(e); inner && inplace_op(inner)) {
    inplace_update(inner);  // `m.mul_(a).add_(b)`: the inner update first
    return updated_member(inner->getImplicitObjectArgument(), method, l);
  }
  const auto* m = dyn_cast<MemberExpr>(e);
  if (m && isa<FieldDecl>(m->getMemberDecl()) && !pair_member(m) && is_tensor_record(m->getType().getNonReferenceType()))
    return m;
  unsupported(l, quote(method) + " writes in place into a tensor that is not a member reachable from 'this' (a local, "
                 "a parameter or a view of a tensor): the graph cannot tell which other tensors share its storage; "
                 "use the out-of-place op");
}

auto FunctionLowering::inplace_update(const CXXMemberCallExpr* mc) -> ir::Value* {
  const char* op = inplace_op(mc);
  if (!op) return nullptr;
  SourceLocation l = mc->getExprLoc();
  const std::string method = mc->getMethodDecl()->getNameAsString();
  bool in_loop = in_conditional_ > 0;
  for (const ir::Block* b = block_; b && b->owner(); b = b->owner()->owner())
    in_loop = in_loop || b->owner()->is(graph::OpId::Loop);
  if (in_loop)
      unsupported(l, quote(method) + " of a member inside a loop or a '?:' cannot be lowered yet: only updates in "
                     "straight-line code and 'if's are written back");
  const MemberExpr* target = updated_member(mc->getImplicitObjectArgument(), method.c_str(), l);
  ir::Value* cur = member(target);
  const std::string path = field(target);
  ir::Value* value = nullptr;
  const std::string o = op;
  if (o == "zero" || o == "fill") {
    value = node("zeros_like", {cur}, ir::Type::tensor(), l)->output();
    if (o == "fill") value = node("add", {value, expr(mc->getArg(0))}, ir::Type::tensor(), l)->output();
  } else if (o == "copy") {
    // src broadcast to the member's shape, as copy_ does.
    ir::Value* src = expr(mc->getArg(0));
    if (!src->type().is_tensor()) unsupported(l, "'copy_' takes a tensor");
    ir::Value* sizes = node("tensor_sizes", {cur}, ir::Type::tensor(graph::DType::Int64, {ir::Dim::unknown()}), l)->output();
    ir::Node* n = node("expand", {src, sizes}, ir::Type::tensor(), l);
    n->attrs()["shape"] = ir::dynamic_attr_ref(1, 2, false);
    value = n->output();
  } else {
    value = node(o, {cur, expr(mc->getArg(0))}, ir::Type::tensor(), l)->output();
  }
  auto s = state_of_.find(path);
  if (s == state_of_.end()) {
    states_.push_back(MemberState{path, members_.at(path), l});
    s = state_of_.emplace(path, &states_.back()).first;
    synthetic_[&states_.back().key] = target->getMemberDecl()->getNameAsString();
  }
  define(&s->second->key, value);
  return value;
}

auto FunctionLowering::merge_state(Env& then_env, Env& else_env) -> void {
  for (MemberState& s : states_) {
    Key k = &s.key;
    const bool t = then_env.count(k) != 0, e = else_env.count(k) != 0;
    if (!t && !e) continue;
    if (!env_.count(k)) define(k, s.input);  // not updated before the If
    if (!t) then_env[k] = env_.at(k);
    if (!e) else_env[k] = env_.at(k);
  }
}

auto FunctionLowering::carry_state(const Env& from, Env& to) -> void {
  for (MemberState& s : states_)
    if (auto it = from.find(&s.key); it != from.end()) to[&s.key] = it->second;
}

auto FunctionLowering::write_back() -> void {
  for (MemberState& s : states_) {
    auto it = env_.find(&s.key);
    if (it == env_.end() || !it->second || it->second == s.input) continue;
    ir::Node* n = graph_->top()->append("assign");
    n->add_input(s.input);
    n->add_input(it->second);
    n->set_loc(loc(s.at));  // the first update
  }
}

}  // namespace cxxgraph::lower
