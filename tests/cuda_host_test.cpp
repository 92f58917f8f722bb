// The CUDA backend's host logic, tested without a GPU: the caching
// allocator's bookkeeping (over a fake backend), launch geometry, and the
// runtime's device dispatch errors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "../runtime/src/storage.h"
#include "graph/cuda/allocator.h"
#include "graph/cuda/cuda.h"
#include "graph/cuda/dnn.h"
#include "graph/cuda/fused.h"
#include "graph/cuda/launch.h"
#include "graph/device_control.h"
#include "graph/detail/generated_support.h"
#include "graph/graph.h"

namespace {

using graph::cuda::BlockCache;
using graph::cuda::Geometry;
using graph::cuda::LaunchConfig;

// A host backend that records every call; `budget` bytes may be outstanding.
struct FakeDevice {
  size_t budget = SIZE_MAX;
  size_t outstanding = 0;
  std::vector<size_t> allocs;
  std::set<void*> live;
  int frees = 0;

  BlockCache::Backend backend() {
    return {[this](size_t n) -> void* {
              if (outstanding + n > budget) return nullptr;
              void* p = std::malloc(n);
              outstanding += n;
              allocs.push_back(n);
              live.insert(p);
              sizes[p] = n;
              return p;
            },
            [this](void* p) {
              outstanding -= sizes.at(p);
              live.erase(p);
              ++frees;
              std::free(p);
            }};
  }
  std::map<void*, size_t> sizes;
};

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const graph::Error& e) {
    return e.what();
  }
  return "<no error>";
}

// ---- allocator ---------------------------------------------------------------

TEST(CudaAllocator, RoundsToSizeClasses) {
  EXPECT_EQ(BlockCache::round_size(0), 512u);
  EXPECT_EQ(BlockCache::round_size(1), 512u);
  EXPECT_EQ(BlockCache::round_size(512), 512u);
  EXPECT_EQ(BlockCache::round_size(513), 1024u);
  EXPECT_EQ(BlockCache::round_size(size_t{1} << 20), size_t{1} << 20);          // still small
  EXPECT_EQ(BlockCache::round_size((size_t{1} << 20) + 1), size_t{2} << 20);    // large: 2 MiB units
  EXPECT_EQ(BlockCache::round_size(size_t{5} << 20), size_t{6} << 20);
  EXPECT_NE(error_of([] { BlockCache::round_size(SIZE_MAX); }).find("cannot allocate"), std::string::npos);
}

TEST(CudaAllocator, ReusesFreedBlocksOfTheSameClassAndStream) {
  FakeDevice dev;
  BlockCache cache(dev.backend());
  void* a = cache.allocate(1000);
  cache.release(a);
  void* b = cache.allocate(900);  // same 1024-byte class
  EXPECT_EQ(a, b);
  void* c = cache.allocate(2000);  // another class: a new block
  EXPECT_NE(c, b);
  const auto s = cache.stats();
  EXPECT_EQ(s.allocations, 3u);
  EXPECT_EQ(s.cache_hits, 1u);
  EXPECT_EQ(s.device_allocs, 2u);
  EXPECT_EQ(s.bytes_in_use, 1024u + 2048u);
  EXPECT_EQ(s.bytes_cached, 0u);
  EXPECT_EQ(s.peak_bytes_in_use, 1024u + 2048u);
  EXPECT_EQ(dev.allocs, (std::vector<size_t>{1024, 2048}));
  cache.release(b);
  cache.release(c);
  EXPECT_EQ(cache.stats().bytes_cached, 1024u + 2048u);
  EXPECT_EQ(cache.stats().bytes_in_use, 0u);
}

TEST(CudaAllocator, BlocksStayWithTheirStream) {
  FakeDevice dev;
  BlockCache cache(dev.backend());
  int s1 = 0, s2 = 0;  // any distinct addresses stand for streams
  void* a = cache.allocate(4096, &s1);
  cache.release(a);
  void* b = cache.allocate(4096, &s2);  // a may still be read by work on s1
  EXPECT_NE(a, b);
  void* c = cache.allocate(4096, &s1);
  EXPECT_EQ(a, c);
  EXPECT_EQ(cache.stats().cache_hits, 1u);
  cache.release(b);
  cache.release(c);
}

TEST(CudaAllocator, EmptyCacheAndDestructorReturnBlocks) {
  FakeDevice dev;
  {
    BlockCache cache(dev.backend());
    void* a = cache.allocate(100);
    void* b = cache.allocate(100);
    cache.release(a);
    cache.empty_cache();
    EXPECT_EQ(dev.frees, 1);
    EXPECT_EQ(cache.stats().bytes_cached, 0u);
    EXPECT_EQ(cache.stats().device_frees, 1u);
    cache.release(b);
  }
  EXPECT_EQ(dev.frees, 2);
  EXPECT_TRUE(dev.live.empty());
}

TEST(CudaAllocator, OutOfMemoryFreesTheCacheAndRetries) {
  FakeDevice dev;
  dev.budget = 4096;
  BlockCache cache(dev.backend());
  void* a = cache.allocate(2048);
  cache.release(a);                // 2048 cached
  void* b = cache.allocate(4096);  // fits only once the cache is returned
  EXPECT_NE(b, nullptr);
  EXPECT_EQ(dev.frees, 1);
  EXPECT_EQ(cache.stats().bytes_cached, 0u);
  const std::string e = error_of([&] { cache.allocate(512); });
  EXPECT_NE(e.find("cuda allocator: out of device memory allocating 512 bytes (4096 bytes in use)"), std::string::npos)
      << e;
  EXPECT_EQ(cache.stats().allocations, 2u);  // the failed request is not counted
  cache.release(b);
}

TEST(CudaAllocator, RejectsForeignPointers) {
  FakeDevice dev;
  BlockCache cache(dev.backend());
  int x = 0;
  EXPECT_NE(error_of([&] { cache.release(&x); }).find("did not allocate"), std::string::npos);
  cache.release(nullptr);  // like free(nullptr)
}

// ---- geometry and launch configuration -------------------------------------

Geometry collapse_of(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides) {
  std::vector<const int64_t*> rows;
  for (const auto& s : strides) rows.push_back(s.data());
  return graph::cuda::collapse("op", static_cast<int>(shape.size()), shape.data(), static_cast<int>(rows.size()),
                               rows.data());
}

TEST(CudaLaunch, CollapsesContiguousDims) {
  const Geometry g = collapse_of({2, 3, 4}, {{12, 4, 1}, {12, 4, 1}});
  EXPECT_EQ(g.ndim, 1);
  EXPECT_EQ(g.sizes[0], 24);
  EXPECT_EQ(g.strides[1][0], 1);
  EXPECT_EQ(g.numel, 24);
  EXPECT_TRUE(g.contiguous());
}

TEST(CudaLaunch, KeepsDimsThatAreNotContiguousForEveryOperand) {
  // out [2, 3] contiguous, input a transposed [3, 2] view, b a broadcast row.
  const Geometry g = collapse_of({2, 3}, {{3, 1}, {1, 2}, {0, 1}});
  EXPECT_EQ(g.ndim, 2);
  EXPECT_EQ(g.sizes[0], 2);
  EXPECT_EQ(g.sizes[1], 3);
  EXPECT_EQ(g.strides[1][0], 1);
  EXPECT_EQ(g.strides[1][1], 2);
  EXPECT_EQ(g.strides[2][0], 0);
  EXPECT_FALSE(g.contiguous());
}

TEST(CudaLaunch, DropsSizeOneDimsAndMergesBroadcastDims) {
  // A scalar broadcast over [4, 1, 5]: stride 0 everywhere merges to one dim.
  const Geometry g = collapse_of({4, 1, 5}, {{5, 5, 1}, {0, 0, 0}});
  EXPECT_EQ(g.ndim, 1);
  EXPECT_EQ(g.sizes[0], 20);
  EXPECT_EQ(g.strides[0][0], 1);
  EXPECT_EQ(g.strides[1][0], 0);
  const Geometry empty = collapse_of({3, 0}, {{0, 1}, {0, 1}});
  EXPECT_EQ(empty.numel, 0);
  const Geometry one = collapse_of({}, {{}, {}});
  EXPECT_EQ(one.ndim, 0);
  EXPECT_EQ(one.numel, 1);
  EXPECT_TRUE(one.contiguous());
}

TEST(CudaLaunch, TooManyDimsIsAnError) {
  // Nine dims of size 2 whose strides never merge (every dim reversed).
  std::vector<int64_t> shape(9, 2), st(9);
  for (int d = 0; d < 9; ++d) st[d] = int64_t{1} << d;
  const std::string e = error_of([&] { collapse_of(shape, {st}); });
  EXPECT_NE(e.find("op: cuda: 9 non-mergeable dims after collapsing (the CUDA kernels take at most 8)"),
            std::string::npos)
      << e;
}

TEST(CudaLaunch, VectorWidthNeedsEveryPointerAligned) {
  alignas(16) float buf[8];
  const void* aligned[] = {buf, buf + 4};
  EXPECT_EQ(graph::cuda::vector_width(sizeof(float), aligned, 2), 4);
  EXPECT_EQ(graph::cuda::vector_width(sizeof(double), aligned, 2), 2);
  const void* misaligned[] = {buf, buf + 1};
  EXPECT_EQ(graph::cuda::vector_width(sizeof(float), misaligned, 2), 1);
  EXPECT_EQ(graph::cuda::vector_width(3, aligned, 2), 1);  // 16 is no multiple of 3
}

TEST(CudaLaunch, ElementwiseGridCoversTheWorkUpToFourWaves) {
  graph::cuda::DeviceLimits a100;  // 108 SMs, 2048 threads each
  EXPECT_EQ(graph::cuda::elementwise_launch(0, 1, a100).blocks, 0);
  LaunchConfig c = graph::cuda::elementwise_launch(1000, 1, a100);
  EXPECT_EQ(c.threads, 256);
  EXPECT_EQ(c.blocks, 4);  // ceil(1000 / 256)
  c = graph::cuda::elementwise_launch(1000, 4, a100);
  EXPECT_EQ(c.blocks, 1);  // 250 vectors
  EXPECT_EQ(c.vec, 4);
  c = graph::cuda::elementwise_launch(int64_t{1} << 30, 4, a100);
  EXPECT_EQ(c.blocks, 108 * 8 * 4);  // 8 resident blocks per SM, 4 waves; the loop strides the rest
  a100.max_grid_x = 100;
  EXPECT_EQ(graph::cuda::elementwise_launch(int64_t{1} << 30, 1, a100).blocks, 100);
}

TEST(CudaLaunch, RowLaunchThreadsFitTheRow) {
  const graph::cuda::DeviceLimits limits;
  EXPECT_EQ(graph::cuda::row_launch(10, 1, limits).threads, 32);
  EXPECT_EQ(graph::cuda::row_launch(10, 100, limits).threads, 128);
  EXPECT_EQ(graph::cuda::row_launch(10, 1 << 20, limits).threads, 1024);
  EXPECT_EQ(graph::cuda::row_launch(10, 100, limits).blocks, 10);
  EXPECT_EQ(graph::cuda::row_launch(0, 100, limits).blocks, 0);
}

TEST(CudaLaunch, FusedReduceRowsAreOneBlockEachWithoutScratch) {
  const graph::cuda::DeviceLimits limits;  // 108 SMs, 2048 threads each
  using graph::cuda::fused_reduce_launch;
  const auto none = fused_reduce_launch(0, 100, 4, limits);  // 0 rows: nothing to launch
  EXPECT_EQ(none.blocks, 0);
  EXPECT_EQ(none.scratch_bytes, 0u);
  EXPECT_FALSE(none.two_stage);
  const auto one = fused_reduce_launch(10, 1, 4, limits);  // rows of length 1
  EXPECT_EQ(one.blocks, 10);
  EXPECT_EQ(one.threads, 32);
  EXPECT_FALSE(one.two_stage);
  EXPECT_EQ(one.scratch_bytes, 0u);
  const auto empty = fused_reduce_launch(3, 0, 4, limits);  // empty rows still write their value
  EXPECT_EQ(empty.blocks, 3);
  EXPECT_EQ(empty.threads, 32);
  const auto wide = fused_reduce_launch(7, 300, 8, limits);
  EXPECT_EQ(wide.blocks, 7);
  EXPECT_EQ(wide.threads, 512);
  EXPECT_EQ(fused_reduce_launch(7, int64_t{1} << 40, 8, limits).threads, 1024);
  // More rows than the grid holds: the kernel strides over rows.
  graph::cuda::DeviceLimits small = limits;
  small.max_grid_x = 65535;
  EXPECT_EQ(fused_reduce_launch(int64_t{1} << 40, 4, 4, small).blocks, 65535);
}

TEST(CudaLaunch, FusedReduceOverEverythingIsTwoStageWithPartials) {
  const graph::cuda::DeviceLimits limits;  // 108 SMs, 2048 threads each
  using graph::cuda::fused_reduce_launch;
  // Small: one block writes the result, no second stage, no scratch.
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{4096}}) {
    const auto r = fused_reduce_launch(1, n, 4, limits);
    EXPECT_EQ(r.blocks, 1) << n;
    EXPECT_FALSE(r.two_stage) << n;
    EXPECT_EQ(r.stage2_threads, 0) << n;
    EXPECT_EQ(r.scratch_bytes, 0u) << n;
  }
  // 5000 elements: 1024 threads x 4 elements per block -> 2 partials.
  const auto two = fused_reduce_launch(1, 5000, 4, limits);
  EXPECT_EQ(two.threads, 1024);
  EXPECT_EQ(two.blocks, 2);
  EXPECT_TRUE(two.two_stage);
  EXPECT_EQ(two.stage2_threads, 32);
  EXPECT_EQ(two.scratch_bytes, 2u * 4u);
  // Huge: one wave of resident blocks (108 SMs x 2 blocks of 1024), double partials.
  const auto huge = fused_reduce_launch(1, int64_t{1} << 30, 8, limits);
  EXPECT_EQ(huge.blocks, 216);
  EXPECT_EQ(huge.stage2_threads, 256);
  EXPECT_EQ(huge.scratch_bytes, 216u * 8u);
  // A big device: never more than 1024 partials, so stage 2 is one block pass.
  graph::cuda::DeviceLimits big = limits;
  big.sm_count = 1000;
  const auto capped = fused_reduce_launch(1, int64_t{1} << 40, 4, big);
  EXPECT_EQ(capped.blocks, 1024);
  EXPECT_EQ(capped.stage2_threads, 1024);
  EXPECT_EQ(capped.scratch_bytes, 4096u);
}

TEST(CudaLaunch, FusedReduceRejectsBadSizes) {
  const graph::cuda::DeviceLimits limits;
  EXPECT_THROW(graph::cuda::fused_reduce_launch(-1, 4, 4, limits), graph::Error);
  EXPECT_THROW(graph::cuda::fused_reduce_launch(1, -4, 4, limits), graph::Error);
  EXPECT_THROW(graph::cuda::fused_reduce_launch(1, 4, 0, limits), graph::Error);
}

// ---- dispatch ------------------------------------------------------------------

TEST(CudaDispatch, ToCudaWithoutADeviceNamesTheDriverError) {
  std::string why;
  if (graph::cuda::device_count(&why) > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(graph::cuda_is_available());
  const std::string e = error_of([] { graph::ones({2, 3}).to(graph::kCUDA); });
  EXPECT_EQ(e, "to(kCUDA): no CUDA device (cudaGetDeviceCount: " + why + ")");
}

// A tensor that claims to live on the device (host memory underneath), to
// check the dispatch decisions taken before any kernel runs. Its storage is
// handed back as CPU memory before it is freed.
class FakeCudaTensor {
 public:
  explicit FakeCudaTensor(graph::Shape sizes) : t_(graph::zeros(sizes)) { t_.storage()->device = graph::kCUDA; }
  ~FakeCudaTensor() { t_.storage()->device = graph::kCPU; }
  const graph::Tensor& get() const { return t_; }

 private:
  graph::Tensor t_;
};

TEST(CudaDispatch, MixingDevicesNamesTheOpAndBothDevices) {
  FakeCudaTensor x({3});
  EXPECT_EQ(x.get().device(), graph::kCUDA);
  EXPECT_EQ(x.get().t().device(), graph::kCUDA);  // views share the storage, and its device
  const graph::Tensor cpu = graph::ones({2, 3});
  EXPECT_EQ(error_of([&] { graph::add(cpu, x.get()); }),
            "add: expected tensors on one device, got cpu [2, 3] and cuda [3]; move one with .to(kCUDA) or .to(kCPU)");
  EXPECT_EQ(error_of([&] { graph::maximum(x.get(), cpu); }),
            "maximum: expected tensors on one device, got cuda [3] and cpu [2, 3]; move one with .to(kCUDA) or "
            ".to(kCPU)");
  EXPECT_NE(error_of([&] { graph::matmul(cpu, x.get()); }).find("matmul: expected tensors on one device, got cpu"),
            std::string::npos);
}

TEST(CudaDispatch, OpsWithoutACudaKernelStopBeforeTouchingDeviceMemory) {
  FakeCudaTensor x({2, 3});
  EXPECT_EQ(error_of([&] { x.get().data_ptr<float>(); }),
            "data_ptr: the tensor of shape [2, 3] is on cuda, and this op has no CUDA kernel yet; move it with "
            ".to(kCPU)");
}

// Ops with a CUDA path go to the device (and, here without one, stop at the
// first allocation or copy naming the missing device), never reading device
// memory from the host; mixed devices are refused first, on any machine.
TEST(CudaDispatch, NnOpsTakeTheDevicePathOrRefuseMixedDevices) {
  FakeCudaTensor x({1, 2, 5, 5}), w({3, 2, 3, 3}), table({4, 3});
  const graph::Tensor cpu_w = graph::ones({3, 2, 3, 3}), cpu_x = graph::ones({1, 2, 5, 5});
  EXPECT_EQ(error_of([&] { graph::conv2d(x.get(), cpu_w); }),
            "conv2d: expected tensors on one device, got cuda [1, 2, 5, 5] and cpu [3, 2, 3, 3]; move one with "
            ".to(kCUDA) or .to(kCPU)");
  EXPECT_NE(error_of([&] { graph::conv2d(cpu_x, w.get()); }).find("conv2d: expected tensors on one device, got cpu"),
            std::string::npos);
  EXPECT_NE(error_of([&] { graph::conv2d(x.get(), w.get(), graph::ones({3})); })
                .find("conv2d: expected input, weight and bias on one device, got the bias on cpu"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { graph::cat({x.get(), cpu_x}, 0); }),
            "cat: expected tensors on one device, got cuda and cpu (shapes [1, 2, 5, 5], [1, 2, 5, 5])");
  EXPECT_EQ(error_of([&] { graph::where(graph::ones({5}, graph::kBool), x.get(), graph::zeros({})); }),
            "where: expected tensors on one device, got a cpu tensor of shape [5] among cuda tensors; move it "
            "with .to(kCUDA)");
  EXPECT_EQ(error_of([&] { graph::embedding(table.get(), graph::zeros({2}, graph::kInt64)); }),
            "embedding: expected weight and indices on one device, got cuda and cpu (weight shape [4, 3], indices "
            "shape [2])");
  if (graph::cuda_is_available()) GTEST_SKIP() << "a CUDA device is present (the device tests run these)";
  const std::vector<std::function<void()>> ops{
      [&] { graph::conv2d(x.get(), w.get()); },
      [&] { graph::max_pool2d(x.get(), {2}); },
      [&] { graph::avg_pool2d(x.get(), {2}); },
      [&] { graph::layer_norm(x.get(), {5}, graph::Tensor(), graph::Tensor(), 1e-5); },
      [&] { graph::cat({x.get(), x.get()}, 1); },
      [&] { graph::stack({x.get(), x.get()}, 0); },
      [&] { graph::where(graph::gt(x.get(), 0.0), x.get(), graph::zeros({})); },
      [&] { graph::zeros({2, 3}, graph::kFloat32, graph::kCUDA); },
      [&] { graph::empty({2, 3}, graph::kFloat32, graph::kCUDA); },
      [&] { graph::arange(0, 5, 1, graph::kCUDA); }};
  for (const auto& f : ops) {
    const std::string e = error_of(f);
    EXPECT_NE(e.find("no CUDA device"), std::string::npos) << e;
  }
  // On the CPU the device overloads are the plain factories.
  const graph::Tensor z = graph::full({2}, 2.5, graph::kFloat64, graph::kCPU);
  EXPECT_EQ(z.device(), graph::kCPU);
  EXPECT_EQ(z.data_ptr<double>()[1], 2.5);
  EXPECT_EQ(graph::arange(1, 7, 2, graph::kCPU).data_ptr<int64_t>()[2], 5);
}

TEST(CudaDispatch, AHostScalarWithACudaTensorGoesToTheDevice) {
  if (graph::cuda_is_available()) GTEST_SKIP() << "a CUDA device is present";
  FakeCudaTensor x({3});
  // The 0-d CPU operand is copied to the device, which is not there.
  EXPECT_NE(error_of([&] { graph::mul(x.get(), 2.0); }).find("to(kCUDA): no CUDA device"), std::string::npos);
}

// ---- generated fusion-group kernels (graph/cuda/fused.h) ------------------------

graph::cuda::FusedGeometry fused_of(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides) {
  std::vector<const int64_t*> rows;
  for (const auto& s : strides) rows.push_back(s.data());
  return graph::cuda::collapse_fused("graph_f_group0", static_cast<int>(shape.size()), shape.data(),
                                     static_cast<int>(rows.size()), rows.data());
}

TEST(CudaFused, GeometryOfABroadcastBiasAndOfDenseOperands) {
  // out [5, 4] and x [5, 4] dense, b [4] broadcast over the rows: two dims.
  const auto g = fused_of({5, 4}, {{4, 1}, {4, 1}, {0, 1}});
  EXPECT_EQ(g.ndim, 2);
  EXPECT_EQ(g.operands, 3);
  EXPECT_EQ(g.numel, 20);
  EXPECT_EQ(g.sizes[0], 5);
  EXPECT_EQ(g.sizes[1], 4);
  EXPECT_EQ(g.strides[2][0], 0);
  EXPECT_EQ(g.strides[2][1], 1);
  EXPECT_FALSE(g.contiguous());
  // What the kernel reads: the rows of its own operands.
  const auto ix = graph::cuda::fused_index<3>(g);
  EXPECT_EQ(ix.ndim, 2);
  EXPECT_FALSE(ix.contiguous);
  EXPECT_EQ(ix.sizes[1], 4);
  EXPECT_EQ(ix.strides[0][0], 4);
  EXPECT_EQ(ix.strides[2][0], 0);
  // Ten dense operands of [2, 3, 4]: one dim of stride 1, the dense path.
  const std::vector<std::vector<int64_t>> dense(10, {12, 4, 1});
  const auto d = fused_of({2, 3, 4}, dense);
  EXPECT_EQ(d.ndim, 1);
  EXPECT_EQ(d.sizes[0], 24);
  EXPECT_TRUE(d.contiguous());
  EXPECT_TRUE(graph::cuda::fused_index<10>(d).contiguous);
  // A 0-d loop is one element; an empty one none.
  EXPECT_EQ(fused_of({}, {{}, {}}).numel, 1);
  EXPECT_TRUE(fused_of({}, {{}, {}}).contiguous());
  EXPECT_EQ(fused_of({3, 0}, {{0, 1}, {0, 1}}).numel, 0);
}

TEST(CudaFused, TooManyOperandsOrDimsAreErrors) {
  const std::vector<std::vector<int64_t>> too_many(33, {1});
  EXPECT_EQ(error_of([&] { fused_of({4}, too_many); }),
            "graph_f_group0: cuda: a fused kernel of 33 operands (at most 32)");
  std::vector<int64_t> shape(9, 2), st(9);
  for (int d = 0; d < 9; ++d) st[d] = int64_t{1} << d;
  EXPECT_NE(error_of([&] { fused_of(shape, {st, st}); })
                .find("graph_f_group0: cuda: 9 non-mergeable dims after collapsing (fused kernels take at most 8)"),
            std::string::npos);
}

TEST(CudaFused, LaunchGeometryCoversTheWorkUpToTheGridLimit) {
  graph::cuda::DeviceLimits a100;  // 108 SMs, 2048 threads each
  EXPECT_EQ(graph::cuda::fused_launch(0, a100).blocks, 0);
  EXPECT_EQ(graph::cuda::fused_launch(-3, a100).blocks, 0);
  LaunchConfig c = graph::cuda::fused_launch(1, a100);
  EXPECT_EQ(c.blocks, 1);
  EXPECT_EQ(c.threads, 256);
  EXPECT_EQ(graph::cuda::fused_launch(1000, a100).blocks, 4);  // ceil(1000 / 256)
  EXPECT_EQ(graph::cuda::fused_launch(1024, a100).blocks, 4);
  EXPECT_EQ(graph::cuda::fused_launch(1025, a100).blocks, 5);
  // Large: one item per thread up to max_grid_x; the grid-stride loop does the rest.
  EXPECT_EQ(graph::cuda::fused_launch(int64_t{1} << 28, a100).blocks, int64_t{1} << 20);
  EXPECT_EQ(graph::cuda::fused_launch(int64_t{1} << 40, a100).blocks, a100.max_grid_x);
  a100.max_grid_x = 100;
  EXPECT_EQ(graph::cuda::fused_launch(int64_t{1} << 40, a100).blocks, 100);
  // Odd limits still give a launch.
  graph::cuda::DeviceLimits tiny{1, 128, 1};
  EXPECT_EQ(graph::cuda::fused_launch(int64_t{1} << 20, tiny).blocks, 1);
}

int g_launches = 0;
void count_launch(const graph::cuda::FusedArgs&) { ++g_launches; }
void other_launch(const graph::cuda::FusedArgs&) {}

TEST(CudaFused, RegistryFindsLaunchersByKeyAndKeepsTheFirst) {
  const size_t before = graph::cuda::fused_kernel_count();
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#h/group0"), nullptr);
  EXPECT_TRUE(graph::cuda::register_fused_kernel("_Z1fv#h/group0", &count_launch));
  EXPECT_TRUE(graph::cuda::register_fused_kernel("_Z1fv#h/group1", &other_launch));
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#h/group0"), &count_launch);
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#h/group1"), &other_launch);
  // Another body (hash) or group is another key.
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#other/group0"), nullptr);
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#h/group2"), nullptr);
  EXPECT_FALSE(graph::cuda::register_fused_kernel("_Z1fv#h/group0", &other_launch));
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1fv#h/group0"), &count_launch);
  EXPECT_FALSE(graph::cuda::register_fused_kernel(nullptr, &count_launch));
  EXPECT_FALSE(graph::cuda::register_fused_kernel("k", nullptr));
  EXPECT_EQ(graph::cuda::find_fused_kernel(nullptr), nullptr);
  EXPECT_EQ(graph::cuda::fused_kernel_count(), before + 2);
  // A static registrar, as the generated .graph.cu declares them.
  static const graph::cuda::FusedRegistrar reg{"_Z1gv#h/group0", &other_launch};
  EXPECT_EQ(graph::cuda::find_fused_kernel("_Z1gv#h/group0"), &other_launch);
}

TEST(CudaFused, RunFusedSkipsEmptyLaunchesAndRefusesNoLauncher) {
  graph::cuda::FusedArgs args;  // launch.blocks == 0: nothing to do
  g_launches = 0;
  graph::cuda::run_fused("graph_f_group0", &count_launch, args);
  EXPECT_EQ(g_launches, 0);
  EXPECT_EQ(error_of([&] { graph::cuda::run_fused("graph_f_group0", nullptr, args); }),
            "graph_f_group0: cuda: no launcher");
}

TEST(CudaFused, DispatchChecksKeyAndDevicesBeforeAnyKernel) {
  using graph::detail::cuda_fused;
  using graph::detail::host_scalar;
  FakeCudaTensor x({2, 3});
  EXPECT_TRUE(graph::detail::any_on_cuda({&x.get()}));
  const graph::Tensor cpu = graph::ones({2, 3});
  EXPECT_FALSE(graph::detail::any_on_cuda({&cpu}));
  EXPECT_TRUE(graph::detail::any_on_cuda({&cpu, &x.get()}));
  EXPECT_FALSE(graph::detail::any_on_cuda({}));
  // No kernel registered under the key: the .graph.cu was not linked in.
  const std::string e = error_of([&] {
    cuda_fused("_Z1fv#nope/group0", "graph_f_group0", {2, 3}, {graph::kFloat32}, {&x.get()}, {host_scalar(2.0)});
  });
  EXPECT_EQ(e, "graph_f_group0: no CUDA kernel is registered for this fusion group ('_Z1fv#nope/group0'): the "
               "generated .graph.cu of its source was not built into this program");
  // A CPU tensor (not 0-d) among device inputs.
  graph::cuda::register_fused_kernel("_Z1fv#dev/group0", &count_launch);
  g_launches = 0;
  EXPECT_EQ(error_of([&] {
              cuda_fused("_Z1fv#dev/group0", "graph_f_group0", {2, 3}, {graph::kFloat32}, {&x.get(), &cpu}, {});
            }),
            "graph_f_group0: expected tensors on one device, got a cpu tensor of shape [2, 3] among cuda inputs; "
            "move it with .to(kCUDA)");
  EXPECT_EQ(g_launches, 0);
  // Host scalars keep ints and bools in i, floats in f.
  EXPECT_EQ(host_scalar(int64_t{-7}).i, -7);
  EXPECT_EQ(host_scalar(true).i, 1);
  EXPECT_EQ(host_scalar(false).i, 0);
  EXPECT_EQ(host_scalar(0.25).f, 0.25);
}

// ---- cuDNN plans (dnn.h) ------------------------------------------------------

graph::cuda::ConvShape conv(int64_t N, int64_t C, int64_t H, int64_t W, int64_t Cout, int64_t k, int64_t s,
                            int64_t p, int64_t d, int64_t groups) {
  graph::cuda::ConvShape c;
  c.N = N, c.C = C, c.H = H, c.W = W, c.Cout = Cout, c.kH = k, c.kW = k;
  c.sH = c.sW = s, c.pH = c.pW = p, c.dH = c.dW = d, c.groups = groups;
  return c;
}

TEST(CudaDnn, ConvDescriptorsFollowPyTorchsOutputShape) {
  using graph::cuda::conv_descriptors;
  // 32x32, 3x3 kernel, stride 1, padding 1: same size.
  auto d = conv_descriptors(conv(8, 3, 32, 32, 16, 3, 1, 1, 1, 1));
  EXPECT_EQ(std::vector<int>(d.y, d.y + 4), (std::vector<int>{8, 16, 32, 32}));
  EXPECT_EQ(std::vector<int>(d.w, d.w + 4), (std::vector<int>{16, 3, 3, 3}));
  EXPECT_EQ(std::vector<int>(d.x, d.x + 4), (std::vector<int>{8, 3, 32, 32}));
  EXPECT_FALSE(d.float64);
  // floor((7 - 2*(3-1) - 1) / 2) + 1 = 2 with dilation 2, stride 2.
  d = conv_descriptors(conv(1, 4, 7, 7, 6, 3, 2, 0, 2, 2));
  EXPECT_EQ(d.y[2], 2);
  EXPECT_EQ(d.y[3], 2);
  EXPECT_EQ(d.w[1], 2);  // C / groups
  EXPECT_EQ(d.groups, 2);
  EXPECT_EQ(d.dilation[0], 2);
  EXPECT_EQ(d.stride[1], 2);
  // Asymmetric: 5x9 input, kernel 3x1, stride (2, 3), padding (1, 0).
  graph::cuda::ConvShape a = conv(2, 1, 5, 9, 1, 1, 1, 0, 1, 1);
  a.kH = 3, a.kW = 1, a.sH = 2, a.sW = 3, a.pH = 1, a.pW = 0, a.dtype = graph::kFloat64;
  d = conv_descriptors(a);
  EXPECT_EQ(d.y[2], 3);  // (5 + 2 - 3) / 2 + 1
  EXPECT_EQ(d.y[3], 3);  // (9 - 1) / 3 + 1
  EXPECT_EQ(d.pad[0], 1);
  EXPECT_EQ(d.pad[1], 0);
  EXPECT_TRUE(d.float64);
}

TEST(CudaDnn, ConvDescriptorsRefuseWhatCudnnCannotTake) {
  using graph::cuda::conv_descriptors;
  EXPECT_NE(error_of([] { conv_descriptors(conv(1, 3, 8, 8, 4, 3, 1, 0, 1, 2)); }).find("groups=2 does not divide 3"),
            std::string::npos);
  EXPECT_NE(error_of([] { conv_descriptors(conv(1, 1, 2, 2, 1, 5, 1, 0, 1, 1)); })
                .find("padded input 2x2 is smaller than the dilated kernel 5x5"),
            std::string::npos);
  EXPECT_NE(error_of([] { conv_descriptors(conv(1, 1, int64_t{1} << 32, 1, 1, 1, 1, 0, 1, 1)); })
                .find("outside cuDNN's int range"),
            std::string::npos);
  auto h = conv(1, 1, 4, 4, 1, 1, 1, 0, 1, 1);
  h.dtype = graph::kFloat16;
  EXPECT_EQ(error_of([&] { conv_descriptors(h); }), "conv2d: cuda: float32 or float64 only, got half");
}

TEST(CudaDnn, AlgorithmChoiceTakesTheFirstThatSucceedsWithinTheWorkspace) {
  using graph::cuda::AlgoPerf;
  using graph::cuda::choose_algorithm;
  const std::vector<AlgoPerf> perfs{{6, false, 0, true}, {1, true, 900, true}, {0, true, 0, true}, {2, true, 100, false}};
  EXPECT_EQ(choose_algorithm("conv2d", perfs, 1000).algo, 1);  // the failed one skipped
  EXPECT_EQ(choose_algorithm("conv2d", perfs, 899).algo, 0);   // too big skipped
  EXPECT_EQ(error_of([&] { choose_algorithm("conv2d", {{1, true, 900, true}, {2, true, 500, true}}, 100); }),
            "conv2d: cuda: every cuDNN algorithm needs more workspace than the 100 bytes allowed (the smallest, "
            "algorithm 2, needs 500)");
  EXPECT_EQ(error_of([&] { choose_algorithm("conv2d backward", {{3, false, 0, true}}, 100); }),
            "conv2d backward: cuda: cuDNN supports no algorithm for this shape (1 tried)");
  EXPECT_EQ(error_of([&] { choose_algorithm("conv2d", {}, 100); }),
            "conv2d: cuda: cuDNN supports no algorithm for this shape (0 tried)");
  // The budget: a quarter of free memory, within [16 MiB, 1 GiB].
  EXPECT_EQ(graph::cuda::conv_workspace_limit(0), size_t{16} << 20);
  EXPECT_EQ(graph::cuda::conv_workspace_limit(size_t{400} << 20), size_t{100} << 20);
  EXPECT_EQ(graph::cuda::conv_workspace_limit(size_t{80} << 30), size_t{1} << 30);
}

TEST(CudaDnn, AlgorithmCacheIsPerPassShapeAndDtype) {
  using graph::cuda::ConvAlgoCache;
  using graph::cuda::ConvPass;
  const auto s = conv(8, 3, 32, 32, 16, 3, 1, 1, 1, 1);
  auto s2 = s;
  s2.dtype = graph::kFloat64;
  auto s3 = s;
  s3.pW = 0;
  const std::string k = ConvAlgoCache::key(ConvPass::Forward, s);
  EXPECT_EQ(k, "fwd,8,3,32,32,16,3,3,1,1,1,1,1,1,1,float");
  const std::set<std::string> keys{k, ConvAlgoCache::key(ConvPass::BackwardData, s),
                                   ConvAlgoCache::key(ConvPass::BackwardFilter, s),
                                   ConvAlgoCache::key(ConvPass::Forward, s2), ConvAlgoCache::key(ConvPass::Forward, s3)};
  EXPECT_EQ(keys.size(), 5u);
  ConvAlgoCache cache;
  graph::cuda::AlgoPerf a;
  EXPECT_FALSE(cache.find(k, &a));
  cache.insert(k, {4, true, 64, true});
  cache.insert(k, {5, true, 0, true});  // the first insert wins
  ASSERT_TRUE(cache.find(k, &a));
  EXPECT_EQ(a.algo, 4);
  EXPECT_EQ(a.workspace, 64u);
  EXPECT_EQ(cache.size(), 1u);
}

TEST(CudaDnn, PoolDescriptors) {
  graph::cuda::PoolShape p;
  p.planes = 6, p.H = 7, p.W = 8, p.kH = 3, p.kW = 2, p.sH = 2, p.sW = 2, p.pH = 1, p.pW = 0;
  auto d = graph::cuda::pool_descriptors(p);
  EXPECT_EQ(d.mode, graph::cuda::PoolMode::Max);
  EXPECT_EQ(std::vector<int>(d.x, d.x + 4), (std::vector<int>{1, 6, 7, 8}));
  EXPECT_EQ(std::vector<int>(d.y, d.y + 4), (std::vector<int>{1, 6, 4, 4}));  // (7+2-3)/2+1, (8-2)/2+1
  EXPECT_EQ(d.window[0], 3);
  EXPECT_EQ(d.pad[0], 1);
  EXPECT_EQ(d.stride[1], 2);
  p.max = false;
  p.dtype = graph::kFloat64;
  d = graph::cuda::pool_descriptors(p);
  EXPECT_EQ(d.mode, graph::cuda::PoolMode::AverageIncludePad);
  EXPECT_TRUE(d.float64);
  p.kH = 10;
  EXPECT_EQ(error_of([&] { graph::cuda::pool_descriptors(p); }),
            "avg_pool2d: cuda: the window 10x2 is larger than the padded input 9x8");
  p.kH = 3;
  p.dtype = graph::kInt32;
  EXPECT_EQ(error_of([&] { graph::cuda::pool_descriptors(p); }), "avg_pool2d: cuda: float32 or float64 only, got int");
}

}  // namespace

namespace {

// ---- cuBLASLt epilogue plans (cuda.h plan_lt_gemm) -------------------------------

TEST(CudaLt, PlanTurnsTheRowMajorProductIntoCublasLtsColumnMajorOne) {
  using graph::cuda::LtEpilogue;
  using graph::cuda::plan_lt_gemm;
  // matmul: x [5, 8] @ W [8, 3]: D (3 x 5) = W_cm (3 x 8, ld 3) * x_cm (8 x 5, ld 8).
  auto p = plan_lt_gemm(5, 8, 3, false, true, false);
  EXPECT_FALSE(p.trans_a);
  EXPECT_EQ(std::vector<int64_t>({p.a_rows, p.a_cols, p.lda}), (std::vector<int64_t>{3, 8, 3}));
  EXPECT_EQ(std::vector<int64_t>({p.b_rows, p.b_cols, p.ldb}), (std::vector<int64_t>{8, 5, 8}));
  EXPECT_EQ(std::vector<int64_t>({p.m, p.n, p.k, p.ldc}), (std::vector<int64_t>{3, 5, 8, 3}));
  EXPECT_EQ(p.epilogue, LtEpilogue::Bias);  // the bias runs along D's rows: one per output feature
  // linear: W [3, 8] is column-major 8 x 3 (ld 8), used transposed.
  p = plan_lt_gemm(5, 8, 3, true, true, true);
  EXPECT_TRUE(p.trans_a);
  EXPECT_EQ(std::vector<int64_t>({p.a_rows, p.a_cols, p.lda}), (std::vector<int64_t>{8, 3, 8}));
  EXPECT_EQ(std::vector<int64_t>({p.m, p.n, p.k, p.ldc}), (std::vector<int64_t>{3, 5, 8, 3}));
  EXPECT_EQ(p.epilogue, LtEpilogue::ReluBias);
  EXPECT_EQ(plan_lt_gemm(1, 1, 1, false, false, true).epilogue, LtEpilogue::Relu);
  EXPECT_EQ(plan_lt_gemm(1, 1, 1, false, false, false).epilogue, LtEpilogue::None);
  EXPECT_NE(error_of([] { plan_lt_gemm(0, 8, 3, false, true, false); }).find("an empty product"), std::string::npos);
  EXPECT_NE(error_of([] { plan_lt_gemm(int64_t{1} << 31, 8, 3, false, true, false); }).find("beyond 2^31 - 1"),
            std::string::npos);
}

// The generated call on tensors that are not on the device: the eager ops
// (what the group computes), so nothing depends on cuBLASLt there.
TEST(CudaLt, GemmEpilogueFallsBackToTheEagerOpsOffTheDevice) {
  using graph::detail::GemmEpilogue;
  const graph::Tensor x = graph::tensor({{1.f, -2.f}, {3.f, 4.f}}), w = graph::tensor({{1.f, 0.f}, {1.f, -1.f}});
  const graph::Tensor b = graph::tensor({-5.f, 0.5f});
  // linear: x @ w^T = [[1, 3], [3, -1]]; + b = [[-4, 3.5], [-2, -0.5]]; relu.
  const graph::Tensor y = graph::detail::cuda_gemm_epilogue(x, w, true, b, GemmEpilogue::ReluBias);
  const float want[] = {0, 3.5f, 0, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(y.contiguous().data_ptr<float>()[i], want[i]) << i;
  // matmul: x @ w = [[-1, 2], [7, -4]]; + b = [[-6, 2.5], [2, -3.5]].
  const graph::Tensor z = graph::detail::cuda_gemm_epilogue(x, w, false, b, GemmEpilogue::Bias);
  const float want_z[] = {-6, 2.5f, 2, -3.5f};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(z.contiguous().data_ptr<float>()[i], want_z[i]) << i;
  const graph::Tensor r = graph::detail::cuda_gemm_epilogue(x, w, false, graph::Tensor(), GemmEpilogue::Relu);
  const float want_r[] = {0, 2, 7, 0};
  for (int i = 0; i < 4; ++i) EXPECT_EQ(r.contiguous().data_ptr<float>()[i], want_r[i]) << i;
  EXPECT_NE(error_of([&] { graph::detail::cuda_gemm_epilogue(x, graph::ones({3, 3}), false, b, GemmEpilogue::Bias); })
                .find("matmul"),
            std::string::npos);
}

}  // namespace

// ---- CUDA Graph capture bookkeeping (capture.h) ----------------------------------

#include "graph/cuda/capture.h"
#include "graph/ir/device_control.h"
#include "graph/ir/ir.h"
#include "../runtime/src/device.h"

namespace {

using graph::cuda::GraphCaptureCache;
using graph::cuda::SignatureKey;

// Handles are counters; every call is logged.
struct FakeGraphs {
  std::vector<std::string> log;
  int next = 1;
  bool break_capture = false, fail_instantiate = false;
  std::set<intptr_t> live_graphs, live_execs;
  GraphCaptureCache::Backend backend() {
    return {[this] {
              log.push_back("stream");
              return reinterpret_cast<void*>(intptr_t{1000});
            },
            [this](void* s) { log.push_back("begin " + std::to_string(reinterpret_cast<intptr_t>(s))); },
            [this](void*) -> void* {
              log.push_back("end");
              if (break_capture) return nullptr;
              const intptr_t g = next++;
              live_graphs.insert(g);
              return reinterpret_cast<void*>(g);
            },
            [this](void* g) -> void* {
              log.push_back("instantiate " + std::to_string(reinterpret_cast<intptr_t>(g)));
              if (fail_instantiate) return nullptr;
              const intptr_t e = 100 + reinterpret_cast<intptr_t>(g);
              live_execs.insert(e);
              return reinterpret_cast<void*>(e);
            },
            [this](void* e, void* s) {
              log.push_back("launch " + std::to_string(reinterpret_cast<intptr_t>(e)) + " on " +
                            std::to_string(reinterpret_cast<intptr_t>(s)));
            },
            [this](void* g, void* e) {
              live_graphs.erase(reinterpret_cast<intptr_t>(g));
              live_execs.erase(reinterpret_cast<intptr_t>(e));
              log.push_back("destroy " + std::to_string(reinterpret_cast<intptr_t>(g)));
            }};
  }
};

TEST(CudaGraphCapture, SignatureKeysSeparateWhatTheGeneratedCodeDecidesOn) {
  const int64_t sizes[] = {2, 3}, dense[] = {3, 1}, transposed[] = {1, 2}, wider[] = {2, 4};
  const auto key = [&](graph::DType d, int dev, const int64_t* sz, const int64_t* st, double s) {
    SignatureKey k("f#h");
    k.tensor(d, dev, 2, sz, st);
    k.real(s);
    k.integer(3);
    k.boolean(true);
    return k.str();
  };
  const std::string base = key(graph::kFloat32, 1, sizes, dense, 0.5);
  EXPECT_EQ(base, key(graph::kFloat32, 1, sizes, dense, 0.5));
  EXPECT_EQ(base.rfind("f#h|tfloat@1[2,3]/[3,1]|f", 0), 0u) << base;
  const std::set<std::string> keys{base,
                                   key(graph::kFloat64, 1, sizes, dense, 0.5),
                                   key(graph::kFloat32, 0, sizes, dense, 0.5),
                                   key(graph::kFloat32, 1, wider, dense, 0.5),
                                   key(graph::kFloat32, 1, sizes, transposed, 0.5),
                                   key(graph::kFloat32, 1, sizes, dense, 0.25),
                                   key(graph::kFloat32, 1, sizes, dense, 0.0),
                                   key(graph::kFloat32, 1, sizes, dense, -0.0)};
  EXPECT_EQ(keys.size(), 8u);
  SignatureKey a("f#h"), b("f#h");
  a.list(2), a.undefined_tensor(), a.integer(1);
  b.list(1), b.undefined_tensor(), b.integer(1);
  EXPECT_NE(a.str(), b.str());
}

TEST(CudaGraphCapture, WarmUpThenCaptureOnceThenReplay) {
  FakeGraphs f;
  GraphCaptureCache cache(f.backend(), {1, 4});
  using A = GraphCaptureCache::Action;
  EXPECT_EQ(cache.plan("k"), A::Eager);  // warm-up
  EXPECT_EQ(cache.plan("k"), A::Capture);
  int recorded = 0;
  auto payload = std::make_shared<int>(42);
  EXPECT_TRUE(cache.capture("k", [&] { ++recorded; }, payload));
  EXPECT_EQ(recorded, 1);
  EXPECT_EQ(cache.plan("k"), A::Replay);
  EXPECT_EQ(*std::static_pointer_cast<int>(cache.payload("k")), 42);
  EXPECT_EQ(*std::static_pointer_cast<int>(cache.replay("k")), 42);
  EXPECT_EQ(cache.replay("other"), nullptr);
  EXPECT_EQ(f.log, (std::vector<std::string>{"stream", "begin 1000", "end", "instantiate 1", "launch 101 on 1000"}));
  const auto st = cache.stats();
  EXPECT_EQ(st.warmups, 1u);
  EXPECT_EQ(st.captures, 1u);
  EXPECT_EQ(st.replays, 1u);
  EXPECT_EQ(cache.size(), 1u);
  // Another signature warms up on its own.
  EXPECT_EQ(cache.plan("k2"), A::Eager);
}

TEST(CudaGraphCapture, AFailedCaptureIsEndedAndBlocksItsSignature) {
  FakeGraphs f;
  GraphCaptureCache cache(f.backend(), {0, 4});
  using A = GraphCaptureCache::Action;
  ASSERT_EQ(cache.plan("sync"), A::Capture);
  std::string why;
  EXPECT_FALSE(cache.capture("sync", [] { throw graph::Error("copy to the host: operation not permitted when stream is capturing"); },
                             nullptr, &why));
  EXPECT_EQ(why, "the capture failed: copy to the host: operation not permitted when stream is capturing");
  EXPECT_EQ(f.log.back(), "destroy 1");  // ended, and the partial graph dropped
  EXPECT_TRUE(f.live_graphs.empty());
  EXPECT_EQ(cache.plan("sync"), A::Eager);
  EXPECT_EQ(cache.plan("sync"), A::Eager);
  EXPECT_EQ(cache.blocked_reason("sync"), why);
  EXPECT_EQ(cache.stats().blocked_calls, 2u);
  // Broken by the driver (end gives no graph), or not instantiable.
  f.break_capture = true;
  EXPECT_FALSE(cache.capture("broken", [] {}, nullptr, &why));
  EXPECT_EQ(why, "the capture was invalidated (an operation the stream capture does not allow)");
  f.break_capture = false;
  f.fail_instantiate = true;
  EXPECT_FALSE(cache.capture("noinst", [] {}, nullptr, &why));
  EXPECT_EQ(why, "cudaGraphInstantiate failed");
  EXPECT_TRUE(f.live_graphs.empty());
  EXPECT_EQ(cache.stats().failures, 3u);
  EXPECT_EQ(cache.size(), 0u);
  // invalidate forgets the block: the signature may try again.
  cache.invalidate("sync");
  EXPECT_EQ(cache.blocked_reason("sync"), "");
  EXPECT_EQ(cache.plan("sync"), A::Capture);
  cache.block("host", "a cpu tensor among the inputs");
  EXPECT_EQ(cache.plan("host"), A::Eager);
}

TEST(CudaGraphCapture, LeastRecentlyUsedExecutablesAreEvictedAndAllAreDestroyed) {
  FakeGraphs f;
  {
    GraphCaptureCache cache(f.backend(), {0, 2});
    ASSERT_TRUE(cache.capture("a", [] {}, nullptr));
    ASSERT_TRUE(cache.capture("b", [] {}, nullptr));
    cache.replay("a");  // b is now the least recently used
    ASSERT_TRUE(cache.capture("c", [] {}, nullptr));
    EXPECT_EQ(cache.size(), 2u);
    EXPECT_EQ(cache.stats().evictions, 1u);
    EXPECT_EQ(cache.plan("b"), GraphCaptureCache::Action::Capture);
    EXPECT_EQ(cache.plan("a"), GraphCaptureCache::Action::Replay);
    EXPECT_EQ(f.live_execs, (std::set<intptr_t>{101, 103}));
    cache.invalidate("a");
    EXPECT_EQ(f.live_execs, (std::set<intptr_t>{103}));
    ASSERT_TRUE(cache.capture("d", [] {}, nullptr));
    cache.invalidate_all();
    EXPECT_TRUE(f.live_execs.empty());
    EXPECT_EQ(cache.stats().invalidations, 3u);
    ASSERT_TRUE(cache.capture("e", [] {}, nullptr));
  }
  EXPECT_TRUE(f.live_execs.empty());  // the destructor
  EXPECT_TRUE(f.live_graphs.empty());
}

TEST(CudaGraphCapture, GraphsWithHostDecisionsOrHostReadsAreNotCaptured) {
  using graph::ir::cuda_graph_blocker;
  auto plain = graph::ir::parse(R"(graph f(%x : f32[N], %w : f32[N, N]) {
  %a : Tensor = matmul(%x, %w)
  %b : Tensor = relu(%a)
  return (%b)
})");
  EXPECT_EQ(cuda_graph_blocker(*plain), "");
  auto branch = graph::ir::parse(R"(graph f(%x : f32[N], %c : bool) {
  %y : Tensor = If(%c) @"m.cpp":4:3
    block() {
      %a : Tensor = relu(%x)
      -> (%a)
    }
    block() {
      -> (%x)
    }
  return (%y)
})");
  // A host condition is part of the signature: decided once per capture.
  EXPECT_EQ(cuda_graph_blocker(*branch), "");
  // A tensor condition becomes a conditional node unless a host value
  // comes out of it, or the loop body reads its iteration number.
  auto host_out = graph::ir::parse(R"(graph f(%x : f32[N], %c : Tensor) {
  %y : Tensor, %k : int = If(%c) @"m.cpp":4:3
    block() {
      %one : int = constant{value=1}()
      -> (%x, %one)
    }
    block() {
      %two : int = constant{value=2}()
      -> (%x, %two)
    }
  return (%y, %k)
})");
  EXPECT_EQ(cuda_graph_blocker(*host_out), "If (at m.cpp:4): an If on a tensor condition gives a host value (k)");
  auto reads_iter = graph::ir::parse(R"(graph f(%x : f32[N], %c : Tensor) {
  %max : int = constant{value=9223372036854775807}()
  %y : Tensor = Loop(%max, %c, %x) @"m.cpp":6:3
    block(%i : int, %h : Tensor) {
      %h2 : Tensor = add(%h, %i)
      %s : Tensor = sum(%h2)
      %zero : float = constant{value=0.0}()
      %go : Tensor = lt(%s, %zero)
      -> (%go, %h2)
    }
  return (%y)
})");
  EXPECT_EQ(cuda_graph_blocker(*reads_iter),
            "Loop (at m.cpp:6): a Loop on a tensor condition reads its iteration number on the host");
  auto drop = graph::ir::parse(R"(graph f(%x : f32[N]) {
  %y : Tensor = dropout{p=0.5, training=true}(%x)
  return (%y)
})");
  EXPECT_EQ(cuda_graph_blocker(*drop), "dropout: random numbers are drawn per call, a replay would repeat them");
  auto emb = graph::ir::parse(R"(graph f(%w : f32[10, 4], %i : i64[N]) {
  %y : Tensor = embedding(%w, %i)
  return (%y)
})");
  EXPECT_EQ(cuda_graph_blocker(*emb), "embedding: reads device values on the host");
  // Off unless asked for.
  graph::detail::set_cuda_graphs(true);
  EXPECT_TRUE(graph::detail::cuda_graphs_enabled());
  graph::detail::set_cuda_graphs(false);
  EXPECT_FALSE(graph::detail::cuda_graphs_enabled());
}

}  // namespace

namespace {

TEST(CudaFused, VectorPathNeedsDenseOperandsAndAlignedPointers) {
  alignas(16) static float buf[64];
  const int64_t shape[] = {4, 8}, dense[] = {8, 1}, bias[] = {0, 1};
  const int64_t* rows_dense[] = {dense, dense};
  const int64_t* rows_bias[] = {dense, bias};
  const auto g = graph::cuda::collapse_fused("f", 2, shape, 2, rows_dense);
  const auto gb = graph::cuda::collapse_fused("f", 2, shape, 2, rows_bias);
  void* aligned[] = {buf, buf + 32};
  void* off[] = {buf, buf + 1};  // 4 bytes past a 16-byte boundary
  EXPECT_TRUE(graph::cuda::fused_vectorizable(g, aligned, 2));
  EXPECT_FALSE(graph::cuda::fused_vectorizable(g, off, 2));
  EXPECT_FALSE(graph::cuda::fused_vectorizable(gb, aligned, 2));  // a broadcast operand: strided path
  const int64_t one[] = {1};
  const int64_t* rows_one[] = {one, one};
  EXPECT_FALSE(graph::cuda::fused_vectorizable(graph::cuda::collapse_fused("f", 1, one, 2, rows_one), aligned, 2));
  EXPECT_EQ(sizeof(graph::cuda::FusedPack<float, 4>), 16u);
  EXPECT_EQ(alignof(graph::cuda::FusedPack<float, 4>), 16u);
  EXPECT_EQ(alignof(graph::cuda::FusedPack<bool, 2>), 2u);
}

}  // namespace

namespace {

// A captured graph's blocks stay its own: released during or after the
// capture, they are reused only inside that capture, and return to the
// cache when the graph is dropped.
TEST(CudaAllocator, PrivatePoolsKeepACapturedGraphsBlocks) {
  FakeDevice dev;
  BlockCache cache(dev.backend());
  graph::cuda::Stream s = reinterpret_cast<graph::cuda::Stream>(0x5);
  void* before = cache.allocate(1000, s);
  cache.release(before);  // cached on s before the capture
  const uint64_t pool = cache.open_pool(s);
  EXPECT_NE(pool, 0u);
  EXPECT_NE(error_of([&] { cache.open_pool(s); }), "<no error>");
  void* a = cache.allocate(1000, s);  // from the cache: joins the pool
  EXPECT_EQ(a, before);
  cache.release(a);  // kept for the pool
  EXPECT_EQ(cache.pool_blocks(pool), 1u);
  void* b = cache.allocate(1000, s);  // reused inside the same capture
  EXPECT_EQ(b, a);
  void* out = cache.allocate(3000, s);  // a graph output, still held after
  cache.close_pool(s);
  cache.release(b);
  EXPECT_EQ(cache.pool_blocks(pool), 1u);
  // After the capture, allocations on s do not get the graph's blocks.
  void* later = cache.allocate(1000, s);
  EXPECT_NE(later, b);
  void* other = cache.allocate(1000, nullptr);
  EXPECT_NE(other, b);
  cache.release(out);  // the output let go: still the graph's
  EXPECT_EQ(cache.pool_blocks(pool), 2u);
  cache.free_pool(pool);  // the executable dropped: blocks back to the cache
  EXPECT_EQ(cache.pool_blocks(pool), 0u);
  EXPECT_EQ(cache.allocate(1000, s), b);
  EXPECT_EQ(cache.allocate(3000, s), out);
  cache.free_pool(pool);  // twice: nothing
  EXPECT_EQ(cache.open_pool(s), pool + 1);  // s may open a pool again
}

}  // namespace

namespace {

// ---- If and Loop as CUDA conditional nodes (device_control.h) -----------
// A fake ConditionalBackend: host tensors stand for device ones, streams
// and graphs are numbers, and every call is logged. The capture "records"
// by running the work on the host, so after a capture the outputs hold
// what the last captured body computed.
using graph::detail::ConditionalBackend;

struct FakeConditional {
  std::vector<std::string> log;
  void* current = reinterpret_cast<void*>(0x100);  // the graph's capture stream
  uint64_t handles = 0;
  intptr_t graphs = 0;
  std::vector<void*> capturing;  // body streams in capture
  std::function<bool(const graph::Tensor&)> on_device = [](const graph::Tensor&) { return true; };

  static std::string stream(void* s) {
    const intptr_t v = reinterpret_cast<intptr_t>(s);
    return v == 0x100 ? "s0" : "b" + std::to_string(v - 0x200);
  }
  static std::string counter(ConditionalBackend::Counter c, int64_t trips) {
    if (c == ConditionalBackend::Counter::None) return "";
    return std::string(c == ConditionalBackend::Counter::Reset ? ", counter = 0" : ", ++counter") + " < " +
           std::to_string(trips);
  }
  ConditionalBackend backend() {
    ConditionalBackend b;
    b.create_handle = [this](void* s) {
      log.push_back("handle h" + std::to_string(++handles) + " on " + stream(s));
      return handles;
    };
    b.add_node = [this](void* s, uint64_t h, ConditionalBackend::Kind k, int bodies) {
      std::string line = std::string(k == ConditionalBackend::Kind::If ? "If" : "While") + " h" + std::to_string(h) +
                         " on " + stream(s) + " ->";
      std::vector<void*> out;
      for (int i = 0; i < bodies; ++i) {
        out.push_back(reinterpret_cast<void*>(++graphs));
        line += " g" + std::to_string(graphs);
      }
      log.push_back(line);
      return out;
    };
    b.body_stream = [](int depth) { return reinterpret_cast<void*>(intptr_t{0x200} + depth); };
    b.begin_body = [this](void* s, void* body, void* parent) {
      log.push_back("begin g" + std::to_string(reinterpret_cast<intptr_t>(body)) + " on " + stream(s) + " in " +
                    stream(parent));
      capturing.push_back(s);
    };
    b.end_body = [this](void* s) {
      log.push_back("end " + stream(s));
      capturing.pop_back();
    };
    b.set = [this](void* s, uint64_t h, const void* data, graph::DType dtype, bool host, ConditionalBackend::Counter c,
                   int64_t* count, int64_t trips) {
      EXPECT_EQ(c == ConditionalBackend::Counter::None, count == nullptr);
      log.push_back("set h" + std::to_string(h) + " on " + stream(s) + " from " +
                    (data ? std::string("the device ") + std::string(graph::dtype_name(dtype))
                          : std::string("the host ") + (host ? "true" : "false")) +
                    counter(c, trips));
    };
    b.current_stream = [this] { return current; };
    b.set_current_stream = [this](void* s) { current = s; };
    b.on_device = [this](const graph::Tensor& t) { return on_device(t); };
    return b;
  }
};

std::vector<float> values(const graph::Tensor& t) {
  const graph::Tensor c = t.contiguous();
  return std::vector<float>(c.data_ptr<float>(), c.data_ptr<float>() + c.numel());
}

TEST(DeviceControl, OffOutsideACaptureAndForHostConditions) {
  const graph::Tensor c = graph::tensor({1.f});
  EXPECT_FALSE(graph::detail::device_control(c));
  EXPECT_FALSE(graph::detail::device_control(true));
  EXPECT_NE(error_of([&] { graph::detail::device_if(c, [](int) {}, {}, " (here)"); }).find("outside a CUDA Graph capture"),
            std::string::npos);
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  {
    graph::detail::DeviceControlScope scope(&b);
    EXPECT_TRUE(graph::detail::device_control(c));
    EXPECT_FALSE(graph::detail::device_control(graph::Tensor()));
    EXPECT_FALSE(graph::detail::device_control(int64_t{1}));
    f.on_device = [](const graph::Tensor&) { return false; };  // a tensor off the device: the host decides
    EXPECT_FALSE(graph::detail::device_control(c));
    graph::Tensor h = graph::tensor({1.f});
    EXPECT_FALSE(graph::detail::device_control_loop(graph::detail::to_condition(true), {&h}));
    f.on_device = [](const graph::Tensor&) { return true; };
    EXPECT_TRUE(graph::detail::device_control_loop(graph::detail::to_condition(true), {&h}));
  }
  EXPECT_FALSE(graph::detail::device_control(c));
  EXPECT_TRUE(f.log.empty());
}

// Both branches go into the two bodies of one If node, each ending with a
// copy of its output into one buffer the rest of the graph reads.
TEST(DeviceControl, AnIfCapturesBothBranchesIntoOneNodeWithFixedOutputs) {
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  const graph::Tensor c = graph::tensor({true}), x = graph::tensor({1.f, -2.f, 3.f});
  graph::Tensor y, then_y, else_y;
  graph::detail::device_if(
      c,
      [&](int k) {
        f.log.push_back((k == 0 ? "then on " : "else on ") + FakeConditional::stream(f.current));
        y = k == 0 ? graph::relu(x) : graph::neg(x) * 2.0;
        (k == 0 ? then_y : else_y) = y;
      },
      {&y}, " (at m.cpp:4)");
  EXPECT_EQ(f.log, (std::vector<std::string>{"handle h1 on s0", "set h1 on s0 from the device bool",
                                             "If h1 on s0 -> g1 g2", "begin g1 on b1 in s0", "then on b1", "end b1",
                                             "begin g2 on b1 in s0", "else on b1", "end b1"}));
  EXPECT_EQ(FakeConditional::stream(f.current), "s0");
  EXPECT_TRUE(f.capturing.empty());
  EXPECT_EQ(values(then_y), (std::vector<float>{1.f, 0.f, 3.f}));
  // The last body captured wrote the buffer (on a GPU the condition picks).
  EXPECT_EQ(values(y), (std::vector<float>{-2.f, 4.f, -6.f}));
  EXPECT_NE(y.raw_data(), then_y.raw_data());
  EXPECT_NE(y.raw_data(), else_y.raw_data());
}

TEST(DeviceControl, AnIfRefusesWhatCannotLiveInFixedBuffers) {
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  const graph::Tensor c = graph::tensor({1.f}), x = graph::tensor({1.f, 2.f, 3.f});
  graph::Tensor y;
  const std::string shapes = error_of([&] {
    graph::detail::device_if(c, [&](int k) { y = k == 0 ? x : graph::sum(x); }, {&y}, " (at m.cpp:4)");
  });
  EXPECT_EQ(shapes, "If: the branches give output 0 as float[3] and float[]; a captured If needs one shape for both (at m.cpp:4)");
  EXPECT_TRUE(f.capturing.empty());  // the body capture was ended
  EXPECT_EQ(FakeConditional::stream(f.current), "s0");
  y = graph::Tensor();
  EXPECT_EQ(error_of([&] {
              graph::detail::device_if(c, [&](int k) { y = k == 0 ? x : graph::Tensor(); }, {&y}, "");
            }),
            "If: output 0 of the else-branch is undefined; a captured If needs a tensor from both branches");
  EXPECT_EQ(error_of([&] {
              graph::detail::device_if(graph::tensor({1.f, 0.f}), [&](int) { y = x; }, {&y}, " (at m.cpp:9)");
            }),
            "If condition: a device condition must hold one element, got float[2] (at m.cpp:9)");
  // Host tensors out of a branch or carried by a loop: their work would run
  // only while capturing.
  f.on_device = [&](const graph::Tensor& t) { return t.raw_data() != x.raw_data(); };
  EXPECT_EQ(error_of([&] { graph::detail::device_if(c, [&](int) { y = x; }, {&y}, ""); }),
            "If: output 0 of the then-branch is not on the device; host work in a captured branch would run only "
            "while capturing");
  graph::Tensor h = x;
  EXPECT_EQ(error_of([&] {
              graph::detail::device_loop(3, graph::detail::to_condition(true),
                                         [&] { return graph::detail::to_condition(true); }, {&h}, "");
            }),
            "Loop: carried value 0 is not on the device; host work in a captured loop body would run only while "
            "capturing");
}

// A Loop with a finite trip count: a counter on the device, reset before the
// While node and advanced at the end of its body; results that swap carried
// values are copied out before the carried buffers are overwritten.
TEST(DeviceControl, ALoopBecomesAWhileNodeWithADeviceCounterAndKeepsSwapsRight) {
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  graph::Tensor a = graph::tensor({1.f, 2.f}), s = graph::tensor({10.f, 20.f});
  const graph::Tensor a0 = a;
  int runs = 0;
  graph::detail::device_loop(
      5, graph::detail::to_condition(graph::tensor({true})),
      [&] {
        ++runs;
        f.log.push_back("body on " + FakeConditional::stream(f.current));
        const graph::Tensor pa = a, ps = s;
        a = ps;  // swap
        s = pa;
        return graph::detail::to_condition(graph::sum(pa) < 100.0);
      },
      {&a, &s}, " (at m.cpp:6)");
  EXPECT_EQ(runs, 1);
  EXPECT_EQ(f.log, (std::vector<std::string>{"handle h1 on s0", "set h1 on s0 from the device bool, counter = 0 < 5",
                                             "While h1 on s0 -> g1", "begin g1 on b1 in s0", "body on b1",
                                             "set h1 on b1 from the device bool, ++counter < 5", "end b1"}));
  EXPECT_EQ(values(a), (std::vector<float>{10.f, 20.f}));
  EXPECT_EQ(values(s), (std::vector<float>{1.f, 2.f}));
  EXPECT_NE(a.raw_data(), a0.raw_data());  // the carried buffer, not the input
  EXPECT_EQ(values(a0), (std::vector<float>{1.f, 2.f}));
  // An unbounded loop (a while statement) needs no counter; a host first
  // condition is set from the host; no trips, no node.
  f.log.clear();
  graph::detail::device_loop(INT64_MAX, graph::detail::to_condition(true),
                             [&] { return graph::detail::to_condition(graph::sum(a) < 0.0); }, {&a}, "");
  EXPECT_EQ(f.log, (std::vector<std::string>{"handle h2 on s0", "set h2 on s0 from the host true",
                                             "While h2 on s0 -> g2", "begin g2 on b1 in s0",
                                             "set h2 on b1 from the device bool", "end b1"}));
  f.log.clear();
  graph::detail::device_loop(0, graph::detail::to_condition(true), [&] { return graph::detail::to_condition(false); },
                             {&a}, "");
  EXPECT_TRUE(f.log.empty());
}

TEST(DeviceControl, ALoopRefusesCarriedValuesThatChangeShape) {
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  graph::Tensor a = graph::tensor({1.f, 2.f});
  EXPECT_EQ(error_of([&] {
              graph::detail::device_loop(INT64_MAX, graph::detail::to_condition(graph::tensor({true})),
                                         [&] {
                                           a = graph::cat({a, a}, 0);
                                           return graph::detail::to_condition(true);
                                         },
                                         {&a}, " (at m.cpp:6)");
            }),
            "Loop: carried value 0 enters as float[2] and leaves an iteration as float[4]; a captured Loop needs one "
            "shape (at m.cpp:6)");
  EXPECT_TRUE(f.capturing.empty());
  EXPECT_EQ(FakeConditional::stream(f.current), "s0");
}

// Nesting: an If inside a While body is captured on the stream of depth 2,
// into the body graph being captured at depth 1.
TEST(DeviceControl, NestedNodesCaptureOnTheStreamOfTheirDepth) {
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  graph::Tensor h = graph::tensor({1.f, -1.f});
  graph::detail::device_loop(
      INT64_MAX, graph::detail::to_condition(graph::tensor({true})),
      [&] {
        graph::Tensor y;
        graph::detail::device_if(
            graph::sum(h) > 0.0, [&](int k) { y = k == 0 ? h * 2.0 : h - 1.0; }, {&y}, "");
        h = y;
        return graph::detail::to_condition(graph::amax(h) < 10.0);
      },
      {&h}, "");
  EXPECT_EQ(f.log, (std::vector<std::string>{
                       "handle h1 on s0", "set h1 on s0 from the device bool", "While h1 on s0 -> g1",
                       "begin g1 on b1 in s0", "handle h2 on b1", "set h2 on b1 from the device bool",
                       "If h2 on b1 -> g2 g3", "begin g2 on b2 in b1", "end b2", "begin g3 on b2 in b1", "end b2",
                       "set h1 on b1 from the device bool", "end b1"}));
  EXPECT_EQ(values(h), (std::vector<float>{0.f, -2.f}));  // the else body ran last
}

std::vector<graph::IValue> run_generated(const char* mangled, std::vector<graph::IValue> in, size_t n_out) {
  auto* g = graph::detail::find_graph(mangled, "test-hash");
  EXPECT_NE(g, nullptr) << mangled;
  if (!g) return {};
  std::vector<graph::IValue> out(n_out);
  std::string why;
  EXPECT_TRUE(g->fn(in.data(), in.size(), out.data(), &why)) << why;
  return out;
}

// The generated code (tests/codegen_cases if_tensor.graph, loop.graph):
// uncaptured it decides on the host as before; under a capture its If and
// while loop on tensor conditions become conditional nodes, and the counted
// loop on a host condition stays a host loop (unrolled into the capture).
TEST(DeviceControl, GeneratedIfAndLoopTakeTheDevicePathOnlyWhileCapturing) {
  const graph::Tensor c = graph::tensor({2.f}), x = graph::tensor({1.f, -3.f});
  const auto plain = run_generated("hc_if_tensor", {c, x}, 1);
  EXPECT_EQ(values(std::get<graph::Tensor>(plain[0])), (std::vector<float>{2.f, -3.f}));  // relu(x) + x
  const auto neg = run_generated("hc_if_tensor", {graph::tensor({-2.f}), x}, 1);
  EXPECT_EQ(values(std::get<graph::Tensor>(neg[0])), (std::vector<float>{3.f, -9.f}));  // -x * c + x
  const graph::Tensor w = graph::tensor({0.5f, 0.5f, 0.5f}), h0 = graph::from_vector({0.1f, 0.2f, 0.3f}, {1, 3});
  const auto counted = run_generated("hc_loop", {int64_t{3}, h0, w}, 2);
  const auto whiled = run_generated("while_sum", {graph::tensor({3.f, 4.f})}, 1);
  EXPECT_EQ(values(std::get<graph::Tensor>(whiled[0])), (std::vector<float>{48.f, 64.f}));  // doubled until sum >= 100
  FakeConditional f;
  const ConditionalBackend b = f.backend();
  graph::detail::DeviceControlScope scope(&b);
  const auto captured = run_generated("hc_if_tensor", {c, x}, 1);
  EXPECT_EQ(f.log, (std::vector<std::string>{"handle h1 on s0", "set h1 on s0 from the device bool",
                                             "If h1 on s0 -> g1 g2", "begin g1 on b1 in s0", "end b1",
                                             "begin g2 on b1 in s0", "end b1"}));
  // The else body was captured last: -x * c + x.
  EXPECT_EQ(values(std::get<graph::Tensor>(captured[0])), (std::vector<float>{-1.f, 3.f}));
  f.log.clear();
  const auto counted_captured = run_generated("hc_loop", {int64_t{3}, h0, w}, 2);
  EXPECT_TRUE(f.log.empty());  // a host condition: no conditional node
  EXPECT_EQ(std::get<int64_t>(counted_captured[0]), std::get<int64_t>(counted[0]));
  EXPECT_EQ(values(std::get<graph::Tensor>(counted_captured[1])), values(std::get<graph::Tensor>(counted[1])));
  const auto whiled_captured = run_generated("while_sum", {graph::tensor({3.f, 4.f})}, 1);
  EXPECT_EQ(f.log, (std::vector<std::string>{"handle h2 on s0", "set h2 on s0 from the device bool",
                                             "While h2 on s0 -> g3", "begin g3 on b1 in s0",
                                             "set h2 on b1 from the device bool", "end b1"}));
  // One iteration ran while the body was captured.
  EXPECT_EQ(values(std::get<graph::Tensor>(whiled_captured[0])), (std::vector<float>{6.f, 8.f}));
}

}  // namespace
