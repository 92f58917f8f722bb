// The graph interpreter (interpreter.h).
//
// Before running, every value gets a slot in one vector (a node writes only
// its own outputs' slots, so threads never write the same element) and every
// block gets its dependency lists: node j waits for node i of the same block
// when j, or anything nested in j, reads one of i's outputs. A block then runs
// as a ready queue: nodes whose waits reach zero are pushed in order, workers
// and the calling thread pop them FIFO. A thread waiting for a block to
// finish runs queued tasks meanwhile (of any block), so nested blocks on
// workers never deadlock the pool.
//
// Errors are deterministic: after a node fails, every node that does not
// depend on a failed one still runs, and the error reported is the failed
// node that comes first in block order.
#include "graph/interpreter.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "graph/autograd.h"
#include "graph/error.h"
#include "graph/detail/generated_support.h"
#include "graph/detail/list_grad.h"
#include "graph/ir/output_reach.h"
#include "graph/ir/verifier.h"
#include "graph/ir/value_primitives.h"
#include "graph/op_table.h"

namespace graph {

namespace {

// ---- the thread pool -----------------------------------------------------------

class ThreadPool {
 public:
  static ThreadPool& get() {
    // Leaked on purpose: workers may still be parked at exit.
    static ThreadPool* pool = new ThreadPool(std::max(1u, std::thread::hardware_concurrency()) - 1);
    return *pool;
  }

  size_t workers() const { return threads_.size(); }

  void submit(std::function<void()> task) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      queue_.push_back(std::move(task));
    }
    cv_.notify_one();
  }

  // Runs one queued task if there is one.
  bool run_one() {
    std::function<void()> task;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (queue_.empty()) return false;
      task = std::move(queue_.front());
      queue_.pop_front();
    }
    task();
    return true;
  }

 private:
  explicit ThreadPool(unsigned n) {
    for (unsigned i = 0; i < n; ++i) threads_.emplace_back([this] { work(); });
    for (auto& t : threads_) t.detach();
  }

  void work() {
    for (;;) {
      std::function<void()> task;
      {
        std::unique_lock<std::mutex> lock(mu_);
        cv_.wait(lock, [&] { return !queue_.empty(); });
        task = std::move(queue_.front());
        queue_.pop_front();
      }
      task();
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> queue_;
  std::vector<std::thread> threads_;
};

int default_threads() {
  if (const char* env = std::getenv("GRAPH_NUM_THREADS")) {
    char* end = nullptr;
    long v = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && v >= 1 && v <= 1024) return static_cast<int>(v);
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// ---- the program: slots and dependencies -----------------------------------------

struct BlockInfo {
  std::vector<const ir::Node*> nodes;
  std::vector<int> waits;                  // per node: producers in this block it waits for
  std::vector<std::vector<int>> wakes;     // per node: the nodes that wait for it
  int heavy = 0;                           // nodes worth a thread hand-off
};

// A node whose work dwarfs a hand-off to another thread (a few microseconds):
// a library call, a kernel of its own, or control flow that may hold them.
// Blocks with fewer than two such nodes run in order on the calling thread;
// elementwise and view nodes on their own are too cheap to schedule.
bool heavy(const ir::Node* n) {
  if (!n->blocks().empty()) return !n->is(OpId::FusionGroup);
  const OpInfo* info = n->table_op();
  return info && (info->kind == OpKind::Library || info->kind == OpKind::Other);
}

class Program {
 public:
  explicit Program(const ir::Graph& g) : graph_(g) { index(g.top()); }

  size_t slot(const ir::Value* v) const { return slots_.at(v); }
  size_t num_slots() const { return slots_.size(); }
  const BlockInfo& block(const ir::Block* b) const { return blocks_.at(b); }
  const ir::Graph& graph() const { return graph_; }

 private:
  void index(const ir::Block* b) {
    for (const auto& p : b->params()) slots_.emplace(p.get(), slots_.size());
    BlockInfo& info = blocks_[b];
    std::unordered_map<const ir::Value*, int> produced_by;
    for (const auto& n : b->nodes()) {
      for (const auto& inner : n->blocks()) index(inner.get());
      for (const ir::Value* o : n->outputs()) slots_.emplace(o, slots_.size());
      const int j = static_cast<int>(info.nodes.size());
      info.nodes.push_back(n.get());
      info.wakes.emplace_back();
      std::unordered_set<int> deps;
      // An effect (assign writes an input's storage) waits for every node
      // before it, which may read that storage.
      if (const OpInfo* t = n->info(); t && t->has(op_trait::Effectful) && !n->is(OpId::call))
        for (int i = 0; i < j; ++i) deps.insert(i);
      for_each_read(n.get(), [&](const ir::Value* v) {
        auto it = produced_by.find(v);
        if (it != produced_by.end()) deps.insert(it->second);
      });
      std::vector<int> sorted(deps.begin(), deps.end());
      std::sort(sorted.begin(), sorted.end());
      for (int i : sorted) info.wakes[i].push_back(j);
      info.waits.push_back(static_cast<int>(sorted.size()));
      info.heavy += heavy(n.get());
      for (const ir::Value* o : n->outputs()) produced_by[o] = j;
    }
  }

  // Every value `n` reads: its inputs and whatever its nested blocks read
  // (values of enclosing blocks included; the caller filters by producer).
  template <class F>
  static void for_each_read(const ir::Node* n, F&& f) {
    for (const ir::Value* v : n->inputs()) f(v);
    for (const auto& b : n->blocks()) {
      for (const auto& inner : b->nodes()) for_each_read(inner.get(), f);
      for (const ir::Value* r : b->returns()) f(r);
    }
  }

  const ir::Graph& graph_;
  std::unordered_map<const ir::Value*, size_t> slots_;
  std::unordered_map<const ir::Block*, BlockInfo> blocks_;
};

// ---- running -----------------------------------------------------------------------

std::string where(const ir::Node* n, const std::string& graph_name) {
  std::string s = " (";
  if (n->loc().valid())
    s += "at " + n->loc().file + ":" + std::to_string(n->loc().line) + ":" + std::to_string(n->loc().col) + ", ";
  return s + n->op() + " in graph '" + graph_name + "')";
}

bool truth(const ir::Node* n, const IValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b;
  if (auto* i = std::get_if<int64_t>(&v)) return *i != 0;
  if (auto* d = std::get_if<double>(&v)) return *d != 0.0;
  if (auto* t = std::get_if<Tensor>(&v)) return static_cast<bool>(*t);
  throw Error(n->op() + ": a condition must be a bool, a number or a one-element tensor, got " +
              detail::describe(v));
}

int64_t as_int(const ir::Node* n, const IValue& v, const char* what) {
  if (auto* i = std::get_if<int64_t>(&v)) return *i;
  throw Error(n->op() + ": " + what + " must be an int, got " + detail::describe(v));
}

double as_double(const ir::Node* n, const IValue& v) {
  if (auto* d = std::get_if<double>(&v)) return *d;
  throw Error(n->op() + ": the operand must be a float, got " + detail::describe(v));
}

class Run {
 public:
  Run(const Program& p, int threads, bool grad_mode)
      : prog_(p), env_(p.num_slots()), threads_(threads), grad_mode_(grad_mode) {}

  IValue& at(const ir::Value* v) { return env_[prog_.slot(v)]; }

  // RunOptions::needed_outputs: the top-block nodes that need not run, and
  // the gradient ops some of whose outputs nobody wants.
  void plan_needs(const ir::Graph& g, const std::vector<bool>& needed) {
    const ir::OutputReach reach(g);
    for (const auto& n : g.top()->nodes()) {
      if (!ir::OutputReach::any(reach.of_node(n.get()), needed)) {
        skipped_.insert(n.get());
        continue;
      }
      if (!n->table_op() || !n->table_op()->has(op_trait::Backward)) continue;
      uint32_t wanted = ~uint32_t{0};
      for (size_t i = 0; i < n->num_outputs() && i < 32; ++i)
        if (!ir::OutputReach::any(reach.of(n->output(i)), needed)) wanted &= ~(uint32_t{1} << i);
      if (wanted != ~uint32_t{0}) wanted_.emplace(n.get(), wanted);
    }
  }

  void block(const ir::Block* b) {
    const BlockInfo& info = prog_.block(b);
    if (threads_ <= 1 || info.heavy < 2) return block_in_order(info);
    block_parallel(info);
  }

 private:
  void block_in_order(const BlockInfo& info) {
    for (const ir::Node* n : info.nodes) node(n);
  }

  // One block's ready queue. Tasks are submitted to the pool; this thread
  // helps until every node has run or been skipped.
  struct State {
    std::mutex mu;
    std::condition_variable done_cv;
    std::vector<int> waits;
    std::vector<char> poisoned;              // depends on a failed node
    std::vector<std::exception_ptr> errors;  // per node
    int remaining = 0;
  };

  void block_parallel(const BlockInfo& info) {
    State st;
    st.waits = info.waits;
    st.poisoned.assign(info.nodes.size(), 0);
    st.errors.resize(info.nodes.size());
    st.remaining = static_cast<int>(info.nodes.size());
    ThreadPool& pool = ThreadPool::get();

    std::function<void(int)> launch;
    auto finish = [&](int j, bool failed) {
      std::vector<int> ready;
      {
        std::lock_guard<std::mutex> lock(st.mu);
        for (int k : info.wakes[j]) {
          if (failed || st.poisoned[j]) st.poisoned[k] = 1;
          if (--st.waits[k] == 0) ready.push_back(k);
        }
        // Notified under the lock: once it is released after the last node,
        // the waiting thread may return and destroy `st`.
        if (--st.remaining == 0) st.done_cv.notify_all();
      }
      for (int k : ready) launch(k);  // not the last node: `st` is still alive
    };
    launch = [&](int j) {
      pool.submit([&, j] {
        bool failed = false;
        bool skip;
        {
          std::lock_guard<std::mutex> lock(st.mu);
          skip = st.poisoned[j];
        }
        if (!skip) {
          try {
            std::optional<NoGradGuard> no_grad;  // workers run in the caller's grad mode
            if (!grad_mode_) no_grad.emplace();
            node(info.nodes[j]);
          } catch (...) {
            st.errors[j] = std::current_exception();
            failed = true;
          }
        }
        finish(j, failed);
      });
    };
    for (size_t j = 0; j < info.nodes.size(); ++j)
      if (info.waits[j] == 0) launch(static_cast<int>(j));

    for (;;) {
      {
        std::lock_guard<std::mutex> lock(st.mu);
        if (st.remaining == 0) break;
      }
      if (pool.run_one()) continue;
      std::unique_lock<std::mutex> lock(st.mu);
      st.done_cv.wait_for(lock, std::chrono::microseconds(200), [&] { return st.remaining == 0; });
    }
    for (const auto& e : st.errors)
      if (e) std::rethrow_exception(e);
  }

  void node(const ir::Node* n) {
    const OpId op = n->op_id();
    if (!skipped_.empty() && skipped_.count(n)) {
      for (const ir::Value* o : n->outputs()) at(o) = Tensor();
      return;
    }
    try {
      if (op == OpId::constant) return constant(n);
      if (op == OpId::If) return if_(n);
      if (op == OpId::Loop) return loop(n);
      if (op == OpId::FusionGroup) return fusion_group(n);
      if (op == OpId::undefined) {
        at(n->output()) = Tensor();
        return;
      }
      if (n->info() && n->info()->kind == OpKind::List) return list(n);
      if (op == OpId::set_grads) return set_grads(n);
      if (op == OpId::grad_sync_start || op == OpId::grad_sync_wait) return grad_sync(n);
      if (op == OpId::optimizer_guard || op == OpId::optimizer_zero_grad || op == OpId::optimizer_step)
        return optimizer(n);
      if (op == OpId::backward_loss)
        throw Error("backward_loss: ir::compile expands it (expand_backward) before a graph runs");
      if (ir::is_value_primitive(op)) return value_primitive(n);
      if (op == OpId::call)
        throw Error("call of '" + n->s("callee") + "': inline calls first (the inline_calls pass)");
      const Kernel* k = detail::find_kernel(n->op());
      if (!k) throw Error("no interpreter kernel for op '" + n->op() + "'");
      std::vector<IValue> in;
      in.reserve(n->inputs().size());
      for (const ir::Value* v : n->inputs()) in.push_back(at(v));
      auto narrowed = wanted_.find(n);
      std::vector<IValue> out =
          detail::run_kernel(*k, *n, in, narrowed == wanted_.end() ? ~uint32_t{0} : narrowed->second);
      if (out.size() != n->num_outputs())
        throw Error(n->op() + ": the kernel gave " + std::to_string(out.size()) + " values for " +
                    std::to_string(n->num_outputs()) + " outputs");
      for (size_t i = 0; i < out.size(); ++i) at(n->output(i)) = std::move(out[i]);
    } catch (const NodeError&) {
      throw;  // already names its node (from a nested block)
    } catch (const std::exception& e) {
      throw NodeError(e.what() + where(n, prog_.graph().name()));
    }
  }

  // An error that already names the node it came from.
  struct NodeError : Error {
    using Error::Error;
  };

  void constant(const ir::Node* n) {
    const ir::AttrValue& v = n->attrs().at("value");
    if (auto* i = std::get_if<int64_t>(&v)) at(n->output()) = *i;
    else if (auto* d = std::get_if<double>(&v)) at(n->output()) = *d;
    else if (auto* b = std::get_if<bool>(&v)) at(n->output()) = *b;
    else throw Error("constant: 'value' must be a number or bool");
  }

  void if_(const ir::Node* n) {
    const ir::Block* taken = n->block(truth(n, at(n->input(0))) ? 0 : 1);
    block(taken);
    for (size_t i = 0; i < n->num_outputs(); ++i) at(n->output(i)) = at(taken->returns()[i]);
  }

  void loop(const ir::Node* n) {
    const int64_t max_trips = as_int(n, at(n->input(0)), "the max trip count");
    bool cond = truth(n, at(n->input(1)));
    const ir::Block* body = n->block(0);
    const size_t carried = n->num_outputs();
    std::vector<IValue> state(carried);
    for (size_t i = 0; i < carried; ++i) state[i] = at(n->input(i + 2));
    for (int64_t iter = 0; cond && iter < max_trips; ++iter) {
      at(body->param(0)) = iter;
      for (size_t i = 0; i < carried; ++i) at(body->param(i + 1)) = std::move(state[i]);
      block(body);
      cond = truth(n, at(body->returns()[0]));
      // Read every return before the next iteration rebinds the parameters.
      for (size_t i = 0; i < carried; ++i) state[i] = at(body->returns()[i + 1]);
    }
    for (size_t i = 0; i < carried; ++i) at(n->output(i)) = std::move(state[i]);
  }

  void fusion_group(const ir::Node* n) {
    const ir::Block* body = n->block(0);
    for (size_t i = 0; i < n->inputs().size(); ++i) at(body->param(i)) = at(n->input(i));
    block(body);
    for (size_t i = 0; i < n->num_outputs(); ++i) at(n->output(i)) = at(body->returns()[i]);
  }

  void list(const ir::Node* n) {
    const OpId op = n->op_id();
    auto list_in = [&]() -> const TensorList& {
      if (auto* l = std::get_if<TensorList>(&at(n->input(0)))) return *l;
      throw Error(n->op() + ": input 0 must be a list");
    };
    if (op == OpId::list_new) {
      at(n->output()) = TensorList{};
    } else if (op == OpId::list_append) {
      TensorList l = list_in();
      const IValue& t = at(n->input(1));
      if (!std::holds_alternative<Tensor>(t)) throw Error("list_append: input 1 must be a tensor");
      l.push_back(std::get<Tensor>(t));
      at(n->output()) = std::move(l);
    } else if (op == OpId::list_get) {
      const TensorList& l = list_in();
      int64_t i = as_int(n, at(n->input(1)), "the index");
      const int64_t size = static_cast<int64_t>(l.size());
      if (i < -size || i >= size)
        throw Error("list_get: index " + std::to_string(i) + " out of range for a list of " + std::to_string(size));
      at(n->output()) = l[static_cast<size_t>(i < 0 ? i + size : i)];
    } else if (op == OpId::list_len) {
      at(n->output()) = static_cast<int64_t>(list_in().size());
    } else if (list_gradient(n)) {
    } else {
      throw Error("unknown list primitive '" + n->op() + "'");
    }
  }

  // The gradients of lists (ir.h), by the functions the generated code calls.
  bool list_gradient(const ir::Node* n) {
    const OpId op = n->op_id();
    auto list = [&](size_t i) -> const TensorList& {
      if (auto* l = std::get_if<TensorList>(&at(n->input(i)))) return *l;
      throw Error(n->op() + ": input " + std::to_string(i) + " must be a list");
    };
    auto tensor = [&](size_t i) -> const Tensor& {
      if (auto* t = std::get_if<Tensor>(&at(n->input(i)))) return *t;
      throw Error(n->op() + ": input " + std::to_string(i) + " must be a tensor");
    };
    auto integer = [&](size_t i) { return as_int(n, at(n->input(i)), "an operand"); };
    IValue& out = at(n->output());
    if (op == OpId::list_split_like) out = detail::list_split_like(tensor(0), list(1), integer(2));
    else if (op == OpId::list_unbind) out = detail::list_unbind(tensor(0), integer(1));
    else if (op == OpId::list_add) out = detail::list_add(list(0), list(1));
    else if (op == OpId::list_zeros_like) out = detail::list_zeros_like(list(0));
    else if (op == OpId::list_last) out = detail::list_last(list(0));
    else if (op == OpId::list_drop_last) out = detail::list_drop_last(list(0));
    else if (op == OpId::list_onehot) out = detail::list_onehot(list(0), integer(1), tensor(2));
    else return false;
    return true;
  }

  // A static train step's set_grads, as the generated code calls it.
  void set_grads(const ir::Node* n) {
    const size_t np = static_cast<size_t>(n->i("params"));
    std::vector<Tensor> params, grads, data;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const auto* t = std::get_if<Tensor>(&at(n->input(i)));
      if (!t) throw Error("set_grads: input " + std::to_string(i) + " must be a tensor");
      (i < np ? params : i < 2 * np ? grads : data).push_back(*t);
    }
    detail::set_grads(params, grads, data);
  }

  // The gradient all-reduce of a train step (ops.def: grad_sync_*), as the
  // generated code calls it.
  void grad_sync(const ir::Node* n) {
    const size_t np = static_cast<size_t>(n->i("params"));
    std::vector<Tensor> params, grads;
    for (size_t i = 0; i < n->inputs().size(); ++i) {
      const auto* t = std::get_if<Tensor>(&at(n->input(i)));
      if (!t) throw Error(n->op() + ": input " + std::to_string(i) + " must be a tensor");
      (i < np ? params : grads).push_back(*t);
    }
    if (n->is(OpId::grad_sync_start)) return detail::grad_sync_start(params, grads);
    std::vector<Tensor> out = detail::grad_sync_wait(params, grads);
    for (size_t i = 0; i < n->num_outputs() && i < out.size(); ++i) at(n->output(i)) = std::move(out[i]);
  }

  // The optimizer's effects, as the generated code calls them. The guard
  // already passed before the run (static.cpp's interpret): failing here is
  // an error, not a fallback, since effects may have run.
  void optimizer(const ir::Node* n) {
    const int64_t opt = as_int(n, at(n->input(0)), "the optimizer's handle");
    if (n->is(OpId::optimizer_guard)) {
      std::string why;
      if (!detail::optimizer_guard(opt, &why)) throw Error("optimizer_guard: " + why);
      return;
    }
    if (n->is(OpId::optimizer_zero_grad)) return detail::optimizer_zero_grad(opt);
    const size_t np = static_cast<size_t>(n->i("params"));
    std::vector<Tensor> params, grads;
    for (size_t i = 1; i < n->inputs().size(); ++i) {
      const auto* t = std::get_if<Tensor>(&at(n->input(i)));
      if (!t) throw Error("optimizer_step: input " + std::to_string(i) + " must be a tensor");
      (i <= np ? params : grads).push_back(*t);
    }
    detail::optimizer_step(opt, params, grads);
  }

  // Tensor metadata and host ints (ir.h), as the generated code computes them.
  void value_primitive(const ir::Node* n) {
    const OpId op = n->op_id();
    auto tensor = [&](size_t i) -> const Tensor& {
      if (auto* t = std::get_if<Tensor>(&at(n->input(i)))) return *t;
      throw Error(n->op() + ": input " + std::to_string(i) + " must be a tensor");
    };
    if (op == OpId::assign) return detail::assign(tensor(0), tensor(1));  // no outputs
    auto integer = [&](size_t i) { return as_int(n, at(n->input(i)), "an operand"); };
    IValue& out = at(n->output());
    if (op == OpId::defined) out = tensor(0).defined();
    else if (op == OpId::tensor_dim) out = tensor(0).dim();
    else if (op == OpId::tensor_size) out = tensor(0).size(integer(1));
    else if (op == OpId::tensor_numel) out = tensor(0).numel();
    else if (op == OpId::item) {
      const ir::Type::Kind k = n->output()->type().kind;
      if (k == ir::Type::Kind::Int) out = tensor(0).item<int64_t>();
      else if (k == ir::Type::Kind::Bool) out = tensor(0).item<bool>();
      else out = tensor(0).item<double>();
    }
    else if (op == OpId::int_div) out = detail::int_div(integer(0), integer(1));
    else if (op == OpId::int_mod) out = detail::int_mod(integer(0), integer(1));
    else if (op == OpId::int_to_float) out = static_cast<double>(integer(0));
    else if (op == OpId::float_to_int) out = detail::float_to_int(as_double(n, at(n->input(0))));
    else if (op == OpId::slice_dyn) out = tensor(0).slice(n->i("dim"), integer(1), integer(2), integer(3));
    else if (op == OpId::tensor_sizes) out = detail::sizes_tensor(tensor(0));
    else if (op == OpId::broadcast_sizes) {
      std::vector<Tensor> ts;
      for (size_t i = 0; i < n->inputs().size(); ++i) ts.push_back(tensor(i));
      out = detail::broadcast_sizes(ts);
    }
    else if (op == OpId::inverse_permutation) out = detail::inverse_permutation(tensor(0));
    else if (op == OpId::full_dyn) {
      DType dt{};
      if (!dtype_from_token(n->s("dtype"), dt)) throw Error("full_dyn: unknown dtype '" + n->s("dtype") + "'");
      const IValue& v = at(n->input(1));
      const Scalar value = std::holds_alternative<double>(v) ? Scalar(std::get<double>(v))
                           : std::holds_alternative<bool>(v) ? Scalar(std::get<bool>(v))
                                                              : Scalar(integer(1));
      out = full(detail::int_list(tensor(0)), value, dt);
    }
    else if (op == OpId::arange_dyn) {
      auto scalar = [&](size_t i) {
        const IValue& v = at(n->input(i));
        return std::holds_alternative<double>(v) ? Scalar(std::get<double>(v))
               : std::holds_alternative<bool>(v) ? Scalar(std::get<bool>(v))
                                                  : Scalar(integer(i));
      };
      out = arange(scalar(0), scalar(1), scalar(2));
    }
    else if (op == OpId::shape_get) out = detail::shape_get(tensor(0), integer(1));
    else if (op == OpId::shape_set) out = detail::shape_set(tensor(0), integer(1), integer(2));
    else if (op == OpId::make_shape) {
      Shape v;
      for (size_t i = 0; i < n->inputs().size(); ++i) v.push_back(integer(i));
      out = detail::int_list_tensor(v);
    } else if (op == OpId::reshape_dyn) {
      Shape sizes;
      for (size_t i = 1; i < n->inputs().size(); ++i) sizes.push_back(integer(i));
      out = tensor(0).reshape(sizes);
    } else {
      throw Error("unknown primitive '" + n->op() + "'");
    }
  }

  const Program& prog_;
  std::vector<IValue> env_;
  int threads_;
  bool grad_mode_;
  std::unordered_set<const ir::Node*> skipped_;              // plan_needs
  std::unordered_map<const ir::Node*, uint32_t> wanted_;     // plan_needs
};

const char* kind_name(ir::Type::Kind k) {
  switch (k) {
    case ir::Type::Kind::Tensor: return "a tensor";
    case ir::Type::Kind::Int: return "an int";
    case ir::Type::Kind::Float: return "a float";
    case ir::Type::Kind::Bool: return "a bool";
    case ir::Type::Kind::List: return "a list";
  }
  return "?";
}

bool matches(ir::Type::Kind k, const IValue& v) {
  switch (k) {
    case ir::Type::Kind::Tensor: return std::holds_alternative<Tensor>(v);
    case ir::Type::Kind::Int: return std::holds_alternative<int64_t>(v);
    case ir::Type::Kind::Float: return std::holds_alternative<double>(v);
    case ir::Type::Kind::Bool: return std::holds_alternative<bool>(v);
    case ir::Type::Kind::List: return std::holds_alternative<TensorList>(v);
  }
  return false;
}

}  // namespace

std::vector<IValue> run(const ir::Graph& g, std::vector<IValue> inputs, const RunOptions& options) {
  ir::verify_or_throw(g);
  if (inputs.size() != g.inputs().size())
    throw Error("graph '" + g.name() + "' takes " + std::to_string(g.inputs().size()) + " inputs, got " +
                std::to_string(inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ir::Value* p = g.inputs()[i].get();
    if (!matches(p->type().kind, inputs[i]))
      throw Error("graph '" + g.name() + "': input " + std::to_string(i) + " (%" + p->name() + ") must be " +
                  kind_name(p->type().kind) + ", got " + detail::describe(inputs[i]));
  }
  Program prog(g);
  const int threads = options.threads > 0 ? options.threads : default_threads();
  Run run(prog, std::min<int>(threads, static_cast<int>(ThreadPool::get().workers()) + 1),
          autograd::grad_mode_enabled());
  if (!options.needed_outputs.empty()) {
    if (options.needed_outputs.size() != g.outputs().size())
      throw Error("graph '" + g.name() + "': needed_outputs has " + std::to_string(options.needed_outputs.size()) +
                  " flags for " + std::to_string(g.outputs().size()) + " outputs");
    run.plan_needs(g, options.needed_outputs);
  }
  for (size_t i = 0; i < inputs.size(); ++i) run.at(g.inputs()[i].get()) = std::move(inputs[i]);
  run.block(g.top());
  std::vector<IValue> out;
  for (const ir::Value* v : g.outputs()) out.push_back(run.at(v));
  return out;
}

}  // namespace graph
