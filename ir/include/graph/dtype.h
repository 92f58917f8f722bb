#pragma once
// Element types shared by the runtime and the IR.
#include <cstdint>
#include <string_view>

namespace graph {

enum class DType : uint8_t { Float32, Int64, Bool };

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kBool = DType::Bool;

inline constexpr size_t element_size(DType t) {
  switch (t) {
    case DType::Float32: return 4;
    case DType::Int64: return 8;
    case DType::Bool: return 1;
  }
  return 0;
}

// Names as LibTorch prints them ("float", "long", "bool").
inline constexpr std::string_view dtype_name(DType t) {
  switch (t) {
    case DType::Float32: return "float";
    case DType::Int64: return "long";
    case DType::Bool: return "bool";
  }
  return "?";
}

inline constexpr bool is_floating(DType t) { return t == DType::Float32; }

// PyTorch's promotion lattice restricted to our dtypes: bool < int64 < float32.
inline constexpr DType promote_types(DType a, DType b) {
  return static_cast<uint8_t>(a) < static_cast<uint8_t>(b) ? a : b;
}

// A tensor of dtype `t` mixed with a host scalar of category `s` (Float32,
// Int64 or Bool): the scalar raises the dtype only to a higher category
// (PyTorch's wrapped-number rule): i64 tensor * 0.5 -> f32, f32 tensor * 2 -> f32.
inline constexpr DType promote_with_scalar(DType t, DType s) {
  if (s == DType::Float32 && !is_floating(t)) return DType::Float32;
  if (s == DType::Int64 && t == DType::Bool) return DType::Int64;
  return t;
}

// C++ type <-> DType.
template <class T> struct dtype_of;
template <> struct dtype_of<float> { static constexpr DType value = DType::Float32; };
template <> struct dtype_of<int64_t> { static constexpr DType value = DType::Int64; };
template <> struct dtype_of<bool> { static constexpr DType value = DType::Bool; };

// Calls f(T{}) with the C++ type of `t`.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Int64: return f(int64_t{});
    case DType::Bool: break;
  }
  return f(bool{});
}

}  // namespace graph
