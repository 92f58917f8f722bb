// ONNX export, the driver: the model's inputs, initializers and outputs, and
// the walk over the IR. Op-table nodes go to lower_ops.cpp; the primitives on
// host values (constant, tensor_size, make_shape, defined, ...) are evaluated
// here at export time where they can be, since ONNX needs their results as
// attributes. What depends on a run-time host value (a loop counter, a
// tensor condition) becomes ONNX nodes on 0-d tensors, and If and Loop
// become ONNX If and Loop with subgraphs.
#include <onnx/checker.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <map>

#include "exporter.h"
#include "graph/cpu_loop.h"
#include "graph/ir/passes.h"
#include "graph/ir/value_primitives.h"
#include "graph/onnx_export.h"

namespace graph::onnx {
namespace {

using detail::Exporter;
using detail::Known;

void set_type(::onnx::ValueInfoProto& vi, const ir::Type& t, DType d) {
  auto* tt = vi.mutable_type()->mutable_tensor_type();
  tt->set_elem_type(detail::onnx_dtype(d));
  if (!t.dims) return;  // rank unknown: no shape
  auto* shape = tt->mutable_shape();
  for (const ir::Dim& dim : *t.dims) {
    auto* od = shape->add_dim();
    if (dim.is_static()) od->set_dim_value(dim.size);
    else if (!dim.symbol.empty()) od->set_dim_param(dim.symbol);
  }
}

const int64_t* known_int(const Exporter& ex, const ir::Value* v) {
  const Known* k = ex.known(v);
  return k ? std::get_if<int64_t>(k) : nullptr;
}

class Walker {
 public:
  Walker(Exporter& ex) : ex_(ex) {}

  void block(const ir::Block& b) {
    for (const auto& n : b.nodes()) {
      // A static train step writes .grad: ONNX models compute outputs only.
      if (n->is(OpId::backward_loss) || n->is(OpId::set_grads) || n->is(OpId::grad_sync_start) ||
          n->is(OpId::grad_sync_wait))
        ex_.fail(*n, "a static train step (loss.backward()) writes parameters' gradients, which an ONNX model "
                     "cannot; export the forward function instead");
      node(*n);
    }
  }

 private:
  Exporter& ex_;

  // `to` stands for `from` (a block parameter for its argument, an If's
  // output for the taken branch's return).
  void alias(const ir::Node& user, const ir::Value* to, const ir::Value* from) {
    if (ex_.is_undefined(from)) return ex_.mark_undefined(to);
    if (const Known* k = ex_.known(from)) ex_.set_known(to, *k);
    if (from->type().is_tensor() || (!ex_.known(from) && ex_.has_value(from))) ex_.bind(to, ex_.tensor(user, from));
    if (from->type().is_tensor()) ex_.alias(to, from);
  }

  // The dtype `v` has in ONNX: a tensor's, or a host value's 0-d tensor's.
  DType onnx_dtype_of(const ir::Node& user, const ir::Value* v) {
    if (v->type().is_scalar() && v->type().kind == ir::Type::Kind::Float) return DType::Float64;
    return ex_.dtype(user, v);
  }

  // A condition (a host bool or int, or a one-element tensor) as the 0-d
  // bool tensor ONNX If and Loop take: nonzero is true, as in C++.
  std::string condition(const ir::Node& user, const ir::Value* v) {
    const std::string b = ex_.tensor_as(user, v, DType::Bool);
    if (!v->type().is_tensor()) return b;
    return ex_.emit("Reshape", {b, ex_.const_ints({})}, "cond");
  }

  // A subgraph's output `name` of dtype `d` (elem type only: its shape may
  // differ from one run to the next), computed as `v`.
  void subgraph_output(::onnx::GraphProto& sub, const ir::Node& user, const ir::Value* v, DType d) {
    const std::string name = ex_.fresh(v->name() + "_out");
    ex_.node("Identity", {ex_.tensor_as(user, v, d)}, {name});
    auto* vi = sub.add_output();
    vi->set_name(name);
    vi->mutable_type()->mutable_tensor_type()->set_elem_type(detail::onnx_dtype(d));
  }

  void subgraph_input(::onnx::GraphProto& sub, const std::string& name, DType d, bool scalar) {
    auto* vi = sub.add_input();
    vi->set_name(name);
    auto* tt = vi->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(detail::onnx_dtype(d));
    if (scalar) tt->mutable_shape();  // rank 0
  }

  int64_t int_input(const ir::Node& n, size_t i) {
    const int64_t* v = known_int(ex_, n.input(i));
    if (!v) ex_.fail(n, "input %" + n.input(i)->name() + " is an int unknown at export time");
    return *v;
  }

  void node(const ir::Node& n) {
    switch (n.op_id()) {
      case OpId::FusionGroup: return inline_block(n, *n.block(0), true);
      case OpId::If: return if_(n);
      case OpId::Loop: return loop(n);
      case OpId::constant: {
        const ir::AttrValue& v = n.attrs().at("value");
        if (const auto* i = std::get_if<int64_t>(&v)) return ex_.set_known(n.output(), *i);
        if (const auto* d = std::get_if<double>(&v)) return ex_.set_known(n.output(), *d);
        if (const auto* b = std::get_if<bool>(&v)) return ex_.set_known(n.output(), *b);
        ex_.fail(n, "a constant that is not an int, a float or a bool");
      }
      case OpId::undefined: return ex_.mark_undefined(n.output());
      default: break;
    }
    if (const OpInfo* info = n.table_op()) {
      if (n.num_outputs() == 1 && n.output()->type().is_scalar()) return host_op(n, *info);
      return detail::lower_op(ex_, n, *info, detail::resolve_attrs(ex_, n));
    }
    primitive(n);
  }

  void inline_block(const ir::Node& n, const ir::Block& b, bool bind_params) {
    if (bind_params)
      for (size_t i = 0; i < b.params().size(); ++i) alias(n, b.param(i), n.input(i));
    block(b);
    for (size_t i = 0; i < n.num_outputs(); ++i) alias(n, n.output(i), b.returns().at(i));
  }

  // An If on a condition known now keeps its taken branch; otherwise an
  // ONNX If, each branch a subgraph returning the If's outputs.
  void if_(const ir::Node& n) {
    if (const Known* c = ex_.known(n.input(0))) {
      if (const auto* b = std::get_if<bool>(c)) return inline_block(n, *n.block(*b ? 0 : 1), false);
      if (const auto* i = std::get_if<int64_t>(c)) return inline_block(n, *n.block(*i != 0 ? 0 : 1), false);
      ex_.fail(n, "the condition is not a bool or an int");
    }
    const std::string cond = condition(n, n.input(0));
    std::vector<DType> dtypes;
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      if (n.output(i)->type().is_tensor() && !n.output(i)->type().dtype) ex_.alias(n.output(i), n.block(0)->returns().at(i));
      dtypes.push_back(onnx_dtype_of(n, n.output(i)));
    }
    ::onnx::GraphProto branches[2];
    for (int b = 0; b < 2; ++b) {
      branches[b].set_name(ex_.fresh(b == 0 ? "then" : "else"));
      detail::Exporter::Subgraph scope(ex_, branches[b]);
      block(*n.block(static_cast<size_t>(b)));
      for (size_t i = 0; i < n.num_outputs(); ++i) subgraph_output(branches[b], n, n.block(static_cast<size_t>(b))->returns().at(i), dtypes[i]);
    }
    std::vector<std::string> outs;
    for (size_t i = 0; i < n.num_outputs(); ++i) outs.push_back(ex_.fresh(n.output(i)->name()));
    auto& node = ex_.node("If", {cond}, outs);
    for (int b = 0; b < 2; ++b) {
      auto* a = node.add_attribute();
      a->set_name(b == 0 ? "then_branch" : "else_branch");
      a->set_type(::onnx::AttributeProto::GRAPH);
      a->mutable_g()->Swap(&branches[b]);
    }
    for (size_t i = 0; i < n.num_outputs(); ++i) ex_.bind(n.output(i), outs[i]);
  }

  // Loop(max trips, condition, carried...) as an ONNX Loop: the body's
  // inputs are (iteration, condition in, carried...), its outputs
  // (condition, carried...); a host value carried (a counter) is a 0-d tensor.
  void loop(const ir::Node& n) {
    const ir::Block& body = *n.block(0);
    std::string trips;  // empty: no limit (a while)
    const int64_t* max = known_int(ex_, n.input(0));
    if (!max || *max != std::numeric_limits<int64_t>::max()) trips = ex_.tensor_as(n, n.input(0), DType::Int64);
    std::vector<std::string> ins{trips, condition(n, n.input(1))};
    std::vector<DType> dtypes;
    for (size_t i = 2; i < n.inputs().size(); ++i) {
      if (ex_.is_undefined(n.input(i))) ex_.fail(n, "an undefined tensor is carried through the loop");
      dtypes.push_back(onnx_dtype_of(n, n.input(i)));
      ins.push_back(ex_.tensor_as(n, n.input(i), dtypes.back()));
    }
    ::onnx::GraphProto sub;
    sub.set_name(ex_.fresh("body"));
    {
      detail::Exporter::Subgraph scope(ex_, sub);
      const std::string iter = ex_.fresh(body.param(0)->name());
      subgraph_input(sub, iter, DType::Int64, true);
      ex_.bind(body.param(0), iter);
      subgraph_input(sub, ex_.fresh("cond_in"), DType::Bool, true);
      for (size_t i = 1; i < body.params().size(); ++i) {
        const ir::Value* p = body.param(i);
        const std::string name = ex_.fresh(p->name());
        subgraph_input(sub, name, dtypes.at(i - 1), !p->type().is_tensor());
        ex_.bind(p, name);
        if (p->type().is_tensor() && !p->type().dtype) ex_.alias(p, n.input(i + 1));
      }
      block(body);
      const std::string c = ex_.fresh("cond_out");
      ex_.node("Identity", {condition(n, body.returns().at(0))}, {c});
      auto* vi = sub.add_output();
      vi->set_name(c);
      vi->mutable_type()->mutable_tensor_type()->set_elem_type(detail::onnx_dtype(DType::Bool));
      for (size_t i = 1; i < body.returns().size(); ++i) subgraph_output(sub, n, body.returns()[i], dtypes.at(i - 1));
    }
    std::vector<std::string> outs;
    for (size_t i = 0; i < n.num_outputs(); ++i) outs.push_back(ex_.fresh(n.output(i)->name()));
    auto& node = ex_.node("Loop", ins, outs);
    auto* a = node.add_attribute();
    a->set_name("body");
    a->set_type(::onnx::AttributeProto::GRAPH);
    a->mutable_g()->Swap(&sub);
    for (size_t i = 0; i < n.num_outputs(); ++i) {
      ex_.bind(n.output(i), outs[i]);
      if (n.output(i)->type().is_tensor() && !n.output(i)->type().dtype) ex_.alias(n.output(i), n.input(i + 2));
    }
  }

  // An elementwise op on host scalars (`2 * embed_dim`), evaluated now
  // when its inputs are known, else as ONNX nodes on 0-d tensors.
  void host_op(const ir::Node& n, const OpInfo& info) {
    std::vector<double> in;
    bool all_int = true;
    for (const ir::Value* v : n.inputs()) {
      const Known* k = ex_.known(v);
      if (!k) return run_time_host_op(n, info);
      if (const auto* i = std::get_if<int64_t>(k)) in.push_back(static_cast<double>(*i));
      else if (const auto* d = std::get_if<double>(k)) in.push_back(*d), all_int = false;
      else if (const auto* b = std::get_if<bool>(k)) in.push_back(*b ? 1 : 0);
      else ex_.fail(n, "a host-scalar op on a list");
    }
    double r = 0;
    const double a = in.at(0), b = in.size() > 1 ? in[1] : 0;
    switch (info.id) {
      case OpId::add: r = a + b; break;
      case OpId::sub: r = a - b; break;
      case OpId::mul: r = a * b; break;
      case OpId::div: r = a / b, all_int = false; break;
      case OpId::neg: r = -a; break;
      case OpId::maximum: r = std::max(a, b); break;
      case OpId::minimum: r = std::min(a, b); break;
      case OpId::lt: return ex_.set_known(n.output(), a < b);
      case OpId::le: return ex_.set_known(n.output(), a <= b);
      case OpId::gt: return ex_.set_known(n.output(), a > b);
      case OpId::ge: return ex_.set_known(n.output(), a >= b);
      case OpId::eq: return ex_.set_known(n.output(), a == b);
      case OpId::ne: return ex_.set_known(n.output(), a != b);
      case OpId::logical_not: return ex_.set_known(n.output(), a == 0);
      default: ex_.fail(n, "this host-scalar op is not evaluated at export time");
    }
    const ir::Type::Kind k = n.output()->type().kind;
    if (k == ir::Type::Kind::Int && all_int) return ex_.set_known(n.output(), static_cast<int64_t>(r));
    if (k == ir::Type::Kind::Bool) return ex_.set_known(n.output(), r != 0);
    ex_.set_known(n.output(), r);
  }

  // A host-scalar op on a value known only at run time (a loop counter):
  // computed in int64, double (any float operand, or a division) or bool,
  // as C++ computes it.
  void run_time_host_op(const ir::Node& n, const OpInfo& info) {
    static const std::map<OpId, const char*> kOps = {
        {OpId::add, "Add"},     {OpId::sub, "Sub"},        {OpId::mul, "Mul"},  {OpId::div, "Div"},
        {OpId::neg, "Neg"},     {OpId::maximum, "Max"},    {OpId::minimum, "Min"}, {OpId::lt, "Less"},
        {OpId::le, "LessOrEqual"}, {OpId::gt, "Greater"}, {OpId::ge, "GreaterOrEqual"}, {OpId::eq, "Equal"},
        {OpId::ne, "Equal"},    {OpId::logical_not, "Not"},   {OpId::abs, "Abs"},  {OpId::sqrt, "Sqrt"},
        {OpId::exp, "Exp"},     {OpId::log, "Log"},        {OpId::sin, "Sin"},  {OpId::cos, "Cos"},
        {OpId::tanh, "Tanh"},   {OpId::erf, "Erf"},        {OpId::pow, "Pow"}};
    auto op = kOps.find(info.id);
    if (op == kOps.end()) ex_.fail(n, "this host-scalar op on a value known only at run time has no ONNX mapping");
    DType d = info.id == OpId::div || info.rule == DTypeRule::ToFloat ? DType::Float64 : DType::Int64;
    for (const ir::Value* v : n.inputs())
      if (v->type().kind == ir::Type::Kind::Float) d = DType::Float64;
    if (info.id == OpId::logical_not) d = DType::Bool;
    std::vector<std::string> in;
    for (const ir::Value* v : n.inputs()) in.push_back(ex_.tensor_as(n, v, d));
    std::string out = ex_.emit(op->second, in, n.output()->name());
    if (info.id == OpId::ne) out = ex_.emit("Not", {out}, n.output()->name());
    const DType want = onnx_dtype_of(n, n.output());
    const DType got = info.rule == DTypeRule::ToBool || info.id == OpId::logical_not ? DType::Bool : d;
    ex_.bind(n.output(), ex_.cast(out, got, want));
  }

  // A value-primitive on a host value known only at run time, as ONNX nodes.
  // False for those that have no mapping.
  bool run_time_primitive(const ir::Node& n) {
    auto int_tensor = [&](size_t i) { return ex_.tensor_as(n, n.input(i), DType::Int64); };
    auto one = [&](size_t i) { return ex_.emit("Reshape", {int_tensor(i), ex_.const_ints({1})}, "i1"); };
    switch (n.op_id()) {
      case OpId::int_div:
      case OpId::int_mod: {  // C++ truncates: ONNX Div on integers, Mod with fmod = 1
        std::string out;
        auto& node = ex_.node(n.is(OpId::int_div) ? "Div" : "Mod", {int_tensor(0), int_tensor(1)},
                              {out = ex_.fresh(n.output()->name())});
        if (n.is(OpId::int_mod)) detail::Exporter::attr(node, "fmod", int64_t{1});
        ex_.bind(n.output(), out);
        return true;
      }
      case OpId::int_to_float: {
        ex_.bind(n.output(), ex_.tensor_as(n, n.input(0), DType::Float64));
        return true;
      }
      case OpId::make_shape: {
        std::vector<std::string> parts;
        for (size_t i = 0; i < n.inputs().size(); ++i) parts.push_back(one(i));
        std::string out;
        detail::Exporter::attr(ex_.node("Concat", parts, {out = ex_.fresh(n.output()->name())}), "axis", int64_t{0});
        ex_.bind(n.output(), out);
        return true;
      }
      case OpId::slice_dyn: {  // slice_dyn{dim}(x, start, end, step)
        const int64_t rank = static_cast<int64_t>(ex_.need_sizes(n, n.input(0)).size());
        int64_t dim = std::get<int64_t>(n.attrs().at("dim"));
        if (dim < 0) dim += rank;
        if (dim < 0 || dim >= rank) ex_.fail(n, "dimension out of range");
        ex_.bind(n.output(), ex_.emit("Slice", {ex_.tensor(n, n.input(0)), one(1), one(2), ex_.const_ints({dim}), one(3)},
                                      n.output()->name()));
        return true;
      }
      default: return false;
    }
  }

  // True when `n` reads a host value known only at run time.
  bool reads_run_time_value(const ir::Node& n) const {
    for (const ir::Value* v : n.inputs())
      if (v->type().is_scalar() && !ex_.known(v) && ex_.has_value(v)) return true;
    return false;
  }

  // What `v` is once the Ifs with conditions known at export time are taken
  // (an assign's value is its input itself on the path that updated nothing).
  const ir::Value* written_value(const ir::Value* v) const {
    while (const ir::Node* p = v->producer()) {
      if (!p->is(OpId::If)) break;
      const Known* c = ex_.known(p->input(0));
      const auto* b = c ? std::get_if<bool>(c) : nullptr;
      if (!b) break;
      size_t i = 0;
      while (p->output(i) != v) ++i;
      v = p->block(*b ? 0 : 1)->returns().at(i);
    }
    return v;
  }

  void primitive(const ir::Node& n) {
    if (reads_run_time_value(n) && run_time_primitive(n)) return;
    const ir::Value* out = n.num_outputs() == 1 ? n.output() : nullptr;
    auto sizes = [&] { return ex_.need_sizes(n, n.input(0)); };
    auto dim_index = [&](int64_t d, size_t rank) {
      if (d < 0) d += static_cast<int64_t>(rank);
      if (d < 0 || d >= static_cast<int64_t>(rank)) ex_.fail(n, "dimension out of range");
      return static_cast<size_t>(d);
    };
    switch (n.op_id()) {
      case OpId::defined: {
        const ir::Value* t = n.input(0);
        const bool maybe_undefined =
            !t->producer() && !t->param_of()->owner() && ir::may_be_undefined(t) && !ex_.is_param(t);
        if (maybe_undefined && !ex_.is_undefined(t))
          ex_.fail(n, "the optional input %" + t->name() + " may be undefined at run time; bind it (a parameter) to export");
        return ex_.set_known(out, !ex_.is_undefined(t));
      }
      case OpId::tensor_dim: return ex_.set_known(out, static_cast<int64_t>(sizes().size()));
      case OpId::tensor_size: {
        auto s = sizes();
        return ex_.set_known(out, s[dim_index(int_input(n, 1), s.size())]);
      }
      case OpId::tensor_numel: {
        int64_t p = 1;
        for (int64_t s : sizes()) p *= s;
        return ex_.set_known(out, p);
      }
      case OpId::tensor_sizes: return ex_.set_known(out, sizes());
      case OpId::assign: {  // an input updated in place: only the no-update path exports
        if (written_value(n.input(1)) == n.input(0)) return;
        ex_.fail(n, "the graph updates its input %" + n.input(0)->name() +
                        " in place (a module buffer, as BatchNorm's running stats in training mode), which an ONNX "
                        "graph cannot do; export the module in eval mode");
      }
      case OpId::item: {  // the one element as a 0-d tensor (Reshape checks there is one)
        const std::string r = ex_.emit("Reshape", {ex_.tensor(n, n.input(0)), ex_.const_ints({})}, out->name());
        return ex_.bind(out, ex_.cast(r, ex_.dtype(n, n.input(0)), onnx_dtype_of(n, out)));
      }
      case OpId::broadcast_sizes: {
        std::vector<Shape> shapes;
        for (const ir::Value* v : n.inputs()) {
          const std::vector<int64_t> s = ex_.need_sizes(n, v);
          shapes.emplace_back(s.begin(), s.end());
        }
        const Shape b = cpu::broadcast_shapes("broadcast", shapes);
        return ex_.set_known(out, std::vector<int64_t>(b.begin(), b.end()));
      }
      case OpId::int_div:
      case OpId::int_mod: {
        const int64_t a = int_input(n, 0), b = int_input(n, 1);
        if (b == 0) ex_.fail(n, "integer division by zero");
        return ex_.set_known(out, n.is(OpId::int_div) ? a / b : a % b);
      }
      case OpId::int_to_float: return ex_.set_known(out, static_cast<double>(int_input(n, 0)));
      case OpId::make_shape: {
        std::vector<int64_t> v;
        for (size_t i = 0; i < n.inputs().size(); ++i) v.push_back(int_input(n, i));
        return ex_.set_known(out, v);
      }
      case OpId::shape_get:
      case OpId::shape_set: {
        const Known* k = ex_.known(n.input(0));
        if (!k || !std::holds_alternative<std::vector<int64_t>>(*k)) ex_.fail(n, "a shape unknown at export time");
        auto v = std::get<std::vector<int64_t>>(*k);
        const size_t i = dim_index(int_input(n, 1), v.size());
        if (n.is(OpId::shape_get)) return ex_.set_known(out, v[i]);
        v[i] = int_input(n, 2);
        return ex_.set_known(out, v);
      }
      case OpId::slice_dyn: {
        const ir::Attributes a{{"dim", n.attrs().at("dim")}, {"start", int_input(n, 1)}, {"end", int_input(n, 2)},
                               {"step", int_input(n, 3)}};
        return detail::lower_op(ex_, n, op_info(OpId::slice), a);
      }
      case OpId::reshape_dyn: {
        std::vector<int64_t> shape;
        for (size_t i = 1; i < n.inputs().size(); ++i) shape.push_back(int_input(n, i));
        return detail::lower_op(ex_, n, op_info(OpId::reshape), {{"shape", shape}});
      }
      default: ex_.fail(n, "'" + n.op() + "' has no ONNX mapping");
    }
  }
};

// The parameters' dtypes and shapes, and the given input shapes, as the
// inputs' types where the IR's are less precise. True when one changed.
bool refine_input_types(ir::Graph& g, const std::map<std::string, Tensor>& params, const ExportOptions& options) {
  bool changed = false;
  for (const auto& in : g.inputs()) {
    ir::Value* v = in.get();
    if (!v->type().is_tensor()) continue;
    std::vector<ir::Dim> dims;
    std::optional<DType> d = v->type().dtype;
    if (auto p = params.find(v->name()); p != params.end()) {
      d = p->second.dtype();
      for (int64_t s : p->second.sizes()) dims.push_back(ir::Dim::of(s));
    } else if (auto s = options.input_shapes.find(v->name()); s != options.input_shapes.end()) {
      for (int64_t x : s->second) dims.push_back(x < 0 ? ir::Dim::sym(v->name() + "_" + std::to_string(dims.size())) : ir::Dim::of(x));
    } else {
      continue;
    }
    const ir::Type t = ir::Type::tensor(d, dims);
    if (t != v->type()) v->set_type(t), changed = true;
  }
  return changed;
}

}  // namespace

std::string export_to_string(const ir::Graph& g_in, const std::map<std::string, Tensor>& params,
                             const ExportOptions& options) {
  // A copy, with the types inferred where the graph lacks some (a plugin's
  // unoptimized .graph); a traced graph keeps the types it observed.
  std::unique_ptr<ir::Graph> g = ir::clone(g_in);
  bool untyped = refine_input_types(*g, params, options);
  ir::walk(g->top(), [&](const ir::Node* n) {
    for (const ir::Value* v : n->outputs()) untyped |= v->type().is_tensor() && !v->type().dtype;
  });
  if (untyped) ir::infer_types(*g);
  for (const auto& k : options.input_shapes)
    if (std::none_of(g->inputs().begin(), g->inputs().end(), [&](const auto& v) { return v->name() == k.first; }))
      throw Error("onnx export: no graph input is named '" + k.first + "'");

  ::onnx::ModelProto model;
  model.set_ir_version(8);
  model.set_producer_name("cxxgraph");
  model.set_producer_version(CXXGRAPH_VERSION);
  auto* opset = model.add_opset_import();
  opset->set_domain("");
  opset->set_version(kOpset);
  ::onnx::GraphProto& graph = *model.mutable_graph();
  graph.set_name(options.model_name.empty() ? g->name() : options.model_name);

  Exporter ex(graph, params);
  for (const auto& in : g->inputs()) {
    const ir::Value* v = in.get();
    if (auto p = params.find(v->name()); p != params.end()) {
      if (!v->type().is_tensor()) throw Error("onnx export: parameter '" + v->name() + "' binds a host-scalar input");
      ex.bind_param(v, p->second);
      continue;
    }
    if (auto s = options.scalars.find(v->name()); s != options.scalars.end()) {
      if (!v->type().is_scalar()) throw Error("onnx export: scalar value given for the tensor input %" + v->name());
      std::visit([&](const auto& x) { ex.set_known(v, x); }, s->second);
      continue;
    }
    if (!v->type().is_tensor()) continue;  // an error where it is used, naming the user
    if (!v->type().dtype) throw Error("onnx export: the graph input %" + v->name() + " has no dtype (" + v->type().str() + ")");
    if (!v->type().dims)  // ONNX requires a rank for graph inputs
      throw Error("onnx export: the graph input %" + v->name() + " has no shape: give it (ExportOptions::input_shapes, "
                  "graph-export --shape " + v->name() + "=2,3)");
    const std::string name = ex.fresh(v->name());
    ex.bind(v, name);
    auto* vi = graph.add_input();
    vi->set_name(name);
    set_type(*vi, v->type(), *v->type().dtype);
  }
  for (const auto& k : options.scalars)
    if (std::none_of(g->inputs().begin(), g->inputs().end(), [&](const auto& v) { return v->name() == k.first; }))
      throw Error("onnx export: no graph input is named '" + k.first + "'");

  std::vector<std::string> output_names;  // reserved before any value takes one
  for (size_t i = 0; i < g->outputs().size(); ++i) output_names.push_back(ex.fresh("output" + std::to_string(i)));
  Walker(ex).block(*g->top());

  // Every output under its own name, through an Identity (an output may be
  // an input, a constant or listed twice).
  ir::Node* ret = g->top()->append("return");  // a stand-in user for error messages
  for (size_t i = 0; i < g->outputs().size(); ++i) {
    const ir::Value* v = g->outputs()[i];
    if (!v->type().is_tensor() && !ex.known(v) && !ex.has_value(v))
      ex.fail(*ret, "output " + std::to_string(i) + " is not a tensor");
    const DType d = ex.dtype(*ret, v);
    if (v->type().is_tensor() && !v->type().dims)
      ex.fail(*ret, "the rank of output " + std::to_string(i) + " is unknown; give the inputs' shapes");
    const std::string& name = output_names[i];
    ex.node("Identity", {ex.tensor(*ret, v)}, {name});
    auto* vi = graph.add_output();
    vi->set_name(name);
    set_type(*vi, v->type().is_tensor() ? v->type() : ir::Type::tensor(d, {}), d);
  }
  try {
    ::onnx::checker::check_model(model);
  } catch (const std::exception& e) {
    throw Error(std::string("onnx export: internal error, the ONNX checker refuses the model: ") + e.what());
  }
  std::string bytes;
  if (!model.SerializeToString(&bytes)) throw Error("onnx export: the model does not serialize (over 2 GiB?)");
  return bytes;
}

void export_model(const std::string& path, const ir::Graph& g, const std::map<std::string, Tensor>& params,
                  const ExportOptions& options) {
  const std::string bytes = export_to_string(g, params, options);
  std::ofstream f(path, std::ios::binary);
  if (!f || !f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !f.flush())
    throw Error("onnx export: cannot write '" + path + "'");
}

void export_model(const std::string& path, const SavedGraph& saved, const ExportOptions& options) {
  export_model(path, *saved.graph, saved.params, options);
}

}  // namespace graph::onnx
