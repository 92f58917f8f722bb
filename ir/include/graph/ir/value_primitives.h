#pragma once
// Primitives on tensor metadata and host ints (not op-table entries; the
// plugin emits them for `x.size(0)`, `bias.defined()`, `a / b` on ints ...).
// C++ semantics throughout: a zero divisor, an overflow or a dimension out of
// range is an error at run time (graph::Error), never undefined behaviour.
//   defined(%t)                 bool: %t is not undefined()
//   tensor_dim(%t)              int: its rank
//   tensor_size(%t, %d)         int: its size in dim %d (negative from the end)
//   tensor_numel(%t)            int: its number of elements
//   int_div(%a, %b)             int: C++'s a / b (truncating)
//   int_mod(%a, %b)             int: C++'s a % b (the sign of a)
//   int_to_float(%a)            float: static_cast<double>(a)
//   float_to_int(%f)            int: static_cast<int64_t>(f), truncating; NaN or
//                               a value outside int64 is an error (UB in C++)
//   item(%t)                    int, float or bool (the output's type): the one
//                               element of %t, as x.item<int64_t/double/bool>();
//                               more than one element is an error. A value the
//                               host reads from the device: the graph is not
//                               captured into a CUDA Graph (ReadsHost)
//   reshape_dyn(%t, %s0, ...)   Tensor: %t.reshape({%s0, ...}) (ints; -1 infers)
//   slice_dyn{dim}(%t, %start, %end, %step)   Tensor: %t.slice(dim, ...)
// Int lists known at run time (`x.sizes()`, a local `Shape`) are 1-D int64
// tensors on the CPU, the form a run-time list attribute reads ("@i"):
//   tensor_sizes(%t)            Tensor i64[rank]: %t.sizes()
//   broadcast_sizes(%a, %b, ...)  Tensor i64[rank]: the shape the tensors
//                               broadcast to (an error where they do not)
//   make_shape(%a, %b, ...)     Tensor i64[n]: the ints {%a, %b, ...}
//   shape_get(%s, %i)           int: %s[%i] (negative from the end, checked)
//   shape_set(%s, %i, %v)       Tensor: a copy of %s with %s[%i] = %v
//   inverse_permutation(%p)     Tensor: q with q[p[i]] = i (permute's gradient;
//                               negative dims count from the end, checked)
//   full_dyn{dtype}(%s, %v)     Tensor: graph::full(%s, %v, dtype) (zeros, ones,
//                               full with sizes known at run time; CPU)
//   arange_dyn(%start, %end, %step)   Tensor: graph::arange(start, end, step), each
//                               an int, bool or float: int64, or float32 when
//                               one is a float (CPU)
// reshape_dyn and slice_dyn are reshape and slice whose sizes are known only
// at run time (e.g. from tensor_size); the verifier checks their signatures,
// infer_types keeps the input's dtype (and rank), dce may remove them.
#include <optional>
#include <string>

#include "graph/ir/ir.h"

namespace graph::ir {

// The primitives above (kind Value in the op table, less constant and undefined).
bool is_value_primitive(OpId id);

// An optional tensor input (a bias that may be undefined at run time): one
// the graph tests with `defined` and otherwise uses only as an optional
// operand (linear's and conv2d's bias, layer_norm's weight and bias,
// attention's mask) or inside an If on that test. The input guards (codegen's
// and the interpreter's) accept an undefined tensor there.
bool may_be_undefined(const Value* input);

// A graph input that no node reads and the graph does not return: a parameter
// the body ignores. Nothing depends on its dtype or shape, which the plugin
// could only guess (float32), so the input guards accept any tensor there.
bool unread_input(const Graph& g, const Value* input);

// ---- attributes known at run time ---------------------------------------------
// An op's attribute may come from the node's inputs instead of a constant
// (`layer_norm(x, this->normalized_shape, ...)`, `conv2d(..., stride, padding)`
// with members, a host `eps`): its value is then the string "@i" (input
// i: an int, float or bool for a scalar attribute, or a 1-D i64 tensor for an
// int list: a `Shape` member passed at each call) or "@i:j" (the int inputs
// i..j-1 as an int list, `{n, h}`); a string attribute starting with '@' is
// always such a reference (other strings are free-form notes). These inputs
// follow the op's own inputs:
//   layer_norm{normalized_shape="@3", eps=1e-05}(%x, %w, %b, %shape)
// The verifier checks them, infer_types leaves what they decide unknown, and
// the interpreter, codegen and autodiff read them at run time.
struct DynamicAttr {
  size_t begin = 0, end = 0;  // the inputs [begin, end)
  bool range = false;         // "@i:j": ints as a list
};
// The run-time attribute `name` of `n`, or nullopt when it is absent or a constant.
std::optional<DynamicAttr> dynamic_attr(const Node& n, const std::string& name);
bool has_dynamic_attrs(const Node& n);
// The op's own inputs: those before the first run-time attribute's.
size_t num_op_inputs(const Node& n);
// "@i" / "@i:j".
std::string dynamic_attr_ref(size_t begin, size_t end, bool range);

}  // namespace graph::ir
