# Run by CTest (cmake -P): compiles one generated source with GCC's
# vectorization remarks and fails unless every dense loop of every fused
# kernel (the "for" line after each GRAPH_DENSE_LOOP, strip-mined loops
# included) was vectorized, the one with the most operands included: GCC
# versions such a loop with an overlap test per pair of pointers and gives up
# past 10 pairs unless the loop says it has no dependence
# (generated_support.h: GRAPH_DENSE_LOOP). The loops are compiled once per
# instruction set (graph/cpu_isa.h); each variant must vectorize, so the
# remarks must name each loop three times.
# Inputs: COMPILER, SOURCE, INCLUDES (include dirs separated by commas).
cmake_policy(SET CMP0057 NEW)  # if(IN_LIST)
file(STRINGS "${SOURCE}" lines)
set(n 0)
set(loop_lines "")
set(after_pragma OFF)
foreach(l IN LISTS lines)
  math(EXPR n "${n} + 1")
  if(after_pragma AND l MATCHES "for \\(int64_t i = 0; i < [nm]; \\+\\+i\\)")
    list(APPEND loop_lines ${n})
  endif()
  set(after_pragma OFF)
  if(l MATCHES "^ *GRAPH_DENSE_LOOP")
    set(after_pragma ON)
  endif()
endforeach()
if(loop_lines STREQUAL "")
  message(FATAL_ERROR "no dense fused loop in ${SOURCE}")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/include_flags.cmake)
cxxgraph_include_flags(inc "${INCLUDES}")
execute_process(
  COMMAND ${COMPILER} -std=c++20 -O2 ${inc} -fopt-info-vec-optimized -c ${SOURCE} -o /dev/null
  ERROR_VARIABLE remarks OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} failed:\n${remarks}")
endif()
get_filename_component(name "${SOURCE}" NAME)
foreach(loop_line IN LISTS loop_lines)
  string(REGEX MATCHALL "${name}:${loop_line}:[0-9]+: optimized: loop vectorized using [0-9]+ byte vectors" hits "${remarks}")
  set(widths "")
  foreach(h IN LISTS hits)
    string(REGEX REPLACE ".* using ([0-9]+) byte vectors" "\\1" w "${h}")
    list(APPEND widths ${w})
  endforeach()
  # The main loop of each variant: 16 (SSE2), 32 (AVX2) and 64 (AVX-512) bytes.
  foreach(w 16 32 64)
    if(NOT w IN_LIST widths)
      message(FATAL_ERROR "the dense loop at ${name}:${loop_line} was not vectorized with ${w}-byte vectors; remarks:\n${remarks}")
    endif()
  endforeach()
  message(STATUS "${name}:${loop_line}: loop vectorized (${widths} byte vectors)")
endforeach()
