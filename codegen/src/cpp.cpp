// The CPU code generator's graph-level writer: one GraphFn per graph (input
// guards, one C++ statement per node, control flow as C++ if/for), then the
// registration objects. Fused elementwise loops are written by
// fusion_kernel.cpp.
//
// Precondition: every graph has run infer_types and fuse_elementwise and
// verifies. The generated code only ever calls the public runtime API and
// graph::scalar::<op>, so the math lives in one place (ops.def).
#include "graph/codegen/cpp.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <functional>
#include <map>
#include <cmath>
#include <limits>
#include <optional>
#include <set>

#include "emitter.h"
#include "graph/ir/compile.h"
#include "graph/ir/device_control.h"
#include "graph/ir/value_primitives.h"
#include "graph/codegen/call_contract.h"
#include "graph/codegen/grad.h"
#include "graph/error.h"

namespace graph::codegen {
namespace detail {

// ---- spellings -------------------------------------------------------------

std::string cpp_type(const ir::Type& t) {
  switch (t.kind) {
    case ir::Type::Kind::Int: return "int64_t";
    case ir::Type::Kind::Float: return "double";
    case ir::Type::Kind::Bool: return "bool";
    case ir::Type::Kind::List: return "std::vector<::graph::Tensor>";
    case ir::Type::Kind::Tensor: break;
  }
  return "::graph::Tensor";
}

std::string local_decl_type(const ir::Type& t) {
  return (t.is_tensor() || t.is_list() ? "" : "[[maybe_unused]] ") + cpp_type(t);
}

const char* element_type(DType d) { return dtype_cpp_type(d).data(); }

std::string dtype_expr(DType d) {
  switch (d) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name: return "::graph::DType::" #name;
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  return "::graph::DType::Float32";
}

std::string loc_str(const ir::SourceLoc& loc) {
  return loc.valid() ? loc.file + ":" + std::to_string(loc.line) : std::string();
}

namespace {

DType scalar_category(ir::Type::Kind k) {
  switch (k) {
    case ir::Type::Kind::Float: return DType::Float32;
    case ir::Type::Kind::Int: return DType::Int64;
    default: return DType::Bool;
  }
}

// A double literal that reads back exactly; inf and nan spelled through
// numeric_limits.
std::string double_literal(double v) {
  if (std::isnan(v)) return "std::numeric_limits<double>::quiet_NaN()";
  if (std::isinf(v)) return v > 0 ? "std::numeric_limits<double>::infinity()"
                                   : "-std::numeric_limits<double>::infinity()";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, end);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

// INT64_MIN has no literal spelling (the '-' applies to an out-of-range 2^63).
std::string int_literal(int64_t v) {
  if (v == std::numeric_limits<int64_t>::min()) return "std::numeric_limits<int64_t>::min()";
  return "int64_t{" + std::to_string(v) + "}";
}

}  // namespace

std::string sanitize_identifier(const std::string& s) {
  std::string out;
  for (char c : s) out += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return out;
}

namespace {

// The C++ type a host-scalar elementwise node computes in (its
// graph::scalar::<op><T>): comparisons compute in the promoted input type,
// everything else in the output's type (infer_types chose it by C++ rules).
std::string scalar_compute_type(const ir::Node* n, const OpInfo& op) {
  if (op.rule != DTypeRule::ToBool) return cpp_type(n->output()->type());
  ir::Type::Kind k = ir::Type::Kind::Bool;
  for (const ir::Value* v : n->inputs()) {
    if (v->type().kind == ir::Type::Kind::Float) k = ir::Type::Kind::Float;
    else if (v->type().kind == ir::Type::Kind::Int && k == ir::Type::Kind::Bool) k = ir::Type::Kind::Int;
  }
  return cpp_type(ir::Type{k, {}, {}});
}

}  // namespace

DType promoted_dtype(const ir::Node* n) {
  std::optional<DType> t;
  for (const ir::Value* v : n->inputs())
    if (v->type().is_tensor()) t = t ? promote_types(*t, *v->type().dtype) : *v->type().dtype;
  DType p = t.value_or(DType::Bool);
  for (const ir::Value* v : n->inputs())
    if (v->type().is_scalar()) p = promote_with_scalar(p, scalar_category(v->type().kind));
  return p;
}

// ---- text and names ----------------------------------------------------------

void Emitter::line(const std::string& s) {
  if (!s.empty()) out_ << std::string(2 * indent_, ' ') << s;
  out_ << '\n';
}

void Emitter::open(const std::string& s) {
  line(s.empty() ? "{" : s + " {");
  ++indent_;
}

void Emitter::close(const std::string& tail) {
  --indent_;
  line("}" + tail);
}

std::string Emitter::fresh(const std::string& base) {
  std::string n = base;
  for (int i = 1; used_.count(n); ++i) n = base + "_" + std::to_string(i);
  used_.insert(n);
  return n;
}

const std::string& Emitter::name(const ir::Value* v) {
  auto it = names_.find(v);
  if (it != names_.end()) return it->second;
  return names_[v] = fresh("v_" + (v->name().empty() ? std::string("tmp") : sanitize_identifier(v->name())));
}

void Emitter::reset_names() {
  names_.clear();
  used_.clear();
  lazy_.clear();
}

// ---- errors that point at the source -------------------------------------------

std::string Emitter::where(const ir::Node* n, const std::string& what) const {
  const ir::SourceLoc& l = n->loc();
  std::string s = " (";
  if (l.valid()) s += "at " + l.file + ":" + std::to_string(l.line) + ":" + std::to_string(l.col) + ", ";
  return ir::quote(s + what + " in static graph '" + graph_name_ + "')");
}

// Records the node's location in the function's `here`, then evaluates expr:
// one store per node. The function's single handler (graph_function) appends
// `here` to a graph::Error; a try/catch and a lambda per node compiled to
// about a third of the generated kernels' build time.
std::string Emitter::at_source(const ir::Node* n, const std::string& what, const std::string& expr) const {
  return "(here = " + where(n, what) + ", " + expr + ")";
}

// ---- the graph function --------------------------------------------------------

void Emitter::graph_function(const ir::Graph& g, const std::string& fn_name, const std::string& source,
                             const ir::Signature* signature, const ir::OutputReach* needs) {
  // A unit made by hand without its signature would guard too few inputs.
  if (signature && signature->inputs.size() != g.inputs().size())
    throw Error("codegen: the signature of graph '" + g.name() +
                "' does not match its inputs (units come from compile_unit or graph_unit)");
  const bool check_inputs = signature != nullptr;
  reset_names();
  graph_name_ = g.name();
  needs_ = needs;
  needs_top_ = needs ? g.top() : nullptr;
  // The function's own parameter names are taken so no local shadows them.
  for (const char* reserved : {"in", "n_in", "needed", "out", "why", "buffers", "here"}) used_.insert(reserved);
  slots_ = 0;
  line("// graph " + g.name() + (source.empty() ? "" : " (" + source + ")"));
  // What each input must be (ir/signature.h); the registration points to the
  // same table, for interpret mode.
  if (check_inputs) raw(signature_table(*signature, signature_name(fn_name), g.name()));
  // A graph without inputs (a region of constants) never reads `in`: said so,
  // so the generated source compiles warning-free at -Wall -Wextra.
  const std::string in_param = g.inputs().empty() ? "[[maybe_unused]] const ::graph::IValue* in"
                                                  : "const ::graph::IValue* in";
  const std::string needed_param = needs ? " [[maybe_unused]] const bool* needed," : "";
  // Outputs that are locals returned once: moved at the end (below). Not
  // the base of a slice: a LazySlice output made after the move would read
  // the moved-from tensor.
  moved_outputs_.clear();
  const auto& outs = g.outputs();
  std::set<const ir::Value*> slice_bases;
  ir::walk(g.top(), [&](const ir::Node* n) {
    if (n->is(OpId::slice)) slice_bases.insert(n->input(0));
  });
  for (size_t k = 0; k < outs.size(); ++k) {
    const ir::Value* v = outs[k];
    const bool input = std::any_of(g.inputs().begin(), g.inputs().end(), [&](const auto& i) { return i.get() == v; });
    if (!input && !slice_bases.count(v) && std::count(outs.begin(), outs.end(), v) == 1) moved_outputs_.insert(v);
  }
  // Of those, a fused loop's output is written straight into `out` (see
  // declare_outputs); not in a backward, whose nodes run only if needed.
  direct_outputs_.clear();
  written_outputs_.clear();
  if (!needs)
    for (size_t k = 0; k < outs.size(); ++k)
      if (moved_outputs_.count(outs[k])) direct_outputs_[outs[k]] = k;
  open("GRAPH_GLUE bool " + fn_name + "(" + in_param + ", size_t n_in," + needed_param + " ::graph::IValue* out, std::string* why)");
  guards(g, fn_name, check_inputs);
  // A graph that takes no buffer (one eager op, say) leases none: the lease
  // is an atomic exchange and a store on every call. Known after the body.
  const std::string lease = std::string(2 * indent_, ' ') + "::graph::detail::GraphBuffers::Lease buffers(" +
                            buffers_name(fn_name) + ");\n";
  const auto lease_at = out_.tellp();
  raw(lease);
  line("const char* here = nullptr;  // the running node's source line, for errors");
  open("try");
  if (needs) {
    declare_needs(g);
    for (const auto& n : g.top()->nodes()) node_if_needed(n.get());
  } else {
    top_block(g);
  }
  needs_ = nullptr;
  needs_top_ = nullptr;
  line("");
  // A local's last use is its output: moved, not copied (a Tensor copy is two
  // reference counts and two shapes, a tenth of a small graph's call).
  // Inputs are const references, and a value returned twice is copied first.
  for (size_t k = 0; k < outs.size(); ++k) {
    const ir::Value* v = outs[k];
    if (written_outputs_.count(v)) continue;
    const std::string value = moved_outputs_.count(v) ? "std::move(" + name(v) + ")" : name(v);
    line("out[" + std::to_string(k) + "].emplace<" + cpp_type(v->type()) + ">(" + value + ");");
  }
  moved_outputs_.clear();
  direct_outputs_.clear();
  written_outputs_.clear();
  line("return true;");
  --indent_;
  open("} catch (const ::graph::Error& e)");
  line("rethrow_at(e, here);");
  close();
  close();
  if (slots_ == 0) {
    std::string text = out_.str();
    text.erase(static_cast<size_t>(lease_at), lease.size());
    out_.str(text);
    out_.seekp(0, std::ios_base::end);
  }
}

std::string Emitter::buffers_name(const std::string& fn_name) { return "buffers_" + fn_name; }
std::string Emitter::signature_name(const std::string& fn_name) { return "signature_" + fn_name; }

std::string Emitter::take_buffer(const std::string& shape, DType dtype) {
  return "buffers.take(" + std::to_string(slots_++) + ", " + shape + ", " + dtype_expr(dtype) + ")";
}

// Each input checked against the signature table (its kind, dtype, rank and
// static sizes, in order; the first mismatch explains itself in *why and the
// eager body runs instead), or only counted; then bound to a local.
void Emitter::guards(const ir::Graph& g, const std::string& fn_name, bool check_inputs) {
  const size_t n = g.inputs().size();
  if (check_inputs)
    line("if (!::graph::detail::check_inputs(" + signature_name(fn_name) + ", " + std::to_string(n) +
         ", in, n_in, why)) return false;");
  else
    line("if (!::graph::detail::guard_num_inputs(n_in, " + std::to_string(n) + ", why)) return false;");
  for (size_t k = 0; k < n; ++k) {
    const ir::Value* v = g.inputs()[k].get();
    const std::string type = cpp_type(v->type());
    line("[[maybe_unused]] const " + type + (v->type().is_tensor() || v->type().is_list() ? "& " : " ") + name(v) + " = std::get<" + type + ">(in[" +
         std::to_string(k) + "]);");
  }
}

void Emitter::block(const ir::Block* b) {
  for (const auto& n : b->nodes()) node(n.get());
}

namespace {

// Every value node `n` reads, itself or in its blocks (their returns too).
void reads_of(const ir::Node* n, const std::function<void(const ir::Value*)>& f) {
  for (const ir::Value* v : n->inputs()) f(v);
  for (const auto& b : n->blocks()) {
    for (const auto& m : b->nodes()) reads_of(m.get(), f);
    for (const ir::Value* v : b->returns()) f(v);
  }
}

}  // namespace

// Eager code frees a temporary at the end of its statement, and the caching
// allocator hands the same block, still in cache, to the next op. A local
// here lived to the end of the function: a ResNet's forward kept every
// activation alive, each op wrote cold memory, and the graph ran 5-10%
// slower than eager. Now each tensor local of the top block that nothing
// else refers to (not an output, not the base of a LazySlice) is reset after
// the last node that reads it.
void Emitter::top_block(const ir::Graph& g) {
  const ir::Block* top = g.top();
  std::set<const ir::Value*> outputs(g.outputs().begin(), g.outputs().end()), slice_bases;
  ir::walk(top, [&](const ir::Node* n) {
    if (n->is(OpId::slice)) slice_bases.insert(n->input(0));
  });
  std::map<const ir::Value*, size_t> last;
  size_t i = 0;
  for (const auto& n : top->nodes()) {
    for (const ir::Value* v : n->outputs())
      if (v->type().is_tensor() && !outputs.count(v) && !slice_bases.count(v)) last[v] = i;
    reads_of(n.get(), [&](const ir::Value* v) {
      if (auto it = last.find(v); it != last.end()) it->second = i;
    });
    ++i;
  }
  std::vector<std::vector<const ir::Value*>> release(top->nodes().size());
  releasable_.clear();
  declared_mutable_.clear();
  held_slot_.clear();
  free_slots_.clear();
  for (const auto& [v, at] : last) {
    releasable_.insert(v);
    release[at].push_back(v);
  }
  i = 0;
  for (const auto& n : top->nodes()) {
    node(n.get());
    // Only a local its node declared non-const (constness, declare_outputs):
    // the others are constants and the like. A released loop output's slot
    // goes back to the pool loop_slot takes from.
    for (const ir::Value* v : release[i++]) {
      if (!declared_mutable_.count(v)) continue;
      line(name(v) + " = ::graph::Tensor();  // last use");
      if (auto it = held_slot_.find(v); it != held_slot_.end()) free_slots_[v->type().str()].push_back(it->second);
    }
  }
  releasable_.clear();
  declared_mutable_.clear();
  held_slot_.clear();
  free_slots_.clear();
}

size_t Emitter::loop_slot(const ir::Value* v) {
  if (!releasable_.count(v)) return next_slot();
  std::vector<size_t>& free = free_slots_[v->type().str()];
  size_t slot;
  if (free.empty()) {
    slot = next_slot();
  } else {
    slot = free.back();
    free.pop_back();
  }
  held_slot_[v] = slot;
  return slot;
}

namespace {

// A FusionGroup's kind attribute (fuse_elementwise sets none).
std::string group_kind(const ir::Node* n) {
  auto it = n->attrs().find("kind");
  if (it == n->attrs().end()) return "elementwise";
  const std::string* k = std::get_if<std::string>(&it->second);
  return k ? *k : "";
}

}  // namespace

void Emitter::node(const ir::Node* n) {
  const OpId op = n->op_id();
  if (op == OpId::constant) return constant(n);
  if (op == OpId::If) return if_(n);
  if (op == OpId::Loop) return loop(n);
  if (op == OpId::FusionGroup) {
    const std::string kind = group_kind(n);
    if (kind == "elementwise") return fusion_group(n);
    if (kind == "matmul_epilogue") return matmul_epilogue(n);
    if (kind == "reduce") return reduce_group(n);
    throw Error("codegen: unknown FusionGroup kind '" + kind + "'");
  }
  if (primitive(n) || gradient_op(n)) return;
  const OpInfo* info = n->table_op();
  if (!info) throw Error("codegen: no CPU lowering for op '" + n->op() + "'");
  if (n->loc().valid()) line("// " + loc_str(n->loc()) + ": " + n->op());
  if (op == OpId::matmul || op == OpId::linear) return gemm_call(n);
  switch (info->kind) {
    case OpKind::Elementwise: {
      bool any_tensor = false;
      for (const ir::Value* v : n->inputs()) any_tensor = any_tensor || v->type().is_tensor();
      return any_tensor ? eager_elementwise(n, *info) : scalar_elementwise(n, *info);
    }
    case OpKind::Reduce: return reduce(n, *info);
    case OpKind::Library:
    case OpKind::View:
    case OpKind::Other: return eager_op(n, *info);
    default: break;  // primitives: handled above
  }
  throw Error("codegen: no CPU lowering for op '" + n->op() + "'");
}

void Emitter::constant(const ir::Node* n) {
  const ir::AttrValue& v = n->attrs().at("value");
  std::string lit;
  if (auto* i = std::get_if<int64_t>(&v)) lit = int_literal(*i);
  else if (auto* d = std::get_if<double>(&v)) lit = double_literal(*d);
  else if (auto* b = std::get_if<bool>(&v)) lit = *b ? "true" : "false";
  else throw Error("codegen: a constant must be a number or bool");
  line("const " + cpp_type(n->output()->type()) + " " + name(n->output()) + " = " + lit + ";");
}

// A host-scalar op: the op table's scalar body, in the C++ type the result has.
void Emitter::scalar_elementwise(const ir::Node* n, const OpInfo& op) {
  const std::string t = scalar_compute_type(n, op);
  std::string args;
  for (const ir::Value* v : n->inputs()) args += (args.empty() ? "" : ", ") + name(v);
  line("const " + cpp_type(n->output()->type()) + " " + name(n->output()) + " = ::graph::scalar::" +
       std::string(op.name) + "<" + t + ">(" + args + ");");
}

// An elementwise tensor op that was not fused: the eager op (host scalars
// pass as graph::Scalar, which applies the same promotion rule).
void Emitter::eager_elementwise(const ir::Node* n, const OpInfo& op) {
  std::string args;
  for (const ir::Value* v : n->inputs()) {
    if (!args.empty()) args += ", ";
    args += v->type().is_tensor() ? name(v) : "::graph::Scalar(" + name(v) + ")";
  }
  line(constness(n->output()) + "::graph::Tensor " + name(n->output()) + " = " +
       at_source(n, std::string(op.name), "::graph::" + std::string(op.name) + "(" + args + ")") + ";");
}

void Emitter::reduce(const ir::Node* n, const OpInfo& op) { eager_op(n, op); }

// ---- control flow ----------------------------------------------------------------

// The truth of an If or Loop condition; a tensor one throws unless it holds
// one element, and the message then names the node's line.
std::string Emitter::condition(const ir::Node* n, const ir::Value* c, const std::string& what) {
  const std::string truth = "::graph::detail::truth(" + name(c) + ")";
  return c->type().is_tensor() ? at_source(n, what, truth) : truth;
}

// Outputs are declared first and assigned at the end of each branch. On a
// tensor condition that can become a CUDA conditional node
// (ir/device_control.h), the branches are a lambda: while a CUDA Graph is
// captured and the condition is on the device, device_if captures both
// into an If node; otherwise the host's truth() picks one, as before.
void Emitter::if_(const ir::Node* n) {
  line("// If" + (n->loc().valid() ? " (" + loc_str(n->loc()) + ")" : std::string()));
  // A host output may go unread (a gradient's reached flag, autodiff.cpp).
  for (const ir::Value* v : n->outputs())
    line(local_decl_type(v->type()) + " " + name(v) + "{};");
  const bool device = ir::has_tensor_condition(n) && ir::device_control_refusal(n).empty();
  const std::string branches = device ? fresh("branches") : "";
  if (device) open("const auto " + branches + " = [&](const int branch_taken)");
  for (size_t b = 0; b < 2; ++b) {
    if (b == 0) open(device ? "if (branch_taken == 0)" : "if (" + condition(n, n->input(0), "If condition") + ")");
    else {
      --indent_;
      open("} else");
    }
    const ir::Block* blk = n->block(b);
    block(blk);
    for (size_t i = 0; i < n->num_outputs(); ++i) line(name(n->output(i)) + " = " + name(blk->returns()[i]) + ";");
  }
  close();
  if (!device) return;
  close(";");
  std::string outs;
  for (const ir::Value* v : n->outputs()) outs += (outs.empty() ? "&" : ", &") + name(v);
  const std::string c = name(n->input(0));
  open("if (::graph::detail::device_control(" + c + "))");
  line("::graph::detail::device_if(" + c + ", " + branches + ", {" + outs + "}, " + where(n, "If") + ");");
  --indent_;
  open("} else");
  line(branches + "(" + condition(n, n->input(0), "If condition") + " ? 0 : 1);");
  close();
}

// The outputs hold the carried values; each iteration binds the body's
// parameters to copies of them, so returns that permute carried values read
// the previous iteration's values. On a tensor condition that can become a
// CUDA conditional node (ir/device_control.h), the body is a lambda giving
// its condition: while a CUDA Graph is captured and the condition (or the
// carried tensors) is on the device, device_loop captures it into a While
// node; otherwise the host loop runs it, as before.
void Emitter::loop(const ir::Node* n) {
  line("// Loop" + (n->loc().valid() ? " (" + loc_str(n->loc()) + ")" : std::string()));
  const size_t carried = n->num_outputs();
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* v = n->output(i);
    line(local_decl_type(v->type()) + " " + name(v) + " = " + name(n->input(i + 2)) + ";");
  }
  const bool device = ir::has_tensor_condition(n) && ir::device_control_refusal(n).empty();
  const std::string trips = fresh("trips"), cond = fresh("cond"), iter = fresh("iter");
  open("");
  line("const int64_t " + trips + " = " + name(n->input(0)) + ";");
  const ir::Block* body = n->block(0);
  if (device) {
    const std::string fn = fresh("body");
    open("const auto " + fn + " = [&](const int64_t " + iter + ")");
    line("[[maybe_unused]] const int64_t " + name(body->param(0)) + " = " + iter + ";");
    for (size_t i = 0; i < carried; ++i) {
      const ir::Value* p = body->param(i + 1);
      line("[[maybe_unused]] const " + cpp_type(p->type()) + " " + name(p) + " = " + name(n->output(i)) + ";");
    }
    block(body);
    for (size_t i = 0; i < carried; ++i) line(name(n->output(i)) + " = " + name(body->returns()[i + 1]) + ";");
    line("return " + name(body->returns()[0]) + ";");
    close(";");
    std::string outs;
    for (const ir::Value* v : n->outputs()) outs += (outs.empty() ? "&" : ", &") + name(v);
    const std::string first = "::graph::detail::to_condition(" + name(n->input(1)) + ")";
    open("if (::graph::detail::device_control_loop(" + first + ", {" + outs + "}))");
    line("::graph::detail::device_loop(" + trips + ", " + first + ", [&] { return ::graph::detail::to_condition(" +
         fn + "(0)); }, {" + outs + "}, " + where(n, "Loop") + ");");
    --indent_;
    open("} else");
    line("bool " + cond + " = " + condition(n, n->input(1), "Loop condition") + ";");
    open("for (int64_t " + iter + " = 0; " + iter + " < " + trips + " && " + cond + "; ++" + iter + ")");
    const std::string next = fresh("next");
    line("const auto " + next + " = " + fn + "(" + iter + ");");
    const std::string truth = "::graph::detail::truth(" + next + ")";
    line(cond + " = " +
         (body->returns()[0]->type().is_tensor() ? at_source(n, "Loop condition", truth) : truth) + ";");
    close();
    close();
    close();
    return;
  }
  line("bool " + cond + " = " + condition(n, n->input(1), "Loop condition") + ";");
  open("for (int64_t " + iter + " = 0; " + iter + " < " + trips + " && " + cond + "; ++" + iter + ")");
  // The parameters may be references to the carried values (no copy per
  // iteration) when no return is a parameter: the assignments at the end
  // then never read a carried value already overwritten.
  bool by_ref = true;
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* r = body->returns()[i + 1];
    by_ref = by_ref && r->param_of() != body;
  }
  line("[[maybe_unused]] const int64_t " + name(body->param(0)) + " = " + iter + ";");
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* p = body->param(i + 1);
    line("[[maybe_unused]] const " + cpp_type(p->type()) + (by_ref ? "& " : " ") + name(p) + " = " +
         name(n->output(i)) + ";");
  }
  block(body);
  line(cond + " = " + condition(n, body->returns()[0], "Loop condition") + ";");
  // Returned slices become Tensors before any carried value is assigned.
  std::vector<std::string> rets;
  for (size_t i = 0; i < carried; ++i) {
    rets.push_back(name(body->returns()[i + 1]));
    if (!lazy_.count(rets.back())) continue;
    const std::string t = fresh("carried");
    line("const ::graph::Tensor " + t + " = " + rets.back() + ";");
    rets.back() = t;
  }
  // A tensor computed in this iteration and returned once is moved, not
  // copied, into its carried value.
  std::map<std::string, int> uses;
  for (const std::string& r : rets) ++uses[r];
  for (size_t i = 0; i < carried; ++i) {
    const ir::Value* r = body->returns()[i + 1];
    const bool move = r->type().is_tensor() && r->owning_block() == body && r->param_of() == nullptr &&
                      uses[rets[i]] == 1 && !lazy_.count(name(r));
    line(name(n->output(i)) + " = " + (move ? "std::move(" + rets[i] + ")" : rets[i]) + ";");
  }
  close();
  close();
}

}  // namespace detail

// ---- the source file ----------------------------------------------------------------

namespace {

// Before the fused loops, in whichever unit holds them.
constexpr const char* kVectorizePragma =
    "// GCC's default -O2 cost model leaves loops with an unknown trip count\n"
    "// scalar; the fused loops below are written to be vectorized.\n"
    "#if defined(__GNUC__) && !defined(__clang__)\n"
    "#pragma GCC optimize(\"vect-cost-model=dynamic\")\n"
    "#endif\n";

// Written once per generated file. A graph::Error escaping a graph function
// is thrown again with the running node's source location appended; the
// handler costs nothing until something throws.
constexpr const char* kErrorHelpers = R"(
// Called in a graph function's handler: the graph::Error again, with `where`
// (the running node's source line) appended when there is one.
[[noreturn]] [[maybe_unused]] void rethrow_at(const ::graph::Error& e, const char* where) {
  if (!where) throw;
  throw ::graph::Error(e.what() + std::string(where));
}

// The shape a fused loop runs over. When its operands do not broadcast
// together, locate() replays the group's shapes op by op so that the error
// names the failing op and its line.
template <class F>
::graph::Shape loop_shape(const char* first_op, std::initializer_list<::graph::Shape> shapes, F&& locate) {
  try {
    return ::graph::cpu::broadcast_shapes(first_op, shapes);
  } catch (const ::graph::Error&) {
    locate();
    throw;
  }
}

// The same, when a group whose outputs may be smaller than the loop can run
// op by op instead: nullopt when the operands do not broadcast together.
[[maybe_unused]] inline std::optional<::graph::Shape> try_loop_shape(std::initializer_list<::graph::Shape> shapes) {
  try {
    return ::graph::cpu::broadcast_shapes("", shapes);
  } catch (const ::graph::Error&) {
    return std::nullopt;
  }
}
)";

// The fused loops' own unit: light headers only (graph/detail/loop_support.h),
// so it compiles in parallel with the graph functions and parses no tensor
// or ops headers.
std::string loops_source(const detail::KernelPool& pool, const std::string& origin_file, const std::string& ns) {
  detail::Emitter e;
  e.line("// Generated by cxxgraph from " + origin_file + "; do not edit.");
  e.line("// The fused loops of its graph functions (the .graph.cpp beside this file), one struct");
  e.line("// per distinct loop: run is the dense loop, strided the same body with per-operand");
  e.line("// strides; each struct's entry points are exported as <struct>_entries.");
  e.line("#include <cstdint>");
  e.line("");
  e.line("#include <graph/detail/loop_support.h>");
  e.line("");
  e.raw(kVectorizePragma);
  e.line("");
  e.line("namespace " + ns + " {");
  e.raw(pool.declarations());
  e.raw(pool.loops());
  e.line("");
  e.line("}  // namespace " + ns);
  return e.take();
}

// The graph functions' unit; with `loops_ns`, the fused loops go to *loops
// (their own unit, in that namespace) and this one declares their tables.
std::string cpu_source(const std::vector<GraphUnit>& units, const std::string& origin_file,
                       const std::string& loops_ns, std::string* loops) {
  detail::Emitter e;
  e.line("// Generated by cxxgraph from " + origin_file + "; do not edit.");
  e.line("// Each function below runs one [[graph::static]] function's graph: input guards,");
  e.line("// then fused elementwise loops and eager library calls, in graph order.");
  e.line("#include <algorithm>");
  e.line("#include <array>");
  e.line("#include <cstddef>");
  e.line("#include <cstdint>");
  e.line("#include <initializer_list>");
  e.line("#include <limits>");
  e.line("#include <optional>");
  e.line("#include <string>");
  e.line("#include <variant>");
  e.line("#include <vector>");
  e.line("");
  // The ops only (nn_ops.h brings ops.h and tensor.h), not graph.h's modules
  // and optimizers: a graph calls nothing else, and parsing graph.h was a
  // third of a small generated source's compile time.
  e.line("#include <graph/nn_ops.h>");
  e.line("#include <graph/cpu_loop.h>");
  e.line("#include <graph/parallel.h>");
  e.line("#include <graph/scalar_ops.h>");
  e.line("#include <graph/detail/generated_support.h>");
  e.line("#include <graph/detail/fused_loop.h>");
  e.line("#include <graph/detail/gemm_epilogue.h>");
  e.line("#include <graph/detail/backward_kernels.h>");
  e.line("#include <graph/detail/static_autograd.h>");
  e.line("");
  e.raw(kVectorizePragma);
  e.line("");
  // Filled by the functions below; written before them.
  detail::KernelPool pool;
  detail::Emitter functions;
  std::vector<std::string> names;
  for (const GraphUnit& u : units) names.push_back(u.graph->name());
  const std::vector<std::string> fns = detail::graph_fn_names(names);
  // The functions first, so that the kernel structs they share (the pool)
  // can be written before them.
  for (size_t i = 0; i < units.size(); ++i) {
    const GraphUnit& u = units[i];
    const std::string& fn = fns[i];
    functions.line("");
    detail::Emitter body;
    body.set_pool(&pool);
    body.set_cuda(fn, u.mangled_name, u.body_hash);
    body.graph_function(*u.graph, fn, u.source, &u.signature);
    functions.line("// The buffers " + fn + " writes, kept between calls (generated_support.h).");
    functions.line("::graph::detail::GraphBuffers " + detail::Emitter::buffers_name(fn) + "{" +
                   std::to_string(body.slots()) + "};");
    functions.raw(body.take());
    if (u.gradient)
      functions.raw(detail::gradient_functions(*u.gradient, fn, u.source, u.mangled_name, u.body_hash, &pool));
  }
  if (!loops_ns.empty()) {
    *loops = loops_source(pool, origin_file, loops_ns);
    if (!pool.declarations().empty()) {
      e.line("// The fused loops, compiled in their own unit (" + loops_ns + ", the .loops.cpp");
      e.line("// beside this file): the host values each reads and its entry points.");
      e.line("namespace " + loops_ns + " {");
      e.raw(pool.declarations());
      e.line("}  // namespace " + loops_ns);
      e.line("");
    }
  }
  e.line("namespace {");
  e.raw(kErrorHelpers);
  if (!loops_ns.empty() && !pool.declarations().empty()) e.line("using namespace ::" + loops_ns + ";");
  const std::string structs = loops_ns.empty() ? pool.text() : pool.local();
  if (!structs.empty()) {
    e.line("");
    e.line("// The fused loops, one struct per distinct loop: run is the dense loop, strided the same");
    e.line("// body with per-operand strides; the graph functions below drive them through");
    e.line("// graph/detail/fused_loop.h.");
    e.raw(structs);
  }
  e.raw(functions.take());
  e.line("");
  e.line("// Registration: the dispatch prologue finds each graph by (mangled name, body hash).");
  for (size_t i = 0; i < units.size(); ++i) {
    const GraphUnit& u = units[i];
    const std::string& fn = fns[i];
    e.line("::graph::detail::CompiledGraph compiled_" + fn + "{" + ir::quote(u.mangled_name) + ", " +
           ir::quote(u.body_hash) + ", " + ir::quote(u.source) + ", &" + fn + ", " +
           std::to_string(u.graph->inputs().size()) + ", " + std::to_string(u.graph->outputs().size()) + ", " +
           detail::Emitter::signature_name(fn) + ", " + ir::quote(ir::print(*u.graph)) + ", " + ir::quote(u.cuda_graph_blocker) + ", " +
           (u.train_step ? "true" : "false") + ", " + ir::quote(u.lowered_ir) + ", nullptr, {}};");
    e.line("const ::graph::detail::Registrar register_" + fn + "{&compiled_" + fn + "};");
    if (u.gradient) e.raw(detail::gradient_registration(*u.gradient, fn, u.mangled_name, u.body_hash));
  }
  e.line("");
  e.line("}  // namespace");
  return e.take();
}

}  // namespace

std::string generate_cpu_source(const std::vector<GraphUnit>& units, const std::string& origin_file) {
  return cpu_source(units, origin_file, "", nullptr);
}

CpuSources generate_cpu_sources(const std::vector<GraphUnit>& units, const std::string& origin_file,
                                const std::string& loops_namespace) {
  if (loops_namespace.empty()) throw Error("codegen: generate_cpu_sources needs a namespace for the loops' unit");
  CpuSources r;
  r.functions = cpu_source(units, origin_file, loops_namespace, &r.loops);
  return r;
}

}  // namespace graph::codegen
