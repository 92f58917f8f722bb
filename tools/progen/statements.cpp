// The statements of a generated function: declarations, reassignments,
// host scalars, if (host or tensor condition), for, while (tensor condition,
// bounded trips), break/continue, early return, and the tuple result.
#include <algorithm>

#include "gen.h"

namespace progen {

using graph::OpId;

std::vector<Stmt> Gen::block(int depth, int loop_depth, int count, bool keep_scope) {
  const size_t vars = vars_.size(), hosts = hosts_.size();
  std::vector<Stmt> out;
  for (int i = 0; i < count; ++i)
    if (auto s = statement(depth, loop_depth)) out.push_back(std::move(*s));
  in_loop_ = loop_depth > 0;  // a nested loop's body set it; the code drawn below is this block's
  if (keep_scope) return out;  // the function's body: its variables reach the result
  // Variables declared in the block end with it; those it never used still
  // reach the result through the enclosing block's reassignment below.
  std::vector<Var> dying(vars_.begin() + vars, vars_.end());
  vars_.resize(vars);
  hosts_.resize(hosts);
  if (depth > 0 && !vars_.empty()) {
    for (const Var& d : dying) {
      if (d.used && !coin(0.2)) continue;
      Var& v = vars_[uni(0, vars_.size() - 1)];
      Val dv{d.name, d.shape, VType::Float, d.bound, d.grad, {d.name}};
      Val e = fit(dv, v.shape);
      Val self{v.name, v.shape, VType::Float, v.bound, v.grad, {v.name}};
      Val sum = op(OpId::add, v.name + " * 0.5 + " + e.code, v.shape, 0, {&self, &e});
      Val t = op(OpId::tanh, "tanh(" + sum.code + ")", v.shape, 1, {&sum});
      v.bound = 1;
      v.grad = v.grad || t.grad;
      v.used = true;
      out.push_back(simple(v.name + " = " + t.code + ";", t.reads));
    }
  }
  return out;
}

std::optional<Stmt> Gen::statement(int depth, int loop_depth) {
  in_loop_ = loop_depth > 0;
  const int r = uni(0, 19);
  if (r < 8 || vars_.empty()) return decl();
  if (r < 10) return reassign(loop_depth > 0 ? "i" + std::to_string(loop_depth - 1) : "");
  if (r < 11) return host_decl();
  if (depth >= 2) return decl();
  if (r < 13) return if_stmt(depth, loop_depth, r == 12);
  if (r < 15) return for_stmt(depth, loop_depth);
  if (r < 16) return while_stmt(depth, loop_depth);
  return exit_stmt(loop_depth);
}

// A condition on a host value, or on a one-element tensor (a full reduction
// compared with a constant).
static std::string condition(Gen& g, bool on_tensor, std::set<std::string>* reads, const std::vector<HostVar>& hosts) {
  if (on_tensor) {
    Val x = g.float_expr(g.uni(0, 1));
    const OpId red = g.coin() ? OpId::sum : (g.coin() ? OpId::mean : OpId::amax);
    const std::string rn(graph::op_info(red).name);
    Val r = g.op(red, rn + "(" + x.code + ")", {}, x.bound, {&x});
    const bool gt = g.coin();
    const char* cmp = gt ? " > " : " < ";
    g.op(gt ? OpId::gt : OpId::lt, "", {}, 1, {&r}, VType::Bool);
    reads->insert(r.reads.begin(), r.reads.end());
    g.f.cov.constructs.insert("if_tensor_condition");
    return r.code + cmp + g.fmt(std::uniform_real_distribution<double>(-0.5, 0.5)(g.rng));
  }
  const HostVar& h = hosts[g.uni(0, hosts.size() - 1)];
  reads->insert(h.name);
  g.f.cov.constructs.insert("if_host_condition");
  if (h.is_int) return h.name + (g.coin() ? " > " : " <= ") + std::to_string(g.uni(0, 3));
  return h.name + (g.coin() ? " > " : " < ") + g.fmt(std::uniform_real_distribution<double>(-1, 1)(g.rng));
}

Stmt Gen::if_stmt(int depth, int loop_depth, bool on_tensor) {
  Stmt s;
  s.kind = Stmt::If;
  s.id = next_id_++;
  s.text = "if (" + condition(*this, on_tensor, &s.reads, hosts_) + ")";
  s.body = block(depth + 1, loop_depth, uni(1, 3));
  if (coin(0.6)) {
    s.orelse = block(depth + 1, loop_depth, uni(1, 2));
    f.cov.constructs.insert("if_else");
  }
  return s;
}

Stmt Gen::for_stmt(int depth, int loop_depth) {
  if (loop_depth > 0) f.grad_runs_eagerly = true;  // docs/gradients.md: a Loop inside a Loop
  Stmt s;
  s.kind = Stmt::Loop;
  s.id = next_id_++;
  const std::string i = "i" + std::to_string(loop_depth);
  std::string bound;
  switch (uni(0, 2)) {
    case 0: bound = std::to_string(uni(1, 3)); f.cov.constructs.insert("for_constant_bound"); break;
    case 1: bound = "n"; s.reads.insert("n"); f.cov.constructs.insert("for_host_bound"); break;
    default: bound = "std::min(n, 3)"; s.reads.insert("n"); f.cov.constructs.insert("for_host_bound"); break;
  }
  s.text = "for (int " + i + " = 0; " + i + " < " + bound + "; ++" + i + ")";
  hosts_.push_back({i, true, 3});
  s.body = block(depth + 1, loop_depth + 1, uni(1, 3));
  hosts_.pop_back();
  return s;
}

// while (mean(x) > c + t * step), t counting the trips: x stays within its
// bound, so after `trips` trips the condition is false; no break needed.
Stmt Gen::while_stmt(int depth, int loop_depth) {
  if (loop_depth > 0) f.grad_runs_eagerly = true;
  Stmt s;
  s.kind = Stmt::Loop;
  s.id = next_id_++;
  const std::string t = "t" + std::to_string(next_var_++);
  s.prefix = "int " + t + " = 0;";
  Val x = leaf();
  const int trips = uni(1, 3);
  const double c = std::uniform_real_distribution<double>(-0.5, 0.5)(rng);
  const double step = (2 * std::max(x.bound, 1.0) + 1) / trips;
  Val m = op(OpId::mean, "mean(" + x.code + ")", {}, x.bound, {&x});
  op(OpId::gt, "", {}, 1, {&m}, VType::Bool);
  s.text = "while (" + m.code + " > " + fmt(c) + " + " + t + " * " + fmt(step + 0.01) + ")";
  s.reads = m.reads;
  s.reads.insert(t);
  const std::string i = "i" + std::to_string(loop_depth);
  for (std::string text : {"int " + i + " = " + t + ";", t + " = " + t + " + 1;"}) {
    s.body.push_back(simple(text, {t}));
    s.body.back().keep = true;
  }
  hosts_.push_back({i, true, 3});
  auto body = block(depth + 1, loop_depth + 1, uni(1, 3));
  hosts_.pop_back();
  for (Stmt& st : body) s.body.push_back(std::move(st));
  f.cov.constructs.insert("while_tensor_condition");
  return s;
}

// Inside a loop: if (c) break; / if (c) continue;. Outside: if (c) return ...;
Stmt Gen::exit_stmt(int loop_depth) {
  Stmt s;
  s.kind = Stmt::If;
  s.id = next_id_++;
  s.text = "if (" + condition(*this, coin(0.4), &s.reads, hosts_) + ")";
  if (loop_depth > 0 && coin(0.7)) {
    const bool brk = coin();
    s.body.push_back(simple(brk ? "break;" : "continue;"));
    f.cov.constructs.insert(brk ? "break" : "continue");
    return s;
  }
  std::set<std::string> reads;
  std::vector<Var*> last;
  if (!vars_.empty()) last.push_back(&vars_.back());
  std::string r = result_expr(last, &reads);
  s.body.push_back(simple("return " + r + ";", reads));
  f.cov.constructs.insert("early_return");
  return s;
}

// The result: one value per output shape, each a variable of that shape (or
// fitted to it) plus the given variables, so no drawn value is dead code.
std::string Gen::result_expr(std::vector<Var*> extra, std::set<std::string>* reads) {
  std::vector<std::string> outs;
  for (size_t k = 0; k < f.out_shapes.size(); ++k) {
    const Dims& shape = f.out_shapes[k];
    std::vector<const Var*> same;
    for (const Var& v : vars_)
      if (v.shape == shape) same.push_back(&v);
    std::string code;
    if (!same.empty()) {
      code = same[uni(0, same.size() - 1)]->name;
    } else {
      // An input of that shape: the outputs took their shapes from the first
      // inputs, and later ones (an index, a weight) may be of any shape.
      const auto in = std::find_if(f.inputs.begin(), f.inputs.end(),
                                   [&](const Input& i) { return i.type == VType::Float && i.shape == shape; });
      code = in->name;
    }
    reads->insert(code);
    for (size_t j = k; j < extra.size(); j += f.out_shapes.size()) {
      Val e{extra[j]->name, extra[j]->shape, VType::Float, extra[j]->bound, extra[j]->grad, {extra[j]->name}};
      Val fitted = fit(e, shape);
      code += " + " + fitted.code;
      op(OpId::add, "", shape, 0, {&e});
      reads->insert(extra[j]->name);
    }
    outs.push_back(code);
  }
  if (outs.size() == 1) return outs[0];
  std::string s = "{";
  for (size_t k = 0; k < outs.size(); ++k) s += (k ? ", " : "") + outs[k];
  return s + "}";
}

Function Gen::run() {
  // Inputs first: the outputs take their shapes.
  const int num_in = uni(1, 3);
  for (int i = 0; i < num_in; ++i) {
    Dims s(uni(0, 3));
    for (int64_t& d : s) d = uni(1, 4);
    if (s.empty() && i == 0) s = {uni(2, 5)};
    new_input(s);
  }
  const int num_out = uni(1, 3);
  for (int k = 0; k < num_out; ++k) f.out_shapes.push_back(f.inputs[k % num_in].shape);
  if (num_out > 1) f.cov.constructs.insert("tuple_result");
  for (int v = 0; v < 3; ++v)
    f.host_variants.push_back({uni(0, 4), std::uniform_real_distribution<double>(-1.5, 1.5)(rng)});

  f.body = block(0, 0, uni(3, 8), true);
  // Every variable reaches a result: nothing drawn is dead code.
  std::vector<Var*> all;
  for (Var& v : vars_) all.push_back(&v);
  std::set<std::string> reads;
  const std::string r = result_expr(all, &reads);
  f.body.push_back(simple("return " + r + ";", reads));
  f.body.back().keep = true;

  // Tolerances per op class: exact-order elementwise code agrees to rounding;
  // transcendentals, reductions, library calls and normalizations differ in
  // summation order or vectorized math between the three ways of running.
  for (OpId id : f.cov.forward) {
    const graph::OpInfo& o = graph::op_info(id);
    double t = 1e-5;
    if (o.has(graph::op_trait::Expensive) || o.kind == graph::OpKind::Reduce) t = 1e-4;
    if (o.kind == graph::OpKind::Library || o.kind == graph::OpKind::Other) t = 1e-4;
    if (id == OpId::layer_norm || id == OpId::batch_norm || id == OpId::pow || id == OpId::scaled_dot_product_attention) t = 1e-3;
    f.tol = std::max(f.tol, t);
  }
  return f;
}

Function generate(uint64_t seed, int index, bool device) { return Gen(seed, index, device).run(); }

}  // namespace progen
