// One emitter per generatable op of the table: how to call it in C++ with
// operands of valid shapes and safe values. Elementwise ops and reductions
// are handled by kind, from the table's arity and dtype rule; the others by
// id. An op the table marks generatable without an emitter here is a hard
// error (`graph-progen --check-table`, run by the progen_table test).
#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include "gen.h"

namespace progen {

using graph::OpId;
using graph::OpKind;

namespace {

std::string b(bool v) { return v ? "true" : "false"; }
std::string s(int64_t v) { return std::to_string(v); }

// Input domains the generator must respect (not in the table, which has no
// notion of domain): positive arguments, bounded exponents.
enum class Domain { Any, Positive, Bounded };
Domain domain(OpId id) {
  switch (id) {
    case OpId::log: case OpId::sqrt: case OpId::rsqrt: return Domain::Positive;
    case OpId::exp: return Domain::Bounded;
    default: return Domain::Any;
  }
}

double unary_bound(OpId id, double x) {
  switch (id) {
    case OpId::exp: return std::exp(x);
    case OpId::log: return std::log(x + 1) + 1;
    case OpId::sqrt: return std::sqrt(x + 1);
    case OpId::rsqrt: case OpId::tanh: case OpId::sigmoid: case OpId::erf: case OpId::sign: return 1;
    default: return x + 1;
  }
}

}  // namespace

Val Gen::apply(OpId id, int depth) {
  const graph::OpInfo& info = graph::op_info(id);
  const std::string name(info.name);
  // ---- elementwise, by arity and dtype rule
  if (info.kind == OpKind::Elementwise && info.rule == graph::DTypeRule::ToBool) {
    // A bool result feeds where(cond, a, b); bool_expr draws the comparisons.
    Val c = bool_expr(depth);
    if (info.num_inputs == 1) c = op(id, name + "(" + c.code + ")", c.shape, 1, {&c}, VType::Bool);
    return where_of(c, depth);
  }
  if (info.kind == OpKind::Elementwise && info.num_inputs == 1) {
    Val x = float_expr(depth);
    if (domain(id) == Domain::Positive) {
      x = op(OpId::abs, "abs(" + x.code + ")", x.shape, x.bound, {&x});
      x.code = "(" + x.code + " + 1.0)";
      x.bound += 1;
    } else if (domain(id) == Domain::Bounded) {
      x = bounded(x, 3);
    }
    std::string code = name + "(" + x.code + ")";
    if (id == OpId::neg && coin()) code = "(-" + x.code + ")";
    return bounded(op(id, code, x.shape, unary_bound(id, x.bound), {&x}));
  }
  if (info.kind == OpKind::Elementwise) {
    Val a = float_expr(depth);
    Val c;
    const int kind = uni(0, 3);  // 0: host scalar, 1: literal, else a tensor
    if (kind == 0) {
      c = host_scalar(id == OpId::div || id == OpId::pow);
    } else if (kind == 1) {
      const double v = std::uniform_real_distribution<double>(-2, 2)(rng);
      c = Val{fmt(id == OpId::div || id == OpId::pow ? std::fabs(v) + 0.5 : v), {}, VType::Float, std::fabs(v) + 0.5,
              false, {}, true};
    } else {
      c = broadcast_operand(a.shape, depth);
      if (id == OpId::div && !c.reads.empty()) {
        c = op(OpId::abs, "abs(" + c.code + ")", c.shape, c.bound, {&c});
        c.code = "(" + c.code + " + 1.0)";
      }
    }
    if (id == OpId::pow) {
      a = op(OpId::abs, "abs(" + a.code + ")", a.shape, a.bound, {&a});
      a.code = "(" + a.code + " + 0.5)";
      a.bound += 0.5;
      c = bounded(c, 2);
    }
    Dims sh;
    broadcastable(a.shape, c.shape, &sh);
    double bound = a.bound + c.bound;
    if (id == OpId::mul) bound = a.bound * c.bound;
    if (id == OpId::div) bound = a.bound;
    if (id == OpId::pow) bound = std::pow(a.bound + 1, c.bound);
    std::string code = name + "(" + a.code + ", " + c.code + ")";
    static const char* ops[] = {"+", "-", "*", "/"};
    const int k = id == OpId::add ? 0 : id == OpId::sub ? 1 : id == OpId::mul ? 2 : id == OpId::div ? 3 : -1;
    if (k >= 0 && coin(0.7)) {
      code = "(" + a.code + " " + ops[k] + " " + c.code + ")";
      if (c.reads.empty() || c.shape.empty())
        if (coin(0.3) && id != OpId::div) code = "(" + c.code + " " + ops[k] + " " + a.code + ")";
    }
    return bounded(op(id, code, sh, bound, {&a, &c}));
  }
  // ---- reductions over random dims, keepdim or not
  if (info.kind == OpKind::Reduce) {
    if (info.rule == graph::DTypeRule::ToIndex) return apply(OpId::eq, depth);  // argmax: via bool_expr
    Val x = float_expr(depth);
    const int r = x.shape.size();
    if (r == 0 || coin(0.2)) {
      Val v = op(id, name + "(" + x.code + ")", {}, x.bound * (id == OpId::sum ? numel(x.shape) : 1), {&x});
      return bounded(v);
    }
    std::vector<int> dims;
    for (int d = 0; d < r; ++d)
      if (coin(0.5)) dims.push_back(d);
    if (dims.empty()) dims.push_back(uni(0, r - 1));
    const bool keep = coin();
    Dims out;
    int64_t reduced = 1;
    for (int d = 0; d < r; ++d) {
      const bool red = std::find(dims.begin(), dims.end(), d) != dims.end();
      if (red) reduced *= x.shape[d];
      if (!red) out.push_back(x.shape[d]);
      else if (keep) out.push_back(1);
    }
    if (keep) f.cov.constructs.insert("reduce_keepdim");
    std::string ds = "graph::Shape{";
    for (size_t i = 0; i < dims.size(); ++i) ds += (i ? ", " : "") + s(dims[i]);
    ds += "}";
    if (dims.size() == 1 && (id == OpId::sum || id == OpId::mean) && coin()) ds = s(dims[0]);
    Val v = op(id, name + "(" + x.code + ", " + ds + ", " + b(keep) + ")", out,
               x.bound * (id == OpId::sum ? reduced : 1), {&x});
    return bounded(v);
  }
  return apply_other(id, depth);
}

}  // namespace progen
