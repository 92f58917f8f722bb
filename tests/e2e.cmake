# End-to-end tests: annotated functions lowered by the plugin, compiled and
# run against their eager bodies; the same binary under GRAPH_MODE=eager.
# tolerance_test.cpp (reliability): the fused code against eager on random
# inputs of several sizes, within the tolerance of docs/testing.md; it lives here so that
# these functions' kernels are generated and compiled once.
# break_test.cpp: graph breaks (break_functions.cpp), split into static
# regions around the statements that run eagerly.
add_executable(e2e_test ${CMAKE_CURRENT_LIST_DIR}/e2e/e2e_test.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/static_functions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/reliability/tolerance_test.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/break_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/e2e/break_functions.cpp)
target_link_libraries(e2e_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(e2e_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/e2e/static_functions.cpp
  ${CMAKE_CURRENT_LIST_DIR}/e2e/break_functions.cpp)
target_compile_definitions(e2e_test PRIVATE CXXGRAPH_GENERATED_DIR="${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/e2e_test")
gtest_discover_tests(e2e_test TEST_FILTER "-EagerEnv.*" PROPERTIES LABELS e2e)
add_test(NAME e2e_graph_mode_eager COMMAND e2e_test --gtest_filter=EagerEnv.*)
set_tests_properties(e2e_graph_mode_eager PROPERTIES ENVIRONMENT GRAPH_MODE=eager LABELS e2e
  PASS_REGULAR_EXPRESSION "\\[  PASSED  \\] 3 tests" FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
# Every graph the plugin emitted for these functions, run by the interpreter
# instead of the generated code, against the eager bodies.
add_test(NAME e2e_graph_mode_interpret COMMAND e2e_test --gtest_filter=StaticGraph.*:GraphBreak.*)
set_tests_properties(e2e_graph_mode_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
# GRAPH_CHECK=1 on a function split by a graph break: its whole result
# (regions and eager statement) against its eager body.
add_test(NAME e2e_graph_break_check COMMAND e2e_test --gtest_filter=GraphBreak.MemberFunctionReadsThis)
set_tests_properties(e2e_graph_break_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph check: breaks::Scaler::forward\\(graph::Tensor\\) \\(break_functions.cpp:62\\): output 0 max \\|graph - eager\\| = 0\n"
  FAIL_REGULAR_EXPRESSION "FAILED|= [1-9]")
# The same for a function split around an `if` holding the eager statement.
add_test(NAME e2e_graph_break_nested_check COMMAND e2e_test --gtest_filter=GraphBreak.NestedIfIsland)
set_tests_properties(e2e_graph_break_nested_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph check: breaks::nested_if\\(graph::Tensor, bool\\) \\(break_functions.cpp:69\\): output 0 max \\|graph - eager\\| = 0\n"
  FAIL_REGULAR_EXPRESSION "FAILED|= [1-9]")
# GRAPH_EXPLAIN=1: a region whose guard fails on dtypes alone says that it runs
# its graph specialized for them, naming the function's line and the guard.
add_test(NAME e2e_graph_break_explain COMMAND e2e_test --gtest_filter=GraphBreak.Float64CallRunsTheRegionsSpecialized)
set_tests_properties(e2e_graph_break_explain PROPERTIES ENVIRONMENT GRAPH_EXPLAIN=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph: break_functions.cpp:13 runs its graph specialized at run time for the call's dtypes, on the interpreter \\(the compiled code's guard: input 0 'x': expected a float tensor, got double\\)"
  FAIL_REGULAR_EXPRESSION "FAILED|ran eagerly")
# Interpret mode refuses the same call with the same words: it checks the
# inputs against the generated source's signature table with the same checker.
add_test(NAME e2e_graph_break_explain_interpret COMMAND e2e_test --gtest_filter=GraphBreak.Float64CallRunsTheRegionsSpecialized)
set_tests_properties(e2e_graph_break_explain_interpret PROPERTIES ENVIRONMENT "GRAPH_EXPLAIN=1;GRAPH_MODE=interpret"
  LABELS "e2e;interpreter"
  PASS_REGULAR_EXPRESSION "graph: break_functions.cpp:13 runs its graph specialized at run time for the call's dtypes, on the interpreter \\(the compiled code's guard: input 0 'x': expected a float tensor, got double\\)"
  FAIL_REGULAR_EXPRESSION "FAILED|ran eagerly")

# The C++ subset: tuples, optional tensors, shapes as host ints, switch,
# do-while, integer / and % (subset_functions.cpp), compiled and interpreted.
# Not in the sanitizer builds (CI budget): the generated kernels there are
# e2e_test's and reliability_test's; these run in the normal build.
if(NOT CXXGRAPH_SANITIZE)
  # conversion_*.cpp: dtype casts, contiguous(), host conversions, arange (issue 20).
  # host_read_*.cpp: item<T>() feeding host control flow, host math, x.pow/x.clamp.
  add_executable(e2e_subset_test ${CMAKE_CURRENT_LIST_DIR}/e2e/subset_test.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/subset_functions.cpp
    ${CMAKE_CURRENT_LIST_DIR}/e2e/conversion_test.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/conversion_functions.cpp
    ${CMAKE_CURRENT_LIST_DIR}/e2e/host_read_test.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/host_read_functions.cpp)
  target_link_libraries(e2e_subset_test PRIVATE cxxgraph::runtime GTest::gtest_main)
  cxxgraph_static_graphs(e2e_subset_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/e2e/subset_functions.cpp
    ${CMAKE_CURRENT_LIST_DIR}/e2e/conversion_functions.cpp ${CMAKE_CURRENT_LIST_DIR}/e2e/host_read_functions.cpp
    GENERATOR_FLAGS -Werror=graph-fallback)
  gtest_discover_tests(e2e_subset_test PROPERTIES LABELS e2e)
  # Dtypes a graph cannot be specialized for run the eager body, which says why
  # (the specialization's own type error, at its line).
  add_test(NAME conversion_any_dtype_explain COMMAND e2e_subset_test
    --gtest_filter=AnyDtype.DtypesTheGraphCannotTakeRunTheEagerBody)
  set_tests_properties(conversion_any_dtype_explain PROPERTIES ENVIRONMENT GRAPH_EXPLAIN=1 LABELS e2e
    PASS_REGULAR_EXPRESSION "graph: conversion_functions.cpp:67 ran eagerly: a guard failed: input 0 'x': expected a float tensor, got long; specialized for the call's dtypes, the graph cannot run: infer_types: 'matmul' at [^\n]*conversion_functions.cpp:67:[0-9]+: operands have different dtypes: i64 and f32"
    FAIL_REGULAR_EXPRESSION "FAILED")
  add_test(NAME e2e_subset_interpret COMMAND e2e_subset_test)
  set_tests_properties(e2e_subset_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
    FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
endif()

# Dtype variants (DTYPES): each graph also compiled for float64 and int64
# tensor inputs; the generator's warnings for a variant that cannot be made
# are expected here. Compiled and interpreted; CPU_ONLY: no nvcc for code no
# test here runs.
if(NOT CXXGRAPH_SANITIZE)
  add_executable(dtype_variant_test ${CMAKE_CURRENT_LIST_DIR}/e2e/dtype_variant_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/e2e/dtype_variant_functions.cpp)
  target_link_libraries(dtype_variant_test PRIVATE cxxgraph::runtime GTest::gtest_main)
  cxxgraph_static_graphs(dtype_variant_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/e2e/dtype_variant_functions.cpp
    DTYPES float64 int64 CPU_ONLY)
  gtest_discover_tests(dtype_variant_test PROPERTIES LABELS e2e)
  add_test(NAME dtype_variant_interpret COMMAND dtype_variant_test)
  set_tests_properties(dtype_variant_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
    FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
  # A listed dtype runs its variant's code: nothing is specialized, nothing eager.
  add_test(NAME dtype_variant_explain COMMAND dtype_variant_test --gtest_filter=DtypeVariants.Float64CallsRunTheFloat64Code)
  set_tests_properties(dtype_variant_explain PROPERTIES ENVIRONMENT GRAPH_EXPLAIN=1 LABELS e2e
    FAIL_REGULAR_EXPRESSION "FAILED|specialized|ran eagerly: a guard")
endif()

# Modules with state in static forwards (module_state_*.cpp): is_training(),
# buffers updated in place and written back, BatchNorm and Dropout modules;
# compiled and interpreted. The gradient check reads the plugin's graphs.
if(NOT CXXGRAPH_SANITIZE)
  add_executable(e2e_module_state_test ${CMAKE_CURRENT_LIST_DIR}/e2e/module_state_test.cpp
    ${CMAKE_CURRENT_LIST_DIR}/e2e/module_state_functions.cpp)
  target_link_libraries(e2e_module_state_test PRIVATE cxxgraph::runtime GTest::gtest_main)
  target_include_directories(e2e_module_state_test PRIVATE ${CMAKE_CURRENT_LIST_DIR})
  cxxgraph_static_graphs(e2e_module_state_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/e2e/module_state_functions.cpp
    GENERATOR_FLAGS -Werror=graph-fallback)
  target_compile_definitions(e2e_module_state_test PRIVATE
    CXXGRAPH_MODULE_STATE_GRAPHS="${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/e2e_module_state_test")
  gtest_discover_tests(e2e_module_state_test PROPERTIES LABELS e2e)
  add_test(NAME e2e_module_state_interpret COMMAND e2e_module_state_test)
  set_tests_properties(e2e_module_state_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
    FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
endif()

# Plugin-generated sources compile warning-free too (codegen.cmake): the graph
# breaks' regions include graphs without inputs, and the Transformer example's
# GELU loop calls erf, which no compiler vectorizes.
cxxgraph_add_warning_tests(e2e_break_functions ${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/e2e_test/e2e_break_functions.graph.cpp)
if(CXXGRAPH_BUILD_EXAMPLES)
  cxxgraph_add_warning_tests(example_transformer
    ${PROJECT_BINARY_DIR}/examples/cxxgraph/example_transformer/transformer_encoder.graph.cpp)
  cxxgraph_add_warning_tests(example_transformer_loops
    ${PROJECT_BINARY_DIR}/examples/cxxgraph/example_transformer/transformer_encoder.loops.cpp)
endif()

# Static train steps (train_step_functions.cpp): loss.backward() lowered into
# the graph, N steps against eager mode; the same under the interpreter.
add_executable(train_step_test ${CMAKE_CURRENT_LIST_DIR}/e2e/train_step_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/e2e/train_step_functions.cpp)
target_link_libraries(train_step_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(train_step_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/e2e/train_step_functions.cpp)
gtest_discover_tests(train_step_test PROPERTIES LABELS e2e)
add_test(NAME e2e_train_step_interpret COMMAND train_step_test)
set_tests_properties(e2e_train_step_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
# GRAPH_CHECK=1 does not run a train step's eager body too (it would step
# twice): it says so, and the results still equal eager mode's.
add_test(NAME train_step_graph_check COMMAND train_step_test --gtest_filter=TrainStep.SgdMomentum*)
set_tests_properties(train_step_graph_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "not compared: a static train step writes .grad"
  FAIL_REGULAR_EXPRESSION "FAILED")
# The same for the function split around zero_grad() and step() (a region is the train step).
add_test(NAME train_step_split_graph_check COMMAND train_step_test --gtest_filter=TrainStep.WholeStep*)
set_tests_properties(train_step_split_graph_check PROPERTIES ENVIRONMENT GRAPH_CHECK=1 LABELS e2e
  PASS_REGULAR_EXPRESSION "graph check: ts::MLPImpl::train_step\\(graph::Tensor, graph::Tensor\\) \\(train_step_functions.cpp:[0-9]+\\): not compared"
  FAIL_REGULAR_EXPRESSION "FAILED")
cxxgraph_add_warning_tests(e2e_train_step_functions
  ${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/train_step_test/e2e_train_step_functions.graph.cpp)
cxxgraph_add_warning_tests(e2e_train_step_loops
  ${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/train_step_test/e2e_train_step_functions.loops.cpp)
