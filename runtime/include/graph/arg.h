#pragma once
// GRAPH_ARG(type, name), LibTorch's TORCH_ARG: in an options class, a private
// member `name_` with a setter `name(v)` that returns *this (so that calls
// chain: Conv2dOptions(3, 8, 3).stride(2).bias(false)) and getters `name()`.
// Give the default after it: GRAPH_ARG(double, lr) = 1e-3;
#define GRAPH_ARG(T, name)                                        \
 public:                                                          \
  auto& name(const T& new_##name) {                               \
    this->name##_ = new_##name;                                   \
    return *this;                                                 \
  }                                                               \
  const T& name() const noexcept { return this->name##_; }        \
  T& name() noexcept { return this->name##_; }                    \
                                                                  \
 private:                                                         \
  T name##_
