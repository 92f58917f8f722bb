// The out-of-line halves of graph/detail/generated_support.h: what a failing
// guard says. Generated sources call these only when a guard fails.
#include "graph/detail/generated_support.h"

namespace graph::detail {
namespace {

// The C++ type each Arg alternative stands for, as messages name it.
std::string_view arg_kind_name(const Arg& a) {
  switch (a.index()) {
    case 0: return "a tensor";
    case 1: return "an int";
    case 2: return "a float";
    case 3: return "a bool";
    default: return "a list of tensors";
  }
}

}  // namespace

std::string input_label(size_t index, std::string_view name) {
  return "input " + std::to_string(index) + " '" + std::string(name) + "'";
}

bool guard_fail(std::string* why, std::string reason) {
  if (why) *why = std::move(reason);
  return false;
}

bool fail_num_inputs(size_t got, size_t want, std::string* why) {
  return guard_fail(why, "expected " + std::to_string(want) + " inputs, got " + std::to_string(got));
}

bool fail_tensor(const Arg& a, size_t index, std::string_view name, DType dtype, std::string* why) {
  const std::string want = input_label(index, name) + ": expected a " + std::string(dtype_name(dtype)) + " tensor, got ";
  const Tensor* t = std::get_if<Tensor>(&a);
  if (!t) return guard_fail(why, want + std::string(arg_kind_name(a)));
  if (!t->defined()) return guard_fail(why, want + "an undefined tensor");
  return guard_fail(why, want + std::string(dtype_name(t->dtype())));
}

bool fail_any_tensor(const Arg& a, size_t index, std::string_view name, std::string* why) {
  return guard_fail(why, input_label(index, name) + ": expected a tensor, got " + std::string(arg_kind_name(a)));
}

bool fail_rank(const Arg& a, size_t index, std::string_view name, int64_t rank, std::string* why) {
  return guard_fail(why, input_label(index, name) + ": expected rank " + std::to_string(rank) + ", got shape " +
                             shape_str(std::get<Tensor>(a).sizes()));
}

bool fail_size(const Arg& a, size_t index, std::string_view name, int64_t d, int64_t size, std::string* why) {
  return guard_fail(why, input_label(index, name) + ": expected size " + std::to_string(size) + " in dim " +
                             std::to_string(d) + ", got shape " + shape_str(std::get<Tensor>(a).sizes()));
}

bool fail_scalar(const Arg& a, size_t index, std::string_view name, std::string_view want, std::string* why) {
  return guard_fail(why, input_label(index, name) + ": expected " + std::string(want) + ", got " +
                             std::string(arg_kind_name(a)));
}

bool fail_list(const Arg& a, size_t index, std::string_view name, std::string* why) {
  return guard_fail(why,
                    input_label(index, name) + ": expected a list of tensors, got " + std::string(arg_kind_name(a)));
}

}  // namespace graph::detail
