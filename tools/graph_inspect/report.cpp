#include "report.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "graph/error.h"
#include "graph/ir/memory_plan.h"
#include "graph/ir/passes.h"
#include "graph/ir/verifier.h"
#include "graph/op_properties.h"
#include "graph/op_table.h"

namespace graph::inspect {

namespace {

std::string names(const std::vector<ir::Value*>& values) {
  std::string s;
  for (const auto* v : values) s += (s.empty() ? "%" : ", %") + v->name();
  return s;
}

// Where a nested node sits: "If@rnn.cpp:11:3 then", "FusionGroup %y", ...
std::string context(const ir::Node& n) {
  std::string where;
  for (const ir::Block* b = n.owner(); b && b->owner(); b = b->owner()->owner()) {
    const ir::Node& owner = *b->owner();
    std::string part = owner.op();
    if (owner.is(OpId::If)) part += b == owner.block(0) ? " (then)" : " (else)";
    if (owner.is(OpId::FusionGroup)) part += " " + names(owner.outputs());
    else part += " at " + short_loc(owner.loc());
    where = where.empty() ? part : part + " > " + where;
  }
  return where;
}

// Line `line` (1-based) of `file`, trimmed; "" when unreadable.
std::string source_line(const std::string& file, int line) {
  std::ifstream in(file);
  std::string text;
  for (int i = 0; i < line && std::getline(in, text); ++i) {
  }
  if (!in) return "";
  const size_t first = text.find_first_not_of(" \t");
  return first == std::string::npos ? "" : text.substr(first);
}

}  // namespace

std::string node_signature(const ir::Node& n) {
  std::string s = n.num_outputs() ? names(n.outputs()) + " = " : "";
  return s + n.op() + "(" + names(n.inputs()) + ")";
}

std::string short_loc(const ir::SourceLoc& loc) {
  if (!loc.valid()) return "";
  return std::filesystem::path(loc.file).filename().string() + ":" + std::to_string(loc.line) + ":" +
         std::to_string(loc.col);
}

std::string fusion_report(const ir::Graph& g) {
  std::ostringstream out;
  int count = 0;
  ir::walk(g.top(), [&](const ir::Node* n) {
    if (!n->is(OpId::FusionGroup)) return;
    const std::string kind = n->has_attr("kind") ? n->s("kind") : "elementwise";
    out << "group " << ++count << ": " << names(n->outputs()) << " (" << kind << ", "
        << n->block(0)->nodes().size() << " ops)";
    if (const std::string where = context(*n); !where.empty()) out << " in " << where;
    out << "\n";
    for (const auto& m : n->block(0)->nodes())
      out << "  " << short_loc(m->loc()) << (m->loc().valid() ? "  " : "") << node_signature(*m) << "\n";
  });
  if (count == 0) out << "no fusion groups\n";
  return out.str();
}

std::string source_map(const ir::Graph& g) {
  // (file, line) -> nodes, in line order; nodes without a location last.
  std::map<std::pair<std::string, int>, std::vector<const ir::Node*>> by_line;
  ir::walk(g.top(), [&](const ir::Node* n) {
    if (n->is(OpId::FusionGroup)) return;  // its members carry the lines
    by_line[{n->loc().file, n->loc().line}].push_back(n);
  });
  std::ostringstream out;
  for (const auto& [key, nodes] : by_line) {
    const auto& [file, line] = key;
    if (line > 0) {
      out << std::filesystem::path(file).filename().string() << ":" << line;
      if (const std::string text = source_line(file, line); !text.empty()) out << "  " << text;
    } else {
      out << "(no source location)";
    }
    out << "\n";
    for (const auto* n : nodes) {
      out << "    " << node_signature(*n);
      if (n->loc().valid()) out << "  col " << n->loc().col;
      if (const std::string where = context(*n); !where.empty()) out << "  [in " << where << "]";
      out << "\n";
    }
  }
  return out.str();
}

void specialize_inputs(ir::Graph& g, const std::map<std::string, std::string>& types) {
  for (const auto& [name, text] : types) {
    ir::Value* input = nullptr;
    for (const auto& v : g.inputs())
      if (v->name() == name) input = v.get();
    if (!input) throw Error("graph-inspect: graph '" + g.name() + "' has no input named '" + name + "'");
    std::unique_ptr<ir::Graph> probe;
    try {
      probe = ir::parse("graph probe(%x : " + text + ") {\n  return (%x)\n}\n");
    } catch (const Error& e) {
      throw Error("graph-inspect: '" + text + "' is not an IR type (e.g. f32[3, 5]): " + e.what());
    }
    input->set_type(probe->inputs().front()->type());
  }
  ir::infer_types(g);
  ir::verify_or_throw(g);
}

std::string memory_report(const ir::Graph& g) { return ir::describe(ir::plan_memory(g), g); }

namespace {

const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::Elementwise: return "elementwise";
    case OpKind::Reduce: return "reduce";
    case OpKind::Library: return "library";
    case OpKind::View: return "view";
    case OpKind::Other: return "other";
    case OpKind::Control: return "control";
    case OpKind::List: return "list";
    case OpKind::Value: return "value";
  }
  return "?";
}

std::string trait_names(const OpInfo& op) {
  static constexpr std::pair<uint16_t, const char*> kNames[] = {
      {op_trait::Pure, "pure"},           {op_trait::Random, "random"},
      {op_trait::RandomIfDropoutP, "random-if-dropout_p"}, {op_trait::ReadsHost, "reads-host"},
      {op_trait::Effectful, "effectful"}, {op_trait::Expensive, "expensive"},
      {op_trait::CpuOnly, "cpu-only"},    {op_trait::CudaPartly, "cuda-partly"},
      {op_trait::ValuesUnread, "values-unread"}};
  std::string s;
  for (const auto& [bit, name] : kNames)
    if (op.has(bit)) s += (s.empty() ? "" : ",") + std::string(name);
  const std::string sep = s.empty() ? "" : ",";
  if (const OpInfo* f = forward_op(op)) s += sep + "backward-of=" + std::string(f->name);
  else if (op.has(op_trait::Backward)) s += sep + "gradient-helper";
  return s.empty() ? "-" : s;
}

// Columns: the longest op name (scaled_dot_product_attention_backward) and
// the longest kind, each plus a space.
std::string padded(std::string_view s, size_t width) {
  return std::string(s) + std::string(s.size() < width ? width - s.size() : 1, ' ');
}

std::string arity(int n) { return n < 0 ? "*" : std::to_string(n); }

}  // namespace

namespace {

const char* rule_text(DTypeRule r) {
  switch (r) {
    case DTypeRule::Same: return "promoted inputs";
    case DTypeRule::ToFloat: return "floating (integral: float32)";
    case DTypeRule::ToBool: return "bool";
    case DTypeRule::Accumulate: return "floating, or int64";
    case DTypeRule::ToIndex: return "int64";
    case DTypeRule::FirstInput: return "the first input's";
    case DTypeRule::SecondInput: return "the second input's";
    case DTypeRule::Attribute: return "the dtype attribute";
    case DTypeRule::Floating: return "floating inputs only";
  }
  return "?";
}

constexpr const char* kMarkdownHead = R"(# Supported ops

Generated from the op table (`ir/include/graph/ops.def`) by `graph-inspect ops --markdown`;
do not edit. Regenerate it with
`build/tools/graph_inspect/graph-inspect ops --markdown > docs/ops.md`
(`graph_inspect_test` fails while this file differs from the table).

Every op below has an eager CPU kernel (`graph::name(...)` in `<graph/graph.h>`, with
PyTorch's semantics and dtype promotion), runs in the graph interpreter, is compiled by
codegen, and is lowered by the plugin where a `[[graph::static]]` function calls it.
Columns:
- **kind**: `elementwise` ops share one scalar body (CPU, fused loops, CUDA) and fuse with
  their neighbours in static graphs; `reduce` ops fuse their elementwise producers;
- **result**: the result dtype, from the promoted dtype of the inputs;
- **autograd**: eager autograd and static-graph autodiff (one formula serves both);
  `no` for bool and index results and piecewise-constant ops;
- **CUDA**: `yes`, `partly` (some arguments run on the CPU only: `docs/runtime.md`, CUDA,
  says which) or `no` (a device operand is an error naming the op).

| op | kind | result | autograd | static | CUDA |
|----|------|--------|----------|--------|------|
)";

constexpr const char* kMarkdownTail = R"(
Built from the ops above (inline functions that the plugin lowers like user code):
`clamp(x, lo, hi)` and `hardtanh(x, min_val = -1, max_val = 1)` are
`clamp_max(clamp_min(x, lo), hi)`; `where(cond, x, scalar)` and `where(cond, scalar, y)`
are `masked_fill` with PyTorch's dtype for a scalar operand. Method forms: every unary
elementwise op (`x.sin()`), `x.clamp_min(lo)`, `x.clamp_max(hi)`, `x.masked_fill(mask,
value)`, `x.triu(d)`, `x.tril(d)`, `x.index_select(dim, index)`, `x.gather(dim, index)`,
`x.cumsum(dim)` and `a.bmm(b)` lower in static functions; `x.clamp(lo, hi)` runs
eagerly only.

Reductions and losses built the same way (their kernels are the table ops', so they
run on CUDA where those do; gradients come from those ops):
- `logsumexp(x, dims, keepdim = false)`: `m + log(sum(exp(x - m), dims))`, `m` the
  `amax` over dims taken as 0 where infinite (a row of -inf gives -inf, as PyTorch);
- `var(x, dims, correction = 1, keepdim = false)`, `std(...)` (= `sqrt(var)`), and
  `var(x)` / `std(x)` over all dims: `sum((x - mean)^2) / max(0, n - correction)`; a
  bool `unbiased` converts to the correction; write `graph::std`;
- `nll_loss(log_probs [N, C], target int64 [N], weight = {}, reduction = kMean,
  ignore_index = -100)`: `gather` of the targets' log-probabilities (ignored targets
  weigh 0); `kMean` divides by the sum of the picked weights. A bad target is an error
  of that `gather` (or `index_select` for the weight), naming it and the shapes;
- `binary_cross_entropy(p, target, reduction = kMean, weight = {})`, each log clamped
  at -100; `binary_cross_entropy_with_logits(x, target, reduction = kMean,
  pos_weight = {}, weight = {})` through `softplus(-x)` (no overflow for large |x|).
  `Reduction` is `kNone`, `kMean` or `kSum` (`graph::Reduction`, as `torch::kMean`).
  `target` is read in the input's shape (`reshape`): one with another element count is
  an error of that reshape, never broadcast.

nn functions built the same way (`graph/nn_functional.h`; PyTorch's names and
argument order, each lowered whole with a static backward):
- `group_norm(x [N, C, *], num_groups, weight = {}, bias = {}, eps = 1e-5)`:
  `layer_norm` of `x` reshaped to `[N, num_groups, C / num_groups * L]`, then the
  per-channel affine; groups that do not divide `C` are that reshape's error;
- `conv1d(x [N, C, L], weight [O, C / groups, K], bias = {}, stride = 1, padding = 0,
  dilation = 1, groups = 1)`, `max_pool1d(x, kernel, stride = kernel, padding = 0)`,
  `avg_pool1d(...)` (padding counted): the 2-d ops on a height-1 image (bad shapes are
  `conv2d`'s errors, on that view);
- `adaptive_max_pool2d(x [N, C, H, W], {oh, ow})` (values only, as
  `torch.nn.functional`'s): PyTorch's windows `[floor(i H / oh), ceil((i + 1) H / oh))`.
  Sizes that divide the input (1: a global pool) reduce the blocks of a reshape; other
  sizes, whose windows overlap, go one dim at a time (`amax` over a `where` of each
  window's mask). `adaptive_avg_pool2d`, over the same windows, is an op of the table;
- `interpolate(x, size, mode = kNearest, align_corners = false)` and
  `interpolate_scale(x, scale_factor, ...)` (output `floor(in * scale_factor)`; its own
  name, so that `interpolate(x, {3})` is a size): `x [N, C, L]` with `kNearest` or
  `kLinear`, `x [N, C, H, W]` with `kNearest` or `kBilinear`. Nearest picks source
  `min(floor(dst * in / out), in - 1)` computed in float32, as PyTorch (any dtype);
  linear modes use half-pixel centres (or `align_corners`) and weigh the two neighbours
  (float16/bfloat16 blend in float32). An op of the table (`interpolate{size |
  scale_factor, mode, align_corners}`) with a direct CPU kernel and backward; bad input
  is its error, eagerly and in a graph's type rule;
- `pad(x, {left, right, top, bottom, ...}, value = 0)`: constant mode, a pair per dim
  at most, negative amounts crop; an op of the table (one fill and one strided copy),
  whose gradient is `pad` of the gradient with the amounts negated;
- `one_hot(indices, num_classes)`: int64 `[..., num_classes]` (each index compared
  with `arange(num_classes)`; an index out of range is `index_select`'s error);
  `one_hot(indices)` (max + 1 classes) runs eagerly only;
- `full_like(x, v)`, `ones_like(x)`, `zeros_like(x)`: `masked_fill` of `x`, its shape and
  dtype read at run time. `rand_like(x)` and `randn_like(x)` are table ops (above): a
  graph draws from graph's generator, in program order, what the eager code draws
  under the same `manual_seed`.

Sorting, norms and einsum (`graph/ops.h`):
- `sort(x, dim = -1, descending = false)` and `topk(x, k, dim = -1, largest = true,
  sorted = true)` give `(values, int64 indices)`: `argsort` then `gather`, so the values'
  gradient is `gather`'s (the gradient scattered back at the indices). Stable (as
  `torch.sort(stable=True)`), NaN the largest value; `topk` always returns its values
  sorted, and k outside `[0, size]` is an error naming `topk`. Method forms `x.sort()`,
  `x.argsort()`, `x.topk(k)`;
- `norm(x, p = 2, dims = {}, keepdim = false)` (`x.norm(...)`, `linalg_vector_norm`,
  `norm(x, "fro")`): p = 2, 1, `INFINITY`, `-INFINITY`, 0 or any other p, over `abs`,
  `pow`, `sum`, `amax`/`amin` and `sqrt`; the gradient at a zero norm is 0, as PyTorch's.
  `norm(x, "fro")` runs eagerly only (a string parameter): write `norm(x)` in static code;
- `einsum(equation, {tensors})` runs eagerly only (the equation is parsed at run time:
  in a static function it is a `-Wgraph-fallback` warning, "the call to 'graph::einsum'
  cannot be lowered"): sums over the letters one operand alone has, then one permute,
  reshape and `bmm` per pair of operands. No ellipsis, repeated letters within an operand
  (diagonals) or broadcasting: each is an error naming the equation.
)";

}  // namespace

std::string op_markdown() {
  std::ostringstream out;
  out << kMarkdownHead;
  for (const OpInfo& op : kOpTable) {
    if (op.has(op_trait::Backward)) continue;  // emitted by autodiff, not called by users
    const bool grad = differentiable(op);
    const char* cuda = op.has(op_trait::CpuOnly) ? "no" : op.has(op_trait::CudaPartly) ? "partly" : "yes";
    out << "| `" << op.name << "` | " << kind_name(op.kind) << " | " << rule_text(op.rule) << " | "
        << (grad ? "yes" : "no") << " | yes | " << cuda << " |\n";
  }
  out << kMarkdownTail;
  return out.str();
}

std::string op_listing() {
  std::ostringstream out;
  auto row = [&](const OpInfo& op) {
    out << padded(op.name, 38) << padded(kind_name(op.kind), 13) << arity(op.num_inputs) << " -> "
        << arity(op.num_outputs) << "  " << trait_names(op) << "\n";
  };
  for (const OpInfo& op : kOpTable) row(op);
  for (const OpInfo& op : kPrimitiveTable) row(op);
  return out.str();
}

}  // namespace graph::inspect
