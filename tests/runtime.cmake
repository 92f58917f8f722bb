# The eager CPU runtime tests: tensor views and factories, elementwise ops with
# broadcasting and dtype promotion, reductions, matmul and error messages.
# Included from tests/CMakeLists.txt (or any project that has the
# cxxgraph_runtime target); paths are relative to this file.
find_package(GTest REQUIRED)
include(GoogleTest)

add_executable(runtime_test ${CMAKE_CURRENT_LIST_DIR}/runtime_test.cpp)
target_link_libraries(runtime_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(runtime_test PRIVATE -Wall -Wextra)
gtest_discover_tests(runtime_test)

# Autograd: every backward against finite differences in float64.
add_executable(autograd_test ${CMAKE_CURRENT_LIST_DIR}/autograd_test.cpp)
target_link_libraries(autograd_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(autograd_test PRIVATE -Wall -Wextra)
gtest_discover_tests(autograd_test)

# The op harness: forward values, dtypes and gradients against PyTorch
# fixtures (tests/fixtures/make_op_fixtures.py regenerates them).
add_executable(op_fixture_test ${CMAKE_CURRENT_LIST_DIR}/op_fixture_test.cpp ${CMAKE_CURRENT_LIST_DIR}/model_ops_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_select_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_index_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_reduce_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_parts_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_nn_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_sort_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_kernel_paths_test.cpp
                               ${CMAKE_CURRENT_LIST_DIR}/model_ops_interpolate_test.cpp)
target_link_libraries(op_fixture_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_definitions(op_fixture_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
gtest_discover_tests(op_fixture_test)

add_executable(memory_test ${CMAKE_CURRENT_LIST_DIR}/memory_test.cpp)
target_link_libraries(memory_test PRIVATE cxxgraph_runtime GTest::gtest_main)
gtest_discover_tests(memory_test)

# Neural-network ops (nn_ops.h): forward values against hand-computed cases
# and naive reference loops, gradchecks in float64, error messages.
add_executable(nn_ops_test ${CMAKE_CURRENT_LIST_DIR}/nn_ops_test.cpp)
target_link_libraries(nn_ops_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(nn_ops_test PRIVATE -Wall -Wextra)
gtest_discover_tests(nn_ops_test)

# graph::nn modules, graph::optim, parameter files, and the trainings of
# examples/train against PyTorch's loss curves in tests/reference.
add_executable(nn_test ${CMAKE_CURRENT_LIST_DIR}/nn_test.cpp)
target_link_libraries(nn_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_include_directories(nn_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/../examples/train)
target_compile_definitions(nn_test PRIVATE CXXGRAPH_REFERENCE_DIR="${CMAKE_CURRENT_LIST_DIR}/reference")
target_compile_options(nn_test PRIVATE -Wall -Wextra)
gtest_discover_tests(nn_test)

add_executable(dtype_test ${CMAKE_CURRENT_LIST_DIR}/dtype_test.cpp)
target_link_libraries(dtype_test PRIVATE cxxgraph_runtime GTest::gtest_main)
gtest_discover_tests(dtype_test)

# graph/fast_math.h: exp and tanh against std:: (ulp sweeps, special values).
add_executable(fast_math_test ${CMAKE_CURRENT_LIST_DIR}/fast_math_test.cpp)
target_link_libraries(fast_math_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(fast_math_test PRIVATE -Wall -Wextra)
gtest_discover_tests(fast_math_test)

# The backward kernels (graph/detail/backward_kernels.h) called directly:
# gradients against float64 finite differences, masks, errors.
add_executable(backward_kernels_test ${CMAKE_CURRENT_LIST_DIR}/backward_kernels_test.cpp)
target_link_libraries(backward_kernels_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(backward_kernels_test PRIVATE -Wall -Wextra)
gtest_discover_tests(backward_kernels_test)

# conv2d's float32 path through oneDNN's convolution primitives: forward and
# backward against float64, the weight-reorder cache, the fused relu.
add_executable(conv_transpose_test ${CMAKE_CURRENT_LIST_DIR}/conv_transpose_test.cpp)
target_link_libraries(conv_transpose_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(conv_transpose_test PRIVATE -Wall -Wextra)
gtest_discover_tests(conv_transpose_test)

add_executable(options_test ${CMAKE_CURRENT_LIST_DIR}/options_test.cpp)
target_link_libraries(options_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(options_test PRIVATE -Wall -Wextra)
gtest_discover_tests(options_test)

add_executable(conv_dnnl_test ${CMAKE_CURRENT_LIST_DIR}/conv_dnnl_test.cpp)
target_link_libraries(conv_dnnl_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(conv_dnnl_test PRIVATE -Wall -Wextra)
gtest_discover_tests(conv_dnnl_test)

# graph::AutocastGuard: bf16 matmul, linear and conv2d against PyTorch's
# autocast (tests/fixtures/autocast_bf16.txt) and float64 on rounded operands.
add_executable(autocast_test ${CMAKE_CURRENT_LIST_DIR}/autocast_test.cpp)
target_link_libraries(autocast_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_definitions(autocast_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
target_compile_options(autocast_test PRIVATE -Wall -Wextra)
gtest_discover_tests(autocast_test)

# batch_norm and the BatchNorm modules (issue 19): values, running stats,
# gradients against finite differences, errors.
add_executable(batch_norm_test ${CMAKE_CURRENT_LIST_DIR}/batch_norm_test.cpp)
target_link_libraries(batch_norm_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(batch_norm_test PRIVATE -Wall -Wextra)
gtest_discover_tests(batch_norm_test)

# The driver of generated fused loops (graph/detail/fused_loop.h) with
# hand-written kernels, against the eager ops.
add_executable(fused_loop_test ${CMAKE_CURRENT_LIST_DIR}/fused_loop_test.cpp)
target_link_libraries(fused_loop_test PRIVATE cxxgraph_runtime GTest::gtest_main)
target_compile_options(fused_loop_test PRIVATE -Wall -Wextra)
gtest_discover_tests(fused_loop_test)
