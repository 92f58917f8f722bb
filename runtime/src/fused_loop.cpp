// The driver of generated fused loops (graph/detail/fused_loop.h): the
// split across cores and the walk over strided operands, compiled once.
//
// The walk is cpu::StridedLoop's with the operand count known only at run
// time: size-1 dims dropped, then dim d merged into d+1 where every operand
// is contiguous across the pair, so a broadcast row or a transposed view
// becomes a few long runs.
#include "graph/detail/fused_loop.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "graph/cpu_loop.h"
#include "graph/error.h"
#include "graph/parallel.h"
#include "graph/small_vector.h"

namespace graph::detail {

void run_fused_dense(const FusedKernels& k, int64_t numel, char* const* p) {
  cpu::parallel_for(numel, cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) { k.dense(begin, end, p, k.scalars); });
}

namespace {

// The operand's data as the kernel reads it: data_ptr<T> for the kernel's
// element type T, so a device tensor or another dtype gets its message.
char* operand_bytes(const Tensor& t, DType as) {
  switch (as) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name:                       \
    return bytes(t.data_ptr<type>());
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  throw Error("fused loop: unknown dtype");
}

// A StridedLoop over n operands: sizes_[d] and strides_[d * n + k].
class Walk {
 public:
  // stride(k, d): operand k's element stride along dim d of shape.
  template <class S>
  Walk(const Shape& shape, size_t n, S&& stride) : n_(n) {
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) numel_ = 0;
      if (shape[d] == 1) continue;
      bool merge = !sizes_.empty();
      for (size_t k = 0; merge && k < n_; ++k) merge = at(sizes_.size() - 1, k) == stride(k, d) * shape[d];
      if (merge) {
        sizes_.back() *= shape[d];
        for (size_t k = 0; k < n_; ++k) at(sizes_.size() - 1, k) = stride(k, d);
        continue;
      }
      sizes_.push_back(shape[d]);
      for (size_t k = 0; k < n_; ++k) strides_.push_back(stride(k, d));
    }
    if (numel_ != 0)
      for (int64_t s : sizes_) numel_ *= s;
  }

  int64_t numel() const { return numel_; }

  bool unit_stride() const {
    if (sizes_.size() > 1) return false;
    return std::all_of(strides_.begin(), strides_.end(), [](int64_t s) { return s == 1; });
  }

  // f(len, off, inner) for each innermost run in the flat elements
  // [begin, end): operand k's element i at off[k] + i * inner[k].
  template <class F>
  void run_range(int64_t begin, int64_t end, F&& f) const {
    SmallVector<int64_t, 16> off(n_, 0);
    if (begin >= end || numel_ == 0) return;
    if (sizes_.empty()) {
      f(int64_t{1}, off.data(), off.data());
      return;
    }
    const size_t nd = sizes_.size();
    SmallVector<int64_t, 8> counter(nd, 0);
    int64_t rest = begin;
    for (size_t d = nd; d-- > 0;) {
      counter[d] = rest % sizes_[d];
      rest /= sizes_[d];
      for (size_t k = 0; k < n_; ++k) off[k] += counter[d] * at(d, k);
    }
    const int64_t inner = sizes_[nd - 1];
    const int64_t* inner_st = &strides_[(nd - 1) * n_];
    for (int64_t pos = begin; pos < end;) {
      const int64_t len = std::min(inner - counter[nd - 1], end - pos);
      f(len, off.data(), inner_st);
      pos += len;
      for (size_t k = 0; k < n_; ++k) off[k] -= counter[nd - 1] * inner_st[k];
      counter[nd - 1] = 0;
      for (size_t d = nd - 1; d-- > 0;) {
        for (size_t k = 0; k < n_; ++k) off[k] += at(d, k);
        if (++counter[d] < sizes_[d]) break;
        for (size_t k = 0; k < n_; ++k) off[k] -= at(d, k) * sizes_[d];
        counter[d] = 0;
      }
    }
  }

 private:
  int64_t& at(size_t d, size_t k) { return strides_[d * n_ + k]; }
  int64_t at(size_t d, size_t k) const { return strides_[d * n_ + k]; }

  size_t n_;
  SmallVector<int64_t, 8> sizes_;
  SmallVector<int64_t, 32> strides_;
  int64_t numel_ = 1;
};

// Runs at least this long whose operands step by 0 or 1 go to the dense
// kernel with the stride-0 operands spread (below); shorter ones keep the
// strided kernel.
constexpr int64_t kSpreadMin = 16;

// Copies the one element at `src` `len` times to `dst` (element size `esize`).
void spread(char* dst, const char* src, int64_t len, int64_t esize) {
  auto fill = [&](auto tag) {
    using T = decltype(tag);
    T v;
    std::memcpy(&v, src, sizeof(T));
    std::fill_n(reinterpret_cast<T*>(dst), len, v);
  };
  switch (esize) {
    case 1: return fill(uint8_t{});
    case 2: return fill(uint16_t{});
    case 4: return fill(uint32_t{});
    default: return fill(uint64_t{});
  }
}

// A run where every operand steps by 1 or by 0 (an input broadcast along
// the run, as `x * x.sum(1, true)`), for the dense kernel: each stride-0
// input is spread into this thread's scratch and p points there. The
// strided kernel is scalar code; the dense one is vectorized. Outputs are
// fresh dense buffers, so only inputs have stride 0.
bool spread_run(int64_t len, const int64_t* st, const SmallVector<int64_t, 16>& esize, SmallVector<char*, 16>& p,
                std::vector<char>& scratch) {
  if (len < kSpreadMin) return false;
  int64_t bytes_needed = 0;
  for (size_t j = 0; j < p.size(); ++j) {
    if (st[j] != 0 && st[j] != 1) return false;
    if (st[j] == 0) bytes_needed += len * esize[j];
  }
  if (static_cast<int64_t>(scratch.size()) < bytes_needed) scratch.resize(static_cast<size_t>(bytes_needed));
  char* at = scratch.data();
  for (size_t j = 0; j < p.size(); ++j) {
    if (st[j] != 0) continue;
    spread(at, p[j], len, esize[j]);
    p[j] = at;
    at += len * esize[j];
  }
  return true;
}

}  // namespace

void run_fused_strided(const FusedKernels& k, const Shape& shape, std::initializer_list<const Tensor*> operands) {
  const size_t n = operands.size();
  SmallVector<char*, 16> base;
  SmallVector<int64_t, 16> esize;
  for (const Tensor* t : operands) {
    base.push_back(operand_bytes(*t, k.dtypes[base.size()]));
    esize.push_back(static_cast<int64_t>(element_size(t->dtype())));
  }
  // Every operand's broadcast strides, flat: [k * rank + d]. No heap for
  // the usual sizes (a graph's second call allocates nothing).
  const size_t rank = shape.size();
  SmallVector<int64_t, 64> flat;
  for (const Tensor* t : operands) {
    const Shape st = cpu::broadcast_strides(*t, shape);
    for (int64_t s : st) flat.push_back(s);
  }
  const Walk walk(shape, n, [&](size_t k, size_t d) { return flat[k * rank + d]; });
  if (walk.unit_stride()) {
    run_fused_dense(k, walk.numel(), base.data());
    return;
  }
  cpu::parallel_for(walk.numel(), cpu::kElementwiseGrain, [&](int64_t begin, int64_t end) {
    SmallVector<char*, 16> p(n, nullptr);
    // Per thread, it grows to the longest spread run, then allocates no more.
    thread_local std::vector<char> scratch;
    std::vector<char>& spread_to = scratch;  // one TLS lookup per range, not per run
    walk.run_range(begin, end, [&](int64_t len, const int64_t* off, const int64_t* st) {
      bool unit = true;
      for (size_t j = 0; j < n; ++j) {
        p[j] = base[j] + off[j] * esize[j];
        unit = unit && st[j] == 1;
      }
      if (unit || spread_run(len, st, esize, p, spread_to)) k.dense(0, len, p.data(), k.scalars);
      else k.strided(len, p.data(), st, k.scalars);
    });
  });
}

}  // namespace graph::detail
