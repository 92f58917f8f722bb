# Run by CTest (cmake -P): compiles one generated source with GCC's
# vectorization remarks and fails unless the dense loop of every fused kernel
# (each "for (int64_t i = begin; ..." line) was vectorized, the one with the
# most operands included: GCC versions such a loop with an overlap test per
# pair of pointers and gives up past 10 pairs unless the loop says it has no
# dependence (generated_support.h: GRAPH_DENSE_LOOP).
# Inputs: COMPILER, SOURCE, INCLUDES (include dirs separated by commas).
file(STRINGS "${SOURCE}" lines)
set(n 0)
set(loop_lines "")
foreach(l IN LISTS lines)
  math(EXPR n "${n} + 1")
  if(l MATCHES "for \\(int64_t i = begin; i < end; \\+\\+i\\)")
    list(APPEND loop_lines ${n})
  endif()
endforeach()
if(loop_lines STREQUAL "")
  message(FATAL_ERROR "no dense fused loop in ${SOURCE}")
endif()
set(inc)
string(REPLACE "," ";" INCLUDES "${INCLUDES}")
foreach(d IN LISTS INCLUDES)
  list(APPEND inc "-I${d}")
endforeach()
execute_process(
  COMMAND ${COMPILER} -std=c++20 -O2 ${inc} -fopt-info-vec-optimized -c ${SOURCE} -o /dev/null
  ERROR_VARIABLE remarks OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} failed:\n${remarks}")
endif()
get_filename_component(name "${SOURCE}" NAME)
foreach(loop_line IN LISTS loop_lines)
  if(NOT remarks MATCHES "${name}:${loop_line}:[0-9]+: optimized: loop vectorized")
    message(FATAL_ERROR "the dense loop at ${name}:${loop_line} was not vectorized; remarks:\n${remarks}")
  endif()
  message(STATUS "${name}:${loop_line}: loop vectorized")
endforeach()
