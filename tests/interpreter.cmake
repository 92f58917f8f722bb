# The graph interpreter (runtime/include/graph/interpreter.h): every op
# against its eager function, control flow, lists, errors, the scheduler.
add_executable(interpreter_test ${CMAKE_CURRENT_LIST_DIR}/interpreter_test.cpp)
target_link_libraries(interpreter_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(interpreter_test PRIVATE -Wall -Wextra)
gtest_discover_tests(interpreter_test PROPERTIES LABELS "interpreter;concurrency")

# The data-parallel gradient sync of a static train step, without MPI
# (graph/detail/grad_sync.h; tests/dist/ddp_test.cpp runs it over MPI).
add_executable(grad_sync_test ${CMAKE_CURRENT_LIST_DIR}/grad_sync_test.cpp)
target_link_libraries(grad_sync_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(grad_sync_test PRIVATE -Wall -Wextra)
gtest_discover_tests(grad_sync_test PROPERTIES LABELS "interpreter")
