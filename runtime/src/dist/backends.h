#pragma once
// The backends graph::dist::ProcessGroup can be made with (dist.h).
#include <memory>

#include "graph/dist.h"

namespace graph::dist {

// MPI_COMM_WORLD (a duplicate), initializing MPI when no one has.
std::unique_ptr<Backend> make_mpi_backend();
#if CXXGRAPH_HAS_NCCL
// NCCL over the MPI world (MPI carries the unique id); CUDA tensors.
std::unique_ptr<Backend> make_nccl_backend();
#endif

}  // namespace graph::dist
