# Mixed execution: [[graph::static]] functions inside eager autograd (one node
# on the tape, its backward the generated backward graph), against eager
# autograd and float64 finite differences; an MLP and an LSTM with static
# forwards train step by step like their eager twins.
add_executable(static_grad_test ${CMAKE_CURRENT_LIST_DIR}/static_grad/static_grad_test.cpp
                                ${CMAKE_CURRENT_LIST_DIR}/static_grad/functions.cpp)
target_link_libraries(static_grad_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(static_grad_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/static_grad/functions.cpp)
# GRAPH_EXPLAIN=1: the tests check what a grad call that runs eagerly says.
gtest_discover_tests(static_grad_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)
# GRAPH_CHECK=1: each graph call also runs the eager body and reports the
# largest difference per output (and, on the tape, per input gradient); the
# graph's result is returned.
add_test(NAME static_grad_graph_check COMMAND static_grad_test --gtest_filter=StaticGrad.PairResult*:StaticGrad.Broadcasting*)
set_tests_properties(static_grad_graph_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph check: sg::two_outputs\\(graph::Tensor, graph::Tensor\\) \\(functions.cpp:44\\): output 0 max \\|graph - eager\\| = 0; output 1 max \\|graph - eager\\| = 0\n"
  FAIL_REGULAR_EXPRESSION "FAILED|output [0-9] max \\|graph - eager\\| = [1-9]|error: graph check")

# Gradients through lists (cat/stack of braced lists and std::vectors, lists
# crossing Loops and Ifs, a bidirectional LSTM tagger), compiled and
# interpreted, against eager autograd and finite differences.
add_executable(list_grad_test ${CMAKE_CURRENT_LIST_DIR}/static_grad/list_grad_test.cpp
                              ${CMAKE_CURRENT_LIST_DIR}/static_grad/list_functions.cpp)
target_link_libraries(list_grad_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(list_grad_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/static_grad/list_functions.cpp)
gtest_discover_tests(list_grad_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)

# Every op of the op table through a static backward: one static function per
# differentiable op (and per optional operand or list form), compiled and
# interpreted, against eager autograd and finite differences. A new op
# without an entry in op_grad_test.cpp's table fails this target's build.
add_executable(op_grad_test ${CMAKE_CURRENT_LIST_DIR}/static_grad/op_grad_test.cpp
                            ${CMAKE_CURRENT_LIST_DIR}/static_grad/op_grad_functions.cpp)
target_link_libraries(op_grad_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(op_grad_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/static_grad/op_grad_functions.cpp)
gtest_discover_tests(op_grad_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)
# GRAPH_CHECK=1: the list cases again, each grad call also comparing its
# gradients with the eager body's; the GraphCheck tests inject faults into a
# generated backward and expect the report (captured, so a reported error
# anywhere else fails this test).
add_test(NAME list_grad_graph_check COMMAND list_grad_test --gtest_filter=ListGrad.*:GraphCheck.*)
set_tests_properties(list_grad_graph_check PROPERTIES ENVIRONMENT "GRAPH_CHECK=1;GRAPH_EXPLAIN=1" LABELS e2e
  PASS_REGULAR_EXPRESSION "lg::stack_loop\\(graph::Tensor const&, graph::Tensor const&\\) \\(list_functions.cpp:[0-9]+\\): gradient of input 0 max \\|graph - eager\\| = 0"
  FAIL_REGULAR_EXPRESSION "FAILED|error: graph check|one side is undefined")
