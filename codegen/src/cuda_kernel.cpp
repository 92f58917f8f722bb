// The CUDA kernel writer: one __global__ kernel per elementwise FusionGroup,
// a host launcher that unpacks graph::cuda::FusedArgs into its typed
// parameters, and a registrar under the group's key (graph/cuda/fused.h).
//
// A kernel is a grid-stride loop over the group's output elements with the
// same per-element statements as the CPU loop (element_body: loads, one
// graph::scalar::<op> per member in its compute type, stores): the
// graph::scalar bodies are __host__ __device__, so fused CPU, fused CUDA and
// eager results agree. Two paths, chosen once per launch: every operand
// dense (the collapsed geometry is one dim of stride 1, as the CPU's
// unit_stride()), indexing every operand with the element index; otherwise
// the index decomposed over the collapsed dims into one offset per operand
// (stride 0 along broadcast dims), as the eager CUDA kernels do.
//
// The host side runs the group's hoisted scalar work and its shape checks
// (fusion_kernel.cpp); the kernel receives those scalars as parameters.
#include <algorithm>
#include <map>
#include <set>

#include "emitter.h"
#include "graph/codegen/cpp.h"
#include "graph/codegen/grad.h"
#include "graph/error.h"

namespace graph::codegen {
namespace detail {

namespace {

// Element types the generated kernels handle: those with a plain device
// spelling (graph::Half and graph::BFloat16 are host types).
bool device_type(DType d) {
  return d == DType::Float32 || d == DType::Float64 || d == DType::Int32 || d == DType::Int64 || d == DType::Bool;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// A graph's FusionGroup nodes, in the order Emitter::node visits them
// (block order; If: then, else; Loop: body): each has one fused loop.
void fusion_groups(const ir::Block* b, std::vector<const ir::Node*>& out) {
  for (const auto& n : b->nodes()) {
    if (n->is(OpId::FusionGroup)) {
      out.push_back(n.get());
      continue;
    }
    if (n->is(OpId::If) || n->is(OpId::Loop))
      for (const auto& inner : n->blocks()) fusion_groups(inner.get(), out);
  }
}

}  // namespace

std::vector<std::string> graph_fn_names(const std::vector<std::string>& graph_names) {
  std::set<std::string> taken;
  std::vector<std::string> out;
  for (const std::string& g : graph_names) {
    const std::string base = "graph_" + sanitize_identifier(g);
    std::string fn = base;
    for (int i = 1; taken.count(fn); ++i) fn = base + "_" + std::to_string(i);
    taken.insert(fn);
    out.push_back(fn);
  }
  return out;
}

std::string kernel_name(const std::string& fn, size_t k) { return fn + "_group" + std::to_string(k); }

std::string kernel_key(const std::string& mangled, const std::string& hash, size_t k) {
  return mangled + "#" + hash + "/group" + std::to_string(k);
}

std::string reduce_kernel_name(const std::string& fn, size_t k) { return fn + "_reduce" + std::to_string(k); }

std::string reduce_kernel_key(const std::string& mangled, const std::string& hash, size_t k) {
  return kernel_key(mangled, hash, k) + "/reduce";
}

KernelPlan kernel_plan(const LoopSpec& spec) {
  KernelPlan p;
  for (const ir::Value* v : spec.outputs) p.tensors.push_back(v);
  p.n_out = p.tensors.size();
  for (const ir::Value* v : spec.reads)
    if (v->type().is_tensor()) p.tensors.push_back(v);
  std::set<const ir::Value*> seen;
  for (const ir::Node* m : spec.members) {
    if (hoisted(m)) continue;
    for (const ir::Value* v : m->inputs())
      if (!v->type().is_tensor() && seen.insert(v).second) p.scalars.push_back(v);
  }
  auto refuse = [&](std::string why) {
    if (p.eligible) p.why = std::move(why);
    p.eligible = false;
  };
  for (const ir::Value* v : p.tensors)
    if (!v->type().dtype || !device_type(*v->type().dtype))
      refuse("operand '" + v->name() + "' is " +
             (v->type().dtype ? std::string(dtype_name(*v->type().dtype)) : std::string("of unknown dtype")) +
             ", which the generated kernels do not handle");
  for (const ir::Node* m : spec.members) {
    if (hoisted(m)) continue;
    const OpInfo* op = m->table_op();
    if (!op) {
      refuse("op '" + m->op() + "' is not in the op table");
      continue;
    }
    const DType c = compute_dtype(*op, promoted_dtype(m));
    if (!device_type(c)) refuse(m->op() + " computes in " + std::string(dtype_name(c)));
  }
  // graph::cuda::kMaxFusedOperands and kMaxFusedScalars (graph/cuda/fused.h).
  if (p.tensors.size() > 32) refuse(std::to_string(p.tensors.size()) + " operands (kernels take at most 32)");
  if (p.scalars.size() > 16) refuse(std::to_string(p.scalars.size()) + " host scalars (kernels take at most 16)");
  return p;
}

void Emitter::cuda_kernel(const ir::Node* n, const std::string& fn, size_t k, const std::string& mangled,
                          const std::string& hash, const std::string& graph_label) {
  reset_names();
  const LoopSpec spec = group_loop(n);
  const KernelPlan plan = kernel_plan(spec);
  const std::string kernel = kernel_name(fn, k);
  const std::string kind = fusion_kind(n);
  const bool fused_reduce = kind == "reduce" && match_fused_reduction(n).matched;
  line("");
  line("// " + graph_label + ", group " + std::to_string(k) +
       (kind == "matmul_epilogue" ? " (after its matmul, which runs on cuBLAS)"
        : fused_reduce            ? " (before its reduction, which runs as an eager op when the fused reduce kernel "
                                    "below does not apply)"
        : kind == "reduce"        ? " (before its reduction, which runs as an eager op)"
                                  : "") +
       ": " + describe(spec.members));
  if (!plan.eligible) {
    line("// Not generated for CUDA: " + plan.why + "; on the device this group stops with an error.");
    return;
  }
  const size_t N = plan.tensors.size();
  const std::string NS = std::to_string(N);
  std::vector<std::string> params{"const int64_t numel", "const ::graph::cuda::FusedIndex<" + NS + "> ix",
                                  "const bool vec"};
  std::vector<std::string> dense_loads, dense_stores, loads, stores, pack_loads, pack_stores, pack_reads,
      pack_writes;
  std::vector<std::string> launch_args{"a.geometry.numel", "::graph::cuda::fused_index<" + NS + ">(a.geometry)",
                                       "a.launch.vec > 1"};
  // 16-byte vector loads on the dense path: V elements of every operand per
  // step, V = 16 / the widest element (the eager kernels' Pack).
  size_t widest = 1;
  for (const ir::Value* v : plan.tensors) widest = std::max(widest, element_size(*v->type().dtype));
  const std::string V = std::to_string(16 / widest);
  std::vector<std::string> operand_notes;
  for (size_t j = 0; j < N; ++j) {
    const ir::Value* v = plan.tensors[j];
    const std::string t = element_type(*v->type().dtype);
    const std::string p = "p" + std::to_string(j), js = std::to_string(j);
    const bool out = j < plan.n_out;
    params.push_back((out ? "" : "const ") + t + "* __restrict__ " + p);
    launch_args.push_back("static_cast<" + std::string(out ? "" : "const ") + t + "*>(a.data[" + js + "])");
    (out ? dense_stores : dense_loads).push_back(p + "[i]");
    (out ? stores : loads).push_back(p + "[off[" + js + "]]");
    const std::string pack = "::graph::cuda::FusedPack<" + t + ", " + V + ">";
    (out ? pack_stores : pack_loads).push_back("v" + js + ".v[u]");
    if (out) {
      pack_reads.push_back(pack + " v" + js + ";");
      pack_writes.push_back("reinterpret_cast<" + pack + "*>(" + p + ")[q] = v" + js + ";");
    } else {
      pack_reads.push_back("const " + pack + " v" + js + " = reinterpret_cast<const " + pack + "*>(" + p + ")[q];");
    }
    operand_notes.push_back(p + " " + (out ? "out " : "") + (v->name().empty() ? std::string("%?") : "%" + v->name()));
  }
  std::vector<std::string> scalar_notes;
  for (size_t s = 0; s < plan.scalars.size(); ++s) {
    const ir::Value* v = plan.scalars[s];
    const std::string type = cpp_type(v->type()), sn = "s" + std::to_string(s), ss = std::to_string(s);
    alias(v, sn);
    params.push_back("const " + type + " " + sn);
    launch_args.push_back(type == "double" ? "a.scalars[" + ss + "].f"
                          : type == "bool" ? "a.scalars[" + ss + "].i != 0"
                                           : "a.scalars[" + ss + "].i");
    scalar_notes.push_back(sn + " " + (v->name().empty() ? std::string("%?") : "%" + v->name()));
  }
  line("// operands: " + join(operand_notes, ", ") +
       (scalar_notes.empty() ? "" : "; host scalars: " + join(scalar_notes, ", ")));
  open("__global__ void " + kernel + "(" + join(params, ", ") + ")");
  line("::graph::cuda::fused_prologue();  // waits for the previous kernel's results (fused.h)");
  line("const int64_t start = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;");
  line("const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;");
  open("if (ix.contiguous)");
  line("// Every operand dense: element i of each; " + V +
       " at a time through 16-byte loads when every pointer is aligned (vec).");
  line("int64_t begin = 0;");
  open("if (vec)");
  line("const int64_t packs = numel / " + V + ";");
  open("for (int64_t q = start; q < packs; q += step)");
  for (const std::string& r : pack_reads) line(r);
  line("#pragma unroll");
  open("for (int u = 0; u < " + V + "; ++u)");
  raw(element_body(spec, pack_loads, pack_stores, std::string(2 * indent_, ' ')));
  close();
  for (const std::string& w : pack_writes) line(w);
  close();
  line("begin = packs * " + V + ";");
  close();
  open("for (int64_t i = begin + start; i < numel; i += step)");
  raw(element_body(spec, dense_loads, dense_stores, std::string(2 * indent_, ' ')));
  close();
  --indent_;
  open("} else");
  line("// Broadcast or strided operands: i decomposed over the collapsed dims.");
  open("for (int64_t i = start; i < numel; i += step)");
  line("int64_t off[" + NS + "];");
  line("::graph::cuda::fused_offsets(ix, i, off);");
  raw(element_body(spec, loads, stores, std::string(2 * indent_, ' ')));
  close();
  close();
  close();
  open("void launch_" + kernel + "(const ::graph::cuda::FusedArgs& a)");
  line("::graph::cuda::launch_fused(" + kernel + ", a.launch, a.stream,");
  line("    " + join(launch_args, ",\n" + std::string(2 * indent_ + 4, ' ')) + ");");
  close();
  line("const ::graph::cuda::FusedRegistrar register_" + kernel + "{" + ir::quote(kernel_key(mangled, hash, k)) +
       ", &launch_" + kernel + "};");
  if (fused_reduce) reduce_kernel(n, spec, plan, fn, k, mangled, hash, scalar_notes, operand_notes);
}

// The fused reduce kernel of a reduce group that match_fused_reduction
// accepts, run by graph::detail::cuda_fused_reduce when every operand is on
// the device, dense and of one shape (fused_reduction_shape): the producers
// computed in registers with the graph::scalar bodies, each value added into
// a double accumulator (also for float inputs: the CPU loop nest
// accumulates in double too), then warp shuffles and shared memory combine
// a block's threads (graph::cuda::fused_block_reduce). The launch is
// graph::cuda::fused_reduce_launch's: one block per output row (grid-stride
// over rows); for a single output, stage 1 writes one partial per block and
// stage 2 (one block, fused_reduce_final) combines the partials in block
// order. No float atomics, so a launch gives the same bits every run; the
// order (thread i takes elements i, i + stride, ..., then a shuffle tree)
// is not the CPU's lanes and chunks, so results agree with the CPU to
// rounding, not bit for bit. mean divides by the count at the end; amax and
// amin propagate NaN (graph::cuda::FusedMax/FusedMin, as eager).
void Emitter::reduce_kernel(const ir::Node* n, const LoopSpec& spec, const KernelPlan& plan, const std::string& fn,
                            size_t k, const std::string& mangled, const std::string& hash,
                            const std::vector<std::string>& scalar_notes, const std::vector<std::string>& operand_notes) {
  const ReduceMatch match = match_fused_reduction(n);
  if (!match.matched || plan.n_out != 1) return;
  const std::string kernel = reduce_kernel_name(fn, k);
  const std::string T = element_type(*spec.results[0]->type().dtype);
  const std::string Op = "::graph::cuda::Fused" + match.kind;
  const bool mean = match.reduction->is(OpId::mean);
  std::vector<std::string> params{"const int64_t rows", "const int64_t count", "const double divisor",
                                  "double* __restrict__ partials", T + "* __restrict__ p0"};
  std::vector<std::string> launch_args{"a.reduce.rows", "a.reduce.count", "divisor", "partials",
                                       "static_cast<" + T + "*>(a.data[0])"};
  std::vector<std::string> loads;
  for (size_t j = 1; j < plan.tensors.size(); ++j) {
    const std::string t = element_type(*plan.tensors[j]->type().dtype), p = "p" + std::to_string(j);
    params.push_back("const " + t + "* __restrict__ " + p);
    launch_args.push_back("static_cast<const " + t + "*>(a.data[" + std::to_string(j) + "])");
    loads.push_back(p + "[i]");
  }
  for (size_t s = 0; s < plan.scalars.size(); ++s) {
    const std::string type = cpp_type(plan.scalars[s]->type()), sn = "s" + std::to_string(s), ss = std::to_string(s);
    params.push_back("const " + type + " " + sn);
    launch_args.push_back(type == "double" ? "a.scalars[" + ss + "].f"
                          : type == "bool" ? "a.scalars[" + ss + "].i != 0"
                                           : "a.scalars[" + ss + "].i");
  }
  line("");
  line("// The fused reduce kernel of group " + std::to_string(k) + ": " + describe(spec.members) + ", then " +
       match.reduction->op() + " in one pass (graph::detail::cuda_fused_reduce).");
  line("// Accumulates in double; per block, thread t takes elements t, t + stride, ..., then a shuffle tree;");
  line("// one output: per-block partials, combined by one block in block order (deterministic, no atomics;");
  line("// not the CPU's lane/chunk order, so equal to rounding). operands: p0 out (the " + match.reduction->op() +
       "), " + join(std::vector<std::string>(operand_notes.begin() + 1, operand_notes.end()), ", ") +
       (scalar_notes.empty() ? "" : "; host scalars: " + join(scalar_notes, ", ")));
  open("__global__ void " + kernel + "(" + join(params, ", ") + ")");
  line("using Op = " + Op + ";");
  line("const bool split = partials != nullptr;  // one output over several blocks: stage 1 of 2");
  open("for (int64_t r = split ? 0 : blockIdx.x; r < rows; r += split ? rows : gridDim.x)");
  line("const int64_t first = split ? static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x : threadIdx.x;");
  line("const int64_t step = split ? static_cast<int64_t>(gridDim.x) * blockDim.x : blockDim.x;");
  line("double acc = Op::identity();");
  open("for (int64_t j = first; j < count; j += step)");
  line("const int64_t i = r * count + j;");
  line(T + " v;");
  raw(element_body(spec, loads, {"v"}, std::string(2 * indent_, ' ')));
  line("acc = Op::combine(acc, static_cast<double>(v));");
  close();
  line("acc = ::graph::cuda::fused_block_reduce<Op>(acc);");
  open("if (threadIdx.x == 0)");
  line("if (split) partials[blockIdx.x] = acc;");
  line("else p0[r] = static_cast<" + T + ">(acc / divisor);");
  close();
  close();
  close();
  open("void launch_" + kernel + "(const ::graph::cuda::FusedArgs& a)");
  line("const cudaStream_t stream = static_cast<cudaStream_t>(a.stream);");
  line(std::string("const double divisor = ") +
       (mean ? "static_cast<double>(a.reduce.count);  // mean" : "1.0;  // exact: acc / 1 == acc"));
  line("double* const partials = a.reduce.plan.two_stage ? static_cast<double*>(a.reduce.partials) : nullptr;");
  line(kernel + "<<<static_cast<unsigned>(a.reduce.plan.blocks), static_cast<unsigned>(a.reduce.plan.threads), 0, "
                "stream>>>(");
  line("    " + join(launch_args, ",\n" + std::string(2 * indent_ + 4, ' ')) + ");");
  open("if (partials)");
  line("::graph::cuda::fused_reduce_final<" + Op + ", " + T +
       "><<<1, static_cast<unsigned>(a.reduce.plan.stage2_threads), 0, stream>>>(");
  line("    partials, a.reduce.plan.blocks, static_cast<" + T + "*>(a.data[0]), divisor);");
  close();
  close();
  line("const ::graph::cuda::FusedRegistrar register_" + kernel + "{" +
       ir::quote(reduce_kernel_key(mangled, hash, k)) + ", &launch_" + kernel + "};");
}

}  // namespace detail

namespace {

std::string replace_all(std::string s, const std::string& from, const std::string& to) {
  for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

std::string generate_cuda_source(const std::vector<GraphUnit>& units, const std::string& origin_file) {
  detail::Emitter e;
  e.line("// Generated by cxxgraph from " + origin_file + "; do not edit.");
  e.line("// One CUDA kernel per elementwise fusion group of each [[graph::static]] function,");
  e.line("// with its host launcher and registrar (graph/cuda/fused.h), and a fused reduce kernel");
  e.line("// (graph_<fn>_reduce<k>) per reduce group whose reduction fuses. The generated CPU");
  e.line("// function (.graph.cpp) runs a group here when its inputs are on the device.");
  std::vector<std::string> names;
  for (const GraphUnit& u : units) names.push_back(u.graph->name());
  const std::vector<std::string> fns = detail::graph_fn_names(names);
  std::string kernels;
  size_t count = 0;
  // A group whose kernels are the same as an earlier group's (a forward and
  // its forward for autograd often repeat groups) registers its key with the
  // earlier launcher instead of compiling them again.
  std::map<std::string, std::pair<std::string, std::string>> seen;  // canonical code -> kernel names
  auto add = [&](const std::string& text, const std::string& kernel, const std::string& reduce) {
    std::string code, registrars;
    for (size_t b = 0; b < text.size();) {
      const size_t e = std::min(text.find('\n', b), text.size());
      const std::string row = text.substr(b, e - b) + "\n";
      (row.find("::graph::cuda::FusedRegistrar register_") != std::string::npos ? registrars : code) += row;
      b = e + 1;
    }
    if (code.find("__global__") == std::string::npos) {
      kernels += text;
      return;
    }
    const std::string key =
        detail::canonical_code(replace_all(replace_all(code, reduce, "@REDUCE@"), kernel, "@KERNEL@"));
    auto it = seen.find(key);
    if (it == seen.end()) {
      seen.emplace(key, std::make_pair(kernel, reduce));
      ++count;
      kernels += text;
      return;
    }
    kernels += "// " + kernel + ": the kernel of " + it->second.first + "\n";
    kernels += replace_all(replace_all(registrars, "&launch_" + reduce + "}", "&launch_" + it->second.second + "}"),
                           "&launch_" + kernel + "}", "&launch_" + it->second.first + "}");
  };
  // The graph's own function, then (when it has a gradient) <fn>_forward and
  // <fn>_backward, as generate_cpu_source and gradient_functions write them.
  auto write = [&](const ir::Graph& g, const std::string& fn, const std::string& mangled, const std::string& hash,
                   const std::string& label) {
    std::vector<const ir::Node*> groups;
    detail::fusion_groups(g.top(), groups);
    for (size_t k = 0; k < groups.size(); ++k) {
      detail::Emitter body;
      body.cuda_kernel(groups[k], fn, k, mangled, hash, label);
      add(body.take(), detail::kernel_name(fn, k), detail::reduce_kernel_name(fn, k));
    }
  };
  for (size_t i = 0; i < units.size(); ++i) {
    const GraphUnit& u = units[i];
    const std::string label = "graph " + u.graph->name() + (u.source.empty() ? "" : " (" + u.source + ")");
    write(*u.graph, fns[i], u.mangled_name, u.body_hash, label);
    if (u.gradient && u.gradient->unsupported.empty() && u.gradient->forward && u.gradient->backward) {
      write(*u.gradient->forward, fns[i] + "_forward", u.mangled_name, u.body_hash + "/forward",
            label + ", forward for autograd");
      write(*u.gradient->backward, fns[i] + "_backward", u.mangled_name, u.body_hash + "/backward",
            label + ", backward");
    }
  }
  if (count == 0) {
    // Nothing to compile: no includes, so nvcc spends nothing on this file.
    if (kernels.empty()) e.line("// (no fusion groups here)");
    e.raw(kernels);
    return e.take();
  }
  e.line("#include <cstdint>");
  e.line("");
  e.line("#include <graph/cuda/fused.h>");
  e.line("#include <graph/scalar_ops.h>");
  e.line("");
  e.line("namespace {");
  e.raw(kernels);
  e.line("");
  e.line("}  // namespace");
  return e.take();
}

}  // namespace graph::codegen
