#pragma once
// Element types shared by the runtime, the IR and codegen, and PyTorch's
// type promotion over them.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "graph/half.h"

namespace graph {

// Every dtype, once: enum name, C++ storage type, IR token, LibTorch name,
// PyTorch's attribute name (torch.float64). Order matters nowhere; promotion
// uses the tables below.
#define GRAPH_DTYPES(X)                                        \
  X(Float32, float, "f32", "float", "float32")                 \
  X(Float64, double, "f64", "double", "float64")               \
  X(Float16, ::graph::Half, "f16", "half", "float16")          \
  X(BFloat16, ::graph::BFloat16, "bf16", "bfloat16", "bfloat16") \
  X(Int32, int32_t, "i32", "int", "int32")                     \
  X(Int64, int64_t, "i64", "long", "int64")                    \
  X(Bool, bool, "i1", "bool", "bool")

enum class DType : uint8_t {
#define GRAPH_X(name, type, token, torch, attr) name,
  GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
};

inline constexpr DType kFloat32 = DType::Float32;
inline constexpr DType kFloat64 = DType::Float64;
inline constexpr DType kFloat16 = DType::Float16;
inline constexpr DType kBFloat16 = DType::BFloat16;
inline constexpr DType kInt32 = DType::Int32;
inline constexpr DType kInt64 = DType::Int64;
inline constexpr DType kBool = DType::Bool;

inline constexpr DType kAllDTypes[] = {
#define GRAPH_X(name, type, token, torch, attr) DType::name,
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
};

inline constexpr size_t element_size(DType t) {
  switch (t) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name: return sizeof(type);
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  return 0;
}

// Names as LibTorch prints them ("float", "long", "bool").
inline constexpr std::string_view dtype_name(DType t) {
  switch (t) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name: return torch;
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  return "?";
}

// The IR text token ("f32", "i64", "i1").
inline constexpr std::string_view dtype_token(DType t) {
  switch (t) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name: return token;
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  return "?";
}

// The C++ spelling of the storage type, for generated code.
inline constexpr std::string_view dtype_cpp_type(DType t) {
  switch (t) {
#define GRAPH_X(name, type, token, torch, attr) \
  case DType::name: return #type;
    GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  }
  return "?";
}

// The dtype whose IR token is `token`; false when there is none.
inline constexpr bool dtype_from_token(std::string_view token, DType& out) {
  for (DType d : kAllDTypes)
    if (dtype_token(d) == token) return out = d, true;
  return false;
}

// The dtype a user names as PyTorch does (float64, bfloat16, int64) or by its
// IR token (f64); false when there is none.
inline constexpr bool dtype_from_name(std::string_view name, DType& out) {
#define GRAPH_X(enum_name, type, token, torch, attr) \
  if (name == attr || name == token) return out = DType::enum_name, true;
  GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X
  return false;
}

inline constexpr bool is_floating(DType t) {
  return t == DType::Float32 || t == DType::Float64 || t == DType::Float16 || t == DType::BFloat16;
}
inline constexpr bool is_integral(DType t) { return t == DType::Int32 || t == DType::Int64; }
inline constexpr bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }

// The default dtype for floating results of integral inputs (PyTorch's
// torch.get_default_dtype()).
inline constexpr DType kDefaultFloat = DType::Float32;

// PyTorch's promote_types: bool < integral < floating; within a category the
// wider type wins, and float16 with bfloat16 gives float32.
inline constexpr DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::Bool) return b;
  if (b == DType::Bool) return a;
  if (is_integral(a) && is_integral(b)) return DType::Int64;  // i32 with i64
  if (is_integral(a)) return b;
  if (is_integral(b)) return a;
  // Both floating and different.
  if (a == DType::Float64 || b == DType::Float64) return DType::Float64;
  return DType::Float32;  // f32 with a 16-bit float, or f16 with bf16
}

// PyTorch's promotion of a dimensioned tensor's dtype with a 0-d tensor's:
// the 0-d one counts only when of a higher category (bool < integral <
// floating), and then its own dtype wins: f32 [3] + f64 0-d -> f32,
// i64 [3] + f64 0-d -> f64, bool [3] + i32 0-d -> i32.
inline constexpr int dtype_category(DType t) { return t == DType::Bool ? 0 : is_integral(t) ? 1 : 2; }
inline constexpr DType promote_with_zero_dim(DType dimensioned, DType zero_dim) {
  return dtype_category(zero_dim) > dtype_category(dimensioned) ? zero_dim : dimensioned;
}

// A tensor of dtype `t` mixed with a host scalar of dtype `s` (a Scalar's
// category: bool, an integral or a floating type): the scalar raises the
// result only to a higher category (PyTorch's wrapped-number rule):
// i64 tensor * 0.5 -> f32, f16 tensor * 2.0 -> f16, bool tensor + 1 -> i64.
inline constexpr DType promote_with_scalar(DType t, DType s) {
  if (is_floating(s) && !is_floating(t)) return kDefaultFloat;
  if (is_integral(s) && t == DType::Bool) return DType::Int64;
  return t;
}

// The type kernels compute in: 16-bit floats compute in float32.
inline constexpr DType opmath_dtype(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

// C++ type <-> DType.
template <class T> struct dtype_of;
#define GRAPH_X(name, type, token, torch, attr) \
  template <> struct dtype_of<type> { static constexpr DType value = DType::name; };
GRAPH_DTYPES(GRAPH_X)
#undef GRAPH_X

// Calls f(T{}) with the C++ storage type of `t`.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::Float32: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Float16: return f(Half{});
    case DType::BFloat16: return f(BFloat16{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::Bool: break;
  }
  return f(bool{});
}

// dispatch_dtype over the types kernels compute in (opmath_dtype's range:
// no 16-bit floats), so scalar bodies are never instantiated for them.
template <class F>
decltype(auto) dispatch_opmath(DType t, F&& f) {
  switch (t) {
    case DType::Float32:
    case DType::Float16:
    case DType::BFloat16: return f(float{});
    case DType::Float64: return f(double{});
    case DType::Int32: return f(int32_t{});
    case DType::Int64: return f(int64_t{});
    case DType::Bool: break;
  }
  return f(bool{});
}

}  // namespace graph
