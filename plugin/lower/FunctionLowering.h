#pragma once
// The lowering of one function: a class whose methods are spread over one
// file per concern (Lowering.cpp, Environment.cpp, Expressions.cpp,
// Calls.cpp, Statements.cpp, ControlFlow.cpp); see docs/plugin.md.
//
// The lowering keeps, per C++ variable, its current SSA value. Early exits
// (`return`, `break`, `continue`) are lowered structurally: three bool flags
// per function being lowered, ordinary variables of the environment:
//   returned  the function has returned (its result values are bound);
//   skip      the rest of the current body is skipped (return, break or
//             continue happened);
//   stop      the innermost loop stops after this iteration (return, break).
// After a statement that may have set `skip`, the statements that follow run
// in the else-block of an If on it; a loop that may stop tests `stop` before
// its increment and its condition; `returned` and the results are carried
// out of loops and Ifs like any variable. While a flag is a constant the
// lowering folds it (no If is emitted), so code without early exits lowers to
// the same graph as before; the constants it leaves unused are removed at
// the end.
#include <algorithm>
#include <cctype>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "clang/AST/Attr.h"
#include "clang/AST/DeclCXX.h"
#include "clang/AST/DeclTemplate.h"
#include "clang/AST/Expr.h"
#include "clang/AST/ExprCXX.h"
#include "clang/AST/Stmt.h"
#include "clang/AST/StmtCXX.h"
#include "clang/Basic/SourceManager.h"
#include "clang/Basic/Stack.h"
#include "graph/op_table.h"
#include "graph/ir/value_primitives.h"

#include "Lower.h"
#include "Types.h"

namespace cxxgraph::lower {

class FunctionLowering {
 public:
  FunctionLowering(ASTContext& ctx, const FunctionDecl* fd) : ctx_(ctx), sm_(ctx.getSourceManager()), fd_(fd) {}
  // The whole function (lower_function).
  Lowered run();
  // One static region of a function split by graph breaks (lower_region).
  Lowered run_region(const Region& region);

 private:
  // One function being lowered: the annotated one, or a callee inlined into it.
  struct Frame {
    Frame(const FunctionDecl* f, std::string self) : fd(f), this_ptr(std::move(self)) {}
    const FunctionDecl* fd;
    std::string this_ptr;  // `this` as the prologue spells it; empty without one
    ir::Value* this_tensor = nullptr;  // `*this` in a Tensor method (x.select(...) of ops.h)
    std::vector<ir::Type> results;
    // Their addresses are the keys of the flags and results in the environment.
    char returned = 0, skip = 0, stop = 0;
    std::deque<char> slots;
    // A static region's statements instead of the whole body (run_region).
    std::optional<std::pair<Region::StmtIt, Region::StmtIt>> range = std::nullopt;
  };

  // Keys are VarDecls, or the addresses of a Frame's flags and result slots.
  // A variable is bound to its current value; nullptr means declared but
  // not yet assigned (`Tensor y;` before an if/else assigns it). Globals and
  // members are not variables of the graph: they are graph inputs, read-only.
  using Key = const void*;

  using Env = std::unordered_map<Key, ir::Value*>;

  // A std::tuple/std::pair local or parameter is one environment entry per
  // element (keys named "t_0", "t_1", ...), so Ifs and Loops merge and carry
  // each element like any variable. A structured binding is such an entry
  // (its BindingDecl is the key), or an alias of one when it binds by
  // reference; a const reference is an alias of the variable it names. A
  // tuple-typed expression lowers to its element values: a call returning a
  // tuple gives one value per result.
  struct TupleVar {
    std::vector<Key> keys;
    std::vector<ir::Type> types;
  };

  // A call to a function whose body is visible is lowered in place: its
  // parameters are bound to the arguments' values, `this` to the object's
  // spelling, and its own early exits use its own flags.
  static constexpr int kMaxInlineDepth = 32;

  using StmtIt = CompoundStmt::const_body_iterator;

  // Where a variable assigned on one path only was left unassigned: the
  // notes of the diagnostic at its next use.
  struct Site {
    std::string what;  // "'if'"
    SourceLocation then_at, else_at;
    std::string else_note;
  };

  struct Partial {
    std::string what;
    std::vector<std::pair<SourceLocation, std::string>> notes;
  };

  // A Loop: `while (cond) body`, `for (; cond; inc) body`, or a range-for
  // (max_trips given, no condition, `prelude` binding the element).
  struct LoopSpec {
    const Expr* cond = nullptr;
    const Stmt* body = nullptr;
    const Expr* inc = nullptr;
    SourceLocation at;
    ir::Value* max_trips = nullptr;
    std::function<void(ir::Value* iteration)> prelude;
    bool test_first = true;            // false for `do`-`while`
    std::function<void()> run_body;    // lowers the body, when not stmt(body)
  };

  // `switch (v)` with its labels directly in its body: a bool `active` (as
  // an environment entry) turns true at the matching label (or at `default`
  // when no label matches) and stays true, so fallthrough runs what follows;
  // each statement runs in an If on it. A `break` of the switch makes the
  // body a Loop of one trip, whose `break` machinery already skips the rest.
  struct Switch {
    ir::Value* value = nullptr;
    ir::Value* none = nullptr;  // no case label matches (when there is a default)
    char active = 0;            // its address keys the flag
  };


  // One static region of a function split by graph breaks (Lower.h).

  // What kind of function this is, before anything looks at the body: the
  // body of a template is dependent and must not be evaluated.
  void check_kind();

  // The graph outputs a result of type `r` becomes, and (when `spelling` is
  // given) how the prologue names that type. A Tensor, a host scalar, a
  // std::vector<Tensor> (one list), or a std::tuple/std::pair of tensors and
  // scalars (one output each), returned by value.
  std::vector<ir::Type> result_types(QualType r, SourceLocation at, std::string* spelling);

  // ---- environment -----------------------------------------------------

  bool synthetic(Key k) const;
  std::string key_name(Key k) const;

  void define(Key k, ir::Value* value);

  // The key a value lives under: its own, or for a const reference (or a
  // structured binding) bound to another variable or tuple element, that one's.
  Key resolve(Key k) const;

  ir::Value* read_key(Key k, SourceLocation at);

  ir::Value* read(const ValueDecl* d, SourceLocation at);

  std::string global_name(const VarDecl* v, SourceLocation at);

  // For a global in an anonymous namespace: the enclosing named scope, if a
  // declaration of the same name there would win over it when the prologue
  // spells it without the anonymous namespace.
  static const DeclContext* hidden_by(const VarDecl* v);

  // A variable read where an undefined tensor is fine (ir::may_be_undefined):
  // one that `Tensor y;` left undefined on some path may be read here.
  ir::Value* optional_operand(const Expr* e);

  // ---- members read through `this` -------------------------------------
  // A member the graph reads becomes a graph input that the prologue passes
  // at each call, spelled from `this` ("this->fc1.operator->()->weight"), so
  // a parameter updated by training is seen by the next call. The spelling
  // only uses members and getters the annotated function can access.
  bool accessible(const NamedDecl* d) const;

  void check_access(const NamedDecl* d, SourceLocation at) const;

  // A pointer-typed expression as the prologue spells it.
  std::string pointer(const Expr* e);

  // A class-typed lvalue as the prologue spells it.
  std::string lvalue(const Expr* e);

  std::string field(const MemberExpr* m);

  // `this` of a member call, as a pointer.
  std::string object_pointer(const CXXMemberCallExpr* mc);

  ir::Value* member(const MemberExpr* m);

  // ---- tuples ----------------------------------------------------------

  const TupleVar& declare_tuple(const ValueDecl* v, const std::vector<QualType>& elems, SourceLocation at);

  void check_elements(const std::vector<ir::Type>& want, const std::vector<ir::Value*>& values, SourceLocation at);

  void tuple_param(const ParmVarDecl* p);

  // `std::tuple<...> t = ...;`, `auto t = f(x);`, `const auto& t = u;`.
  void tuple_decl(const VarDecl* v, const std::vector<QualType>& elems);

  // `auto [h, c] = f(x);` (each binding a new entry) or `auto& [h, c] = t;`
  // (aliases of t's elements).
  void decompose(const DecompositionDecl* d);

  // The element values of a tuple-typed expression.
  std::vector<ir::Value*> tuple_values(const Expr* e);

  // The N of `std::get<N>(t)`, when `c` is one.
  std::optional<size_t> get_index(const CallExpr* c) const;

  // `t.first` / `t.second` of a std::pair: 0 or 1.
  static std::optional<size_t> pair_member(const MemberExpr* m);

  // The key of element `i` of a tuple variable, if `tuple` names one.
  std::optional<Key> element_key(const Expr* tuple, size_t i) const;

  ir::Value* element_of(const Expr* tuple, size_t i, SourceLocation l);

  // The environment key an lvalue names: a local or parameter, a binding,
  // or an element of a tuple variable.
  std::optional<Key> lvalue_key(const Expr* e) const;

  // `std::tie(a, b) = f(x);` and `t = f(x);` for a tuple variable `t`; false
  // when `lhs` is neither.
  bool tuple_assign(const Expr* lhs, const Expr* rhs);

  // ---- nodes -----------------------------------------------------------
  graph::ir::SourceLoc loc(SourceLocation l) const;

  ir::Node* node(const std::string& op, const std::vector<ir::Value*>& inputs, ir::Type out, SourceLocation l);

  template <class T>
  ir::Value* constant(T v, SourceLocation l) {
    ir::Value* c = ir::add_constant(block_, v);
    c->producer()->set_loc(loc(l));
    return c;
  }

  // ---- expressions -----------------------------------------------------
  // Wrappers that change nothing the graph can see: parentheses, no-op and
  // widening casts, temporaries, copies and moves of tensors, conversions to
  // graph::Scalar, braces around one scalar.
  const Expr* strip(const Expr* e);

  bool passthrough(const CastExpr* c);

  // A host scalar expression the compiler can evaluate (constexpr values,
  // sizeof, enumerators, calls to consteval functions) becomes a constant.
  ir::Value* fold(const Expr* e);

  // Expressions and statements recurse as deep as the code nests; Clang
  // itself stops a little further (a 2000-term `a + b + ...` is fine).
  void check_stack(SourceLocation at);

  ir::Value* expr(const Expr* e);

  ir::Value* conversion(const CastExpr* c);

  // C++ bool -> int is 0 or 1; the graph has no conversion op, so an If.
  ir::Value* bool_to_int(ir::Value* b, SourceLocation l);

  ir::Value* unary(const UnaryOperator* u);

  // Host scalar arithmetic and comparisons (tensor operators are calls).
  ir::Value* binary(const BinaryOperator* b);

  // `a && b`, `a || b` on host scalars or one-element tensors: an If, so `b`
  // is evaluated only when C++ would evaluate it.
  ir::Value* logical(const BinaryOperator* b);

  ir::Value* operand(const Expr* e);

  // ---- calls -----------------------------------------------------------
  static bool is_std(const FunctionDecl* f, llvm::StringRef name);

  bool is_vector_method(const CXXMemberCallExpr* m, llvm::StringRef name) const;

  ir::Value* call(const CallExpr* c);

  // `zeros(sizes)`, `ones(sizes, dtype)`, `full(sizes, value, dtype)` (graph's
  // factories): full_dyn{dtype}(sizes, value), the sizes an int list known at
  // run time (`y.sizes()`, a local Shape, `{n, 4}`), the dtype a constant.
  // nullptr for other calls.
  ir::Value* factory(const CallExpr* c, const FunctionDecl* callee);

  // `arange(end)`, `arange(start, end, step)` with host scalars known at run
  // time (or constants): arange_dyn(start, end, step); nullptr for other calls.
  ir::Value* arange(const CallExpr* c, const FunctionDecl* callee);

  // A graph::DType argument as its token ("f32"); a compile-time constant.
  std::string dtype_token_of(const Expr* d, llvm::StringRef what);

  ir::Value* list_get(const Expr* list, const Expr* index, SourceLocation l);

  ir::Value* index_value(const Expr* index, SourceLocation l);

  // A tensor's metadata as host values: `x.defined()`, `x.dim()`,
  // `x.numel()`, `x.size(d)`, `x.sizes()[d]`; nullptr for other calls. The
  // sizes are read at run time: the graph stays shape-generic.
  ir::Value* tensor_metadata(const CallExpr* c);

  // `x.item<T>()`: item(x), a host int, float or bool read from the tensor at
  // run time; nullptr for other calls.
  ir::Value* item(const CallExpr* c);

  // `std::sqrt(d)`, `std::exp(d)`, `std::pow(a, b)`, ... of host numbers
  // returning double (or int, for abs): the op table's elementwise op of that
  // name on host scalars; nullptr for other calls (float overloads compute in
  // another precision and are not lowered).
  ir::Value* host_math(const CallExpr* c, const FunctionDecl* callee);

  static bool tensor_method(const CXXMemberCallExpr* m, llvm::StringRef name, unsigned args);

  // `std::vector<Tensor> v;`, `{a, b}`: list_new and one list_append each.
  ir::Value* new_list(const CXXConstructExpr* ce);

  // A call of an op-table op. Elementwise ops take every argument as an
  // input (host scalars too). Other ops follow their declaration: parameters
  // of type Tensor are inputs (a defaulted `Tensor()` is undefined()), a
  // std::vector<Tensor> is a list input, and every other parameter is the
  // attribute of the same name (ops.def's conventions): a compile-time
  // constant, or a value read at run time (attribute()).
  ir::Value* op_call(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee);
  ir::Value* unbind(const CallExpr* c, SourceLocation l);  // list_unbind (graph::unbind)

  // The value of an attribute argument, evaluated at build time. With
  // `runtime`, an argument that is not a constant is read at run time (a
  // host scalar, a braced list of host ints, or a `Shape` member, which the
  // prologue passes as an int64 tensor): its values are appended to
  // `runtime` and the attribute is "@i" / "@i:j", indices into `runtime`
  // (ir/value_primitives.h; op_call shifts them past the op's own inputs).
  void check_batch_norm_pure(SourceLocation l, const std::vector<ir::Value*>& in, const ir::Attributes& attrs);
  ir::AttrValue attribute(const Expr* a, const graph::OpInfo& op, const ParmVarDecl* p,
                          std::vector<ir::Value*>* runtime = nullptr);

  // A graph::Scalar argument: an int, float or bool attribute when constant,
  // else one known at run time (when `runtime` is given).
  ir::AttrValue scalar_attribute(const Expr* e, SourceLocation at, const graph::OpInfo& op, const ParmVarDecl* p,
                                 std::vector<ir::Value*>* runtime);

  // An attribute argument known only at run time (see attribute()).
  ir::AttrValue runtime_attribute(const Expr* e, SourceLocation at, const graph::OpInfo& op, const ParmVarDecl* p,
                                  QualType t, std::vector<ir::Value*>& runtime);

  // An int list as a graph value, a 1-D int64 tensor (value_primitives.h):
  // `x.sizes()` (tensor_sizes), a local int list variable, a braced list of
  // host ints (make_shape), or a copy or conversion of one of those. Other
  // expressions are unsupported (nullptr when not `required`).
  ir::Value* shape_value(const Expr* e, SourceLocation at, bool required = true);

  // A list member used as an attribute (`Shape normalized_shape`): a graph
  // input that the prologue passes at each call as a 1-D int64 tensor.
  ir::Value* list_member(const MemberExpr* m);

  // `x.slice(d, a, b)` and `x.view({...})` / `x.reshape({...})` with bounds
  // or sizes that are host ints known at run time (`x.view({x.size(0), -1})`):
  // slice_dyn and reshape_dyn. nullptr when they are constants (the op
  // itself), or not of that form.
  ir::Value* dynamic_view(const graph::OpInfo& op, const CallExpr* c, const FunctionDecl* callee, unsigned first,
                          ir::Value* self);

  // The elements of a braced list (`{a, b}`, `Shape{a, b}`), else nullopt.
  std::optional<std::vector<const Expr*>> braced_inits(const Expr* e);

  // A braced list of integer constants (`{1, 0}`, `Shape{2, -1}`, `{}`).
  std::optional<std::vector<int64_t>> int_list(const Expr* e);

  // ---- inlining --------------------------------------------------------

  ir::Value* inline_call(const CallExpr* c, const FunctionDecl* callee);

  // The results of an inlined call: one, or one per tuple element.
  std::vector<ir::Value*> inline_results(const CallExpr* c, const FunctionDecl* callee);
  // `c ? a : b` -> If with one output.
  ir::Value* conditional(const ConditionalOperator* c);

  // A condition: a host bool/int, or a tensor tested by its explicit
  // operator bool (the If then reads the one-element tensor).
  ir::Value* condition(const Expr* e);

  // ---- function bodies and early exits ---------------------------------
  // Lowers `frame`'s body; returns its result values.
  std::vector<ir::Value*> function_body(Frame& frame);

  static SourceLocation first_return(Region::StmtIt it, Region::StmtIt end);

  bool is_const(const ir::Value* v, bool b) const;
  // Unbound flags are false: `stop` outside loops.
  bool flag_true(Key k) const;
  bool flag_true_in(const Env& env, Key k) const;
  bool flag_false(Key k) const;
  void set_flag(Key k, bool b, SourceLocation at);

  // Statements in order; once `skip` may be set, the rest runs in the else
  // block of an If on it.
  void seq(CompoundStmt::const_body_iterator it, CompoundStmt::const_body_iterator end);

  void guarded(StmtIt it, StmtIt end, const std::function<void(StmtIt, StmtIt)>& rest = {});

  void return_(const ReturnStmt* r);

  void break_or_continue(const Stmt* s);

  // The values a `return` gives: one per result (a tuple's elements).
  std::vector<ir::Value*> result_values(const Expr* e);

  // The default value of type `t` (C++'s `T{}`: an undefined tensor, an empty
  // list, 0, false), emitted into block `b`: a default-constructed tuple's
  // elements, a result slot on a path that has not returned (never read:
  // `returned` is false there), a `Tensor y;` assigned on one path only.
  ir::Value* default_value(const ir::Type& t, ir::Block* b, SourceLocation at);

  const ir::Type* slot_type(Key k) const;

  // Flag constants nothing reads (the usual case: no early exit) go away.
  void remove_unused_flags();

  // ---- statements ------------------------------------------------------
  void stmt(const Stmt* s);

  void decl(const DeclStmt* d);

  // The key an assignment writes: a local, a parameter, a binding or a
  // tuple variable's element.
  Key assigned_var(const Expr* lhs);

  // `a = b = c`, `a = b += 1`: the inner assignment's value, else nullptr.
  ir::Value* assignment(const Expr* e);

  ir::Value* assign(const Expr* lhs, const Expr* rhs);

  void expr_stmt(const Expr* e);

  // `loss.backward()` in a static train step (Training.cpp): true when `e`
  // is one and became a backward_loss node; unsupported() where it cannot.
  bool training_statement(const Expr* e);
  void optimizer_statement(const CXXMemberCallExpr* m, const char* what);

  static const char* compound_op(OverloadedOperatorKind k);

  ir::Value* compound(const CompoundAssignOperator* ca);

  // `v op= rhs` on a host scalar or a tensor (Tensor's `+=` rebinds v).
  ir::Value* compound(const char* op, const Expr* lhs, const Expr* rhs_expr, SourceLocation l,
                      llvm::StringRef spelling);

  // Runs `f` with block_ = `b` and a copy of the environment; returns that
  // environment afterwards.
  template <class F>
  Env in_block(ir::Block* b, F&& f) {
    ir::Block* saved_block = block_;
    Env saved_env = env_;
    block_ = b;
    ++depth_;
    f();
    --depth_;
    Env result = std::move(env_);
    env_ = std::move(saved_env);
    block_ = saved_block;
    return result;
  }

  // A new block of `n` (an If or Loop at `at`), one level deeper than block_.
  ir::Block* add_block(ir::Node* n, SourceLocation at);
  void check_depth(SourceLocation at);  // unsupported() past kMaxBlockDepth nested blocks

  void if_(const IfStmt* s);

  // After an If's two blocks: every outer variable that either block rebound
  // becomes an output of the If (equal constants fold); one assigned on one
  // path only is unusable afterwards, and its next use is diagnosed.
  void merge(ir::Node* n, Env& then_env, Env& else_env, const Site& site);

  // Outer variables a statement assigns (the values a Loop must carry).
  void assigned_in(const Stmt* s, std::vector<Key>& out);

  // Whether `s` may leave the current iteration early: a `break` or
  // `continue` of this loop, or a `return` anywhere.
  static bool exits(const Stmt* s, bool loop_level, bool returns_only = false);

  // A value that is true or false as `v` is (for a Loop's next condition).
  ir::Value* to_bool(ir::Value* v, SourceLocation at);

  void loop(const LoopSpec& spec);

  // ---- switch ------------------------------------------------------------

  void switch_(const SwitchStmt* s);

  ir::Value* case_test(const Switch& sw, const CaseStmt* c);

  // a || b of two bool values already computed (no short circuit needed).
  ir::Value* either(ir::Value* a, ir::Value* b, SourceLocation l);

  // The body's statements, as seq() runs them, each behind its labels.
  void switch_body(StmtIt it, StmtIt end, Switch& sw);

  // `if (flag) f();` as an If whose else-block is empty.
  template <class F>
  void when(Key flag, SourceLocation at, F&& f) {
    if (flag_true(flag)) return f();
    ir::Node* n = block_->append("If");
    n->add_input(env_.at(flag));
    n->set_loc(loc(at));
    ir::Block* then_b = add_block(n, at);
    ir::Block* else_b = add_block(n, at);
    Env then_env = in_block(then_b, [&] { f(); });
    Env else_env = in_block(else_b, [] {});
    merge(n, then_env, else_env, {"'switch'", at, at, "but not when this case does not run"});
  }

  // A `continue` of an enclosing loop inside `s` (not of a loop in it).
  static const Stmt* continue_in(const Stmt* s);

  // `if (!flag) f();` as an If whose then-block is empty.
  template <class F>
  void unless(Key flag, SourceLocation at, F&& f) {
    ir::Node* n = block_->append("If");
    n->add_input(env_.at(flag));
    n->set_loc(loc(at));
    ir::Block* then_b = add_block(n, at);
    ir::Block* else_b = add_block(n, at);
    Env then_env = in_block(then_b, [] {});
    Env else_env = in_block(else_b, [&] { f(); });
    merge(n, then_env, else_env, {"loop", at, at, "but not when the loop stops"});
  }

  void while_(const WhileStmt* s);

  void for_(const ForStmt* s);

  // `for (const Tensor& t : xs)` over a std::vector<Tensor>: a Loop of
  // list_len(xs) trips whose body starts with t = list_get(xs, iteration).
  void range_for(const CXXForRangeStmt* s);


  ASTContext& ctx_;
  const SourceManager& sm_;
  const FunctionDecl* fd_;
  ir::Graph* graph_ = nullptr;
  ir::Block* block_ = nullptr;
  Env env_;
  std::vector<Key> order_;
  std::unordered_map<Key, std::string> synthetic_;  // flags and result slots: their names
  std::unordered_map<Key, Partial> partial_;        // unassigned after a branch: why
  std::unordered_map<Key, Partial> maybe_undefined_;  // a tensor undefined on some path: why
  bool optional_read_ = false;                        // reading an optional operand or testing defined()
  std::unordered_set<Key> ordered_;                  // the keys in order_
  std::unordered_map<Key, Key> aliases_;             // const references and bindings: what they name
  std::unordered_map<const ValueDecl*, TupleVar> tuples_;
  std::deque<char> tuple_slots_;                     // their addresses key tuple elements
  std::vector<std::unique_ptr<Switch>> switches_;
  std::unordered_map<const VarDecl*, ir::Value*> globals_;
  std::unordered_map<std::string, ir::Value*> members_;  // by the prologue's spelling
  std::vector<std::string> captures_;                    // globals and members, in input order
  std::unordered_set<ir::Node*> flag_constants_;
  Frame* frame_ = nullptr;
  std::vector<Frame*> frames_;  // the annotated function, then the callees being inlined
  int depth_ = 0;  // of block_: 0 for the graph's own block
  bool stepped_ = false;  // an optimizer's step() was lowered: member tensors are stale

  // ---- module state (State.cpp) ----
  // A member tensor updated in place: its path (the prologue's spelling), its
  // graph input, and the address of `key`, its environment entry.
  struct MemberState {
    std::string path;
    ir::Value* input;
    SourceLocation at;  // the first update
    char key = 0;
  };
  // A member's dtype from GRAPH_MEMBER_DTYPE, if annotated.
  std::optional<graph::DType> member_dtype(const FieldDecl* f);
  bool host_state_expr(const Stmt* s, bool& tensor) const;
  // A const getter without arguments returning a host number that reads a
  // private field or calls (is_training(), options.eps()): a graph input the
  // prologue reads by calling it. nullptr for other calls.
  ir::Value* host_getter(const CallExpr* c);
  // The current value of an updated member, or nullptr if none updated it.
  ir::Value* member_state(const std::string& path);
  // `m.add_(v)` (sub_, mul_, div_, copy_, fill_, zero_) on a member tensor:
  // the op out of place, rebinding the member. nullptr for other calls.
  ir::Value* inplace_update(const CXXMemberCallExpr* mc);
  const MemberExpr* updated_member(const Expr* target, const char* method, SourceLocation l);
  // If merges: a member updated on one path has its previous value on the other.
  void merge_state(Env& then_env, Env& else_env);
  // Inlined calls: the updated members' values into and out of the callee.
  void carry_state(const Env& from, Env& to);
  // One assign per updated member, at the end of the graph's own block.
  void write_back();
  std::deque<MemberState> states_;
  std::unordered_map<std::string, MemberState*> state_of_;
  int in_conditional_ = 0;  // inside the operands of `?:`
};

}  // namespace cxxgraph::lower
