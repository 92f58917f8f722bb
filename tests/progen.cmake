# Differential testing with random programs (tools/progen, docs/fuzzing.md):
# the short run, a fixed seed and one batch, compiled vs interpreted vs eager
# on every CPU instruction-set variant, forward and backward (label progen).
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../tools/progen ${CMAKE_BINARY_DIR}/tools/progen)
add_test(NAME progen_table COMMAND graph-progen --check-table)
add_test(NAME progen_short COMMAND progen_short)
# The GPU check's batches (graph-progen --device) leave out the ops without a
# CUDA kernel, read from the table's CpuOnly trait.
add_test(NAME progen_device_ops COMMAND graph-progen --check-device --seed 5001 --functions 300)
set_tests_properties(progen_table progen_short progen_device_ops PROPERTIES LABELS progen)
