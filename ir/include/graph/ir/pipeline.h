#pragma once
// The optimization pipeline: a flat list of named passes, run in order.
//
//   auto module = parse_all(text);
//   PipelineOptions opts;
//   opts.verify = true;                       // verify_or_throw after every pass
//   for (auto& g : module) run_pipeline(*g, default_pipeline(), opts, &module);
//
// GRAPH_DUMP_AFTER=all (or a comma-separated list of pass names) prints
// "// after <pass>" and the IR to stderr after each matching pass.
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "graph/ir/ir.h"

namespace graph::ir {

// Several graphs that may call each other (call{callee="f"}).
using Module = std::vector<std::unique_ptr<Graph>>;

struct PassContext {
  const Module* module = nullptr;          // for inline_calls; null: no callees
  DType tensor_default = DType::Float32;   // for infer_types
};

struct Pass {
  std::string name;
  std::function<void(Graph&, const PassContext&)> run;
};

struct PipelineOptions {
  bool verify = false;  // verify before the first pass and after every pass
  // Which passes to dump after ("all" or "a,b"); nullopt reads GRAPH_DUMP_AFTER.
  std::optional<std::string> dump_after;
  std::ostream* dump = nullptr;  // where dumps go; null: std::cerr
  DType tensor_default = DType::Float32;
};

// inline_calls, infer_types, simplify, unpack_lists, const_fold, cse, dce, infer_types,
// fuse_attention, sink_slices, fuse_elementwise, fuse_groups, place_grad_sync: the order the
// plugin and graph-codegen use (place_grad_sync last: it places nodes after the
// gradients' producers as they will run). Types are inferred first because simplify only rewrites
// where it can prove the dtype and shape unchanged, and again after the
// cleanups so sink_slices and fusion see the final types; sink_slices comes
// right before fusion so the elementwise ops it moves below slices fuse with
// the slices' users.
std::vector<Pass> default_pipeline();

// infer_types, simplify, const_fold, cse, dce, infer_types, fuse_attention, sink_slices,
// fuse_elementwise, fuse_groups: what each half of a differentiated graph runs (codegen/grad.h),
// so the backward's elementwise chains, reductions and epilogues fuse as the
// forward's do.
std::vector<Pass> gradient_pipeline();

// Every pass by name (the names of passes.h's entry functions).
const std::vector<Pass>& all_passes();
// The pass named `name`; throws graph::Error listing the known names.
const Pass& find_pass(const std::string& name);
// "simplify,dce" -> those passes in order (spaces ignored).
std::vector<Pass> parse_pipeline(const std::string& names);

// Runs `steps` on `g` in order. With options.verify, a graph a pass leaves
// malformed throws graph::Error "pass '<name>' broke graph '<g>': ...".
void run_pipeline(Graph& g, const std::vector<Pass>& steps, const PipelineOptions& options = {},
                  const Module* module = nullptr);

// Runs `steps` on every graph of `m`, with `m` as the callees of inline_calls.
void run_pipeline(Module& m, const std::vector<Pass>& steps, const PipelineOptions& options = {});

}  // namespace graph::ir
