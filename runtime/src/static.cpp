// The registry of compiled graphs and the dispatch behind the prologue that
// the generator inserts into [[graph::static]] functions (static.h).
#include "graph/static.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>

namespace graph {

namespace {

Mode mode_from_env() {
  const char* m = std::getenv("GRAPH_MODE");
  return m && std::strcmp(m, "eager") == 0 ? Mode::Eager : Mode::Static;
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

void register_graph(CompiledGraph* g) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
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
    if (mangled_name == g->mangled_name) n += g->calls.load();
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

void explain(std::string_view function, std::string_view why) {
  if (!explain_enabled()) return;
  std::fprintf(stderr, "graph: %.*s ran eagerly: %.*s\n", static_cast<int>(function.size()),
               function.data(), static_cast<int>(why.size()), why.data());
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
  return true;
}

bool StaticFunction::invoke(const Arg* in, size_t n_in, Arg* out, size_t n_out) {
  CompiledGraph* g = load(graph_);
  if (n_in != g->num_inputs || n_out != g->num_outputs) {
    explain(g->source, "the compiled graph's signature does not match the call");
    return false;
  }
  std::string why;
  if (!g->fn(in, n_in, out, &why)) {
    explain(g->source, "a guard failed: " + why);
    return false;
  }
  g->calls.fetch_add(1, std::memory_order_relaxed);
  return true;
}

}  // namespace detail
}  // namespace graph
