// Packed-weight GEMM for the float32 linear layers of static graphs.
//
// dnnl_sgemm (blas.cpp, what eager matmul and linear use) repacks both
// operands on every call. oneDNN's matmul primitive instead takes its weights
// in a layout of its choosing (format_tag::any): the weight is reordered into
// it once and the packed copy is kept here, so a call only streams the
// activations, and the bias (and a ReLU or an exact GELU, as a post-op) are applied while the
// output tile is still in registers.
//
// The packed copy is valid while the weight is unchanged (the version rule
// of dnnl_cache.h: an optimizer step or add_ on the weight makes the next
// call pack again). Primitives and packed weights are kept in dnnl_cache.h's
// bounded caches.
//
// Under a bf16 autocast scope (graph/autocast.h) the primitive takes bf16
// activations (rounded per call) and a bf16 packed copy of the weight, made
// at the weight version's first use and kept like the float one; sums and
// output stay float32.
//
// Numerics: the primitive sums over k in another order than dnnl_sgemm, so
// static results differ from eager ones in the last bits (about 1e-6
// relative for these sizes); see docs/bench/2026-11-25.md, "Static vs eager".
#include "packed_gemm.h"

#include <dnnl.hpp>

#include <atomic>
#include <climits>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "blas.h"
#include "dnnl_cache.h"
#include "dnnl_context.h"
#include "graph/autocast.h"
#include "graph/detail/generated_support.h"
#include "graph/parallel.h"
#include "storage.h"

namespace graph {
namespace cpu {

namespace {

using dnnl::memory;

constexpr size_t kMaxPrimitives = 64;
constexpr size_t kMaxWeights = 32;
constexpr size_t kMaxWeightBytes = size_t{512} << 20;

struct Stats {
  std::atomic<uint64_t> calls{0}, hits{0}, packs{0}, unpacked{0};
};
Stats& stats() {
  static Stats s;
  return s;
}

using dnnl_context::engine;
using dnnl_context::stream;

// A primitive for one problem: `packed` takes the weight in its own layout
// (format_tag::any), else in the user's layout, strides (ws1, ws0).
struct PrimKey {
  int64_t rows, k, m;
  bool bias;
  PostOp post;
  int threads;
  bool packed;
  int64_t ws0, ws1;
  bool bf16;  // under bf16 autocast: bf16 activations and packed weight, float32 sums and output
  bool operator==(const PrimKey&) const = default;
};

// The memory objects of one execution (their data handles are set per call),
// kept so that a steady-state call creates none.
struct ArgSet {
  memory src, wts, bias, dst;
};

struct Prim {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul prim;
  std::vector<std::unique_ptr<ArgSet>> free_sets;  // under Cache::mu
};

struct Cache {
  std::mutex mu;
  dnnl_cache::Primitives<PrimKey, Prim> prims{kMaxPrimitives};
  dnnl_cache::Weights weights{kMaxWeights, kMaxWeightBytes};
};
Cache& cache() {
  engine();  // made first, so destroyed after the cache's primitives and memory
  static Cache c;
  return c;
}

std::shared_ptr<Prim> make_primitive(const PrimKey& key) {
  const memory::data_type in = key.bf16 ? memory::data_type::bf16 : memory::data_type::f32;
  const memory::desc src({key.rows, key.k}, in, memory::format_tag::ab);
  const memory::desc wts =
      key.packed ? memory::desc({key.k, key.m}, in, memory::format_tag::any)
                 : memory::desc({key.k, key.m}, memory::data_type::f32, memory::dims{key.ws1, key.ws0});
  const memory::desc bias = key.bias ? memory::desc({1, key.m}, memory::data_type::f32, memory::format_tag::ab)
                                     : memory::desc();
  const memory::desc dst({key.rows, key.m}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::primitive_attr attr;
  if (key.post != PostOp::None) {
    dnnl::post_ops ops;
    ops.append_eltwise(1.0f, key.post == PostOp::Relu ? dnnl::algorithm::eltwise_relu : dnnl::algorithm::eltwise_gelu_erf,
                       0.0f, 0.0f);
    attr.set_post_ops(ops);
  }
  auto p = std::make_shared<Prim>();
  p->pd = dnnl::matmul::primitive_desc(dnnl::matmul::desc(src, wts, bias, dst), attr, engine());
  p->prim = dnnl::matmul(p->pd);
  return p;
}

// Under c.mu: the packed copy of `w` at its current version for layout
// `desc`. The first use of a weight version only records it (null is
// returned: the caller runs the primitive on the weight as it is, which gives
// the same bits); the second packs it, later ones hit. So a weight that
// changes after every use (training: an optimizer step between forward
// calls) never pays for a reorder it would use once.
// `pack_now`: pack at the first use too (a bf16 primitive cannot read the
// float32 weight as it is).
std::shared_ptr<dnnl_cache::Weight> packed_weight(Cache& c, const Tensor& w, const memory::desc& desc,
                                                  bool pack_now) {
  std::shared_ptr<dnnl_cache::Weight> e = c.weights.find(w, desc);
  if (e && e->filled) {
    stats().hits.fetch_add(1, std::memory_order_relaxed);
    return e;
  }
  if (!e) {
    e = c.weights.add(w, desc);
    if (!pack_now) {
      stats().unpacked.fetch_add(1, std::memory_order_relaxed);
      return nullptr;
    }
  }
  // The weight [m, k] as the primitive's [k, m] operand: strides swapped.
  const memory::desc user({w.size(1), w.size(0)}, memory::data_type::f32, memory::dims{w.stride(1), w.stride(0)});
  c.weights.fill(*e, user, w.data_ptr<float>());
  stats().packs.fetch_add(1, std::memory_order_relaxed);
  return e;
}

}  // namespace

bool packed_linear(const Tensor& x, const Tensor& weight, const Tensor& bias, PostOp post, const Tensor& out) {
  const int64_t rows = x.size(0), k = x.size(1), m = weight.size(0);
  // Fewer rows than this: dnnl_sgemm's matrix-vector kernels are faster.
  if (rows < kPackedGemmMinRows || k <= 0 || m <= 0 || rows > INT_MAX || k > INT_MAX || m > INT_MAX) return false;
  // The weight [m, k] as the primitive's [k, m] operand: strides swapped.
  const int64_t ws0 = weight.stride(0), ws1 = weight.stride(1);
  if (!((ws1 == 1 && ws0 >= k) || (ws0 == 1 && ws1 >= m))) return false;
  // Under bf16 autocast (graph/autocast.h): bf16 activations and a bf16
  // packed copy of the weight (packed at its first use), float32 sums.
  const bool bf16 = autocast_bf16();
  try {
    use_blas_threads();
    Cache& c = cache();
    std::shared_ptr<Prim> p;
    std::shared_ptr<dnnl_cache::Weight> w;
    std::unique_ptr<ArgSet> set;
    {
      std::lock_guard<std::mutex> lock(c.mu);
      stats().calls.fetch_add(1, std::memory_order_relaxed);
      const PrimKey key{rows, k, m, bias.defined(), post, num_threads(), true, 0, 0, bf16};
      p = c.prims.get(key, make_primitive);
      w = packed_weight(c, weight, p->pd.weights_desc(), bf16);
      if (!w && bf16) return false;  // not reached: bf16 packs at the first use
      if (!w) {
        PrimKey plain = key;
        plain.packed = false;
        plain.ws0 = ws0;
        plain.ws1 = ws1;
        p = c.prims.get(plain, make_primitive);
      }
      if (!p->free_sets.empty()) {
        set = std::move(p->free_sets.back());
        p->free_sets.pop_back();
      }
    }
    if (!set) {
      set = std::make_unique<ArgSet>();
      set->src = memory(p->pd.src_desc(), engine(), nullptr);
      set->dst = memory(p->pd.dst_desc(), engine(), nullptr);
      if (!w) set->wts = memory(p->pd.weights_desc(), engine(), nullptr);
      if (bias.defined()) set->bias = memory(p->pd.bias_desc(), engine(), nullptr);
    }
    if (bf16) {  // the activations rounded to bf16, per call
      thread_local std::vector<uint16_t> x16;
      if (x16.size() < static_cast<size_t>(rows * k)) x16.resize(static_cast<size_t>(rows * k));
      round_to_bf16(x.data_ptr<float>(), rows, k, x.stride(0), x16.data());
      set->src.set_data_handle(x16.data());
    } else {
      set->src.set_data_handle(x.data_ptr<float>());
    }
    set->dst.set_data_handle(out.data_ptr<float>());
    if (!w) set->wts.set_data_handle(weight.data_ptr<float>());
    if (bias.defined()) set->bias.set_data_handle(bias.data_ptr<float>());
    // The C entry point: arguments from the stack, no std::unordered_map.
    dnnl_exec_arg_t args[4] = {{DNNL_ARG_SRC, set->src.get()},
                               {DNNL_ARG_WEIGHTS, w ? w->mem.get() : set->wts.get()},
                               {DNNL_ARG_DST, set->dst.get()},
                               {DNNL_ARG_BIAS, bias.defined() ? set->bias.get() : nullptr}};
    const dnnl_status_t status = dnnl_primitive_execute(p->prim.get(), stream().get(), bias.defined() ? 4 : 3, args);
    {
      std::lock_guard<std::mutex> lock(c.mu);
      if (p->free_sets.size() < 4) p->free_sets.push_back(std::move(set));  // one per concurrent caller
    }
    if (status != dnnl_success || dnnl_stream_wait(stream().get()) != dnnl_success) return false;
    if (bf16) graph::detail::count_autocast_gemm();
    return true;
  } catch (const dnnl::error&) {
    return false;  // the caller's plain GEMM
  }
}

}  // namespace cpu

namespace detail {

PackedGemmStats packed_gemm_stats() {
  cpu::Cache& c = cpu::cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto& s = cpu::stats();
  return PackedGemmStats{s.calls.load(), s.hits.load(), s.packs.load(), s.unpacked.load(), c.weights.evictions(),
                         c.weights.size()};
}

void clear_packed_gemm_cache() {
  cpu::Cache& c = cpu::cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.weights.clear();
  c.prims.clear();
}

}  // namespace detail
}  // namespace graph
