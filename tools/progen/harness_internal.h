#pragma once
// What the CPU harness (harness.cpp) and the device one (harness_device.cpp)
// share: inputs, one call of a case, and the comparison of two results.
#include <string>
#include <vector>

#include "harness.h"

namespace progen::detail {

const char* mode_name(graph::Mode m);
// Deterministic inputs for (case, variant): floats in [-2, 2], indices in
// [0, int_hi), on the CPU.
std::vector<graph::Tensor> make_inputs(const Case& c, size_t variant, uint64_t seed);

struct Result {
  std::vector<graph::Tensor> out;
  std::vector<graph::Tensor> grads;  // one per input (undefined: none)
  std::string error;                 // what it threw
  bool ran_graph = false;
};

// One call of the case in `mode` on `inputs` (on whichever device they are);
// with `grad`, float inputs require grad and the objective
// sum_k sum(out_k * w_k) is differentiated.
Result call(const Case& c, graph::Mode mode, const std::vector<graph::Tensor>& inputs, int n, double s, bool grad);

// The first element of `got` farther than tol * (1 + |want|) from `want`
// ("" when none), on the CPU whatever their devices. Undefined gradients
// count as zeros.
std::string compare(graph::Tensor got, graph::Tensor want, double tol);

// Whether `got` is eager's error `want` as a graph's kernel reports it.
bool located(const std::string& got, const std::string& want);

// Every case compiled into the binary besides the generated table's.
std::vector<const Case*> all_cases(const Case* cases, size_t num_cases);

}  // namespace progen::detail
