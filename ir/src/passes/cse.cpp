// cse: common subexpression elimination.
//
// Precondition: the graph verifies. One walk in order with a scoped table
// from a node's key (op, attributes, inputs, output types) to the first node
// with that key: a nested block sees the table as it stands at its owner,
// so it may reuse values of enclosing blocks, and its own entries go when it
// ends, so they never leak out. FusionGroup bodies start empty (a group reads nothing
// from outside). Output types are part of the key so that a replacement never
// changes what a user sees.
#include <unordered_map>
#include <string>
#include <vector>

#include "graph/ir/passes.h"
#include "graph/op_table.h"

namespace graph::ir {

namespace {

// Nodes whose outputs depend on their inputs and attributes only: the op
// table's Pure trait, less the nodes that draw random numbers (dropout, and
// attention with a dropout_p).
bool pure(const Node* n) {
  if (!n->blocks().empty()) return false;
  const OpInfo* info = n->info();
  return info && info->has(op_trait::Pure) && !is_random(*n);
}

std::string attr_key(const AttrValue& a) {
  if (auto* i = std::get_if<int64_t>(&a)) return "i" + std::to_string(*i);
  if (auto* d = std::get_if<double>(&a)) {
    // Bit-exact: 0.0 and -0.0 are different constants.
    char buf[32];
    snprintf(buf, sizeof buf, "d%a", *d);
    return buf;
  }
  if (auto* b = std::get_if<bool>(&a)) return *b ? "btrue" : "bfalse";
  if (auto* s = std::get_if<std::string>(&a)) return "s" + quote(*s);
  std::string out = "l";
  for (int64_t v : std::get<std::vector<int64_t>>(a)) out += std::to_string(v) + ",";
  return out;
}

// A key identifying what a pure node computes. Inputs are named by address:
// equal keys mean the very same input values.
std::string key(const Node* n) {
  std::string k = std::to_string(static_cast<int>(n->op_id())) + "{";
  for (const auto& [name, v] : n->attrs()) k += name + "=" + attr_key(v) + ";";
  k += "}(";
  for (const Value* v : n->inputs()) k += std::to_string(reinterpret_cast<uintptr_t>(v)) + ",";
  k += ")->";
  for (const Value* v : n->outputs()) k += v->type().str() + ",";
  return k;
}

// Keys in scope. A nested block's entries are taken out again when the walk
// leaves it (an undo list rather than a copy per block: long functions have
// hundreds of nested blocks).
using Table = std::unordered_map<std::string, Node*>;

void cse_block(Block* b, Table& table) {
  std::vector<std::string> added;
  std::vector<Node*> order;
  for (const auto& n : b->nodes()) order.push_back(n.get());
  for (Node* n : order) {
    for (const auto& inner : n->blocks()) {
      if (n->is(OpId::FusionGroup)) {
        Table own;
        cse_block(inner.get(), own);
      } else {
        cse_block(inner.get(), table);
      }
    }
    if (!pure(n)) continue;
    auto [it, fresh] = table.emplace(key(n), n);
    if (fresh) {
      added.push_back(it->first);
      continue;
    }
    for (size_t i = 0; i < n->num_outputs(); ++i) replace_uses(b, n->output(i), it->second->output(i));
    b->erase(n);
  }
  for (const auto& k : added) table.erase(k);
}

}  // namespace

void cse(Graph& g) {
  Table table;
  cse_block(g.top(), table);
}

}  // namespace graph::ir
