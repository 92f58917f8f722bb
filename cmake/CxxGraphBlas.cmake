# The CPU GEMM libraries the runtime links (runtime/src/blas.h), found the
# same way by the top-level build and by fuzz/.
# CPU BLAS: OpenBLAS (Debian's libopenblas-dev).
find_path(CXXGRAPH_CBLAS_INCLUDE cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-pthread /usr/include/openblas
  NO_DEFAULT_PATH)
find_library(CXXGRAPH_OPENBLAS_LIB NAMES openblas
  HINTS /usr/lib/x86_64-linux-gnu/openblas-pthread /usr/lib/x86_64-linux-gnu)
if(NOT CXXGRAPH_CBLAS_INCLUDE OR NOT CXXGRAPH_OPENBLAS_LIB)
  message(FATAL_ERROR "OpenBLAS not found: run tools/setup.sh (apt-get install libopenblas-dev)")
endif()
message(STATUS "cxxgraph: BLAS ${CXXGRAPH_OPENBLAS_LIB}")
# float GEMM: oneDNN (Debian's libdnnl-dev), see runtime/src/blas.h.
find_path(CXXGRAPH_DNNL_INCLUDE dnnl.h)
find_library(CXXGRAPH_DNNL_LIB NAMES dnnl)
if(NOT CXXGRAPH_DNNL_INCLUDE OR NOT CXXGRAPH_DNNL_LIB)
  message(FATAL_ERROR "oneDNN not found: run tools/setup.sh (apt-get install libdnnl-dev)")
endif()
message(STATUS "cxxgraph: oneDNN ${CXXGRAPH_DNNL_LIB}")
