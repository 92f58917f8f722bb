// graph::trace (trace.h): records the eager ops a function runs into a graph.
//
// The eager entry points call record_op() while a Tracer is active on their
// thread. The Tracer maps each tensor it has seen (by storage, offset,
// geometry and dtype: two tensors with the same key hold the same values) to
// a value of the trace: a graph input, a captured param, a constant or a
// node's output. finish() keeps the nodes the outputs depend on and builds
// the ir::Graph from them.
//
// Host reads (`if (t)`, `t.item<T>()`) of values derived from the inputs are
// the decisions a trace freezes: each is reported once per source line, which
// comes from the caller's return address and the DWARF line table (libdw).
#include "graph/trace.h"

#include <cxxabi.h>
#include <dlfcn.h>
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <mutex>
#include <set>
#include <unordered_map>

#include "graph/error.h"
#include "graph/interpreter.h"
#include "graph/ir/verifier.h"
#include "graph/op_table.h"
#include "storage.h"

namespace graph {
namespace detail {

constinit thread_local Tracer* active_tracer [[gnu::tls_model("initial-exec")]] = nullptr;

namespace {

// ---- where a host read happened ----------------------------------------------

struct Site {
  std::string file;  // as the line table names it; empty when unknown
  int line = 0;
  std::string function;
};

std::string demangle(const char* name) {
  if (!name) return {};
  int status = 0;
  char* d = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  std::string out = status == 0 && d ? d : name;
  std::free(d);
  return out;
}

// The innermost function around `pc`, inlined ones included (the symbol
// table names only the function they were inlined into).
std::string function_at(Dwfl_Module* mod, uintptr_t pc) {
  Dwarf_Addr bias = 0;
  Dwarf_Die* cu = dwfl_module_addrdie(mod, pc, &bias);
  if (!cu) return {};
  Dwarf_Die* scopes = nullptr;
  const int n = dwarf_getscopes(cu, pc - bias, &scopes);
  std::string name;
  for (int i = 0; i < n && name.empty(); ++i) {
    const int tag = dwarf_tag(&scopes[i]);
    if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine) continue;
    Dwarf_Attribute attr;  // through DW_AT_abstract_origin and DW_AT_specification
    for (int at : {DW_AT_linkage_name, DW_AT_name})
      if (name.empty() && dwarf_attr_integrate(&scopes[i], at, &attr)) name = demangle(dwarf_formstring(&attr));
  }
  std::free(scopes);
  return name;
}

// The source line of `pc` from the DWARF line table of the module holding it.
Site resolve_with_libdw(uintptr_t pc) {
  Site site;
  char* debuginfo_path = nullptr;
  const Dwfl_Callbacks callbacks = {dwfl_linux_proc_find_elf, dwfl_standard_find_debuginfo, nullptr,
                                    &debuginfo_path};
  Dwfl* dwfl = dwfl_begin(&callbacks);
  if (!dwfl) return site;
  if (dwfl_linux_proc_report(dwfl, getpid()) == 0 && dwfl_report_end(dwfl, nullptr, nullptr) == 0) {
    if (Dwfl_Module* mod = dwfl_addrmodule(dwfl, pc)) {
      site.function = function_at(mod, pc);
      if (site.function.empty()) site.function = demangle(dwfl_module_addrname(mod, pc));
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
          site.file = file;
          site.line = lineno;
        }
      }
    }
  }
  dwfl_end(dwfl);
  return site;
}

// The caller of a hooked function: the line of the call instruction that
// returns to `return_address`. Cached: each address is resolved once.
Site resolve(void* return_address) {
  static std::mutex mutex;
  static std::unordered_map<void*, Site> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(return_address);
  if (it != cache.end()) return it->second;
  // The return address is the instruction after the call, which may belong
  // to the next line: look up the byte before it.
  Site site = resolve_with_libdw(reinterpret_cast<uintptr_t>(return_address) - 1);
  if (site.function.empty()) {  // no symbol table either: what the dynamic linker knows
    Dl_info info{};
    if (dladdr(return_address, &info) && info.dli_sname) site.function = demangle(info.dli_sname);
  }
  return cache[return_address] = site;
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

TraceWarning make_warning(const Site& site, const char* kind) {
  const std::string where = site.line > 0 ? "at " + base_name(site.file) + ":" + std::to_string(site.line)
                            : "in " + (site.function.empty() ? std::string("an unknown function") : site.function) +
                                  " (source line unknown: no debug information)";
  const std::string what = std::strcmp(kind, "item") == 0
                               ? "a value read with item() " + where + " depended on tensor values"
                               : "a branch " + where + " depended on tensor values";
  TraceWarning w;
  w.file = site.file;
  w.line = site.line;
  w.function = site.function;
  w.message = "warning: graph::trace: " + what +
              "; the trace recorded only the path this input took (use [[graph::static]] to keep both)";
  return w;
}

// Each site is printed once per process, however many traces reach it.
void print_once(const TraceWarning& w) {
  static std::mutex mutex;
  static std::set<std::string> printed;
  std::lock_guard lock(mutex);
  if (printed.insert(w.message).second) std::fprintf(stderr, "%s\n", w.message.c_str());
}

// Ops that return their input's values unchanged (a copy): no node.
bool is_identity(std::string_view op) { return op == "clone"; }

ir::Type type_of(const Tensor& t) {
  std::vector<ir::Dim> dims;
  for (int64_t s : t.sizes()) dims.push_back(ir::Dim::of(s));
  return ir::Type::tensor(t.dtype(), std::move(dims));
}

}  // namespace

// ---- the tracer ----------------------------------------------------------------

class Tracer {
 public:
  Tracer(const std::vector<Tensor>& inputs, const TraceOptions& options) : options_(options) {
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (!inputs[i].defined()) throw Error("graph::trace: example input " + std::to_string(i) + " is undefined");
      bind(inputs[i], add({Val::Kind::Input, i, Scalar(false), true, type_of(inputs[i]), {}}));
    }
  }

  void record(std::string_view op, const std::vector<TraceInput>& inputs, ir::Attributes attrs, const Tensor& out) {
    std::vector<int> ids;
    bool derived = false;
    for (const TraceInput& in : inputs) {
      ids.push_back(value_of(in));
      derived = derived || values_[ids.back()].derived;
    }
    if (is_identity(op)) return bind(out, ids.at(0));
    const bool known = find_op(op) != nullptr;
    // An op of constants alone needs no node: its result is captured when used.
    if (!known && !derived) return;
    const int id = add({Val::Kind::Node, 0, Scalar(false), derived, type_of(out), {}});
    nodes_.push_back({std::string(op), std::move(ids), std::move(attrs), id, known});
    bind(out, id);
  }

  void host_read(const Tensor& t, const char* kind, void* return_address) {
    auto it = by_key_.find(key(t));
    if (it == by_key_.end() || !values_[it->second.id].derived) return;
    TraceWarning w = make_warning(resolve(return_address), kind);
    for (const TraceWarning& seen : warnings_)
      if (seen.message == w.message) return;
    if (options_.print_warnings) print_once(w);
    warnings_.push_back(std::move(w));
  }

  TracedGraph finish(const std::vector<Tensor>& outputs);

 private:
  // An output the trace saw no op compute from the inputs: a constant, or
  // computed where the hooks do not see (a compiled [[graph::static]] graph).
  void warn_constant_output(size_t i) {
    TraceWarning w;
    w.message = "warning: graph::trace: output " + std::to_string(i) +
                " does not depend on the inputs through any op the trace saw; it is returned as a constant "
                "(call [[graph::static]] functions in eager mode while tracing them)";
    if (options_.print_warnings) print_once(w);
    warnings_.push_back(std::move(w));
  }

  // A value of the trace. Param values keep their tensor; Constant values
  // their scalar.
  struct Val {
    enum class Kind : uint8_t { Input, Param, Node, Constant, Undefined };
    Kind kind;
    size_t input;  // which of fn's inputs, for Input values
    Scalar constant;
    bool derived;  // computed from the inputs
    ir::Type type;
    Tensor tensor;
  };
  struct Rec {
    std::string op;
    std::vector<int> inputs;
    ir::Attributes attrs;
    int output;
    bool known;  // an op-table entry
  };
  // A seen tensor; holding it keeps its storage's address from being reused.
  struct Seen {
    int id;
    Tensor tensor;
  };

  static std::string key(const Tensor& t) {
    std::string k;
    auto put = [&k](const auto& v) { k.append(reinterpret_cast<const char*>(&v), sizeof v); };
    put(t.storage().get());
    put(t.storage_offset());
    put(t.dtype());
    for (int64_t s : t.sizes()) put(s);
    put(int64_t{-1});
    for (int64_t s : t.strides()) put(s);
    return k;
  }

  int add(Val v) {
    values_.push_back(std::move(v));
    return static_cast<int>(values_.size()) - 1;
  }
  void bind(const Tensor& t, int id) { by_key_[key(t)] = {id, t}; }

  int value_of(const TraceInput& in) {
    if (const Scalar* s = std::get_if<Scalar>(&in))
      return add({Val::Kind::Constant, 0, *s, false, {}, {}});
    const Tensor& t = std::get<Tensor>(in);
    if (!t.defined()) return add({Val::Kind::Undefined, 0, Scalar(false), false, ir::Type::tensor(), {}});
    auto it = by_key_.find(key(t));
    if (it != by_key_.end()) return it->second.id;
    const int id = add({Val::Kind::Param, 0, Scalar(false), false, type_of(t), t.detach()});
    bind(t, id);
    return id;
  }

  const TraceOptions& options_;
  std::vector<Val> values_;
  std::vector<Rec> nodes_;
  std::unordered_map<std::string, Seen> by_key_;
  std::vector<TraceWarning> warnings_;
};

namespace {

// Builds the ir::Graph of a finished trace from the values it kept.
class GraphBuilder {
 public:
  explicit GraphBuilder(ir::Graph& g) : g_(g) {}
  ir::Value*& slot(int id) { return ir_[id]; }

  ir::Value* constant(const Scalar& s) {
    if (s.dtype() == kBool) return ir::add_constant(g_.top(), s.to<bool>());
    if (s.is_floating()) return ir::add_constant(g_.top(), s.to_double());
    return ir::add_constant(g_.top(), s.to_int());
  }
  ir::Value* undefined() { return g_.top()->append("undefined")->add_output(ir::Type::tensor()); }

 private:
  ir::Graph& g_;
  std::unordered_map<int, ir::Value*> ir_;
};

}  // namespace

TracedGraph Tracer::finish(const std::vector<Tensor>& outputs) {
  std::vector<int> out_ids;
  for (const Tensor& t : outputs) out_ids.push_back(value_of(t));
  for (size_t i = 0; i < out_ids.size(); ++i)
    if (!values_[out_ids[i]].derived) warn_constant_output(i);

  // Liveness: nodes are in execution order, so one backward sweep suffices.
  std::vector<bool> live(values_.size(), false);
  for (int id : out_ids) live[id] = true;
  for (auto r = nodes_.rbegin(); r != nodes_.rend(); ++r) {
    if (!live[r->output]) continue;
    if (!r->known) {
      throw Error("graph::trace: '" + r->op +
                  "' has no entry in the op table, so a trace cannot record it, and the outputs depend on it "
                  "(shape " + values_[r->output].type.str() + ")");
    }
    for (int in : r->inputs) live[in] = true;
  }

  TracedGraph result;
  result.graph = std::make_unique<ir::Graph>(options_.name);
  ir::Graph& g = *result.graph;
  GraphBuilder b(g);
  for (size_t i = 0; i < values_.size(); ++i) {
    const Val& v = values_[i];
    if (v.kind != Val::Kind::Input) continue;
    const size_t n = v.input;
    b.slot(static_cast<int>(i)) = g.add_input(
        v.type, n < options_.input_names.size() ? options_.input_names[n] : "x" + std::to_string(n));
  }
  int params = 0;
  for (size_t i = 0; i < values_.size(); ++i) {
    const Val& v = values_[i];
    if (v.kind != Val::Kind::Param || !live[i]) continue;
    const std::string name = "param" + std::to_string(params++);
    b.slot(static_cast<int>(i)) = g.add_input(v.type, name);
    result.params.emplace(name, v.tensor);
  }
  // Constants and undefined values are made where they are used.
  auto operand = [&](int id) {
    const Val& v = values_[id];
    if (v.kind == Val::Kind::Constant) return b.constant(v.constant);
    if (v.kind == Val::Kind::Undefined) return b.undefined();
    return b.slot(id);
  };
  for (const Rec& r : nodes_) {
    if (!live[r.output]) continue;
    std::vector<ir::Value*> ins;
    for (int in : r.inputs) ins.push_back(operand(in));
    ir::Node* n = g.top()->append(r.op);
    for (ir::Value* in : ins) n->add_input(in);
    n->attrs() = r.attrs;
    b.slot(r.output) = n->add_output(values_[r.output].type, r.op);
  }
  for (int id : out_ids) g.top()->add_return(operand(id));
  ir::verify_or_throw(g);
  result.warnings = warnings_;
  return result;
}

ir::Attributes reduce_attrs(const Shape& dims, bool keepdim, int64_t rank) {
  if (dims.empty() && !keepdim) return {};
  std::vector<int64_t> d = ints(dims);
  if (d.empty())  // every dim, kept as size 1: the IR needs them listed
    for (int64_t i = 0; i < rank; ++i) d.push_back(i);
  if (d.size() == 1) return {{"dim", d[0]}, {"keepdim", keepdim}};
  return {{"dim", d}, {"keepdim", keepdim}};
}

ir::Attributes pool_attrs(const Shape& kernel, const Shape& stride, const Shape& padding) {
  ir::Attributes a{{"kernel", ints(kernel)}, {"padding", ints(padding)}};
  if (!stride.empty()) a.emplace("stride", ints(stride));
  return a;
}

void record_op(Tracer& t, std::string_view op, const std::vector<TraceInput>& inputs, ir::Attributes attrs,
               const Tensor& out) {
  t.record(op, inputs, std::move(attrs), out);
}

void trace_host_read(const Tensor& t, const char* kind, void* return_address) {
  if (active_tracer) active_tracer->host_read(t, kind, return_address);
}

}  // namespace detail

// ---- the public entry points ---------------------------------------------------

namespace {

// This thread's trace, for the nested-trace check (active_tracer is null
// while an op runs, so it cannot tell).
thread_local bool trace_running = false;

// Installs the tracer for fn's run, and removes it however fn ends.
class TraceScope {
 public:
  explicit TraceScope(detail::Tracer& t) {
    trace_running = true;
    detail::active_tracer = &t;
  }
  ~TraceScope() {
    detail::active_tracer = nullptr;
    trace_running = false;
  }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;
};

}  // namespace

TracedGraph trace(const TraceFn& fn, std::vector<Tensor> example_inputs, TraceOptions options) {
  if (trace_running)
    throw Error("graph::trace: a trace is already running on this thread; traces do not nest");
  if (!fn) throw Error("graph::trace: the function to trace is empty");
  detail::Tracer tracer(example_inputs, options);
  std::vector<Tensor> outputs;
  {
    TraceScope scope(tracer);
    outputs = fn(example_inputs);
  }
  return tracer.finish(outputs);
}

TracedGraph trace(const std::function<Tensor(const Tensor&)>& fn, const Tensor& example_input, TraceOptions options) {
  if (!fn) throw Error("graph::trace: the function to trace is empty");
  return trace([&fn](const std::vector<Tensor>& in) { return std::vector<Tensor>{fn(in[0])}; }, {example_input},
               std::move(options));
}

std::vector<Tensor> TracedGraph::run(const std::vector<Tensor>& inputs) const {
  if (!graph) throw Error("TracedGraph::run: no graph");
  const size_t n = graph->inputs().size() - params.size();
  if (inputs.size() != n)
    throw Error("TracedGraph::run: the trace takes " + std::to_string(n) + " inputs, got " +
                std::to_string(inputs.size()));
  std::vector<IValue> in(inputs.begin(), inputs.end());
  for (size_t i = n; i < graph->inputs().size(); ++i) in.push_back(params.at(graph->inputs()[i]->name()));
  std::vector<Tensor> out;
  for (IValue& v : graph::run(*graph, std::move(in))) out.push_back(std::get<Tensor>(std::move(v)));
  return out;
}

}  // namespace graph
