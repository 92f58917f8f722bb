# The CUDA backend (only in builds with CXXGRAPH_HAS_CUDA). cuda_host_test
# checks host logic and runs everywhere; cuda_ops_test compares every op on
# the device with the CPU and skips itself without a GPU.
add_executable(cuda_host_test ${CMAKE_CURRENT_LIST_DIR}/cuda_host_test.cpp)
target_link_libraries(cuda_host_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(cuda_host_test PRIVATE -Wall -Wextra)
gtest_discover_tests(cuda_host_test PROPERTIES LABELS cuda)

add_executable(cuda_ops_test ${CMAKE_CURRENT_LIST_DIR}/cuda_ops_test.cpp ${CMAKE_CURRENT_LIST_DIR}/cuda_blas_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/cuda_index_ops_test.cpp)
target_link_libraries(cuda_ops_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(cuda_ops_test PRIVATE -Wall -Wextra)
gtest_discover_tests(cuda_ops_test PROPERTIES LABELS cuda)

# The device matmul's operand layouts and cuBLAS calls (host logic, no GPU).
add_executable(cuda_gemm_host_test ${CMAKE_CURRENT_LIST_DIR}/cuda_gemm_host_test.cpp)
target_link_libraries(cuda_gemm_host_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(cuda_gemm_host_test PRIVATE -Wall -Wextra)
gtest_discover_tests(cuda_gemm_host_test PROPERTIES LABELS cuda)

# Generated fusion-group kernels on the device: codegen cases turned into a
# .graph.cpp and a .graph.cu by graph-codegen (as the plugin's generator
# does for annotated sources), compiled by nvcc into cuda_ops_test, whose
# GeneratedKernels tests call the graphs with device inputs.
set(_cxxgraph_cuda_cases chain8 scalar_mix loop matmul_epilogue reduce_fused reduce_nest if_tensor)
set(_cxxgraph_cuda_dir ${CMAKE_CURRENT_BINARY_DIR}/cuda_cases)
foreach(_case IN LISTS _cxxgraph_cuda_cases)
  set(_in ${CMAKE_CURRENT_LIST_DIR}/codegen_cases/${_case}.graph)
  add_custom_command(
    OUTPUT ${_cxxgraph_cuda_dir}/${_case}.graph.cpp ${_cxxgraph_cuda_dir}/${_case}.graph.cu
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_cxxgraph_cuda_dir}
    COMMAND graph-codegen ${_in} ${_cxxgraph_cuda_dir}/${_case}.graph.cpp --mangled cg_${_case} --hash test-hash
            --cuda ${_cxxgraph_cuda_dir}/${_case}.graph.cu
    DEPENDS graph-codegen ${_in}
    COMMENT "graph-codegen ${_case}.graph (CPU and CUDA)"
    VERBATIM)
  target_sources(cuda_ops_test PRIVATE ${_cxxgraph_cuda_dir}/${_case}.graph.cpp ${_cxxgraph_cuda_dir}/${_case}.graph.cu)
endforeach()
target_compile_options(cuda_ops_test PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)

# The same If and Loop cases as CPU sources in cuda_host_test, whose
# DeviceControl tests run their device path (conditional nodes) over a fake
# backend on host tensors.
foreach(_case IN ITEMS if_tensor loop)
  set(_in ${CMAKE_CURRENT_LIST_DIR}/codegen_cases/${_case}.graph)
  set(_out ${_cxxgraph_cuda_dir}/host_${_case}.graph.cpp)
  add_custom_command(
    OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${_cxxgraph_cuda_dir}
    COMMAND graph-codegen ${_in} ${_out} --mangled hc_${_case} --hash test-hash
    DEPENDS graph-codegen ${_in}
    COMMENT "graph-codegen ${_case}.graph (CPU, for cuda_host_test)"
    VERBATIM)
  target_sources(cuda_host_test PRIVATE ${_out})
endforeach()

# The one-call GPU check's bundle (tools/device_check.sh, docs/gpu-check.md):
# packs what this build made (no building: CI built it all), checks that the
# bundle is self-contained and within the device tool's carry limit, then
# dry-runs it here, where the device tests skip with "no GPU". Packing is
# mostly xz over ~100 MB of binaries and libraries (under a minute on two
# cores); the dry run takes seconds more.
if(CXXGRAPH_BUILD_PLUGIN AND CXXGRAPH_BUILD_EXAMPLES AND CXXGRAPH_BUILD_BENCH AND NOT CXXGRAPH_SANITIZE)
  set(_bundle ${CMAKE_CURRENT_BINARY_DIR}/device_bundle/cxxgraph-device.tar.xz)
  add_test(NAME device_bundle
    COMMAND bash -c "set -e; '${PROJECT_SOURCE_DIR}/tools/device_check.sh' pack --no-build --build-dir '${CMAKE_BINARY_DIR}' --out '${_bundle}'
                     '${PROJECT_SOURCE_DIR}/tools/device_check.sh' verify '${_bundle}'
                     OUT='${CMAKE_CURRENT_BINARY_DIR}/device_bundle/out' '${PROJECT_SOURCE_DIR}/tools/device_check.sh' run --quick '${_bundle}'")
  # Nothing may fail; without a GPU the summary must say that it is a dry run.
  set_tests_properties(device_bundle PROPERTIES LABELS "cuda;device_bundle" TIMEOUT 600
    PASS_REGULAR_EXPRESSION "device_check [^\n]*: (GPU|NO GPU \\(dry run\\))"
    FAIL_REGULAR_EXPRESSION "FAILING|TIMEOUT|out of time|NOT FOUND")
endif()
