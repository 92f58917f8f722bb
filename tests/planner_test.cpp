// The graph-break planner on plain statement facts, without Clang: which
// statements become islands, which regions get graphs, and which variables
// cross each break. Each test spells a function body as facts, the way
// plugin/src/Split.cpp extracts them, and a fake lowering that fails where
// the real one would.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "Planner.h"

namespace {

using namespace cxxgraph::planner;

// Builds facts statement by statement; statement i spans offsets
// [100 i, 100 i + 90], so a failure "inside statement i" is at 100 i + 50.
class Body {
 public:
  VarId param(const std::string& name, std::string cannot_cross = "") {
    f.vars.push_back({name, loc(), -1, false, std::move(cannot_cross)});
    return f.vars.size() - 1;
  }
  // A statement declaring `declares` (plain variables), reading `reads`.
  size_t stmt(std::vector<VarId> reads, Nesting n = Nesting::none, bool returns = false) {
    Stmt s;
    s.begin = static_cast<Offset>(100 * f.stmts.size());
    s.end = s.begin + 90;
    s.nesting = n;
    s.returns = returns;
    for (VarId v : reads) s.reads.push_back({v, loc()});
    f.stmts.push_back(std::move(s));
    return f.stmts.size() - 1;
  }
  VarId var(const std::string& name, std::vector<VarId> reads, bool constant = false, std::string cannot_cross = "") {
    size_t i = stmt(std::move(reads));
    f.vars.push_back({name, loc(), static_cast<long>(i), constant, std::move(cannot_cross)});
    VarId id = f.vars.size() - 1;
    f.stmts[i].declaration = true;
    f.stmts[i].declares.push_back({Declared::variable, id, name, f.vars[id].loc});
    f.stmts[i].reads.insert(f.stmts[i].reads.begin(), {id, loc()});  // `auto y = ...` names y too
    return id;
  }
  Loc loc() { return next_loc_++; }
  static Offset inside(size_t stmt) { return static_cast<Offset>(100 * stmt + 50); }

  // A lowering that fails inside the statements in `eager` (at their
  // offsets) and records what each region asked for.
  LowerRegion lowering(std::set<size_t> eager) {
    return [this, eager](const RegionPlan& r) {
      asked.push_back(r);
      for (size_t i = r.from; i < r.to; ++i)
        if (eager.count(i)) return Lowering{Lowering::failed, inside(i)};
      return Lowering{Lowering::graph, {}};
    };
  }

  Facts f;
  std::vector<RegionPlan> asked;

 private:
  Loc next_loc_ = 1;
};

std::vector<std::string> names(const Facts& f, const std::vector<VarId>& vs) {
  std::vector<std::string> out;
  for (VarId v : vs) out.push_back(f.vars[v].name);
  return out;
}
using Names = std::vector<std::string>;

// Tensor f(Tensor x) {
//   Tensor y = relu(x);                      // 0
//   if (y.sum().item<float>() > 0) print(y); // 1: the island, an `if`
//   Tensor z = y * 2;                        // 2
//   return z + x;                            // 3
// }
TEST(Planner, IslandInsideIfSplitsAroundTheWholeIf) {
  Body b;
  VarId x = b.param("x");
  VarId y = b.var("y", {x});
  size_t island = b.stmt({y}, Nesting::if_stmt);
  VarId z = b.var("z", {y});
  b.stmt({z, x}, Nesting::none, true);

  EXPECT_EQ(island_of(b.f, Body::inside(1), 0, 4), island);
  Plan p = plan(b.f, island, b.lowering({}));
  ASSERT_FALSE(p.failed);
  EXPECT_EQ(p.islands, std::set<size_t>{1});
  ASSERT_EQ(p.layout.regions.size(), 2u);
  EXPECT_EQ(p.layout.regions[0].from, 0u);
  EXPECT_EQ(p.layout.regions[0].to, 1u);
  EXPECT_EQ(p.layout.regions[1].from, 2u);
  EXPECT_TRUE(p.layout.regions[1].last);
  // Live into the island: x (read by statement 3) and y. Region 0 hands on
  // both: y it declares, x it names (the facts do not tell a read from an
  // assignment, so whatever a region names comes from its graph).
  EXPECT_EQ(names(b.f, p.layout.params[1]), (Names{"x", "y"}));
  EXPECT_EQ(names(b.f, p.layout.regions[0].inputs), (Names{"x"}));
  EXPECT_EQ(names(b.f, p.layout.regions[0].outputs), (Names{"x", "y"}));
  EXPECT_EQ(names(b.f, p.layout.regions[1].inputs), (Names{"x", "y"}));
  EXPECT_EQ(p.has_graph, (std::vector<bool>{true, true}));
  EXPECT_EQ(p.where(0), "between two static regions");
  EXPECT_EQ(describe(b.f.stmts[island].nesting), "'if' statement");
}

// Loops, `switch` and `try` hold islands the same way, and a second failure
// found while lowering the regions becomes a second island; adjacent
// islands run as one eager stretch.
TEST(Planner, IslandsInsideLoopsSwitchAndTryAreFoundOneAfterAnother) {
  Body b;
  VarId x = b.param("x");
  VarId n = b.param("n");
  VarId y = b.var("y", {x});                           // 0
  size_t loop = b.stmt({y, n}, Nesting::for_loop);     // 1: `for` with I/O inside
  size_t sw = b.stmt({n, y}, Nesting::switch_stmt);    // 2: `switch`
  VarId z = b.var("z", {y});                           // 3
  size_t tr = b.stmt({z}, Nesting::try_block);         // 4: `try`
  b.stmt({z}, Nesting::none, true);                    // 5

  Plan p = plan(b.f, loop, b.lowering({sw, tr}));
  ASSERT_FALSE(p.failed);
  EXPECT_EQ(p.islands, (std::set<size_t>{loop, sw, tr}));
  ASSERT_EQ(p.layout.stretches.size(), 2u);
  EXPECT_EQ(p.layout.stretches[0], (std::pair<size_t, size_t>{1, 3}));
  EXPECT_EQ(p.layout.stretches[1], (std::pair<size_t, size_t>{4, 5}));
  ASSERT_EQ(p.layout.regions.size(), 3u);
  EXPECT_EQ(p.layout.regions[1].from, 3u);
  EXPECT_EQ(p.layout.regions[1].to, 4u);
  EXPECT_EQ(names(b.f, p.layout.params[1]), (Names{"n", "y"}));
  EXPECT_EQ(names(b.f, p.layout.params[2]), (Names{"z"}));
  EXPECT_EQ(names(b.f, p.layout.regions[1].outputs), (Names{"z"}));
  EXPECT_EQ(p.has_graph, (std::vector<bool>{true, true, true}));
  EXPECT_EQ(describe(b.f.stmts[loop].nesting), "'for' loop");
  EXPECT_EQ(describe(b.f.stmts[sw].nesting), "'switch' statement");
  EXPECT_EQ(describe(b.f.stmts[tr].nesting), "'try' block");
  // The last lowering asked for the final layout's regions.
  ASSERT_GE(b.asked.size(), 3u);
  EXPECT_EQ(b.asked.back().index, 2u);
}

// A `return` inside an island returns from the continuation; the region
// before it that would have to return (the real lowering refuses "this
// 'return' comes before a graph break") becomes an island too.
TEST(Planner, ReturnsInsideIslands) {
  Body b;
  VarId x = b.param("x");
  VarId y = b.var("y", {x});                               // 0
  size_t early = b.stmt({y}, Nesting::if_stmt, true);      // 1: if (...) return y;
  size_t io = b.stmt({y});                                 // 2: std::cout << y
  b.stmt({y}, Nesting::none, true);                        // 3: return y * 2

  Plan p = plan(b.f, io, b.lowering({early}));
  ASSERT_FALSE(p.failed);
  EXPECT_EQ(p.islands, (std::set<size_t>{early, io}));
  ASSERT_EQ(p.layout.stretches.size(), 1u);
  EXPECT_EQ(p.layout.stretches[0], (std::pair<size_t, size_t>{1, 3}));
  EXPECT_TRUE(b.f.stmts[early].returns);
  EXPECT_EQ(p.where(0), "between two static regions");

  // An island that is the last statement: only the region before it has a graph.
  Body c;
  VarId cx = c.param("x");
  VarId cy = c.var("y", {cx});
  size_t ret = c.stmt({cy}, Nesting::none, true);
  Plan q = plan(c.f, ret, c.lowering({}));
  ASSERT_FALSE(q.failed);
  ASSERT_EQ(q.layout.regions.size(), 2u);
  EXPECT_EQ(q.layout.regions[1].from, q.layout.regions[1].to);
  EXPECT_EQ(q.has_graph, (std::vector<bool>{true, false}));
  EXPECT_EQ(q.where(0), "after a static region");
}

// A tuple crosses like any value (the front end says it can); a constant
// does not cross at all: the continuation declares it again, with the
// constants its initializer reads.
TEST(Planner, TuplesCrossAndConstantsAreDeclaredAgain) {
  Body b;
  VarId x = b.param("x");
  VarId k = b.var("k", {}, /*constant=*/true);       // 0: constexpr int k = 2;
  VarId m = b.var("m", {k}, /*constant=*/true);      // 1: constexpr int m = k * 2;
  VarId t = b.var("t", {x, k});                      // 2: std::tuple<Tensor, int> t = ...;
  size_t island = b.stmt({t});                       // 3: print(std::get<0>(t))
  b.stmt({t, m}, Nesting::none, true);               // 4: return std::get<0>(t) * m;

  Plan p = plan(b.f, island, b.lowering({}));
  ASSERT_FALSE(p.failed) << (p.problem ? p.problem->message : "");
  EXPECT_EQ(names(b.f, p.layout.params[1]), (Names{"t"}));
  EXPECT_EQ(names(b.f, p.layout.regions[0].outputs), (Names{"t"}));
  EXPECT_EQ(names(b.f, p.layout.regions[1].inputs), (Names{"t"}));  // m is not an input
  Redeclared r = redeclared(b.f, p.layout, 1);
  ASSERT_FALSE(r.problem);
  EXPECT_EQ(r.stmts, (std::vector<size_t>{0, 1}));
}

// A constant declared together with a variable cannot be declared again.
TEST(Planner, ConstantDeclaredWithAVariableCannotBeDeclaredAgain) {
  Body b;
  VarId x = b.param("x");
  VarId k = b.var("k", {}, /*constant=*/true);  // 0: const int k = 2, j = f();
  b.f.vars.push_back({"j", b.loc(), 0, false, ""});
  b.f.stmts[0].declares.push_back({Declared::variable, b.f.vars.size() - 1, "j", b.f.vars.back().loc});
  size_t island = b.stmt({x});  // 1
  b.stmt({x, k}, Nesting::none, true);
  Plan p = plan(b.f, island, b.lowering({}));
  ASSERT_FALSE(p.failed);
  Redeclared r = redeclared(b.f, p.layout, 1);
  ASSERT_TRUE(r.problem);
  EXPECT_EQ(r.problem->at, b.f.vars[k].loc);
  EXPECT_EQ(r.problem->message,
            "'k' is a constant used after a graph break, declared together with 'j', which is not one; declare it "
            "on its own to let the pieces after the break declare it again");
}

// std::vector<int> is no tensor list: used after the break, the plan fails
// at the read, with the reason from the facts.
TEST(Planner, IntListsCannotCross) {
  Body b;
  VarId x = b.param("x");
  VarId dims = b.var("dims", {}, false, "of type 'std::vector<int>'");  // 0
  size_t island = b.stmt({x});                                         // 1
  VarId y = b.var("y", {x, dims});                                     // 2: reads dims after the break
  b.stmt({y}, Nesting::none, true);
  Loc read_at = b.f.stmts[2].reads[2].at;

  Plan p = plan(b.f, island, b.lowering({}));
  ASSERT_TRUE(p.failed);
  ASSERT_TRUE(p.problem);
  EXPECT_EQ(p.problem->at, read_at);
  EXPECT_EQ(p.problem->message,
            "'dims' is used after a graph break but cannot cross it: it is of type 'std::vector<int>'; only "
            "tensors, lists of tensors, host scalars and tuples or pairs of those held by value can");
  // It is no input of the region that reads it either.
  EXPECT_EQ(names(b.f, p.layout.regions[1].inputs), (Names{"x"}));

  // Read only before the break, it is fine.
  Body c;
  VarId cx = c.param("x");
  VarId cd = c.var("dims", {}, false, "of type 'std::vector<int>'");
  VarId cy = c.var("y", {cx, cd});
  size_t ci = c.stmt({cy});
  c.stmt({cy}, Nesting::none, true);
  EXPECT_FALSE(plan(c.f, ci, c.lowering({})).failed);
}

// A failure outside every statement (in a callee, in a header) or in a null
// statement makes no island: the plan fails with the region's own reason.
TEST(Planner, FailureOutsideTheStatementsIsNoIsland) {
  Body b;
  VarId x = b.param("x");
  size_t island = b.stmt({x});
  b.stmt({x}, Nesting::none, true);
  b.f.stmts.push_back(b.f.stmts.back());
  b.f.stmts.back().null = true;
  b.f.stmts.back().begin = 200;
  b.f.stmts.back().end = 200;
  EXPECT_FALSE(island_of(b.f, 200u, 0, 3));
  EXPECT_FALSE(island_of(b.f, 5000u, 0, 3));
  EXPECT_FALSE(island_of(b.f, std::nullopt, 0, 3));
  Plan p = plan(b.f, island, [](const RegionPlan&) { return Lowering{Lowering::failed, 5000u}; });
  EXPECT_TRUE(p.failed);
  EXPECT_FALSE(p.problem);
}

// A region before a break with nothing to hand on is not lowered: it runs
// as written, and the island is "before a static region".
TEST(Planner, RegionWithNothingToHandOnRunsAsWritten) {
  Body b;
  VarId x = b.param("x");
  b.stmt({});                   // 0: std::puts("hi");
  size_t island = b.stmt({x});  // 1
  b.stmt({x}, Nesting::none, true);
  Plan p = plan(b.f, island, b.lowering({}));
  ASSERT_FALSE(p.failed);
  EXPECT_EQ(p.has_graph, (std::vector<bool>{false, true}));
  EXPECT_EQ(p.where(0), "before a static region");
  ASSERT_EQ(b.asked.size(), 1u);
  EXPECT_TRUE(b.asked[0].last);
}

}  // namespace
