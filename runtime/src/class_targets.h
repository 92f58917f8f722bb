// The range check of class-index targets (cross_entropy and its backward),
// shared by the forward and the backward kernel.
#pragma once

#include <cstdint>
#include <string>

#include "graph/tensor.h"

namespace graph::detail {

struct ClassTargets {
  int64_t count = 0;         // targets that are not `ignore`
  bool any_ignored = false;
};

// Checks that every element of the int64 `targets` is in [0, C) or equals
// `ignore`; throws "<op>: target T is out of range for C classes (<shapes>)".
// A device tensor is copied to the host for it, which waits for the device;
// the result is kept per storage, offset, shape and version (Tensor::version),
// so a training loop that passes the same labels every step waits once, and
// the backward reuses the forward's check.
ClassTargets check_class_targets(const char* op, const Tensor& targets, int64_t C, int64_t ignore,
                                 const std::string& shapes);

}  // namespace graph::detail
