#pragma once
// The graph IR: Value, Node, Block, Graph.
//
// Ownership: a Graph owns its top Block; a Block owns its parameters and its
// Nodes (in order); a Node owns its output Values and its nested Blocks. A
// Value is produced either by a Node (an output) or by a Block (a parameter).
// Inputs and block returns are non-owning pointers to Values.
//
// Control flow is structured, as in TorchScript:
//
//   %y : Tensor = If(%cond)
//     block() { ...; -> (%a) }          // taken when %cond is true
//     block() { ...; -> (%b) }          // otherwise
//
//   %i.2 : int, %h.2 : Tensor = Loop(%max_trips, %cond0, %i.1, %h.1)
//     block(%iter : int, %i : int, %h : Tensor) { ...; -> (%cond, %i.n, %h.n) }
//
// Other primitives (not op-table entries):
//   constant{value=V}()             a host int, float or bool
//   call{callee="f"}(%a, ...)      calls graph `f` of the same module
//                                  (removed by the inline_calls pass)
//   undefined()                    an undefined tensor: a missing optional
//                                  input (a linear without bias) or a zero
//                                  gradient
//   list_new()                     an empty list
//   list_append(%l, %t)            %l with %t appended (a new list value)
//   list_get(%l, %i)               element %i of %l (negative from the end)
//   list_len(%l)                   the number of elements (an int)
// The gradients of lists, which the autodiff pass emits (one gradient per
// element; runtime: graph/detail/list_grad.h):
//   list_split_like(%g, %l, %dim)  cat's: %g cut along %dim like %l's elements
//   list_unbind(%g, %dim)          stack's: %g's slices along %dim, dim removed
//   list_add(%a, %b)               element by element
//   list_zeros_like(%l)            zeros like each element
//   list_last(%g), list_drop_last(%g)   list_append's: the tensor's, the list's
//   list_onehot(%l, %i, %g)        list_get's: %g at %i, zeros like %l elsewhere
//
// If: input 0 is the condition (a bool scalar or a one-element tensor); two
// blocks without parameters, each returning one value per If output.
// Loop: inputs are (max trip count : int, initial condition, carried...); the
// body has parameters (iteration : int, carried...) and returns
// (condition for the next iteration, carried...); outputs are the carried
// values after the last iteration. A `while` has max trip count INT64_MAX.
//
// Note [Scoping]: a node may use any value defined earlier in its own block or
// in an enclosing block (before the node that owns the nested block). The
// verifier checks this and every other invariant (verifier.h).
#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "graph/dtype.h"
#include "graph/op_table.h"

namespace graph::ir {

// One dimension: a static size, a named symbol ("N"), or unknown ("?").
struct Dim {
  int64_t size = -1;   // >= 0 when static
  std::string symbol;  // non-empty when symbolic

  static Dim unknown() { return {}; }
  static Dim of(int64_t n) { return {n, {}}; }
  static Dim sym(std::string s) { return {-1, std::move(s)}; }
  bool is_static() const { return size >= 0; }
  bool operator==(const Dim&) const = default;
};

// The type of a Value: a host scalar (int, float, bool) or a tensor whose
// dtype and shape may be unknown.
struct Type {
  // List: a list of tensors (printed `list`), built by the list_* primitives;
  // the autodiff pass uses it to save per-iteration values of a Loop.
  enum class Kind : uint8_t { Tensor, Int, Float, Bool, List };
  Kind kind = Kind::Tensor;
  std::optional<DType> dtype;           // tensors only; nullopt = unknown
  std::optional<std::vector<Dim>> dims;  // tensors only; nullopt = unknown rank

  static Type tensor() { return {}; }
  static Type tensor(DType d) { return {Kind::Tensor, d, std::nullopt}; }
  static Type tensor(std::optional<DType> d, std::vector<Dim> dims) {
    return {Kind::Tensor, d, std::move(dims)};
  }
  static Type int_() { return {Kind::Int, {}, {}}; }
  static Type float_() { return {Kind::Float, {}, {}}; }
  static Type bool_() { return {Kind::Bool, {}, {}}; }
  static Type list() { return {Kind::List, {}, {}}; }

  bool is_tensor() const { return kind == Kind::Tensor; }
  bool is_scalar() const { return kind == Kind::Int || kind == Kind::Float || kind == Kind::Bool; }
  bool is_list() const { return kind == Kind::List; }
  bool operator==(const Type&) const = default;
  std::string str() const;  // as in the text format: "f32[N, 4]", "Tensor", "int"
};

// Where a node came from in the user's C++.
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  bool valid() const { return line > 0; }
  bool operator==(const SourceLoc&) const = default;
};

// Attribute values: printed as 3, 0.5, true, "text", [1, 2].
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
using Attributes = std::map<std::string, AttrValue>;

class Node;
class Block;
class Graph;

class Value {
 public:
  const Type& type() const { return type_; }
  void set_type(Type t) { type_ = std::move(t); }
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Node* producer() const { return producer_; }  // nullptr for block parameters
  Block* param_of() const { return param_of_; }  // the block, for parameters
  Block* owning_block() const;                   // where the value is defined
  const std::vector<Node*>& users() const { return users_; }  // a node once per input use

 private:
  friend class Node;
  friend class Block;
  Value(Type t, std::string name) : type_(std::move(t)), name_(std::move(name)) {}
  Type type_;
  std::string name_;
  Node* producer_ = nullptr;
  Block* param_of_ = nullptr;
  std::vector<Node*> users_;
};

class Node {
 public:
  // The op's name, for printing and diagnostics. Passes compare ids: the name
  // is resolved to an OpId once, when the node is created.
  const std::string& op() const { return op_; }
  OpId op_id() const { return id_; }
  bool is(OpId id) const { return id_ == id; }
  // The entry of the op or primitive; nullptr for a name the table lacks.
  const OpInfo* info() const { return id_ == OpId::unknown ? nullptr : &op_info(id_); }
  // The entry of a library op (kOpTable); nullptr for primitives and unknown names.
  const OpInfo* table_op() const { return static_cast<size_t>(id_) < kNumOps ? &op_info(id_) : nullptr; }
  const std::vector<Value*>& inputs() const { return inputs_; }
  Value* input(size_t i) const { return inputs_.at(i); }
  size_t num_outputs() const { return outputs_.size(); }
  Value* output(size_t i = 0) const { return outputs_.at(i).get(); }
  std::vector<Value*> outputs() const;
  const std::vector<std::unique_ptr<Block>>& blocks() const { return blocks_; }
  Block* block(size_t i) const { return blocks_.at(i).get(); }
  Block* owner() const { return owner_; }

  Attributes& attrs() { return attrs_; }
  const Attributes& attrs() const { return attrs_; }
  bool has_attr(const std::string& k) const { return attrs_.count(k) != 0; }
  int64_t i(const std::string& k) const { return std::get<int64_t>(attrs_.at(k)); }
  double f(const std::string& k) const { return std::get<double>(attrs_.at(k)); }
  bool b(const std::string& k) const { return std::get<bool>(attrs_.at(k)); }
  const std::string& s(const std::string& k) const { return std::get<std::string>(attrs_.at(k)); }
  const std::vector<int64_t>& ints(const std::string& k) const { return std::get<std::vector<int64_t>>(attrs_.at(k)); }

  const SourceLoc& loc() const { return loc_; }
  void set_loc(SourceLoc l) { loc_ = std::move(l); }

  void add_input(Value* v);
  void replace_input(size_t i, Value* v);
  void drop_inputs();  // removes every input (and its use)
  Value* add_output(Type t, std::string name = {});
  Block* add_block();

 private:
  friend class Block;
  explicit Node(std::string op) : op_(std::move(op)), id_(resolve_op(op_)) {}
  std::string op_;
  OpId id_;
  std::vector<Value*> inputs_;
  std::vector<std::unique_ptr<Value>> outputs_;
  std::vector<std::unique_ptr<Block>> blocks_;
  Attributes attrs_;
  SourceLoc loc_;
  Block* owner_ = nullptr;
};

class Block {
 public:
  using NodeList = std::list<std::unique_ptr<Node>>;

  const std::vector<std::unique_ptr<Value>>& params() const { return params_; }
  Value* param(size_t i) const { return params_.at(i).get(); }
  Value* add_param(Type t, std::string name = {});

  const NodeList& nodes() const { return nodes_; }
  // Appends a node running `op` (an op-table name or a primitive: constant,
  // If, Loop, FusionGroup).
  Node* append(std::string op);
  // A new node running `op`, placed just before `pos` (a node of this block).
  Node* insert_before(const Node* pos, std::string op);
  // Moves `n` (a node of any block) to the end of this block, keeping its
  // outputs, inputs and nested blocks.
  void move_to_end(Node* n);
  // Removes `n`, which must have no remaining users, and drops its input uses.
  void erase(Node* n);

  const std::vector<Value*>& returns() const { return returns_; }
  void add_return(Value* v) { returns_.push_back(v); }
  void set_returns(std::vector<Value*> r) { returns_ = std::move(r); }

  Node* owner() const { return owner_; }  // nullptr for a graph's top block

 private:
  friend class Node;
  friend class Graph;
  std::vector<std::unique_ptr<Value>> params_;
  NodeList nodes_;
  std::vector<Value*> returns_;
  Node* owner_ = nullptr;
};

// A function: its parameters are the top block's parameters, its results the
// top block's returns.
class Graph {
 public:
  explicit Graph(std::string name = "main") : name_(std::move(name)), top_(new Block) {}
  const std::string& name() const { return name_; }
  void set_name(std::string n) { name_ = std::move(n); }
  Block* top() const { return top_.get(); }
  Value* add_input(Type t, std::string name = {}) { return top_->add_param(std::move(t), std::move(name)); }
  const std::vector<std::unique_ptr<Value>>& inputs() const { return top_->params(); }
  const std::vector<Value*>& outputs() const { return top_->returns(); }

 private:
  std::string name_;
  std::unique_ptr<Block> top_;
};

// Replaces every use of `from` by `to` (node inputs and block returns) in
// `root` and its nested blocks, except inside `skip` (may be null).
void replace_uses(Block* root, Value* from, Value* to, const Block* skip = nullptr);

// Whether `n` draws random numbers when it runs: its op is Random, or
// RandomIfDropoutP with a dropout_p attribute that is not 0 (a run-time
// dropout_p counts as random). CSE never merges such nodes and a CUDA graph
// never replays them.
bool is_random(const Node& n);

// Builders for the nodes every front end emits.
Value* add_constant(Block* b, int64_t v);
Value* add_constant(Block* b, double v);
Value* add_constant(Block* b, bool v);
inline Value* add_constant(Block* b, int v) { return add_constant(b, int64_t{v}); }
// `cond ? 1 : 0` as an int: an If on the host bool `cond` whose blocks return
// the constants, every node at `loc`. How C++'s bool-to-int conversion lowers;
// autodiff builds the same to carry a host decision to the backward.
Value* add_bool_to_int(Block* b, Value* cond, const SourceLoc& loc);

// Visits every node of `b` and of its nested blocks, in order (pre-order).
template <class F>
void walk(const Block* b, F&& f) {
  for (const auto& n : b->nodes()) {
    f(n.get());
    for (const auto& inner : n->blocks()) walk(inner.get(), f);
  }
}

// A structural copy of `g`, with the value names parse(print(g)) would give
// (unique: a repeated or empty name is numbered as the printer numbers it).
std::unique_ptr<Graph> clone(const Graph& g);

// Text format (printer.cpp / parser.cpp): print(parse(text)) == text for
// printed text, and parse(print(g)) is structurally equal to g.
std::string print(const Graph& g);
// Throws graph::Error "line:col: message" on malformed text.
std::unique_ptr<Graph> parse(const std::string& text);
// `s` as a double-quoted string literal of the text format (also valid C++).
std::string quote(const std::string& s);
// Several graphs in one text (a module); each starts with `graph`.
std::vector<std::unique_ptr<Graph>> parse_all(const std::string& text);

}  // namespace graph::ir
