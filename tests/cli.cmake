# Command-line conventions (tools/cli.h) of graph-inspect, graph-run and
# graph-codegen: --help, --version, exit status 2 and one line for misuse.
# Runs the built tools from a CMake script: nothing to compile.
set(_cli_tools graph-inspect graph-run graph-codegen)
if(TARGET graph-export)
  list(APPEND _cli_tools graph-export)  # with the ONNX export (CXXGRAPH_ONNX)
endif()
foreach(_tool IN LISTS _cli_tools)
  add_test(NAME Cli.${_tool}
           COMMAND ${CMAKE_COMMAND} -DTOOL=$<TARGET_FILE:${_tool}> -DNAME=${_tool} -DVERSION=${CxxGraph_VERSION}
                   -P ${CMAKE_CURRENT_LIST_DIR}/cli/check_conventions.cmake)
  set_tests_properties(Cli.${_tool} PROPERTIES LABELS cli)
endforeach()
