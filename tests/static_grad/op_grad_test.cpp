// Every op of the op table, differentiated through a static graph: for each
// differentiable op, one or more [[graph::static]] functions that use it
// (op_grad_functions.cpp: optional operands absent and present, lists braced
// and built with push_back) are called with inputs that require grad; their
// value and every input's gradient must equal eager autograd's, and float64
// central differences of the eager body. The table below has one entry per
// op-table entry, in order: adding an op without saying how it is tested
// here fails the build of this test.
#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

#include "grad_check.h"
#include "graph/op_table.h"
#include "op_grad_functions.h"

namespace {

using graph::Tensor;
using namespace sg_check;

enum class Coverage {
  Cases,       // `cases` names the og::op_<case> functions that use the op
  NoGradient,  // the op has no gradient; `cases` says why
  GradientOp,  // a gradient op the autodiff pass emits (tested through the others)
};

struct Entry {
  std::string_view op;
  Coverage coverage;
  std::string_view cases;  // space-separated case names, or the reason
};

constexpr Entry kEntries[] = {
    {"neg", Coverage::Cases, "neg"},
    {"abs", Coverage::Cases, "abs"},
    {"sign", Coverage::NoGradient, "piecewise constant (GRAPH_NO_GRAD)"},
    {"relu", Coverage::Cases, "relu"},
    {"exp", Coverage::Cases, "exp"},
    {"log", Coverage::Cases, "log"},
    {"sqrt", Coverage::Cases, "sqrt"},
    {"rsqrt", Coverage::Cases, "rsqrt"},
    {"tanh", Coverage::Cases, "tanh"},
    {"sigmoid", Coverage::Cases, "sigmoid"},
    {"erf", Coverage::Cases, "erf"},
    {"gelu", Coverage::Cases, "gelu"},
    {"silu", Coverage::Cases, "silu"},
    {"sin", Coverage::Cases, "sin"},
    {"cos", Coverage::Cases, "cos"},
    {"log1p", Coverage::Cases, "log1p"},
    {"expm1", Coverage::Cases, "expm1"},
    {"softplus", Coverage::Cases, "softplus"},
    {"logical_not", Coverage::NoGradient, "bool result"},
    {"add", Coverage::Cases, "add"},
    {"sub", Coverage::Cases, "sub"},
    {"mul", Coverage::Cases, "mul"},
    {"div", Coverage::Cases, "div"},
    {"pow", Coverage::Cases, "pow"},
    {"maximum", Coverage::Cases, "maximum"},
    {"minimum", Coverage::Cases, "minimum"},
    {"clamp_min", Coverage::Cases, "clamp_min clamp_min_tensor clamp hardtanh"},
    {"clamp_max", Coverage::Cases, "clamp_max clamp_max_tensor"},
    {"leaky_relu", Coverage::Cases, "leaky_relu leaky_relu_default"},
    {"elu", Coverage::Cases, "elu elu_default"},
    {"lt", Coverage::NoGradient, "bool result"},
    {"le", Coverage::NoGradient, "bool result"},
    {"gt", Coverage::NoGradient, "bool result"},
    {"ge", Coverage::NoGradient, "bool result"},
    {"eq", Coverage::NoGradient, "bool result"},
    {"ne", Coverage::NoGradient, "bool result"},
    {"sum", Coverage::Cases, "sum"},
    {"mean", Coverage::Cases, "mean"},
    {"amax", Coverage::Cases, "amax"},
    {"amin", Coverage::Cases, "amin"},
    {"argmax", Coverage::NoGradient, "index result"},
    {"matmul", Coverage::Cases, "matmul matmul_batched"},
    {"conv2d", Coverage::Cases, "conv2d conv2d_no_bias"},
    {"conv_transpose2d", Coverage::Cases, "conv_transpose2d conv_transpose2d_no_bias"},
    {"t", Coverage::Cases, "t"},
    {"transpose", Coverage::Cases, "transpose"},
    {"permute", Coverage::Cases, "permute"},
    {"reshape", Coverage::Cases, "reshape"},
    {"expand", Coverage::Cases, "expand"},
    {"slice", Coverage::Cases, "slice"},
    {"squeeze", Coverage::Cases, "squeeze"},
    {"unsqueeze", Coverage::Cases, "unsqueeze"},
    {"flatten", Coverage::Cases, "flatten"},
    {"where", Coverage::Cases, "where"},
    {"softmax", Coverage::Cases, "softmax"},
    {"log_softmax", Coverage::Cases, "log_softmax"},
    {"linear", Coverage::Cases, "linear linear_no_bias"},
    {"layer_norm", Coverage::Cases, "layer_norm layer_norm_no_affine"},
    {"max_pool2d", Coverage::Cases, "max_pool2d"},
    {"avg_pool2d", Coverage::Cases, "avg_pool2d"},
    {"adaptive_avg_pool2d", Coverage::Cases, "adaptive_avg_pool2d adaptive_pools"},
    {"pad", Coverage::Cases, "pad"},
    {"interpolate", Coverage::Cases, "interpolate_nearest interpolate_bilinear interpolate_linear"},
    {"embedding", Coverage::Cases, "embedding"},
    {"cat", Coverage::Cases, "cat cat_vector"},
    {"stack", Coverage::Cases, "stack stack_vector"},
    {"dropout", Coverage::Cases, "dropout"},  // while training: StaticGrad.TrainingDropoutBackwardUsesTheForwardsMask
    {"dropout_mask", Coverage::NoGradient, "random draws: x's values are not read (split dropout's mask)"},
    {"rand_like", Coverage::NoGradient, "random draws: x's values are not read (the VAE model draws in a graph)"},
    {"randn_like", Coverage::NoGradient, "random draws: x's values are not read (the VAE model draws in a graph)"},
    {"mse_loss", Coverage::Cases, "mse_loss"},
    {"cross_entropy", Coverage::Cases, "cross_entropy"},
    {"scaled_dot_product_attention", Coverage::Cases,
     "scaled_dot_product_attention scaled_dot_product_attention_masked scaled_dot_product_attention_causal"},
    {"masked_fill", Coverage::Cases, "masked_fill masked_fill_ninf masked_fill_runtime masked_fill_causal where_scalar"},
    {"triu", Coverage::Cases, "triu"},
    {"tril", Coverage::Cases, "tril"},
    {"index_select", Coverage::Cases, "index_select index_select_rows"},
    {"gather", Coverage::Cases, "gather gather_dim0"},
    {"cumsum", Coverage::Cases, "cumsum cumsum_neg_dim"},
    {"bmm", Coverage::Cases, "bmm bmm_method"},
    {"batch_norm", Coverage::Cases, "batch_norm_train batch_norm_eval batch_norm_plain"},
    {"to", Coverage::Cases, "to"},
    {"contiguous", Coverage::Cases, "contiguous"},
    {"type_as", Coverage::Cases, "type_as"},
    {"scatter_add", Coverage::Cases, "scatter_add scatter_add_method"},
    {"argsort", Coverage::NoGradient, "index result (sort and topk, kComposites, differentiate through gather)"},
    {"sum_to", Coverage::GradientOp, ""},
    {"reshape_as", Coverage::GradientOp, ""},
    {"zeros_like", Coverage::GradientOp, ""},
    {"cat_backward", Coverage::GradientOp, ""},
    {"sum_backward", Coverage::GradientOp, ""},
    {"mean_backward", Coverage::GradientOp, ""},
    {"amax_backward", Coverage::GradientOp, ""},
    {"amin_backward", Coverage::GradientOp, ""},
    {"matmul_backward", Coverage::GradientOp, ""},
    {"conv2d_backward", Coverage::GradientOp, ""},
    {"conv_transpose2d_backward", Coverage::GradientOp, ""},
    {"slice_backward", Coverage::GradientOp, ""},
    {"linear_backward", Coverage::GradientOp, ""},
    {"layer_norm_backward", Coverage::GradientOp, ""},
    {"max_pool2d_backward", Coverage::GradientOp, ""},
    {"avg_pool2d_backward", Coverage::GradientOp, ""},
    {"adaptive_avg_pool2d_backward", Coverage::GradientOp, ""},
    {"pad_backward", Coverage::GradientOp, ""},
    {"interpolate_backward", Coverage::GradientOp, ""},
    {"embedding_backward", Coverage::GradientOp, ""},
    {"mse_loss_backward", Coverage::GradientOp, ""},
    {"cross_entropy_backward", Coverage::GradientOp, ""},
    {"scaled_dot_product_attention_backward", Coverage::GradientOp, ""},
    {"index_select_backward", Coverage::GradientOp, ""},
    {"gather_backward", Coverage::GradientOp, ""},
    {"cumsum_backward", Coverage::GradientOp, ""},
    {"bmm_backward", Coverage::GradientOp, ""},
    {"batch_norm_backward", Coverage::GradientOp, ""},
    {"scatter_add_backward", Coverage::GradientOp, ""},
};

static_assert(std::size(kEntries) == graph::kNumOps,
              "every op of the op table needs an entry in kEntries: a static function using it in "
              "op_grad_functions.cpp, or why it has no gradient");
consteval bool entries_follow_the_table() {
  for (size_t i = 0; i < graph::kNumOps; ++i)
    if (kEntries[i].op != graph::kOpTable[i].name) return false;
  return true;
}
static_assert(entries_follow_the_table(), "kEntries must list the op table's ops in its order");
// The cases' objective reads one result per function: an op with several
// outputs needs a case that uses each of them (extend case_named and
// op_grad_functions.h with functions returning a std::tuple, as
// static_grad_test's two_outputs does).
consteval bool cases_have_one_output() {
  for (size_t i = 0; i < graph::kNumOps; ++i)
    if (kEntries[i].coverage == Coverage::Cases && graph::kOpTable[i].num_outputs != 1) return false;
  return true;
}
static_assert(cases_have_one_output(), "an op with several outputs needs cases that use each output");

// ---- the inputs of each case --------------------------------------------------

using OpFn = Tensor (*)(const Tensor&, const Tensor&, const Tensor&);

struct Case {
  OpFn fn = nullptr;
  std::vector<Tensor> inputs;  // three; unused ones are placeholders without grad
  std::vector<size_t> no_grad;
};

Tensor in(graph::Shape s, float scale = 0.7f, float shift = -0.3f) { return pattern(s, scale, shift); }
Tensor pos(graph::Shape s) { return pattern(s, 0.6f, 0.2f) + 1.5; }
Tensor ints(std::initializer_list<int64_t> v) { return graph::tensor<int64_t>(v); }
Tensor unused() { return graph::zeros({1}); }

Case make(OpFn fn, std::vector<Tensor> inputs) {
  Case c{fn, std::move(inputs), {}};
  while (c.inputs.size() < 3) c.inputs.push_back(unused());
  for (size_t i = 0; i < 3; ++i)
    if (!graph::is_floating(c.inputs[i].dtype()) || (c.inputs[i].dim() == 1 && c.inputs[i].size(0) == 1))
      c.no_grad.push_back(i);
  return c;
}

Case case_named(std::string_view n) {
  using namespace og;
  const graph::Shape m{2, 3}, cube{2, 3, 4};
#define OG_SAME(name) \
  if (n == #name) return make(op_##name, {in(m)});
  OG_SAME(neg) OG_SAME(abs) OG_SAME(relu) OG_SAME(exp) OG_SAME(tanh) OG_SAME(sigmoid) OG_SAME(erf) OG_SAME(gelu)
  OG_SAME(silu) OG_SAME(mean) OG_SAME(amax) OG_SAME(amin) OG_SAME(t) OG_SAME(unsqueeze) OG_SAME(softmax)
  OG_SAME(log_softmax) OG_SAME(dropout)
#undef OG_SAME
  // Both signs, away from the kinks at 0 and at the bounds (finite differences).
  const Tensor mixed = in(m, 0.7f, -2.0f), bound = in({3}, 0.5f, -0.55f);
#define OG_MIXED(name) \
  if (n == #name) return make(op_##name, {mixed});
  OG_MIXED(sin) OG_MIXED(cos) OG_MIXED(expm1) OG_MIXED(softplus) OG_MIXED(clamp_min) OG_MIXED(clamp_max)
  OG_MIXED(clamp) OG_MIXED(hardtanh) OG_MIXED(leaky_relu) OG_MIXED(leaky_relu_default) OG_MIXED(elu)
  OG_MIXED(elu_default)
#undef OG_MIXED
  if (n == "log1p") return make(op_log1p, {in(m)});
  if (n == "clamp_min_tensor") return make(op_clamp_min_tensor, {mixed, bound});
  if (n == "clamp_max_tensor") return make(op_clamp_max_tensor, {mixed, bound});
  if (n == "log") return make(op_log, {pos(m)});
  if (n == "sqrt") return make(op_sqrt, {pos(m)});
  if (n == "rsqrt") return make(op_rsqrt, {pos(m)});
  if (n == "add") return make(op_add, {in(m), in({3}, 0.9f, 0.1f)});
  if (n == "sub") return make(op_sub, {in(m), in({3}, 0.9f, 0.1f)});
  if (n == "mul") return make(op_mul, {in(m), in({3}, 0.9f, 0.1f)});
  if (n == "div") return make(op_div, {in(m), pos({3})});
  if (n == "pow") return make(op_pow, {pos(m), in(m, 0.5f, 0.3f)});
  if (n == "maximum") return make(op_maximum, {in(m), in(m, -0.45f, 0.35f)});
  if (n == "minimum") return make(op_minimum, {in(m), in(m, -0.45f, 0.35f)});
  if (n == "sum") return make(op_sum, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "matmul") return make(op_matmul, {in(m), in({3, 4}, 0.3f, -0.4f)});
  if (n == "matmul_batched") return make(op_matmul_batched, {in(cube), in({4, 2}, 0.3f, -0.4f)});
  if (n == "conv2d") return make(op_conv2d, {in({1, 2, 5, 4}, 0.2f, -0.1f), in({3, 2, 3, 3}, 0.3f, 0.2f), in({3})});
  if (n == "conv2d_no_bias") return make(op_conv2d_no_bias, {in({1, 2, 5, 4}, 0.2f, -0.1f), in({3, 2, 3, 3}, 0.3f, 0.2f)});
  if (n == "conv_transpose2d")
    return make(op_conv_transpose2d, {in({1, 2, 3, 4}, 0.2f, -0.1f), in({2, 3, 3, 3}, 0.3f, 0.2f), in({3})});
  if (n == "conv_transpose2d_no_bias")
    return make(op_conv_transpose2d_no_bias, {in({1, 2, 3, 4}, 0.2f, -0.1f), in({2, 3, 2, 2}, 0.3f, 0.2f)});
  if (n == "transpose") return make(op_transpose, {in(cube)});
  if (n == "permute") return make(op_permute, {in(cube)});
  if (n == "reshape") return make(op_reshape, {in(cube)});
  if (n == "expand") return make(op_expand, {in({1, 3})});
  if (n == "slice") return make(op_slice, {in(cube)});
  if (n == "squeeze") return make(op_squeeze, {in({2, 1, 3})});
  if (n == "flatten") return make(op_flatten, {in(cube)});
  if (n == "where") return make(op_where, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "linear") return make(op_linear, {in(m), in({4, 3}, 0.3f, 0.2f), in({4}, 0.5f, -0.1f)});
  if (n == "linear_no_bias") return make(op_linear_no_bias, {in(m), in({4, 3}, 0.3f, 0.2f)});
  if (n == "layer_norm") return make(op_layer_norm, {in(m), in({3}, 0.5f, 0.4f), in({3}, 0.3f, -0.2f)});
  if (n == "layer_norm_no_affine") return make(op_layer_norm_no_affine, {in({2, 2, 3})});
  if (n == "max_pool2d") return make(op_max_pool2d, {in({1, 2, 4, 4}, 0.13f, -1.0f)});
  if (n == "avg_pool2d") return make(op_avg_pool2d, {in({1, 2, 5, 5}, 0.1f, -1.0f)});
  if (n == "embedding") return make(op_embedding, {in({5, 3}), unused(), ints({4, 0, 2, 4})});
  if (n == "cat") return make(op_cat, {in(m), in({2, 2}, 0.4f, 0.1f)});
  if (n == "cat_vector") return make(op_cat_vector, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "stack") return make(op_stack, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "stack_vector") return make(op_stack_vector, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "mse_loss") return make(op_mse_loss, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "cross_entropy") return make(op_cross_entropy, {in({3, 4}), unused(), ints({1, 3, 0})});
  if (n == "scaled_dot_product_attention")
    return make(op_scaled_dot_product_attention, {in(cube), in({2, 5, 4}, 0.3f, 0.1f), in({2, 5, 4}, 0.2f, -0.5f)});
  if (n == "scaled_dot_product_attention_masked")
    return make(op_scaled_dot_product_attention_masked,
                {in(cube), in({2, 5, 4}, 0.3f, 0.1f), in({2, 5, 4}, 0.2f, -0.5f)});
  if (n == "scaled_dot_product_attention_causal")
    return make(op_scaled_dot_product_attention_causal, {in(cube), in(cube, 0.3f, 0.1f), in(cube, 0.2f, -0.5f)});
  if (n == "masked_fill" || n == "masked_fill_ninf" || n == "where_scalar")
    return make(n == "masked_fill" ? op_masked_fill : n == "masked_fill_ninf" ? op_masked_fill_ninf : op_where_scalar,
                {in(m), in(m, 0.4f, -0.2f)});
  if (n == "masked_fill_runtime") return make(op_masked_fill_runtime, {in(m), in({3}, 0.4f, -0.2f)});
  if (n == "masked_fill_causal") return make(op_masked_fill_causal, {in({3, 4}), in({3, 4}, 0.3f, 0.1f)});
  if (n == "triu") return make(op_triu, {in(cube)});
  if (n == "batch_norm_train" || n == "batch_norm_eval")
    return make(n == "batch_norm_train" ? op_batch_norm_train : op_batch_norm_eval,
                {in({4, 3, 2}), in({3}, 0.5f, 0.4f), in({3}, 0.3f, -0.2f)});
  if (n == "batch_norm_plain") return make(op_batch_norm_plain, {in({2, 3, 2, 2})});
  if (n == "tril") return make(op_tril, {in({4, 3})});
  if (n == "index_select") return make(op_index_select, {in(m), unused(), ints({2, 0, 2, 1})});
  if (n == "index_select_rows") return make(op_index_select_rows, {in({3, 2}), in({4, 2}, 0.5f, 0.2f), ints({1, 1, 0, 2})});
  if (n == "gather") return make(op_gather, {in(m), unused(), ints({2, 0, 1, 1, 1, 0, 2, 2}).reshape({2, 4})});
  if (n == "gather_dim0")
    return make(op_gather_dim0, {in({3, 4}), in({2, 3}, 0.5f, 0.2f), ints({2, 0, 2, 1, 1, 0}).reshape({2, 3})});
  if (n == "cumsum") return make(op_cumsum, {in(m)});
  if (n == "cumsum_neg_dim") return make(op_cumsum_neg_dim, {in(cube)});
  if (n == "bmm") return make(op_bmm, {in(cube), in({2, 4, 3}, 0.5f, 0.2f)});
  if (n == "bmm_method") return make(op_bmm_method, {in(cube), in({2, 5, 4}, 0.5f, 0.2f)});
  if (n == "to") return make(op_to, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "contiguous") return make(op_contiguous, {in(m)});
  if (n == "type_as") return make(op_type_as, {in(m), in(m, 0.4f, 0.1f)});
  // The decompositions (kComposites below); targets hit the ignored index and class 2.
  if (n == "logsumexp" || n == "var" || n == "var_all" || n == "std")
    return make(n == "logsumexp" ? op_logsumexp : n == "var" ? op_var : n == "var_all" ? op_var_all : op_std,
                {in({3, 4})});
  if (n == "logsumexp_keepdim" || n == "var_biased_keepdim")
    return make(n == "logsumexp_keepdim" ? op_logsumexp_keepdim : op_var_biased_keepdim, {in(cube)});
  if (n == "std_all") return make(op_std_all, {in({5})});
  const Tensor classes = in({4}, 0.5f, 0.6f);
  if (n == "nll_loss") return make(op_nll_loss, {in({3, 4}), unused(), ints({1, 3, 0})});
  if (n == "nll_loss_weight_sum") return make(op_nll_loss_weight_sum, {in({4, 4}), classes, ints({2, 3, 0, 2})});
  if (n == "nll_loss_weight_none") return make(op_nll_loss_weight_none, {in({3, 4}), classes, ints({1, -100, 3})});
  if (n == "nll_loss_weight_mean") return make(op_nll_loss_weight_mean, {in({3, 4}), classes, ints({1, -100, 3})});
  if (n == "bce" || n == "bce_logits") return make(n == "bce" ? op_bce : op_bce_logits, {in(m), in(m, 0.4f, 0.1f)});
  if (n == "bce_weight_none" || n == "bce_logits_pos_weight")
    return make(n == "bce_weight_none" ? op_bce_weight_none : op_bce_logits_pos_weight,
                {in(m), in(m, 0.4f, 0.1f), in({3}, 0.5f, 0.6f)});
  if (n == "select" || n == "narrow") return make(n == "select" ? op_select : op_narrow, {in({3, 4})});
  if (n == "unbind") return make(op_unbind, {in({4, 3}), in({4}, 0.5f, 0.2f)});
  if (n == "split" || n == "chunk") return make(n == "split" ? op_split : op_chunk, {in({5, 3})});
  if (n == "max_dim") return make(op_max_dim, {in({3, 4})});
  if (n == "group_norm") return make(op_group_norm, {in({2, 4, 3}), in({4}, 0.5f, 0.4f), in({4}, 0.3f, -0.2f)});
  if (n == "group_norm_plain") return make(op_group_norm_plain, {in({2, 6, 2, 2})});
  if (n == "conv1d") return make(op_conv1d, {in({2, 2, 7}, 0.2f, -0.1f), in({3, 2, 3}, 0.3f, 0.2f), in({3})});
  if (n == "conv1d_groups") return make(op_conv1d_groups, {in({1, 4, 6}, 0.2f, -0.1f), in({2, 2, 3}, 0.3f, 0.2f)});
  if (n == "max_pool1d") return make(op_max_pool1d, {in({2, 2, 6}, 0.13f, -1.0f)});
  if (n == "avg_pool1d") return make(op_avg_pool1d, {in({2, 2, 7}, 0.1f, -1.0f)});
  if (n == "adaptive_avg_pool2d") return make(op_adaptive_avg_pool2d, {in({2, 3, 4, 2})});
  if (n == "adaptive_pools") return make(op_adaptive_pools, {in({1, 2, 5, 4}, 0.13f, -1.0f)});  // no ties at 1
  if (n == "interpolate_nearest" || n == "interpolate_bilinear" || n == "interpolate_linear")
    return make(n == "interpolate_nearest" ? op_interpolate_nearest
                : n == "interpolate_bilinear" ? op_interpolate_bilinear : op_interpolate_linear,
                {in({1, 2, 3, 4})});
  if (n == "pad") return make(op_pad, {in(cube)});
  if (n == "like") return make(op_like, {in(m)});
  if (n == "one_hot") return make(op_one_hot, {in({3, 4}), unused(), ints({1, 3, 0})});
  if (n == "scatter_add")
    return make(op_scatter_add, {in(m), in({2, 4}, 0.5f, 0.2f), ints({2, 0, 2, 1, 1, 1, 0, 2}).reshape({2, 4})});
  if (n == "scatter_add_method")
    return make(op_scatter_add_method, {in({3, 2}), in({2, 3}, 0.4f, 0.1f), ints({2, 0, 2, 2}).reshape({2, 2})});
  if (n == "sort" || n == "topk" || n == "norm" || n == "norm_all")  // distinct values, no ties
    return make(n == "sort" ? op_sort : n == "topk" ? op_topk : n == "norm" ? op_norm : op_norm_all,
                {graph::tensor({0.3f, -0.5f, 0.9f, 0.1f, -0.2f, 0.7f, -0.9f, 0.45f, 0.05f, -0.35f, 0.6f, -0.7f}).reshape({3, 4})});
  return {};
}

std::string mangled(std::string_view c) {
  const std::string fn = "op_" + std::string(c);
  return "_ZN2og" + std::to_string(fn.size()) + fn + "ERKN5graph6TensorES3_S3_";
}

std::vector<std::string> words(std::string_view s) {
  std::vector<std::string> out;
  size_t i = 0;
  while (i < s.size()) {
    const size_t j = std::min(s.find(' ', i), s.size());
    if (j > i) out.emplace_back(s.substr(i, j - i));
    i = j + 1;
  }
  return out;
}

void check_case(const std::string& name) {
  SCOPED_TRACE(name);
  const Case c = case_named(name);
  ASSERT_NE(c.fn, nullptr) << "no inputs for case '" << name << "' in case_named()";
  for (graph::Mode mode : {graph::Mode::Static, graph::Mode::Interpret}) {
    SCOPED_TRACE(mode == graph::Mode::Static ? "compiled" : "interpreted");
    const std::string m = mangled(name);
    check_gradients(m.c_str(),
                    [fn = c.fn](const std::vector<Tensor>& x) {
                      Tensor y = fn(x[0], x[1], x[2]);
                      return (y * weights_like(y).to(y.dtype())).sum();
                    },
                    c.inputs, c.no_grad, mode);
  }
}

class OpGrad : public testing::TestWithParam<size_t> {};

TEST_P(OpGrad, StaticGradientsEqualEagerAndFiniteDifferences) {
  const Entry& e = kEntries[GetParam()];
  const graph::OpInfo& info = graph::kOpTable[GetParam()];
  switch (e.coverage) {
    case Coverage::GradientOp:
      EXPECT_TRUE(info.name.ends_with("_backward") || info.name == "sum_to" || info.name == "reshape_as" ||
                  info.name == "zeros_like")
          << info.name << " is not a gradient op";
      return;
    case Coverage::NoGradient:
      // Only ops whose result cannot carry a gradient (or is piecewise constant).
      EXPECT_TRUE(info.rule == graph::DTypeRule::ToBool || info.rule == graph::DTypeRule::ToIndex ||
                  info.name == "sign" || info.has(graph::op_trait::ValuesUnread))
          << info.name << " claims no gradient";
      return;
    case Coverage::Cases: break;
  }
  const std::vector<std::string> cases = words(e.cases);
  ASSERT_FALSE(cases.empty());
  for (const std::string& name : cases) check_case(name);
}

INSTANTIATE_TEST_SUITE_P(EveryOp, OpGrad, testing::Range<size_t>(0, graph::kNumOps),
                         [](const testing::TestParamInfo<size_t>& p) { return std::string(kEntries[p.param].op); });

// Ops that are decompositions into table ops (no entry of their own): each
// lowers whole (no eager fallback) and differentiates through those ops.
constexpr std::string_view kComposites[] = {
    "logsumexp", "logsumexp_keepdim", "var", "var_biased_keepdim", "var_all", "std", "std_all",
    "nll_loss", "nll_loss_weight_sum", "nll_loss_weight_none", "nll_loss_weight_mean",
    "bce", "bce_weight_none", "bce_logits", "bce_logits_pos_weight",
    "select", "narrow", "unbind", "split", "chunk", "max_dim",
    "group_norm", "group_norm_plain", "conv1d", "conv1d_groups", "max_pool1d", "avg_pool1d",
    "like", "one_hot", "sort", "topk", "norm", "norm_all",
    "adaptive_pools",
};

class Composite : public testing::TestWithParam<std::string_view> {};

TEST_P(Composite, StaticGradientsEqualEagerAndFiniteDifferences) { check_case(std::string(GetParam())); }

INSTANTIATE_TEST_SUITE_P(Decompositions, Composite, testing::ValuesIn(kComposites),
                         [](const testing::TestParamInfo<std::string_view>& p) { return std::string(p.param); });

// Bad input inside a graph: the error of the op that meets it, with the C++ line.
TEST(CompositeErrors, GroupsNotDividingChannelsNameTheReshapeAndLine) {
  for (graph::Mode mode : {graph::Mode::Static, graph::Mode::Interpret}) {
    graph::set_mode(mode);
    try {
      og::op_group_norm(in({2, 5, 3}), in({5}), in({5}));  // 5 channels, 2 groups
      ADD_FAILURE() << "no error";
    } catch (const graph::Error& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find("reshape"), std::string::npos) << msg;
      EXPECT_NE(msg.find("nn_functional.h"), std::string::npos) << msg;
    }
  }
  graph::set_mode(graph::Mode::Static);
}

}  // namespace
