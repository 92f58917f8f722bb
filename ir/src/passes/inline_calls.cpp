// inline_calls: replaces call{callee="f"} nodes by copies of f's body.
//
// Precondition: the graph verifies. Each callee is first copied (through the
// text format, an exact round trip) and its own calls inlined, with the chain
// of callees being inlined on a stack so that recursion is reported instead
// of unrolled forever; the inlined copy is then cloned in place of each call.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "../rewrite.h"
#include "graph/error.h"
#include "graph/ir/passes.h"

namespace graph::ir {

namespace {

std::string where(const Node* n) {
  const SourceLoc& l = n->loc();
  return l.valid() ? " at " + l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col) : "";
}

class Inliner {
 public:
  explicit Inliner(const std::vector<std::unique_ptr<Graph>>& module) : module_(module) {}

  void graph(Graph& g, std::vector<std::string>& stack) {
    stack.push_back(g.name());
    block(g.top(), stack);
    stack.pop_back();
  }

 private:
  void block(Block* b, std::vector<std::string>& stack) {
    std::vector<Node*> order;
    for (const auto& n : b->nodes()) order.push_back(n.get());
    for (Node* n : order) {
      for (const auto& inner : n->blocks()) block(inner.get(), stack);
      if (n->is(OpId::call)) inline_call(n, stack);
    }
  }

  const Graph& callee(const Node* call, std::vector<std::string>& stack) {
    const std::string& name = call->s("callee");
    if (std::find(stack.begin(), stack.end(), name) != stack.end()) {
      std::string cycle;
      auto from = std::find(stack.begin(), stack.end(), name);
      for (auto it = from; it != stack.end(); ++it) cycle += *it + " -> ";
      throw Error("inline_calls: recursive call" + where(call) + ": " + cycle + name);
    }
    if (auto it = inlined_.find(name); it != inlined_.end()) return *it->second;
    const Graph* src = nullptr;
    for (const auto& g : module_)
      if (g->name() == name) src = g.get();
    if (!src) throw Error("inline_calls: call" + where(call) + " to unknown graph '" + name + "'");
    std::unique_ptr<Graph> copy = parse(print(*src));
    graph(*copy, stack);
    return *(inlined_[name] = std::move(copy));
  }

  void check_signature(const Node* call, const Graph& f) {
    const std::string what = "inline_calls: call" + where(call) + " to '" + f.name() + "'";
    if (call->inputs().size() != f.inputs().size())
      throw Error(what + " passes " + std::to_string(call->inputs().size()) + " arguments, the graph takes " +
                  std::to_string(f.inputs().size()));
    if (call->num_outputs() != f.outputs().size())
      throw Error(what + " expects " + std::to_string(call->num_outputs()) + " results, the graph returns " +
                  std::to_string(f.outputs().size()));
    for (size_t i = 0; i < call->inputs().size(); ++i)
      if (call->input(i)->type().kind != f.inputs()[i]->type().kind)
        throw Error(what + ": argument " + std::to_string(i) + " is " + call->input(i)->type().str() +
                    ", the parameter is " + f.inputs()[i]->type().str());
    for (size_t i = 0; i < call->num_outputs(); ++i)
      if (call->output(i)->type().kind != f.outputs()[i]->type().kind)
        throw Error(what + ": result " + std::to_string(i) + " is " + call->output(i)->type().str() +
                    ", the graph returns " + f.outputs()[i]->type().str());
  }

  void inline_call(Node* call, std::vector<std::string>& stack) {
    const Graph& f = callee(call, stack);
    check_signature(call, f);
    detail::ValueMap env;
    for (size_t i = 0; i < f.inputs().size(); ++i) env[f.inputs()[i].get()] = call->input(i);
    for (const auto& n : f.top()->nodes()) detail::clone_node(n.get(), nullptr, call, env);
    for (size_t i = 0; i < call->num_outputs(); ++i) {
      replace_uses(call->owner(), call->output(i), env.at(f.outputs()[i]));
    }
    detail::erase_node(call);
  }

  const std::vector<std::unique_ptr<Graph>>& module_;
  std::map<std::string, std::unique_ptr<Graph>> inlined_;
};

}  // namespace

void inline_calls(Graph& g, const std::vector<std::unique_ptr<Graph>>& module) {
  std::vector<std::string> stack;
  Inliner(module).graph(g, stack);
}

}  // namespace graph::ir
