#pragma once
// Which outputs of a graph each value of its top block flows to.
//
// A backward graph returns one gradient per input that may require grad; at
// run time only some do (static_autograd.h). With this map the generated
// backward and the interpreter skip a top-block node whose outputs reach only
// unwanted gradients, and narrow a gradient op's grad_mask to the outputs
// some wanted gradient needs. Skipping is safe because need only shrinks
// downstream: every value a node reads reaches at least what the node's
// outputs reach, so a node that runs never reads a skipped value.
//
// Exact at the top block. A node with nested blocks (If, Loop, FusionGroup)
// counts as one: everything it reads, inside its blocks too, reaches what any
// of its outputs reaches.
#include <cstddef>
#include <unordered_map>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

class OutputReach {
 public:
  explicit OutputReach(const Graph& g);

  // The indices of the graph outputs `v` flows to, ascending; empty for a
  // value no output depends on.
  const std::vector<size_t>& of(const Value* v) const;
  // The union over the outputs of `n`.
  std::vector<size_t> of_node(const Node* n) const;
  size_t num_outputs() const { return num_outputs_; }
  bool reaches_all(const std::vector<size_t>& reach) const { return reach.size() == num_outputs_; }

  // Whether some output in `reach` is needed (`needed`: one flag per output).
  static bool any(const std::vector<size_t>& reach, const std::vector<bool>& needed);

 private:
  std::unordered_map<const Value*, std::vector<size_t>> reach_;
  size_t num_outputs_ = 0;
};

}  // namespace graph::ir
