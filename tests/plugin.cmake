# The graph-break planner on its own: no Clang linked, no clang run.
add_executable(planner_test ${CMAKE_CURRENT_LIST_DIR}/planner_test.cpp)
target_link_libraries(planner_test PRIVATE cxxgraph_planner GTest::gtest_main)
gtest_discover_tests(planner_test PROPERTIES LABELS plugin)

# Plugin tests: clang 19 with the plugin on tests/plugin_cases/*.cpp.
add_executable(plugin_test ${CMAKE_CURRENT_LIST_DIR}/plugin_test.cpp)
target_link_libraries(plugin_test PRIVATE cxxgraph_ir GTest::gtest_main)
add_dependencies(plugin_test cxxgraph_plugin)
set(_inc "-I${PROJECT_SOURCE_DIR}/runtime/include -I${PROJECT_SOURCE_DIR}/ir/include")
target_compile_definitions(plugin_test PRIVATE
  CXXGRAPH_CLANG="${CXXGRAPH_CLANG}"
  CXXGRAPH_PLUGIN="$<TARGET_FILE:cxxgraph_plugin>"
  CXXGRAPH_INCLUDES="${_inc}"
  CXXGRAPH_CASES="${CMAKE_CURRENT_LIST_DIR}/plugin_cases"
  CXXGRAPH_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/plugin_out")
gtest_discover_tests(plugin_test PROPERTIES LABELS plugin)

# The plugin under bad input: the corpus in tests/plugin_cases/odd, plus
# generated very long and very deep functions.
add_executable(plugin_corpus_test ${CMAKE_CURRENT_LIST_DIR}/plugin_corpus_test.cpp)
target_link_libraries(plugin_corpus_test PRIVATE cxxgraph_ir GTest::gtest_main)
add_dependencies(plugin_corpus_test cxxgraph_plugin)
target_compile_definitions(plugin_corpus_test PRIVATE
  CXXGRAPH_CLANG="${CXXGRAPH_CLANG}"
  CXXGRAPH_PLUGIN="$<TARGET_FILE:cxxgraph_plugin>"
  CXXGRAPH_INCLUDES="${_inc}"
  CXXGRAPH_CORPUS="${CMAKE_CURRENT_LIST_DIR}/plugin_cases/odd"
  CXXGRAPH_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/plugin_out")
gtest_discover_tests(plugin_corpus_test PROPERTIES LABELS plugin)
