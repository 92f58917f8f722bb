// The Exporter's building blocks: names, initializers, constants, casts and
// the export-time host values (exporter.h).
#include "exporter.h"

#include <cstring>

#include "graph/ir/value_primitives.h"

namespace graph::onnx::detail {

int32_t onnx_dtype(DType d) {
  using T = ::onnx::TensorProto;
  switch (d) {
    case DType::Float32: return T::FLOAT;
    case DType::Float64: return T::DOUBLE;
    case DType::Float16: return T::FLOAT16;
    case DType::BFloat16: return T::BFLOAT16;
    case DType::Int32: return T::INT32;
    case DType::Int64: return T::INT64;
    case DType::Bool: return T::BOOL;
  }
  return T::UNDEFINED;
}

void Exporter::fail(const ir::Node& n, const std::string& what) const {
  std::string where = n.op();
  if (n.loc().valid())
    where += " at " + n.loc().file + ":" + std::to_string(n.loc().line) + ":" + std::to_string(n.loc().col);
  throw Error("onnx export: " + where + ": " + what);
}

const Known* Exporter::known(const ir::Value* v) const {
  auto it = known_.find(v);
  return it == known_.end() ? nullptr : &it->second;
}

void Exporter::bind_param(const ir::Value* v, const Tensor& t) {
  lazy_params_[v] = t;
  // An int list parameter (a Shape member: stride, normalized_shape) can
  // also decide attributes.
  if (t.dtype() == DType::Int64 && t.dim() == 1) {
    const Tensor c = t.contiguous();
    const int64_t* p = c.data_ptr<int64_t>();
    set_known(v, std::vector<int64_t>(p, p + c.numel()));
  }
}

DType Exporter::dtype(const ir::Node& user, const ir::Value* v) const {
  if (auto it = lazy_params_.find(v); it != lazy_params_.end()) return it->second.dtype();
  if (const Known* k = known(v)) {
    if (std::holds_alternative<double>(*k)) return DType::Float32;
    if (std::holds_alternative<bool>(*k)) return DType::Bool;
    return DType::Int64;
  }
  if (v->type().is_scalar()) {  // known only at run time: a 0-d tensor
    if (v->type().kind == ir::Type::Kind::Float) return DType::Float64;
    return v->type().kind == ir::Type::Kind::Bool ? DType::Bool : DType::Int64;
  }
  if (!v->type().dtype) {
    if (auto a = aliases_.find(v); a != aliases_.end()) return dtype(user, a->second);
    fail(user, "the dtype of %" + v->name() + " is unknown");
  }
  return *v->type().dtype;
}

std::optional<std::vector<int64_t>> Exporter::static_sizes(const ir::Value* v) {
  if (!v->type().is_tensor() || !v->type().dims) return std::nullopt;
  std::vector<int64_t> out;
  for (const ir::Dim& d : *v->type().dims) {
    if (!d.is_static()) return std::nullopt;
    out.push_back(d.size);
  }
  return out;
}

std::vector<int64_t> Exporter::need_sizes(const ir::Node& user, const ir::Value* v) const {
  if (auto it = lazy_params_.find(v); it != lazy_params_.end())
    return {it->second.sizes().begin(), it->second.sizes().end()};
  auto s = static_sizes(v);
  if (!s)
    if (auto a = aliases_.find(v); a != aliases_.end()) return need_sizes(user, a->second);
  if (!s) fail(user, "needs the static shape of %" + v->name() + ", which the IR leaves unknown (" + v->type().str() + ")");
  return *s;
}

std::string Exporter::tensor(const ir::Node& user, const ir::Value* v) {
  if (auto it = names_.find(v); it != names_.end()) return it->second;
  if (auto it = lazy_params_.find(v); it != lazy_params_.end()) {
    const std::string name = fresh(v->name());
    add_initializer(name, it->second);
    names_[v] = name;
    return name;
  }
  if (is_undefined(v)) fail(user, "an undefined tensor (%" + v->name() + ") is used where ONNX needs a value");
  if (const Known* k = known(v)) {
    if (const auto* i = std::get_if<int64_t>(k)) return const_scalar(static_cast<double>(*i), DType::Int64);
    if (const auto* d = std::get_if<double>(k)) return const_scalar(*d, DType::Float32);
    if (const auto* b = std::get_if<bool>(k)) return const_scalar(*b ? 1 : 0, DType::Bool);
    return const_ints(std::get<std::vector<int64_t>>(*k));
  }
  if (v->type().is_scalar() && !v->producer())
    fail(user, "the host-scalar input %" + v->name() + " has no value: give it (ExportOptions::scalars, graph-export --set " +
                   v->name() + "=VALUE)");
  fail(user, "%" + v->name() + " has no ONNX value (its producer was not exported)");
}

std::string Exporter::tensor_as(const ir::Node& user, const ir::Value* v, DType d) {
  if (!names_.count(v) && !lazy_params_.count(v)) {
    if (const Known* k = known(v)) {
      if (const auto* i = std::get_if<int64_t>(k)) return const_scalar(static_cast<double>(*i), d);
      if (const auto* f = std::get_if<double>(k)) return const_scalar(*f, d);
      if (const auto* b = std::get_if<bool>(k)) return const_scalar(*b ? 1 : 0, d);
    }
  }
  return cast(tensor(user, v), dtype(user, v), d);
}

std::string Exporter::fresh(const std::string& hint) {
  const std::string base = hint.empty() ? "t" : hint;
  int& k = next_suffix_[base];
  std::string name = base;
  while (taken_.count(name)) name = base + "_" + std::to_string(++k);
  taken_.insert(name);
  return name;
}

::onnx::NodeProto& Exporter::node(const std::string& op, const std::vector<std::string>& inputs,
                                  const std::vector<std::string>& outputs) {
  ::onnx::NodeProto* n = cur_->add_node();
  n->set_op_type(op);
  n->set_name(fresh("n_" + op));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  return *n;
}

std::string Exporter::emit(const std::string& op, const std::vector<std::string>& inputs, const std::string& hint) {
  std::string out = fresh(hint);
  node(op, inputs, {out});
  return out;
}

std::string Exporter::const_ints(const std::vector<int64_t>& v) {
  ::onnx::TensorProto* t = g_.add_initializer();
  t->set_name(fresh("c_ints"));
  t->set_data_type(::onnx::TensorProto::INT64);
  t->add_dims(static_cast<int64_t>(v.size()));
  for (int64_t x : v) t->add_int64_data(x);
  return t->name();
}

std::string Exporter::const_scalar(double v, DType d) {
  // Through a graph::Tensor, so each dtype's bytes are written one way.
  Tensor t = full(Shape{}, v, d);
  std::string name = fresh("c_scalar");
  add_initializer(name, t);
  return name;
}

std::string Exporter::cast(const std::string& x, DType from, DType to) {
  if (from == to) return x;
  std::string out = fresh(x + "_" + std::string(dtype_token(to)));
  attr(node("Cast", {x}, {out}), "to", int64_t{onnx_dtype(to)});
  return out;
}

void Exporter::add_initializer(const std::string& name, const Tensor& t_in) {
  const Tensor t = t_in.contiguous();
  ::onnx::TensorProto* p = g_.add_initializer();
  p->set_name(name);
  p->set_data_type(onnx_dtype(t.dtype()));
  for (int64_t s : t.sizes()) p->add_dims(s);
  // raw_data is little-endian in the element types' layout, as ours (bool: 1 byte).
  p->set_raw_data(static_cast<const char*>(t.raw_data()), static_cast<size_t>(t.numel()) * element_size(t.dtype()));
}

void Exporter::attr(::onnx::NodeProto& n, const std::string& name, int64_t v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INT);
  a->set_i(v);
}

void Exporter::attr(::onnx::NodeProto& n, const std::string& name, float v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::FLOAT);
  a->set_f(v);
}

void Exporter::attr(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v) {
  auto* a = n.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto::INTS);
  for (int64_t x : v) a->add_ints(x);
}

ir::Attributes resolve_attrs(const Exporter& ex, const ir::Node& n) {
  ir::Attributes out = n.attrs();
  for (auto& [name, value] : out) {
    auto d = ir::dynamic_attr(n, name);
    if (!d) continue;
    if (d->range) {
      std::vector<int64_t> list;
      for (size_t i = d->begin; i < d->end; ++i) {
        const Known* k = ex.known(n.input(i));
        if (!k || !std::holds_alternative<int64_t>(*k))
          ex.fail(n, "the attribute '" + name + "' depends on %" + n.input(i)->name() + ", unknown at export time");
        list.push_back(std::get<int64_t>(*k));
      }
      value = list;
      continue;
    }
    const Known* k = ex.known(n.input(d->begin));
    if (!k) ex.fail(n, "the attribute '" + name + "' comes from %" + n.input(d->begin)->name() + ", unknown at export time");
    std::visit([&](const auto& x) { value = x; }, *k);
  }
  return out;
}

}  // namespace graph::onnx::detail
