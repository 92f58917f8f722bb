// FusionGroups that fuse_groups forms around a library call or a reduction.
//
// kind=matmul_epilogue: the GEMM (graph::detail::gemm: the eager matmul's
// kernel into a kept buffer), then the elementwise ops that read its output
// as one fused loop over it, so the product is read once more and never
// written back by an eager op per member.
//
// A group that is exactly gelu(linear(...)) becomes one call of
// graph::detail::linear_gelu: the GELU as the packed GEMM's post-op.
//
// A matmul or linear outside any group takes the same GEMM. A conv2d in its
// place runs the eager conv2d (oneDNN's primitive on the CPU), except that a
// group that is exactly relu(conv2d(...)) becomes one call of
// graph::detail::conv2d_relu: the relu as the primitive's post-op, applied
// while the output tile is in registers.
//
// kind=reduce: a sum/mean/amax/amin over all or trailing dims of dense
// float/double producers as one loop nest (fused_reduction, below: no
// intermediate tensor, the eager reduction's order); otherwise, and always
// for argmax and other dtypes, the elementwise producers as one fused loop,
// then the eager reduction over its result.
//
// Precondition: the group verifies and every tensor in it has a known dtype;
// the matmul, linear or conv2d of an epilogue group comes before its
// elementwise ops.
#include <algorithm>
#include <functional>
#include <set>

#include "graph/ir/value_primitives.h"

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

bool is_product(const ir::Node* m) { return m->is(OpId::matmul) || m->is(OpId::linear) || m->is(OpId::conv2d); }

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
        nodes, is_product, "matmul, linear or conv2d");
    return LoopSpec(n, g + 1, nodes.size());
  }
  if (kind == "reduce") {
    const size_t r = index_of(
        nodes, [](const ir::Node* m) { return m->table_op() && m->table_op()->kind == OpKind::Reduce; },
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
  if (node_list(n->block(0)).front()->is(OpId::conv2d)) return fail("a conv2d runs on cuDNN, then the epilogue kernel");
  const ir::Block* body = n->block(0);
  const std::vector<const ir::Node*> nodes = node_list(body);
  if (nodes.empty() || (!nodes[0]->is(OpId::matmul) && !nodes[0]->is(OpId::linear)))
    return fail("work before the GEMM");
  m.gemm = nodes[0];
  const bool linear = m.gemm->is(OpId::linear);
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
    if (op->is(OpId::add) && !added && !m.relu && !m.bias && op->inputs().size() == 2) {
      const ir::Value* other = op->input(0) == last ? op->input(1) : op->input(1) == last ? op->input(0) : nullptr;
      if (!other || other == last) return fail("add does not read the GEMM's result once");
      if (!is_param(other) || !is_f32(other)) return fail("the added value is not a float32 input of the group");
      m.bias = other;
      added = true;
    } else if (op->is(OpId::relu) && !m.relu && op->input(0) == last) {
      m.relu = true;
    } else if (op->is(OpId::gelu)) {
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
  const bool linear = gemm->is(OpId::linear);
  const std::string bias = linear && gemm->inputs().size() > 2 ? name(gemm->input(2)) : "::graph::Tensor()";
  line(constness(gemm->output()) + "::graph::Tensor " + name(gemm->output()) + " = " +
       at_source(gemm, gemm->op(),
                 "::graph::detail::gemm(buffers, " + std::to_string(next_slot()) + ", " + name(gemm->input(0)) +
                     ", " + name(gemm->input(1)) + ", " + (linear ? "true" : "false") + ", " + bias + ")") +
       ";");
}

namespace {

// Whether the epilogue is one `act` of the product's result and the group's
// only output (so the product itself has no other user).
bool single_activation(const LoopSpec& spec, const ir::Node* gemm, OpId act) {
  return spec.members.size() == 1 && spec.members[0]->is(act) && spec.members[0]->input(0) == gemm->output() &&
         spec.results.size() == 1 && spec.results[0] == spec.members[0]->output();
}

}  // namespace

void Emitter::matmul_epilogue(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  const std::vector<const ir::Node*> nodes = node_list(body);
  const size_t g = index_of(
      nodes, is_product, "matmul, linear or conv2d");
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
                       (gemm->is(OpId::linear) ? "true" : "false") + ", " +
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
  if (gemm->is(OpId::linear) && single_activation(spec, gemm, OpId::gelu)) {
    // gelu(linear): the GELU as the packed GEMM's post-op (graph/detail/gemm_epilogue.h).
    const std::string bias = gemm->inputs().size() > 2 ? name(gemm->input(2)) : "::graph::Tensor()";
    line(name(spec.outputs[0]) + " = " +
         at_source(gemm, gemm->op(),
                   "::graph::detail::linear_gelu(buffers, " + std::to_string(next_slot()) + ", " +
                       name(gemm->input(0)) + ", " + name(gemm->input(1)) + ", " + bias + ")") +
         ";");
    ++cuda_groups_;  // the .graph.cu still numbers this group's kernel (unused here)
  } else if (!gemm->is(OpId::conv2d)) {
    gemm_call(gemm);
    group_fused_loop(spec);
  } else if (single_activation(spec, gemm, OpId::relu)) {
    const std::string call = eager_call(gemm, *gemm->table_op());
    const std::string plain = "::graph::conv2d(";
    line("// conv2d with its relu as oneDNN's post-op (eager conv2d, then relu, where that does not apply).");
    line(name(spec.outputs[0]) + " = " +
         at_source(gemm, gemm->op(), "::graph::detail::conv2d_relu(" + call.substr(plain.size())) + ";");
    ++cuda_groups_;  // the .graph.cu still numbers this group's kernel (unused: conv2d_relu runs cuDNN + relu)
  } else {
    node(gemm);
    group_fused_loop(spec);
  }
  close();
  if (lt.matched) close();
}

void Emitter::reduce_group(const ir::Node* n) {
  const ir::Block* body = n->block(0);
  for (size_t i = 0; i < n->inputs().size(); ++i) alias(body->param(i), name(n->input(i)));
  const std::vector<const ir::Node*> nodes = node_list(body);
  const size_t r = index_of(
      nodes, [](const ir::Node* m) { return m->table_op() && m->table_op()->kind == OpKind::Reduce; },
      "reduction");
  const ir::Node* reduction = nodes[r];
  const LoopSpec spec = group_loop(n);
  line("// reduction of a fused loop: " + describe(spec.members) + ", then " + reduction->op());
  const bool last = r + 1 == nodes.size() && n->num_outputs() == 1 && body->returns()[0] == reduction->output();
  if (last && fused_reduction(n, spec, reduction)) return;
  declare_outputs(spec);
  open("");
  group_fused_loop(spec);
  close();
  for (size_t i = r; i < nodes.size(); ++i) node(nodes[i]);
  for (size_t i = 0; i < n->num_outputs(); ++i) alias(n->output(i), name(body->returns()[i]));
}

namespace {

// The reduced dims of `reduction` as a C++ braced list ("{}": all dims), or
// false when they are not plain constants.
bool static_dims(const ir::Node* reduction, std::string& dims, bool& keepdim) {
  keepdim = false;
  dims = "{}";
  if (has_dynamic_attrs(*reduction)) return false;
  auto k = reduction->attrs().find("keepdim");
  if (k != reduction->attrs().end()) {
    const bool* b = std::get_if<bool>(&k->second);
    if (!b) return false;
    keepdim = *b;
  }
  auto d = reduction->attrs().find("dim");
  if (d == reduction->attrs().end()) return true;
  std::vector<int64_t> list;
  if (const int64_t* i = std::get_if<int64_t>(&d->second)) list = {*i};
  else if (const auto* l = std::get_if<std::vector<int64_t>>(&d->second)) list = *l;
  else return false;
  dims = "{";
  for (size_t i = 0; i < list.size(); ++i) dims += (i ? ", " : "") + std::string("int64_t{") + std::to_string(list[i]) + "}";
  dims += "}";
  return true;
}

}  // namespace

ReduceMatch match_fused_reduction(const ir::Node* n) {
  ReduceMatch m;
  if (fusion_kind(n) != "reduce") return m;
  const ir::Block* body = n->block(0);
  const std::vector<const ir::Node*> nodes = node_list(body);
  const size_t r = index_of(
      nodes, [](const ir::Node* x) { return x->table_op() && x->table_op()->kind == OpKind::Reduce; },
      "reduction");
  const ir::Node* reduction = nodes[r];
  if (!(r + 1 == nodes.size() && n->num_outputs() == 1 && body->returns()[0] == reduction->output())) return m;
  const OpId op = reduction->op_id();
  if (op == OpId::sum || op == OpId::mean) m.kind = "Sum";
  else if (op == OpId::amax) m.kind = "Max";
  else if (op == OpId::amin) m.kind = "Min";
  else return m;
  const LoopSpec spec = group_loop(n);
  if (spec.results.size() != 1) return m;
  const ir::Type& in_type = spec.results[0]->type();
  const ir::Type& out_type = reduction->output()->type();
  if (!in_type.is_tensor() || !in_type.dtype || (*in_type.dtype != DType::Float32 && *in_type.dtype != DType::Float64))
    return m;
  if (!out_type.is_tensor() || out_type.dtype != in_type.dtype) return m;
  if (!static_dims(reduction, m.dims, m.keepdim)) return m;
  size_t tensors = 0;
  for (const ir::Value* v : spec.reads)
    if (v->type().is_tensor()) {
      if (!v->type().dtype) return m;
      ++tensors;
    }
  if (tensors == 0) return m;
  if (std::none_of(spec.members.begin(), spec.members.end(), [](const ir::Node* x) { return !hoisted(x); })) return m;
  m.reduction = reduction;
  m.matched = true;
  return m;
}

// A reduce group whose reduction is sum, mean, amax or amin of a float or
// double producer, over all dims or trailing dims, as one loop nest when the
// operands are dense and of one shape (checked at run time by
// graph::detail::fused_reduction_shape): per output slot, the producers run
// over blocks of kBlock elements into a stack buffer (the group's dense
// kernel, as fusion_kernel.cpp writes it) that graph/reduce_order.h's lanes
// accumulate at once, in the eager reduction's order (so the same bits), no
// intermediate tensor written. Rows go to the cores; a single slot's chunks
// go to the cores and their partials are combined in chunk order. Anything
// else at run time takes the two-step path (fused loop into a buffer, then
// the eager reduction, which reports bad dims with the source line).
bool Emitter::fused_reduction(const ir::Node* n, const LoopSpec& spec, const ir::Node* reduction) {
  constexpr int kBlock = 256;  // a multiple of reduce_order::kLanes dividing kChunk
  const ReduceMatch match = match_fused_reduction(n);
  if (!match.matched || match.reduction != reduction) return false;
  const OpId op = reduction->op_id();
  const std::string kind = match.kind, dims = match.dims;
  const bool keepdim = match.keepdim;
  const ir::Type& in_type = spec.results[0]->type();
  const ir::Type& out_type = reduction->output()->type();
  std::vector<const ir::Value*> tensor_params;
  for (const ir::Value* v : spec.reads)
    if (v->type().is_tensor()) tensor_params.push_back(v);
  std::vector<const ir::Node*> ops;
  for (const ir::Node* m : spec.members)
    if (!hoisted(m)) ops.push_back(m);

  const std::string T = element_type(*in_type.dtype);
  const std::string Op = "::graph::reduce_order::" + kind;
  const std::string out = name(n->output(0));
  const std::string shape = fresh("rshape"), rows = fresh("rows"), count = fresh("count");
  std::vector<std::string> operands;
  for (const ir::Value* v : tensor_params) operands.push_back("&" + name(v));
  std::string operand_list;
  for (const auto& o : operands) operand_list += (operand_list.empty() ? "" : ", ") + o;

  line("::graph::Tensor " + out + ";");
  open("");
  line("::graph::Shape " + shape + ";");
  line("int64_t " + rows + " = 0, " + count + " = 0;");
  const std::string shape_args = operand_list + "}, " + dims + ", " + (keepdim ? "true" : "false") + ", " +
                                 (kind == "Sum" ? "false" : "true") + ", " + shape + ", " + rows + ", " + count;
  // On the device: the fused reduce kernel of the generated .graph.cu (the
  // group's number: the one its two-step loop below takes).
  const KernelPlan plan = cuda_fn_.empty() ? KernelPlan{} : kernel_plan(spec);
  if (!cuda_fn_.empty() && plan.eligible) {
    const size_t k = cuda_groups_;
    std::vector<std::string> ins, scalars;
    for (size_t j = plan.n_out; j < plan.tensors.size(); ++j) ins.push_back("&" + name(plan.tensors[j]));
    std::string in_list;
    for (const auto& o : ins) in_list += (in_list.empty() ? "" : ", ") + o;
    open("if (::graph::detail::any_on_cuda({" + in_list + "}) && ::graph::detail::fused_reduction_shape({" +
         shape_args + ", ::graph::Device::CUDA))");
    const std::string kernel = reduce_kernel_name(cuda_fn_, k);
    line("// Inputs on the CUDA device, dense and of one shape: kernel " + kernel +
         " of the generated .graph.cu (producers");
    line("// in registers, one pass, no intermediate tensor).");
    for (const ir::Node* m : spec.members)
      if (hoisted(m)) node(m);
    for (const ir::Value* v : plan.scalars) scalars.push_back("::graph::detail::host_scalar(" + name(v) + ")");
    std::string scalar_list;
    for (const auto& o : scalars) scalar_list += (scalar_list.empty() ? "" : ", ") + o;
    line(out + " = " +
         at_source(ops.front(), kernel,
                   "::graph::detail::cuda_fused_reduce(" + ir::quote(reduce_kernel_key(cuda_mangled_, cuda_hash_, k)) +
                       ", " + ir::quote(kernel) + ", " + shape + ", " + rows + ", " + count + ", " +
                       dtype_expr(*out_type.dtype) + ", {" + in_list + "}, {" + scalar_list + "})") +
         ";");
    --indent_;
    open("} else if (::graph::detail::fused_reduction_shape({" + shape_args + "))");
  } else {
    open("if (::graph::detail::fused_reduction_shape({" + shape_args + "))");
  }
  line("// One loop nest: per output slot, the producers in blocks of " + std::to_string(kBlock) +
       " into a stack buffer, accumulated");
  line("// in the eager " + reduction->op() + "'s order (graph/reduce_order.h); no intermediate tensor.");
  for (const ir::Node* m : spec.members)
    if (hoisted(m)) node(m);
  line(out + " = " + take_buffer(shape, *out_type.dtype) + ";");
  const std::string out_ptr = fresh("out_" + out);
  line(T + "* const " + out_ptr + " = " + out + ".data_ptr<" + T + ">();");
  std::vector<std::string> in_ptr, in_t;
  for (const ir::Value* p : tensor_params) {
    in_t.push_back(element_type(*p->type().dtype));
    in_ptr.push_back(fresh("in_" + operand(p)));  // a lazy slice's name is an expression
    line("const " + in_t.back() + "* const " + in_ptr.back() + " = " + name(p) + ".data_ptr<" + in_t.back() + ">();");
  }
  // The producers: the group's dense kernel, writing a block into o0.
  std::vector<std::string> scalar_args;
  std::string producer;
  dense_kernel(spec, tensor_params, {T}, in_t, scalar_args, &producer);
  // Its scalar parameters, as dense_kernel declares them.
  std::vector<std::string> sparams;
  std::set<const ir::Value*> seen;
  for (const ir::Node* m : ops)
    for (const ir::Value* v : m->inputs())
      if (!v->type().is_tensor() && seen.insert(v).second) sparams.push_back("const " + cpp_type(v->type()) + " " + name(v));

  std::vector<std::string> params{"const int64_t n"}, args{"n"}, block_args{"m", "block"};
  for (size_t k = 0; k < tensor_params.size(); ++k) {
    params.push_back("const " + in_t[k] + "* __restrict i" + std::to_string(k));
    args.push_back("i" + std::to_string(k));
    block_args.push_back("i" + std::to_string(k) + " + b");
  }
  for (size_t k = 0; k < sparams.size(); ++k) {
    params.push_back(sparams[k]);
    args.push_back(scalar_args[k]);
    block_args.push_back(scalar_args[k]);
  }
  const auto join = [](const std::vector<std::string>& v) {
    std::string s;
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
    return s;
  };
  const std::string chunk = fresh("reduce_chunk");
  const std::string B = std::to_string(kBlock);
  line("// The partial of one chunk (at most reduce_order::kChunk elements), per instruction set.");
  open("struct " + chunk);
  open("GRAPH_ISA_INLINE static double run(" + join(params) + ")");
  line("double lane[::graph::reduce_order::kLanes];");
  line("::graph::reduce_order::lanes_init<" + Op + ">(lane);");
  open("for (int64_t b = 0; b < n; b += " + B + ")");
  line("const int64_t m = n - b < " + B + " ? n - b : " + B + ";");
  line("alignas(64) " + T + " block[" + B + "];");
  line(producer + "::run(" + join(block_args) + ");");
  line("::graph::reduce_order::lanes_add<" + Op + ">(lane, block, m);");
  close();
  line("return ::graph::reduce_order::lanes_finish<" + Op + ">(lane);");
  close();
  const std::string call = "return run(" + join(args) + "); }";
  line("GRAPH_ISA_KERNEL static double baseline(" + join(params) + ") { " + call);
  line("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX2 static double avx2(" + join(params) + ") { " + call);
  line("GRAPH_ISA_KERNEL GRAPH_TARGET_AVX512 static double avx512(" + join(params) + ") { " + call);
  close(";");
  const std::string chunk_isa = fresh(chunk + "_isa");
  line("const auto " + chunk_isa + " = ::graph::cpu::pick_isa(&" + chunk + "::baseline, &" + chunk + "::avx2, &" + chunk +
       "::avx512);");
  // The call for the chunk of `len` elements at element `at`.
  const auto chunk_call = [&](const std::string& len, const std::string& at) {
    std::vector<std::string> a{len};
    for (const auto& p : in_ptr) a.push_back(p + " + " + at);
    a.insert(a.end(), scalar_args.begin(), scalar_args.end());
    return chunk_isa + "(" + join(a) + ")";
  };
  const std::string K = "::graph::reduce_order::kChunk";
  const std::string finish = [&](const std::string& acc) {
    return "static_cast<" + T + ">(" + (op == OpId::mean ? acc + " / static_cast<double>(" + count + ")" : acc) + ")";
  }("acc");
  const std::string chunks = fresh("chunks");
  line("const int64_t " + chunks + " = ::graph::reduce_order::num_chunks(" + count + ");");
  open("if (" + rows + " == 1 && " + chunks + " > 1)");
  line("// One slot: its chunks on all cores, the partials combined in chunk order.");
  const std::string partials = fresh("partials");
  line("const ::graph::Tensor " + partials + " = " + take_buffer("::graph::Shape{" + chunks + "}", DType::Float64) + ";");
  line("double* const partial = " + partials + ".data_ptr<double>();");
  open("::graph::cpu::parallel_for(" + chunks + ", 1, [&](int64_t begin, int64_t end)");
  open("for (int64_t c = begin; c < end; ++c)");
  line("const int64_t at = c * " + K + ";");
  line("partial[c] = " + chunk_call(count + " - at < " + K + " ? " + count + " - at : " + K, "at") + ";");
  close();
  close(");");
  line("double acc = " + Op + "::identity<double>();");
  line("for (int64_t c = 0; c < " + chunks + "; ++c) acc = " + Op + "::combine(acc, partial[c]);");
  line(out_ptr + "[0] = " + finish + ";");
  --indent_;
  open("} else");
  line("// Rows on all cores, each row's chunks in order.");
  open("::graph::cpu::parallel_for(" + rows + ", std::max<int64_t>(1, ::graph::cpu::kElementwiseGrain / std::max<int64_t>(" +
       count + ", 1)), [&](int64_t begin, int64_t end)");
  open("for (int64_t r = begin; r < end; ++r)");
  line("double acc = " + Op + "::identity<double>();");
  open("for (int64_t at = r * " + count + ", stop = at + " + count + "; at < stop; at += " + K + ")");
  line("acc = " + Op + "::combine(acc, " + chunk_call("stop - at < " + K + " ? stop - at : " + K, "at") + ");");
  close();
  line(out_ptr + "[r] = " + finish + ";");
  close();
  close(");");
  close();
  --indent_;
  open("} else");
  line("// Broadcast, strided or on the device, or dims the eager op refuses: the fused loop into a buffer, then the");
  line("// eager " + reduction->op() + ".");
  declare_outputs(spec);
  open("");
  group_fused_loop(spec);
  close();
  node(reduction);
  line(out + " = " + name(reduction->output()) + ";");
  close();
  close();
  return true;
}

}  // namespace graph::codegen::detail
