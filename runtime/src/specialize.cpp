// Specializing a compiled graph for a call's dtypes (specialize.h). As
// torch.compile recompiles on a failed dtype guard: the generated code is
// built for the dtypes the plugin inferred (float32 tensors, int64 indices),
// and any other dtypes get the same graph re-optimized for them, so that a
// float64 or int64 call runs the graph, not silently the eager body.
#include "specialize.h"

#include <cstdio>
#include <map>
#include <mutex>
#include <vector>

#include "graph/detail/generated_support.h"
#include "graph/error.h"
#include "graph/ir/compile.h"

namespace graph::detail {
namespace {

const Tensor* defined_tensor(const IValue& a) {
  const Tensor* t = std::get_if<Tensor>(&a);
  return t && t->defined() ? t : nullptr;
}

// The dtype the call gives input i where the guard row checks one: a defined
// tensor's own, else the row's.
DType call_dtype(const InputGuard& row, const IValue& a) {
  const Tensor* t = defined_tensor(a);
  return t && row.kind == ir::InputKind::Tensor ? t->dtype() : row.dtype;
}

// Whether `s` was made for this call's dtypes (no allocation).
bool made_for(const Specialization& s, const CompiledGraph& g, const IValue* in, size_t n_in) {
  for (size_t i = 0; i < n_in; ++i)
    if (call_dtype(g.signature[i], in[i]) != s.rows[i].dtype) return false;
  return true;
}

std::unique_ptr<Specialization> make(const CompiledGraph& g, const IValue* in, size_t n_in,
                                     std::vector<InputGuard> rows) {
  auto s = std::make_unique<Specialization>();
  s->rows = std::move(rows);
  try {
    std::unique_ptr<ir::Graph> lowered = ir::parse(g.lowered_ir);
    if (lowered->inputs().size() != n_in) throw Error("the lowered graph has another number of inputs");
    for (size_t i = 0; i < n_in; ++i) {
      ir::Value* v = lowered->inputs()[i].get();
      if (const Tensor* t = defined_tensor(in[i]); t && v->type().is_tensor()) {
        ir::Type ty = v->type();
        ty.dtype = t->dtype();
        v->set_type(std::move(ty));
      }
    }
    s->graph = ir::optimize(*lowered);
  } catch (const Error& e) {  // ir::GraphError too: a dtype the graph cannot take, at its line
    s->error = e.what();
  }
  return s;
}

void explain_made(const CompiledGraph& g, const IValue* in, size_t n_in, const Specialization& s) {
  if (!explain_enabled()) return;
  std::string why;
  check_inputs(g.signature, g.num_inputs, in, n_in, &why);
  if (s.graph)
    std::fprintf(stderr, "graph: %s runs its graph specialized at run time for the call's dtypes, on the interpreter "
                 "(the compiled code's guard: %s)\n", g.source, why.c_str());
  else
    std::fprintf(stderr, "graph: %s cannot specialize its graph for the call's dtypes (%s): %s\n", g.source,
                 why.c_str(), s.error.c_str());
}

}  // namespace

bool dtype_differs(const CompiledGraph& g, const IValue* in, size_t n_in) {
  for (size_t i = 0; i < n_in && i < g.num_inputs; ++i)
    if (call_dtype(g.signature[i], in[i]) != g.signature[i].dtype) return true;
  return false;
}

const Specialization* specialization(const CompiledGraph& g, const IValue* in, size_t n_in) {
  if (!g.lowered_ir || !*g.lowered_ir || n_in != g.num_inputs) return nullptr;
  // A loop calls one graph with the same dtypes again and again: the last
  // specialization this thread used spares the allocations, the lock and the
  // lookup. Its rows still check the call: only dtypes may differ from the
  // compiled code's guard; a shape or kind it refuses is refused here too.
  thread_local const CompiledGraph* last_graph = nullptr;
  thread_local const Specialization* last = nullptr;
  if (last_graph == &g && made_for(*last, g, in, n_in))
    return check_inputs(last->rows.data(), n_in, in, n_in, nullptr) ? last : nullptr;

  std::vector<InputGuard> rows(g.signature, g.signature + n_in);
  for (size_t i = 0; i < n_in; ++i) rows[i].dtype = call_dtype(g.signature[i], in[i]);
  if (!check_inputs(rows.data(), n_in, in, n_in, nullptr)) return nullptr;  // the caller explains it
  std::vector<DType> key(n_in);
  for (size_t i = 0; i < n_in; ++i) key[i] = rows[i].dtype;
  static std::mutex mu;
  static std::map<std::pair<const CompiledGraph*, std::vector<DType>>, std::unique_ptr<Specialization>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{&g, std::move(key)}];
  if (!slot) {
    slot = make(g, in, n_in, std::move(rows));  // once per graph and dtypes: the pipeline takes milliseconds
    explain_made(g, in, n_in, *slot);
  }
  last_graph = &g;
  last = slot.get();  // never freed: the pointer stays valid
  return last;
}

}  // namespace graph::detail
