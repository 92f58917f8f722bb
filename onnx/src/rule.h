#pragma once
// Rule: one op-table node being lowered, with its resolved attributes; the
// readers and builders the op rules (lower_ops.cpp, lower_nn.cpp) share.
#include <algorithm>

#include "exporter.h"
#include "graph/ir/value_primitives.h"

namespace graph::onnx::detail {

using Attr = ::onnx::AttributeProto;

struct Rule {
  Exporter& ex;
  const ir::Node& n;
  const ir::Attributes& attrs;

  // ---- reading the node ----
  const ir::Value* in(size_t i) const { return n.input(i); }
  DType out_dtype() const { return ex.dtype(n, n.output()); }
  std::string x(size_t i) { return ex.tensor(n, in(i)); }
  std::string x_as(size_t i, DType d) { return ex.tensor_as(n, in(i), d); }
  bool has(const std::string& k) const { return attrs.count(k) != 0; }
  const ir::AttrValue& at(const std::string& k) const {
    auto it = attrs.find(k);
    if (it == attrs.end()) ex.fail(n, "the attribute '" + k + "' is missing");
    return it->second;
  }
  int64_t i(const std::string& k) const {
    const auto* v = std::get_if<int64_t>(&at(k));
    if (!v) ex.fail(n, "the attribute '" + k + "' is not an int");
    return *v;
  }
  double f(const std::string& k) const {
    if (const auto* v = std::get_if<int64_t>(&at(k))) return static_cast<double>(*v);
    const auto* d = std::get_if<double>(&at(k));
    if (!d) ex.fail(n, "the attribute '" + k + "' is not a number");
    return *d;
  }
  bool b(const std::string& k, bool dflt) const {
    if (!has(k)) return dflt;
    if (const auto* v = std::get_if<bool>(&at(k))) return *v;
    return i(k) != 0;
  }
  std::vector<int64_t> ints(const std::string& k) const {
    const ir::AttrValue& v = at(k);
    if (const auto* one = std::get_if<int64_t>(&v)) return {*one};
    const auto* list = std::get_if<std::vector<int64_t>>(&v);
    if (!list) ex.fail(n, "the attribute '" + k + "' is not an int list");
    return *list;
  }
  int64_t rank(size_t input) const {
    const ir::Value* v = in(input);
    if (v->type().dims) return static_cast<int64_t>(v->type().dims->size());
    return static_cast<int64_t>(ex.need_sizes(n, v).size());
  }
  int64_t axis(int64_t d, int64_t r) const {
    const int64_t a = d < 0 ? d + r : d;
    if (a < 0 || a >= r) ex.fail(n, "dimension " + std::to_string(d) + " out of range for rank " + std::to_string(r));
    return a;
  }
  bool defined(size_t i) const { return n.inputs().size() > i && !ex.is_undefined(in(i)); }

  // ---- building ----
  std::string hint() const { return n.output()->name(); }
  std::string emit(const std::string& op, const std::vector<std::string>& inputs) {
    return ex.emit(op, inputs, hint());
  }
  ::onnx::NodeProto& last_node(const std::string& op, const std::vector<std::string>& inputs, std::string& out) {
    out = ex.fresh(hint());
    return ex.node(op, inputs, {out});
  }
  void done(const std::string& onnx_name) { ex.bind(n.output(), onnx_name); }
  static void str_attr(::onnx::NodeProto& node, const std::string& k, const std::string& v) {
    auto* a = node.add_attribute();
    a->set_name(k);
    a->set_type(Attr::STRING);
    a->set_s(v);
  }
};

void lower_nn_op(Rule& r, const OpInfo& op);  // Library and Other ops (lower_nn.cpp)

}  // namespace graph::onnx::detail
