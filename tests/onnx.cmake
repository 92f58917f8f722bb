# ONNX export (onnx/, docs/onnx.md). onnx_test: the models' structure and
# every refusal, in C++. onnx_runtime: the examples' models and op coverage
# graphs checked by onnx.checker and run in ONNX Runtime against eager
# outputs (tests/onnx/check_onnx.py), both from PyPI in a venv made once per
# build directory; skipped (exit 77) when PyPI cannot be reached.
add_executable(onnx_test ${CMAKE_CURRENT_LIST_DIR}/onnx/onnx_test.cpp)
target_link_libraries(onnx_test PRIVATE cxxgraph_onnx onnx_proto GTest::gtest_main)
target_compile_definitions(onnx_test PRIVATE CXXGRAPH_GRAPH_EXPORT="$<TARGET_FILE:graph-export>")
target_compile_options(onnx_test PRIVATE -Wall -Wextra)
add_dependencies(onnx_test graph-export)
gtest_discover_tests(onnx_test PROPERTIES LABELS "onnx")

# The examples' modules compiled plainly (no plugin): traced, their forwards
# are the same ops the plugin lowers.
set(_ex ${CMAKE_CURRENT_LIST_DIR}/../examples)
add_executable(onnx_cases ${CMAKE_CURRENT_LIST_DIR}/onnx/onnx_cases.cpp
  ${_ex}/mlp_train/mlp.cpp ${_ex}/lenet/lenet.cpp ${_ex}/transformer/encoder.cpp)
target_link_libraries(onnx_cases PRIVATE cxxgraph_onnx)
target_compile_options(onnx_cases PRIVATE -Wall -Wextra -Wno-attributes)  # [[graph::static]] without the plugin
add_test(NAME onnx_runtime
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/onnx/run_onnx_check.sh ${CMAKE_BINARY_DIR}/onnx-venv
          $<TARGET_FILE:onnx_cases> ${CMAKE_CURRENT_BINARY_DIR}/onnx_check ${CMAKE_CURRENT_LIST_DIR}/onnx/check_onnx.py)
# The first run makes the venv (pip, about a minute); later runs take seconds.
set_tests_properties(onnx_runtime PROPERTIES LABELS "onnx" SKIP_RETURN_CODE 77 TIMEOUT 600)
