// Device latency experiments behind the H200 figures of
// docs/bench/2026-11-30-h200.md (not part of the library). Two questions:
//  - an 8-op elementwise chain on 256M floats: launch geometry (waves of a
//    grid-stride loop, a whole grid, packs per thread) and the math (ours,
//    CUDA's accurate expf/tanhf, the fast intrinsics, add only);
//  - an LSTM step, h [1, 64] @ w_h [64, 256] then the gates, 100 steps in one
//    CUDA graph: cuBLAS's gemm/gemv calls, hand-written gemv variants, one
//    fused kernel, and programmatic dependent launch (PDL).
// Prints "EXP <what> <time>" lines. Not built by default:
//   cmake --build build --target device_latency && build/bench/device_latency
#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <graph/cuda/fused.h>
#include <graph/scalar_ops.h>
#include <algorithm>
#include <cstdio>
#include <vector>
#define CK(x) do { auto e_ = (x); if (e_ != 0) { std::printf("ERR %s: %d line %d\n", #x, (int)e_, __LINE__); std::exit(1);} } while (0)
using Pack = ::graph::cuda::FusedPack<float, 4>;
using namespace graph;

template <int MODE>  // 0 our math, 1 CUDA intrinsics, 2 add only
__device__ __forceinline__ float chain(float x, float y, float s) {
  if constexpr (MODE == 0) {
    float t = scalar::add<float>(x, y); t = scalar::mul<float>(t, s); t = scalar::relu<float>(t); t = scalar::sub<float>(t, y);
    t = scalar::tanh<float>(t); t = scalar::exp<float>(t); t = scalar::sigmoid<float>(t); return scalar::neg<float>(t);
  } else if constexpr (MODE == 1) {
    float t = fmaxf((x + y) * s, 0.f) - y; t = tanhf(t); t = __expf(t); t = __fdividef(1.f, 1.f + __expf(-t)); return -t;
  } else if constexpr (MODE == 3) {  // CUDA's accurate expf/tanhf, fast division in sigmoid
    float t = fmaxf((x + y) * s, 0.f) - y; t = tanhf(t); t = expf(t); t = __fdividef(1.f, 1.f + expf(-t)); return -t;
  } else {
    return x + y;
  }
}
template <int MODE, int U>
__global__ void chain_k(int64_t packs, float* __restrict__ o, const float* __restrict__ x, const float* __restrict__ y, double s0) {
  const int64_t start = (int64_t)blockIdx.x * blockDim.x + threadIdx.x, step = (int64_t)gridDim.x * blockDim.x;
  const float s = (float)s0;
  for (int64_t q0 = start; q0 < packs; q0 += step * U) {
    Pack a[U], b[U];
#pragma unroll
    for (int u = 0; u < U; ++u) if (q0 + u * step < packs) { a[u] = ((const Pack*)x)[q0 + u * step]; b[u] = ((const Pack*)y)[q0 + u * step]; }
#pragma unroll
    for (int u = 0; u < U; ++u) if (q0 + u * step < packs) {
      Pack r;
#pragma unroll
      for (int v = 0; v < 4; ++v) r.v[v] = chain<MODE>(a[u].v[v], b[u].v[v], s);
      ((Pack*)o)[q0 + u * step] = r;
    }
  }
}
template <class F> float time_ms(F f, int reps = 10) {
  cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> t;
  f(); f(); cudaDeviceSynchronize();
  for (int i = 0; i < reps; ++i) { cudaEventRecord(a); f(); cudaEventRecord(b); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms); }
  std::sort(t.begin(), t.end()); return t[t.size() / 2];
}
void chain_exp() {
  const int64_t n = 256LL << 20, packs = n / 4; float *x, *y, *o;
  CK(cudaMalloc(&x, n * 4)); CK(cudaMalloc(&y, n * 4)); CK(cudaMalloc(&o, n * 4));
  cudaMemset(x, 0, n * 4); cudaMemset(y, 0, n * 4);
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  float copy = time_ms([&] { cudaMemcpyAsync(o, x, n * 4, cudaMemcpyDeviceToDevice); });
  std::printf("EXP chain copy_d2d %.1f us (%.0f GB/s)\n", copy * 1e3, 2.0 * n * 4 / copy / 1e6);
  auto run = [&](const char* name, auto kern, int64_t blocks) {
    float ms = time_ms([&] { kern<<<(unsigned)blocks, 256>>>(packs, o, x, y, 0.5); });
    CK(cudaGetLastError());
    std::printf("EXP chain %-34s blocks %8lld: %.1f us, %.0f%% of the copy's bandwidth\n", name, (long long)blocks, ms * 1e3, 100.0 * (copy * 1.5) / ms);
  };
  const int64_t waves4 = (int64_t)sms * 8 * 4, full = (packs + 255) / 256;
  run("graph::scalar math, 4 waves", chain_k<0, 1>, waves4);
  run("graph::scalar math, 16 waves", chain_k<0, 1>, waves4 * 4);
  run("graph::scalar math, full grid", chain_k<0, 1>, full);
  run("graph::scalar math, 4 waves, 2 packs", chain_k<0, 2>, waves4);
  run("graph::scalar math, 4 waves, 4 packs", chain_k<0, 4>, waves4);
  run("accurate expf/tanhf + __fdividef, 4 waves", chain_k<3, 1>, waves4);
  run("intrinsics, 4 waves", chain_k<1, 1>, waves4);
  run("intrinsics, full grid", chain_k<1, 1>, full);
  run("add only, 4 waves", chain_k<2, 1>, waves4);
  run("add only, full grid", chain_k<2, 1>, full);
  run("add only, 4 waves, 4 packs", chain_k<2, 4>, waves4);
  cudaFree(x); cudaFree(y); cudaFree(o);
}
// ---- LSTM step
constexpr int H = 64, N = 4 * H;
struct Big { int64_t pad[100]; };  // a FusedIndex<11>-sized parameter block
template <bool BIG>
__global__ void gates_k(Big ix, const float* __restrict__ xw, const float* __restrict__ g, float* __restrict__ c, float* __restrict__ h) {
  int j = threadIdx.x; if (j >= H) return; if (BIG && ix.pad[0] == 7) return;
  float i_ = scalar::sigmoid<float>(xw[j] + g[j]), f = scalar::sigmoid<float>(xw[H + j] + g[H + j]);
  float z = scalar::tanh<float>(xw[2 * H + j] + g[2 * H + j]), o = scalar::sigmoid<float>(xw[3 * H + j] + g[3 * H + j]);
  float cn = f * c[j] + i_ * z; c[j] = cn; h[j] = o * scalar::tanh<float>(cn);
}
__global__ void gemv_k(const float* __restrict__ h, const float* __restrict__ wh, float* __restrict__ g) {
  int j = blockIdx.x * blockDim.x + threadIdx.x; if (j >= N) return;
  float s = 0.f;
#pragma unroll 16
  for (int k = 0; k < H; ++k) s += h[k] * wh[k * N + j];
  g[j] = s;
}
__global__ void gemv4_k(const float* __restrict__ h, const float* __restrict__ wh, float* __restrict__ g) {  // 4 K-slices per output, smem reduce
  __shared__ float part[4][N];
  int j = threadIdx.x % N, ks = threadIdx.x / N; float s = 0.f;
#pragma unroll
  for (int k = ks * 16; k < ks * 16 + 16; ++k) s += h[k] * wh[k * N + j];
  part[ks][j] = s; __syncthreads();
  if (ks == 0) g[j] = part[0][j] + part[1][j] + part[2][j] + part[3][j];
}
__global__ void fused_k(const float* __restrict__ xw, const float* __restrict__ wh, float* __restrict__ c, float* __restrict__ h) {
  __shared__ float hs[H]; int j = threadIdx.x; hs[j] = h[j]; __syncthreads();
  float a0 = xw[j], a1 = xw[H + j], a2 = xw[2 * H + j], a3 = xw[3 * H + j];
#pragma unroll 16
  for (int k = 0; k < H; ++k) { float x = hs[k]; const float* r = wh + k * N; a0 += x * r[j]; a1 += x * r[H + j]; a2 += x * r[2 * H + j]; a3 += x * r[3 * H + j]; }
  float i_ = scalar::sigmoid<float>(a0), f = scalar::sigmoid<float>(a1), z = scalar::tanh<float>(a2), o = scalar::sigmoid<float>(a3);
  __syncthreads();
  float cn = f * c[j] + i_ * z; c[j] = cn; h[j] = o * scalar::tanh<float>(cn);
}
__global__ void fused4_k(const float* __restrict__ xw, const float* __restrict__ wh, float* __restrict__ c, float* __restrict__ h) {
  __shared__ float part[4][N];
  int col = threadIdx.x % N, ks = threadIdx.x / N; float s = 0.f;
#pragma unroll
  for (int k = ks * 16; k < ks * 16 + 16; ++k) s += h[k] * wh[k * N + col];
  part[ks][col] = s; __syncthreads();
  if (threadIdx.x < H) {
    int j = threadIdx.x; float a[4];
#pragma unroll
    for (int q = 0; q < 4; ++q) a[q] = xw[q * H + j] + part[0][q * H + j] + part[1][q * H + j] + part[2][q * H + j] + part[3][q * H + j];
    float i_ = scalar::sigmoid<float>(a[0]), f = scalar::sigmoid<float>(a[1]), z = scalar::tanh<float>(a[2]), o = scalar::sigmoid<float>(a[3]);
    float cn = f * c[j] + i_ * z; c[j] = cn; h[j] = o * scalar::tanh<float>(cn);
  }
}
__global__ void gemv4_pdl(const float* __restrict__ h, const float* __restrict__ wh, float* __restrict__ g) {
  __shared__ float part[4][N];
  cudaGridDependencySynchronize();
  int j = threadIdx.x % N, ks = threadIdx.x / N; float s = 0.f;
#pragma unroll
  for (int k = ks * 16; k < ks * 16 + 16; ++k) s += h[k] * wh[k * N + j];
  part[ks][j] = s; __syncthreads();
  cudaTriggerProgrammaticLaunchCompletion();
  if (ks == 0) g[j] = part[0][j] + part[1][j] + part[2][j] + part[3][j];
}
__global__ void gates_pdl(const float* __restrict__ xw, const float* __restrict__ g, float* __restrict__ c, float* __restrict__ h) {
  cudaGridDependencySynchronize();
  int j = threadIdx.x; if (j >= H) return;
  float i_ = scalar::sigmoid<float>(xw[j] + g[j]), f = scalar::sigmoid<float>(xw[H + j] + g[H + j]);
  float z = scalar::tanh<float>(xw[2 * H + j] + g[2 * H + j]), o = scalar::sigmoid<float>(xw[3 * H + j] + g[3 * H + j]);
  cudaTriggerProgrammaticLaunchCompletion();
  float cn = f * c[j] + i_ * z; c[j] = cn; h[j] = o * scalar::tanh<float>(cn);
}
template <class K, class... A> void launch_pdl(cudaStream_t s, K k, unsigned threads, A... a) {
  cudaLaunchConfig_t cfg{}; cfg.gridDim = 1; cfg.blockDim = threads; cfg.stream = s;
  cudaLaunchAttribute at[1]; at[0].id = cudaLaunchAttributeProgrammaticStreamSerialization; at[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = at; cfg.numAttrs = 1;
  CK(cudaLaunchKernelEx(&cfg, k, a...));
}
__global__ void empty_k() {}
void lstm_exp() {
  float *xw, *wh, *g, *c, *h, *whT;
  CK(cudaMalloc(&xw, N * 4)); CK(cudaMalloc(&wh, H * N * 4)); CK(cudaMalloc(&whT, H * N * 4)); CK(cudaMalloc(&g, N * 4)); CK(cudaMalloc(&c, H * 4)); CK(cudaMalloc(&h, H * 4));
  std::vector<float> hw(H * N); for (int i = 0; i < H * N; ++i) hw[i] = 0.01f * ((i * 37) % 17 - 8);
  cudaMemcpy(wh, hw.data(), H * N * 4, cudaMemcpyHostToDevice); cudaMemcpy(whT, hw.data(), H * N * 4, cudaMemcpyHostToDevice);
  cudaMemset(xw, 0, N * 4); cudaMemset(c, 0, H * 4); cudaMemset(h, 0, H * 4);
  cudaStream_t s; cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
  cublasHandle_t hb; CK(cublasCreate(&hb)); CK(cublasSetStream(hb, s));
  void* ws; cudaMalloc(&ws, 4 << 20); CK(cublasSetWorkspace(hb, ws, 4 << 20));
  const float one = 1, zero = 0; Big big{};
  auto sgemm = [&] { CK(cublasSgemm(hb, CUBLAS_OP_N, CUBLAS_OP_N, N, 1, H, &one, wh, N, h, H, &zero, g, N)); };
  auto sgemv = [&] { CK(cublasSgemv(hb, CUBLAS_OP_N, N, H, &one, wh, N, h, 1, &zero, g, 1)); };
  auto sgemvT = [&] { CK(cublasSgemv(hb, CUBLAS_OP_T, H, N, &one, whT, H, h, 1, &zero, g, 1)); };
  auto custom = [&] { gemv_k<<<2, 128, 0, s>>>(h, wh, g); };
  auto custom1 = [&] { gemv_k<<<1, 256, 0, s>>>(h, wh, g); };
  auto custom4 = [&] { gemv4_k<<<1, 1024, 0, s>>>(h, wh, g); };
  auto gbig = [&] { gates_k<true><<<1, 256, 0, s>>>(big, xw, g, c, h); };
  auto gsmall = [&] { gates_k<false><<<1, 64, 0, s>>>(big, xw, g, c, h); };
  auto graph_us = [&](const char* name, auto step) {
    step(); cudaStreamSynchronize(s);
    cudaGraph_t gr; cudaGraphExec_t ex;
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
    for (int i = 0; i < 100; ++i) step();
    CK(cudaStreamEndCapture(s, &gr)); CK(cudaGraphInstantiate(&ex, gr, 0)); CK(cudaGraphUpload(ex, s));
    for (int i = 0; i < 20; ++i) cudaGraphLaunch(ex, s);
    cudaStreamSynchronize(s);
    cudaEvent_t a, b; cudaEventCreate(&a); cudaEventCreate(&b); std::vector<float> t;
    for (int i = 0; i < 30; ++i) { cudaEventRecord(a, s); cudaGraphLaunch(ex, s); cudaEventRecord(b, s); cudaEventSynchronize(b); float ms; cudaEventElapsedTime(&ms, a, b); t.push_back(ms); }
    std::sort(t.begin(), t.end());
    std::printf("EXP lstm %-44s %7.1f us / 100 steps\n", name, t[15] * 1e3);
    cudaGraphExecDestroy(ex); cudaGraphDestroy(gr);
  };
  graph_us("empty kernel", [&] { empty_k<<<1, 64, 0, s>>>(); });
  graph_us("gates, big params, 256 threads (ours)", gbig);
  graph_us("gates, small params, 64 threads", gsmall);
  graph_us("cublasSgemm NN", sgemm);
  graph_us("cublasSgemv N (ours)", sgemv);
  graph_us("cublasSgemv T", sgemvT);
  graph_us("custom gemv 2x128", custom);
  graph_us("custom gemv 1x256", custom1);
  graph_us("custom gemv 1x1024 split-K", custom4);
  graph_us("cublasSgemv N + gates big (ours)", [&] { sgemv(); gbig(); });
  graph_us("cublasSgemm NN + gates small", [&] { sgemm(); gsmall(); });
  graph_us("cublasSgemv N + gates small", [&] { sgemv(); gsmall(); });
  graph_us("custom gemv 2x128 + gates small", [&] { custom(); gsmall(); });
  graph_us("custom gemv 1x1024 split-K + gates small", [&] { custom4(); gsmall(); });
  graph_us("fused split-K gemv+gates, one kernel", [&] { fused4_k<<<1, 1024, 0, s>>>(xw, wh, c, h); });
  graph_us("PDL split-K gemv + PDL gates", [&] { launch_pdl(s, gemv4_pdl, 1024, (const float*)h, (const float*)wh, g); launch_pdl(s, gates_pdl, 64, (const float*)xw, (const float*)g, c, h); });
  graph_us("fused gemv+gates, one kernel", [&] { fused_k<<<1, 64, 0, s>>>(xw, wh, c, h); });
}
int main() { chain_exp(); lstm_exp(); std::printf("EXP done\n"); }
