#pragma once
// A generated [[graph::static]] function as a small tree of statements, so
// the shrinker can drop or inline one statement and emit the function again.
#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "graph/op_properties.h"

namespace progen {

using Dims = std::vector<int64_t>;

enum class VType { Float, Bool, Int };

// A function input: a float tensor that requires grad, or int64 indices in
// [0, int_hi) (embedding, cross_entropy targets).
struct Input {
  std::string name;
  Dims shape;
  VType type = VType::Float;
  int64_t int_hi = 0;
};

// One statement. Compound ones own their blocks; `text` is the whole
// statement for simple ones, the header (`if (c)`, `for (...)`) otherwise.
struct Stmt {
  enum Kind { Simple, If, Loop } kind = Simple;
  int id = 0;                      // preorder number, for --edit
  std::string text;                // Simple: "Tensor v3 = ...;"; If/Loop: the header
  std::string prefix;              // Loop: statements before the header (a trip counter)
  std::string defines;             // the variable a declaration defines, or ""
  std::string fallback;            // a declaration's replacement when dropped ("" = none)
  std::set<std::string> reads;     // variables the statement (header) reads
  bool keep = false;               // never dropped: a result, a while loop's trip bound
  std::vector<Stmt> body, orelse;  // If: then/else; Loop: body
};

// What a function exercised (coverage), forward and backward.
struct Coverage {
  std::set<graph::OpId> forward, backward;
  std::set<std::string> constructs;  // if_host, if_tensor, for, while, break, ...
};

struct Function {
  std::string name;
  std::vector<Input> inputs;
  std::vector<Dims> out_shapes;
  std::vector<Stmt> body;
  std::vector<std::pair<int, double>> host_variants;  // (n, s) the harness calls with
  double tol = 1e-5;                                   // forward; gradients 10x
  // Calls with grad run eagerly, as docs/gradients.md documents (a loop in
  // a loop, a host float computed in a loop body): not a finding.
  bool grad_runs_eagerly = false;
  std::string known;  // a known finding its grad calls hit (docs/fuzzing.md), or ""
  Coverage cov;
};

// The function number `index` of batch `seed` (deterministic); `device`:
// drawn from the ops that run on CUDA tensors (Gen::Gen).
Function generate(uint64_t seed, int index, bool device = false);

// Edits the shrinker applies before emitting: statement id -> "drop",
// "then" or "else" (an If replaced by one block, inlined).
struct Edit {
  int id;
  std::string what;
};

// C++ source of `f` with `edits` applied; throws std::runtime_error when an
// edit leaves a variable undefined.
std::string emit_function(const Function& f, const std::vector<Edit>& edits = {});
// The harness table entry for `f` (progen::Case, harness.h), named
// `label` + f.name.
std::string emit_case(const Function& f, const std::string& label = "");
// Every statement id of `f` that an edit may touch, in source order.
std::vector<std::pair<int, Stmt::Kind>> statement_ids(const Function& f);

}  // namespace progen
