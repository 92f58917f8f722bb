# The optimizing back half: pass tests (infer_types, fuse_elementwise, the
# FusionGroup verifier rules) and end-to-end codegen without Clang: each
# tests/codegen_cases/*.graph runs through graph-codegen at build time and
# the generated source is compiled into codegen_test, whose registrars make
# the graphs callable through graph::detail::find_graph. Included from
# tests/CMakeLists.txt after tools/ is added (for the graph-codegen target);
# paths are relative to this file.
find_package(GTest REQUIRED)
include(GoogleTest)

set(_cxxgraph_codegen_cases chain8 if_tensor loop scalar_mix seed matmul_epilogue reduce_fused strip_mined reduce_nest
  views packed_mlp conv_relu linear_gelu mask_mul)
set(_cxxgraph_codegen_generated)
foreach(_case IN LISTS _cxxgraph_codegen_cases)
  set(_in ${CMAKE_CURRENT_LIST_DIR}/codegen_cases/${_case}.graph)
  set(_out ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/${_case}.graph.cpp)
  add_custom_command(
    OUTPUT ${_out}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases
    COMMAND graph-codegen ${_in} ${_out} --mangled cg_${_case} --hash test-hash
    DEPENDS graph-codegen ${_in}
    COMMENT "graph-codegen ${_case}.graph"
    VERBATIM)
  list(APPEND _cxxgraph_codegen_generated ${_out})
endforeach()

add_executable(codegen_test ${CMAKE_CURRENT_LIST_DIR}/codegen_test.cpp ${CMAKE_CURRENT_LIST_DIR}/codegen_cuda_test.cpp
  ${CMAKE_CURRENT_LIST_DIR}/codegen_kernels_test.cpp ${CMAKE_CURRENT_LIST_DIR}/codegen_driver_test.cpp
  ${_cxxgraph_codegen_generated})
target_compile_definitions(codegen_test PRIVATE
  CXXGRAPH_CODEGEN_CASES="${CMAKE_CURRENT_LIST_DIR}/codegen_cases")
target_link_libraries(codegen_test PRIVATE cxxgraph_runtime cxxgraph_codegen GTest::gtest_main)
# -ffp-contract=off as cxxgraph_static_graphs gives generated sources: with
# -march flags that have FMA, the strided loops would otherwise contract.
target_compile_options(codegen_test PRIVATE -Wall -Wextra -ffp-contract=off)
gtest_discover_tests(codegen_test)

# The op table against its readers (docs/adding-an-op.md): every op has an
# interpreter kernel, a codegen binding, a gradient or a "not differentiable"
# mark, and a PyTorch fixture; and the traits the passes read.
add_executable(op_table_test ${CMAKE_CURRENT_LIST_DIR}/op_table_test.cpp)
target_link_libraries(op_table_test PRIVATE cxxgraph_runtime cxxgraph_codegen GTest::gtest_main)
target_compile_definitions(op_table_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
target_compile_options(op_table_test PRIVATE -Wall -Wextra)
gtest_discover_tests(op_table_test)

# The second call of a generated graph allocates nothing (its own binary: it
# replaces malloc and operator new to count them, which the sanitizers'
# allocators do not allow: not built under CXXGRAPH_SANITIZE).
if(NOT CXXGRAPH_SANITIZE)
  add_executable(codegen_alloc_test ${CMAKE_CURRENT_LIST_DIR}/codegen_alloc_test.cpp
    ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/chain8.graph.cpp
    ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/matmul_epilogue.graph.cpp
    ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/reduce_nest.graph.cpp
    ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/views.graph.cpp
    ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/packed_mlp.graph.cpp)
  target_link_libraries(codegen_alloc_test PRIVATE cxxgraph_runtime GTest::gtest_main)
  target_compile_options(codegen_alloc_test PRIVATE -ffp-contract=off)
  gtest_discover_tests(codegen_alloc_test)
endif()

# The dense path of a generated fused loop must stay vectorized (GCC's
# remarks name the loop's line; see codegen_vectorize.cmake).
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  foreach(_case chain8 matmul_epilogue strip_mined reduce_nest mask_mul)
    add_test(NAME codegen_vectorized_${_case}
      COMMAND ${CMAKE_COMMAND} -DCOMPILER=${CMAKE_CXX_COMPILER}
        -DSOURCE=${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/${_case}.graph.cpp
        "-DINCLUDES=${PROJECT_SOURCE_DIR}/runtime/include,${PROJECT_SOURCE_DIR}/ir/include"
        -P ${CMAKE_CURRENT_LIST_DIR}/codegen_vectorize.cmake)
    set_tests_properties(codegen_vectorized_${_case} PROPERTIES LABELS codegen)
  endforeach()
endif()

# Generated code compiles warning-free at -O2 -Wall -Wextra with GCC and with
# clang 19 (a user's target may use either): every codegen case, and in the
# plugin build (e2e.cmake) plugin-generated sources. The negative case checks
# that the script does catch a warning.
find_program(CXXGRAPH_TEST_CLANGXX NAMES clang++-19 HINTS /usr/lib/llvm-19/bin)
set(_cxxgraph_warning_compilers g++)
if(CXXGRAPH_TEST_CLANGXX)
  list(APPEND _cxxgraph_warning_compilers ${CXXGRAPH_TEST_CLANGXX})
endif()
set(_cxxgraph_warning_includes
  "${PROJECT_SOURCE_DIR}/runtime/include,${PROJECT_SOURCE_DIR}/ir/include,${PROJECT_SOURCE_DIR}/cuda/include")
# cxxgraph_add_warning_tests(<name> <generated source>): one test per compiler.
function(cxxgraph_add_warning_tests name source)
  foreach(_cxx IN LISTS _cxxgraph_warning_compilers)
    get_filename_component(_id ${_cxx} NAME)
    string(REGEX REPLACE "[^a-z0-9]+" "" _id ${_id})  # g++ -> g, clang++-19 -> clang19
    add_test(NAME generated_warning_free_${name}_${_id}
      COMMAND ${CMAKE_COMMAND} -DCOMPILER=${_cxx} -DSOURCE=${source} "-DINCLUDES=${_cxxgraph_warning_includes}"
              -P ${PROJECT_SOURCE_DIR}/tests/codegen_warnings.cmake)
    set_tests_properties(generated_warning_free_${name}_${_id} PROPERTIES LABELS "codegen;warnings")
  endforeach()
endfunction()
foreach(_case IN LISTS _cxxgraph_codegen_cases)
  cxxgraph_add_warning_tests(${_case} ${CMAKE_CURRENT_BINARY_DIR}/codegen_cases/${_case}.graph.cpp)
endforeach()
add_test(NAME generated_warning_check_catches_a_warning
  COMMAND ${CMAKE_COMMAND} -DCOMPILER=g++ -DSOURCE=${CMAKE_CURRENT_LIST_DIR}/codegen_warnings_case/unused.cpp
          "-DINCLUDES=${_cxxgraph_warning_includes}" -P ${CMAKE_CURRENT_LIST_DIR}/codegen_warnings.cmake)
set_tests_properties(generated_warning_check_catches_a_warning PROPERTIES LABELS "codegen;warnings"
  PASS_REGULAR_EXPRESSION "warns on .*unused.cpp.*-Wunused-parameter")

# The call contract without Clang: ir::signature, the input checker that
# generated code and interpret mode share, the prologue's and the signature
# table's text (codegen/call_contract.h).
add_executable(call_contract_test ${CMAKE_CURRENT_LIST_DIR}/call_contract_test.cpp)
target_link_libraries(call_contract_test PRIVATE cxxgraph_runtime cxxgraph_codegen GTest::gtest_main)
target_compile_options(call_contract_test PRIVATE -Wall -Wextra)
gtest_discover_tests(call_contract_test)
