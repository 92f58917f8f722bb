# The autodiff pass (ir/include/graph/ir/autodiff.h): backward graphs of every
# differentiable op, If and Loop, run by the interpreter in float64, against
# eager autograd and central finite differences.
add_executable(autodiff_test ${CMAKE_CURRENT_LIST_DIR}/autodiff_test.cpp ${CMAKE_CURRENT_LIST_DIR}/autodiff_control_test.cpp)
target_link_libraries(autodiff_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(autodiff_test PRIVATE -Wall -Wextra)
gtest_discover_tests(autodiff_test PROPERTIES LABELS "autodiff")

# Backward graphs computing only wanted gradients (ir/output_reach.h), run by
# the interpreter with RunOptions::needed_outputs.
add_executable(grad_needs_test ${CMAKE_CURRENT_LIST_DIR}/grad_needs_test.cpp)
target_link_libraries(grad_needs_test PRIVATE cxxgraph_runtime cxxgraph_codegen GTest::gtest_main)
target_compile_options(grad_needs_test PRIVATE -Wall -Wextra)
gtest_discover_tests(grad_needs_test PROPERTIES LABELS "autodiff")
