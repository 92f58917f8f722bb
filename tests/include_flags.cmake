# For the cmake -P scripts that compile a generated source themselves:
# -I flags from INCLUDES (include dirs separated by commas, as CTest passes them).
function(cxxgraph_include_flags out includes)
  string(REPLACE "," ";" dirs "${includes}")
  set(flags)
  foreach(d IN LISTS dirs)
    list(APPEND flags "-I${d}")
  endforeach()
  set(${out} ${flags} PARENT_SCOPE)
endfunction()
