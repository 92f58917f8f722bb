// fuse_elementwise: groups elementwise tensor ops into FusionGroup nodes, each
// of which codegen turns into one loop over the broadcast output.
//
// Precondition: the graph verifies and has run infer_types. Per block, one
// walk in order: a fusable node joins (and merges) the still-open groups that
// produce its inputs, or starts a new group; any other use of a group's value
// (by a node outside it, by a node nested in an If/Loop, or by a block
// return) seals the group. An open group's values are therefore used only by
// its own members, so moving all members to the position of the last one
// cannot place a definition after a use: fusion never creates a cycle.
#include <algorithm>
#include <map>
#include <memory>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

// An elementwise op-table node over at least one tensor, with every tensor
// dtype known (codegen needs the element types to write the loop).
bool fusable(const Node* n) {
  const OpInfo* info = n->table_op();
  if (!info || info->kind != OpKind::Elementwise || !n->blocks().empty() || n->num_outputs() != 1)
    return false;
  bool any_tensor = false;
  for (const Value* v : n->inputs()) {
    if (!v->type().is_tensor()) continue;
    if (!v->type().dtype) return false;
    any_tensor = true;
    // The eager ops reject neg of bool and sub with bool with a clear message;
    // leave those to them rather than compute something silently.
    if (*v->type().dtype == DType::Bool && (info->id == OpId::neg || info->id == OpId::sub)) return false;
  }
  const Type& out = n->output()->type();
  return any_tensor && out.is_tensor() && out.dtype.has_value();
}

// Every value a node's nested blocks read (inputs and returns, recursively).
void nested_uses(const Node* n, std::vector<const Value*>& out) {
  for (const auto& b : n->blocks()) {
    for (const Value* r : b->returns()) out.push_back(r);
    for (const auto& inner : b->nodes()) {
      for (const Value* v : inner->inputs()) out.push_back(v);
      nested_uses(inner.get(), out);
    }
  }
}

struct Group {
  std::vector<Node*> members;  // in block order
  bool sealed = false;
  bool merged_away = false;  // absorbed into another group
};

class BlockFuser {
 public:
  explicit BlockFuser(Block* b) : block_(b) {}

  void run() {
    std::vector<Node*> order;
    for (const auto& n : block_->nodes()) order.push_back(n.get());
    for (Node* n : order) visit(n);
    for (auto& g : groups_)
      if (!g->merged_away) build(*g);
  }

 private:
  Group* group_of(const Value* v) const {
    auto it = producer_group_.find(v->producer());
    return it == producer_group_.end() ? nullptr : it->second;
  }

  void visit(Node* n) {
    if (!fusable(n)) {
      for (const Value* v : n->inputs()) seal(v);
      std::vector<const Value*> inner;
      nested_uses(n, inner);
      for (const Value* v : inner) seal(v);
      return;
    }
    Group* target = nullptr;
    for (const Value* v : n->inputs()) {
      Group* g = group_of(v);
      if (!g || g->sealed) continue;
      if (!target) target = g;
      else if (g != target) merge(target, g);
    }
    if (!target) {
      groups_.push_back(std::make_unique<Group>());
      target = groups_.back().get();
    }
    target->members.push_back(n);
    producer_group_[n] = target;
  }

  void seal(const Value* v) {
    if (Group* g = group_of(v)) g->sealed = true;
  }

  // Moves `from`'s members into `into`, keeping block order.
  void merge(Group* into, Group* from) {
    for (Node* m : from->members) producer_group_[m] = into;
    into->members.insert(into->members.end(), from->members.begin(), from->members.end());
    std::unordered_map<const Node*, size_t> pos;
    size_t i = 0;
    for (const auto& n : block_->nodes()) pos[n.get()] = i++;
    std::sort(into->members.begin(), into->members.end(),
              [&](const Node* a, const Node* b) { return pos[a] < pos[b]; });
    from->members.clear();
    from->merged_away = true;
  }

  // True when `v` is read anywhere but by the group's members: by another
  // node (users() covers nested blocks) or by any block's returns.
  bool escapes(const Value* v, const std::unordered_set<const Node*>& members) const {
    for (const Node* u : v->users())
      if (!members.count(u)) return true;
    return returned_anywhere(block_, v);
  }

  static bool returned_anywhere(const Block* b, const Value* v) {
    if (std::find(b->returns().begin(), b->returns().end(), v) != b->returns().end()) return true;
    for (const auto& n : b->nodes())
      for (const auto& inner : n->blocks())
        if (returned_anywhere(inner.get(), v)) return true;
    return false;
  }

  void build(const Group& g) {
    const std::unordered_set<const Node*> members(g.members.begin(), g.members.end());
    Node* fg = block_->insert_before(g.members.back(), "FusionGroup");
    fg->set_loc(g.members.front()->loc());
    Block* body = fg->add_block();

    // External inputs, in order of first use, become the block's parameters.
    std::unordered_map<const Value*, Value*> param_for;
    for (Node* m : g.members)
      for (Value* v : m->inputs()) {
        if (members.count(v->producer()) || param_for.count(v)) continue;
        fg->add_input(v);
        param_for[v] = body->add_param(v->type(), v->name());
      }

    // Values read outside the group, decided before anything moves.
    std::vector<Value*> escaping;
    for (Node* m : g.members)
      for (Value* v : m->outputs())
        if (escapes(v, members)) escaping.push_back(v);

    for (Node* m : g.members) {
      body->move_to_end(m);
      for (size_t i = 0; i < m->inputs().size(); ++i) {
        auto it = param_for.find(m->input(i));
        if (it != param_for.end()) m->replace_input(i, it->second);
      }
    }
    for (Value* v : escaping) {
      Value* out = fg->add_output(v->type(), v->name());
      replace_uses(block_, v, out, body);
    }
    body->set_returns(escaping);
  }

  Block* block_;
  std::vector<std::unique_ptr<Group>> groups_;
  std::unordered_map<const Node*, Group*> producer_group_;
};

// Nested blocks first, so the outer walk sees their FusionGroups' inputs as
// ordinary uses. FusionGroup bodies are never re-fused.
void fuse_block(Block* b) {
  for (const auto& n : b->nodes()) {
    if (n->is(OpId::FusionGroup)) continue;
    for (const auto& inner : n->blocks()) fuse_block(inner.get());
  }
  BlockFuser(b).run();
}

}  // namespace

void fuse_elementwise(Graph& g) { fuse_block(g.top()); }

std::vector<std::string> fusion_summary(const Graph& g) {
  std::vector<std::string> out;
  walk(g.top(), [&](const Node* n) {
    if (!n->is(OpId::FusionGroup) || n->blocks().size() != 1) return;
    std::string line;
    for (const auto& m : n->block(0)->nodes()) {
      if (!line.empty()) line += ',';
      line += m->op();
    }
    out.push_back(line);
  });
  return out;
}

}  // namespace graph::ir
