#pragma once
// Memory planning: value lifetimes, buffer reuse and in-place updates.
//
// An analysis, not a transform: plan_memory(g) returns a MemoryPlan that
// codegen (one arena allocated once per input signature, no allocation per
// call in steady state), graph-inspect (describe()) and the IR text
// (annotate_memory_plan()) consume.
//
// The model
//  - Program order. Nodes are numbered in pre-order over the nested blocks; a
//    node that owns blocks also numbers each block's return and its own end:
//      If:   start, then-nodes, then-return, else-nodes, else-return, end
//      Loop: start, body-nodes, body-return, end
//    A FusionGroup is one position: its members are registers of one loop.
//  - Live range [first, last] of a tensor value: from its definition to its
//    last use. A use inside a Loop body of a value defined outside the Loop
//    lasts until the Loop's end (the body runs many times). A block return is
//    a use at the block's return position. A value's range also covers every
//    use of the views of it (the buffer must outlive its views).
//  - Control-flow joins copy. An If output is its own buffer, written at the
//    end of the branch taken (live from the then-return position); a Loop's
//    carried block parameters are buffers live over the whole Loop (the
//    initial values are copied in at its start, the body's returned values at
//    the end of each iteration); Loop outputs are copied out at its end. The
//    two branches of an If are laid out one after the other, so their values
//    never overlap and share slots freely.
//  - Storage kinds (Storage below). Only Arena and InPlace values occupy the
//    arena. Graph outputs escape to the caller, who keeps them after the next
//    call reuses the arena: they (and the bases of views they return) are
//    allocated per call and are neither in the arena nor in the sum of
//    intermediates (output_bytes reports them).
//  - Views (OpKind::View) alias their input and get no buffer. reshape and
//    flatten of a value that is not contiguous by construction (a transpose,
//    permute, expand or slice of an arena value) cannot always be viewed: they
//    get an Arena slot of their own and always copy into it. reshape/flatten
//    of a graph input (or of a view of one) is a view; if it is not viewable
//    at run time the runtime copies it outside the arena.
//  - In-place: an elementwise node (op-table Elementwise or a FusionGroup)
//    writes an output into the slot of one of its tensor inputs when that
//    input is an arena value (not a view, not a graph input) of the same dtype
//    and byte size whose buffer (views included) is last used by this node,
//    and no other input of the node views that buffer. Equal byte sizes mean
//    equal element counts, so element i of the output overwrites element i of
//    the input only after reading it.
//  - Sizes are numel * element size, rounded up to 64 bytes. Values whose
//    dtype or shape is not static are Dynamic: allocated at run time.
//
// Reuse: greedy by size with best fit (as TFLite's arena planner and Pisarchyk
// & Lee, "Efficient Memory Management for Deep Neural Net Inference", 2020).
// Buffers (a value plus the values written in place into it) are placed by
// decreasing size (ties: earlier first use, then program order); each goes
// into the smallest gap between the already placed buffers whose live ranges
// overlap its own, or above the highest of them. Deterministic: the order
// depends only on the graph.
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

enum class Storage : uint8_t {
  Arena,     // its own slot [offset, offset + size) of the arena
  InPlace,   // written into the slot of `inplace_of` (same offset and size)
  View,      // a view of `alias_of`; no buffer (offset: its base's, if any)
  Output,    // escapes as (part of) a graph output: allocated per call
  Dynamic,   // size unknown at build time, or kept beyond the plan (a list
             // element, a call result): allocated at run time
  External,  // not allocated by this graph: a graph input, a list element,
             // an undefined tensor, or a view of one
};

std::string_view storage_name(Storage s);

// The plan for one tensor value.
struct ValuePlan {
  const Value* value = nullptr;
  Storage storage = Storage::Arena;
  int64_t offset = -1;  // Arena, InPlace, and views of those; -1 otherwise
  int64_t size = 0;     // bytes reserved, a multiple of 64 (0 if unknown/none)
  int64_t bytes = 0;    // numel * element size (0 if unknown)
  int first = 0;        // live range, program positions (inclusive)
  int last = 0;
  const Value* alias_of = nullptr;    // View: the value viewed
  const Value* inplace_of = nullptr;  // InPlace: the input whose slot it takes
  const Value* base = nullptr;        // the value owning the storage (itself if not a view)
  std::string note;                   // why, for describe(): "graph input", ...
};

struct MemoryPlan {
  std::vector<ValuePlan> values;     // every tensor value, in program order
  int64_t arena_bytes = 0;           // the planned peak: arena size
  int64_t total_bytes = 0;           // sum of all Arena + InPlace sizes (no reuse)
  int64_t live_peak_bytes = 0;       // max over positions of the live slots' sizes
                                     // (a lower bound for any arena)
  int64_t output_bytes = 0;          // Output values (outside the arena)
  int num_buffers = 0;               // Arena slots
  int num_inplace = 0;               // InPlace values
  int num_positions = 0;             // program positions used
  std::vector<const Value*> dynamic; // Dynamic values, in program order
  // Program position of every node (start) and of its end (for If/Loop).
  std::unordered_map<const Node*, int> node_start, node_end;

  // The plan of `v` (or of the value named `name`); nullptr when not planned
  // (a scalar, a list, or a value not in the graph).
  const ValuePlan* find(const Value* v) const;
  const ValuePlan* find(std::string_view name) const;

  std::unordered_map<const Value*, size_t> index;  // value -> its entry in `values`
};

// The plan for `g`. Precondition: `g` verifies (throws graph::Error
// otherwise). Tensor types with a static shape and dtype are planned.
MemoryPlan plan_memory(const Graph& g);

// A readable report: the totals, then one row per tensor value (storage,
// offset, size, live range, alias or in-place source, note).
std::string describe(const MemoryPlan& plan, const Graph& g);

// Writes the plan onto the nodes as attributes, so it survives in the IR text:
// per output, mem_offset=[...] and mem_size=[...] (-1 / 0 for outputs not in
// the arena), and inplace=[...] (the input index whose slot it takes, or -1)
// when any output is in place. Nodes without arena outputs get nothing.
void annotate_memory_plan(Graph& g, const MemoryPlan& plan);

}  // namespace graph::ir
