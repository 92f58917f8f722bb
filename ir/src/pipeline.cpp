// The pass pipeline (pipeline.h): a table of named passes and a loop that
// runs, verifies and dumps them.
#include "graph/ir/pipeline.h"

#include <cstdlib>
#include <iostream>
#include <sstream>

#include "graph/error.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"

namespace graph::ir {

namespace {

std::vector<std::string> split_names(const std::string& s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s + ",") {
    if (c == ',') {
      if (!cur.empty()) out.push_back(cur);
      cur.clear();
    } else if (c != ' ' && c != '\t' && c != '\n') {
      cur += c;
    }
  }
  return out;
}

bool dumps_after(const std::vector<std::string>& which, const std::string& pass) {
  for (const auto& w : which)
    if (w == "all" || w == pass) return true;
  return false;
}

void verify_named(const Graph& g, const std::string& pass) {
  try {
    verify_or_throw(g);
  } catch (const Error& e) {
    throw Error((pass.empty() ? std::string("the input") : "pass '" + pass + "'") + " broke graph '" + g.name() +
                "': " + e.what());
  }
}

}  // namespace

const std::vector<Pass>& all_passes() {
  static const std::vector<Pass> passes = {
      {"inline_calls",
       [](Graph& g, const PassContext& c) {
         static const Module kNone;
         inline_calls(g, c.module ? *c.module : kNone);
       }},
      {"infer_types", [](Graph& g, const PassContext& c) { infer_types(g, c.tensor_default); }},
      {"simplify", [](Graph& g, const PassContext&) { simplify(g); }},
      {"unpack_lists", [](Graph& g, const PassContext&) { unpack_lists(g); }},
      {"const_fold", [](Graph& g, const PassContext&) { const_fold(g); }},
      {"cse", [](Graph& g, const PassContext&) { cse(g); }},
      {"dce", [](Graph& g, const PassContext&) { dce(g); }},
      {"fuse_attention", [](Graph& g, const PassContext&) { fuse_attention(g); }},
      {"sink_slices", [](Graph& g, const PassContext&) { sink_slices(g); }},
      {"fuse_elementwise", [](Graph& g, const PassContext&) { fuse_elementwise(g); }},
      {"fuse_groups", [](Graph& g, const PassContext&) { fuse_groups(g); }},
      {"place_grad_sync", [](Graph& g, const PassContext&) { place_grad_sync(g); }},
  };
  return passes;
}

const Pass& find_pass(const std::string& name) {
  std::string known;
  for (const Pass& p : all_passes()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw Error("unknown pass '" + name + "' (known: " + known + ")");
}

std::vector<Pass> parse_pipeline(const std::string& names) {
  std::vector<Pass> out;
  for (const auto& n : split_names(names)) out.push_back(find_pass(n));
  return out;
}

std::vector<Pass> default_pipeline() {
  return parse_pipeline(
      "inline_calls, infer_types, simplify, unpack_lists, const_fold, cse, dce, infer_types, fuse_attention, "
      "sink_slices, fuse_elementwise, fuse_groups, place_grad_sync");
}

std::vector<Pass> gradient_pipeline() {
  return parse_pipeline(
      "infer_types, simplify, const_fold, cse, dce, infer_types, fuse_attention, sink_slices, fuse_elementwise, "
      "fuse_groups");
}

void run_pipeline(Graph& g, const std::vector<Pass>& steps, const PipelineOptions& options, const Module* module) {
  std::string dump_spec;
  if (options.dump_after) dump_spec = *options.dump_after;
  else if (const char* env = std::getenv("GRAPH_DUMP_AFTER")) dump_spec = env;
  const std::vector<std::string> dump_which = split_names(dump_spec);
  std::ostream& dump = options.dump ? *options.dump : std::cerr;

  const PassContext ctx{module, options.tensor_default};
  if (options.verify) verify_named(g, "");
  for (const Pass& p : steps) {
    p.run(g, ctx);
    if (options.verify) verify_named(g, p.name);
    if (dumps_after(dump_which, p.name)) dump << "// after " << p.name << "\n" << print(g);
  }
}

void run_pipeline(Module& m, const std::vector<Pass>& steps, const PipelineOptions& options) {
  for (auto& g : m) run_pipeline(*g, steps, options, &m);
}

}  // namespace graph::ir
