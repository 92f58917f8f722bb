#pragma once
// SmallVector<T, N>: a vector of trivially copyable T that keeps up to N
// elements inline and only goes to the heap beyond. Tensor shapes and
// strides are SmallVector<int64_t, 6>, so making, copying and viewing a
// tensor of up to six dims allocates nothing for its geometry (what LibTorch
// does with its SmallVector / IntArrayRef). The interface is the part of
// std::vector the code base uses; iterators are pointers.
#include <algorithm>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <new>
#include <stdexcept>
#include <type_traits>
#include <vector>

namespace graph {

template <class T, size_t N>
class SmallVector {
  static_assert(std::is_trivially_copyable_v<T>, "SmallVector holds trivially copyable values");

 public:
  using value_type = T;
  using size_type = size_t;
  using iterator = T*;
  using const_iterator = const T*;
  using reference = T&;
  using const_reference = const T&;

  SmallVector() noexcept {}  // user-provided: value-initialization leaves the inline buffer unwritten
  explicit SmallVector(size_t n, const T& v = T()) { assign(n, v); }
  SmallVector(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  SmallVector(It first, It last) {
    assign(first, last);
  }
  SmallVector(const std::vector<T>& v) { assign(v.begin(), v.end()); }  // NOLINT: implicit, like the vector it replaces
  SmallVector(const SmallVector& o) { copy_from(o); }
  SmallVector(SmallVector&& o) noexcept { steal(o); }
  SmallVector& operator=(const SmallVector& o) {
    if (this != &o) copy_from(o);
    return *this;
  }
  SmallVector& operator=(SmallVector&& o) noexcept {
    if (this != &o) {
      release();
      steal(o);
    }
    return *this;
  }
  SmallVector& operator=(std::initializer_list<T> l) {
    assign(l.begin(), l.end());
    return *this;
  }
  ~SmallVector() { release(); }

  operator std::vector<T>() const { return std::vector<T>(begin(), end()); }  // NOLINT

  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return cap_; }
  T* data() { return data_; }
  const T* data() const { return data_; }
  T* begin() { return data_; }
  T* end() { return data_ + size_; }
  const T* begin() const { return data_; }
  const T* end() const { return data_ + size_; }
  const T* cbegin() const { return data_; }
  const T* cend() const { return data_ + size_; }
  std::reverse_iterator<T*> rbegin() { return std::reverse_iterator<T*>(end()); }
  std::reverse_iterator<T*> rend() { return std::reverse_iterator<T*>(begin()); }
  std::reverse_iterator<const T*> rbegin() const { return std::reverse_iterator<const T*>(end()); }
  std::reverse_iterator<const T*> rend() const { return std::reverse_iterator<const T*>(begin()); }

  T& operator[](size_t i) { return data_[i]; }
  const T& operator[](size_t i) const { return data_[i]; }
  T& at(size_t i) {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  const T& at(size_t i) const {
    if (i >= size_) throw std::out_of_range("SmallVector::at");
    return data_[i];
  }
  T& front() { return data_[0]; }
  const T& front() const { return data_[0]; }
  T& back() { return data_[size_ - 1]; }
  const T& back() const { return data_[size_ - 1]; }

  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max(n, cap_ * 2);
    T* p = static_cast<T*>(std::malloc(cap * sizeof(T)));
    if (!p) throw std::bad_alloc();
    if (size_) std::memcpy(p, data_, size_ * sizeof(T));
    if (data_ != inline_) std::free(data_);
    data_ = p;
    cap_ = cap;
  }
  void clear() { size_ = 0; }
  void resize(size_t n, const T& v = T()) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data_[i] = v;
    size_ = n;
  }
  void assign(size_t n, const T& v) {
    size_ = 0;
    resize(n, v);
  }
  template <class It>
  void assign(It first, It last) {
    const size_t n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data_);
    size_ = n;
  }
  void push_back(const T& v) {
    if (size_ == cap_) {
      T copy = v;  // v may live inside this vector
      reserve(size_ + 1);
      data_[size_++] = copy;
      return;
    }
    data_[size_++] = v;
  }
  template <class... A>
  T& emplace_back(A&&... a) {
    push_back(T(std::forward<A>(a)...));
    return back();
  }
  void pop_back() { --size_; }

  T* insert(const T* pos, const T& v) { return insert(pos, &v, &v + 1); }
  T* insert(const T* pos, size_t n, const T& v) {
    const size_t at = static_cast<size_t>(pos - data_);
    const T copy = v;
    open_gap(at, n);
    std::fill(data_ + at, data_ + at + n, copy);
    return data_ + at;
  }
  template <class It, class = std::enable_if_t<!std::is_integral_v<It>>>
  T* insert(const T* pos, It first, It last) {
    const size_t at = static_cast<size_t>(pos - data_);
    const size_t n = static_cast<size_t>(std::distance(first, last));
    SmallVector tmp(first, last);  // the source may alias this vector
    open_gap(at, n);
    std::copy(tmp.begin(), tmp.end(), data_ + at);
    return data_ + at;
  }
  T* insert(const T* pos, std::initializer_list<T> l) { return insert(pos, l.begin(), l.end()); }
  T* erase(const T* pos) { return erase(pos, pos + 1); }
  T* erase(const T* first, const T* last) {
    const size_t at = static_cast<size_t>(first - data_), n = static_cast<size_t>(last - first);
    std::memmove(data_ + at, data_ + at + n, (size_ - at - n) * sizeof(T));
    size_ -= n;
    return data_ + at;
  }

  friend bool operator==(const SmallVector& a, const SmallVector& b) {
    if (a.size_ != b.size_) return false;
    for (size_t i = 0; i < a.size_; ++i)  // a short loop: no call to memcmp for a few dims
      if (!(a.data_[i] == b.data_[i])) return false;
    return true;
  }
  friend bool operator!=(const SmallVector& a, const SmallVector& b) { return !(a == b); }
  friend bool operator<(const SmallVector& a, const SmallVector& b) {
    return std::lexicographical_compare(a.begin(), a.end(), b.begin(), b.end());
  }

 private:
  void open_gap(size_t at, size_t n) {
    reserve(size_ + n);
    std::memmove(data_ + at + n, data_ + at, (size_ - at) * sizeof(T));
    size_ += n;
  }
  void release() {
    if (data_ != inline_) std::free(data_);
    data_ = inline_;
    cap_ = N;
    size_ = 0;
  }
  // Up to N elements: the whole inline array's bytes, a fixed-size copy the
  // compiler inlines (a Tensor copy or move copies two shapes), instead of a
  // call to memmove for size_ elements. Every buffer holds at least N. The
  // bytes past size_ may be unset: copying them is harmless, and GCC's
  // -Wmaybe-uninitialized says so at every inlined Tensor move.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
  void copy_from(const SmallVector& o) {
    if (o.size_ <= N) {
      std::memcpy(static_cast<void*>(data_), static_cast<const void*>(o.data_), sizeof inline_);
    } else if (o.size_ <= cap_) {
      std::memcpy(static_cast<void*>(data_), static_cast<const void*>(o.data_), o.size_ * sizeof(T));
    } else {
      assign(o.begin(), o.end());
      return;
    }
    size_ = o.size_;
  }
  void steal(SmallVector& o) {
    if (o.data_ == o.inline_) {
      std::memcpy(static_cast<void*>(inline_), static_cast<const void*>(o.inline_), sizeof inline_);
      data_ = inline_;
      cap_ = N;
    } else {
      data_ = o.data_;
      cap_ = o.cap_;
      o.data_ = o.inline_;
      o.cap_ = N;
    }
    size_ = o.size_;
    o.size_ = 0;
  }
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

  T inline_[N];
  T* data_ = inline_;
  size_t size_ = 0;
  size_t cap_ = N;
};

}  // namespace graph
