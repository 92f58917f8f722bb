// conv2d on the CPU through oneDNN's convolution primitives.
//
// Why not im2col + GEMM (conv.cpp): oneDNN's direct convolutions (brgconv on
// AVX-512) read each input element once per kernel tap from cache instead of
// writing a kH*kW times larger column matrix, and add the bias and a relu
// while the output tile is in registers. They want blocked layouts
// (format_tag::any): the NCHW input is reordered in, the output reordered
// out (a plain NCHW destination makes oneDNN 2.6 pick its own im2col
// "gemm:jit", 2-3x slower on LeNet's layers).
//
// Caches, both bounded (least recently used first out), both shared by all
// threads under one mutex:
//  - primitives, per geometry, direction, post-ops and OpenMP team size (the
//    kernels block the work for the team they were made for);
//  - weights in a primitive's layout, reordered once per Tensor::version
//    (dnnl_cache.h, shared with packed_gemm.cpp): an optimizer step or an
//    in-place write bumps the version, so the next call reorders again.
//
// Under a bf16 autocast scope (graph/autocast.h) the forward takes its input
// and weight in bf16 (converted by the same reorders; the weight's bf16 copy
// is kept per version like the float one) and sums into float32; the bias
// and relu stay float32. The backward primitives are float32 always.
//
// Numerics: the primitive sums over (c, kh, kw) in another order than the
// GEMM, a few ulps of float32 from conv.cpp's result.
#include "dnnl_conv.h"

#include <dnnl.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "blas.h"
#include "dnnl_cache.h"
#include "dnnl_context.h"
#include "graph/autocast.h"
#include "graph/detail/conv_stats.h"
#include "graph/parallel.h"
#include "storage.h"

namespace graph::cpu {

namespace {

using dnnl::memory;
using tag = memory::format_tag;
using dt = memory::data_type;

constexpr size_t kMaxPrimitives = 64;
constexpr size_t kMaxWeights = 32;
constexpr size_t kMaxWeightBytes = size_t{256} << 20;

enum class Dir : uint8_t { Forward, BackwardData, BackwardWeights };

struct Stats {
  std::atomic<uint64_t> forward{0}, backward_data{0}, backward_weights{0}, weight_reorders{0}, weight_hits{0},
      refused{0};
};
Stats& stats() {
  static Stats s;
  return s;
}

using dnnl_context::engine;
using dnnl_context::stream;

struct Key {
  DnnlConvShape s;
  Dir dir;
  bool bias, relu;
  int threads;
  bool bf16;  // forward under bf16 autocast: bf16 input and weight, float32 sums and output
  bool operator==(const Key& o) const {
    const auto t = [](const Key& k) {
      const DnnlConvShape& g = k.s;
      return std::make_tuple(g.N, g.C, g.H, g.W, g.Cout, g.kH, g.kW, g.sH, g.sW, g.pH, g.pW, g.dH, g.dW, g.groups,
                             k.dir, k.bias, k.relu, k.threads, k.bf16);
    };
    return t(*this) == t(o);
  }
};

// One primitive with the layouts it chose for its operands: `src` is the
// input (x, or diff_dst for backward data), `wts` the weight (or diff
// weights), `dst` the output (or diff_src / diff_dst read by backward
// weights: see the run_* functions).
struct Prim {
  dnnl::primitive prim;
  memory::desc src, wts, dst;

  // The reorder between an operand's plain layout and the one chosen, made
  // on first use and kept: making a reorder costs more than a small
  // convolution (LeNet's layers, conv1d over short sequences). Executing one
  // from several threads at once is allowed.
  dnnl::reorder reorder(const memory::desc& from, const memory::desc& to) {
    std::lock_guard<std::mutex> lock(mu);
    for (const auto& [f, t, r] : reorders)
      if (f == from && t == to) return r;
    reorders.emplace_back(from, to, dnnl::reorder(dnnl::reorder::primitive_desc(engine(), from, engine(), to)));
    return std::get<2>(reorders.back());
  }

 private:
  std::mutex mu;
  std::vector<std::tuple<memory::desc, memory::desc, dnnl::reorder>> reorders;
};

struct Cache {
  std::mutex mu;
  dnnl_cache::Primitives<Key, Prim> prims{kMaxPrimitives};
  dnnl_cache::Weights weights{kMaxWeights, kMaxWeightBytes};
};
Cache& cache() {
  engine();  // made first, so destroyed after the cache's primitives and memory
  static Cache c;
  return c;
}

memory::desc plain_x(const DnnlConvShape& s) { return {{s.N, s.C, s.H, s.W}, dt::f32, tag::nchw}; }
memory::desc plain_y(const DnnlConvShape& s) { return {{s.N, s.Cout, s.Ho, s.Wo}, dt::f32, tag::nchw}; }
memory::desc plain_w(const DnnlConvShape& s) {
  if (s.groups == 1) return {{s.Cout, s.C, s.kH, s.kW}, dt::f32, tag::oihw};
  return {{s.groups, s.Cout / s.groups, s.C / s.groups, s.kH, s.kW}, dt::f32, tag::goihw};
}
memory::desc any_like(const memory::desc& d, dt type = dt::f32) { return {d.dims(), type, tag::any}; }

// The forward descriptor, for the forward itself and as the backward's hint.
dnnl::convolution_forward::primitive_desc forward_pd(const DnnlConvShape& s, bool bias, bool relu,
                                                     dnnl::prop_kind prop, bool bf16 = false) {
  const memory::desc b = bias ? memory::desc({s.Cout}, dt::f32, tag::a) : memory::desc();
  const dt in = bf16 ? dt::bf16 : dt::f32;
  dnnl::convolution_forward::desc d(prop, dnnl::algorithm::convolution_direct, any_like(plain_x(s), in),
                                    any_like(plain_w(s), in), b, any_like(plain_y(s)), {s.sH, s.sW},
                                    {s.dH - 1, s.dW - 1}, {s.pH, s.pW}, {s.pH, s.pW});
  dnnl::primitive_attr attr;
  if (relu) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, dnnl::algorithm::eltwise_relu, 0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  return {d, attr, engine()};
}

std::shared_ptr<Prim> make_prim(const Key& k) {
  auto p = std::make_shared<Prim>();
  const DnnlConvShape& s = k.s;
  const memory::dims strides{s.sH, s.sW}, dil{s.dH - 1, s.dW - 1}, pad{s.pH, s.pW};
  if (k.dir == Dir::Forward) {
    const auto pd = forward_pd(s, k.bias, k.relu, dnnl::prop_kind::forward_inference, k.bf16);
    p->prim = dnnl::convolution_forward(pd);
    p->src = pd.src_desc(), p->wts = pd.weights_desc(), p->dst = pd.dst_desc();
  } else if (k.dir == Dir::BackwardData) {
    const auto hint = forward_pd(s, false, false, dnnl::prop_kind::forward_training);
    dnnl::convolution_backward_data::desc d(dnnl::algorithm::convolution_direct, any_like(plain_x(s)),
                                            any_like(plain_w(s)), any_like(plain_y(s)), strides, dil, pad, pad);
    const dnnl::convolution_backward_data::primitive_desc pd(d, engine(), hint);
    p->prim = dnnl::convolution_backward_data(pd);
    p->src = pd.diff_dst_desc(), p->wts = pd.weights_desc(), p->dst = pd.diff_src_desc();
  } else {
    const auto hint = forward_pd(s, k.bias, false, dnnl::prop_kind::forward_training);
    const memory::desc b = k.bias ? memory::desc({s.Cout}, dt::f32, tag::a) : memory::desc();
    dnnl::convolution_backward_weights::desc d(dnnl::algorithm::convolution_direct, any_like(plain_x(s)),
                                               any_like(plain_w(s)), b, any_like(plain_y(s)), strides, dil, pad,
                                               pad);
    const dnnl::convolution_backward_weights::primitive_desc pd(d, engine(), hint);
    p->prim = dnnl::convolution_backward_weights(pd);
    p->src = pd.src_desc(), p->wts = pd.diff_weights_desc(), p->dst = pd.diff_dst_desc();
  }
  return p;
}

// Under c.mu: `w` (dense OIHW) in layout `desc`, reordered at most once per
// version.
std::shared_ptr<dnnl_cache::Weight> reordered_weight(Cache& c, const Tensor& w, const memory::desc& desc,
                                                     const memory::desc& plain) {
  if (std::shared_ptr<dnnl_cache::Weight> e = c.weights.find(w, desc)) {
    stats().weight_hits.fetch_add(1, std::memory_order_relaxed);
    return e;
  }
  std::shared_ptr<dnnl_cache::Weight> e = c.weights.add(w, desc);
  c.weights.fill(*e, plain, w.data_ptr<float>());
  stats().weight_reorders.fetch_add(1, std::memory_order_relaxed);
  return e;
}

// A per-thread buffer for an operand in a blocked layout (slot 0..2), so a
// steady-state call allocates nothing.
void* scratch(int slot, size_t bytes) {
  thread_local std::vector<std::unique_ptr<char[]>> bufs(3);
  thread_local std::vector<size_t> sizes(3, 0);
  if (sizes[slot] < bytes) {
    bufs[slot].reset(new char[bytes + 64]);
    sizes[slot] = bytes;
  }
  // 64-byte aligned, as oneDNN's own allocations.
  const auto p = reinterpret_cast<uintptr_t>(bufs[slot].get());
  return reinterpret_cast<void*>((p + 63) & ~uintptr_t{63});
}

// The tensor `data` (dense, layout `plain`) as a memory of layout `want`:
// itself when they agree, else a scratch copy (reordered in when `read`).
memory operand(Prim& p, const memory::desc& want, const memory::desc& plain, float* data, int slot, bool read) {
  if (want == plain) return memory(plain, engine(), data);
  memory m(want, engine(), scratch(slot, want.get_size()));
  if (read) {
    memory user(plain, engine(), data);
    p.reorder(plain, want).execute(stream(), user, m);
  }
  return m;
}

void write_back(Prim& p, const memory& m, const memory::desc& plain, float* data) {
  if (m.get_desc() == plain) return;
  memory user(plain, engine(), data);
  p.reorder(m.get_desc(), plain).execute(stream(), const_cast<memory&>(m), user);
}

std::atomic<bool> enabled{true};

bool supported(const DnnlConvShape& s) {
  return enabled.load(std::memory_order_relaxed) && s.N > 0 && s.C > 0 && s.Cout > 0 && s.Ho > 0 && s.Wo > 0 && s.H > 0 && s.W > 0;
}

// Runs `body` with the primitive for `k`; false when oneDNN refuses.
template <class F>
bool with_primitive(const Key& k, F&& body) {
  if (!supported(k.s)) return false;
  try {
    use_blas_threads();
    Cache& c = cache();
    std::shared_ptr<Prim> p;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      p = c.prims.get(k, make_prim);
    }
    body(*p, c);
    stream().wait();
    return true;
  } catch (const dnnl::error&) {
    stats().refused.fetch_add(1, std::memory_order_relaxed);
    return false;
  }
}

}  // namespace

bool dnnl_conv_forward(const DnnlConvShape& s, const Tensor& x, const Tensor& w, const Tensor& bias, bool relu,
                       const Tensor& out) {
  const Key k{s, Dir::Forward, bias.defined(), relu, num_threads(), autocast_bf16()};
  return with_primitive(k, [&](Prim& p, Cache& c) {
    std::shared_ptr<dnnl_cache::Weight> wr;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      wr = reordered_weight(c, w, p.wts, plain_w(s));
    }
    memory src = operand(p, p.src, plain_x(s), x.data_ptr<float>(), 0, true);
    memory dst = operand(p, p.dst, plain_y(s), out.data_ptr<float>(), 1, false);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wr->mem}, {DNNL_ARG_DST, dst}};
    if (bias.defined()) args[DNNL_ARG_BIAS] = memory({{s.Cout}, dt::f32, tag::a}, engine(), bias.data_ptr<float>());
    p.prim.execute(stream(), args);
    write_back(p, dst, plain_y(s), out.data_ptr<float>());
    stats().forward.fetch_add(1, std::memory_order_relaxed);
    if (k.bf16) graph::detail::count_autocast_conv();
  });
}

bool dnnl_conv_backward_data(const DnnlConvShape& s, const Tensor& w, const Tensor& go, const Tensor& gx) {
  const Key k{s, Dir::BackwardData, false, false, num_threads(), false};
  return with_primitive(k, [&](Prim& p, Cache& c) {
    std::shared_ptr<dnnl_cache::Weight> wr;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      wr = reordered_weight(c, w, p.wts, plain_w(s));
    }
    memory dy = operand(p, p.src, plain_y(s), go.data_ptr<float>(), 0, true);
    memory dx = operand(p, p.dst, plain_x(s), gx.data_ptr<float>(), 1, false);
    p.prim.execute(stream(), {{DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_WEIGHTS, wr->mem}, {DNNL_ARG_DIFF_SRC, dx}});
    write_back(p, dx, plain_x(s), gx.data_ptr<float>());
    stats().backward_data.fetch_add(1, std::memory_order_relaxed);
  });
}

bool dnnl_conv_backward_weights(const DnnlConvShape& s, const Tensor& x, const Tensor& go, const Tensor& gw,
                                const Tensor& gb) {
  const Key k{s, Dir::BackwardWeights, gb.defined(), false, num_threads(), false};
  return with_primitive(k, [&](Prim& p, Cache&) {
    memory src = operand(p, p.src, plain_x(s), x.data_ptr<float>(), 0, true);
    memory dy = operand(p, p.dst, plain_y(s), go.data_ptr<float>(), 1, true);
    memory dw = operand(p, p.wts, plain_w(s), gw.data_ptr<float>(), 2, false);
    std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_DIFF_DST, dy}, {DNNL_ARG_DIFF_WEIGHTS, dw}};
    if (gb.defined())
      args[DNNL_ARG_DIFF_BIAS] = memory({{s.Cout}, dt::f32, tag::a}, engine(), gb.data_ptr<float>());
    p.prim.execute(stream(), args);
    write_back(p, dw, plain_w(s), gw.data_ptr<float>());
    stats().backward_weights.fetch_add(1, std::memory_order_relaxed);
  });
}

}  // namespace graph::cpu

namespace graph::detail {

DnnlConvStats dnnl_conv_stats() {
  const auto& s = cpu::stats();
  std::lock_guard<std::mutex> lock(cpu::cache().mu);
  return DnnlConvStats{s.forward.load(),         s.backward_data.load(), s.backward_weights.load(),
                       s.weight_reorders.load(), s.weight_hits.load(),   s.refused.load(),
                       cpu::cache().weights.size()};
}

void set_dnnl_conv_enabled(bool on) { cpu::enabled.store(on, std::memory_order_relaxed); }

void clear_dnnl_conv_cache() {
  cpu::Cache& c = cpu::cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.weights.clear();
  c.prims.clear();
}

}  // namespace graph::detail
