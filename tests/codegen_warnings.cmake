# Run by CTest (cmake -P): compiles one generated source as a user's build
# would, at -O2 -Wall -Wextra, and fails on any warning. Optimization is on
# because some warnings only come from the optimizer (clang's
# -Wpass-failed=transform-warning when a loop hint cannot be honoured).
# Inputs: COMPILER, SOURCE, INCLUDES (include dirs separated by commas).
foreach(_v COMPILER SOURCE INCLUDES)
  if(NOT DEFINED ${_v})
    message(FATAL_ERROR "codegen_warnings.cmake: -D${_v}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${SOURCE}")
  message(FATAL_ERROR "no generated source ${SOURCE} (not built?)")
endif()
include(${CMAKE_CURRENT_LIST_DIR}/include_flags.cmake)
cxxgraph_include_flags(inc "${INCLUDES}")
execute_process(
  COMMAND ${COMPILER} -std=c++20 -O2 -Wall -Wextra -ffp-contract=off ${inc} -c ${SOURCE} -o /dev/null
  ERROR_VARIABLE diagnostics OUTPUT_VARIABLE out RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "compiling ${SOURCE} with ${COMPILER} failed:\n${diagnostics}")
endif()
if(diagnostics MATCHES "warning:")
  message(FATAL_ERROR "${COMPILER} warns on ${SOURCE}:\n${diagnostics}")
endif()
message(STATUS "${COMPILER}: no warnings in ${SOURCE}")
