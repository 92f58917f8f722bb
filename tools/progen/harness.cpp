// Runs a generated batch three ways (harness.h). Eager mode is the
// reference: the same source, op by op, with eager autograd.
#include "harness.h"
#include "harness_internal.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <random>
#include <string>

#include <graph/cpu_isa.h>

namespace progen {

namespace detail {

using graph::Mode;
using graph::Tensor;

namespace {

uint64_t total_graph_calls() {
  uint64_t n = 0;
  for (const auto* g : graph::detail::registered_graphs()) n += g->calls.load();
  return n;
}

}  // namespace

const char* mode_name(Mode m) { return m == Mode::Static ? "static" : m == Mode::Interpret ? "interpret" : "eager"; }

std::vector<Tensor> make_inputs(const Case& c, size_t variant, uint64_t seed) {
  std::mt19937_64 rng(seed ^ (std::hash<std::string>()(c.name) + variant * 0x9e3779b97f4a7c15ull));
  std::vector<Tensor> in;
  for (const InputSpec& s : c.inputs) {
    const graph::Shape shape(s.shape.begin(), s.shape.end());
    Tensor t = graph::zeros(shape, s.is_int ? graph::kInt64 : graph::kFloat32);
    for (int64_t i = 0; i < t.numel(); ++i) {
      if (s.is_int) t.data_ptr<int64_t>()[i] = std::uniform_int_distribution<int64_t>(0, s.int_hi - 1)(rng);
      else t.data_ptr<float>()[i] = std::uniform_real_distribution<float>(-2, 2)(rng);
    }
    in.push_back(t);
  }
  return in;
}

Result call(const Case& c, Mode mode, const std::vector<Tensor>& inputs, int n, double s, bool grad) {
  graph::set_mode(mode);
  Result r;
  std::vector<Tensor> leaves;
  for (const Tensor& t : inputs) {
    Tensor l = t.clone();
    if (grad && graph::is_floating(l.dtype())) l.requires_grad_();
    leaves.push_back(l);
  }
  const uint64_t before = total_graph_calls();
  try {
    r.out = c.run(leaves, n, s);
    r.ran_graph = total_graph_calls() > before;
    if (grad) {
      Tensor obj;
      for (size_t k = 0; k < r.out.size(); ++k) {
        const Tensor& o = r.out[k];
        if (!graph::is_floating(o.dtype()) || !o.requires_grad()) continue;
        // Weights that differ per element, so gradients are not all alike;
        // made on the CPU, where every run makes the same ones.
        Tensor w = graph::tanh(graph::arange(0, o.numel()).to(graph::kFloat32) * 0.7 - 1.0 + double(k)).reshape(o.sizes());
        w = w.to(o.device());
        Tensor term = graph::sum(o * w);
        obj = obj.defined() ? obj + term : term;
      }
      if (obj.defined()) {
        obj.backward();
        for (const Tensor& l : leaves) r.grads.push_back(l.requires_grad() ? l.grad() : Tensor());
      }
    }
  } catch (const std::exception& e) {
    r.error = e.what();
  }
  graph::set_mode(Mode::Static);
  return r;
}

std::string compare(Tensor got, Tensor want, double tol) {
  if (!got.defined() && !want.defined()) return "";
  if (!got.defined()) got = graph::zeros(want.sizes(), want.dtype());
  if (!want.defined()) want = graph::zeros(got.sizes(), got.dtype());
  if (got.dtype() != want.dtype())
    return "dtype " + std::string(graph::dtype_name(got.dtype())) + " vs " + std::string(graph::dtype_name(want.dtype()));
  if (got.sizes() != want.sizes()) return "shape " + graph::shape_str(got.sizes()) + " vs " + graph::shape_str(want.sizes());
  const Tensor a = got.detach().to(graph::kCPU).to(graph::kFloat64).contiguous();
  const Tensor b = want.detach().to(graph::kCPU).to(graph::kFloat64).contiguous();
  for (int64_t i = 0; i < a.numel(); ++i) {
    const double x = a.data_ptr<double>()[i], y = b.data_ptr<double>()[i];
    if (x == y || (std::isnan(x) && std::isnan(y))) continue;  // equal infinities too (G4)
    if (!(std::fabs(x - y) <= tol * (1 + std::fabs(y)))) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "element %lld: %.9g vs %.9g (tol %g)", (long long)i, x, y, tol);
      return buf;
    }
  }
  return "";
}

// Whether `got` is eager's error `want` as a graph's kernel reports it, with
// the node's source location after it: "<want> (at f.cpp:7:3, conv2d in graph
// 'pg30')". A float64 call whose mix of dtypes the type rules cannot see (a
// cast meeting an input of unknown rank) runs the specialized graph, and the
// kernel throws there what eager throws.
bool located(const std::string& got, const std::string& want) {
  const std::string head = want + " (at ";
  return !want.empty() && got.size() > head.size() && got.compare(0, head.size(), head) == 0 && got.back() == ')' &&
         got.find(" in graph '", head.size()) != std::string::npos;
}

}  // namespace detail

namespace {

using graph::Mode;
using graph::Tensor;
using detail::Result, detail::call, detail::compare, detail::located, detail::make_inputs, detail::mode_name;

struct Checker {
  const Case& c;
  uint64_t seed;
  int findings = 0, known = 0;
  int float64_eager = 0;  // float64 calls whose graph could not be specialized

  // The `isa` of the float64 pass's findings.
  static constexpr int kFloat64Pass = -1;

  void finding(size_t v, int isa, Mode m, const std::string& what) {
    ++findings;
    std::printf("FINDING %s variant %zu (n=%d, s=%g) isa=%s mode=%s: %s\n", c.name, v, c.hosts[v].first,
                c.hosts[v].second, isa == kFloat64Pass ? "any (float64 inputs)" : graph::cpu::isa_name(isa),
                mode_name(m), what.c_str());
  }

  void check(const Result& got, const Result& want, size_t v, int isa, Mode m, bool grad) {
    // The float64 pass: a graph whose type rules refuse float64 (a cast to
    // float32 meeting a float64 input in a matmul, say) runs the eager body
    // by design (docs/user-guide.md, "Any dtype"), which eager's values then
    // match trivially; counted for the summary, not a finding.
    if (isa == kFloat64Pass && m == Mode::Static && !got.ran_graph && got.error.empty() && want.error.empty()) {
      ++float64_eager;
      return;
    }
    if (got.error != want.error && !located(got.error, want.error)) {
      finding(v, isa, m, "error '" + got.error + "' where eager gave '" + want.error + "'");
      return;
    }
    if (!got.error.empty()) return;
    if (m == Mode::Static && !got.ran_graph && grad && *c.known) {
      ++known;  // counted, and listed in the summary
    } else if (m == Mode::Static && !got.ran_graph && !(grad && c.grad_runs_eagerly)) {
      finding(v, isa, m, std::string("no compiled graph ran") + (grad ? " (with grad; GRAPH_EXPLAIN=1 says why)" : ""));
    }
    const double tol = grad ? c.tol * 10 : c.tol;
    if (!grad) {
      if (got.out.size() != want.out.size()) return finding(v, isa, m, "number of outputs");
      for (size_t k = 0; k < got.out.size(); ++k)
        if (auto d = compare(got.out[k], want.out[k], tol); !d.empty())
          finding(v, isa, m, "output " + std::to_string(k) + ": " + d);
      return;
    }
    // No gradients at all on one side (its outputs do not require grad) read
    // as undefined ones, i.e. zeros, as compare() reads one undefined
    // gradient: a static graph decides requires_grad over every branch, so
    // on a run whose taken branch ignores the inputs it gives zeros where
    // eager gives none (docs/gradients.md). Any other value is still a finding.
    std::vector<Tensor> g = got.grads, w = want.grads;
    if (g.empty()) g.resize(w.size());
    if (w.empty()) w.resize(g.size());
    if (g.size() != w.size()) return finding(v, isa, m, "gradients: number of inputs");
    for (size_t k = 0; k < g.size(); ++k)
      if (auto d = compare(g[k], w[k], tol); !d.empty())
        finding(v, isa, m, std::string("gradient of ") + c.inputs[k].name + ": " + d);
  }

  void run() {
    for (size_t v = 0; v < c.hosts.size(); ++v) {
      const auto [n, s] = c.hosts[v];
      const std::vector<Tensor> in = make_inputs(c, v, seed);
      for (bool grad : {false, true}) {
        const Result want = call(c, Mode::Eager, in, n, s, grad);
        if (!want.error.empty())
          finding(v, graph::cpu::isa(), Mode::Eager, "eager run threw (a generator bug): " + want.error);
        for (int isa = graph::cpu::kBaseline; isa <= graph::cpu::best_isa(); ++isa) {
          graph::cpu::set_isa(isa);
          for (Mode m : {Mode::Static, Mode::Interpret}) check(call(c, m, in, n, s, grad), want, v, isa, m, grad);
        }
        graph::cpu::set_isa(graph::cpu::best_isa());
        // The same inputs in float64: the generated code is float32's, so the
        // graph runs specialized for float64 at run time (the interpreter).
        const std::vector<Tensor> in64 = to_float64(in);
        const Result want64 = call(c, Mode::Eager, in64, n, s, grad);
        check(call(c, Mode::Static, in64, n, s, grad), want64, v, kFloat64Pass, Mode::Static, grad);
      }
    }
  }

  static std::vector<Tensor> to_float64(const std::vector<Tensor>& in) {
    std::vector<Tensor> out;
    for (const Tensor& t : in) out.push_back(t.dtype() == graph::kFloat32 ? t.to(graph::kFloat64) : t);
    return out;
  }
};

std::vector<const Case*>& registered() {
  static std::vector<const Case*> cases;
  return cases;
}

}  // namespace

Registrar::Registrar(const Case* cases, size_t num_cases) {
  for (size_t i = 0; i < num_cases; ++i) registered().push_back(&cases[i]);
}

std::vector<const Case*> detail::all_cases(const Case* cases, size_t num_cases) {
  std::vector<const Case*> all;
  for (size_t i = 0; i < num_cases; ++i) all.push_back(&cases[i]);
  all.insert(all.end(), registered().begin(), registered().end());
  return all;
}

int run_cases(const Case* cases, size_t num_cases, uint64_t seed, int argc, char** argv) {
  const char* only = nullptr;
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], "--only") == 0) only = argv[i + 1];
    if (std::strcmp(argv[i], "--device") == 0) return run_device_cases(cases, num_cases, seed, argc, argv);
  }
  const std::vector<const Case*> all = detail::all_cases(cases, num_cases);
  int findings = 0, ran = 0;
  for (const Case* c : all) {
    if (only && std::strcmp(only, c->name) != 0) continue;
    std::printf("case %s\n", c->name);
    std::fflush(stdout);  // a crash names the case it happened in
    Checker ch{*c, seed};
    ch.run();
    findings += ch.findings;
    if (ch.float64_eager)
      std::printf("float64: %s's graph cannot be specialized for float64 (its type rules refuse it); %d call(s) ran "
                  "the eager body\n", c->name, ch.float64_eager);
    if (ch.known) std::printf("known finding %s (docs/fuzzing.md): %s's grad calls ran eagerly %d times\n", c->known,
                              c->name, ch.known);
    ++ran;
  }
  const int isas = graph::cpu::best_isa() - graph::cpu::kBaseline + 1;
  std::printf("progen: seed %llu: %d functions, each on its host variants x %d ISA variant(s) x {static, interpret} "
              "and in float64 (specialized) vs eager, forward and backward: %d finding(s)\n",
              (unsigned long long)seed, ran, isas, findings);
  return findings ? 1 : 0;
}

}  // namespace progen
