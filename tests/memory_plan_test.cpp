// Tests of memory planning (graph/ir/memory_plan.h): hand-checked plans for
// small graphs (exact offsets), in-place rules, views, If/Loop lifetimes,
// escapes and dynamic sizes; a brute-force checker run on every graph; and the
// MLP and Transformer block figures the issue asks for (peak <= 0.6x sum).
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/ir/memory_plan.h"
#include "graph/ir/verifier.h"

namespace graph::ir {
namespace {

// ---------------------------------------------------------------------------
// Helpers

std::unique_ptr<Graph> parse_verified(const std::string& text) {
  auto g = parse(text);
  verify_or_throw(*g);
  return g;
}

std::string read_graph_file(const std::string& name) {
  std::ifstream in(std::string(CXXGRAPH_IR_GRAPHS_DIR) + "/" + name);
  EXPECT_TRUE(in) << "cannot open " << name;
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

bool in_arena(const ValuePlan& p) { return p.storage == Storage::Arena || p.storage == Storage::InPlace; }

// The node owning the block `n` is in (nullptr at the top level).
const Node* enclosing_node(const Node* n) { return n->owner() ? n->owner()->owner() : nullptr; }

// Checks the plan against the graph without trusting its bookkeeping:
//  - every arena value sits inside the arena, 64-byte aligned, with room for
//    its bytes;
//  - every use of a value or of a view of it lies inside the base's live
//    range, and a use inside a Loop body of a value defined before the Loop
//    keeps it alive to the Loop's end;
//  - brute force: any two arena values whose live ranges overlap occupy
//    disjoint bytes, unless one is written in place of the other exactly at
//    the hand-over position.
void check_plan(const Graph& g, const MemoryPlan& plan) {
  for (const ValuePlan& p : plan.values) {
    if (!in_arena(p)) continue;
    EXPECT_GE(p.offset, 0) << p.value->name();
    EXPECT_EQ(p.offset % 64, 0) << p.value->name();
    EXPECT_EQ(p.size % 64, 0) << p.value->name();
    EXPECT_GE(p.size, p.bytes) << p.value->name();
    EXPECT_LE(p.offset + p.size, plan.arena_bytes) << p.value->name();
    EXPECT_LE(p.first, p.last) << p.value->name();
  }
  walk(g.top(), [&](const Node* n) {
    const Node* parent = enclosing_node(n);
    if (parent && parent->op() == "FusionGroup") return;
    for (const Value* v : n->inputs()) {
      const ValuePlan* p = plan.find(v);
      if (!p) continue;
      const ValuePlan* base = plan.find(p->base);
      ASSERT_NE(base, nullptr);
      int use = plan.node_start.at(n);
      EXPECT_GE(base->last, use) << "%" << base->value->name() << " used by '" << n->op() << "'";
      for (const Node* up = parent; up; up = enclosing_node(up)) {
        if (up->op() == "Loop" && base->first < plan.node_start.at(up)) {
          EXPECT_GE(base->last, plan.node_end.at(up)) << "%" << base->value->name() << " used in a loop";
        }
      }
    }
  });
  for (size_t i = 0; i < plan.values.size(); ++i) {
    const ValuePlan& a = plan.values[i];
    if (!in_arena(a)) continue;
    for (size_t j = i + 1; j < plan.values.size(); ++j) {
      const ValuePlan& b = plan.values[j];
      if (!in_arena(b)) continue;
      const bool live_together = a.first <= b.last && b.first <= a.last;
      const bool handover = (b.inplace_of == a.value && a.last == b.first) ||
                            (a.inplace_of == b.value && b.last == a.first);
      if (!live_together || handover) continue;
      const bool disjoint = a.offset + a.size <= b.offset || b.offset + b.size <= a.offset;
      EXPECT_TRUE(disjoint) << "%" << a.value->name() << " [" << a.offset << ", +" << a.size << ") and %"
                            << b.value->name() << " [" << b.offset << ", +" << b.size << ") are live together";
    }
  }
}

// plan_memory + check_plan.
MemoryPlan plan_checked(const Graph& g) {
  MemoryPlan plan = plan_memory(g);
  check_plan(g, plan);
  return plan;
}

const ValuePlan& get(const MemoryPlan& plan, const std::string& name) {
  const ValuePlan* p = plan.find(name);
  if (!p) throw std::runtime_error("no plan for %" + name);
  return *p;
}

// ---------------------------------------------------------------------------
// 1. Reuse along a chain

// Every value is 16x16 f32 = 1024 bytes. a and b meet at b's node, b and c at
// c's; a is dead when c is written, so c takes a's slot. d is the output.
TEST(MemoryPlan, ChainReusesSlots) {
  auto g = parse_verified(R"(graph chain(%x : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %b : f32[16, 16] = softmax{dim=1}(%a)
  %c : f32[16, 16] = softmax{dim=1}(%b)
  %d : f32[16, 16] = softmax{dim=1}(%c)
  return (%d)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "a").offset, 0);
  EXPECT_EQ(get(plan, "b").offset, 1024);
  EXPECT_EQ(get(plan, "c").offset, 0);
  EXPECT_EQ(get(plan, "a").first, 0);
  EXPECT_EQ(get(plan, "a").last, 1);
  EXPECT_EQ(get(plan, "c").last, 3);
  EXPECT_EQ(get(plan, "d").storage, Storage::Output);
  EXPECT_EQ(get(plan, "d").offset, -1);
  EXPECT_EQ(get(plan, "x").storage, Storage::External);
  EXPECT_EQ(plan.arena_bytes, 2048);
  EXPECT_EQ(plan.total_bytes, 3072);
  EXPECT_EQ(plan.live_peak_bytes, 2048);
  EXPECT_EQ(plan.output_bytes, 1024);
  EXPECT_EQ(plan.num_buffers, 3);
  EXPECT_EQ(plan.num_inplace, 0);
}

// Sizes are rounded up to 64 bytes; the largest buffers are placed first and
// a smaller one fills the best-fitting gap. Sizes: big 4096, mid 2048 (f64),
// small 16 -> 64.
TEST(MemoryPlan, BestFitBySize) {
  auto g = parse_verified(R"(graph sizes(%x : f32[32, 32], %y : f64[16, 16], %z : f32[4]) {
  %big : f32[32, 32] = softmax{dim=1}(%x)
  %mid : f64[16, 16] = softmax{dim=1}(%y)
  %small : f32[4] = softmax{dim=0}(%z)
  %m : f32[32, 32] = matmul(%big, %big)
  %s2 : f32[4] = softmax{dim=0}(%small)
  %mid2 : f64[16, 16] = softmax{dim=1}(%mid)
  return (%m, %s2, %mid2)
}
)");
  MemoryPlan plan = plan_checked(*g);
  // big [0,3] is placed first at 0; mid [1,5] above it; small [2,4] overlaps
  // both and goes on top.
  EXPECT_EQ(get(plan, "big").offset, 0);
  EXPECT_EQ(get(plan, "mid").offset, 4096);
  EXPECT_EQ(get(plan, "small").size, 64);
  EXPECT_EQ(get(plan, "small").bytes, 16);
  EXPECT_EQ(get(plan, "small").offset, 4096 + 2048);
  EXPECT_EQ(plan.arena_bytes, 4096 + 2048 + 64);
}

// A small value born after a big one died fits into the big one's gap below a
// live value, rather than on top.
TEST(MemoryPlan, SmallValueFillsGap) {
  auto g = parse_verified(R"(graph gap(%x : f32[32, 32], %y : f32[16, 16]) {
  %big : f32[32, 32] = softmax{dim=1}(%x)
  %mid : f32[16, 16] = softmax{dim=1}(%y)
  %m : f32[32, 32] = matmul(%big, %big)
  %late : f32[16, 16] = softmax{dim=1}(%mid)
  %u : f32[16, 16] = matmul(%late, %mid)
  return (%m, %u)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "big").offset, 0);       // [0, 2]
  EXPECT_EQ(get(plan, "mid").offset, 4096);    // [1, 4]
  EXPECT_EQ(get(plan, "late").offset, 0);      // [3, 4]: big is dead
  EXPECT_EQ(plan.arena_bytes, 4096 + 1024);
}

// ---------------------------------------------------------------------------
// 2. In place

TEST(MemoryPlan, ElementwiseChainRunsInPlace) {
  auto g = parse_verified(R"(graph ew(%x : f32[16, 16]) {
  %a : f32[16, 16] = exp(%x)
  %b : f32[16, 16] = relu(%a)
  %c : f32[16, 16] = neg(%b)
  %d : f32[16] = sum{dim=1}(%c)
  return (%d)
}
)");
  MemoryPlan plan = plan_checked(*g);
  // a cannot overwrite the graph input x; b and c take a's slot in turn.
  EXPECT_EQ(get(plan, "a").storage, Storage::Arena);
  EXPECT_EQ(get(plan, "b").storage, Storage::InPlace);
  EXPECT_EQ(get(plan, "b").inplace_of->name(), "a");
  EXPECT_EQ(get(plan, "c").storage, Storage::InPlace);
  EXPECT_EQ(get(plan, "c").inplace_of->name(), "b");
  EXPECT_EQ(get(plan, "b").offset, 0);
  EXPECT_EQ(get(plan, "c").offset, 0);
  EXPECT_EQ(plan.num_buffers, 1);
  EXPECT_EQ(plan.num_inplace, 2);
  EXPECT_EQ(plan.arena_bytes, 1024);
  EXPECT_EQ(plan.total_bytes, 3072);
}

TEST(MemoryPlan, InPlaceNeedsTheInputToDie) {
  auto g = parse_verified(R"(graph keep(%x : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %b : f32[16, 16] = relu(%a)
  %c : f32[16, 16] = add(%a, %b)
  %d : f32[16] = sum{dim=1}(%c)
  return (%d)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "b").storage, Storage::Arena);  // a is still read by c
  EXPECT_EQ(get(plan, "c").storage, Storage::InPlace);
  EXPECT_EQ(get(plan, "c").inplace_of->name(), "a");  // the first dying input
  EXPECT_NE(get(plan, "b").offset, get(plan, "a").offset);
}

TEST(MemoryPlan, InPlaceNeedsSameDtypeAndSize) {
  auto g = parse_verified(R"(graph kinds(%x : f32[16, 16], %y : f32[16, 16], %row : f32[16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %m : i1[16, 16] = gt(%a, %y)
  %r : f32[16] = softmax{dim=0}(%row)
  %b : f32[16, 16] = add(%r, %y)
  %s : i64[] = sum(%m)
  %t : f32[] = sum(%b)
  return (%s, %t)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "m").storage, Storage::Arena);  // bool output over an f32 input
  EXPECT_EQ(get(plan, "b").storage, Storage::Arena);  // broadcast: r is smaller
  EXPECT_EQ(get(plan, "m").bytes, 256);
  EXPECT_EQ(plan.num_inplace, 0);
}

// add(a, t(a)) reads a transposed while writing: element (i, j) would be
// overwritten before (j, i) reads it. A live view also pins its base.
TEST(MemoryPlan, NoInPlaceUnderALiveView) {
  auto g = parse_verified(R"(graph views(%x : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %at : f32[16, 16] = t(%a)
  %b : f32[16, 16] = add(%a, %at)
  %c : f32[16, 16] = softmax{dim=1}(%x)
  %ct : f32[16, 16] = t(%c)
  %d : f32[16, 16] = relu(%c)
  %e : f32[16, 16] = add(%ct, %d)
  %s : f32[] = sum(%e)
  %u : f32[] = sum(%b)
  return (%s, %u)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "b").storage, Storage::Arena);
  EXPECT_EQ(get(plan, "d").storage, Storage::Arena);   // ct still views c
  EXPECT_EQ(get(plan, "e").storage, Storage::InPlace);  // d dies at e; ct is a view
  EXPECT_EQ(get(plan, "e").inplace_of->name(), "d");
}

TEST(MemoryPlan, FusionGroupRunsInPlace) {
  auto g = parse_verified(R"(graph fused(%x : f32[16, 16], %y : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %f : f32[16, 16] = FusionGroup(%y, %a)
    block(%y.1 : f32[16, 16], %a.1 : f32[16, 16]) {
      %p : f32[16, 16] = mul(%y.1, %a.1)
      %q : f32[16, 16] = tanh(%p)
      -> (%q)
    }
  %s : f32[] = sum(%f)
  return (%s)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "f").storage, Storage::InPlace);
  EXPECT_EQ(get(plan, "f").inplace_of->name(), "a");
  EXPECT_EQ(plan.find("p"), nullptr);  // registers of the fused loop
  EXPECT_EQ(plan.arena_bytes, 1024);
}

// ---------------------------------------------------------------------------
// 3. Views

TEST(MemoryPlan, ViewExtendsItsBase) {
  auto g = parse_verified(R"(graph view(%x : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %v : f32[16, 16] = t(%a)
  %b : f32[16, 16] = softmax{dim=1}(%x)
  %c : f32[16, 16] = softmax{dim=1}(%x)
  %m : f32[16, 16] = matmul(%v, %b)
  %n : f32[16, 16] = matmul(%m, %c)
  return (%n)
}
)");
  MemoryPlan plan = plan_checked(*g);
  const ValuePlan& v = get(plan, "v");
  EXPECT_EQ(v.storage, Storage::View);
  EXPECT_EQ(v.alias_of->name(), "a");
  EXPECT_EQ(v.base->name(), "a");
  EXPECT_EQ(v.size, 0);
  EXPECT_EQ(v.offset, get(plan, "a").offset);
  // a's own last use is the t at position 1; the view keeps it to m (4).
  EXPECT_EQ(get(plan, "a").last, 4);
  EXPECT_NE(get(plan, "a").offset, get(plan, "c").offset);
  EXPECT_EQ(plan.num_buffers, 4);  // a, b, c, m
}

// reshape of a transposed arena value may not be viewable: it copies into a
// slot of its own. reshape of a contiguous value, or of a graph input, views.
TEST(MemoryPlan, ReshapeOfAStridedViewCopies) {
  auto g = parse_verified(R"(graph shapes(%x : f32[8, 16]) {
  %a : f32[8, 16] = softmax{dim=1}(%x)
  %r : f32[2, 4, 16] = reshape{shape=[2, 4, 16]}(%a)
  %u : f32[2, 4, 1, 16] = unsqueeze{dim=2}(%r)
  %f : f32[128] = flatten{end_dim=-1, start_dim=0}(%u)
  %at : f32[16, 8] = t(%a)
  %ar : f32[128] = reshape{shape=[128]}(%at)
  %xt : f32[16, 8] = t(%x)
  %xr : f32[128] = reshape{shape=[128]}(%xt)
  %s : f32[128] = add(%f, %ar)
  %y : f32[128] = add(%s, %xr)
  return (%y)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "r").storage, Storage::View);
  EXPECT_EQ(get(plan, "f").storage, Storage::View);
  EXPECT_EQ(get(plan, "f").base->name(), "a");
  EXPECT_EQ(get(plan, "ar").storage, Storage::Arena);
  EXPECT_EQ(get(plan, "ar").note, "copy: reshape of a strided view");
  EXPECT_EQ(get(plan, "xr").storage, Storage::View);
  EXPECT_EQ(get(plan, "xr").base->name(), "x");
}

// ---------------------------------------------------------------------------
// 4. Control flow

// Positions: If 0, a 1, a2 2, then-return 3, b 4, b2 5, else-return 6, end 7,
// z 8. The If output is written from the then-return on.
TEST(MemoryPlan, IfBranchesShareSlots) {
  auto g = parse_verified(R"(graph branches(%c : bool, %x : f32[16, 16]) {
  %y : f32[16, 16] = If(%c)
    block() {
      %a : f32[16, 16] = softmax{dim=1}(%x)
      %a2 : f32[16, 16] = softmax{dim=1}(%a)
      -> (%a2)
    }
    block() {
      %b : f32[16, 16] = softmax{dim=1}(%x)
      %b2 : f32[16, 16] = softmax{dim=1}(%b)
      -> (%b2)
    }
  %z : f32[16, 16] = softmax{dim=1}(%y)
  return (%z)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "a2").last, 3);
  EXPECT_EQ(get(plan, "b2").last, 6);
  EXPECT_EQ(get(plan, "y").first, 3);
  EXPECT_EQ(get(plan, "y").last, 8);
  EXPECT_EQ(get(plan, "a").offset, 0);
  EXPECT_EQ(get(plan, "a2").offset, 1024);
  EXPECT_EQ(get(plan, "y").offset, 0);
  EXPECT_EQ(get(plan, "b").offset, 1024);  // the else branch reuses a2's slot
  EXPECT_EQ(get(plan, "b2").offset, 2048);
  EXPECT_EQ(plan.arena_bytes, 3072);
  EXPECT_EQ(plan.total_bytes, 5 * 1024);
}

// Positions: go 0, w 1, h0 2, Loop 3, m 4, t 5, c 6, body-return 7, end 8,
// z 9. w is read inside the body, so it lives to the Loop's end.
TEST(MemoryPlan, ValueUsedInLoopLivesThroughIt) {
  auto g = parse_verified(R"(graph loop(%n : int, %x : f32[16, 16]) {
  %go : bool = constant{value=true}()
  %w : f32[16, 16] = softmax{dim=1}(%x)
  %h0 : f32[16, 16] = softmax{dim=0}(%x)
  %h.2 : f32[16, 16] = Loop(%n, %go, %h0)
    block(%iter : int, %h : f32[16, 16]) {
      %m : f32[16, 16] = matmul(%h, %w)
      %t : f32[16, 16] = softmax{dim=1}(%m)
      %c : bool = lt(%iter, %n)
      -> (%c, %t)
    }
  %z : f32[16, 16] = matmul(%h.2, %x)
  return (%z)
}
)");
  MemoryPlan plan = plan_checked(*g);
  const Node* loop = nullptr;
  walk(g->top(), [&](const Node* n) {
    if (n->op() == "Loop") loop = n;
  });
  ASSERT_NE(loop, nullptr);
  EXPECT_EQ(plan.node_start.at(loop), 3);
  EXPECT_EQ(plan.node_end.at(loop), 8);
  EXPECT_EQ(get(plan, "w").last, 8);
  EXPECT_EQ(get(plan, "h0").last, 3);  // copied into the carried slot at the start
  EXPECT_EQ(get(plan, "h").storage, Storage::Arena);
  EXPECT_EQ(get(plan, "h").first, 3);
  EXPECT_EQ(get(plan, "h").last, 8);
  EXPECT_EQ(get(plan, "m").first, 4);
  EXPECT_EQ(get(plan, "m").last, 5);
  EXPECT_EQ(get(plan, "t").last, 7);  // returned: copied into h at the body's end
  EXPECT_EQ(get(plan, "h.2").first, 8);
  EXPECT_EQ(get(plan, "h.2").last, 9);
  // Loop body values get one slot each although the body runs many times.
  EXPECT_EQ(plan.num_buffers, 6);  // w, h0, h, m, t, h.2
}

// ---------------------------------------------------------------------------
// 5. Escapes and dynamic sizes

TEST(MemoryPlan, OutputsAreNeverOverwritten) {
  auto g = parse_verified(R"(graph outs(%x : f32[16, 16]) {
  %y : f32[16, 16] = exp(%x)
  %z : f32[16, 16] = relu(%y)
  %a : f32[16, 16] = softmax{dim=1}(%z)
  %r : f32[256] = reshape{shape=[256]}(%a)
  %b : f32[16, 16] = softmax{dim=1}(%x)
  %o : f32[16, 16] = neg(%b)
  return (%y, %r, %o)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "y").storage, Storage::Output);
  EXPECT_EQ(get(plan, "z").storage, Storage::Arena);  // y escapes: not overwritten
  EXPECT_EQ(get(plan, "a").storage, Storage::Output);
  EXPECT_EQ(get(plan, "a").note, "viewed by a graph output");
  EXPECT_EQ(get(plan, "r").storage, Storage::View);
  EXPECT_EQ(get(plan, "o").storage, Storage::Output);  // not in place of b
  EXPECT_EQ(get(plan, "b").storage, Storage::Arena);
  EXPECT_EQ(plan.output_bytes, 3 * 1024);
  for (const ValuePlan& p : plan.values) {
    if (p.storage == Storage::Output) {
      EXPECT_EQ(p.offset, -1);
    }
  }
}

TEST(MemoryPlan, UnknownShapesGoDynamic) {
  auto g = parse_verified(R"(graph dyn(%x : f32[N, 4], %y : Tensor, %w : f32[4, 4]) {
  %a : f32[N, 4] = softmax{dim=1}(%x)
  %b : Tensor = softmax{dim=0}(%y)
  %at : f32[4, N] = t(%a)
  %c : f32[4, 4] = softmax{dim=1}(%w)
  %m : f32[4, 4] = matmul(%at, %c)
  %s : f32[] = sum(%b)
  return (%m, %s)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "a").storage, Storage::Dynamic);
  EXPECT_EQ(get(plan, "a").note, "shape not static");
  EXPECT_EQ(get(plan, "b").storage, Storage::Dynamic);
  EXPECT_EQ(get(plan, "b").note, "dtype unknown");
  EXPECT_EQ(get(plan, "at").storage, Storage::View);
  EXPECT_EQ(get(plan, "at").offset, -1);
  EXPECT_EQ(get(plan, "c").storage, Storage::Arena);
  ASSERT_EQ(plan.dynamic.size(), 2u);
  EXPECT_EQ(plan.dynamic[0]->name(), "a");
  EXPECT_EQ(plan.dynamic[1]->name(), "b");
  EXPECT_EQ(plan.total_bytes, 64);
}

// A tensor saved in a list (autodiff saving one value per Loop iteration)
// outlives the slot's next reuse: it is allocated at run time.
TEST(MemoryPlan, ListElementsLeaveTheArena) {
  auto g = parse_verified(R"(graph saved(%n : int, %x : f32[4, 4]) {
  %go : bool = constant{value=true}()
  %l0 : list = list_new()
  %h.2 : f32[4, 4], %l.2 : list = Loop(%n, %go, %x, %l0)
    block(%iter : int, %h : f32[4, 4], %l : list) {
      %t : f32[4, 4] = tanh(%h)
      %l.n : list = list_append(%l, %t)
      %c : bool = lt(%iter, %n)
      -> (%c, %t, %l.n)
    }
  %zero : int = constant{value=0}()
  %first : f32[4, 4] = list_get(%l.2, %zero)
  %y : f32[4, 4] = add(%first, %h.2)
  return (%y)
}
)");
  MemoryPlan plan = plan_checked(*g);
  EXPECT_EQ(get(plan, "t").storage, Storage::Dynamic);
  EXPECT_EQ(get(plan, "t").note, "kept in a list");
  EXPECT_EQ(get(plan, "first").storage, Storage::External);
  EXPECT_EQ(plan.find("l"), nullptr);  // lists are not tensors
}

TEST(MemoryPlan, RejectsMalformedGraph) {
  auto g = parse(R"(graph bad(%x : f32[4]) {
  %y : f32[4] = frobnicate(%x)
  return (%y)
}
)");
  try {
    plan_memory(*g);
    FAIL() << "expected graph::Error";
  } catch (const graph::Error& e) {
    EXPECT_NE(std::string(e.what()).find("'frobnicate'"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("unknown op"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------------------
// 6. Brute force: the checker catches a bad plan, and passes on random graphs

TEST(MemoryPlan, CheckerCatchesAnOverlap) {
  auto g = parse_verified(R"(graph chain(%x : f32[16, 16]) {
  %a : f32[16, 16] = softmax{dim=1}(%x)
  %b : f32[16, 16] = softmax{dim=1}(%a)
  %c : f32[16, 16] = softmax{dim=1}(%b)
  return (%c)
}
)");
  MemoryPlan plan = plan_memory(*g);
  plan.values[plan.index.at(plan.find("b")->value)].offset = 0;  // onto a, live at b's node
  EXPECT_NONFATAL_FAILURE(check_plan(*g, plan), "are live together");
}

// Random typed graphs: straight-line code mixing elementwise ops (in place),
// kernels, views and copies, with If and Loop segments reading outer values.
class RandomGraph {
 public:
  explicit RandomGraph(unsigned seed) : rng_(seed) {}

  std::string text() {
    std::string body = "  %go : bool = constant{value=true}()\n";
    std::vector<Val> pool = {{"x0", {8, 8}}, {"x1", {8, 8}}, {"x2", {4, 16}}};
    for (int i = 0; i < 24; ++i) {
      int kind = pick(10);
      if (kind == 0) body += loop(pool);
      else if (kind == 1) body += branch(pool);
      else body += node(pool, "  ");
    }
    return "graph random(%x0 : f32[8, 8], %x1 : f32[8, 8], %x2 : f32[4, 16], %n : int) {\n" + body +
           "  return (%" + pool.back().name + ", %" + pool[pool.size() - 2].name + ")\n}\n";
  }

 private:
  struct Val {
    std::string name;
    std::vector<int64_t> dims;
  };

  int pick(int n) { return static_cast<int>(rng_() % n); }
  std::string fresh() { return "v" + std::to_string(next_++); }

  static std::string type(const std::vector<int64_t>& d) {
    std::string s = "f32[";
    for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
    return s + "]";
  }

  // One random node appended to `pool`.
  std::string node(std::vector<Val>& pool, const std::string& indent) {
    const Val a = pool[pool.size() - 1 - pick(std::min<int>(pool.size(), 5))];
    std::vector<Val> same;
    for (const Val& v : pool)
      if (v.dims == a.dims) same.push_back(v);
    const Val b = same[pick(same.size())];
    Val out{fresh(), a.dims};
    std::string call;
    int64_t numel = 1;
    for (int64_t d : a.dims) numel *= d;
    switch (pick(7)) {
      case 0: call = "relu(%" + a.name + ")"; break;
      case 1: call = "add(%" + a.name + ", %" + b.name + ")"; break;
      case 2: call = "softmax{dim=0}(%" + a.name + ")"; break;
      case 3: call = "matmul(%" + a.name + ", %" + b.name + ")"; out.dims = {8, 8}; break;
      case 4:
        if (a.dims.size() != 2) return node(pool, indent);
        call = "t(%" + a.name + ")";
        out.dims = {a.dims[1], a.dims[0]};
        break;
      case 5: call = "reshape{shape=[" + std::to_string(numel) + "]}(%" + a.name + ")"; out.dims = {numel}; break;
      default: call = "mul(%" + a.name + ", %" + a.name + ")"; break;
    }
    pool.push_back(out);
    return indent + "%" + out.name + " : " + type(out.dims) + " = " + call + "\n";
  }

  // A few nodes, returning a value of `dims` (or `fallback`).
  std::string inner(std::vector<Val> pool, const Val& fallback, std::string& result) {
    std::string text;
    for (int i = 1 + pick(3); i > 0; --i) text += node(pool, "      ");
    result = fallback.name;
    for (const Val& v : pool)
      if (v.dims == fallback.dims) result = v.name;
    return text;
  }

  std::string loop(std::vector<Val>& pool) {
    const Val init = pool[pick(pool.size())];
    const std::string id = std::to_string(next_++), h = "h" + id, out = "hl" + id;
    std::vector<Val> inside = pool;
    inside.push_back({h, init.dims});
    std::string result;
    std::string body = inner(inside, {h, init.dims}, result);
    pool.push_back({out, init.dims});
    return "  %" + out + " : " + type(init.dims) + " = Loop(%n, %go, %" + init.name + ")\n    block(%it" + id +
           " : int, %" + h + " : " + type(init.dims) + ") {\n" + body + "      -> (%go, %" + result + ")\n    }\n";
  }

  std::string branch(std::vector<Val>& pool) {
    const Val like = pool[pick(pool.size())];
    const std::string out = "y" + std::to_string(next_++);
    std::string r1, r2;
    std::string then_ = inner(pool, like, r1), else_ = inner(pool, like, r2);
    pool.push_back({out, like.dims});
    return "  %" + out + " : " + type(like.dims) + " = If(%go)\n    block() {\n" + then_ + "      -> (%" + r1 +
           ")\n    }\n    block() {\n" + else_ + "      -> (%" + r2 + ")\n    }\n";
  }

  std::mt19937 rng_;
  int next_ = 0;
};

TEST(MemoryPlan, RandomGraphsNeverOverlap) {
  int64_t arena = 0, total = 0, inplace = 0, views = 0;
  for (unsigned seed = 1; seed <= 300; ++seed) {
    std::string text = RandomGraph(seed).text();
    std::unique_ptr<Graph> g;
    ASSERT_NO_THROW(g = parse_verified(text)) << text;
    MemoryPlan plan = plan_checked(*g);
    EXPECT_GE(plan.arena_bytes, plan.live_peak_bytes) << text;
    EXPECT_LE(plan.arena_bytes, plan.total_bytes) << text;
    arena += plan.arena_bytes;
    total += plan.total_bytes;
    inplace += plan.num_inplace;
    for (const ValuePlan& p : plan.values) views += p.storage == Storage::View;
    if (::testing::Test::HasFailure()) {
      std::cout << text << describe(plan, *g);
      break;
    }
  }
  std::cout << "[memory plan] 300 random graphs: arena " << arena << " B of " << total << " B, " << inplace
            << " in place, " << views << " views\n";
  EXPECT_GT(inplace, 100);  // the generator exercises every rule
  EXPECT_GT(views, 100);
  if (std::getenv("MEMORY_PLAN_SHOW_RANDOM")) std::cout << RandomGraph(7).text();
}

// Every IR text file in the tree: the graphs here and codegen's cases (mostly
// untyped: their tensors go dynamic, and nothing may crash).
TEST(MemoryPlan, EveryGraphFileChecks) {
  int graphs = 0;
  for (const char* dir : {CXXGRAPH_IR_GRAPHS_DIR, CXXGRAPH_CODEGEN_CASES_DIR}) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.path().extension() != ".graph") continue;
      std::ifstream in(entry.path());
      std::stringstream ss;
      ss << in.rdbuf();
      for (const auto& g : parse_all(ss.str())) {
        if (!verify(*g).empty()) continue;  // negative cases live there too
        SCOPED_TRACE(entry.path().string() + ": " + g->name());
        plan_checked(*g);
        ++graphs;
      }
    }
  }
  EXPECT_GE(graphs, 7);
}

// ---------------------------------------------------------------------------
// 7. The issue's figures: MLP and Transformer block

void report(const std::string& name, const MemoryPlan& plan) {
  double ratio = double(plan.arena_bytes) / double(plan.total_bytes);
  std::cout << "[memory plan] " << name << ": planned peak " << plan.arena_bytes << " B, sum of intermediates "
            << plan.total_bytes << " B, ratio " << ratio << ", " << plan.num_buffers << " buffers, "
            << plan.num_inplace << " in place, live peak " << plan.live_peak_bytes << " B\n";
  ::testing::Test::RecordProperty("planned_peak_bytes", std::to_string(plan.arena_bytes));
  ::testing::Test::RecordProperty("intermediate_sum_bytes", std::to_string(plan.total_bytes));
  ::testing::Test::RecordProperty("ratio", std::to_string(ratio));
}

// By hand: h1, a1, h2, a2 are 64x512 f32 = 131072 B each, logits 2560 B:
// sum 526848. a1 runs in place of h1 and a2 of h2; h1/a1 and h2/a2 meet at
// h2's linear, logits takes h1's slot: 262144.
TEST(MemoryPlan, MlpPeakIsAtMostSixTenthsOfTheSum) {
  auto g = parse_verified(read_graph_file("mlp.graph"));
  MemoryPlan plan = plan_checked(*g);
  std::cout << describe(plan, *g);
  report("mlp 784-512-512-10, batch 64", plan);
  EXPECT_EQ(plan.total_bytes, 526848);
  EXPECT_EQ(plan.arena_bytes, 262144);
  EXPECT_EQ(plan.num_inplace, 2);
  EXPECT_LE(plan.arena_bytes, 0.6 * plan.total_bytes);
}

TEST(MemoryPlan, TransformerBlockPeakIsAtMostSixTenthsOfTheSum) {
  auto g = parse_verified(read_graph_file("transformer_block.graph"));
  MemoryPlan plan = plan_checked(*g);
  std::cout << describe(plan, *g);
  report("transformer block b8 s64 d256 h4 ffn1024", plan);
  // Heads are views; the merge of heads (reshape of a transpose) copies.
  EXPECT_EQ(get(plan, "qh").storage, Storage::View);
  EXPECT_EQ(get(plan, "kt").base->name(), "k");
  EXPECT_EQ(get(plan, "ctx2").storage, Storage::Arena);
  EXPECT_EQ(get(plan, "scaled").storage, Storage::InPlace);
  EXPECT_EQ(get(plan, "r1").storage, Storage::InPlace);  // over attn, not the input x
  EXPECT_EQ(get(plan, "g").storage, Storage::InPlace);
  EXPECT_GE(plan.arena_bytes, plan.live_peak_bytes);
  EXPECT_LE(plan.arena_bytes, 0.6 * plan.total_bytes);
}

// ---------------------------------------------------------------------------
// 8. The plan in the IR text

TEST(MemoryPlan, AnnotationsSurviveTheTextFormat) {
  auto g = parse_verified(read_graph_file("transformer_block.graph"));
  MemoryPlan plan = plan_memory(*g);
  annotate_memory_plan(*g, plan);
  std::string text = print(*g);
  EXPECT_NE(text.find("%g : f32[8, 64, 1024] = gelu{inplace=[0], mem_offset=[" +
                      std::to_string(get(plan, "g").offset) + "], mem_size=[2097152]}(%f1)"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("mem_offset=[-1]"), std::string::npos);  // y is an output: nothing
  auto again = parse_verified(text);
  EXPECT_EQ(print(*again), text);
  MemoryPlan replanned = plan_checked(*again);
  EXPECT_EQ(replanned.arena_bytes, plan.arena_bytes);
  EXPECT_EQ(replanned.total_bytes, plan.total_bytes);
}

TEST(MemoryPlan, DescribeListsEveryTensor) {
  auto g = parse_verified(read_graph_file("mlp.graph"));
  MemoryPlan plan = plan_memory(*g);
  std::string text = describe(plan, *g);
  EXPECT_NE(text.find("arena 256.0 KiB (262144 B)"), std::string::npos) << text;
  EXPECT_NE(text.find("ratio 0.498"), std::string::npos) << text;
  EXPECT_NE(text.find("in place of %h1"), std::string::npos) << text;
  EXPECT_NE(text.find("%w1"), std::string::npos) << text;
  EXPECT_NE(text.find("graph output"), std::string::npos) << text;
}

}  // namespace
}  // namespace graph::ir
