#pragma once
// The exporter's state, shared by the driver (export.cpp) and the op rules
// (lower_ops.cpp): the GraphProto being built, the ONNX name of every IR
// value, and the host values known at export time (constants, bound scalar
// inputs, static sizes), which ONNX needs as attributes. A host value known
// only at run time (a loop counter) is a 0-d ONNX tensor: int64, double or
// bool. Nodes go to the current graph (the model's, or an If branch or Loop
// body being built); initializers always go to the model's graph, which
// subgraphs can read.
#include <onnx/onnx_pb.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "graph/error.h"
#include "graph/ir/ir.h"
#include "graph/op_table.h"
#include "graph/tensor.h"

namespace graph::onnx::detail {

// A host value known at export time: a scalar or an int list.
using Known = std::variant<int64_t, double, bool, std::vector<int64_t>>;

int32_t onnx_dtype(DType d);

class Exporter {
 public:
  Exporter(::onnx::GraphProto& g, const std::map<std::string, Tensor>& params) : g_(g), cur_(&g), params_(params) {}

  // Nodes built while a Subgraph lives go to `sub` (an If branch, a Loop body).
  class Subgraph {
   public:
    Subgraph(Exporter& ex, ::onnx::GraphProto& sub) : ex_(ex), saved_(ex.cur_) { ex.cur_ = &sub; }
    ~Subgraph() { ex_.cur_ = saved_; }
    Subgraph(const Subgraph&) = delete;
    Subgraph& operator=(const Subgraph&) = delete;

   private:
    Exporter& ex_;
    ::onnx::GraphProto* saved_;
  };

  // ---- errors ----
  [[noreturn]] void fail(const ir::Node& n, const std::string& what) const;

  // ---- values ----
  // The ONNX tensor holding `v` (a tensor value, or a known host scalar as a
  // 0-d tensor of `as`, default its own kind's dtype). Fails for undefined().
  std::string tensor(const ir::Node& user, const ir::Value* v);
  // `v` converted to `d` (a Cast when its dtype differs).
  std::string tensor_as(const ir::Node& user, const ir::Value* v, DType d);
  void bind(const ir::Value* v, std::string onnx_name) { names_[v] = std::move(onnx_name); }
  // `v` has an ONNX value (bound, or a parameter), not only a known one.
  bool has_value(const ir::Value* v) const { return names_.count(v) || lazy_params_.count(v); }
  bool is_undefined(const ir::Value* v) const { return undefined_.count(v) != 0; }
  void mark_undefined(const ir::Value* v) { undefined_.insert({v, true}); }
  // The dtype of a tensor value (a host value's: its 0-d tensor's); fails
  // naming `user` when the IR leaves it unknown.
  DType dtype(const ir::Node& user, const ir::Value* v) const;
  // The static sizes of a tensor value, or nullopt.
  static std::optional<std::vector<int64_t>> static_sizes(const ir::Value* v);
  std::vector<int64_t> need_sizes(const ir::Node& user, const ir::Value* v) const;

  // ---- host values known at export time ----
  const Known* known(const ir::Value* v) const;
  void set_known(const ir::Value* v, Known k) { known_[v] = std::move(k); }
  void bind_param(const ir::Value* v, const Tensor& t);  // an initializer, made when first used
  bool is_param(const ir::Value* v) const { return lazy_params_.count(v) != 0; }
  // `to` stands for `from` (an If's output for the taken branch's return, a
  // block parameter for its argument): its dtype and shape come from `from`
  // where its own type leaves them unknown.
  void alias(const ir::Value* to, const ir::Value* from) { aliases_[to] = from; }

  // ---- building ----
  std::string fresh(const std::string& hint);
  ::onnx::NodeProto& node(const std::string& op, const std::vector<std::string>& inputs,
                          const std::vector<std::string>& outputs);
  // One output named after `hint`; returns it.
  std::string emit(const std::string& op, const std::vector<std::string>& inputs, const std::string& hint);
  std::string const_ints(const std::vector<int64_t>& v);         // a 1-D int64 initializer
  std::string const_scalar(double v, DType d);                    // a 0-d initializer
  std::string cast(const std::string& x, DType from, DType to);  // x itself when from == to
  void add_initializer(const std::string& name, const Tensor& t);

  static void attr(::onnx::NodeProto& n, const std::string& name, int64_t v);
  static void attr(::onnx::NodeProto& n, const std::string& name, float v);
  static void attr(::onnx::NodeProto& n, const std::string& name, const std::vector<int64_t>& v);

 private:
  ::onnx::GraphProto& g_;    // the model's graph: inputs, outputs, initializers
  ::onnx::GraphProto* cur_;  // where nodes go
  const std::map<std::string, Tensor>& params_;
  std::map<const ir::Value*, std::string> names_;
  std::map<const ir::Value*, Known> known_;
  std::map<const ir::Value*, bool> undefined_;
  std::map<const ir::Value*, Tensor> lazy_params_;
  std::map<const ir::Value*, const ir::Value*> aliases_;
  std::set<std::string> taken_;               // ONNX names in use
  std::map<std::string, int> next_suffix_;  // per hint: the last _k tried
};

// The resolved attributes of an op-table node: its constant attributes plus
// its run-time ones ("@i", value_primitives.h) read from known values.
// Fails naming the node when a run-time attribute is not known.
ir::Attributes resolve_attrs(const Exporter& ex, const ir::Node& n);

// Emits the ONNX nodes computing op-table node `n` (its outputs bound in `ex`).
void lower_op(Exporter& ex, const ir::Node& n, const OpInfo& op, const ir::Attributes& attrs);

}  // namespace graph::onnx::detail
