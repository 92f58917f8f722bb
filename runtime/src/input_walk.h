#pragma once
// The static-call paths ask the same question of a call's inputs (any CUDA
// tensor? any requiring grad? any with a DDP hook?): one walk, tensors inside
// list inputs included.
#include <cstddef>
#include <variant>
#include <vector>

#include "graph/static.h"

namespace graph::detail {

// True when pred holds for some tensor input, or some tensor of a list input.
template <class Pred>
bool any_input_tensor(const IValue* in, size_t n_in, Pred&& pred) {
  for (size_t i = 0; i < n_in; ++i) {
    if (const Tensor* t = std::get_if<Tensor>(&in[i]); t && pred(*t)) return true;
    if (const auto* l = std::get_if<std::vector<Tensor>>(&in[i]))
      for (const Tensor& t : *l)
        if (pred(t)) return true;
  }
  return false;
}

}  // namespace graph::detail
