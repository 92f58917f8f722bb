// The harness on the GPU (harness.h, run_device_cases; docs/fuzzing.md, "On
// the GPU"). The reference is eager mode on the CPU: the device's three ways
// of running a case are each compared with it, on the same inputs copied to
// the device.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "harness.h"
#include "harness_internal.h"

namespace progen {

namespace {

using graph::Mode;
using graph::Tensor;
using detail::Result;

// Device float32 math is not the CPU's bit for bit: exp, tanh, log... come
// from libdevice (a few ulp from the CPU polynomials), nvcc contracts a * b + c
// into FMAs, and reductions and GEMMs (cuBLAS) add in another order.
// cuda_ops_test compares one op within 1e-4 (layer_norm 2e-4), gradients
// 10x; a generated function chains a dozen ops and loops, so 4x the case's
// own tolerance, 1e-4 at least. A wrong kernel is off by far more.
double device_tol(const Case& c, bool grad) {
  const double t = std::max(c.tol, 1e-4) * 4;
  return grad ? t * 10 : t;
}

// What an op without a CUDA kernel says on a device operand (runtime/src:
// "<op>: no CUDA kernel yet, ..."; tensor.cpp's data_ptr: "... has no CUDA
// kernel yet"). The generator leaves those ops out of device batches, so
// meeting one means an emitter wrote an op it did not draw.
bool no_kernel_error(const std::string& e) { return e.find("no CUDA kernel yet") != std::string::npos; }

struct DeviceChecker {
  const Case& c;
  uint64_t seed;
  graph::Device device;  // kCUDA; kCPU to test the harness without a GPU
  int findings = 0, known = 0;

  void finding(size_t v, Mode m, bool grad, const std::string& what) {
    ++findings;
    std::printf("FINDING %s variant %zu (n=%d, s=%g) device=%s mode=%s%s: %s\n", c.name, v, c.hosts[v].first,
                c.hosts[v].second, device_name(), detail::mode_name(m), grad ? " (grad)" : "", what.c_str());
  }

  const char* device_name() const { return device == graph::kCUDA ? "cuda" : "cpu"; }

  // `got` on the device against `want`, eager on the CPU.
  void check(const Result& got, const Result& want, size_t v, Mode m, bool grad) {
    if (got.error != want.error && !detail::located(got.error, want.error)) {
      if (no_kernel_error(got.error))
        return finding(v, m, grad, "an op without a CUDA kernel in a device batch (an emitter wrote an op it did not "
                                   "draw, or the table's CpuOnly/CudaPartly is wrong): " + got.error);
      return finding(v, m, grad, "error '" + got.error + "' where eager on the CPU gave '" + want.error + "'");
    }
    if (!got.error.empty()) return;
    if (m == Mode::Static && !got.ran_graph) {
      if (grad && *c.known) ++known;
      else if (!(grad && c.grad_runs_eagerly))
        finding(v, m, grad, std::string("no compiled graph ran on the device") +
                                (grad ? " (with grad; GRAPH_EXPLAIN=1 says why)" : ""));
    }
    const double tol = device_tol(c, grad);
    auto on_device = [&](const Tensor& t, const std::string& what) {
      if (!t.defined() || t.device() == device) return true;
      finding(v, m, grad, what + " is not on the device");
      return false;
    };
    if (!grad) {
      if (got.out.size() != want.out.size()) return finding(v, m, grad, "number of outputs");
      for (size_t k = 0; k < got.out.size(); ++k) {
        const std::string what = "output " + std::to_string(k);
        if (!on_device(got.out[k], what)) continue;
        if (auto d = detail::compare(got.out[k], want.out[k], tol); !d.empty()) finding(v, m, grad, what + ": " + d);
      }
      return;
    }
    // As the CPU harness: a side without gradients reads as zeros (K4).
    std::vector<Tensor> g = got.grads, w = want.grads;
    if (g.empty()) g.resize(w.size());
    if (w.empty()) w.resize(g.size());
    if (g.size() != w.size()) return finding(v, m, grad, "gradients: number of inputs");
    for (size_t k = 0; k < g.size(); ++k) {
      const std::string what = std::string("gradient of ") + c.inputs[k].name;
      if (!on_device(g[k], what)) continue;
      if (auto d = detail::compare(g[k], w[k], tol); !d.empty()) finding(v, m, grad, what + ": " + d);
    }
  }

  void run() {
    for (size_t v = 0; v < c.hosts.size(); ++v) {
      const auto [n, s] = c.hosts[v];
      const std::vector<Tensor> in = detail::make_inputs(c, v, seed);
      std::vector<Tensor> in_dev;
      for (const Tensor& t : in) in_dev.push_back(t.to(device));
      for (bool grad : {false, true}) {
        const Result want = detail::call(c, Mode::Eager, in, n, s, grad);
        if (!want.error.empty()) {
          finding(v, Mode::Eager, grad, "eager run on the CPU threw (a generator bug): " + want.error);
          continue;
        }
        for (Mode m : {Mode::Static, Mode::Interpret, Mode::Eager})
          check(detail::call(c, m, in_dev, n, s, grad), want, v, m, grad);
      }
    }
  }
};

// Why there is no device: the runtime's own error for a copy to it.
std::string no_device_reason() {
  try {
    (void)graph::zeros({1}).to(graph::kCUDA);
  } catch (const std::exception& e) {
    return e.what();
  }
  return "cuda_is_available() is false";
}

}  // namespace

int run_device_cases(const Case* cases, size_t num_cases, uint64_t seed, int argc, char** argv) {
  const char* only = nullptr;
  double budget = 0;  // seconds; 0: none
  graph::Device device = graph::kCUDA;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--budget") == 0) budget = std::atof(argv[i + 1]);
    if (std::strcmp(argv[i], "--device") == 0) device = std::strcmp(argv[i + 1], "cpu") == 0 ? graph::kCPU : graph::kCUDA;
  }
  std::vector<const Case*> todo;
  for (const Case* c : detail::all_cases(cases, num_cases))
    if (!only || std::strcmp(only, c->name) == 0) todo.push_back(c);
  if (device == graph::kCUDA && !graph::cuda_is_available()) {
    std::printf("progen: no CUDA device: %zu functions not run (%s)\n", todo.size(), no_device_reason().c_str());
    return 0;
  }
  const auto start = std::chrono::steady_clock::now();
  int findings = 0, ran = 0;
  for (const Case* c : todo) {
    const double spent = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (budget > 0 && spent > budget) break;
    std::printf("case %s\n", c->name);
    std::fflush(stdout);  // a crash names the case it happened in
    DeviceChecker ch{*c, seed, device};
    ch.run();
    findings += ch.findings;
    if (ch.known) std::printf("known finding %s (docs/fuzzing.md): %s's grad calls ran eagerly %d times\n", c->known,
                              c->name, ch.known);
    ++ran;
  }
  const std::string partial =
      ran < int(todo.size()) ? " (out of time: " + std::to_string(todo.size() - ran) + " not run)" : "";
  std::printf("progen: %s: %d functions, %d findings%s; each on its host variants as static%s, interpret and eager "
              "on the device vs eager on the CPU, forward and backward\n",
              device == graph::kCUDA ? "cuda" : "cpu", ran, findings, partial.c_str(),
              device == graph::kCUDA ? " (CUDA kernels)" : "");
  return findings ? 1 : 0;
}

}  // namespace progen
