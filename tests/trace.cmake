# graph::trace (runtime/include/graph/trace.h): recorded IR, params, frozen
# branches and loop exits, errors; traces run on the interpreter.
add_executable(trace_test ${CMAKE_CURRENT_LIST_DIR}/trace_test.cpp)
target_link_libraries(trace_test PRIVATE cxxgraph_runtime GTest::gtest_main)
# The warnings name the traced source's lines, which trace.cpp reads from this
# executable's DWARF line table (libdw): its own source is compiled with debug
# info whatever the build type, so Release builds test the same thing.
target_compile_options(trace_test PRIVATE -Wall -Wextra -g)
gtest_discover_tests(trace_test PROPERTIES LABELS "trace")
# With the plugin and the examples, the trace also meets the graph the plugin
# lowered from examples/rnn/rnn.cpp (built by example_rnn).
if(CXXGRAPH_BUILD_PLUGIN AND CXXGRAPH_BUILD_EXAMPLES)
  add_dependencies(trace_test example_rnn)
  target_compile_definitions(trace_test PRIVATE
    CXXGRAPH_RNN_GRAPH_FILE="${CMAKE_BINARY_DIR}/examples/cxxgraph/example_rnn/rnn_rnn/rnn_step.graph")
endif()
