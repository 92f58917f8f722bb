# The pass pipeline's FileCheck-style cases: one CTest test per
# tests/ir_passes/*.ir file (pass.<name>), plus the checker's self-tests and
# the pipeline's own (dumps, naming the pass that broke a graph).
find_package(GTest REQUIRED)

add_executable(filecheck_test ${CMAKE_CURRENT_LIST_DIR}/filecheck_test.cpp)
target_link_libraries(filecheck_test PRIVATE cxxgraph_ir GTest::gtest)
target_compile_options(filecheck_test PRIVATE -Wall -Wextra)
target_compile_definitions(filecheck_test PRIVATE CXXGRAPH_PASS_CASES="${CMAKE_CURRENT_LIST_DIR}/ir_passes")

add_test(NAME pass.filecheck_self COMMAND filecheck_test --gtest_filter=FileCheckSelf.*:Pipeline.*)
file(GLOB CXXGRAPH_PASS_CASES CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/ir_passes/*.ir)
foreach(case ${CXXGRAPH_PASS_CASES})
  get_filename_component(stem ${case} NAME_WE)
  add_test(NAME pass.${stem} COMMAND filecheck_test --gtest_filter=PassCase.* ${case})
endforeach()

# sink_slices on the interpreter: each graph before and after the pass, same bits.
add_executable(sink_slices_test ${CMAKE_CURRENT_LIST_DIR}/sink_slices_test.cpp)
target_link_libraries(sink_slices_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(sink_slices_test PRIVATE -Wall -Wextra)
gtest_discover_tests(sink_slices_test PROPERTIES LABELS "passes")
