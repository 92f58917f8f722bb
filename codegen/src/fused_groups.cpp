// FusionGroups that fuse_groups forms around a library call or a reduction.
//
// kind=matmul_epilogue: the GEMM (graph::detail::gemm: the eager matmul's
// kernel into a kept buffer), then the elementwise ops that read its output
// as one fused loop over it, so the product is read once more and never
// written back by an eager op per member.
//
// A matmul or linear outside any group takes the same GEMM.
//
// kind=reduce: the elementwise producers as one fused loop, then the
// reduction over its result.
//
// Precondition: the group verifies and every tensor in it has a known dtype;
// the matmul or linear of an epilogue group comes before its elementwise ops.
#include <algorithm>
#include <functional>

#include "emitter.h"
#include "graph/error.h"

namespace graph::codegen::detail {

namespace {

size_t index_of(const std::vector<const ir::Node*>& nodes, const std::function<bool(const ir::Node*)>& pred,
                const char* what) {
  for (size_t i = 0; i < nodes.size(); ++i)
    if (pred(nodes[i])) return i;
  throw Error(std::string("codegen: a FusionGroup without its ") + what);
}

}  // namespace

std::string fusion_kind(const ir::Node* n) {
  auto it = n->attrs().find("kind");
  if (it == n->attrs().end()) return "elementwise";
  const std::string* k = std::get_if<std::string>(&it->second);
  return k ? *k : "";
}

LoopSpec group_loop(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  const std::vector<const ir::Node*> nodes = node_list(body);
  const std::string kind = fusion_kind(n);
  if (kind == "matmul_epilogue") {
    const size_t g = index_of(
        nodes, [](const ir::Node* m) { return m->op() == "matmul" || m->op() == "linear"; }, "matmul or linear");
    return LoopSpec(n, g + 1, nodes.size());
  }
  if (kind == "reduce") {
    const size_t r = index_of(
        nodes, [](const ir::Node* m) { return find_op(m->op()) && find_op(m->op())->kind == OpKind::Reduce; },
        "reduction");
    LoopSpec spec(n, 0, r);
    spec.results = spec.outputs = {nodes[r]->input(0)};
    return spec;
  }
  if (kind != "elementwise") throw Error("codegen: unknown FusionGroup kind '" + kind + "'");
  return LoopSpec(n, 0, nodes.size());
}

LtEpilogueMatch match_lt_epilogue(const ir::Node* n) {
  LtEpilogueMatch m;
  const auto fail = [&](std::string why) {
    m = LtEpilogueMatch{};
    m.why = std::move(why);
    return m;
  };
  if (fusion_kind(n) != "matmul_epilogue") return fail("not a matmul_epilogue group");
  const ir::Block* body = n->block(0);
  const std::vector<const ir::Node*> nodes = node_list(body);
  if (nodes.empty() || (nodes[0]->op() != "matmul" && nodes[0]->op() != "linear"))
    return fail("work before the GEMM");
  m.gemm = nodes[0];
  const bool linear = m.gemm->op() == "linear";
  if (linear && m.gemm->inputs().size() > 2) m.bias = m.gemm->input(2);
  const auto is_f32 = [](const ir::Value* v) { return v->type().is_tensor() && v->type().dtype == kFloat32; };
  if (!is_f32(m.gemm->output())) return fail("the GEMM is not float32");
  const ir::Value* last = m.gemm->output();
  const auto is_param = [&](const ir::Value* v) {
    for (size_t i = 0; i < body->params().size(); ++i)
      if (body->param(i) == v) return true;
    return false;
  };
  bool added = false;
  for (size_t i = 1; i < nodes.size(); ++i) {
    const ir::Node* op = nodes[i];
    if (op->num_outputs() != 1 || !is_f32(op->output())) return fail(op->op() + " does not give one float32 tensor");
    if (op->op() == "add" && !added && !m.relu && !m.bias && op->inputs().size() == 2) {
      const ir::Value* other = op->input(0) == last ? op->input(1) : op->input(1) == last ? op->input(0) : nullptr;
      if (!other || other == last) return fail("add does not read the GEMM's result once");
      if (!is_param(other) || !is_f32(other)) return fail("the added value is not a float32 input of the group");
      m.bias = other;
      added = true;
    } else if (op->op() == "relu" && !m.relu && op->input(0) == last) {
      m.relu = true;
    } else if (op->op() == "gelu") {
      return fail("gelu: cuBLASLt's GELU epilogue is the tanh approximation, graph::gelu is exact");
    } else {
      return fail(op->op() + " has no cuBLASLt epilogue here");
    }
    last = op->output();
  }
  if (nodes.size() < 2) return fail("no epilogue");
  if (body->returns().size() != 1 || body->returns()[0] != last)
    return fail("a value before the last op is used outside the group");
  m.matched = true;
  m.epilogue = m.bias ? (m.relu ? "ReluBias" : "Bias") : "Relu";
  return m;
}

void Emitter::gemm_call(const ir::Node* gemm) {
  const bool linear = gemm->op() == "linear";
  const std::string bias = linear && gemm->inputs().size() > 2 ? name(gemm->input(2)) : "::graph::Tensor()";
  line("const ::graph::Tensor " + name(gemm->output()) + " = " +
       at_source(gemm, gemm->op(),
                 "::graph::detail::gemm(buffers, " + std::to_string(next_slot()) + ", " + name(gemm->input(0)) +
                     ", " + name(gemm->input(1)) + ", " + (linear ? "true" : "false") + ", " + bias + ")") +
       ";");
}

void Emitter::matmul_epilogue(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  const std::vector<const ir::Node*> nodes = node_list(body);
  const size_t g = index_of(
      nodes, [](const ir::Node* m) { return m->op() == "matmul" || m->op() == "linear"; }, "matmul or linear");
  const ir::Node* gemm = nodes[g];
  const LoopSpec spec = group_loop(n);

  std::vector<const ir::Node*> all{gemm};
  all.insert(all.end(), spec.members.begin(), spec.members.end());
  line("// matmul epilogue: " + describe(all));
  declare_outputs(spec);
  // On the device, one cuBLASLt call when its epilogue computes the group.
  const LtEpilogueMatch lt = cuda_fn_.empty() ? LtEpilogueMatch{} : match_lt_epilogue(n);
  if (lt.matched) {
    const std::string a = name(gemm->input(0)), b = name(gemm->input(1));
    open("if (::graph::detail::any_on_cuda({&" + a + ", &" + b + "}))");
    line("// On the CUDA device: one cuBLASLt GEMM with its " + lt.epilogue + " epilogue (no separate kernel).");
    line(name(spec.outputs[0]) + " = " +
         at_source(gemm, gemm->op(),
                   "::graph::detail::cuda_gemm_epilogue(" + a + ", " + b + ", " +
                       (gemm->op() == "linear" ? "true" : "false") + ", " +
                       (lt.bias ? name(lt.bias) : std::string("::graph::Tensor()")) +
                       ", ::graph::detail::GemmEpilogue::" + lt.epilogue + ")") +
         ";");
    --indent_;
    open("} else");
  } else if (!cuda_fn_.empty()) {
    line("// No cuBLASLt epilogue on the device: " + lt.why + ".");
  }
  open("");
  for (size_t i = 0; i < g; ++i) node(nodes[i]);
  gemm_call(gemm);
  group_fused_loop(spec);
  close();
  if (lt.matched) close();
}

void Emitter::reduce_group(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  const std::vector<const ir::Node*> nodes = node_list(body);
  const size_t r = index_of(
      nodes, [](const ir::Node* m) { return find_op(m->op()) && find_op(m->op())->kind == OpKind::Reduce; },
      "reduction");
  const ir::Node* reduction = nodes[r];
  const LoopSpec spec = group_loop(n);
  line("// reduction of a fused loop: " + describe(spec.members) + ", then " + reduction->op());
  declare_outputs(spec);
  open("");
  group_fused_loop(spec);
  close();
  for (size_t i = r; i < nodes.size(); ++i) node(nodes[i]);
  for (size_t i = 0; i < n->num_outputs(); ++i) alias(n->output(i), name(body->returns()[i]));
}

}  // namespace graph::codegen::detail
