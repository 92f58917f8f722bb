# The model suite's graph model (issue 19): a message-passing network over an
# int64 edge list (gather, scatter_add), its forward static (mpnn.cpp, built
# with -Werror=graph-fallback), against PyTorch (make_graph_fixtures.py) and
# eager, compiled and (mpnn_interpret) interpreted.
add_executable(mpnn_test ${CMAKE_CURRENT_LIST_DIR}/model_graph/mpnn_test.cpp ${CMAKE_CURRENT_LIST_DIR}/model_graph/mpnn.cpp)
target_link_libraries(mpnn_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(mpnn_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/model_graph/mpnn.cpp
  GENERATOR_FLAGS -Werror=graph-fallback)
target_compile_definitions(mpnn_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
gtest_discover_tests(mpnn_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)
add_test(NAME mpnn_interpret COMMAND mpnn_test --gtest_filter=ModelSuite.*)
set_tests_properties(mpnn_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
