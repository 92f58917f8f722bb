# Differential testing with random programs (tools/progen, docs/fuzzing.md):
# the short run, a fixed seed and one batch, compiled vs interpreted vs eager
# on every CPU instruction-set variant, forward and backward (label progen).
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../tools/progen ${CMAKE_BINARY_DIR}/tools/progen)
add_test(NAME progen_table COMMAND graph-progen --check-table)
add_test(NAME progen_short COMMAND progen_short)
set_tests_properties(progen_table progen_short PROPERTIES LABELS progen)
