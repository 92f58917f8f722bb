// The registry of compiled graphs and the dispatch behind the prologue that
// the generator inserts into [[graph::static]] functions (static.h).
#include "graph/static.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <cstdio>
#include <cxxabi.h>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/detail/generated_support.h"
#include "graph/detail/grad_sync.h"
#include "graph/ops.h"
#include "graph/interpreter.h"
#include "graph/detail/static_autograd.h"
#include "input_walk.h"
#include "specialize.h"
#include "graph/ir/ir.h"
#include "graph/trace.h"
#include "device.h"

namespace graph {

namespace {

Mode mode_from_env() {
  const char* m = std::getenv("GRAPH_MODE");
  if (m && std::strcmp(m, "eager") == 0) return Mode::Eager;
  if (m && std::strcmp(m, "interpret") == 0) return Mode::Interpret;
  return Mode::Static;
}

std::atomic<Mode>& mode_ref() {
  static std::atomic<Mode> m{mode_from_env()};
  return m;
}

struct Registry {
  std::mutex mu;
  std::vector<detail::CompiledGraph*> graphs;
};

// Function-local so registrars in other translation units can run first.
Registry& registry() {
  static Registry r;
  return r;
}

}  // namespace

void set_mode(Mode m) { mode_ref().store(m); }
Mode mode() { return mode_ref().load(); }

namespace detail {

namespace {

// One StaticFunction serves every thread that calls its function, and
// ready() may fill in its graph late: every access after construction goes
// through an atomic_ref, so a late lookup on one thread never races with a
// call on another.
CompiledGraph* load(CompiledGraph*& slot) {
  return std::atomic_ref<CompiledGraph*>(slot).load(std::memory_order_acquire);
}

}  // namespace

namespace {

// Whether `v` is a dtype variant of `main` (body hash "<main's hash>:<dtype>").
bool variant_of(const CompiledGraph& v, const CompiledGraph& main) {
  const std::string_view h = v.body_hash, m = main.body_hash;
  return std::string_view(v.mangled_name) == main.mangled_name && h.size() > m.size() && h.starts_with(m) &&
         h[m.size()] == ':';
}

void append_variant(CompiledGraph& main, CompiledGraph* v) {
  CompiledGraph* at = &main;
  while (CompiledGraph* next = load(at->variant)) at = next;
  std::atomic_ref<CompiledGraph*>(at->variant).store(v, std::memory_order_release);
}

}  // namespace

void register_graph(CompiledGraph* g) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  // Variants join their function's graph, whichever registers first.
  for (CompiledGraph* other : r.graphs) {
    if (variant_of(*g, *other)) append_variant(*other, g);
    if (variant_of(*other, *g)) append_variant(*g, other);
  }
  r.graphs.push_back(g);
}

CompiledGraph* find_graph(std::string_view mangled_name, std::string_view body_hash) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  for (CompiledGraph* g : r.graphs)
    if (mangled_name == g->mangled_name && body_hash == g->body_hash) return g;
  return nullptr;
}

uint64_t graph_calls(std::string_view mangled_name) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  uint64_t n = 0;
  for (CompiledGraph* g : r.graphs)
    if (mangled_name == g->mangled_name && !std::strchr(g->body_hash, ':')) n += g->calls.load();
  return n;
}

std::vector<const CompiledGraph*> registered_graphs() {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  return {r.graphs.begin(), r.graphs.end()};
}

bool explain_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("GRAPH_EXPLAIN");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

bool check_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("GRAPH_CHECK");
    return e && *e && std::strcmp(e, "0") != 0;
  }();
  return on;
}

void explain(std::string_view function, std::string_view why) {
  if (!explain_enabled()) return;
  std::fprintf(stderr, "graph: %.*s ran eagerly: %.*s\n", static_cast<int>(function.size()),
               function.data(), static_cast<int>(why.size()), why.data());
}

namespace {

// The parsed IR of each registered graph, made on its first interpreted call.
const ir::Graph& parsed(const CompiledGraph& g) {
  static std::mutex mu;
  static std::map<const CompiledGraph*, std::unique_ptr<ir::Graph>> graphs;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = graphs[&g];
  if (!slot) slot = ir::parse(g.ir_text);
  return *slot;
}

bool any_cuda_input(const IValue* in, size_t n_in) {
  return any_input_tensor(in, n_in, [](const Tensor& t) { return t.defined() && t.device() == Device::CUDA; });
}

// A specialized graph runs its nodes in order, as the eager body would: its
// kernels use the cores themselves, and nodes run side by side on top of
// that (interpret mode's default) made a float64 Transformer block 1.5x
// slower on 2 cores than eager, its GEMM threads waiting on each other.
const RunOptions kSpecializedRun{1, {}};

// Runs `ir` on the interpreter; false (and why) when a train step's optimizer
// guard fails, before any effect runs.
bool run_interpreted(const ir::Graph& ir, const IValue* in, size_t n_in, IValue* out, std::string* why,
                     const RunOptions& options = {}) {
  for (const auto& n : ir.top()->nodes()) {
    if (!n->is(OpId::optimizer_guard)) continue;
    const ir::Value* h = n->input(0);
    for (size_t i = 0; i < ir.inputs().size() && i < n_in; ++i)
      if (ir.inputs()[i].get() == h && std::holds_alternative<int64_t>(in[i]) &&
          !optimizer_guard(std::get<int64_t>(in[i]), why))
        return false;
  }
  std::vector<IValue> results = graph::run(ir, std::vector<IValue>(in, in + n_in), options);
  std::move(results.begin(), results.end(), out);
  return true;
}

bool interpret(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, std::string* why) {
  // The generated function's own check, on the same signature table: both
  // modes accept the same calls and explain a refused one alike.
  if (!check_inputs(g.signature, g.num_inputs, in, n_in, why)) return false;
  return run_interpreted(parsed(g), in, n_in, out, why);
}

// Whether a tensor the graph reads has a post-accumulate hook that is not a
// DistributedDataParallel's (grad_sync.h): the graph's grad_sync nodes do
// DDP's work, but a hook of another kind would not run (set_grads refuses
// such a leaf: an error after zero_grad ran). The eager body runs it.
bool has_foreign_hook(const IValue* in, size_t n_in) {
  return any_input_tensor(in, n_in, [](const Tensor& t) { return has_foreign_post_accumulate_hook(t); });
}

// Whether a DDP owns a tensor the graph reads: the step then all-reduces.
bool under_ddp(const IValue* in, size_t n_in) {
  return any_grad_sync() && any_input_tensor(in, n_in, [](const Tensor& t) { return grad_sync_owns(t); });
}

// A static train step writes .grad itself (set_grads): its ops record no
// tape, whatever requires grad, and it is never captured into a CUDA graph.
bool run_train_step(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, std::string* why,
                    const ir::Graph* specialized) {
  if (!autograd::grad_mode_enabled()) {
    *why = "grad mode is off, and the body calls loss.backward() (which throws eagerly then)";
    return false;
  }
  if (has_foreign_hook(in, n_in)) {
    *why = "a parameter has a post-accumulate gradient hook (not DistributedDataParallel's), which the graph's "
           "backward would not run; the eager body's backward() runs it";
    return false;
  }
  autograd::NoGradGuard no_grad;
  const bool ddp = under_ddp(in, n_in);
  // A step under DDP that throws or is refused after its first grad_sync_start
  // must not leave DDP's pass open for the next step (grad_sync.h).
  struct AbandonUnlessDone {
    bool on, done = false;
    ~AbandonUnlessDone() {
      if (on && !done) abandon_grad_syncs();
    }
  } pass{ddp};
  // Gradients become .grad without a copy where nothing else can see them
  // (set_grads); one an output shares is copied once the outputs are known.
  TakenGrads taken;
  if (specialized) {
    pass.done = run_interpreted(*specialized, in, n_in, out, why, kSpecializedRun);
    if (pass.done) taken.unshare(out, g.num_outputs);
    return pass.done;
  }
  // Under DDP the interpreter runs the nodes in order on this thread: MPI
  // is initialized for calls from the main thread only (FUNNELED).
  if (mode() == Mode::Interpret ? (ddp ? check_inputs(g.signature, g.num_inputs, in, n_in, why) &&
                                             run_interpreted(parsed(g), in, n_in, out, why, kSpecializedRun)
                                       : interpret(g, in, n_in, out, why))
                                : g.fn(in, n_in, out, why)) {
    taken.unshare(out, g.num_outputs);
    return pass.done = true;
  }
  *why = "a guard failed: " + *why;
  return false;
}

// Runs the graph the way the mode and the inputs ask for; false (and why)
// when the eager body must run instead.
bool run_graph(const CompiledGraph& g, const IValue* in, size_t n_in, IValue* out, size_t n_out, std::string* why) {
  if (dtype_differs(g, in, n_in)) {
    // Other dtypes than the compiled code's: a variant compiled for them, if
    // the build made one (the plugin's dtypes= option)...
    for (CompiledGraph* v = load(const_cast<CompiledGraph&>(g).variant); v; v = load(v->variant))
      if (check_inputs(v->signature, v->num_inputs, in, n_in, nullptr)) {
        if (!run_graph(*v, in, n_in, out, n_out, why)) return false;
        v->calls.fetch_add(1, std::memory_order_relaxed);
        return true;
      }
    // ...or the graph specialized for them at run time (specialize.h). The
    // interpreter runs eager ops, so autograd records through it as in
    // interpret mode.
    if (const Specialization* s = specialization(g, in, n_in)) {
      if (!s->graph) {
        check_inputs(g.signature, g.num_inputs, in, n_in, why);
        *why = "a guard failed: " + *why + "; specialized for the call's dtypes, the graph cannot run: " + s->error;
        return false;
      }
      return g.train_step ? run_train_step(g, in, n_in, out, why, s->graph.get())
                          : run_interpreted(*s->graph, in, n_in, out, why, kSpecializedRun);
    }
  }
  if (g.train_step) return run_train_step(g, in, n_in, out, why, nullptr);
  if (mode() == Mode::Interpret) {
    // The interpreter runs eager ops: eager autograd records through it.
    if (interpret(g, in, n_in, out, why)) return true;
  } else if (grad_requested(in, n_in)) {
    return run_with_grad(g, in, n_in, out, n_out, why);  // one node on the tape
  } else {
    // Device inputs: a CUDA Graph per input signature (GRAPH_CUDA_GRAPHS=1).
    if (cuda_graphs_enabled() && any_cuda_input(in, n_in) && !*g.cuda_graph_blocker) {
      const int r = cuda_run_captured(g, in, n_in, out, n_out, why);
      if (r > 0) return true;
      if (r < 0) {
        *why = "a guard failed: " + *why;
        return false;
      }
    }
    if (g.fn(in, n_in, out, why)) return true;
  }
  *why = "a guard failed: " + *why;
  return false;
}

// The function whose next call on this thread runs its eager body (GRAPH_CHECK).
thread_local const StaticFunction* eager_turn = nullptr;

std::string demangled(const char* mangled) {
  int status = 0;
  char* d = abi::__cxa_demangle(mangled, nullptr, nullptr, &status);
  std::string r = status == 0 && d ? d : mangled;
  std::free(d);
  return r;
}

// How far one output of the graph is from the eager body's: the largest
// |graph - eager| over its elements, or why they cannot be compared.
struct Difference {
  double max = 0;
  std::string problem;  // empty: `max` holds
};

Difference tensor_difference(const Tensor& a, const Tensor& b) {
  if (a.defined() != b.defined()) return {0, "one side is undefined"};
  if (!a.defined() || a.numel() == 0) return {};
  if (a.sizes() != b.sizes()) return {0, "shapes differ: graph " + shape_str(a.sizes()) + ", eager " + shape_str(b.sizes())};
  const Tensor d = a.detach().to(kFloat64) - b.detach().to(kFloat64);
  return {amax(maximum(d, -d)).item<double>(), ""};
}

double as_double(const IValue& v) {
  if (const auto* i = std::get_if<int64_t>(&v)) return static_cast<double>(*i);
  if (const auto* f = std::get_if<double>(&v)) return *f;
  return std::get<bool>(v) ? 1.0 : 0.0;
}

Difference difference(const IValue& graph, const IValue& eager) {
  if (graph.index() != eager.index()) return {0, "kinds differ"};
  if (const Tensor* a = std::get_if<Tensor>(&graph)) return tensor_difference(*a, std::get<Tensor>(eager));
  if (const auto* a = std::get_if<std::vector<Tensor>>(&graph)) {
    const auto& b = std::get<std::vector<Tensor>>(eager);
    if (a->size() != b.size()) return {0, "lists differ in length"};
    Difference worst;
    for (size_t i = 0; i < a->size(); ++i) {
      Difference d = tensor_difference((*a)[i], b[i]);
      if (!d.problem.empty()) return {0, "element " + std::to_string(i) + ": " + d.problem};
      worst.max = std::max(worst.max, d.max);
    }
    return worst;
  }
  return {std::fabs(as_double(graph) - as_double(eager)), ""};
}

}  // namespace

StaticFunction::EagerTurn::EagerTurn(const StaticFunction* f, bool grad)
    : no_grad_(grad ? nullptr : std::make_unique<autograd::NoGradGuard>()) {
  eager_turn = f;
}

StaticFunction::EagerTurn::~EagerTurn() { eager_turn = nullptr; }

bool StaticFunction::take_eager_turn() const {
  if (eager_turn != this) return false;
  eager_turn = nullptr;
  return true;
}

// "model.cpp:12" for a function split by graph breaks: its regions' source.
static const char* split_source(const char* name) {
  const std::string prefix = std::string(name) + ".region";
  for (const CompiledGraph* g : registered_graphs())
    if (std::string_view(g->mangled_name).starts_with(prefix)) return g->source;
  return "?";
}

bool StaticFunction::writes_grads() {
  // The function's graph, or for a function split by graph breaks, a region's.
  const CompiledGraph* train = nullptr;
  if (const CompiledGraph* g = load(graph_)) {
    if (g->train_step) train = g;
  } else {
    const std::string prefix = std::string(name_) + ".region";
    for (const CompiledGraph* r : registered_graphs())
      if (r->train_step && std::string_view(r->mangled_name).starts_with(prefix)) train = r;
  }
  if (!train) return false;
  if (!said_not_compared_.exchange(true))
    std::fprintf(stderr, "graph check: %s (%s): not compared: a static train step writes .grad, and running its "
                 "eager body as well would apply the step twice\n", demangled(name_).c_str(), train->source);
  return true;
}

void StaticFunction::report_check(const IValue* graph, const IValue* eager, size_t n) {
  const CompiledGraph* g = load(graph_);
  std::string line = "graph check: " + demangled(name_) + " (" + (g ? g->source : split_source(name_)) + "):";
  for (size_t i = 0; i < n; ++i) {
    const Difference d = difference(graph[i], eager[i]);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.3g", std::fabs(d.max));  // never "-0"
    line += (i ? "; output " : " output ") + std::to_string(i) + " max |graph - eager| = " +
            (d.problem.empty() ? std::string(buf) : d.problem);
  }
  std::fprintf(stderr, "%s\n", line.c_str());
}

namespace {

// The node run_with_grad recorded for a graph's outputs, or null.
autograd::Node* static_node(const IValue* graph, size_t n) {
  for (size_t i = 0; i < n; ++i)
    if (const Tensor* t = std::get_if<Tensor>(&graph[i]); t && t->defined() && t->autograd_meta())
      if (autograd::Node* node = t->autograd_meta()->grad_fn.get(); node && node->name.starts_with("static graph ("))
        return node;
  return nullptr;
}

// Whether a gradient's difference from `want` (defined) is beyond what
// rounding explains: relative to want's size, at the precision of its dtype.
bool beyond_tolerance(double diff, const Tensor& want) {
  const double scale = want.numel() ? amax(abs(want.detach().to(kFloat64))).item<double>() : 0.0;
  const double rtol = want.dtype() == kFloat64 ? 1e-9 : 1e-4;
  return !(diff <= rtol * (1.0 + scale));  // NaN differences are mismatches too
}

}  // namespace

bool StaticFunction::static_node_of(const IValue* graph, size_t n) { return static_node(graph, n) != nullptr; }

void StaticFunction::check_gradients(const IValue* graph, const IValue* eager, size_t n) {
  autograd::Node* node = static_node(graph, n);
  const CompiledGraph* g = load(graph_);
  const CompiledGradient* d = g ? find_gradient(g->mangled_name, g->body_hash) : nullptr;
  if (!node || !d) return;
  std::vector<Tensor> eager_outputs(n);  // one per node output: the graph's outputs in order
  for (size_t i = 0; i < n; ++i)
    if (const Tensor* t = std::get_if<Tensor>(&eager[i])) eager_outputs[i] = *t;
  std::vector<size_t> inputs(d->grad_inputs, d->grad_inputs + d->num_grad_inputs);  // edge k: graph input inputs[k]
  const std::string head = "graph check: " + demangled(name_) + " (" + g->source + "):";
  const std::string source = g->source;
  node->backward = [inner = std::move(node->backward), targets = node->next, eager_outputs, inputs, head,
                    source](const std::vector<Tensor>& grads) {
    std::vector<Tensor> graph_grads = inner(grads);
    const std::vector<Tensor> eager_grads = autograd::grad_at(eager_outputs, grads, targets);
    std::string line = head;
    for (size_t k = 0; k < targets.size() && k < inputs.size(); ++k) {
      if (!targets[k].fn && !targets[k].leaf) continue;  // the input does not require grad
      const Tensor mine = k < graph_grads.size() ? graph_grads[k] : Tensor();
      // Eager autograd gives none where no path reaches the input; the graph
      // may give zeros there (a Loop that ran no iteration): the same numbers.
      const bool eager_none = mine.defined() && !eager_grads[k].defined();
      const Tensor want = eager_none ? zeros(mine.sizes(), mine.dtype()) : eager_grads[k];
      Difference diff = tensor_difference(mine, want);
      if (diff.problem.empty() && mine.defined() && mine.sizes() != targets[k].sizes)
        diff.problem = "shapes differ: graph " + shape_str(mine.sizes()) + ", input " + shape_str(targets[k].sizes);
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.3g", std::fabs(diff.max));
      const std::string what = "gradient of input " + std::to_string(inputs[k]);
      line += std::string(line == head ? " " : "; ") + what + " max |graph - eager| = " +
              (diff.problem.empty() ? std::string(buf) : diff.problem) + (eager_none ? " (eager: none)" : "");
      if (!diff.problem.empty() || (want.defined() && beyond_tolerance(diff.max, want)))
        std::fprintf(stderr, "%s: error: graph check: the %s differs from eager autograd's (%s)\n", source.c_str(),
                     what.c_str(), diff.problem.empty() ? buf : diff.problem.c_str());
    }
    std::fprintf(stderr, "%s\n", line.c_str());
    return graph_grads;
  };
}

StaticFunction::StaticFunction(const char* mangled_name, const char* body_hash)
    : name_(mangled_name), hash_(body_hash), graph_(find_graph(mangled_name, body_hash)) {}

bool StaticFunction::ready() {
  CompiledGraph* g = load(graph_);
  if (!g) {
    // Registrars of other translation units may run after this object was
    // made (a call during static initialization): look again.
    g = find_graph(name_, hash_);
    if (!g) {
      explain(name_, "no compiled graph is registered for this body (was it built with cxxgraph_static_graphs?)");
      return false;
    }
    std::atomic_ref<CompiledGraph*>(graph_).store(g, std::memory_order_release);
  }
  if (mode() == Mode::Eager) {
    explain(g->source, "the mode is eager (GRAPH_MODE=eager or graph::set_mode)");
    return false;
  }
  if (tracing()) {  // the tracer sees eager ops only
    explain(g->source, "graph::trace is recording this thread's eager ops");
    return false;
  }
  return true;
}

bool StaticFunction::split_ready() {
  if (mode() == Mode::Eager) {
    explain(split_source(name_), "the mode is eager (GRAPH_MODE=eager or graph::set_mode)");
    return false;
  }
  if (tracing()) {
    explain(split_source(name_), "graph::trace is recording this thread's eager ops");
    return false;
  }
  return true;
}

bool StaticFunction::invoke(const IValue* in, size_t n_in, IValue* out, size_t n_out) {
  CompiledGraph* g = load(graph_);
  if (n_in != g->num_inputs || n_out != g->num_outputs) {
    explain(g->source, "the compiled graph's signature does not match the call");
    return false;
  }
  std::string why;
  if (!run_graph(*g, in, n_in, out, n_out, &why)) {
    explain(g->source, why);
    return false;
  }
  g->calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace detail
}  // namespace graph

namespace graph::detail {

namespace {
std::atomic<int>& cuda_graphs_flag() {
  static std::atomic<int> flag = [] {
    const char* e = std::getenv("GRAPH_CUDA_GRAPHS");
    return e && std::string(e) == "1" ? 1 : 0;
  }();
  return flag;
}
}  // namespace

bool cuda_graphs_enabled() { return cuda_graphs_flag().load() != 0; }
void set_cuda_graphs(bool on) { cuda_graphs_flag().store(on ? 1 : 0); }

}  // namespace graph::detail
