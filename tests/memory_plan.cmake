# Memory planning (ir/include/graph/ir/memory_plan.h): hand-checked plans, a
# brute-force overlap checker, and the MLP / Transformer block figures. The
# test graphs are IR text under tests/ir_graphs/.
find_package(GTest REQUIRED)
include(GoogleTest)

add_executable(memory_plan_test ${CMAKE_CURRENT_LIST_DIR}/memory_plan_test.cpp)
target_link_libraries(memory_plan_test PRIVATE cxxgraph_ir GTest::gtest_main)
target_compile_definitions(memory_plan_test PRIVATE
  CXXGRAPH_IR_GRAPHS_DIR="${CMAKE_CURRENT_LIST_DIR}/ir_graphs"
  CXXGRAPH_CODEGEN_CASES_DIR="${CMAKE_CURRENT_LIST_DIR}/codegen_cases")
target_compile_options(memory_plan_test PRIVATE -Wall -Wextra)
gtest_discover_tests(memory_plan_test)
