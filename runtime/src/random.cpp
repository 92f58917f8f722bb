// Random numbers: one process-wide generator (xoshiro256** seeded through
// splitmix64), rand (uniform [0, 1)) and randn (Box-Muller). Same seed, same
// values on every platform; not PyTorch's stream.
#include <cmath>
#include <cstdint>
#include <mutex>
#include <string>

#include "graph/nn_ops.h"
#include "graph/trace.h"
#include "storage.h"

namespace graph {

namespace {

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

class Generator {
 public:
  explicit Generator(uint64_t seed) { seed_with(seed); }

  void seed_with(uint64_t seed) {
    uint64_t x = seed;
    for (uint64_t& w : s_) w = splitmix64(x);
  }

  uint64_t next() {
    const uint64_t result = rotl(s_[1] * 5, 7) * 9;
    const uint64_t t = s_[1] << 17;
    s_[2] ^= s_[0];
    s_[3] ^= s_[1];
    s_[1] ^= s_[2];
    s_[0] ^= s_[3];
    s_[2] ^= t;
    s_[3] = rotl(s_[3], 45);
    return result;
  }

 private:
  uint64_t s_[4];
};

// PyTorch's default seed, for a familiar starting point.
constexpr uint64_t kDefaultSeed = 67280421310721ull;

std::mutex& generator_mutex() {
  static std::mutex m;
  return m;
}

Generator& generator() {
  static Generator g(kDefaultSeed);
  return g;
}

// Uniform in [0, 1) with the type's full mantissa: 24 bits for float, 53 for double.
template <class T>
T uniform(uint64_t bits) {
  if constexpr (std::is_same_v<T, float>) return static_cast<float>(bits >> 40) * 0x1.0p-24f;
  else return static_cast<double>(bits >> 11) * 0x1.0p-53;
}

void check_floating(const char* op, const Shape& sizes, DType dtype) {
  if (dtype != kFloat32 && dtype != kFloat64)
    throw Error(std::string(op) + ": expected dtype float or double, got " + std::string(dtype_name(dtype)) +
                " (shape " + shape_str(sizes) + ")");
  for (int64_t s : sizes)
    if (s < 0) throw Error(std::string(op) + ": negative dimension " + std::to_string(s) + " in shape " + shape_str(sizes));
}

}  // namespace

void manual_seed(uint64_t seed) {
  std::lock_guard<std::mutex> lock(generator_mutex());
  generator().seed_with(seed);
}

Tensor rand(const Shape& sizes, DType dtype) {
  check_floating("rand", sizes, dtype);
  Tensor out = empty(sizes, dtype);
  const int64_t n = out.numel();
  std::lock_guard<std::mutex> lock(generator_mutex());
  Generator& g = generator();
  if (dtype == kFloat32) {
    float* p = out.data_ptr<float>();
    for (int64_t i = 0; i < n; ++i) p[i] = uniform<float>(g.next());
  } else {
    double* p = out.data_ptr<double>();
    for (int64_t i = 0; i < n; ++i) p[i] = uniform<double>(g.next());
  }
  return out;
}

Tensor randn(const Shape& sizes, DType dtype) {
  check_floating("randn", sizes, dtype);
  Tensor out = empty(sizes, dtype);
  const int64_t n = out.numel();
  std::lock_guard<std::mutex> lock(generator_mutex());
  Generator& g = generator();
  constexpr double kTwoPi = 6.283185307179586476925286766559;
  dispatch_dtype(dtype, [&](auto v) {
    using T = decltype(v);
    if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) {
      T* p = out.data_ptr<T>();
      // Box-Muller in double: u1 in (0, 1] keeps log finite; two normals per pair.
      for (int64_t i = 0; i < n; i += 2) {
        const double u1 = 1.0 - uniform<double>(g.next());
        const double u2 = uniform<double>(g.next());
        const double r = std::sqrt(-2.0 * std::log(u1));
        p[i] = static_cast<T>(r * std::cos(kTwoPi * u2));
        if (i + 1 < n) p[i + 1] = static_cast<T>(r * std::sin(kTwoPi * u2));
      }
    }
  });
  return out;
}

namespace {
// Drawn on the CPU (the generator is host state), then copied to x's device.
Tensor draw_like(const char* op, const Tensor& x, Tensor (*draw)(const Shape&, DType)) {
  detail::check_defined(op, x);
  if (detail::tracing()) return detail::trace_op(op, {x}, {}, [&] { return draw_like(op, x, draw); });
  if (!is_floating(x.dtype()) || is_reduced_float(x.dtype()))
    throw Error(std::string(op) + ": expected a float or double tensor, got " + std::string(dtype_name(x.dtype())) +
                " (shape " + shape_str(x.sizes()) + ")");
  Tensor r = draw(x.sizes(), x.dtype());
  return x.device() == Device::CPU ? r : r.to(x.device());
}
}  // namespace

Tensor rand_like(const Tensor& x) { return draw_like("rand_like", x, rand); }
Tensor randn_like(const Tensor& x) { return draw_like("randn_like", x, randn); }

}  // namespace graph
