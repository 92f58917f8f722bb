#include "graph/ir/ir.h"

#include <algorithm>

#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph::ir {


std::string Type::str() const {
  switch (kind) {
    case Kind::Int: return "int";
    case Kind::Float: return "float";
    case Kind::Bool: return "bool";
    case Kind::List: return "list";
    case Kind::Tensor: break;
  }
  std::string s = dtype ? std::string(dtype_token(*dtype)) : "Tensor";
  if (!dims) return s;
  s += '[';
  for (size_t i = 0; i < dims->size(); ++i) {
    const Dim& d = (*dims)[i];
    if (i) s += ", ";
    s += d.is_static() ? std::to_string(d.size) : d.symbol.empty() ? "?" : d.symbol;
  }
  return s + ']';
}

Block* Value::owning_block() const { return producer_ ? producer_->owner() : param_of_; }

std::vector<Value*> Node::outputs() const {
  std::vector<Value*> out;
  for (const auto& v : outputs_) out.push_back(v.get());
  return out;
}

void Node::add_input(Value* v) {
  inputs_.push_back(v);
  v->users_.push_back(this);
}

void Node::replace_input(size_t i, Value* v) {
  Value* old = inputs_.at(i);
  auto it = std::find(old->users_.begin(), old->users_.end(), this);
  if (it != old->users_.end()) old->users_.erase(it);
  inputs_[i] = v;
  v->users_.push_back(this);
}

void Node::drop_inputs() {
  for (Value* v : inputs_) {
    auto it = std::find(v->users_.begin(), v->users_.end(), this);
    if (it != v->users_.end()) v->users_.erase(it);
  }
  inputs_.clear();
}

Value* Node::add_output(Type t, std::string name) {
  outputs_.emplace_back(new Value(std::move(t), std::move(name)));
  outputs_.back()->producer_ = this;
  return outputs_.back().get();
}

Block* Node::add_block() {
  blocks_.emplace_back(new Block);
  blocks_.back()->owner_ = this;
  return blocks_.back().get();
}

Value* Block::add_param(Type t, std::string name) {
  params_.emplace_back(new Value(std::move(t), std::move(name)));
  params_.back()->param_of_ = this;
  return params_.back().get();
}

Node* Block::append(std::string op) {
  nodes_.emplace_back(new Node(std::move(op)));
  nodes_.back()->owner_ = this;
  return nodes_.back().get();
}

Node* Block::insert_before(const Node* pos, std::string op) {
  auto it = std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& n) { return n.get() == pos; });
  auto made = nodes_.emplace(it, new Node(std::move(op)));
  (*made)->owner_ = this;
  return made->get();
}

void Block::move_to_end(Node* n) {
  Block* from = n->owner_;
  auto it = std::find_if(from->nodes_.begin(), from->nodes_.end(), [&](const auto& p) { return p.get() == n; });
  nodes_.splice(nodes_.end(), from->nodes_, it);
  n->owner_ = this;
}

void Block::erase(Node* n) {
  n->drop_inputs();
  nodes_.remove_if([&](const auto& p) { return p.get() == n; });
}

void replace_uses(Block* root, Value* from, Value* to, const Block* skip) {
  if (root == skip) return;
  for (const auto& n : root->nodes()) {
    for (size_t i = 0; i < n->inputs().size(); ++i)
      if (n->input(i) == from) n->replace_input(i, to);
    for (const auto& b : n->blocks()) replace_uses(b.get(), from, to, skip);
  }
  std::vector<Value*> rets = root->returns();
  for (Value*& r : rets)
    if (r == from) r = to;
  root->set_returns(std::move(rets));
}

bool is_value_primitive(OpId id) {
  return id != OpId::unknown && op_info(id).kind == OpKind::Value && id != OpId::constant && id != OpId::undefined;
}

bool is_random(const Node& n) {
  const OpInfo* info = n.info();
  if (!info) return false;
  if (info->has(op_trait::Random)) return true;
  if (!info->has(op_trait::RandomIfDropoutP)) return false;
  auto it = n.attrs().find("dropout_p");
  if (it == n.attrs().end()) return false;  // the default, 0
  if (const auto* d = std::get_if<double>(&it->second)) return *d != 0.0;
  if (const auto* i = std::get_if<int64_t>(&it->second)) return *i != 0;
  return true;  // known at run time only ("@i")
}

std::optional<DynamicAttr> dynamic_attr(const Node& n, const std::string& name) {
  auto it = n.attrs().find(name);
  if (it == n.attrs().end()) return std::nullopt;
  const auto* s = std::get_if<std::string>(&it->second);
  if (!s || s->size() < 2 || (*s)[0] != '@') return std::nullopt;
  DynamicAttr d;
  size_t colon = s->find(':');
  try {
    size_t used = 0;
    d.begin = std::stoul(s->substr(1, colon == std::string::npos ? std::string::npos : colon - 1), &used);
    if (used + 1 != (colon == std::string::npos ? s->size() : colon)) return std::nullopt;
    if (colon == std::string::npos) {
      d.end = d.begin + 1;
    } else {
      d.range = true;
      d.end = std::stoul(s->substr(colon + 1), &used);
      if (colon + 1 + used != s->size() || d.end < d.begin) return std::nullopt;
    }
  } catch (const std::exception&) {
    return std::nullopt;
  }
  return d;
}

bool has_dynamic_attrs(const Node& n) {
  for (const auto& [k, v] : n.attrs())
    if (dynamic_attr(n, k)) return true;
  return false;
}

size_t num_op_inputs(const Node& n) {
  size_t first = n.inputs().size();
  for (const auto& [k, v] : n.attrs())
    if (auto d = dynamic_attr(n, k)) first = std::min(first, d->begin);
  return first;
}

std::string dynamic_attr_ref(size_t begin, size_t end, bool range) {
  return "@" + std::to_string(begin) + (range ? ":" + std::to_string(end) : "");
}

namespace {

// Whether every use of `v` by `n` is an operand the op allows to be undefined.
bool optional_operand(const Node* n, const Value* v) {
  const OpInfo* info = n->table_op();
  if (!info) return false;
  for (size_t i = 0; i < n->inputs().size(); ++i) {
    if (n->input(i) != v) continue;
    const bool optional = (info->id == OpId::linear && i == 2) || ((info->id == OpId::conv2d || info->id == OpId::conv_transpose2d) && i == 2) ||
                          (info->id == OpId::layer_norm && (i == 1 || i == 2)) ||
                          (info->id == OpId::scaled_dot_product_attention && i == 3) ||
                          (info->id == OpId::batch_norm && i >= 1 && i <= 4);
    if (!optional) return false;
  }
  return true;
}

// `c` is defined(v), or its negation.
bool tests_defined(const Value* c, const Value* v) {
  const Node* p = c->producer();
  while (p && p->is(OpId::logical_not)) p = p->input(0)->producer();
  return p && p->is(OpId::defined) && p->input(0) == v;
}

// `n` runs only inside an If on defined(v).
bool under_defined_test(const Node* n, const Value* v) {
  for (const Block* b = n->owner(); b && b->owner(); b = b->owner()->owner())
    if (b->owner()->is(OpId::If) && tests_defined(b->owner()->input(0), v)) return true;
  return false;
}

}  // namespace

bool may_be_undefined(const Value* input) {
  bool optional = false;
  for (const Node* n : input->users()) {
    if (n->is(OpId::defined) || optional_operand(n, input)) {
      optional = true;
      continue;
    }
    if (under_defined_test(n, input)) continue;
    if (n->is(OpId::FusionGroup)) {  // the group's parameter stands for it
      for (size_t i = 0; i < n->inputs().size(); ++i)
        if (n->input(i) == input && !may_be_undefined(n->block(0)->param(i))) return false;
      optional = true;
      continue;
    }
    return false;
  }
  return optional;
}

bool unread_input(const Graph& g, const Value* input) {
  if (!input->users().empty()) return false;
  for (const Value* out : g.outputs())
    if (out == input) return false;
  return true;
}

Value* add_constant(Block* b, int64_t v) {
  Node* n = b->append("constant");
  n->attrs()["value"] = v;
  return n->add_output(Type::int_());
}

Value* add_constant(Block* b, double v) {
  Node* n = b->append("constant");
  n->attrs()["value"] = v;
  return n->add_output(Type::float_());
}

Value* add_constant(Block* b, bool v) {
  Node* n = b->append("constant");
  n->attrs()["value"] = v;
  return n->add_output(Type::bool_());
}

Value* add_bool_to_int(Block* b, Value* cond, const SourceLoc& loc) {
  Node* n = b->append("If");
  n->add_input(cond);
  n->set_loc(loc);
  for (int64_t v : {int64_t{1}, int64_t{0}}) {
    Block* branch = n->add_block();
    Value* c = add_constant(branch, v);
    c->producer()->set_loc(loc);
    branch->add_return(c);
  }
  return n->add_output(Type::int_());
}

}  // namespace graph::ir
