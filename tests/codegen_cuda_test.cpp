// The CUDA source generated for the codegen cases (text only; the builds with
// nvcc compile these for the examples and cuda_ops_test): one kernel per
// elementwise fusion group, fused reductions, cuBLASLt epilogues.
#include "codegen_test_support.h"

namespace {

using namespace codegen_test;

// Every (key, kernel) the .cu registers, and every one the .cpp asks for.
std::set<std::pair<std::string, std::string>> registered_keys(const std::string& cu) {
  std::set<std::pair<std::string, std::string>> out;
  const std::regex re("FusedRegistrar register_(\\w+)\\{\"([^\"]+)\"");
  for (std::sregex_iterator it(cu.begin(), cu.end(), re), end; it != end; ++it) out.insert({(*it)[2], (*it)[1]});
  return out;
}
std::set<std::pair<std::string, std::string>> dispatched_keys(const std::string& cpp) {
  std::set<std::pair<std::string, std::string>> out;
  const std::regex re("cuda_fused(?:_reduce)?\\(\"([^\"]+)\", \"(\\w+)\"");
  for (std::sregex_iterator it(cpp.begin(), cpp.end(), re), end; it != end; ++it) out.insert({(*it)[1], (*it)[2]});
  return out;
}

TEST(GeneratedCuda, OneKernelPerGroupWithSourceLines) {
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  ASSERT_EQ(count_ops(*g, "FusionGroup"), 1u);
  const std::vector<graph::codegen::GraphUnit> units{graph_unit(*g, "_Z5chainv", "h", "m.cpp:1")};
  const std::string cu = graph::codegen::generate_cuda_source(units, "m.cpp");
  EXPECT_EQ(count_of(cu, "__global__"), 1u) << cu;
  // Named after the function and the group; the comment names the ops and lines.
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), group 0: add, mul, relu, sub, tanh, sigmoid, exp, div (m.cpp:1)"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("__global__ void graph_chain_group0(const int64_t numel, const ::graph::cuda::FusedIndex<3> ix, "
                    "const bool vec, float* __restrict__ p0, const float* __restrict__ p1, const float* __restrict__ p2, "
                    "const double s0)"),
            std::string::npos)
      << cu;
  // A grid-stride loop, a dense path (16-byte packs of 4 floats, then the
  // tail) and a strided path, with the same body.
  EXPECT_EQ(count_of(cu, "for (int64_t i = start; i < numel; i += step)"), 1u);
  EXPECT_EQ(count_of(cu, "for (int64_t i = begin + start; i < numel; i += step)"), 1u);
  EXPECT_NE(cu.find("for (int64_t q = start; q < packs; q += step)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("const ::graph::cuda::FusedPack<float, 4> v1 = reinterpret_cast<const "
                    "::graph::cuda::FusedPack<float, 4>*>(p1)[q];"),
            std::string::npos);
  EXPECT_NE(cu.find("v0.v[u] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("reinterpret_cast<::graph::cuda::FusedPack<float, 4>*>(p0)[q] = v0;"), std::string::npos);
  EXPECT_NE(cu.find("a.launch.vec > 1,"), std::string::npos);
  EXPECT_NE(cu.find("const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;"), std::string::npos);
  EXPECT_NE(cu.find("if (ix.contiguous)"), std::string::npos);
  EXPECT_NE(cu.find("::graph::cuda::fused_offsets(ix, i, off);"), std::string::npos);
  EXPECT_EQ(count_of(cu, "::graph::scalar::sigmoid<float>("), 3u);
  EXPECT_EQ(count_of(cu, "= ::graph::scalar::mul<float>(e_a1, static_cast<float>(s0));"), 3u) << cu;
  EXPECT_NE(cu.find("p0[i] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("p0[off[0]] = e_a8;"), std::string::npos);
  EXPECT_NE(cu.find("const float e_b = p2[off[2]];"), std::string::npos) << cu;
  // The launcher and the registrar under the key the CPU source asks for.
  EXPECT_NE(cu.find("void launch_graph_chain_group0(const ::graph::cuda::FusedArgs& a)"), std::string::npos);
  EXPECT_NE(cu.find("a.scalars[0].f"), std::string::npos);
  EXPECT_NE(cu.find("::graph::cuda::FusedRegistrar register_graph_chain_group0{\"_Z5chainv#h/group0\", "
                    "&launch_graph_chain_group0};"),
            std::string::npos);
  // Light includes only: nvcc stays fast.
  EXPECT_EQ(count_of(cu, "#include"), 3u) << cu;
  EXPECT_EQ(cu.find("graph/graph.h"), std::string::npos);
  const std::string cpp = graph::codegen::generate_cpu_source(units, "m.cpp");
  EXPECT_NE(cpp.find("if (::graph::detail::any_on_cuda({&v_x, &v_b}))"), std::string::npos) << cpp;
  EXPECT_NE(cpp.find("::graph::detail::cuda_fused(\"_Z5chainv#h/group0\", \"graph_chain_group0\", shape, "
                     "{::graph::DType::Float32}, {&v_x, &v_b}, {::graph::detail::host_scalar(v_s)}))"),
            std::string::npos)
      << cpp;
  // Its errors carry the group's first line, as the CPU loop's do.
  EXPECT_NE(cpp.find("(here = \" (at m.cpp:1:1, graph_chain_group0 in static graph 'chain')\""), std::string::npos)
      << cpp;
}

TEST(GeneratedCuda, GroupsInsideIfAndLoopAreNumberedLikeTheCpuSource) {
  size_t checked = 0;
  for (const char* file : {"if_tensor.graph", "loop.graph", "scalar_mix.graph", "chain8.graph", "matmul_epilogue.graph",
                           "reduce_fused.graph", "views.graph"})
   for (const auto& g : codegen_case(file)) {
    const std::vector<graph::codegen::GraphUnit> units{graph_unit(*g, "mangled", "hash", "x.cpp:1")};
    const std::string cu = graph::codegen::generate_cuda_source(units, "x.cpp");
    const std::string cpp = graph::codegen::generate_cpu_source(units, "x.cpp");
    const size_t groups = count_ops(*g, "FusionGroup");
    if (groups == 0) continue;
    ++checked;
    // One kernel per group, plus the fused reduce kernel of each reduce group
    // that has one; a group the same as an earlier one (views.graph, loop.graph)
    // registers the earlier launcher instead (checked below: every key).
    EXPECT_LE(count_of(cu, "__global__"), groups + count_of(cpp, "::graph::detail::cuda_fused_reduce(")) << file << "\n"
                                                                                                       << cu;
    EXPECT_EQ(count_of(cpp, "::graph::detail::cuda_fused("), groups) << file;
    EXPECT_EQ(registered_keys(cu), dispatched_keys(cpp)) << file;
    for (size_t k = 0; k < groups; ++k) {
      const std::string key = "\"mangled#hash/group" + std::to_string(k) + "\"";
      EXPECT_NE(cu.find("FusedRegistrar register_graph_" + g->name() + "_group" + std::to_string(k) + "{" + key),
                std::string::npos)
          << file << " group " << k << "\n" << cu;
      EXPECT_NE(cpp.find("cuda_fused(" + key), std::string::npos) << file << " group " << k;
    }
    EXPECT_EQ(count_of(cu, "__global__ void graph_" + g->name() + "_group") + count_of(cu, ": the kernel of "), groups);
  }
  EXPECT_GE(checked, 6u);
}

// Reduce groups: besides the producers' kernel (the two-step path), one
// fused reduce kernel (producers in registers, block tree, stage 2 for a
// single output) that the CPU function calls through cuda_fused_reduce when
// the inputs are dense device tensors of one shape.
TEST(GeneratedCuda, ReduceGroupsGetOneFusedReduceKernel) {
  const auto graphs = codegen_case("reduce_nest.graph");
  ASSERT_EQ(graphs.size(), 3u);
  ir::fuse_groups(*graphs[0]);
  const ir::Graph& g = *graphs[0];
  ASSERT_EQ(g.name(), "red_f32");
  ASSERT_EQ(count_ops(g, "FusionGroup"), 6u);
  const std::vector<graph::codegen::GraphUnit> units{graph_unit(g, "m", "h", "red.cpp:1")};
  const std::string cu = graph::codegen::generate_cuda_source(units, "red.cpp");
  const std::string cpp = graph::codegen::generate_cpu_source(units, "red.cpp");
  EXPECT_EQ(count_of(cu, "__global__"), 12u) << cu;  // 6 producer kernels + 6 fused reduce kernels
  for (int k = 0; k < 6; ++k) {
    const std::string kernel = "graph_red_f32_reduce" + std::to_string(k);
    const std::string key = "\"m#h/group" + std::to_string(k) + "/reduce\"";
    EXPECT_EQ(count_of(cu, "__global__ void " + kernel + "(const int64_t rows, const int64_t count, const double "
                           "divisor, double* __restrict__ partials, float* __restrict__ p0"),
              1u)
        << kernel << "\n" << cu;
    EXPECT_NE(cu.find("FusedRegistrar register_" + kernel + "{" + key + ", &launch_" + kernel + "}"), std::string::npos)
        << kernel;
    EXPECT_NE(cpp.find("::graph::detail::cuda_fused_reduce(" + key + ", \"" + kernel + "\", "), std::string::npos)
        << kernel << "\n" << cpp;
  }
  // Stage 1 in the generated kernel, stage 2 from graph/cuda/fused.h, per op.
  EXPECT_EQ(count_of(cu, "acc = ::graph::cuda::fused_block_reduce<Op>(acc);"), 6u);
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedSum, float>"), 4u) << cu;
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedMax, float>"), 1u);
  EXPECT_EQ(count_of(cu, "::graph::cuda::fused_reduce_final<::graph::cuda::FusedMin, float>"), 1u);
  EXPECT_EQ(count_of(cu, "const double divisor = static_cast<double>(a.reduce.count);  // mean"), 2u);  // mse, mr
  // The producers in registers: relu(x * y + s) into v, then accumulated.
  const size_t k0 = cu.find("__global__ void graph_red_f32_reduce0(");
  ASSERT_NE(k0, std::string::npos);
  const std::string body = cu.substr(k0, cu.find("void launch_graph_red_f32_reduce0", k0) - k0);
  EXPECT_NE(body.find("::graph::scalar::relu"), std::string::npos) << body;
  EXPECT_NE(body.find("p1[i]"), std::string::npos) << body;
  EXPECT_NE(body.find("acc = Op::combine(acc, static_cast<double>(v));"), std::string::npos) << body;
  // The device path is asked for first, then the CPU loop nest, then the two-step path.
  const size_t dev = cpp.find("::graph::detail::any_on_cuda({&");
  const size_t red = cpp.find("::graph::detail::cuda_fused_reduce(");
  const size_t nest = cpp.find("} else if (::graph::detail::fused_reduction_shape(");
  ASSERT_NE(dev, std::string::npos);
  EXPECT_LT(dev, red);
  EXPECT_LT(red, nest);
  EXPECT_NE(cpp.find("::graph::Device::CUDA))"), std::string::npos);
  EXPECT_NE(cpp.find("::graph::detail::cuda_fused(\"m#h/group0\""), std::string::npos);  // the two-step path's kernel
}

TEST(GeneratedCuda, ForwardAndBackwardOfAutogradGetKernelsToo) {
  auto lowered = ir::parse(kChain8);
  ASSERT_EQ(join(ir::verify(*lowered)), "");
  const graph::codegen::GradientUnit grad = ir::gradient_graphs(*lowered);
  ASSERT_EQ(grad.unsupported, "");
  auto g = ir::parse(kChain8);
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  const std::vector<graph::codegen::GraphUnit> units{graph_unit(*g, "_Z5chainv", "h", "m.cpp:1", &grad)};
  const std::string cu = graph::codegen::generate_cuda_source(units, "m.cpp");
  const std::string cpp = graph::codegen::generate_cpu_source(units, "m.cpp");
  const auto registered = registered_keys(cu);
  EXPECT_EQ(registered, dispatched_keys(cpp)) << cu;
  EXPECT_TRUE(registered.count({"_Z5chainv#h/group0", "graph_chain_group0"}));
  EXPECT_TRUE(registered.count({"_Z5chainv#h/forward/group0", "graph_chain_forward_group0"})) << cu;
  size_t backward = 0;
  for (const auto& [key, kernel] : registered) backward += key.rfind("_Z5chainv#h/backward/group", 0) == 0;
  EXPECT_GE(backward, 1u) << cu;
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), forward for autograd, group 0: "), std::string::npos);
  EXPECT_NE(cu.find("// graph chain (m.cpp:1), backward, group 0"), std::string::npos);
}

TEST(GeneratedCuda, IntAndBoolScalarsAndComparisons) {
  auto graphs = codegen_case("scalar_mix.graph");
  const auto& g = graphs.at(0);
  const std::string cu = graph::codegen::generate_cuda_source({graph_unit(*g, "m", "h", "")}, "x.cpp");
  // Int scalars reach the kernel as int64_t from FusedScalar::i, floats as
  // double from ::f; the comparison computes in float and gives a bool that
  // the int add widens, as on the CPU.
  EXPECT_NE(cu.find("float* __restrict__ p0, int64_t* __restrict__ p1, const float* __restrict__ p2, "
                    "const double s0, const int64_t s1, const double s2, const int64_t s3)"),
            std::string::npos)
      << cu;
  EXPECT_NE(cu.find("a.scalars[1].i,"), std::string::npos) << cu;
  EXPECT_NE(cu.find("a.scalars[2].f,"), std::string::npos) << cu;
  EXPECT_EQ(count_of(cu, "const bool e_m = ::graph::scalar::gt<float>(e_y2, static_cast<float>(s2));"), 3u);
  EXPECT_EQ(count_of(cu, "::graph::scalar::add<int64_t>(static_cast<int64_t>(e_m), s3);"), 3u);
  // Mixed widths: packs of 16 / 8 = 2 elements of every operand.
  EXPECT_NE(cu.find("::graph::cuda::FusedPack<int64_t, 2>"), std::string::npos) << cu;
  EXPECT_NE(cu.find("::graph::cuda::FusedPack<float, 2>"), std::string::npos) << cu;
}

// A matmul_epilogue group that cuBLASLt's epilogues compute calls one
// cuBLASLt GEMM on the device (match_lt_epilogue); others keep the GEMM and
// the group's kernel, and the source says why.
TEST(GeneratedCuda, CublasLtEpiloguesWhereTheyMatch) {
  auto graphs = codegen_case("matmul_epilogue.graph");
  for (auto& g : graphs) ir::fuse_groups(*g);
  const std::string mlp = graph::codegen::generate_cpu_source({graph_unit(*graphs.at(0), "m", "h", "")}, "mlp.cpp");
  // linear(x, w1, b1) then relu: RELU_BIAS with linear's bias.
  EXPECT_NE(mlp.find("if (::graph::detail::any_on_cuda({&v_x, &v_w1})) {"), std::string::npos) << mlp;
  EXPECT_NE(mlp.find("// On the CUDA device: one cuBLASLt GEMM with its ReluBias epilogue (no separate kernel)."),
            std::string::npos);
  EXPECT_NE(mlp.find("v_h = (here = \" (at mlp.cpp:3:12, linear in static graph 'mlp')\", "
                     "::graph::detail::cuda_gemm_epilogue(v_x, v_w1, true, v_b1, "
                     "::graph::detail::GemmEpilogue::ReluBias));"),
            std::string::npos)
      << mlp;
  // matmul, add, tanh: tanh has no epilogue; the kernel path stays.
  EXPECT_NE(mlp.find("// No cuBLASLt epilogue on the device: tanh has no cuBLASLt epilogue here."), std::string::npos);
  EXPECT_EQ(count_of(mlp, "cuda_gemm_epilogue("), 1u);
  EXPECT_EQ(count_of(mlp, "cuda_fused("), 2u);  // both groups keep their kernel for the other paths

  const auto one = [](const char* text) {
    auto g = ir::parse(text);
    ir::infer_types(*g);
    ir::fuse_elementwise(*g);
    ir::fuse_groups(*g);
    EXPECT_EQ(count_ops(*g, "FusionGroup"), 1u) << ir::print(*g);
    return graph::codegen::generate_cpu_source({graph_unit(*g, "m", "h", "")}, "e.cpp");
  };
  // matmul then add of an input then relu: the added vector is the bias.
  std::string cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %a : Tensor = add(%b, %m)
  %y : Tensor = relu(%a)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, v_b, ::graph::detail::GemmEpilogue::ReluBias)"),
            std::string::npos)
      << cpp;
  cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = add(%m, %b)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, v_b, ::graph::detail::GemmEpilogue::Bias)"),
            std::string::npos);
  cpp = one(R"(graph e(%x : f32[B, 8], %w : f32[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  return (%y)
})");
  EXPECT_NE(cpp.find("cuda_gemm_epilogue(v_x, v_w, false, ::graph::Tensor(), ::graph::detail::GemmEpilogue::Relu)"),
            std::string::npos);
  // Not matched, each saying why.
  const std::vector<std::pair<const char*, const char*>> refused{
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %a : Tensor = add(%m, %b)
  %y : Tensor = gelu(%a)
  return (%y)
})",
       "gelu: cuBLASLt's GELU epilogue is the tanh approximation, graph::gelu is exact"},
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4], %b : f32[4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  %a : Tensor = add(%y, %b)
  return (%a)
})",
       "add has no cuBLASLt epilogue here"},  // relu before the bias
      {R"(graph e(%x : f64[B, 8], %w : f64[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  return (%y)
})",
       "the GEMM is not float32"},
      {R"(graph e(%x : f32[B, 8], %w : f32[4, 8], %b : f32[4], %c : f32[4]) {
  %m : Tensor = linear(%x, %w, %b)
  %a : Tensor = add(%m, %c)
  return (%a)
})",
       "add has no cuBLASLt epilogue here"},  // a second bias
      {R"(graph e(%x : f32[B, 8], %w : f32[8, 4]) {
  %m : Tensor = matmul(%x, %w)
  %y : Tensor = relu(%m)
  %z : Tensor = relu(%y)
  return (%z)
})",
       "relu has no cuBLASLt epilogue here"}};
  for (const auto& [text, why] : refused) {
    cpp = one(text);
    EXPECT_EQ(cpp.find("cuda_gemm_epilogue("), std::string::npos) << text;
    EXPECT_NE(cpp.find(std::string("// No cuBLASLt epilogue on the device: ") + why + "."), std::string::npos)
        << text << "\n" << cpp;
  }
}

TEST(GeneratedCuda, HalfGroupsAndEmptySourcesSayWhy) {
  auto g = ir::parse(R"(graph h(%x : f16[N], %y : f16[N]) {
  %a : Tensor = add(%x, %y) @"h.cpp":2:3
  %b : Tensor = relu(%a) @"h.cpp":3:3
  return (%b)
})");
  ir::infer_types(*g);
  ir::fuse_elementwise(*g);
  ASSERT_EQ(count_ops(*g, "FusionGroup"), 1u);
  const std::vector<graph::codegen::GraphUnit> units{graph_unit(*g, "m", "h", "")};
  const std::string cu = graph::codegen::generate_cuda_source(units, "h.cpp");
  EXPECT_EQ(cu.find("__global__"), std::string::npos) << cu;
  EXPECT_NE(cu.find("// graph h, group 0: add, relu (h.cpp:2, 3)"), std::string::npos) << cu;
  EXPECT_NE(cu.find("// Not generated for CUDA: operand '"), std::string::npos) << cu;
  EXPECT_NE(cu.find("is half, which the generated kernels do not handle"), std::string::npos) << cu;
  EXPECT_EQ(cu.find("#include"), std::string::npos);  // nothing for nvcc to do
  const std::string cpp = graph::codegen::generate_cpu_source(units, "h.cpp");
  EXPECT_EQ(cpp.find("cuda_fused("), std::string::npos);
  EXPECT_NE(cpp.find("// No CUDA kernel for this group: operand '"), std::string::npos);

  // A graph without fusion groups: a comment only.
  auto m = ir::parse(R"(graph mm(%a : f32[N, K], %b : f32[K, M]) {
  %c : Tensor = matmul(%a, %b)
  return (%c)
})");
  ir::infer_types(*m);
  ir::fuse_elementwise(*m);
  const std::string none = graph::codegen::generate_cuda_source({graph_unit(*m, "m", "h", "")}, "mm.cpp");
  EXPECT_NE(none.find("(no fusion groups here)"), std::string::npos);
  EXPECT_EQ(none.find("#include"), std::string::npos);
}

}  // namespace
