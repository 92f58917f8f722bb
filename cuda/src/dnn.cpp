// conv2d and pooling through cuDNN's legacy API (dnn.h). The shapes, the
// descriptor arrays and the choice of algorithm come from dnn_plan.cpp;
// this file only makes the descriptors and calls cuDNN.
#include <cuda_runtime.h>
#include <cudnn.h>

#include <memory>
#include <string>
#include <vector>

#include "graph/cuda/cuda.h"
#include "graph/cuda/dnn.h"
#include "graph/error.h"

namespace graph::cuda {

namespace {

void check(cudnnStatus_t s, const char* op, const char* call) {
  if (s != CUDNN_STATUS_SUCCESS)
    throw Error(std::string(op) + ": cudnn: " + call + ": " + cudnnGetErrorString(s));
}

// One handle per thread, on the default stream (as the other kernels).
cudnnHandle_t handle(const char* op) {
  thread_local std::unique_ptr<cudnnContext, void (*)(cudnnHandle_t)> h(nullptr, [](cudnnHandle_t p) {
    if (p) cudnnDestroy(p);
  });
  if (!h) {
    cudnnHandle_t created = nullptr;
    check(cudnnCreate(&created), op, "cudnnCreate");
    h.reset(created);
  }
  check(cudnnSetStream(h.get(), static_cast<cudaStream_t>(current_stream())), op, "cudnnSetStream");
  return h.get();
}

// RAII wrappers of the descriptors.
struct TensorDesc {
  cudnnTensorDescriptor_t d = nullptr;
  TensorDesc(const char* op, const int (&dims)[4], bool f64) {
    check(cudnnCreateTensorDescriptor(&d), op, "cudnnCreateTensorDescriptor");
    check(cudnnSetTensor4dDescriptor(d, CUDNN_TENSOR_NCHW, f64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT, dims[0],
                                     dims[1], dims[2], dims[3]),
          op, "cudnnSetTensor4dDescriptor");
  }
  ~TensorDesc() { cudnnDestroyTensorDescriptor(d); }
  TensorDesc(const TensorDesc&) = delete;
  TensorDesc& operator=(const TensorDesc&) = delete;
};

struct ConvDescs {
  const char* op;
  ConvDescriptors p;
  TensorDesc x, y;
  cudnnFilterDescriptor_t w = nullptr;
  cudnnConvolutionDescriptor_t conv = nullptr;
  explicit ConvDescs(const char* op_, const ConvShape& s)
      : op(op_), p(conv_descriptors(s)), x(op_, p.x, p.float64), y(op_, p.y, p.float64) {
    const cudnnDataType_t t = p.float64 ? CUDNN_DATA_DOUBLE : CUDNN_DATA_FLOAT;
    check(cudnnCreateFilterDescriptor(&w), op, "cudnnCreateFilterDescriptor");
    check(cudnnSetFilter4dDescriptor(w, t, CUDNN_TENSOR_NCHW, p.w[0], p.w[1], p.w[2], p.w[3]), op,
          "cudnnSetFilter4dDescriptor");
    check(cudnnCreateConvolutionDescriptor(&conv), op, "cudnnCreateConvolutionDescriptor");
    // CUDNN_CROSS_CORRELATION is what deep-learning frameworks call convolution.
    check(cudnnSetConvolution2dDescriptor(conv, p.pad[0], p.pad[1], p.stride[0], p.stride[1], p.dilation[0],
                                          p.dilation[1], CUDNN_CROSS_CORRELATION, t),
          op, "cudnnSetConvolution2dDescriptor");
    check(cudnnSetConvolutionGroupCount(conv, p.groups), op, "cudnnSetConvolutionGroupCount");
    // FMA math: no TF32 tensor cores, so float32 results stay close to the CPU's.
    check(cudnnSetConvolutionMathType(conv, CUDNN_FMA_MATH), op, "cudnnSetConvolutionMathType");
  }
  ~ConvDescs() {
    cudnnDestroyConvolutionDescriptor(conv);
    cudnnDestroyFilterDescriptor(w);
  }
  ConvDescs(const ConvDescs&) = delete;
  ConvDescs& operator=(const ConvDescs&) = delete;
};

ConvAlgoCache& algo_cache() {
  static ConvAlgoCache* c = new ConvAlgoCache;
  return *c;
}

size_t workspace_limit() {
  size_t free_b = 0, total = 0;
  if (cudaMemGetInfo(&free_b, &total) != cudaSuccess) {
    cudaGetLastError();
    free_b = 0;
  }
  return conv_workspace_limit(free_b);
}

template <class Perf>
std::vector<AlgoPerf> to_perfs(const Perf* p, int n) {
  std::vector<AlgoPerf> out;
  for (int i = 0; i < n; ++i)
    out.push_back(AlgoPerf{static_cast<int>(p[i].algo), p[i].status == CUDNN_STATUS_SUCCESS, p[i].memory,
                           p[i].determinism == CUDNN_DETERMINISTIC});
  return out;
}

// The algorithm for `pass` at this shape: the cache, else cuDNN's
// heuristics (the _v7 queries, which run nothing on the device).
AlgoPerf algorithm(ConvPass pass, const ConvShape& s, const ConvDescs& d) {
  const std::string key = ConvAlgoCache::key(pass, s);
  AlgoPerf a;
  if (algo_cache().find(key, &a)) return a;
  cudnnHandle_t h = handle(d.op);
  int n = 0;
  std::vector<AlgoPerf> perfs;
  if (pass == ConvPass::Forward) {
    cudnnConvolutionFwdAlgoPerf_t p[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    check(cudnnGetConvolutionForwardAlgorithm_v7(h, d.x.d, d.w, d.conv, d.y.d, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &n, p),
          d.op, "cudnnGetConvolutionForwardAlgorithm_v7");
    perfs = to_perfs(p, n);
  } else if (pass == ConvPass::BackwardData) {
    cudnnConvolutionBwdDataAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardDataAlgorithm_v7(h, d.w, d.y.d, d.conv, d.x.d,
                                                      CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &n, p),
          d.op, "cudnnGetConvolutionBackwardDataAlgorithm_v7");
    perfs = to_perfs(p, n);
  } else {
    cudnnConvolutionBwdFilterAlgoPerf_t p[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    check(cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, d.x.d, d.y.d, d.conv, d.w,
                                                        CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &n, p),
          d.op, "cudnnGetConvolutionBackwardFilterAlgorithm_v7");
    perfs = to_perfs(p, n);
  }
  a = choose_algorithm(d.op, perfs, workspace_limit());
  algo_cache().insert(key, a);
  return a;
}

// A workspace from the caching allocator, returned when the call is queued
// (later work on the default stream is ordered after it).
struct Workspace {
  void* p = nullptr;
  explicit Workspace(size_t n) {
    if (n) p = device_allocator().allocate(n);
  }
  ~Workspace() {
    if (p) device_allocator().release(p);
  }
  Workspace(const Workspace&) = delete;
  Workspace& operator=(const Workspace&) = delete;
};

// alpha = 1, beta = 0 in the precision cuDNN expects for the data type.
struct Scale {
  double d1 = 1, d0 = 0;
  float f1 = 1, f0 = 0;
  bool f64;
  const void* one() const { return f64 ? static_cast<const void*>(&d1) : &f1; }
  const void* zero() const { return f64 ? static_cast<const void*>(&d0) : &f0; }
};

}  // namespace

void conv2d_forward(const ConvShape& s, const void* x, const void* w, void* y) {
  const ConvDescs d("conv2d", s);
  const AlgoPerf a = algorithm(ConvPass::Forward, s, d);
  const Workspace ws(a.workspace);
  const Scale sc{.f64 = d.p.float64};
  check(cudnnConvolutionForward(handle(d.op), sc.one(), d.x.d, x, d.w, w, d.conv,
                                static_cast<cudnnConvolutionFwdAlgo_t>(a.algo), ws.p, a.workspace, sc.zero(), d.y.d, y),
        d.op, "cudnnConvolutionForward");
}

void conv2d_backward_data(const ConvShape& s, const void* w, const void* dy, void* dx) {
  const ConvDescs d("conv2d backward", s);
  const AlgoPerf a = algorithm(ConvPass::BackwardData, s, d);
  const Workspace ws(a.workspace);
  const Scale sc{.f64 = d.p.float64};
  check(cudnnConvolutionBackwardData(handle(d.op), sc.one(), d.w, w, d.y.d, dy, d.conv,
                                     static_cast<cudnnConvolutionBwdDataAlgo_t>(a.algo), ws.p, a.workspace, sc.zero(),
                                     d.x.d, dx),
        d.op, "cudnnConvolutionBackwardData");
}

void conv2d_backward_filter(const ConvShape& s, const void* x, const void* dy, void* dw) {
  const ConvDescs d("conv2d backward", s);
  const AlgoPerf a = algorithm(ConvPass::BackwardFilter, s, d);
  const Workspace ws(a.workspace);
  const Scale sc{.f64 = d.p.float64};
  check(cudnnConvolutionBackwardFilter(handle(d.op), sc.one(), d.x.d, x, d.y.d, dy, d.conv,
                                       static_cast<cudnnConvolutionBwdFilterAlgo_t>(a.algo), ws.p, a.workspace,
                                       sc.zero(), d.w, dw),
        d.op, "cudnnConvolutionBackwardFilter");
}

namespace {

struct PoolDescs {
  const char* op;
  PoolDescriptors p;
  TensorDesc x, y;
  cudnnPoolingDescriptor_t pool = nullptr;
  PoolDescs(const char* op_, const PoolShape& s)
      : op(op_), p(pool_descriptors(s)), x(op_, p.x, p.float64), y(op_, p.y, p.float64) {
    check(cudnnCreatePoolingDescriptor(&pool), op, "cudnnCreatePoolingDescriptor");
    const cudnnPoolingMode_t mode =
        p.mode == PoolMode::Max ? CUDNN_POOLING_MAX_DETERMINISTIC : CUDNN_POOLING_AVERAGE_COUNT_INCLUDE_PADDING;
    check(cudnnSetPooling2dDescriptor(pool, mode, CUDNN_PROPAGATE_NAN, p.window[0], p.window[1], p.pad[0], p.pad[1],
                                      p.stride[0], p.stride[1]),
          op, "cudnnSetPooling2dDescriptor");
  }
  ~PoolDescs() { cudnnDestroyPoolingDescriptor(pool); }
  PoolDescs(const PoolDescs&) = delete;
  PoolDescs& operator=(const PoolDescs&) = delete;
};

}  // namespace

void pool2d_forward(const PoolShape& s, const void* x, void* y) {
  const PoolDescs d(s.max ? "max_pool2d" : "avg_pool2d", s);
  const Scale sc{.f64 = d.p.float64};
  check(cudnnPoolingForward(handle(d.op), d.pool, sc.one(), d.x.d, x, sc.zero(), d.y.d, y), d.op,
        "cudnnPoolingForward");
}

void pool2d_backward(const PoolShape& s, const void* x, const void* y, const void* dy, void* dx) {
  const PoolDescs d(s.max ? "max_pool2d backward" : "avg_pool2d backward", s);
  const Scale sc{.f64 = d.p.float64};
  check(cudnnPoolingBackward(handle(d.op), d.pool, sc.one(), d.y.d, y, d.y.d, dy, d.x.d, x, sc.zero(), d.x.d, dx),
        d.op, "cudnnPoolingBackward");
}

}  // namespace graph::cuda
