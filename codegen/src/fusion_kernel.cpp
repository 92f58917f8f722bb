// The fused-loop writer: one FusionGroup becomes one pass over the broadcast
// output shape.
//
// Precondition: the group verifies (elementwise ops and constants only, no
// reads from outside its block) and every tensor in it has a known dtype.
// Per element, inputs are loaded, converted to each op's compute type
// (op_table.h: compute_dtype) and chained through graph::scalar::<op>, the
// same bodies the eager kernels run, so fused and eager results agree.
//
// Two paths: when the StridedLoop collapses to one run with every operand at
// stride 1 (the common dense case), a plain indexed loop over __restrict
// pointers that the compiler vectorizes; otherwise loop.run() with
// per-operand inner strides (broadcast and non-contiguous inputs).
//
// Errors: operands that do not broadcast are reported as the eager op would
// report them, by the member op whose shapes disagree, plus its source line.
#include <set>
#include <unordered_map>

#include "emitter.h"
#include "graph/error.h"

namespace graph::codegen::detail {

namespace {

// Work in a group that does not depend on the element: constants and
// scalar-only arithmetic run once, before the loop.
bool hoisted(const ir::Node* m) {
  if (m->op() == "constant") return true;
  for (const ir::Value* v : m->inputs())
    if (v->type().is_tensor()) return false;
  return true;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

void Emitter::fusion_group(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  // "add, mul, relu (model.cpp:5, 6, 9)": the ops and the lines they came from.
  std::vector<std::string> ops, where;
  std::string last_file;
  std::set<std::pair<std::string, int>> seen;
  for (const auto& m : body->nodes()) {
    if (hoisted(m.get())) continue;
    ops.push_back(m->op());
    const ir::SourceLoc& l = m->loc();
    if (!l.valid() || !seen.insert({l.file, l.line}).second) continue;
    where.push_back(l.file == last_file ? std::to_string(l.line) : loc_str(l));
    last_file = l.file;
  }
  if (ops.empty()) throw Error("codegen: a FusionGroup without tensor ops");
  line("// fused loop: " + join(ops, ", ") + (where.empty() ? "" : " (" + join(where, ", ") + ")"));

  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  for (const ir::Value* v : n->outputs()) {
    if (!v->type().is_tensor() || !v->type().dtype)
      throw Error("codegen: a FusionGroup output must be a tensor of known dtype");
    line("::graph::Tensor " + name(v) + ";");
  }
  open("");
  for (const auto& m : body->nodes())
    if (hoisted(m.get())) node(m.get());

  // Which tensor inputs each value reads, transitively: an output that does
  // not read them all may have a smaller shape than the loop.
  std::vector<size_t> tensor_params;
  std::unordered_map<const ir::Value*, std::set<size_t>> reads;
  for (size_t i = 0; i < body->params().size(); ++i)
    if (body->param(i)->type().is_tensor()) {
      tensor_params.push_back(i);
      reads[body->param(i)] = {i};
    }
  for (const auto& m : body->nodes())
    for (const ir::Value* in : m->inputs()) reads[m->output()].insert(reads[in].begin(), reads[in].end());

  auto sizes_of = [&](const std::set<size_t>& params) {
    std::vector<std::string> s;
    for (size_t i : params) s.push_back(name(body->param(i)) + ".sizes()");
    return "{" + join(s, ", ") + "}";
  };
  const std::string first_op = ir::quote(ops.front());
  const std::set<size_t> all(tensor_params.begin(), tensor_params.end());
  const std::string shape = fresh("shape");

  std::vector<std::string> smaller;
  for (const ir::Value* r : body->returns())
    if (reads[r] != all)
      smaller.push_back("::graph::cpu::broadcast_shapes(" + first_op + ", " + sizes_of(reads[r]) + ") != *" + shape);
  if (tensor_params.size() == 1) {
    // One tensor operand: nothing to broadcast, nothing can fail.
    line("const ::graph::Shape " + shape + " = " + name(body->param(tensor_params[0])) + ".sizes();");
    fused_loop(n, shape);
  } else if (smaller.empty()) {
    // Every output reads every input, so the operands broadcast together
    // exactly when each op's do; if they do not, some op fails in the replay.
    open("const ::graph::Shape " + shape + " = loop_shape(" + first_op + ", " + sizes_of(all) + ", [&]");
    locate_broadcast_error(n);
    close(");");
    fused_loop(n, shape);
  } else {
    // Outputs that read different inputs may have shapes that do not
    // broadcast with each other: then, or when an output is smaller than the
    // loop, the group runs op by op, and each op reports its own errors.
    line("const std::optional<::graph::Shape> " + shape + " = try_loop_shape(" + sizes_of(all) + ");");
    open("if (!" + shape + " || " + join(smaller, " || ") + ")");
    line("// The outputs' shapes differ from the loop's, or do not broadcast together: op by op.");
    for (const auto& m : body->nodes())
      if (!hoisted(m.get())) eager_elementwise(m.get(), *find_op(m->op()));
    for (size_t j = 0; j < n->num_outputs(); ++j) line(name(n->output(j)) + " = " + name(body->returns()[j]) + ";");
    --indent_;
    open("} else");
    fused_loop(n, "*" + shape);
    close();
  }
  close();
}

// The body of loop_shape's locate(): each member op's broadcast, in order,
// on its operands' shapes, under the op's own name and source line, so the
// first op whose shapes disagree throws the eager op's message plus its line.
void Emitter::locate_broadcast_error(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  line("// The operands do not broadcast together: find the op whose shapes disagree.");
  std::unordered_map<const ir::Value*, std::string> shape_of;
  for (const auto& p : body->params())
    if (p->type().is_tensor()) shape_of[p.get()] = name(p.get()) + ".sizes()";
  for (const auto& m : body->nodes()) {
    if (hoisted(m.get())) continue;
    std::vector<std::string> operands;
    for (const ir::Value* v : m->inputs())
      if (v->type().is_tensor()) operands.push_back(shape_of.at(v));
    if (operands.size() == 1) {  // one tensor operand keeps its shape
      shape_of[m->output()] = operands[0];
      continue;
    }
    const std::string& v = m->output()->name();
    const std::string s = fresh("s_" + (v.empty() ? std::string("t") : sanitize_identifier(v)));
    line("const ::graph::Shape " + s + " = " +
         at_source(m.get(), m->op(),
                   "::graph::cpu::broadcast_shapes(" + ir::quote(m->op()) + ", {" + join(operands, ", ") + "})") +
         ";");
    shape_of[m->output()] = s;
  }
}

// Allocates the outputs and writes both loop paths. Operand order in the
// StridedLoop: outputs first, then the tensor inputs.
void Emitter::fused_loop(const ir::Node* n, const std::string& shape) {
  const ir::Block* body = n->block(0);
  std::vector<size_t> tensor_params;
  for (size_t i = 0; i < body->params().size(); ++i)
    if (body->param(i)->type().is_tensor()) tensor_params.push_back(i);
  const size_t n_out = n->num_outputs();
  const std::string N = std::to_string(n_out + tensor_params.size());

  std::vector<std::string> out_ptr, in_ptr, strides, out_t, in_t;
  for (size_t j = 0; j < n_out; ++j) {
    const ir::Value* v = n->output(j);
    out_t.push_back(element_type(*v->type().dtype));
    line(name(v) + " = ::graph::empty(" + shape + ", " + dtype_expr(*v->type().dtype) + ");");
    out_ptr.push_back(fresh("out_" + name(v)));
    line(out_t.back() + "* const " + out_ptr.back() + " = " + name(v) + ".data_ptr<" + out_t.back() + ">();");
    strides.push_back(name(v) + ".strides()");
  }
  for (size_t i : tensor_params) {
    const ir::Value* p = body->param(i);
    in_t.push_back(element_type(*p->type().dtype));
    in_ptr.push_back(fresh("in_" + name(p)));
    line("const " + in_t.back() + "* const " + in_ptr.back() + " = " + name(p) + ".data_ptr<" + in_t.back() + ">();");
    strides.push_back("::graph::cpu::broadcast_strides(" + name(p) + ", " + shape + ")");
  }
  const std::string loop = fresh("loop");
  line("const ::graph::cpu::StridedLoop<" + N + "> " + loop + "(" + shape + ", {" + join(strides, ", ") + "});");

  // Fast path: one dense run; outputs are fresh allocations and inputs are
  // only read, so no pointer writes memory another one reads.
  open("if (" + loop + ".unit_stride())");
  line("const int64_t n = " + loop + ".numel();");
  std::vector<std::string> loads, stores;
  for (size_t j = 0; j < n_out; ++j) {
    line(out_t[j] + "* __restrict o" + std::to_string(j) + " = " + out_ptr[j] + ";");
    stores.push_back("o" + std::to_string(j) + "[i]");
  }
  for (size_t k = 0; k < tensor_params.size(); ++k) {
    line("const " + in_t[k] + "* __restrict i" + std::to_string(k) + " = " + in_ptr[k] + ";");
    loads.push_back("i" + std::to_string(k) + "[i]");
  }
  open("for (int64_t i = 0; i < n; ++i)");
  raw(element_body(body, loads, stores, std::string(2 * indent_, ' ')));
  close();

  // General path: innermost runs with per-operand strides (0 along
  // broadcast dims, anything for transposed or sliced views).
  --indent_;
  open("} else");
  open(loop + ".run([&](int64_t n, const std::array<int64_t, " + N + ">& off, const std::array<int64_t, " + N +
       ">& st)");
  loads.clear();
  stores.clear();
  for (size_t j = 0; j < n_out; ++j) {
    const std::string o = "o" + std::to_string(j), op = std::to_string(j);
    line(out_t[j] + "* " + o + " = " + out_ptr[j] + " + off[" + op + "];");
    stores.push_back(o + "[i * st[" + op + "]]");
  }
  for (size_t k = 0; k < tensor_params.size(); ++k) {
    const std::string p = "i" + std::to_string(k), op = std::to_string(n_out + k);
    line("const " + in_t[k] + "* " + p + " = " + in_ptr[k] + " + off[" + op + "];");
    loads.push_back(p + "[i * st[" + op + "]]");
  }
  open("for (int64_t i = 0; i < n; ++i)");
  raw(element_body(body, loads, stores, std::string(2 * indent_, ' ')));
  close();
  close(");");
  close();
}

// The statements for one element: loads, one graph::scalar call per member
// (arguments converted to its compute type), stores.
std::string Emitter::element_body(const ir::Block* body, const std::vector<std::string>& loads,
                                  const std::vector<std::string>& stores, const std::string& indent) {
  std::unordered_map<const ir::Value*, std::string> el;
  std::set<std::string> used;
  auto local = [&](const ir::Value* v) {
    std::string base = "e_" + (v->name().empty() ? std::string("t") : sanitize_identifier(v->name()));
    std::string n = base;
    for (int i = 1; used.count(n); ++i) n = base + "_" + std::to_string(i);
    used.insert(n);
    return el[v] = n;
  };
  std::string out;
  size_t k = 0;
  for (const auto& p : body->params()) {
    if (!p->type().is_tensor()) continue;
    out += indent + "const " + element_type(*p->type().dtype) + " " + local(p.get()) + " = " + loads[k++] + ";\n";
  }
  for (const auto& m : body->nodes()) {
    if (hoisted(m.get())) continue;
    const OpInfo& op = *find_op(m->op());
    const DType compute = compute_dtype(op, promoted_dtype(m.get()));
    const std::string ct = element_type(compute);
    std::string args;
    for (const ir::Value* v : m->inputs()) {
      if (!args.empty()) args += ", ";
      if (v->type().is_tensor())
        args += *v->type().dtype == compute ? el.at(v) : "static_cast<" + ct + ">(" + el.at(v) + ")";
      else
        args += cpp_type(v->type()) == ct ? name(v) : "static_cast<" + ct + ">(" + name(v) + ")";
    }
    const ir::Value* r = m->output();
    out += indent + "const " + element_type(*r->type().dtype) + " " + local(r) + " = ::graph::scalar::" +
           std::string(op.name) + "<" + ct + ">(" + args + ");\n";
  }
  for (size_t j = 0; j < stores.size(); ++j) out += indent + stores[j] + " = " + el.at(body->returns()[j]) + ";\n";
  return out;
}

}  // namespace graph::codegen::detail
