// Writes the ONNX export test cases for tests/onnx/check_onnx.py: for each
// case, a model traced from eager code (examples' modules, and op coverage
// graphs), exported with graph::onnx::export_model, plus its inputs and the
// eager outputs as .npy files; and graphs with control flow (Loop, If on
// run-time values), written as the plugin lowers them, with the
// interpreter's outputs:
//   DIR/NAME.onnx  DIR/NAME.in0.npy ...  DIR/NAME.out0.npy ...
// and DIR/cases.txt, one "NAME INPUTS OUTPUTS" line per case. ONNX Runtime
// then runs each model on the inputs and compares with the eager outputs.
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>

#include "../../examples/lenet/lenet.h"
#include "../../examples/mlp_train/mlp.h"
#include "../../examples/transformer/encoder.h"
#include "graph/graph.h"
#include "graph/interpreter.h"
#include "graph/ir/ir.h"
#include "graph/onnx_export.h"
#include "graph/trace.h"

namespace {

using namespace graph;

// NumPy's .npy format, version 1.0: what np.load reads.
void write_npy(const std::string& path, const Tensor& t_in) {
  const Tensor t = t_in.contiguous();
  std::string descr;
  switch (t.dtype()) {
    case DType::Float32: descr = "<f4"; break;
    case DType::Float64: descr = "<f8"; break;
    case DType::Int32: descr = "<i4"; break;
    case DType::Int64: descr = "<i8"; break;
    case DType::Bool: descr = "|b1"; break;
    default: throw Error("write_npy: no .npy dtype for " + std::string(dtype_name(t.dtype())));
  }
  std::string shape = "(";
  for (int64_t s : t.sizes()) shape += std::to_string(s) + ",";
  shape += ")";
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::ofstream f(path, std::ios::binary);
  f.write("\x93NUMPY\x01\x00", 8);
  const uint16_t len = static_cast<uint16_t>(header.size());
  f.put(static_cast<char>(len & 0xff)).put(static_cast<char>(len >> 8));
  f << header;
  f.write(static_cast<const char*>(t.raw_data()), static_cast<std::streamsize>(t.numel() * element_size(t.dtype())));
  if (!f) throw Error("cannot write " + path);
}

struct Case {
  std::string name;
  TraceFn fn;
  std::vector<Tensor> inputs;
};

// A graph in IR text, run by the interpreter.
struct IrCase {
  std::string name;
  std::string text;
  std::vector<Tensor> inputs;
};

std::vector<IrCase> ir_cases() {
  manual_seed(1);
  std::vector<IrCase> out;
  // An RNN over the rows of x: a Loop whose trip count is a static size, a
  // slice at the loop counter, and an If on the counter's parity.
  out.push_back({"rnn_loop", R"(graph rnn(%x : f32[5, 3], %w : f32[3, 4], %u : f32[4, 4], %h0 : f32[1, 4]) {
  %zero : int = constant{value=0}()
  %T : int = tensor_size(%x, %zero)
  %go : bool = constant{value=true}()
  %h : f32[1, 4] = Loop(%T, %go, %h0)
    block(%t : int, %h.1 : f32[1, 4]) {
      %one : int = constant{value=1}()
      %two : int = constant{value=2}()
      %t1 : int = add(%t, %one)
      %xt : f32[1, 3] = slice_dyn{dim=0}(%x, %t, %t1, %one)
      %a : f32[1, 4] = matmul(%xt, %w)
      %b : f32[1, 4] = matmul(%h.1, %u)
      %s : f32[1, 4] = add(%a, %b)
      %h.2 : f32[1, 4] = tanh(%s)
      %r : int = int_mod(%t, %two)
      %odd : bool = eq(%r, %one)
      %h.3 : f32[1, 4] = If(%odd)
        block() {
          %half : float = constant{value=0.5}()
          %y : f32[1, 4] = mul(%h.2, %half)
          -> (%y)
        }
        block() {
          -> (%h.2)
        }
      -> (%go, %h.3)
    }
  return (%h)
})",
                 {randn({5, 3}), randn({3, 4}) * 0.5, randn({4, 4}) * 0.5, randn({1, 4})}});
  // A while on a tensor condition, with an If on a tensor inside and host
  // values carried (an int count, a float sum of the counter).
  out.push_back({"while_if", R"(graph shrink(%x : f32[4]) {
  %max : int = constant{value=9223372036854775807}()
  %lim : float = constant{value=1.0}()
  %s0 : f32 = sum(%x)
  %c0 : i1 = gt(%s0, %lim)
  %zero : int = constant{value=0}()
  %acc0 : float = constant{value=0.0}()
  %n : int, %acc : float, %h : f32[4] = Loop(%max, %c0, %zero, %acc0, %x)
    block(%i : int, %k : int, %acc.1 : float, %h.1 : f32[4]) {
      %one : int = constant{value=1}()
      %k.2 : int = add(%k, %one)
      %fi : float = int_to_float(%i)
      %acc.2 : float = add(%acc.1, %fi)
      %m : f32 = amax(%h.1)
      %big : float = constant{value=2.0}()
      %c : i1 = gt(%m, %big)
      %h.2 : f32[4] = If(%c)
        block() {
          %half : float = constant{value=0.5}()
          %a : f32[4] = mul(%h.1, %half)
          -> (%a)
        }
        block() {
          %q : float = constant{value=0.25}()
          %b : f32[4] = sub(%h.1, %q)
          -> (%b)
        }
      %s : f32 = sum(%h.2)
      %more : i1 = gt(%s, %lim)
      -> (%more, %k.2, %acc.2, %h.2)
    }
  return (%h, %n, %acc)
})",
                 {abs(randn({4})) * 3.0 + 1.0}});
  return out;
}

// A host value the interpreter returned, as the 0-d tensor ONNX gives.
Tensor as_tensor(const IValue& v) {
  if (const auto* t = std::get_if<Tensor>(&v)) return *t;
  if (const auto* i = std::get_if<int64_t>(&v)) return full(Shape{}, *i, kInt64);
  if (const auto* d = std::get_if<double>(&v)) return full(Shape{}, *d, kFloat64);
  if (const auto* b = std::get_if<bool>(&v)) return full(Shape{}, *b, kBool);
  throw Error("onnx_cases: a list output");
}

std::vector<Case> cases() {
  manual_seed(0);
  std::vector<Case> out;
  {
    Mlp mlp;
    out.push_back({"mlp", [mlp](const std::vector<Tensor>& x) mutable { return std::vector<Tensor>{mlp(x[0])}; },
                   {randn({4, 2})}});
  }
  {
    LeNet net;
    out.push_back({"lenet", [net](const std::vector<Tensor>& x) mutable { return std::vector<Tensor>{net(x[0])}; },
                   {randn({2, 1, 28, 28})}});
  }
  {
    EncoderBlock enc;
    out.push_back({"encoder", [enc](const std::vector<Tensor>& x) mutable { return std::vector<Tensor>{enc(x[0])}; },
                   {randn({6, EncoderBlockImpl::kModel})}});
  }
  // Elementwise ops, comparisons and where, with scalars and broadcasting.
  out.push_back({"elementwise", [](const std::vector<Tensor>& v) {
                   const Tensor& a = v[0];
                   const Tensor& b = v[1];
                   Tensor pos = abs(a) + 0.5;
                   Tensor y = gelu(a) + silu(b) * sigmoid(a) - tanh(b) / 3.0;
                   y = y + exp(-abs(a)) + log(pos) + sqrt(pos) + rsqrt(pos) + erf(a) + sign(b) + relu(-b);
                   y = y + pow(pos, b) + maximum(a, b) * minimum(a, 0.25) + 2.0 * neg(a);
                   Tensor c = where(a > b, a, b * 2.0) + where((a <= 0.1) * 1.0 != 0, 1.0 * a, pos);
                   Tensor flags = !(a >= b) * 1.0 + (a < 0) * 1.0 + (a == a) * 1.0;
                   return std::vector<Tensor>{y, c + flags, a > b};
                 },
                 {randn({3, 4}), randn({4})}});
  // Views: what the IR calls view ops, in a chain ONNX must follow exactly.
  out.push_back({"views", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];                         // [2, 3, 4]
                   Tensor y = x.transpose(0, 2).permute({1, 0, 2});  // [3, 4, 2]
                   y = y.reshape({6, -1}).t();                       // [4, 6]
                   y = y.slice(1, 1, 5, 2).unsqueeze(0).unsqueeze(-1);  // [1, 4, 2, 1]
                   Tensor z = y.squeeze(-1).squeeze().expand({3, 4, 2});
                   Tensor f = x.flatten(1) + x.flatten(0, 1).sum(0).sum();
                   Tensor s = stack({x, x * 2.0}, 1).flatten(0, 1);  // [4, 3, 4]
                   Tensor c = cat({x, x.slice(2, 0, 1)}, -1);         // [2, 3, 5]
                   return std::vector<Tensor>{z, f, s, c, y.squeeze(0)};
                 },
                 {randn({2, 3, 4})}});
  out.push_back({"reductions", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // [2, 3, 5]
                   return std::vector<Tensor>{x.sum(), x.sum(1, true), x.mean(Shape{0, 2}), amax(x, Shape{-1}),
                                              amin(x, Shape{0, 1}, true), argmax(x, 2), argmax(x),
                                              softmax(x, 1), log_softmax(x, -1), (x > 0).sum(1)};
                 },
                 {randn({2, 3, 5})}});
  // nn ops beyond the examples: pooling, embedding, losses, eval dropout, attention.
  out.push_back({"nn", [](const std::vector<Tensor>& v) {
                   const Tensor& img = v[0];  // [1, 2, 6, 6]
                   const Tensor& q = v[1];    // [2, 5, 8]
                   Tensor ids = argmax(q, 2);  // [2, 5], in [0, 8)
                   Tensor table = arange(0.0, 40.0).reshape({10, 4}) * 0.1;
                   Tensor logits = q.slice(2, 0, 4).reshape({-1, 4});
                   Tensor target = arange(0, 10).reshape({10}) - (arange(0, 10) / 4).to(kInt64) * 4;
                   return std::vector<Tensor>{
                       avg_pool2d(img, {3, 3}, {2, 2}, {1, 1}), max_pool2d(img, {2, 2}, {1, 1}, {1, 1}),
                       embedding(table, ids), mse_loss(q, q * 0.5), cross_entropy(logits, target),
                       dropout(q, 0.3, false),
                       scaled_dot_product_attention(q, q * 0.5, q, Tensor(), 0.0, true),
                       scaled_dot_product_attention(q, q, q * 2.0, (q.slice(2, 0, 5) > 0), 0.0, false),
                       layer_norm(q, {8}, Tensor(), Tensor(), 1e-5), matmul(q, q.transpose(1, 2))};
                 },
                 {randn({1, 2, 6, 6}), randn({2, 5, 8})}});
  // masked_fill (-inf, a broadcast mask, an int tensor's truncated fill),
  // where with a host scalar (invert, promote), triu/tril on both sides of
  // the diagonal, a causal mask from triu.
  out.push_back({"select", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];   // f32 [2, 3, 4]
                   const Tensor& m = v[1];   // bool [3, 1]: broadcast over the batch and the columns
                   const Tensor& xi = v[2];  // i64 [2, 3, 4]
                   const double inf = std::numeric_limits<double>::infinity();
                   Tensor causal = softmax(masked_fill(x, triu(ones({3, 4}, kBool), 1), -inf), -1);
                   return std::vector<Tensor>{masked_fill(x, m, -inf), causal,
                                              triu(x, -1), tril(x, 1), x.tril(), x.triu(2),
                                              triu(x > 0, -1), tril(xi, -2),
                                              where(x > 0, xi, 0.5), where(m, 2, xi), xi.masked_fill(x > 0, 1.7),
                                              where(x < 0, x, -inf), masked_fill(x > 0, m, true), where(m, x > 0, false)};
                 },
                 {randn({2, 3, 4}), randn({3, 1}) > 0, (randn({2, 3, 4}) * 3.0).to(kInt64)}});
  // index_select (repeated indices, a negative dim), gather along either dim
  // with an index from argmax, cumsum of floats and of a bool mask, bmm.
  out.push_back({"index", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // f32 [2, 3, 4]
                   const Tensor& b = v[1];  // f32 [2, 4, 5]
                   const Tensor cols = argmax(x, 2, true);  // [2, 3, 1] in [0, 4)
                   return std::vector<Tensor>{index_select(x, 1, tensor<int64_t>({2, 0, 2})),
                                              x.index_select(-1, tensor<int64_t>({3})), x.gather(2, cols),
                                              gather(x, 0, argmax(b, 0, true).slice(2, 0, 3).transpose(1, 2)),
                                              cumsum(x, 1), (x > 0).cumsum(-1), bmm(x, b)};
                 },
                 {randn({2, 3, 4}), randn({2, 4, 5})}});
  // Eval-mode batch_norm (BatchNormalization), with and without weight and bias.
  out.push_back({"batch_norm", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // [2, 3, 4, 4]
                   const Tensor rv = v[2] * v[2] + 0.5;
                   return std::vector<Tensor>{batch_norm(x, v[1], rv, v[3], v[1], false, 0.1, 1e-3),
                                              batch_norm(x.flatten(2), v[1], rv)};
                 },
                 {randn({2, 3, 4, 4}), randn({3}), randn({3}), randn({3})}});
  // The decompositions: logsumexp (an -inf row), var/std, nll_loss (weight,
  // ignore_index), binary_cross_entropy(_with_logits) with each Reduction.
  out.push_back({"reduce_losses", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // f32 [4, 5]
                   const Tensor& y = v[1];  // i64 [4], in [0, 5), one -100
                   const Tensor t = sigmoid(x * 0.7);
                   const Tensor w = arange(1.0, 6.0) * 0.3;
                   const Tensor ninf = masked_fill(x, arange(0, 4).reshape({4, 1}) == 0, -INFINITY);
                   return std::vector<Tensor>{logsumexp(x, {1}), logsumexp(ninf, {1}, true), var(x, {0}), var(x),
                                              graph::std(x, {1}, false, true), nll_loss(log_softmax(x, 1), y, w),
                                              nll_loss(x, y, Tensor(), kNone),
                                              binary_cross_entropy(sigmoid(x), t, kSum),
                                              binary_cross_entropy_with_logits(x * 3.0, t, kNone, w)};
                 },
                 {randn({4, 5}), tensor<int64_t>({3, -100, 0, 4})}});
  // nn_functional.h's decompositions: group_norm, conv1d, the 1-d pools,
  // adaptive_avg_pool2d, pad (grow and crop), one_hot, the *_like factories.
  out.push_back({"nn_functional", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // f32 [2, 4, 6]
                   const Tensor& i = v[1];  // i64 [3] in [0, 5)
                   const Tensor img = x.reshape({2, 2, 2, 6});
                   return std::vector<Tensor>{group_norm(x, 2, v[2], v[2] * 0.5), conv1d(x, v[3], Tensor(), 2, 1),
                                              max_pool1d(x, 2), avg_pool1d(x, 3, 2, 1),
                                              adaptive_avg_pool2d(img, {1, 3}), pad(x, {1, -2, 0, 1}, 0.25),
                                              one_hot(i, 5), full_like(x, 3.0) + ones_like(x) + zeros_like(x)};
                 },
                 {randn({2, 4, 6}), tensor<int64_t>({4, 0, 2}), randn({4}), randn({3, 4, 3})}});
  // ConvTranspose: stride, asymmetric padding and output_padding, groups, with and without bias.
  out.push_back({"conv_transpose2d", [](const std::vector<Tensor>& v) {
                   return std::vector<Tensor>{conv_transpose2d(v[0], v[1], v[2], {2, 2}, {1, 0}, {1, 0}, 2),
                                              conv_transpose2d(v[0], v[1], Tensor(), {1, 2}, {0, 1}, {0, 1}, 2, {2, 1})};
                 },
                 {randn({2, 4, 3, 3}), randn({4, 3, 3, 3}), randn({6})}});
  // interpolate (nearest, bilinear with and without align_corners, linear by a
  // scale), adaptive pools with overlapping windows, type_as (Cast).
  out.push_back({"resize", [](const std::vector<Tensor>& v) {
                   const Tensor& x = v[0];  // f32 [1, 2, 5, 4]
                   return std::vector<Tensor>{interpolate(x, {7, 3}), interpolate(x, {3, 6}, kBilinear),
                                              interpolate(x, {8, 8}, kBilinear, true),
                                              interpolate_scale(x.flatten(2), 0.6, kLinear),
                                              adaptive_avg_pool2d(x, {3, 3}), adaptive_max_pool2d(x, {2, 3}),
                                              x.type_as(v[1])};
                 },
                 {randn({1, 2, 5, 4}), randn({2}, kFloat64)}});
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: onnx_cases DIR\n";
    return 2;
  }
  const std::string dir = argv[1];
  try {
    std::ofstream list(dir + "/cases.txt");
    for (Case& c : cases()) {
      TraceOptions opts;
      opts.name = c.name;
      TracedGraph tg = trace(c.fn, c.inputs, opts);
      if (!tg.warnings.empty()) throw Error(c.name + ": the trace froze a value-dependent decision");
      onnx::export_model(dir + "/" + c.name + ".onnx", *tg.graph, tg.params);
      const std::vector<Tensor> expected = c.fn(c.inputs);  // eager
      for (size_t i = 0; i < c.inputs.size(); ++i)
        write_npy(dir + "/" + c.name + ".in" + std::to_string(i) + ".npy", c.inputs[i]);
      for (size_t i = 0; i < expected.size(); ++i)
        write_npy(dir + "/" + c.name + ".out" + std::to_string(i) + ".npy", expected[i]);
      list << c.name << " " << c.inputs.size() << " " << expected.size() << "\n";
    }
    for (IrCase& c : ir_cases()) {
      const auto g = ir::parse(c.text);
      onnx::export_model(dir + "/" + c.name + ".onnx", *g);
      const std::vector<IValue> expected = run(*g, std::vector<IValue>(c.inputs.begin(), c.inputs.end()));
      for (size_t i = 0; i < c.inputs.size(); ++i)
        write_npy(dir + "/" + c.name + ".in" + std::to_string(i) + ".npy", c.inputs[i]);
      for (size_t i = 0; i < expected.size(); ++i)
        write_npy(dir + "/" + c.name + ".out" + std::to_string(i) + ".npy", as_tensor(expected[i]));
      list << c.name << " " << c.inputs.size() << " " << expected.size() << "\n";
    }
  } catch (const std::exception& e) {
    std::cerr << "onnx_cases: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
