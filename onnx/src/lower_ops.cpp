// ONNX export, the op rules: each op-table op as ONNX opset-17 nodes, chosen
// by OpId (op_table.h). Elementwise inputs are cast to the dtype the op
// computes in, since ONNX does not promote; ops ONNX lacks (gelu, silu, mse,
// attention) are decomposed into the same formula the eager kernel computes.
#include <cmath>
#include <limits>

#include "rule.h"

namespace graph::onnx::detail {
namespace {

const char* unary_onnx(OpId id) {
  switch (id) {
    case OpId::neg: return "Neg";
    case OpId::abs: return "Abs";
    case OpId::sign: return "Sign";
    case OpId::relu: return "Relu";
    case OpId::exp: return "Exp";
    case OpId::log: return "Log";
    case OpId::sqrt: return "Sqrt";
    case OpId::tanh: return "Tanh";
    case OpId::sigmoid: return "Sigmoid";
    case OpId::erf: return "Erf";
    case OpId::sin: return "Sin";
    case OpId::cos: return "Cos";
    case OpId::softplus: return "Softplus";
    case OpId::logical_not: return "Not";
    default: return nullptr;
  }
}

const char* binary_onnx(OpId id) {
  switch (id) {
    case OpId::add: return "Add";
    case OpId::sub: return "Sub";
    case OpId::mul: return "Mul";
    case OpId::div: return "Div";
    case OpId::pow: return "Pow";
    case OpId::maximum: return "Max";
    case OpId::minimum: return "Min";
    case OpId::clamp_min: return "Max";
    case OpId::clamp_max: return "Min";
    case OpId::lt: return "Less";
    case OpId::le: return "LessOrEqual";
    case OpId::gt: return "Greater";
    case OpId::ge: return "GreaterOrEqual";
    case OpId::eq: case OpId::ne: return "Equal";  // ne: Not(Equal)
    default: return nullptr;
  }
}

// The dtype a comparison compares in: the tensors' promoted dtype, raised by
// host scalars only to a higher category (PyTorch's rule, dtype.h).
DType compare_dtype(Rule& r) {
  std::optional<DType> t, s;
  for (const ir::Value* v : r.n.inputs()) {
    const DType d = r.ex.dtype(r.n, v);
    if (v->type().is_tensor()) t = t ? promote_types(*t, d) : d;
    else s = s ? promote_types(*s, d) : d;
  }
  if (!t) return *s;
  return s ? promote_with_scalar(*t, *s) : *t;
}

void elementwise(Rule& r, const OpInfo& op) {
  const DType out = r.out_dtype();
  if (op.rule == DTypeRule::ToBool && op.num_inputs == 2) {
    const DType c = compare_dtype(r);
    std::string y = r.emit(binary_onnx(op.id), {r.x_as(0, c), r.x_as(1, c)});
    if (op.id == OpId::ne) y = r.emit("Not", {y});
    return r.done(y);
  }
  if (op.id == OpId::logical_not) return r.done(r.emit("Not", {r.x_as(0, DType::Bool)}));
  if (op.id == OpId::leaky_relu || op.id == OpId::elu) {  // x > 0 ? x : slope * x, or alpha * (exp(x) - 1)
    const std::string x = r.x_as(0, out), b = r.x_as(1, out);
    const std::string low = op.id == OpId::leaky_relu
                                ? r.emit("Mul", {x, b})
                                : r.emit("Mul", {b, r.emit("Sub", {r.emit("Exp", {x}), r.ex.const_scalar(1, out)})});
    return r.done(r.emit("Where", {r.emit("Greater", {x, r.ex.const_scalar(0, out)}), x, low}));
  }
  if (op.num_inputs == 2) {
    if (!binary_onnx(op.id)) r.ex.fail(r.n, "no ONNX mapping for this elementwise op");
    return r.done(r.emit(binary_onnx(op.id), {r.x_as(0, out), r.x_as(1, out)}));
  }
  const std::string x = r.x_as(0, out);
  switch (op.id) {
    case OpId::log1p: return r.done(r.emit("Log", {r.emit("Add", {x, r.ex.const_scalar(1, out)})}));
    case OpId::expm1: return r.done(r.emit("Sub", {r.emit("Exp", {x}), r.ex.const_scalar(1, out)}));
    case OpId::rsqrt: return r.done(r.emit("Reciprocal", {r.emit("Sqrt", {x})}));
    case OpId::gelu: {  // x * 0.5 * (1 + erf(x / sqrt(2))), the eager formula
      const std::string e = r.emit("Erf", {r.emit("Mul", {x, r.ex.const_scalar(0.70710678118654752, out)})});
      const std::string h = r.emit("Mul", {r.emit("Add", {e, r.ex.const_scalar(1, out)}), r.ex.const_scalar(0.5, out)});
      return r.done(r.emit("Mul", {x, h}));
    }
    case OpId::silu: return r.done(r.emit("Mul", {x, r.emit("Sigmoid", {x})}));
    default: break;
  }
  const char* name = unary_onnx(op.id);
  if (!name) r.ex.fail(r.n, "no ONNX mapping for this elementwise op");
  r.done(r.emit(name, {x}));
}

void reduce(Rule& r, const OpInfo& op) {
  const bool keep = r.b("keepdim", false);
  const int64_t rk = r.rank(0);
  std::vector<int64_t> axes;
  if (r.has("dim"))
    for (int64_t d : r.ints("dim")) axes.push_back(r.axis(d, rk));
  std::string out;
  if (op.id == OpId::argmax) {
    std::string x = r.x(0);
    int64_t axis = 0;
    if (axes.empty()) x = r.emit("Reshape", {x, r.ex.const_ints({-1})});  // over every element
    else if (axes.size() == 1) axis = axes[0];
    else r.ex.fail(r.n, "argmax over several dims");
    auto& node = r.last_node("ArgMax", {x}, out);
    Exporter::attr(node, "axis", axis);
    Exporter::attr(node, "keepdims", int64_t{keep && !axes.empty()});
    return r.done(out);
  }
  const std::string x = r.x_as(0, r.out_dtype());  // sum of ints or bools accumulates in int64
  if (op.id == OpId::sum) {  // axes as an input since opset 13
    std::vector<std::string> inputs{x};
    if (!axes.empty()) inputs.push_back(r.ex.const_ints(axes));
    Exporter::attr(r.last_node("ReduceSum", inputs, out), "keepdims", int64_t{keep});
    return r.done(out);
  }
  const char* name = op.id == OpId::mean ? "ReduceMean" : op.id == OpId::amax ? "ReduceMax" : "ReduceMin";
  auto& node = r.last_node(name, {x}, out);  // axes as an attribute until opset 18
  if (!axes.empty()) Exporter::attr(node, "axes", axes);
  Exporter::attr(node, "keepdims", int64_t{keep});
  r.done(out);
}

void view(Rule& r, const OpInfo& op) {
  const std::string x = r.x(0);
  std::string out;
  auto transpose = [&](std::vector<int64_t> perm) {
    Exporter::attr(r.last_node("Transpose", {x}, out), "perm", perm);
    r.done(out);
  };
  auto identity_perm = [&] {
    std::vector<int64_t> p(static_cast<size_t>(r.rank(0)));
    for (size_t k = 0; k < p.size(); ++k) p[k] = static_cast<int64_t>(k);
    return p;
  };
  switch (op.id) {
    case OpId::t:
      if (r.rank(0) < 2) return r.done(r.emit("Identity", {x}));
      return transpose({1, 0});
    case OpId::transpose: {
      auto p = identity_perm();
      const int64_t rk = r.rank(0);
      std::swap(p[r.axis(r.i("dim0"), rk)], p[r.axis(r.i("dim1"), rk)]);
      return transpose(p);
    }
    case OpId::permute: {
      std::vector<int64_t> p;
      for (int64_t d : r.ints("dims")) p.push_back(r.axis(d, r.rank(0)));
      return transpose(p);
    }
    case OpId::reshape: {
      auto shape = r.ints("shape");
      // ONNX reads 0 as "copy that dim" unless allowzero; torch means size 0.
      const bool zero = std::find(shape.begin(), shape.end(), 0) != shape.end();
      auto& node = r.last_node("Reshape", {x, r.ex.const_ints(shape)}, out);
      if (zero) Exporter::attr(node, "allowzero", int64_t{1});
      return r.done(out);
    }
    case OpId::expand: {  // Expand broadcasts both ways: 1 keeps the input's size, as -1 does
      auto shape = r.ints("shape");
      for (int64_t& s : shape) s = s == -1 ? 1 : s;
      return r.done(r.emit("Expand", {x, r.ex.const_ints(shape)}));
    }
    case OpId::slice: {
      const int64_t a = r.axis(r.i("dim"), r.rank(0));
      const int64_t step = r.has("step") ? r.i("step") : 1;
      return r.done(r.emit("Slice", {x, r.ex.const_ints({r.i("start")}), r.ex.const_ints({r.i("end")}),
                                     r.ex.const_ints({a}), r.ex.const_ints({step})}));
    }
    case OpId::squeeze: {  // torch squeezes only dims of size 1: ONNX would refuse the others
      const auto sizes = r.ex.need_sizes(r.n, r.in(0));
      std::vector<int64_t> axes;
      const int64_t rk = static_cast<int64_t>(sizes.size());
      for (int64_t k = 0; k < rk; ++k)
        if (sizes[k] == 1 && (!r.has("dim") || r.axis(r.i("dim"), rk) == k)) axes.push_back(k);
      if (axes.empty()) return r.done(r.emit("Identity", {x}));
      return r.done(r.emit("Squeeze", {x, r.ex.const_ints(axes)}));
    }
    case OpId::unsqueeze: return r.done(r.emit("Unsqueeze", {x, r.ex.const_ints({r.i("dim")})}));
    case OpId::flatten: {
      const int64_t rk = r.rank(0);
      if (rk == 0) return r.done(r.emit("Reshape", {x, r.ex.const_ints({1})}));
      const int64_t s = r.axis(r.has("start_dim") ? r.i("start_dim") : 0, rk);
      const int64_t e = r.axis(r.has("end_dim") ? r.i("end_dim") : -1, rk);
      if (s >= e) return r.done(r.emit("Identity", {x}));
      std::vector<int64_t> shape(static_cast<size_t>(s), 0);  // 0: the input's size there
      shape.push_back(-1);
      if (e + 1 < rk) {
        const auto sizes = r.ex.need_sizes(r.n, r.in(0));
        shape.insert(shape.end(), sizes.begin() + e + 1, sizes.end());
      }
      return r.done(r.emit("Reshape", {x, r.ex.const_ints(shape)}));
    }
    default: r.ex.fail(r.n, "no ONNX mapping for this view");
  }
}

}  // namespace

void lower_op(Exporter& ex, const ir::Node& n, const OpInfo& op, const ir::Attributes& attrs) {
  Rule r{ex, n, attrs};
  switch (op.kind) {
    case OpKind::Elementwise: return elementwise(r, op);
    case OpKind::Reduce: return reduce(r, op);
    case OpKind::View: return view(r, op);
    case OpKind::Library:
    case OpKind::Other: return lower_nn_op(r, op);
    default: ex.fail(n, "no ONNX mapping for this structural node");  // export.cpp handles those it can
  }
}

}  // namespace graph::onnx::detail
