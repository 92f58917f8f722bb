# Reliability tests: annotated functions (tests/reliability/*_functions.cpp)
# built with cxxgraph_static_graphs, as e2e.cmake does.
#  - concurrency_test (label concurrency): calls from many threads; the
#    ThreadSanitizer build of tools/dev.sh builds and runs only this;
#  - reliability_test (label reliability): errors inside graphs name the op,
#    the shapes and the source line; NaN and infinities as in eager mode;
#    (fused against eager on the e2e functions, within the tolerance of docs/testing.md:
#    tolerance_test.cpp, built into e2e_test, which compiles those functions).
set(_rel ${CMAKE_CURRENT_LIST_DIR}/reliability)

add_executable(concurrency_test ${_rel}/concurrency_test.cpp ${_rel}/concurrency_functions.cpp)
target_link_libraries(concurrency_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(concurrency_test SOURCES ${_rel}/concurrency_functions.cpp)
gtest_discover_tests(concurrency_test PROPERTIES LABELS concurrency)

add_executable(reliability_test
  ${_rel}/errors_test.cpp ${_rel}/numbers_test.cpp ${_rel}/error_functions.cpp ${_rel}/number_functions.cpp)
target_link_libraries(reliability_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(reliability_test SOURCES ${_rel}/error_functions.cpp ${_rel}/number_functions.cpp)
target_compile_definitions(reliability_test PRIVATE CXXGRAPH_ERROR_FUNCTIONS="${_rel}/error_functions.cpp")
gtest_discover_tests(reliability_test PROPERTIES LABELS reliability)
