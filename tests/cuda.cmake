# The CUDA backend (only in builds with CXXGRAPH_HAS_CUDA). cuda_host_test
# checks host logic and runs everywhere; cuda_ops_test compares every op on
# the device with the CPU and skips itself without a GPU.
add_executable(cuda_host_test ${CMAKE_CURRENT_LIST_DIR}/cuda_host_test.cpp)
target_link_libraries(cuda_host_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(cuda_host_test PRIVATE -Wall -Wextra)
gtest_discover_tests(cuda_host_test PROPERTIES LABELS cuda)

add_executable(cuda_ops_test ${CMAKE_CURRENT_LIST_DIR}/cuda_ops_test.cpp)
target_link_libraries(cuda_ops_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(cuda_ops_test PRIVATE -Wall -Wextra)
gtest_discover_tests(cuda_ops_test PROPERTIES LABELS cuda)
