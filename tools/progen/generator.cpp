// Draws one random, valid [[graph::static]] function: values, statements,
// control flow and results. The ops themselves come from the op table
// (ops.cpp); this file knows only shapes, scopes and C++ statements.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "gen.h"

namespace progen {

using graph::OpId;

constexpr size_t kMaxInputs = 7;

bool broadcastable(const Dims& a, const Dims& b, Dims* out) {
  Dims r(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < r.size(); ++i) {
    const int64_t x = i < r.size() - a.size() ? 1 : a[i - (r.size() - a.size())];
    const int64_t y = i < r.size() - b.size() ? 1 : b[i - (r.size() - b.size())];
    if (x != y && x != 1 && y != 1) return false;
    r[i] = std::max(x, y);
  }
  if (out) *out = r;
  return true;
}

int64_t numel(const Dims& d) {
  int64_t n = 1;
  for (int64_t s : d) n *= s;
  return n;
}

std::string dims_str(const Dims& d) {
  std::string s = "{";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "}";
}

Gen::Gen(uint64_t seed, int index, bool device)
    : rng(seed * 1000003u + uint64_t(index) * 7919u + 17), device(device) {
  f.name = "pg" + std::to_string(index);
  hosts_ = {{"n", true, 4}, {"s", false, 1.5}};
  for (size_t i = 0; i < graph::kNumOps; ++i)
    if (graph::generatable(graph::kOpTable[i]) && (!device || runs_on_device(graph::kOpTable[i].id)))
      ops_.push_back(graph::kOpTable[i].id);
}

std::string Gen::fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

Val Gen::op(OpId id, std::string code, Dims shape, double bound, std::vector<const Val*> operands, VType type) {
  Val v{std::move(code), std::move(shape), type, bound, false, {}};
  for (const Val* o : operands) {
    v.reads.insert(o->reads.begin(), o->reads.end());
    v.grad = v.grad || o->grad;
  }
  f.cov.forward.insert(id);
  if (v.grad && graph::differentiable(graph::op_info(id))) f.cov.backward.insert(id);
  v.grad = v.grad && graph::differentiable(graph::op_info(id));
  return v;
}

Val Gen::bounded(Val v, double limit) {
  if (v.bound <= limit || v.host) return v;  // host scalars are small already
  return op(OpId::tanh, "tanh(" + v.code + ")", v.shape, 1, {&v});
}

std::optional<Val> Gen::new_input(const Dims& shape, VType type, int64_t int_hi) {
  if (f.inputs.size() >= kMaxInputs || numel(shape) > 256) return std::nullopt;
  Input in{"x" + std::to_string(f.inputs.size()), shape, type, int_hi};
  f.inputs.push_back(in);
  const bool is_float = type == VType::Float;
  return Val{in.name, shape, type, is_float ? 2.0 : double(int_hi), is_float, {in.name}};
}

Val Gen::leaf() {
  // Recent variables more often: they make deeper chains.
  std::vector<size_t> floats;
  for (size_t i = 0; i < vars_.size(); ++i) floats.push_back(i);
  if (!floats.empty() && coin(0.85)) {
    const size_t k = floats[std::max(0, int(floats.size()) - 1 - uni(0, std::min<int>(3, floats.size() - 1)))];
    Var& v = vars_[coin(0.7) ? k : floats[uni(0, floats.size() - 1)]];
    v.used = true;
    return Val{v.name, v.shape, VType::Float, v.bound, v.grad, {v.name}};
  }
  std::vector<size_t> ins;
  for (size_t i = 0; i < f.inputs.size(); ++i)
    if (f.inputs[i].type == VType::Float) ins.push_back(i);
  const Input& in = f.inputs[ins[uni(0, ins.size() - 1)]];
  return Val{in.name, in.shape, VType::Float, 2.0, true, {in.name}};
}

Val Gen::host_scalar(bool positive) {
  const HostVar& h = hosts_[uni(0, hosts_.size() - 1)];
  Val v{h.name, {}, VType::Float, h.bound, false, {h.name}, true};
  f.cov.constructs.insert(h.is_int ? "host_int_in_tensor_expr" : "host_double_in_tensor_expr");
  if (positive) {  // a divisor or a base: at least 1
    v.code = h.is_int ? "(" + h.name + " * " + h.name + " + 1)" : "(" + h.name + " * " + h.name + " + 1.0)";
    v.bound = h.bound * h.bound + 1;
    // docs/gradients.md: a host float computed in a loop body (this h * h + 1.0,
    // which a divisor's or a base's backward reads) has no static backward.
    if (!h.is_int && in_loop_) f.grad_runs_eagerly = true;
  }
  return v;
}

Val Gen::broadcast_operand(const Dims& shape, int depth) {
  const int r = uni(0, 9);
  if (r < 5) {
    Val b = float_expr(depth);
    if (broadcastable(shape, b.shape)) return b;
    // Shapes that do not broadcast: reduce the operand to a scalar.
    return op(OpId::mean, "mean(" + b.code + ")", {}, b.bound, {&b});
  }
  if (r < 8) {  // a compatible random shape: a suffix with some dims set to 1
    Dims s(shape.begin() + uni(0, shape.size()), shape.end());
    for (int64_t& d : s)
      if (coin(0.4)) d = 1;
    if (coin(0.2) && s.size() < 4) s.insert(s.begin(), 1);
    if (auto in = new_input(s)) {
      f.cov.constructs.insert("broadcast");
      return *in;
    }
  }
  Val l = leaf();
  if (broadcastable(shape, l.shape)) return l;
  return op(OpId::mean, "mean(" + l.code + ")", {}, l.bound, {&l});
}

Val Gen::same_shape_operand(const Dims& shape, const Val& like) {
  std::vector<size_t> same;
  for (size_t i = 0; i < vars_.size(); ++i)
    if (vars_[i].shape == shape && vars_[i].name != like.code) same.push_back(i);
  if (!same.empty() && coin(0.5)) {
    Var& v = vars_[same[uni(0, same.size() - 1)]];
    v.used = true;
    return Val{v.name, v.shape, VType::Float, v.bound, v.grad, {v.name}};
  }
  if (coin(0.6))
    if (auto in = new_input(shape)) return *in;
  Val s = op(OpId::sigmoid, "sigmoid(" + like.code + ")", shape, 1, {&like});
  return s;
}

Val Gen::to_rank(const Val& v, int rank) {
  if (int(v.shape.size()) == rank) return v;
  // Split the element count into `rank` factors, the leading ones small.
  int64_t n = numel(v.shape);
  Dims s(rank, 1);
  for (int i = 0; i < rank - 1; ++i) {
    std::vector<int64_t> divisors;
    for (int64_t d = 1; d <= std::min<int64_t>(n, 4); ++d)
      if (n % d == 0) divisors.push_back(d);
    s[i] = divisors[uni(0, divisors.size() - 1)];
    n /= s[i];
  }
  s[rank - 1] = n;
  if (coin(0.5)) std::reverse(s.begin(), s.end());
  return op(OpId::reshape, v.code + ".reshape(" + dims_str(s) + ")", s, v.bound, {&v});
}

Val Gen::float_expr(int depth) {
  if (depth <= 0 || coin(0.25)) return leaf();
  return apply(ops_[uni(0, ops_.size() - 1)], depth - 1);
}

// A bool tensor: a comparison (the table's ToBool binary ops), its negation,
// or an argmax compared with an index.
Val Gen::bool_expr(int depth) {
  std::vector<OpId> cmps;
  for (OpId id : ops_) {
    const graph::OpInfo& o = graph::op_info(id);
    if (o.kind == graph::OpKind::Elementwise && o.rule == graph::DTypeRule::ToBool && o.num_inputs == 2)
      cmps.push_back(id);
  }
  const int r = uni(0, 9);
  if (r == 0 && depth > 0) {
    Val b = bool_expr(depth - 1);
    return op(OpId::logical_not, coin() ? "logical_not(" + b.code + ")" : "(!" + b.code + ")", b.shape, 1, {&b},
              VType::Bool);
  }
  if (r == 1) {
    Val x = float_expr(depth);
    if (x.shape.empty()) x = to_rank(x, 1);
    const int d = uni(0, x.shape.size() - 1);
    const bool keep = coin();
    Dims s = x.shape;
    if (keep) s[d] = 1; else s.erase(s.begin() + d);
    Val a = op(OpId::argmax, "argmax(" + x.code + ", " + std::to_string(d) + ", " + (keep ? "true" : "false") + ")",
               s, 0, {&x}, VType::Int);
    return op(OpId::eq, "(" + a.code + " == " + std::to_string(uni(0, x.shape[d] - 1)) + ")", s, 1, {&a},
              VType::Bool);
  }
  const OpId id = cmps[uni(0, cmps.size() - 1)];
  const std::string name(graph::op_info(id).name);
  Val a = float_expr(depth);
  Val b = broadcast_operand(a.shape, depth - 1);
  Dims s;
  broadcastable(a.shape, b.shape, &s);
  return op(id, name + "(" + a.code + ", " + b.code + ")", s, 1, {&a, &b}, VType::Bool);
}

Val Gen::fit(const Val& v, const Dims& shape) {
  Val r = v;
  if (v.shape != shape) {
    Dims s;
    if (!broadcastable(v.shape, shape, &s) || s != shape)
      r = op(OpId::mean, "mean(" + v.code + ")", {}, v.bound, {&v});
  }
  return r;
}

Stmt Gen::simple(std::string text, std::set<std::string> reads) {
  Stmt s;
  s.kind = Stmt::Simple;
  s.id = next_id_++;
  s.text = std::move(text);
  s.reads = std::move(reads);
  return s;
}

Stmt Gen::decl() {
  Val e = bounded(float_expr(uni(1, 3)));
  const std::string name = "v" + std::to_string(next_var_++);
  Stmt s = simple("Tensor " + name + " = " + e.code + ";", e.reads);
  s.defines = name;
  for (const Var& v : vars_)
    if (v.shape == e.shape) s.fallback = v.name;
  for (const Input& in : f.inputs)
    if (s.fallback.empty() && in.type == VType::Float && in.shape == e.shape) s.fallback = in.name;
  vars_.push_back({name, e.shape, e.bound, e.grad});
  return s;
}

// v = tanh(v * c + e): keeps v's shape and bound, whatever e is.
std::optional<Stmt> Gen::reassign(const std::string& loop_var) {
  if (vars_.empty()) return std::nullopt;
  Var& v = vars_[uni(0, vars_.size() - 1)];
  Val e = fit(float_expr(uni(0, 2)), v.shape);
  std::string code = e.code;
  if (!loop_var.empty() && coin(0.6)) code = "(" + code + " * " + loop_var + ")";
  Val self{v.name, v.shape, VType::Float, v.bound, v.grad, {v.name}};
  Val sum{"", v.shape, VType::Float, 0, false, {}};
  sum = op(OpId::add, v.name + " * " + fmt(std::uniform_real_distribution<double>(0.2, 0.9)(rng)) + " + " + code,
           v.shape, 0, {&self, &e});
  Val t = op(OpId::tanh, "tanh(" + sum.code + ")", v.shape, 1, {&sum});
  v.bound = 1;
  v.grad = t.grad;
  v.used = true;
  Stmt s = simple(v.name + " = " + t.code + ";", t.reads);
  s.reads.insert(loop_var);
  f.cov.constructs.insert(loop_var.empty() ? "reassign" : "loop_carried");
  return s;
}

Stmt Gen::host_decl() {
  const std::string name = "h" + std::to_string(next_var_++);
  const HostVar a = hosts_[uni(0, hosts_.size() - 1)];  // a copy: hosts_ grows below
  if (coin() && a.is_int) {
    const int c = uni(1, 3);
    const bool use_min = coin(0.3);
    std::string e = use_min ? "std::min(" + a.name + ", " + std::to_string(c) + ")" : a.name + " + " + std::to_string(c);
    hosts_.push_back({name, true, a.bound + c});
    f.cov.constructs.insert(use_min ? "host_std_min" : "host_int_arith");
    return simple("int " + name + " = " + e + ";", {a.name});
  }
  const double c = std::uniform_real_distribution<double>(0.1, 1.0)(rng);
  // docs/gradients.md: a host float computed in a loop body has no static backward.
  if (in_loop_) f.grad_runs_eagerly = true;
  hosts_.push_back({name, false, a.bound * c + 1});
  f.cov.constructs.insert("host_double_arith");
  return simple("double " + name + " = " + a.name + " * " + fmt(c) + " - 1.0;", {a.name});
}

}  // namespace progen
