# The eager CPU runtime tests: tensor views and factories, elementwise ops with
# broadcasting and dtype promotion, reductions, matmul and error messages.
# Included from tests/CMakeLists.txt (or any project that has the
# cxxgraph_runtime target); paths are relative to this file.
find_package(GTest REQUIRED)
include(GoogleTest)

add_executable(runtime_test ${CMAKE_CURRENT_LIST_DIR}/runtime_test.cpp)
target_link_libraries(runtime_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(runtime_test PRIVATE -Wall -Wextra)
gtest_discover_tests(runtime_test)

# Autograd: every backward against finite differences in float64.
add_executable(autograd_test ${CMAKE_CURRENT_LIST_DIR}/autograd_test.cpp)
target_link_libraries(autograd_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(autograd_test PRIVATE -Wall -Wextra)
gtest_discover_tests(autograd_test)

# The op harness: forward values, dtypes and gradients against PyTorch
# fixtures (tests/fixtures/make_op_fixtures.py regenerates them).
add_executable(op_fixture_test ${CMAKE_CURRENT_LIST_DIR}/op_fixture_test.cpp)
target_link_libraries(op_fixture_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_definitions(op_fixture_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
gtest_discover_tests(op_fixture_test)

add_executable(memory_test ${CMAKE_CURRENT_LIST_DIR}/memory_test.cpp)
target_link_libraries(memory_test PRIVATE cxxgraph_runtime GTest::gtest_main)
gtest_discover_tests(memory_test)
