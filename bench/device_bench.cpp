// device_bench: the workloads of models.cpp on the GPU, for
// tools/device_check.sh. Each workload is checked first (the static result
// on the device against the eager result on the CPU, relative L2 error),
// then timed eagerly and as its compiled graph on device tensors.
//
// Output, one line per measurement, tab-separated so that
// tools/device_results.py can build the results table beside PyTorch's
// (bench/device_torch.py prints the same format):
//   RESULT <workload> <impl> <median us per call> <note>
//   CHECK  <workload> <relative error> <OK|TOO LARGE|ERROR> <note>
// impl is cxxgraph_eager or cxxgraph_static; with GRAPH_CUDA_GRAPHS=1 in the
// environment (read once by the runtime) the static column becomes
// cxxgraph_static_graphs and the eager one is left out, so the script runs
// this twice. Without a GPU it prints "device_bench: no GPU" and exits 0.
//
// Usage: device_bench [--quick] [workload-name-substring...]
//   --quick: fewer repetitions and 16M instead of 256M floats (dry runs).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <graph/cuda/cuda.h>
#include <graph/graph.h>

#include "models.h"

namespace {
using graph::Tensor;

bool quick = false;
std::vector<std::string> filters;
int failures = 0;

bool selected(const std::string& name) {
  if (filters.empty()) return true;
  for (const auto& f : filters)
    if (name.find(f) != std::string::npos) return true;
  return false;
}

bool graphs_on() {
  const char* e = std::getenv("GRAPH_CUDA_GRAPHS");
  return e && std::strcmp(e, "1") == 0;
}

// Median seconds per call: `calls` calls per sample between two device
// synchronizations (one call of a small graph is shorter than a sync), after
// warm-up calls that pay module load, cuBLAS/cuDNN handles and (with
// GRAPH_CUDA_GRAPHS) the capture.
double median_s(const std::function<void()>& fn, int calls, int samples) {
  for (int i = 0; i < 3; ++i) fn();
  graph::cuda::synchronize();
  std::vector<double> t;
  for (int s = 0; s < samples; ++s) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < calls; ++i) fn();
    graph::cuda::synchronize();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / calls);
  }
  std::nth_element(t.begin(), t.begin() + t.size() / 2, t.end());
  return t[t.size() / 2];
}

void result(const std::string& workload, const std::string& impl, double seconds, const std::string& note = "") {
  std::printf("RESULT\t%s\t%s\t%.2f\t%s\n", workload.c_str(), impl.c_str(), seconds * 1e6, note.c_str());
  std::fflush(stdout);
}

// ‖got − ref‖ / ‖ref‖ in double on the CPU; NaN anywhere gives NaN.
double rel_error(const Tensor& ref, const Tensor& got) {
  Tensor r = ref.to(graph::kCPU).to(graph::kFloat64).contiguous();
  Tensor g = got.to(graph::kCPU).to(graph::kFloat64).contiguous();
  if (r.sizes() != g.sizes()) return INFINITY;
  double num = 0, den = 0;
  const double *rp = r.data_ptr<double>(), *gp = g.data_ptr<double>();
  for (int64_t i = 0; i < r.numel(); ++i) {
    num += (gp[i] - rp[i]) * (gp[i] - rp[i]);
    den += rp[i] * rp[i];
  }
  return std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
}

// FP32 everywhere (cuBLAS and cuDNN in their FP32 modes), so 1e-4 leaves
// room for summation order; TF32 would land near 3e-4 and fail loudly.
void check(const std::string& workload, const Tensor& cpu_ref, const Tensor& device_static, double tol = 1e-4) {
  const double e = rel_error(cpu_ref, device_static);
  const bool ok = e <= tol;  // false for NaN
  if (!ok) ++failures;
  std::printf("CHECK\t%s\t%.3g\t%s\tstatic on cuda%s vs eager on cpu, tolerance %.0e\n", workload.c_str(), e,
              ok ? "OK" : "TOO LARGE", graphs_on() ? " (CUDA graphs)" : "", tol);
  std::fflush(stdout);
}

Tensor cuda(const Tensor& t) { return t.to(graph::kCUDA); }

Tensor static_call(const std::function<Tensor()>& fn) {
  graph::set_mode(graph::Mode::Static);
  return fn();
}
Tensor eager_call(const std::function<Tensor()>& fn) {
  graph::set_mode(graph::Mode::Eager);
  return fn();
}

// Times `fn` eagerly (unless CUDA Graphs are on: the eager column comes from
// the run without them) and as its compiled graph.
void time_both(const std::string& workload, const std::function<void()>& fn, int calls, int samples,
               const std::string& note = "") {
  if (!graphs_on()) {
    graph::set_mode(graph::Mode::Eager);
    result(workload, "cxxgraph_eager", median_s(fn, calls, samples), note);
  }
  graph::set_mode(graph::Mode::Static);
  result(workload, graphs_on() ? "cxxgraph_static_graphs" : "cxxgraph_static", median_s(fn, calls, samples), note);
}

// A device-to-device copy (cudaMemcpyAsync) of n floats: the bandwidth the
// elementwise chain is held against. GB/s counts bytes read plus written.
void copy_and_chain8() {
  const int64_t n = quick ? (16LL << 20) : (256LL << 20);
  const std::string size = quick ? "16M" : "256M";
  const std::string copy_name = "copy_" + size, chain_name = "chain8_" + size;
  if (!selected(copy_name) && !selected(chain_name)) return;
  graph::manual_seed(1);
  Tensor x = cuda(graph::rand({n}));
  Tensor y = cuda(graph::rand({n}));
  Tensor dst = graph::empty({n}, graph::kFloat32, graph::kCUDA);
  const double bytes = 4.0 * n;
  const int samples = quick ? 3 : 10;
  double copy_s = 0;
  if (!graphs_on()) {
    copy_s = median_s([&] { graph::cuda::copy_device_to_device(dst.raw_data(), x.raw_data(), static_cast<size_t>(bytes)); }, 1, samples);
    char note[96];
    std::snprintf(note, sizeof note, "%.0f GB/s (read + write)", 2 * bytes / copy_s / 1e9);
    result(copy_name, "cuda_memcpy_d2d", copy_s, note);
  }
  if (!selected(chain_name)) return;
  {  // the same kernel on the first million elements against the CPU
    const int64_t m = 1 << 20;
    Tensor xs = x.slice(0, 0, m).to(graph::kCPU), ys = y.slice(0, 0, m).to(graph::kCPU);
    check(chain_name, eager_call([&] { return bench::chain8(xs, ys); }),
          static_call([&] { return bench::chain8(cuda(xs), cuda(ys)); }), 1e-5);  // exp, tanh: a few ulp apart
  }
  // Two reads and one write per element.
  auto note_for = [&](double s) {
    char note[128];
    if (copy_s > 0)
      std::snprintf(note, sizeof note, "%.0f GB/s, %.0f%% of the copy's", 3 * bytes / s / 1e9,
                    100 * (3 * bytes / s) / (2 * bytes / copy_s));
    else
      std::snprintf(note, sizeof note, "%.0f GB/s", 3 * bytes / s / 1e9);
    return std::string(note);
  };
  if (!graphs_on()) {
    graph::set_mode(graph::Mode::Eager);
    const double s = median_s([&] { (void)bench::chain8(x, y); }, 1, quick ? 2 : 5);
    result(chain_name, "cxxgraph_eager", s, note_for(s));
  }
  graph::set_mode(graph::Mode::Static);
  const double s = median_s([&] { (void)bench::chain8(x, y); }, 1, samples);
  result(chain_name, graphs_on() ? "cxxgraph_static_graphs" : "cxxgraph_static", s, note_for(s));
}

// LSTM cell, batch 1, hidden 64, 100 steps in one static function: ~700
// tiny kernels per call eagerly, one graph launch when replayed.
void lstm() {
  const std::string name = "lstm_b1_h64_100steps";
  if (!selected(name)) return;
  constexpr int H = 64, steps = 100;
  graph::manual_seed(2);
  Tensor x = graph::randn({1, H}), h = graph::randn({1, H}), c = graph::randn({1, H});
  Tensor wx = graph::randn({H, 4 * H}) * 0.1, wh = graph::randn({H, 4 * H}) * 0.1, b = graph::randn({4 * H}) * 0.1;
  Tensor ref = eager_call([&] { return bench::lstm(x, h, c, wx, wh, b, steps); });
  Tensor dx = cuda(x), dh = cuda(h), dc = cuda(c), dwx = cuda(wx), dwh = cuda(wh), db = cuda(b);
  auto call = [&] { return bench::lstm(dx, dh, dc, dwx, dwh, db, steps); };
  check(name, ref, static_call(call));
  time_both(name, [&] { (void)call(); }, quick ? 2 : 10, quick ? 3 : 15);
}

struct MlpParams {
  Tensor w1, b1, w2, b2, w3, b3;
};
MlpParams mlp_params() {
  graph::manual_seed(3);
  return {graph::randn({512, 784}) * 0.035, graph::zeros({512}), graph::randn({512, 512}) * 0.044,
          graph::zeros({512}),              graph::randn({10, 512}) * 0.044, graph::zeros({10})};
}
MlpParams to_cuda(const MlpParams& p) {
  return {cuda(p.w1), cuda(p.b1), cuda(p.w2), cuda(p.b2), cuda(p.w3), cuda(p.b3)};
}

void mlp_infer(int batch) {
  const std::string name = "mlp_infer_b" + std::to_string(batch);
  if (!selected(name)) return;
  graph::NoGradGuard no_grad;
  const MlpParams p = mlp_params();
  Tensor x = graph::randn({batch, 784});
  Tensor ref = eager_call([&] { return bench::mlp(x, p.w1, p.b1, p.w2, p.b2, p.w3, p.b3); });
  const MlpParams d = to_cuda(p);
  Tensor dx = cuda(x);
  auto call = [&] { return bench::mlp(dx, d.w1, d.b1, d.w2, d.b2, d.w3, d.b3); };
  check(name, ref, static_call(call));
  time_both(name, [&] { (void)call(); }, quick ? 2 : 20, quick ? 3 : 15);
}

// One SGD step (lr 0.01): mlp_loss (eager, or its compiled graph as one node
// on the eager tape), backward, update. Checked by the parameters after
// three steps against the same three steps eagerly on the CPU.
void mlp_sgd(int batch) {
  const std::string name = "mlp_sgd_b" + std::to_string(batch);
  if (!selected(name)) return;
  const MlpParams p0 = mlp_params();
  Tensor x = graph::randn({batch, 784});
  Tensor labels = (graph::rand({batch}) * 10).to(graph::kInt64);
  struct Model {
    std::vector<Tensor> params;
    graph::optim::SGD opt;
    Tensor x, labels;
    Model(const MlpParams& p, Tensor x_, Tensor l_)
        : params(make(p)), opt(params, graph::optim::SGDOptions(0.01)), x(std::move(x_)), labels(std::move(l_)) {}
    static std::vector<Tensor> make(const MlpParams& p) {
      std::vector<Tensor> ps{p.w1.clone(), p.b1.clone(), p.w2.clone(), p.b2.clone(), p.w3.clone(), p.b3.clone()};
      for (Tensor& t : ps) t.requires_grad_();
      return ps;
    }
    void step() {
      const auto& q = params;
      Tensor loss = bench::mlp_loss(x, labels, q[0], q[1], q[2], q[3], q[4], q[5]);
      opt.zero_grad();
      loss.backward();
      opt.step();
    }
  };
  Model cpu(p0, x, labels);
  graph::set_mode(graph::Mode::Eager);
  for (int i = 0; i < 3; ++i) cpu.step();
  Model dev(to_cuda(p0), cuda(x), cuda(labels));
  graph::set_mode(graph::Mode::Static);
  for (int i = 0; i < 3; ++i) dev.step();
  check(name, cpu.params[2], dev.params[2]);  // w2: reached through both layers' gradients
  time_both(name, [&] { dev.step(); }, quick ? 2 : 10, quick ? 3 : 15,
            "static: the loss graph on the eager tape, backward and SGD eager");
}

// Pre-norm encoder block, x [8, 64, 256] (models.cpp fixes the shape).
void transformer() {
  const std::string name = "transformer_b8_s64_d256";
  if (!selected(name)) return;
  graph::NoGradGuard no_grad;
  graph::manual_seed(4);
  constexpr int D = 256, F = 1024;
  auto w = [](int64_t o, int64_t i) { return graph::randn({o, i}) * (1.0 / std::sqrt(double(i))); };
  std::vector<Tensor> cpu{graph::randn({8, 64, D}), graph::ones({D}), graph::zeros({D}), w(D, D),
                          graph::zeros({D}),        w(D, D),          graph::zeros({D}), w(D, D),
                          graph::zeros({D}),        w(D, D),          graph::zeros({D}), graph::ones({D}),
                          graph::zeros({D}),        w(F, D),          graph::zeros({F}), w(D, F),
                          graph::zeros({D})};
  auto run = [](const std::vector<Tensor>& t) {
    return bench::transformer(t[0], t[1], t[2], t[3], t[4], t[5], t[6], t[7], t[8], t[9], t[10], t[11], t[12],
                              t[13], t[14], t[15], t[16]);
  };
  Tensor ref = eager_call([&] { return run(cpu); });
  std::vector<Tensor> dev;
  for (const Tensor& t : cpu) dev.push_back(cuda(t));
  check(name, ref, static_call([&] { return run(dev); }));
  time_both(name, [&] { (void)run(dev); }, quick ? 2 : 20, quick ? 3 : 15);
}

// Runs one workload; an exception is a failed workload, not a failed run.
void guarded(const char* what, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    ++failures;
    std::printf("CHECK\t%s\tnan\tERROR\t%s\n", what, e.what());
    std::fflush(stdout);
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--quick") == 0)
      quick = true;
    else
      filters.push_back(argv[i]);
  }
  std::string why;
  if (graph::cuda::device_count(&why) == 0) {
    std::printf("device_bench: no GPU (%s): nothing measured\n", why.c_str());
    return 0;
  }
  std::printf("device_bench: CUDA Graphs %s%s\n", graphs_on() ? "on" : "off", quick ? ", quick" : "");
  guarded("copy_chain8", copy_and_chain8);
  guarded("lstm_b1_h64_100steps", lstm);
  guarded("mlp_infer_b64", [] { mlp_infer(64); });
  guarded("mlp_infer_b4096", [] { mlp_infer(4096); });
  guarded("mlp_sgd_b64", [] { mlp_sgd(64); });
  guarded("mlp_sgd_b4096", [] { mlp_sgd(4096); });
  guarded("transformer_b8_s64_d256", transformer);
  std::printf("device_bench: %d failed check(s)\n", failures);
  return failures ? 1 : 0;
}
