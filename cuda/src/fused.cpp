// The host side of generated fusion-group kernels (fused.h): geometry,
// launch configuration, the launcher registry, and the launch itself.
#include "graph/cuda/fused.h"

#include <cuda_runtime.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

#include "collapse.h"
#include "graph/cuda/cuda.h"
#include "graph/error.h"

namespace graph::cuda {

FusedGeometry collapse_fused(const char* what, int ndim, const int64_t* shape, int operands,
                             const int64_t* const* strides) {
  if (operands < 1 || operands > kMaxFusedOperands)
    throw Error(std::string(what) + ": cuda: a fused kernel of " + std::to_string(operands) +
                " operands (at most " + std::to_string(kMaxFusedOperands) + ")");
  if (ndim < 0 || ndim > 64) throw Error(std::string(what) + ": cuda: rank " + std::to_string(ndim) + " (at most 64)");
  FusedGeometry g;
  detail::collapse_into<kMaxFusedOperands, kMaxDims>(g, what, "fused kernels", ndim, shape, operands, strides);
  return g;
}

bool fused_vectorizable(const FusedGeometry& g, void* const* data, int n) {
  if (!g.contiguous() || g.numel < 2) return false;
  for (int i = 0; i < n; ++i)
    if (reinterpret_cast<uintptr_t>(data[i]) % 16 != 0) return false;
  return true;
}

LaunchConfig fused_launch(int64_t items, const DeviceLimits& limits) {
  LaunchConfig c;
  if (items <= 0) return c;
  c.threads = 256;
  const int64_t needed = (items + c.threads - 1) / c.threads;
  c.blocks = std::clamp<int64_t>(needed, 1, std::max<int64_t>(1, limits.max_grid_x));
  return c;
}

namespace {
thread_local int pdl_suspended = 0;
}  // namespace

bool pdl_allowed() {
  static const bool on = [] {
    const char* env = std::getenv("GRAPH_CUDA_PDL");
    return device_limits().pdl && !(env && std::string_view(env) == "0");
  }();
  return on && pdl_suspended == 0;
}

void suspend_pdl(bool suspend) { pdl_suspended += suspend ? 1 : -1; }

namespace {

struct Registry {
  std::mutex mutex;
  std::map<std::string, FusedLauncher, std::less<>> launchers;
};

Registry& registry() {
  static Registry r;  // constructed on first use, from any registrar
  return r;
}

}  // namespace

bool register_fused_kernel(const char* key, FusedLauncher launcher) {
  if (!key || !launcher) return false;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.launchers.emplace(key, launcher).second;
}

FusedLauncher find_fused_kernel(const char* key) {
  if (!key) return nullptr;
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  auto it = r.launchers.find(std::string_view(key));
  return it == r.launchers.end() ? nullptr : it->second;
}

size_t fused_kernel_count() {
  Registry& r = registry();
  std::lock_guard lock(r.mutex);
  return r.launchers.size();
}

void run_fused(const char* what, FusedLauncher launcher, const FusedArgs& args) {
  if (!launcher) throw Error(std::string(what) + ": cuda: no launcher");
  if (args.launch.blocks == 0) return;
  launcher(args);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) throw Error(std::string(what) + ": cuda kernel launch: " + cudaGetErrorString(e));
}

}  // namespace graph::cuda
