// Which instruction-set variant the CPU elementwise loops run (cpu_isa.h).
#include "graph/cpu_isa.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>

namespace graph::cpu {

namespace {

int detect() {
#if GRAPH_ISA_DISPATCH
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
      __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq"))
    return kAvx512;
  if (__builtin_cpu_supports("avx2")) return kAvx2;
#endif
  return kBaseline;
}

// GRAPH_CPU_ISA=baseline|avx2|avx512 lowers the choice (never raises it).
int initial() {
  int chosen = best_isa();
  if (const char* env = std::getenv("GRAPH_CPU_ISA")) {
    for (int i = kBaseline; i <= kAvx512; ++i)
      if (std::strcmp(env, isa_name(i)) == 0) chosen = std::min(chosen, i);
  }
  return chosen;
}

std::atomic<int>& in_use() {
  static std::atomic<int> isa{initial()};
  return isa;
}

}  // namespace

int best_isa() {
  static const int best = detect();
  return best;
}

int isa() { return in_use().load(std::memory_order_relaxed); }

int set_isa(int isa) {
  const int chosen = std::clamp(isa, int(kBaseline), best_isa());
  in_use().store(chosen, std::memory_order_relaxed);
  return chosen;
}

const char* isa_name(int isa) {
  switch (isa) {
    case kAvx2: return "avx2";
    case kAvx512: return "avx512";
    default: return "baseline";
  }
}

}  // namespace graph::cpu
