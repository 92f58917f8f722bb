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

// The signature with the call's dtypes, and whether the call passes it:
// then nothing but dtypes kept the compiled code from the call.
bool only_dtypes_differ(const CompiledGraph& g, const IValue* in, size_t n_in, std::vector<DType>* key) {
  std::vector<InputGuard> rows(g.signature, g.signature + g.num_inputs);
  for (size_t i = 0; i < n_in; ++i) {
    if (const Tensor* t = defined_tensor(in[i]); t && rows[i].kind == ir::InputKind::Tensor) rows[i].dtype = t->dtype();
    key->push_back(rows[i].dtype);
  }
  return check_inputs(rows.data(), rows.size(), in, n_in, nullptr);
}

std::unique_ptr<Specialization> make(const CompiledGraph& g, const IValue* in, size_t n_in) {
  auto s = std::make_unique<Specialization>();
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
    if (const Tensor* t = defined_tensor(in[i]); t && g.signature[i].kind == ir::InputKind::Tensor &&
                                                 t->dtype() != g.signature[i].dtype)
      return true;
  return false;
}

const Specialization* specialization(const CompiledGraph& g, const IValue* in, size_t n_in) {
  if (!g.lowered_ir || !*g.lowered_ir || n_in != g.num_inputs || !dtype_differs(g, in, n_in)) return nullptr;
  std::vector<DType> key;
  if (!only_dtypes_differ(g, in, n_in, &key)) return nullptr;
  static std::mutex mu;
  static std::map<std::pair<const CompiledGraph*, std::vector<DType>>, std::unique_ptr<Specialization>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = cache[{&g, key}];
  if (!slot) {
    slot = make(g, in, n_in);  // once per graph and dtypes: the pipeline takes milliseconds
    explain_made(g, in, n_in, *slot);
  }
  return slot.get();
}

}  // namespace graph::detail
