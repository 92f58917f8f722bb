// The autodiff pass on control flow (If on tensor and host conditions, Loop
// with data-dependent trip counts 0, 1 and 5, a Loop inside an If, lists
// across loops) and on bad input (a graph::Error, never a crash): backward
// graphs run in float64 against eager autograd and finite differences.
#include "autodiff_test_support.h"

namespace graph {
namespace {

using namespace autodiff_test;

// ---- If ----------------------------------------------------------------------------

// The seed's RNN step: the branch depends on tensor values.
const char* kRnn =
    "graph rnn_step(%x : Tensor, %prev_h : Tensor, %W_h : Tensor, %w_x : Tensor) {\n"
    "  %0 : Tensor = t(%prev_h)\n"
    "  %h2h : Tensor = matmul(%W_h, %0) @\"rnn.cpp\":2:16\n"
    "  %1 : Tensor = sum(%h2h)\n"
    "  %2 : Tensor = sum(%w_x)\n"
    "  %3 : Tensor = gt(%1, %2)\n"
    "  %h : Tensor = If(%3) @\"rnn.cpp\":3:3\n"
    "    block() {\n"
    "      %5 : Tensor = t(%x)\n"
    "      %i2h : Tensor = matmul(%w_x, %5) @\"rnn.cpp\":4:20\n"
    "      %h2h.6 : Tensor = add(%h2h, %i2h) @\"rnn.cpp\":5:17\n"
    "      -> (%h2h.6)\n"
    "    }\n"
    "    block() {\n"
    "      -> (%h2h)\n"
    "    }\n"
    "  %7 : Tensor = tanh(%h) @\"rnn.cpp\":7:10\n"
    "  return (%7)\n"
    "}\n";

TEST(Autodiff, IfBothBranches) {
  const Tensor W_h = values({4, 4}, -0.5, 0.5, 50), x = values({1, 3}, -1, 1, 51), h = values({1, 4}, -1, 1, 52);
  std::set<bool> taken;
  for (double shift : {-3.0, 3.0}) {
    const Tensor w_x = values({4, 3}, -0.5, 0.5, 53) + shift / 12;
    taken.insert((matmul(W_h, h.t()).sum() > w_x.sum()).item<bool>());
    SCOPED_TRACE("shift " + std::to_string(shift));
    check_graph(kRnn, {x, h, W_h, w_x});
  }
  EXPECT_EQ(taken.size(), 2u) << "the cases must take different branches";
  // The backward is an If on the saved condition; the forward If returns
  // what the then-branch's backward needs (and undefined from the else).
  ir::GradGraphs gg = ir::differentiate(*ir::parse(kRnn), {true, true, true, true});
  const std::string fwd = ir::print(*gg.forward), bwd = ir::print(*gg.backward);
  EXPECT_NE(fwd.find("undefined()"), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("= If(%3) @\"rnn.cpp\":3:3"), std::string::npos) << bwd;
}

TEST(Autodiff, IfOnAHostScalarWithAnOuterValueInOneBranch) {
  // Only the else branch uses %w: the then branch's backward gives it zeros.
  const std::string text =
      "graph f(%flag : int, %x : Tensor, %w : Tensor) {\n"
      "  %zero : int = constant{value=0}()\n"
      "  %c : bool = gt(%flag, %zero)\n"
      "  %y : Tensor = If(%c)\n"
      "    block() {\n"
      "      %s : Tensor = sigmoid(%x)\n"
      "      -> (%s)\n"
      "    }\n"
      "    block() {\n"
      "      %m : Tensor = mul(%x, %w)\n"
      "      %l : Tensor = log_softmax{dim=0}(%m)\n"
      "      -> (%l)\n"
      "    }\n"
      "  %z : Tensor = mul(%y, %x)\n"
      "  return (%z)\n"
      "}\n";
  for (int64_t flag : {1, 0}) {
    SCOPED_TRACE("flag " + std::to_string(flag));
    auto g = ir::parse(text);
    const std::vector<IValue> in{flag, values({3}, -1, 1, 60), values({3}, -1, 1, 61)};
    const std::vector<bool> rg{false, true, true};
    const std::vector<Tensor> go{values({3}, 0.5, 1.5, 62)};
    Grads ours = pass_grads(*g, in, rg, go);
    const std::vector<Tensor> eager = eager_grads(*g, in, rg, go), numeric = numeric_grads(*g, in, rg, go);
    expect_close(ours.grads[0], eager[0], 1e-10, "x vs eager");
    expect_close(ours.grads[0], numeric[0], 1e-6, "x vs differences");
    expect_close(ours.grads[1], numeric[1], 1e-6, "w vs differences");
    if (flag) {
      EXPECT_TRUE(all_zero(ours.grads[1]));
    }
  }
}

// ---- Loop ----------------------------------------------------------------------------

// while (sum(h) < 10) h = h * w + h; the trip count depends on h and w; %w is
// used in every iteration (an accumulated gradient).
const char* kWhile =
    "graph grow(%h0 : Tensor, %w : Tensor) {\n"
    "  %max : int = constant{value=9223372036854775807}()\n"
    "  %limit : float = constant{value=10.0}()\n"
    "  %s0 : Tensor = sum(%h0)\n"
    "  %go : Tensor = lt(%s0, %limit)\n"
    "  %h : Tensor = Loop(%max, %go, %h0) @\"grow.cpp\":3:3\n"
    "    block(%iter : int, %cur : Tensor) {\n"
    "      %a : Tensor = mul(%cur, %w) @\"grow.cpp\":4:9\n"
    "      %next : Tensor = add(%a, %cur) @\"grow.cpp\":4:13\n"
    "      %s : Tensor = sum(%next)\n"
    "      %c : Tensor = lt(%s, %limit)\n"
    "      -> (%c, %next)\n"
    "    }\n"
    "  %y : Tensor = tanh(%h)\n"
    "  return (%y)\n"
    "}\n";

int64_t grow_trips(Tensor h, const Tensor& w) {
  int64_t n = 0;
  for (; h.sum().item<double>() < 10.0; ++n) h = h * w + h;
  return n;
}

TEST(Autodiff, WhileLoopWithDataDependentTripCounts) {
  const Tensor w = values({4}, 0.45, 0.55, 70);
  std::vector<int64_t> trips;
  for (double total : {12.0, 8.0, 1.6}) {
    const Tensor h0 = values({4}, 0.2, 0.3, 71);
    const Tensor scaled = h0 * (total / h0.sum().item<double>());
    trips.push_back(grow_trips(scaled, w));
    SCOPED_TRACE("trips " + std::to_string(trips.back()));
    check_graph(kWhile, {scaled, w});
  }
  EXPECT_EQ(trips, (std::vector<int64_t>{0, 1, 5}));
  // The forward saves per-iteration values in lists and counts iterations;
  // the backward walks them in reverse.
  ir::GradGraphs gg = ir::differentiate(*ir::parse(kWhile), {true, true});
  const std::string fwd = ir::print(*gg.forward), bwd = ir::print(*gg.backward);
  EXPECT_NE(fwd.find("list_append("), std::string::npos) << fwd;
  EXPECT_NE(bwd.find("list_get("), std::string::npos) << bwd;
  EXPECT_NE(bwd.find("= Loop(%count"), std::string::npos) << bwd;
}

// A counted loop (runtime bound %n) that reads its iteration number.
const char* kCounted =
    "graph counted(%n : int, %h0 : Tensor, %w : Tensor) {\n"
    "  %go : bool = constant{value=true}()\n"
    "  %zero : int = constant{value=0}()\n"
    "  %k.2 : int, %h.2 : Tensor = Loop(%n, %go, %zero, %h0)\n"
    "    block(%iter : int, %k : int, %h : Tensor) {\n"
    "      %one : int = constant{value=1}()\n"
    "      %k.n : int = add(%k, %one)\n"
    "      %hw : Tensor = mul(%h, %w)\n"
    "      %hi : Tensor = mul(%hw, %iter)\n"
    "      %h.n : Tensor = tanh(%hi)\n"
    "      %cond : bool = lt(%k.n, %n)\n"
    "      -> (%cond, %k.n, %h.n)\n"
    "    }\n"
    "  %out : Tensor = add(%h.2, %k.2)\n"
    "  return (%out)\n"
    "}\n";

TEST(Autodiff, CountedLoopReadingItsIteration) {
  for (int64_t n : {0, 1, 5}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    auto g = ir::parse(kCounted);
    const std::vector<IValue> in{n, values({2, 3}, -1, 1, 80), values({3}, 0.2, 0.9, 81)};
    const std::vector<bool> rg{false, true, true};
    const std::vector<Tensor> go{values({2, 3}, 0.5, 1.5, 82)};
    Grads ours = pass_grads(*g, in, rg, go);
    const std::vector<Tensor> eager = eager_grads(*g, in, rg, go), numeric = numeric_grads(*g, in, rg, go);
    for (size_t i = 0; i < 2; ++i) {
      expect_close(ours.grads[i], numeric[i], 1e-6, "input " + std::to_string(i + 1) + " vs differences");
      if (eager[i].defined()) expect_close(ours.grads[i], eager[i], 1e-10, "vs eager");
      else EXPECT_TRUE(all_zero(ours.grads[i]));
    }
  }
}

TEST(Autodiff, LoopInsideIf) {
  const std::string text =
      "graph f(%x : Tensor, %w : Tensor) {\n"
      "  %zero : float = constant{value=0.0}()\n"
      "  %sx : Tensor = sum(%x)\n"
      "  %c : Tensor = gt(%sx, %zero)\n"
      "  %three : int = constant{value=3}()\n"
      "  %go : bool = constant{value=true}()\n"
      "  %y : Tensor = If(%c)\n"
      "    block() {\n"
      "      %h : Tensor = Loop(%three, %go, %x)\n"
      "        block(%i : int, %cur : Tensor) {\n"
      "          %m : Tensor = mul(%cur, %w)\n"
      "          %t : Tensor = tanh(%m)\n"
      "          -> (%go, %t)\n"
      "        }\n"
      "      -> (%h)\n"
      "    }\n"
      "    block() {\n"
      "      %e : Tensor = exp(%x)\n"
      "      -> (%e)\n"
      "    }\n"
      "  return (%y)\n"
      "}\n";
  for (double shift : {0.5, -0.5}) {
    SCOPED_TRACE("shift " + std::to_string(shift));
    check_graph(text, {values({3}, -0.4, 0.4, 90) + shift, values({3}, 0.5, 1.5, 91)});
  }
}

// ---- bad input ------------------------------------------------------------------------

using gradcheck_support::expect_error;

TEST(Autodiff, AnOpWithoutGradientOnAPathThatRequiresGradIsAnError) {
  auto g = ir::parse(
      "graph f(%x : Tensor, %w : Tensor) {\n"
      "  %a : Tensor = mul(%x, %w)\n"
      "  %y : Tensor = sum_to(%a, %w) @\"bad.cpp\":7:12\n"
      "  return (%y)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true, false}); }, {"'sum_to'", "bad.cpp:7:12", "no gradient"});
  // Not requiring grad along that path is fine.
  EXPECT_NO_THROW(ir::differentiate(*g, {false, false}));
}

// A training dropout (constant or run-time attributes) differentiates as
// x * dropout_mask(x): the forward saves the mask, the backward multiplies
// by it. An evaluation dropout stays the identity.
TEST(Autodiff, TrainingDropoutSavesItsMask) {
  for (const char* node : {"  %y : Tensor = dropout{p=0.3, training=true}(%a) @\"drop.cpp\":2:3\n",
                           "  %y : Tensor = dropout{p=\"@1\", training=\"@2\"}(%a, %p, %t) @\"drop.cpp\":2:3\n"}) {
    SCOPED_TRACE(node);
    const bool runtime = std::string(node).find("@1") != std::string::npos;
    auto d = ir::parse(runtime ? "graph f(%a : Tensor, %p : float, %t : bool) {\n" + std::string(node) + "  return (%y)\n}\n"
                               : one_node(node, 1));
    ir::GradGraphs r = ir::differentiate(*d, runtime ? std::vector<bool>{true, false, false} : std::vector<bool>{true});
    const std::string fwd = ir::print(*r.forward), bwd = ir::print(*r.backward);
    EXPECT_EQ(fwd.find("= dropout{"), std::string::npos) << fwd;
    EXPECT_NE(fwd.find(runtime ? "dropout_mask{p=\"@1\", training=\"@2\"}(%a, %p, %t) @\"drop.cpp\":2:3"
                               : "dropout_mask{p=0.3, training=true}(%a) @\"drop.cpp\":2:3"),
              std::string::npos)
        << fwd;
    EXPECT_NE(fwd.find("return (%y, %0"), std::string::npos) << fwd;  // the mask is saved
    EXPECT_NE(bwd.find("mul("), std::string::npos) << bwd;
    EXPECT_EQ(bwd.find("dropout"), std::string::npos) << bwd;
  }
  auto eval = ir::parse(one_node("  %y : Tensor = dropout{p=0.3, training=false}(%a)\n", 1));
  EXPECT_EQ(ir::print(*ir::differentiate(*eval, {true}).forward).find("dropout_mask"), std::string::npos);
}

// reshape_dyn and slice_dyn (value_primitives.h): the plugin's views with
// sizes read at run time. The first differentiates like reshape, the second
// through slice_backward with run-time bounds.
TEST(Autodiff, ViewsWithRunTimeSizes) {
  const char* reshaped =
      "graph f(%x : Tensor) {\n"
      "  %0 : int = constant{value=0}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %m : int = constant{value=-1}()\n"
      "  %y : Tensor = reshape_dyn(%x, %m, %n)\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(reshaped, {values({2, 3}, -1, 1, 60)});
  const char* sliced =
      "graph f(%x : Tensor) {\n"
      "  %0 : int = constant{value=1}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %2 : int = constant{value=2}()\n"
      "  %h : int = int_div(%n, %2)\n"
      "  %y : Tensor = slice_dyn{dim=1}(%x, %h, %n, %0) @\"s.cpp\":4:5\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(sliced, {values({2, 5}, -1, 1, 61)});
}

// Attributes known at run time (value_primitives.h): layer_norm over a
// normalized_shape and with an eps that are graph values, and a reduction
// along a run-time dim; the gradient ops get them as inputs too.
TEST(Autodiff, AttributesKnownAtRunTime) {
  const char* norm =
      "graph f(%x : Tensor, %w : Tensor, %b : Tensor, %e : float) {\n"
      "  %0 : int = constant{value=-1}()\n"
      "  %n : int = tensor_size(%x, %0)\n"
      "  %y : Tensor = layer_norm{eps=\"@4\", normalized_shape=\"@3:4\"}(%x, %w, %b, %n, %e)\n"
      "  %z : Tensor = tanh(%y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(norm, {values({3, 4}, -1, 1, 62), values({4}, 0.5, 1.5, 63), values({4}, -1, 1, 64), 1e-3});
  auto g = ir::parse(norm);
  auto grads = ir::differentiate(*g, {true, true, true, false});
  EXPECT_NE(ir::print(*grads.backward).find("layer_norm_backward{eps=\"@5\", grad_mask=[1, 1, 1], normalized_shape=\"@4:5\"}"),
            std::string::npos)
      << ir::print(*grads.backward);
  // conv2d with its stride in an int64 tensor (a `Shape` member) and its
  // padding from two host ints.
  const char* conv =
      "graph f(%x : Tensor, %w : Tensor, %stride : i64[?], %p : int) {\n"
      "  %b : Tensor = undefined()\n"
      "  %y : Tensor = conv2d{padding=\"@4:6\", stride=\"@3\"}(%x, %w, %b, %stride, %p, %p)\n"
      "  return (%y)\n"
      "}\n";
  check_graph(conv, {values({1, 2, 5, 6}, -1, 1, 65), values({3, 2, 3, 2}, -1, 1, 66),
                     arange(1, 3).to(kInt64), int64_t{1}});
  // A run-time attribute that names no input, or an input of the wrong kind.
  for (const char* bad : {"  %y : Tensor = sum{dim=\"@2\"}(%x, %d)\n", "  %y : Tensor = sum{dim=\"@0\"}(%x)\n",
                          "  %y : Tensor = sum{dim=\"@x\"}(%x, %d)\n", "  %y : Tensor = sum(%x, %d)\n"}) {
    auto b = ir::parse(std::string("graph f(%x : Tensor, %d : int) {\n") + bad + "  return (%y)\n}\n");
    EXPECT_THROW(ir::verify_or_throw(*b), Error) << bad;
  }
}

// Views, softmax and where over attributes known only at run time: int lists
// the graph computes (tensor_sizes, make_shape, shape_set) and host ints.
// reshape/view/squeeze/unsqueeze go back through reshape_as, expand through
// sum_to, transpose with the same run-time dims, permute through the inverse
// permutation computed at run time, softmax's sum along the run-time dim.
TEST(Autodiff, ViewsSoftmaxAndWhereWithRunTimeAttributes) {
  const char* reshaped =
      "graph f(%x : Tensor, %like : Tensor) {\n"
      "  %s : Tensor = tensor_sizes(%like)\n"
      "  %y : Tensor = reshape{shape=\"@1\"}(%x, %s)\n"
      "  %z : Tensor = mul(%y, %like)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(reshaped, {values({2, 6}, -1, 1, 70), values({3, 4}, -1, 1, 71)});
  const char* expanded =
      "graph f(%x : Tensor, %y : Tensor) {\n"
      "  %s : Tensor = tensor_sizes(%y)\n"
      "  %0 : int = constant{value=0}()\n"
      "  %1 : int = constant{value=1}()\n"
      "  %s1 : Tensor = shape_set(%s, %0, %1)\n"
      "  %v : Tensor = reshape{shape=\"@1\"}(%x, %s1)\n"
      "  %e : Tensor = expand{shape=\"@1\"}(%v, %s)\n"
      "  %z : Tensor = mul(%e, %y)\n"
      "  return (%z)\n"
      "}\n";
  check_graph(expanded, {values({4}, -1, 1, 72), values({3, 4}, -1, 1, 73)});
  const char* permuted =
      "graph f(%x : Tensor, %a : int, %b : int) {\n"
      "  %2 : int = constant{value=2}()\n"
      "  %p : Tensor = make_shape(%b, %2, %a)\n"
      "  %y : Tensor = permute{dims=\"@1\"}(%x, %p)\n"
      "  %w : Tensor = permute{dims=\"@1:4\"}(%y, %a, %2, %b)\n"
      "  %t : Tensor = transpose{dim0=\"@1\", dim1=\"@2\"}(%w, %a, %b)\n"
      "  %z : Tensor = tanh(%t)\n"
      "  return (%z)\n"
      "}\n";
  for (auto [a, b] : {std::pair<int64_t, int64_t>{0, 1}, {0, -2}, {-3, 1}})
    check_graph(permuted, {values({2, 3, 4}, -1, 1, 74), a, b});
  auto p = ir::parse(permuted);
  auto pg = ir::differentiate(*p, {true, false, false});
  EXPECT_NE(ir::print(*pg.backward).find("inverse_permutation("), std::string::npos) << ir::print(*pg.backward);
  const char* soft =
      "graph f(%x : Tensor, %d : int, %c : Tensor, %r : Tensor) {\n"
      "  %s : Tensor = softmax{dim=\"@1\"}(%x, %d)\n"
      "  %l : Tensor = log_softmax{dim=\"@1\"}(%x, %d)\n"
      "  %m : Tensor = tensor_sizes(%x)\n"
      "  %e : Tensor = expand{shape=\"@1\"}(%r, %m)\n"
      "  %w : Tensor = where(%c, %s, %e)\n"
      "  %u : Tensor = unsqueeze{dim=\"@1\"}(%w, %d)\n"
      "  %q : Tensor = squeeze{dim=\"@1\"}(%u, %d)\n"
      "  %z : Tensor = mul(%q, %l)\n"
      "  %f : Tensor = flatten{start_dim=\"@1\"}(%z, %d)\n"
      "  return (%f)\n"
      "}\n";
  const Tensor x = values({3, 4}, -1, 1, 75), other = values({3, 4}, -1, 1, 76);
  for (int64_t d : {0, 1, -1}) check_graph(soft, {x, d, gt(x, other), values({4}, -1, 1, 77)});
  // cat and stack along a run-time dim.
  const char* joined =
      "graph f(%a : Tensor, %b : Tensor, %d : int) {\n"
      "  %c : Tensor = cat{dim=\"@2\"}(%a, %b, %d)\n"
      "  %s : Tensor = stack{dim=\"@2\"}(%a, %a, %d)\n"
      "  %t : Tensor = tanh(%s)\n"
      "  return (%c, %t)\n"
      "}\n";
  for (int64_t d : {0, 1, -1}) check_graph(joined, {values({2, 3}, -1, 1, 78), values({2, 3}, -1, 1, 79), d});
  // A permutation that is not one: an error from the forward (eager's) and,
  // differentiated, from the backward's inverse, never a crash.
  auto bad = ir::parse(permuted);
  auto bg = ir::differentiate(*bad, {true, false, false});
  EXPECT_THROW(run(*bg.forward, {values({2, 3, 4}, -1, 1, 74), int64_t{0}, int64_t{0}}), Error);
}

TEST(Autodiff, BadRequestsAreErrors) {
  auto g = ir::parse("graph f(%n : int, %x : Tensor) {\n  %y : Tensor = mul(%x, %n)\n  return (%y)\n}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"2 inputs", "1 entries"});
  expect_error([&] { ir::differentiate(*g, {true, true}); }, {"input 0", "not a tensor"});
  auto bad = ir::parse("graph f(%x : Tensor) {\n  %y : Tensor = relu(%x, %x)\n  return (%y)\n}\n");
  expect_error([&] { ir::differentiate(*bad, {true}); }, {"malformed"});
}

// Lists carry gradients: a list's gradient is a list of per-element ones.
// A Loop appends to a carried list; the list is read back at an index
// computed in a second Loop (saved per iteration), stacked and concatenated.
TEST(Autodiff, ListsAcrossLoopsCatAndStack) {
  const char* text =
      "graph f(%n : int, %x : Tensor, %w : Tensor) {\n"
      "  %go : bool = constant{value=true}()\n"
      "  %empty : list = list_new()\n"
      "  %parts : list, %h : Tensor = Loop(%n, %go, %empty, %x)\n"
      "    block(%i : int, %l : list, %a : Tensor) {\n"
      "      %b : Tensor = mul(%a, %w)\n"
      "      %c : Tensor = tanh(%b)\n"
      "      %l2 : list = list_append(%l, %c)\n"
      "      -> (%go, %l2, %c)\n"
      "    }\n"
      "  %one : int = constant{value=1}()\n"
      "  %acc : Tensor = Loop(%n, %go, %x)\n"
      "    block(%j : int, %s : Tensor) {\n"
      "      %last : int = sub(%n, %j)\n"
      "      %k : int = sub(%last, %one)\n"
      "      %e : Tensor = list_get(%parts, %k)\n"
      "      %ee : Tensor = mul(%e, %e)\n"
      "      %s2 : Tensor = add(%s, %ee)\n"
      "      -> (%go, %s2)\n"
      "    }\n"
      "  %with : list = list_append(%parts, %acc)\n"
      "  %st : Tensor = stack{dim=0}(%with)\n"
      "  %ct : Tensor = cat{dim=1}(%with)\n"
      "  %total : Tensor = sum(%st)\n"
      "  %cs : Tensor = sum(%ct)\n"
      "  %hs : Tensor = sum(%h)\n"
      "  %m : Tensor = mul(%cs, %hs)\n"
      "  %y : Tensor = add(%total, %m)\n"
      "  return (%y)\n"
      "}\n";
  for (int64_t n : {0, 1, 3}) {
    SCOPED_TRACE("n = " + std::to_string(n));
    check_graph(text, {n, values({2, 3}, -1, 1, 90), values({2, 3}, 0.2, 0.9, 91)});
  }
}

TEST(Autodiff, AListOutputCarryingGradientsIsRefused) {
  auto g = ir::parse(
      "graph f(%x : Tensor) {\n"
      "  %e : list = list_new()\n"
      "  %t : Tensor = tanh(%x)\n"
      "  %l : list = list_append(%e, %t)\n"
      "  return (%l)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"output 0", "list of tensors", "tensor outputs only"});
  EXPECT_NO_THROW(ir::differentiate(*g, {false}));
}

TEST(Autodiff, NestedLoopsNeedingPerIterationValuesAreAClearError) {
  auto g = ir::parse(
      "graph f(%x : Tensor) {\n"
      "  %two : int = constant{value=2}()\n"
      "  %go : bool = constant{value=true}()\n"
      "  %y : Tensor = Loop(%two, %go, %x) @\"n.cpp\":1:1\n"
      "    block(%i : int, %a : Tensor) {\n"
      "      %z : Tensor = Loop(%two, %go, %a) @\"n.cpp\":2:3\n"
      "        block(%j : int, %b : Tensor) {\n"
      "          %t : Tensor = tanh(%b)\n"
      "          -> (%go, %t)\n"
      "        }\n"
      "      -> (%go, %z)\n"
      "    }\n"
      "  return (%y)\n"
      "}\n");
  expect_error([&] { ir::differentiate(*g, {true}); }, {"autodiff", "Loop", "n.cpp:1:1"});
}

}  // namespace
}  // namespace graph
