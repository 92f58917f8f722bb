#pragma once
// Private to ir/: small graph surgery shared by the passes (inline_calls,
// const_fold, dce, simplify, fuse_attention). The IR's own mutators (ir.h) append, insert and erase
// single nodes; these compose them for the moves the passes need while
// keeping every Value's users list exact.
#include <optional>
#include <unordered_map>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir::detail {

using ValueMap = std::unordered_map<const Value*, Value*>;

// Erases `n` and everything nested in it; uses of outer values by nested
// nodes are dropped too. `n`'s outputs must be unused.
void erase_node(Node* n);

// A copy of `src` placed before `pos` in `pos`'s block (or appended to `dst`
// when `pos` is null): same op, attributes, location and output types, inputs
// mapped through `env` (unmapped inputs are kept), nested blocks copied
// recursively. Every output and block parameter of the copy is added to `env`.
Node* clone_node(const Node* src, Block* dst, const Node* pos, ValueMap& env);

// The number a constant node holds (int or float; not bool), when `v` is the
// output of one.
std::optional<double> constant_number(const Value* v);

// Moves `nodes` (in order, from any blocks) to just before `pos`.
void move_before(const std::vector<Node*>& nodes, Node* pos);

// True when `v` is an input of some node or a return of some block under
// `root` (which should be the graph's top block).
bool is_used(const Value* v, const Block* root);

// Rebuilds a node with blocks (If, Loop) keeping only some inputs, outputs,
// and per block some parameters and returns; nested nodes move over to the
// new node and uses are redirected. Returns the new node; `n` is erased.
struct Keep {
  std::vector<bool> inputs, outputs;
  std::vector<std::vector<bool>> params, returns;  // per block
};
Node* rebuild(Node* n, const Keep& keep);

}  // namespace graph::ir::detail
