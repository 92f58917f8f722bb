// Findings of the random-program runs (docs/fuzzing.md), each reduced to a
// small function and kept here as a regression case: the progen_short test
// runs them with the generated batch, through the same harness.
#include <graph/graph.h>

#include "harness.h"

namespace progen_findings {
using namespace graph;

// K1 (fixed): a bool computed in a loop body (the skip flag of a break,
// continue or return; the condition of an if) is needed by the backward once
// per iteration. The static backward could not save bools, so calls with grad
// ran the eager body; it now saves them boxed like host ints.
// Reduced from seed 1, pg14 (a break) and seed 100, pg11 (an if on n).
[[graph::static]] Tensor k1_break_grad(const Tensor& x, int n, double) {
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    if (i == 2) break;
    h = tanh(h * 0.5 + x);
  }
  return h;
}

[[graph::static]] Tensor k1_continue_grad(const Tensor& x, int n, double) {
  Tensor h = x;
  for (int i = 0; i < n; ++i) {
    if (i == 1) continue;
    h = tanh(h * 0.5 + x);
  }
  return h;
}

[[graph::static]] Tensor k1_if_in_loop_grad(const Tensor& x, int n, double) {
  Tensor h = x;
  for (int i = 0; i < 2; ++i) {
    if (n > 1) h = tanh(h * 0.5 + x);
  }
  return h;
}

// K2 (fixed): a tensor parameter the body never reads was typed float32 and
// guarded as such, so a call passing int64 indices there never ran the
// compiled graph. Reduced from seed 101, pg6.
[[graph::static]] Tensor k2_unread_int_input(const Tensor& x, const Tensor& idx, int n, double s) {
  return tanh(x * s + static_cast<double>(n));
}

// K3 (fixed): a fused reduction reading a slice (graph::detail::LazySlice,
// whose C++ name is the expression `v_N.get()`) named its input pointer
// `in_v_N.get()`, so the generated kernels did not compile. Reduced from
// seeds 200 and 202.
[[graph::static]] Tensor k3_reduce_of_slice(const Tensor& x, int, double s) {
  return sum(tanh(x.slice(1, 1, 3) * s), 1);
}

// K4 (by design, docs/gradients.md): on a call whose taken branch ignores x,
// the compiled graph's result still requires grad and x's gradient is zeros,
// where eager's result has none. The harness reads "none" as zeros, so this
// case fails if the graph ever gives a non-zero gradient there. Reduced from
// seed 3000, pg36.
[[graph::static]] Tensor k4_branch_ignores_grad_input(const Tensor& x, int n, double) {
  Tensor m = (x > 0.0).to(kFloat32);
  if (n > 1) return maximum(x, m) * 2.0;
  return m + m;
}

// K5: a value only an untaken branch reads is NaN here (log1p below -1). The
// graph's backward ran its producers' backward on a zero gradient and got
// 0 * NaN = NaN for x, where eager gives twice the output gradient. Reduced from seed
// 3004, pg25 (docs/fuzzing.md).
[[graph::static]] Tensor k5_untaken_branch_nan(const Tensor& x, int n, double) {
  Tensor y = tanh(log1p(x - 3.0) * 0.5);  // NaN wherever x < 2: every input drawn
  if (sum(x) < 100.0) return x * 2.0;     // taken for every input drawn: y unused
  if (n > 1) return x * 3.0;
  return x + y;
}

// K6: a loop body that returns under a tensor condition, then returns
// unconditionally. The returned value's gradient is conditional, so the
// backward of the body's If runs gated (K5), and the zeros for its untaken
// side were shaped like a forward value first mapped inside the gate's other
// branch: the backward failed the verifier and calls with grad ran eagerly.
// Reduced from seed 3018, pg16 (and seed 3019, pg16).
[[graph::static]] Tensor k6_return_in_loop_body(const Tensor& x, int n, double s) {
  Tensor v = x;
  for (int i = 0; i < n; ++i) {
    if (sum(v) > s) return v + v;
    { return v * 3.0; }
  }
  return v + v;
}

// K7: an If whose two outputs are each read by a different early return.
// Both gradients are conditional, so the If's backward runs gated on either
// output's flag (K5), and inside it the branches ran their backward with all
// gradients unconditional: the branch that made `b` ran on a zero gradient,
// and 0 * NaN (tanh's backward of a NaN) reached x, where eager's gradient is
// finite (3 w on the middle return's calls). Reduced from seed 3066, pg27,
// whose branch held a while loop over scaled_dot_product_attention of a log1p.
[[graph::static]] Tensor k7_if_output_of_untaken_return(const Tensor& x, int n, double s) {
  Tensor a = x;
  Tensor b = x;
  if (sum(x) > 100.0) {  // not taken for every input drawn
    a = tanh(a);
  } else {
    b = tanh(log1p(x - 3.0) * 0.5);  // NaN wherever x < 2: every input drawn
  }
  if (s > 0.0) return x + a * 2.0;
  if (n > 1) return x * 3.0;
  return x + b;
}

// K8: the float64 pass met a float32 value (a mask converted to kFloat32) and
// float64 inputs in one attention. Eager refuses mixed q, k, v dtypes, but the
// type rules accepted them, so the float64 specialization ran and raised
// eager's message with the graph's location appended. The attention rule now
// wants one dtype, so the specialization is refused and the eager body runs.
// Reduced from seed 3096, pg31.
[[graph::static]] Tensor k8_attention_of_mixed_dtypes(const Tensor& x, int n, double s) {
  (void)n;
  Tensor q = (x > s).to(kFloat32);  // float32 whatever x's dtype
  return scaled_dot_product_attention(q, x, x);
}

// K9 (seed 3099, pg30): a tensor with a 0-d tensor of a higher dtype keeps
// its own dtype (PyTorch's rule for 0-d operands, which the eager kernels
// follow), but the type rules promoted it: the compiled float32 graph computed
// and returned float64. The rules now follow eager; where an operand's rank is
// unknown at build time (x here: an input) and the dtypes differ, the dtype is
// left to run time (the node is not fused).
[[graph::static]] std::tuple<Tensor, Tensor> k9_zero_dim_of_a_higher_dtype(const Tensor& x, int n, double s) {
  (void)n;
  const Tensor d = x.to(kFloat64).mean();      // 0-d float64 whatever x's dtype
  Tensor known = relu(x.reshape({6}) - d * s);  // rank known: x's dtype
  Tensor unknown = tanh(x + d);                 // x's rank unknown: decided at run time
  return {known, unknown};
}

// K9's float64 pass: the same mix before a conv2d. In float64 the input is
// float32 (the cast) and the weight float64, which eager refuses; the rules
// cannot see it (the cast's rank is unknown), so the specialized graph runs
// and its conv2d throws eager's error with its location, which the harness
// accepts as the same error.
[[graph::static]] Tensor k9_conv2d_after_a_cast(const Tensor& x, const Tensor& w, int n, double s) {
  (void)n;
  const Tensor m = (x > s).to(kFloat32) - x.to(kFloat64).mean();
  return conv2d(m.reshape({1, 1, 2, 3}), w);
}

// K10 (seed 3102, pg19): a value the loop carries but nothing after the loop
// reads, whose last new value is NaN (log1p below -1). Eager autograd never
// visits it. The static backward ran its chain on a zero gradient, and
// 0 * (1 - tanh(NaN)^2) = NaN reached x's gradient through h. A carried
// gradient that may be undefined in an iteration now travels with a flag and
// seeds the body's backward only when set.
[[graph::static]] Tensor k10_carried_value_nothing_reads(const Tensor& x, int n, double s) {
  Tensor h = x;
  Tensor u = x.mean(0, true);
  for (int i = 0; i < n; ++i) {
    Tensor below = log1p(cat({h, x}, 1) - 3.0 + s);
    h = tanh(h * 0.5 + u);
    u = tanh(u * 0.5 + below.mean());
  }
  return h;
}

// K10's other shape: a carried value only it reads, NaN in every iteration;
// its flag never holds, so its backward never runs.
[[graph::static]] Tensor k10_value_only_itself_reads(const Tensor& x, int n, double s) {
  Tensor h = x;
  Tensor junk = x;
  for (int i = 0; i < n; ++i) {
    junk = tanh(log1p(junk - 3.0 + s) + h);
    h = tanh(h * 0.5 + x);
  }
  return h;
}

// K10 as found (pg19 itself): the carried value is read only past an early
// return that is taken. Its gradient's flag comes from the If's backward,
// which runs gated (the If's result is reached), and the gate used to put
// its own flag in place of the If's (the taken branch did not reach u).
[[graph::static]] Tensor k10_read_only_past_an_early_return(const Tensor& x0, const Tensor& x3, const Tensor& x6,
                                                             int n, double s) {
  Tensor v0 = x0;
  Tensor v2 = x3;
  Tensor v3 = mean(v2, 0, true).t();
  for (int i0 = 0; i0 < 1; ++i0) {
    Tensor v4 = v2;
    Tensor v5 = v0;
    Tensor v6 = log1p(cat({v5, x6}, 1) - 3.0).expand({2, -1, -1});  // NaN
    v2 = tanh(v2 * 0.5 + mean(v6));
  }
  if (s < 0.96) {
    return v0 + v3;
  } else {
    for (int i0 = 0; i0 < std::min(n, 3); ++i0) {
      v3 = tanh(v3 * 0.48 + (mean(v2) * i0));
      Tensor v8 = v0;
    }
  }
  Tensor v11 = v0;
  return v0 + v0 + v2 + v3 + v11;
}

// K11 (seed 3161, pg42): the gradient forward returns v0 (saved for the
// backward) and a slice of it. The generated code moved v0 into its output
// slot first, then made the slice (a LazySlice the fused loop had read in
// place) from the moved-from tensor: "slice: expected a defined tensor".
[[graph::static]] std::tuple<Tensor, Tensor, Tensor> k11_slice_of_a_moved_output(const Tensor& x0, const Tensor& x1,
                                                                                 const Tensor& x2, int n, double s) {
  (void)n;
  Tensor v0 = masked_fill(x2, le(x1, mean(x0)), s);
  Tensor v1 = log1p(v0.slice(0, 0, 3, 1));
  return {x0 + mean(v0), v1 + v1, x2 + mean(v1)};
}

// G4 (seed 3148, pg6): a harness bug. An output of -inf everywhere (log of
// a relu that is 0) was reported as differing from eager's -inf: the
// comparison took |x - y| = NaN as out of tolerance.
[[graph::static]] std::tuple<Tensor, Tensor> g4_equal_infinities(const Tensor& x, int n, double s) {
  (void)n;
  return {x * s, log(relu(x - 10.0))};
}

const progen::Case kCases[] = {
    {"k1_break_grad", {{"x0", {2, 3}, false, 0}}, {{0, 0.0}, {1, 0.0}, {4, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k1_break_grad(in[0], n, s)); }},
    {"k1_continue_grad", {{"x0", {3}, false, 0}}, {{0, 0.0}, {3, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k1_continue_grad(in[0], n, s)); }},
    {"k1_if_in_loop_grad", {{"x0", {2, 2}, false, 0}}, {{0, 0.0}, {2, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k1_if_in_loop_grad(in[0], n, s)); }},
    {"k2_unread_int_input", {{"x0", {2, 3}, false, 0}, {"x1", {4}, true, 5}}, {{0, 0.5}, {2, -1.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k2_unread_int_input(in[0], in[1], n, s)); }},
    {"k3_reduce_of_slice", {{"x0", {4, 6}, false, 0}}, {{0, 0.5}, {1, -2.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k3_reduce_of_slice(in[0], n, s)); }},
    {"k4_branch_ignores_grad_input", {{"x0", {2, 3}, false, 0}}, {{0, 0.0}, {2, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k4_branch_ignores_grad_input(in[0], n, s));
     }},
    {"k5_untaken_branch_nan", {{"x0", {2, 3}, false, 0}}, {{0, 0.0}, {2, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k5_untaken_branch_nan(in[0], n, s)); }},
    {"k6_return_in_loop_body", {{"x0", {2, 3}, false, 0}}, {{0, 0.0}, {3, -100.0}, {3, 100.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(k6_return_in_loop_body(in[0], n, s)); }},
    {"k7_if_output_of_untaken_return", {{"x0", {2, 3}, false, 0}}, {{0, 1.0}, {2, -1.0}, {0, -1.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k7_if_output_of_untaken_return(in[0], n, s));
     }},
    {"k8_attention_of_mixed_dtypes", {{"x0", {2, 3}, false, 0}}, {{0, 0.0}, {1, 0.5}}, 1e-4, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k8_attention_of_mixed_dtypes(in[0], n, s));
     }},
    {"k9_zero_dim_of_a_higher_dtype", {{"x0", {2, 3}, false, 0}}, {{0, 0.5}, {1, -0.5}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k9_zero_dim_of_a_higher_dtype(in[0], n, s));
     }},
    {"k9_conv2d_after_a_cast", {{"x0", {2, 3}, false, 0}, {"x1", {1, 1, 1, 1}, false, 0}}, {{0, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k9_conv2d_after_a_cast(in[0], in[1], n, s));
     }},
    {"k10_carried_value_nothing_reads", {{"x0", {2, 3}, false, 0}}, {{1, 0.0}, {0, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k10_carried_value_nothing_reads(in[0], n, s));
     }},
    {"k10_read_only_past_an_early_return",
     {{"x0", {3, 4}, false, 0}, {"x3", {4}, false, 0}, {"x6", {3, 4}, false, 0}},
     {{0, 0.416705}, {4, 0.381764}, {4, -1.450998}}, 1e-3, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k10_read_only_past_an_early_return(in[0], in[1], in[2], n, s));
     }},
    {"g4_equal_infinities", {{"x0", {2, 3}, false, 0}}, {{0, 0.5}}, 1e-4, false, "",
     [](const std::vector<Tensor>& in, int n, double s) { return progen::outputs(g4_equal_infinities(in[0], n, s)); }},
    {"k10_value_only_itself_reads", {{"x0", {2, 3}, false, 0}}, {{3, 0.0}, {1, 0.0}}, 1e-5, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k10_value_only_itself_reads(in[0], n, s));
     }},
    {"k11_slice_of_a_moved_output", {{"x0", {3, 4}, false, 0}, {"x1", {3, 3}, false, 0}, {"x2", {}, false, 0}},
     {{3, -0.069520}, {4, 1.193723}}, 1e-4, false, "",
     [](const std::vector<Tensor>& in, int n, double s) {
       return progen::outputs(k11_slice_of_a_moved_output(in[0], in[1], in[2], n, s));
     }},
};
const progen::Registrar kRegistrar(kCases, std::size(kCases));

}  // namespace progen_findings
