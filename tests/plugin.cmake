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
