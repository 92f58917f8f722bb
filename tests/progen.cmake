# Differential testing with random programs (tools/progen, docs/fuzzing.md):
# the short run, a fixed seed and one batch, compiled vs interpreted vs eager
# on every CPU instruction-set variant, forward and backward (label progen).
add_subdirectory(${CMAKE_CURRENT_LIST_DIR}/../tools/progen ${CMAKE_BINARY_DIR}/tools/progen)
add_test(NAME progen_table COMMAND graph-progen --check-table)
add_test(NAME progen_short COMMAND progen_short)
# The GPU check's batches (graph-progen --device) leave out the ops without a
# CUDA kernel, read from the table's CpuOnly trait.
add_test(NAME progen_device_ops COMMAND graph-progen --check-device --seed 5001 --functions 300)
# The device harness (harness_device.cpp) with the CPU as the device: its
# inputs, calls, comparisons and summary, without a GPU.
add_test(NAME progen_device_harness COMMAND progen_short --device cpu)
set_tests_properties(progen_device_harness PROPERTIES
  PASS_REGULAR_EXPRESSION "progen: cpu: [1-9][0-9]* functions, 0 findings" FAIL_REGULAR_EXPRESSION "FINDING")
set_tests_properties(progen_table progen_short progen_device_ops progen_device_harness PROPERTIES LABELS progen)
