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
# largest difference per output; the graph's result is returned.
add_test(NAME static_grad_graph_check COMMAND static_grad_test --gtest_filter=StaticGrad.PairResult*:StaticGrad.Broadcasting*)
set_tests_properties(static_grad_graph_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph check: sg::two_outputs\\(graph::Tensor, graph::Tensor\\) \\(functions.cpp:44\\): output 0 max \\|graph - eager\\| = 0; output 1 max \\|graph - eager\\| = 0\n"
  FAIL_REGULAR_EXPRESSION "FAILED|= [1-9]")
