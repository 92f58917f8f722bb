#pragma once
// Internal to the autodiff pass (autodiff.cpp, autodiff_rules.cpp).
//
// A Scope builds the backward of one forward block: the graph's top block, an
// If branch or a Loop body. It maps forward values to values usable in its
// backward block (fwd()), saving them across the forward/backward boundary as
// needed, and accumulates the gradients of the forward values its block uses.
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir::autodiff_detail {

class Differentiator;

class Scope {
 public:
  enum class Kind { Top, Branch, Body };

  Scope(Differentiator& d, Scope* parent, Kind kind, Block* fwd, Block* bwd, Node* fwd_node = nullptr,
        size_t branch = 0);

  // Forward value `v` as a value of this scope's backward block.
  Value* fwd(Value* v);
  // A new node in the backward block (before the nested node being built, if
  // any), with the current forward node's source location and one tensor output
  // per `outputs`.
  Node* emit(const std::string& op, const std::vector<Value*>& inputs, size_t outputs = 1);
  Value* emit1(const std::string& op, const std::vector<Value*>& inputs) { return emit(op, inputs)->output(); }
  // emit1 of a list primitive: its one output is a list.
  Value* emit_list(const std::string& op, const std::vector<Value*>& inputs);
  // Zeros shaped like backward value `like`: a tensor, or a list of them.
  Value* zeros(Value* like);

  // Adds `g` to the gradient of forward value `v` (nothing when `v` carries
  // no gradient). `reached`, a backward bool, makes `g` conditional: zero
  // unless it holds (see reach_).
  void accumulate(Value* v, Value* g, Value* reached = nullptr);
  Value* grad(const Value* v) const;
  // The flag `v`'s gradient is conditional on, or null when it is not.
  Value* reached(const Value* v) const;
  void run();  // the backward of every node of the forward block, in reverse

 private:

  Value* save(Value* v);           // `v` is defined in this scope's forward block
  Value* save_in_branch(Value* v);
  Value* save_in_body(Value* v);
  Value* int_constant(int64_t value);
  Value* bool_constant(bool value);
  Value* bool_as_int(Value* v);
  void node(Node* n);
  void gated(Node* n, const std::vector<Value*>& out_grads, Value* flag);
  void backward_of(Node* n, const std::vector<Value*>& out_grads);
  Value* any_of(Value* a, Value* b);  // a || b, as an If
  void if_(Node* n, const std::vector<Value*>& out_grads);
  void loop(Node* n, const std::vector<Value*>& out_grads);
  // Forward values from enclosing blocks that got a gradient here, in order.
  std::vector<Value*> outer_grads() const;

  Differentiator& d_;
  Scope* parent_;
  Kind kind_;
  Block* fwd_;
  Block* bwd_;
  Node* fwd_node_;  // the forward If or Loop owning fwd_ (Branch, Body)
  size_t branch_;   // which If branch (Branch)
  Value* iter_ = nullptr;    // Body: the forward iteration this backward iteration undoes
  Node* anchor_ = nullptr;   // the nested backward node being built: new nodes go before it
  const Node* current_ = nullptr;
  std::unordered_map<const Value*, Value*> memo_;
  std::unordered_map<const Value*, Value*> grads_;
  std::vector<const Value*> grad_order_;  // keys of grads_ in first-seen order (deterministic output)
  // Gradients that are zero unless a flag holds: an If's backward gives zeros
  // for a value from a branch that does not read it, and that value's forward
  // may be NaN or infinite there (log1p(x) at x < -1, say). Running its
  // producer's backward on the zeros would give 0 * NaN = NaN where eager, which
  // never visits the value, gives a finite gradient (docs/fuzzing.md K5). So a
  // node whose output gradients are all conditional runs its backward under an
  // If on their flags, and passes the condition on to its inputs' gradients.
  std::unordered_map<const Value*, Value*> reach_;
};

// The gradients of `n`'s inputs (null: none) from those of its outputs (null:
// zero), built in `s`. `wanted[i]` says whether input i needs one. Throws
// graph::Error when `n` has no gradient.
std::vector<Value*> op_gradients(Scope& s, const Node& n, const std::vector<Value*>& out_grads,
                                 const std::vector<bool>& wanted);

// How a node passes on the gradients of its inputs: Through its outputs, None
// (they provably carry none: comparisons, argmax, metadata reads), or Unknown
// (autodiff must refuse the graph rather than drop a gradient).
enum class Flow { Through, None, Unknown };
Flow gradient_flow(const Node& n);

}  // namespace graph::ir::autodiff_detail
