# Recurrent modules (nn::GRUCell, nn::GRU, nn::LSTM) against PyTorch fixtures
# (tests/fixtures/make_rnn_fixtures.py), float64 finite differences, bad
# input, and static forwards (rnn_functions.cpp, built with
# -Werror=graph-fallback) against eager, compiled and interpreted; the model
# suite's 2-layer GRU language model.
add_executable(rnn_test ${CMAKE_CURRENT_LIST_DIR}/rnn/rnn_test.cpp ${CMAKE_CURRENT_LIST_DIR}/rnn/rnn_static_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/rnn/rnn_functions.cpp)
target_link_libraries(rnn_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(rnn_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/rnn/rnn_functions.cpp
  GENERATOR_FLAGS -Werror=graph-fallback)
target_compile_definitions(rnn_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
gtest_discover_tests(rnn_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)
add_test(NAME rnn_interpret COMMAND rnn_test --gtest_filter=RNNStatic.*:ModelSuite.*)
set_tests_properties(rnn_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
