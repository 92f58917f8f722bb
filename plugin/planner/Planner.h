#pragma once
// The graph-break planner: which top-level statements of an annotated
// function run eagerly (the islands), which run as static regions between
// them, and which variables cross each break. It works on plain facts about
// the statements, so it links no Clang and is tested on its own
// (tests/planner_test.cpp); plugin/src/Split.cpp extracts the facts from the
// AST, lowers the regions and writes the prologue from the plan.
//
// Locations are opaque to the planner (`Loc`, the front end's encoding); it
// only compares statement extents, given as offsets in the main file.
#include <cstddef>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

namespace cxxgraph::planner {

using Loc = unsigned;     // where to report something, never interpreted here
using Offset = unsigned;  // a position in the main file
using VarId = size_t;     // index in Facts::vars

// What a statement that holds an island is, for the warning's wording.
enum class Nesting { none, if_stmt, for_loop, while_loop, do_loop, switch_stmt, try_block, block };
// "'if' statement", "'for' loop", ...; "" for Nesting::none.
std::string describe(Nesting n);

// A variable of the function: a parameter or one declared by a top-level
// statement (a structured binding's names each count). Facts::vars lists
// them in declaration order, parameters first.
struct Var {
  std::string name;
  Loc loc = 0;               // its declaration
  long declared_in = -1;     // the top-level statement declaring it; -1: a parameter
  bool constant = false;     // declared again after each break, never crosses one
  std::string cannot_cross;  // why it cannot cross a break ("of type 'int *'"); "" if it can
};

// A reference to one of Facts::vars.
struct Read {
  VarId var;
  Loc at;
};

// One entry of a declaration statement, in order.
struct Declared {
  enum Kind { variable, structured, type_name } kind;  // type_name: a type, alias or using
  std::optional<VarId> var;  // for `variable`
  std::string name;          // as written ("" for an unnamed type)
  Loc loc = 0;
};

// One top-level statement of the body.
struct Stmt {
  Offset begin = 0, end = 0;  // first token, start of the last token
  Nesting nesting = Nesting::none;
  bool null = false;     // `;`: never an island
  bool returns = false;  // holds a `return` (of the function, not of a lambda)
  bool declaration = false;
  std::vector<Declared> declares;  // for a declaration
  // Every reference to Facts::vars, in source order: reads and assignments
  // alike (`y = f(x)` names both), so a region hands on what it names.
  std::vector<Read> reads;
};

struct Facts {
  std::vector<Var> vars;
  std::vector<Stmt> stmts;
};

// Why a plan is impossible, at a location, in the diagnostic style.
struct Problem {
  Loc at;
  std::string message;
};

// The top-level statement in [lo, hi) holding `at`, or nullopt (none does,
// or it is a null statement).
std::optional<size_t> island_of(const Facts& f, std::optional<Offset> at, size_t lo, size_t hi);

// One static region: the statements [from, to).
struct RegionPlan {
  size_t index = 0, from = 0, to = 0;
  bool last = false;
  std::vector<VarId> inputs;   // live into it, able to cross
  std::vector<VarId> outputs;  // what it computes for after the next break
};

// The shape of the body for a set of islands.
struct Layout {
  std::vector<std::pair<size_t, size_t>> stretches;  // eager stretches [from, to): adjacent islands joined
  std::vector<RegionPlan> regions;                   // one before each stretch, one after the last
  // params[j], j >= 1: the variables live into stretch j - 1 (the parameters of
  // the continuation that runs it and then region j), in declaration order.
  std::vector<std::vector<VarId>> params;
};
Layout layout(const Facts& f, const std::set<size_t>& islands);

// The first variable that must cross a break of `l` and cannot.
std::optional<Problem> check_crossings(const Facts& f, const Layout& l);

// The declaration statements (indices, in order) that continuation j must
// declare again: the constants stretch j - 1 and region j read, what those
// read, and the local types, aliases and using-declarations before them.
struct Redeclared {
  std::vector<size_t> stmts;
  std::optional<Problem> problem;
};
Redeclared redeclared(const Facts& f, const Layout& l, size_t j);

// What lowering one region gave.
struct Lowering {
  enum Kind { graph, as_written, failed } kind;
  std::optional<Offset> failed_at;  // failed: where, when a graph break may be there
};
using LowerRegion = std::function<Lowering(const RegionPlan&)>;

// The plan: islands and regions, and which regions got a graph.
struct Plan {
  Layout layout;
  std::vector<bool> has_graph;        // per region
  std::set<size_t> islands;
  // Set when planning failed: `problem` when a variable cannot cross a
  // break (the clearer reason), else the failing region's own reason stands.
  bool failed = false;
  std::optional<Problem> problem;
  // Where the islands of stretch k run: "between two static regions", ...
  std::string where(size_t k) const;
};

// Starts from `first_island` and lowers the regions between the islands;
// each region that fails where a statement can become an island makes it
// one, and the regions are lowered again.
Plan plan(const Facts& f, size_t first_island, const LowerRegion& lower);

}  // namespace cxxgraph::planner
