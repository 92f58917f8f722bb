#pragma once
// How a call to a [[graph::static]] function reaches its compiled graph.
//
// The generator inserts a one-line prologue at the top of each annotated body:
//
//   static ::graph::detail::StaticFunction _graph_sf("<mangled>", "<hash>");
//   if (::graph::Tensor _graph_r; _graph_sf.run(_graph_r, [&]() -> ::graph::Tensor { return f(x, flag); }, x, flag))
//     return _graph_r;
//
// and the generated kernel source registers the compiled graph under the same
// mangled name and body hash. run() returns false, and the eager body runs,
// when no graph is registered, when the mode is eager (GRAPH_MODE=eager or
// graph::set_mode), or when a guard fails (an input's dtype or rank differs
// from what the graph was compiled for); GRAPH_EXPLAIN=1 prints why.
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

#include "graph/ir/signature.h"
#include "graph/ivalue.h"
#include "graph/tensor.h"

namespace graph {
namespace autograd {
class NoGradGuard;
}
namespace optim {
class Optimizer;
}

// Static: the generated code; Eager: the function's own body; Interpret: the
// graph the generated code was made from, run by the interpreter
// (interpreter.h) — for checking the generator and the interpreter against
// each other and against eager.
enum class Mode { Static, Eager, Interpret };
// Process-wide mode; starts from GRAPH_MODE (unset or "static": Static;
// "eager"; "interpret").
void set_mode(Mode m);
Mode mode();

namespace detail {

// A static train step's optimizer as the prologue passes it to the graph: an
// int handle (generated_support.h: optimizer_guard checks it at each call).
int64_t optimizer_handle(const optim::Optimizer* opt);

// One input of a graph's call contract (ir/signature.h's InputSpec) as the
// generated source writes it: a literal, so the signature is a constexpr
// table there that the graph function's guards and the registry's
// CompiledGraph (interpret mode) both read (check_inputs in
// generated_support.h).
struct InputGuard {
  const char* name;
  ir::InputKind kind;
  DType dtype;            // Tensor only
  bool may_be_undefined;  // Tensor only
  int64_t rank;           // Tensor only; -1: any rank
  const int64_t* sizes;   // Tensor of known rank: `rank` sizes, -1 for any; or nullptr
};

// The signature every generated graph function has. Returns false (and sets
// *why) when a guard fails; throws graph::Error on errors inside the graph.
using GraphFn = bool (*)(const IValue* inputs, size_t num_inputs, IValue* outputs, std::string* why);

struct CompiledGraph {
  const char* mangled_name;  // the annotated function's mangled name
  const char* body_hash;     // hash of its body's source
  const char* source;        // "model.cpp:12" for messages
  GraphFn fn;
  size_t num_inputs;
  size_t num_outputs;
  const InputGuard* signature;     // num_inputs rows: what each input must be
  const char* ir_text;             // the graph as IR text (GRAPH_MODE=interpret)
  // Why it must not be captured into a CUDA Graph, "" when it may be
  // (ir/device_control.h's cuda_graph_blocker, run at build time).
  const char* cuda_graph_blocker;
  // A static train step (ir/compile.h's is_train_step): it writes .grad
  // itself, so it runs with grad mode off and GRAPH_CHECK does not rerun it.
  bool train_step = false;
  // The graph as lowered, before any pass ("" when unknown): a call whose
  // tensors have other dtypes than `signature`'s runs this graph specialized
  // for them (optimized at run time, cached, on the interpreter) instead of
  // the eager body.
  const char* lowered_ir = "";
  // The next variant of the same function compiled for other dtypes (the
  // plugin's dtypes= option; its body_hash is "<hash>:<dtype>"), linked at
  // registration; null at the end of the list.
  CompiledGraph* variant = nullptr;
  std::atomic<uint64_t> calls{0};  // completed graph runs
};

void register_graph(CompiledGraph* g);
// The registered graph for (mangled, hash), or nullptr.
CompiledGraph* find_graph(std::string_view mangled_name, std::string_view body_hash);
// Completed graph runs of the function `mangled_name` (any hash, dtype
// variants not counted twice); for tests.
uint64_t graph_calls(std::string_view mangled_name);
// Every registered graph, in registration order.
std::vector<const CompiledGraph*> registered_graphs();

struct Registrar {
  explicit Registrar(CompiledGraph* g) { register_graph(g); }
};

bool explain_enabled();
void explain(std::string_view function, std::string_view why);

// An int list (a `Shape` member a graph takes as an attribute at run time)
// as the 1-D int64 tensor the graph reads it from.
inline Tensor int_list_tensor(const Shape& v) {
  Tensor t = empty(Shape{static_cast<int64_t>(v.size())}, kInt64);
  for (size_t i = 0; i < v.size(); ++i) t.data_ptr<int64_t>()[i] = v[i];
  return t;
}

// A tensor the prologue lends (a by-value parameter, passed as std::move(p)):
// moved into the argument array, no reference count taken, and moved back
// after the call (StaticFunction::run).
inline IValue to_arg(Tensor&& v) { return IValue(std::in_place_index<0>, std::move(v)); }

template <class T>
IValue to_arg(const T& v) {
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>>) return v;
  else if constexpr (std::is_same_v<T, Shape>) return int_list_tensor(v);
  else if constexpr (std::is_same_v<T, std::vector<int64_t>> || std::is_same_v<T, std::vector<int>> ||
                     std::is_same_v<T, std::vector<long long>>)
    return int_list_tensor(Shape(v.begin(), v.end()));
  else if constexpr (std::is_same_v<T, bool>) return v;
  else if constexpr (std::is_integral_v<T>) return static_cast<int64_t>(v);
  else if constexpr (std::is_floating_point_v<T>) return static_cast<double>(v);
  else static_assert(!sizeof(T), "static graph inputs are tensors and scalars");
}

// A graph output as the C++ type T the function returns (or one element of it).
template <class T>
T from_arg(IValue&& a) {
  if constexpr (std::is_same_v<T, Tensor> || std::is_same_v<T, std::vector<Tensor>>) return std::get<T>(std::move(a));
  else if constexpr (std::is_same_v<T, bool>) return std::get<bool>(a);
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(std::get<int64_t>(a));
  else if constexpr (std::is_floating_point_v<T>) return static_cast<T>(std::get<double>(a));
  else static_assert(!sizeof(T), "static graph results are tensors, scalars and lists of tensors");
}

// How many graph outputs a result of type R is: one, or one per element of a
// std::tuple / std::pair; and R made from them.
template <class R>
struct Results {
  static constexpr size_t size = 1;
  static void assign(R& r, IValue* out) {
    if constexpr (std::is_same_v<R, Tensor>) r = std::get<Tensor>(std::move(out[0]));  // one move, no temporary
    else r = from_arg<R>(std::move(out[0]));
  }
  static void to_args(const R& r, IValue* out) { out[0] = to_arg(r); }
};
template <class... T>
struct Results<std::tuple<T...>> {
  static constexpr size_t size = sizeof...(T);
  static void assign(std::tuple<T...>& r, IValue* out) {
    [&]<size_t... I>(std::index_sequence<I...>) {
      ((std::get<I>(r) = from_arg<T>(std::move(out[I]))), ...);
    }(std::index_sequence_for<T...>{});
  }
  static void to_args(const std::tuple<T...>& r, IValue* out) {
    [&]<size_t... I>(std::index_sequence<I...>) { ((out[I] = to_arg(std::get<I>(r))), ...); }(std::index_sequence_for<T...>{});
  }
};
template <class A, class B>
struct Results<std::pair<A, B>> {
  static constexpr size_t size = 2;
  static void assign(std::pair<A, B>& r, IValue* out) {
    r.first = from_arg<A>(std::move(out[0]));
    r.second = from_arg<B>(std::move(out[1]));
  }
  static void to_args(const std::pair<A, B>& r, IValue* out) {
    out[0] = to_arg(r.first);
    out[1] = to_arg(r.second);
  }
};

// GRAPH_CHECK=1: every graph call also runs the eager body and prints to
// stderr, per output, the largest |graph - eager|; the graph's result is
// returned. When the call is one node on the tape (its inputs require grad),
// the eager body runs with grad on, and that node's backward also runs the
// eager body's backward and prints, per input gradient, the largest
// difference (or that one side is undefined); a difference beyond tolerance
// is also printed as an error at the function's line.
bool check_enabled();

class StaticFunction {
 public:
  StaticFunction(const char* mangled_name, const char* body_hash);

  // Runs the compiled graph on `args`, storing its outputs in `result` (a
  // tuple or pair gets one output per element). False means "run the eager
  // body". `eager` calls the function again and runs its body (for
  // GRAPH_CHECK), or is nullptr where the prologue cannot call it (lambdas).
  // A tensor passed as an rvalue is borrowed: moved into the graph's inputs
  // and moved back before run returns (copying it is two atomic reference
  // counts, a fifth of a one-op graph's call); the prologue passes by-value
  // tensor parameters so, the eager body then finds them as they were.
  template <class R, class E, class... A>
  bool run(R& result, E&& eager, A&&... args) {
    if (!begin()) return false;
    IValue in[sizeof...(A) ? sizeof...(A) : 1] = {to_arg(std::forward<A>(args))...};
    IValue out[Results<R>::size];
    const bool ran = invoke(in, sizeof...(A), out, Results<R>::size);
    [[maybe_unused]] size_t k = 0;
    (give_back(std::forward<A>(args), in[k++]), ...);
    if (!ran) return false;
    Results<R>::assign(result, out);
    if constexpr (!std::is_null_pointer_v<std::remove_cvref_t<E>>)
      if (check_enabled()) check(result, eager);
    return true;
  }

  // A function split by graph breaks: `split` runs its static regions (each
  // its own StaticFunction, named "<mangled>.region<k>") and the eager
  // statements between them, and gives the function's result. False means
  // "run the eager body": the mode is eager, the thread is tracing, or this
  // is GRAPH_CHECK's eager turn. GRAPH_CHECK compares the whole result.
  template <class R, class E, class S>
  bool run_split(R& result, E&& eager, S&& split) {
    if (take_eager_turn()) return false;
    if (!split_ready()) return false;
    result = split();
    if constexpr (!std::is_null_pointer_v<std::remove_cvref_t<E>>)
      if (check_enabled()) check(result, eager);
    return true;
  }

 private:
  bool split_ready();  // mode is Static or Interpret and not tracing; explains otherwise

  // GRAPH_CHECK: the eager result of the same call, compared output by output.
  template <class R, class E>
  void check(const R& graph_result, E& eager) {
    if (writes_grads()) return;  // its eager body would apply the step a second time
    IValue g[Results<R>::size], e[Results<R>::size];
    Results<R>::to_args(graph_result, g);
    const bool on_tape = static_node_of(g, Results<R>::size);
    R eager_result = [&] {
      EagerTurn turn(this, /*grad=*/on_tape);
      return eager();
    }();
    Results<R>::to_args(eager_result, e);
    report_check(g, e, Results<R>::size);
    if (on_tape) check_gradients(g, e, Results<R>::size);
  }
  // A train step's graph: GRAPH_CHECK says once that it does not compare it.
  bool writes_grads();
  // Prints "graph check: <function> (<source>): output k: max |graph - eager| = d".
  void report_check(const IValue* graph, const IValue* eager, size_t n);
  // Whether the graph's outputs are one node on the tape (run_with_grad).
  static bool static_node_of(const IValue* graph, size_t n);
  // Makes that node's backward also run the eager outputs' backward and
  // report the differences per input gradient.
  void check_gradients(const IValue* graph, const IValue* eager, size_t n);
  // While alive, this thread's next call of this function runs its eager
  // body, with grad mode off unless `grad`.
  class EagerTurn {
   public:
    EagerTurn(const StaticFunction* f, bool grad);
    ~EagerTurn();
    EagerTurn(const EagerTurn&) = delete;
    EagerTurn& operator=(const EagerTurn&) = delete;

   private:
    std::unique_ptr<autograd::NoGradGuard> no_grad_;
  };
  bool take_eager_turn() const;  // true once after an EagerTurn began

  bool ready();  // registered and mode is Static; explains otherwise
  // Neither GRAPH_CHECK's eager turn nor any reason in ready().
  bool begin() { return !take_eager_turn() && ready(); }
  // A borrowed tensor (run) back to its owner; anything else stays.
  static void give_back(Tensor&& owner, IValue& lent) { owner = std::get<Tensor>(std::move(lent)); }
  template <class T>
  static void give_back(const T&, IValue&) {}
  bool invoke(const IValue* in, size_t n_in, IValue* out, size_t n_out);

  const char* name_;
  const char* hash_;
  CompiledGraph* graph_ = nullptr;
  std::atomic<bool> said_not_compared_{false};  // writes_grads() said so once
};

}  // namespace detail
}  // namespace graph
