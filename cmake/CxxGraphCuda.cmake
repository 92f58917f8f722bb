# CXXGRAPH_CUDA=AUTO|ON|OFF -> CXXGRAPH_HAS_CUDA. AUTO builds the CUDA backend
# when nvcc is found; ON requires it. No GPU is needed to build: kernels are
# compiled for the architectures below and the tests skip without a device.
set(CXXGRAPH_HAS_CUDA OFF)
if(NOT CXXGRAPH_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    # Machine code (SASS) for sm_80 (A100) and sm_90 (H100/H200, the cards
    # the device check runs on: no JIT at start, timings are of the real
    # code), plus compute_90 PTX that the driver JIT-compiles on newer GPUs
    # (Blackwell). That is two nvcc passes per .cu file (the PTX comes from
    # the sm_90 pass); set CMAKE_CUDA_ARCHITECTURES (e.g. 90 or native) to
    # build for one card only.
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES "80-real;90")
    endif()
    # One CUDA runtime per process: the shared one that CUDA::cudart links
    # (the default, Static, would add cudart_static to every executable too).
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    # CUDA_STANDARD follows the project's CXX_STANDARD (20), which CMake
    # before 3.27 does not know how to ask of nvcc.
    if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
      set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
      set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    endif()
    set(CXXGRAPH_HAS_CUDA ON)
    message(STATUS "cxxgraph: CUDA ${CMAKE_CUDA_COMPILER_VERSION}, architectures ${CMAKE_CUDA_ARCHITECTURES}")
  elseif(CXXGRAPH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "CXXGRAPH_CUDA=ON but no CUDA compiler was found (set CMAKE_CUDA_COMPILER or put nvcc on PATH)")
  else()
    message(STATUS "cxxgraph: no CUDA compiler, building without the CUDA backend")
  endif()
endif()
