# The model suite (issue 19): small GPT, ResNet, temporal CNN, VAE, DCGAN and seq2seq models
# whose forwards are [[graph::static]] (tests/models/*.cpp, lowered with
# -Werror=graph-fallback), against PyTorch (tests/fixtures/
# make_model_fixtures.py): compiled, interpreted and eager.
set(CXXGRAPH_MODEL_SOURCES ${CMAKE_CURRENT_LIST_DIR}/models/gpt.cpp ${CMAKE_CURRENT_LIST_DIR}/models/resnet.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/tcn.cpp ${CMAKE_CURRENT_LIST_DIR}/models/vae.cpp
  ${CMAKE_CURRENT_LIST_DIR}/models/dcgan.cpp ${CMAKE_CURRENT_LIST_DIR}/models/seq2seq.cpp)
add_executable(models_test ${CMAKE_CURRENT_LIST_DIR}/models/models_test.cpp ${CXXGRAPH_MODEL_SOURCES})
target_link_libraries(models_test PRIVATE cxxgraph::runtime GTest::gtest_main)
cxxgraph_static_graphs(models_test SOURCES ${CXXGRAPH_MODEL_SOURCES} GENERATOR_FLAGS -Werror=graph-fallback)
target_compile_definitions(models_test PRIVATE CXXGRAPH_FIXTURES="${CMAKE_CURRENT_LIST_DIR}/fixtures")
gtest_discover_tests(models_test PROPERTIES LABELS e2e ENVIRONMENT GRAPH_EXPLAIN=1)
add_test(NAME models_interpret COMMAND models_test --gtest_filter=ModelSuite.*)
set_tests_properties(models_interpret PROPERTIES ENVIRONMENT GRAPH_MODE=interpret LABELS "e2e;interpreter"
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
add_test(NAME models_eager COMMAND models_test --gtest_filter=ModelSuite.*)
set_tests_properties(models_eager PROPERTIES ENVIRONMENT GRAPH_MODE=eager LABELS e2e
  FAIL_REGULAR_EXPRESSION "SKIPPED|FAILED")
