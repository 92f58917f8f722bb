// Kernels of the gradient ops (GRAPH_BACKWARD_OP entries of ops.def) for the
// interpreter.
#include "graph/interpreter.h"

namespace graph::detail {

const Kernel* find_backward_kernel(std::string_view) { return nullptr; }

}  // namespace graph::detail
