# graph::save / load (runtime/src/saved_graph.cpp) and the graph-run command:
# round trips, every malformed-file error, and graph-run reproducing a saved
# RNN's outputs in a separate process against eager ops.
add_executable(saved_graph_test ${CMAKE_CURRENT_LIST_DIR}/saved_graph_test.cpp)
target_link_libraries(saved_graph_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_definitions(saved_graph_test PRIVATE
  CXXGRAPH_GRAPH_RUN="$<TARGET_FILE:graph-run>"
  CXXGRAPH_SAVED_CORPUS="${CMAKE_CURRENT_LIST_DIR}/../fuzz/corpus_saved_graph")
target_compile_options(saved_graph_test PRIVATE -Wall -Wextra)
add_dependencies(saved_graph_test graph-run)
gtest_discover_tests(saved_graph_test)
