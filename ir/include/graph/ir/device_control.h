#pragma once
// Which If and Loop nodes run as CUDA conditional graph nodes when their
// graph is captured into a CUDA Graph (runtime/include/graph/device_control.h).
// Codegen emits the device path for these nodes only, and cuda_graph_blocker
// (below, run by compile.h at build time) refuses the graphs whose tensor
// conditions cannot become conditional nodes, so both decide alike.
// Header-only.
//
// A node on a tensor condition qualifies when what it gives the rest of the
// graph can live in fixed device buffers: an If whose outputs are all
// tensors; a Loop whose carried values are all tensors and whose body does
// not read its iteration number (a host int, unknown on the host inside a
// While node's body). A node on a host condition (bool, int, float) needs no
// conditional node: every host value of a static graph follows from the
// call's signature (scalars, shapes), so the capture bakes the decision.
// The one exception, `item` (a value read from a tensor), is ReadsHost, so
// its graph is never captured (cuda_graph_blocker).
#include <functional>
#include <string>

#include "graph/ir/ir.h"

namespace graph::ir {

// True when the If or Loop node decides on a tensor.
inline bool has_tensor_condition(const Node* n) {
  if (n->is(OpId::If)) return n->input(0)->type().is_tensor();
  if (n->is(OpId::Loop))
    return n->input(1)->type().is_tensor() || n->block(0)->returns().at(0)->type().is_tensor();
  return false;
}

// Why the If or Loop node on a tensor condition cannot be a conditional
// node ("" when it can, or when its condition is a host value).
inline std::string device_control_refusal(const Node* n) {
  if (!has_tensor_condition(n)) return "";
  if (n->is(OpId::If)) {
    for (const Value* v : n->outputs())
      if (!v->type().is_tensor()) return "an If on a tensor condition gives a host value (" + v->name() + ")";
    return "";
  }
  for (const Value* v : n->outputs())
    if (!v->type().is_tensor()) return "a Loop on a tensor condition carries a host value (" + v->name() + ")";
  if (!n->block(0)->param(0)->users().empty())
    return "a Loop on a tensor condition reads its iteration number on the host";
  return "";
}

// Why graph `g` must not be captured into a CUDA Graph ("" when it may be):
// an If or Loop on a tensor condition that cannot become a conditional node
// (device_control_refusal; host conditions are decided per signature), random
// numbers drawn per call (dropout: a replay would repeat the mask), ops that
// read device values on the host (embedding's range check, cross_entropy's
// targets) or build masks there, and effects: writes into an input (assign: a
// module buffer updated in place) and a train step's set_grads. Decided at
// build time (compile.h) and stored
// with the compiled graph, so the runtime never looks at the IR for it.
inline std::string cuda_graph_blocker(const Graph& g) {
  std::string reason;
  const std::function<void(const Block*)> visit = [&](const Block* b) {
    for (const auto& n : b->nodes()) {
      if (!reason.empty()) return;
      const Node& m = *n;
      const OpInfo* info = m.info();
      if (m.is(OpId::If) || m.is(OpId::Loop)) {
        const std::string refusal = device_control_refusal(n.get());
        if (!refusal.empty())
          reason = m.op() + " (at " + (m.loc().valid() ? m.loc().file + ":" + std::to_string(m.loc().line) : "?") +
                   "): " + refusal;
      } else if (is_random(m)) {  // the op table's Random traits
        reason = m.op() + ": random numbers are drawn per call, a replay would repeat them";
      } else if (info && info->has(op_trait::ReadsHost)) {
        reason = m.op() + ": reads device values on the host";
      } else if (m.is(OpId::assign)) {  // a replay writes the captured buffers, not the caller's tensor
        reason = "assign: the graph writes a module buffer in place";
      } else if (info && info->has(op_trait::Effectful) && !m.is(OpId::call)) {
        reason = m.op() + ": writes state outside the graph (.grad) that a replay would not";
      }
      for (size_t i = 0; reason.empty() && i < n->blocks().size(); ++i) visit(n->block(i));
    }
  };
  visit(g.top());
  return reason;
}

}  // namespace graph::ir
