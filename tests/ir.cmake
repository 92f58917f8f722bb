# The IR tests: text round trips, the C++ builder API, parser errors and the
# verifier. Included from tests/CMakeLists.txt (or any project that has the
# cxxgraph_ir target); paths are relative to this file.
find_package(GTest REQUIRED)
include(GoogleTest)

add_executable(ir_test ${CMAKE_CURRENT_LIST_DIR}/ir_test.cpp ${CMAKE_CURRENT_LIST_DIR}/ir_verify_test.cpp)
target_link_libraries(ir_test PRIVATE cxxgraph_ir GTest::gtest_main)
target_compile_options(ir_test PRIVATE -Wall -Wextra)
gtest_discover_tests(ir_test)

# The compile driver on static train steps (loss.backward()): split, gradient, stitch.
add_executable(train_step_ir_test ${CMAKE_CURRENT_LIST_DIR}/train_step_ir_test.cpp)
target_link_libraries(train_step_ir_test PRIVATE cxxgraph_ir GTest::gtest_main)
target_compile_options(train_step_ir_test PRIVATE -Wall -Wextra)
gtest_discover_tests(train_step_ir_test)
