#pragma once
// The CPU loop that every elementwise kernel runs on, eager and generated:
// N operands (operand 0 is usually the output) viewed at one broadcast shape,
// walked as innermost runs with per-operand offsets kept by increments, so no
// element index is ever divided. Adjacent dims that are contiguous for every
// operand are merged first; a fully contiguous loop is one run.
#include <algorithm>
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "graph/tensor.h"

namespace graph::cpu {

// The broadcast of `shapes` (NumPy rules); throws graph::Error naming `op`
// and every shape when they do not broadcast.
Shape broadcast_shapes(std::string_view op, const std::vector<Shape>& shapes);
Shape broadcast_shapes(std::string_view op, std::initializer_list<Shape> shapes);

// Element strides for reading `t` at `shape`, which `t` broadcasts to:
// stride 0 along broadcast dims (including leading dims `t` lacks).
Shape broadcast_strides(const Tensor& t, const Shape& shape);

template <size_t N>
class StridedLoop {
 public:
  using Offsets = std::array<int64_t, N>;

  StridedLoop(const Shape& shape, const std::array<Shape, N>& strides) {
    // Drop size-1 dims, then merge dim d into d+1 where every operand is
    // contiguous across the pair.
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] == 0) numel_ = 0;
      if (shape[d] == 1) continue;
      Offsets st{};
      for (size_t k = 0; k < N; ++k) st[k] = strides[k][d];
      if (!sizes_.empty()) {
        bool merge = true;
        for (size_t k = 0; k < N; ++k)
          merge = merge && strides_.back()[k] == st[k] * shape[d];
        if (merge) {
          sizes_.back() *= shape[d];
          strides_.back() = st;
          continue;
        }
      }
      sizes_.push_back(shape[d]);
      strides_.push_back(st);
    }
    if (numel_ != 0) {
      numel_ = 1;
      for (int64_t s : sizes_) numel_ *= s;
    }
  }

  int64_t numel() const { return numel_; }

  // True when the whole loop is one run and every operand has stride 1 or 0
  // in it: the kernel can use plain indexing.
  bool simple() const {
    if (sizes_.size() > 1) return false;
    if (sizes_.empty()) return true;
    for (int64_t s : strides_[0])
      if (s != 0 && s != 1) return false;
    return true;
  }

  // True when the whole loop is one run and every operand has stride 1: the
  // kernel can index all operands with the same i (the vectorizable case).
  bool unit_stride() const {
    if (sizes_.size() > 1) return false;
    if (sizes_.empty()) return true;
    for (int64_t s : strides_[0])
      if (s != 1) return false;
    return true;
  }

  // Calls f(n, offsets, inner_strides) for each innermost run of n elements;
  // element i of operand k in the run is at offsets[k] + i * inner_strides[k].
  template <class F>
  void run(F&& f) const {
    if (numel_ == 0) return;
    Offsets zero{};
    if (sizes_.empty()) {
      f(int64_t{1}, zero, zero);
      return;
    }
    const size_t nd = sizes_.size();
    const int64_t inner = sizes_[nd - 1];
    const Offsets& inner_strides = strides_[nd - 1];
    SmallVector<int64_t, 8> counter(nd, 0);
    Offsets off{};
    for (int64_t done = 0; done < numel_; done += inner) {
      f(inner, off, inner_strides);
      // Advance the outer counter (dims nd-2 .. 0) with carries.
      for (size_t d = nd - 1; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) off[k] += strides_[d][k];
        if (++counter[d] < sizes_[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= strides_[d][k] * sizes_[d];
        counter[d] = 0;
      }
    }
  }

  // run() restricted to the flat elements [begin, end) in loop order, so
  // disjoint ranges can run on different threads. The start position is
  // found with one division per dim, once per range; the first and last runs
  // may be partial.
  template <class F>
  void run_range(int64_t begin, int64_t end, F&& f) const {
    if (begin >= end || numel_ == 0) return;
    Offsets off{};
    if (sizes_.empty()) {
      f(int64_t{1}, off, off);
      return;
    }
    const size_t nd = sizes_.size();
    SmallVector<int64_t, 8> counter(nd, 0);
    int64_t rest = begin;
    for (size_t d = nd; d-- > 0;) {
      counter[d] = rest % sizes_[d];
      rest /= sizes_[d];
      for (size_t k = 0; k < N; ++k) off[k] += counter[d] * strides_[d][k];
    }
    const int64_t inner = sizes_[nd - 1];
    const Offsets& inner_strides = strides_[nd - 1];
    for (int64_t pos = begin; pos < end;) {
      const int64_t len = std::min(inner - counter[nd - 1], end - pos);
      f(len, off, inner_strides);
      pos += len;
      // Step to the start of the next run: rewind the inner dim, carry outward.
      for (size_t k = 0; k < N; ++k) off[k] -= counter[nd - 1] * inner_strides[k];
      counter[nd - 1] = 0;
      for (size_t d = nd - 1; d-- > 0;) {
        for (size_t k = 0; k < N; ++k) off[k] += strides_[d][k];
        if (++counter[d] < sizes_[d]) break;
        for (size_t k = 0; k < N; ++k) off[k] -= strides_[d][k] * sizes_[d];
        counter[d] = 0;
      }
    }
  }

 private:
  SmallVector<int64_t, 8> sizes_;
  SmallVector<Offsets, 8> strides_;
  int64_t numel_ = 1;
};

}  // namespace graph::cpu
