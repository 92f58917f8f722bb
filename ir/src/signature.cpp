// ir::signature: a graph's call contract, read off its inputs' types once
// (signature.h says who reads it).
#include "graph/ir/signature.h"

#include "graph/ir/value_primitives.h"

namespace graph::ir {

const char* input_kind_name(InputKind k) {
  switch (k) {
    case InputKind::Tensor:
    case InputKind::AnyTensor: return "a tensor";
    case InputKind::TensorList: return "a list of tensors";
    case InputKind::Int: return "an int";
    case InputKind::Float: return "a float";
    case InputKind::Bool: return "a bool";
  }
  return "?";
}

namespace {

InputSpec input_spec(const Graph& g, const Value* v) {
  const Type& t = v->type();
  InputSpec s;
  s.name = v->name();
  switch (t.kind) {
    case Type::Kind::Int: s.kind = InputKind::Int; return s;
    case Type::Kind::Float: s.kind = InputKind::Float; return s;
    case Type::Kind::Bool: s.kind = InputKind::Bool; return s;
    case Type::Kind::List: s.kind = InputKind::TensorList; return s;
    case Type::Kind::Tensor: break;
  }
  // Nothing depends on an unread input's dtype or shape, which the front end
  // could only guess: any tensor will do.
  if (unread_input(g, v)) {
    s.kind = InputKind::AnyTensor;
    return s;
  }
  s.dtype = t.dtype;
  s.may_be_undefined = may_be_undefined(v);
  if (t.dims) {
    s.rank = static_cast<int64_t>(t.dims->size());
    for (const Dim& d : *t.dims) s.sizes.push_back(d.is_static() ? d.size : -1);
  }
  return s;
}

}  // namespace

Signature signature(const Graph& g) {
  Signature sig;
  for (const auto& v : g.inputs()) sig.inputs.push_back(input_spec(g, v.get()));
  sig.num_outputs = g.outputs().size();
  return sig;
}

}  // namespace graph::ir
