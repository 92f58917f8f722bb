# CXXGRAPH_MPI=AUTO|ON|OFF -> CXXGRAPH_HAS_MPI: graph::dist (runtime/src/dist,
# the cxxgraph_dist library) over Open MPI (Debian: libopenmpi-dev,
# openmpi-bin). AUTO builds it when find_package(MPI) succeeds; ON requires it.
# With the CUDA backend, the NCCL backend is compiled in too when nccl.h and
# libnccl are found (CXXGRAPH_HAS_NCCL).
set(CXXGRAPH_HAS_MPI OFF)
set(CXXGRAPH_HAS_NCCL OFF)
if(NOT CXXGRAPH_MPI STREQUAL "OFF")
  # The C API through the CXX component (the project enables no C), without
  # the deprecated C++ bindings.
  set(MPI_CXX_SKIP_MPICXX ON)
  find_package(MPI COMPONENTS CXX QUIET)
  if(MPI_CXX_FOUND)
    set(CXXGRAPH_HAS_MPI ON)
    find_program(CXXGRAPH_MPIEXEC NAMES mpirun mpiexec HINTS ${MPIEXEC_EXECUTABLE})
    message(STATUS "cxxgraph: MPI ${MPI_CXX_VERSION} (graph::dist), launcher ${CXXGRAPH_MPIEXEC}")
  elseif(CXXGRAPH_MPI STREQUAL "ON")
    message(FATAL_ERROR "CXXGRAPH_MPI=ON but no MPI was found (Debian: apt-get install libopenmpi-dev openmpi-bin)")
  else()
    message(STATUS "cxxgraph: no MPI, building without graph::dist")
  endif()
endif()
if(CXXGRAPH_HAS_MPI AND CXXGRAPH_HAS_CUDA)
  find_package(CUDAToolkit QUIET)
  find_path(CXXGRAPH_NCCL_INCLUDE nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(CXXGRAPH_NCCL_LIB nccl HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib /usr/local/cuda/lib64)
  if(CXXGRAPH_NCCL_INCLUDE AND CXXGRAPH_NCCL_LIB AND TARGET CUDA::cudart)
    set(CXXGRAPH_HAS_NCCL ON)
    message(STATUS "cxxgraph: NCCL ${CXXGRAPH_NCCL_LIB} (graph::dist on CUDA tensors)")
  else()
    message(STATUS "cxxgraph: no NCCL (nccl.h and libnccl), graph::dist takes CPU tensors only")
  endif()
endif()
