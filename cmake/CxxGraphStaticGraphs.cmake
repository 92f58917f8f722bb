# cxxgraph_static_graphs(<target> [SOURCES <src>...] [GENERATOR_FLAGS <flag>...] [DTYPES <dtype>...] [CPU_ONLY])
#
# For each C++ source of <target> (or only the SOURCES given), adds a
# generator step that runs clang 19 with the cxxgraph plugin using the
# target's include directories and definitions, and writes into
# <build>/cxxgraph/<target>/:
#   <name>.cpp        the source with a dispatch prologue in each lowered
#                     [[graph::static]] body (compiled instead of the original)
#   <name>.graph.cpp  the generated graph functions and their registrars
#   <name>.loops.cpp  their fused loops, a unit of its own with light headers
#                     (compiled in parallel with <name>.graph.cpp)
#   <name>.graph.cu   with CUDA (CXXGRAPH_HAS_CUDA and the CUDA language
#                     enabled): one CUDA kernel per fusion group, compiled by
#                     nvcc into the same object library
#   <name>/<fn>.graph, <fn>.opt.graph   the IR before and after optimization
# A depfile makes edits to the source or any header it includes re-run the
# step. GENERATOR_FLAGS go to the generator only (e.g. -Werror=graph-fallback).
# CPU_ONLY: no CUDA kernels even when cxxgraph has CUDA (they are compiled
# by nvcc, often the longest step; the graphs then run on CPU tensors only).
# DTYPES: each graph is also compiled with these dtypes (float64, int64, ...)
# for the tensor inputs it is otherwise compiled for as float32; a call in
# one of them runs that code. Calls in dtypes not listed run the graph
# specialized at run time, on the interpreter. Each dtype adds the graph
# functions and loops once more to the build.
# The generated kernels are compiled at -O2 at least, whatever the build type
# (set CXXGRAPH_DEBUG_GENERATED=ON to build them with the build type's flags).
#
# Works from an install (find_package(CxxGraph)), from this build tree, and
# from a project that includes the source tree (add_subdirectory or
# FetchContent_MakeAvailable). Other compilers than clang 19 may build the
# target: clang is only the generator's front end.

# cxxgraph_set_generator(CLANG <clang++-19> PLUGIN <target> RUNTIME <target> HAS_CUDA <bool>)
#
# Records what cxxgraph_static_graphs() runs and links. They are global
# properties, not variables: a project that adds the cxxgraph source tree
# with add_subdirectory() calls cxxgraph_static_graphs() from its own
# directories, where variables set in cxxgraph's scope are not visible
# (functions and targets are global, variables are not).
function(cxxgraph_set_generator)
  cmake_parse_arguments(ARG "" "CLANG;PLUGIN;RUNTIME;HAS_CUDA" "" ${ARGN})
  foreach(key CLANG PLUGIN RUNTIME)
    if(NOT ARG_${key})
      message(FATAL_ERROR "cxxgraph_set_generator: ${key} is required")
    endif()
  endforeach()
  set_property(GLOBAL PROPERTY CXXGRAPH_GENERATOR_CLANG "${ARG_CLANG}")
  set_property(GLOBAL PROPERTY CXXGRAPH_GENERATOR_PLUGIN_TARGET "${ARG_PLUGIN}")
  set_property(GLOBAL PROPERTY CXXGRAPH_GENERATOR_RUNTIME_TARGET "${ARG_RUNTIME}")
  set_property(GLOBAL PROPERTY CXXGRAPH_GENERATOR_HAS_CUDA "${ARG_HAS_CUDA}")
endfunction()

function(cxxgraph_static_graphs target)
  cmake_parse_arguments(ARG "CPU_ONLY" "" "SOURCES;GENERATOR_FLAGS;DTYPES" ${ARGN})
  get_property(clang GLOBAL PROPERTY CXXGRAPH_GENERATOR_CLANG)
  get_property(plugin GLOBAL PROPERTY CXXGRAPH_GENERATOR_PLUGIN_TARGET)
  get_property(runtime GLOBAL PROPERTY CXXGRAPH_GENERATOR_RUNTIME_TARGET)
  get_property(has_cuda GLOBAL PROPERTY CXXGRAPH_GENERATOR_HAS_CUDA)
  if(NOT clang OR NOT plugin OR NOT TARGET "${plugin}")
    message(FATAL_ERROR "cxxgraph_static_graphs: clang++-19 or the cxxgraph plugin is missing "
                        "(clang: '${clang}', plugin target: '${plugin}'; a cxxgraph built with "
                        "CXXGRAPH_BUILD_PLUGIN=OFF has no generator)")
  endif()
  get_target_property(src_dir ${target} SOURCE_DIR)
  set(sources ${ARG_SOURCES})
  if(NOT sources)
    get_target_property(sources ${target} SOURCES)
  endif()
  get_target_property(std ${target} CXX_STANDARD)
  if(NOT std)
    set(std ${CMAKE_CXX_STANDARD})
  endif()
  if(NOT std OR std LESS 20)
    set(std 20)
  endif()

  set(gen_dir ${CMAKE_CURRENT_BINARY_DIR}/cxxgraph/${target})
  set(includes "$<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>")
  set(defines "$<TARGET_PROPERTY:${target},COMPILE_DEFINITIONS>")
  set(kernel_sources "")
  # CUDA kernels too when cxxgraph was built with CUDA and this project
  # compiles CUDA (enable_language(CUDA), which the cxxgraph build does).
  get_property(languages GLOBAL PROPERTY ENABLED_LANGUAGES)
  set(with_cuda OFF)
  if(has_cuda AND "CUDA" IN_LIST languages AND NOT ARG_CPU_ONLY)
    set(with_cuda ON)
  endif()
  set(dtypes_option "")
  if(ARG_DTYPES)
    list(JOIN ARG_DTYPES "," dtypes)
    set(dtypes_option -fplugin-arg-cxxgraph-dtypes=${dtypes})
  endif()
  foreach(src IN LISTS sources)
    if(NOT src MATCHES "\\.(cpp|cc|cxx|C)$" OR src MATCHES "^\\$<")
      continue()
    endif()
    get_filename_component(abs ${src} ABSOLUTE BASE_DIR ${src_dir})
    get_filename_component(abs_dir ${abs} DIRECTORY)
    file(RELATIVE_PATH rel ${src_dir} ${abs})
    string(REGEX REPLACE "\\.[^.]*$" "" stem ${rel})
    string(REGEX REPLACE "[/.]" "_" stem ${stem})
    set(copy ${gen_dir}/${stem}.cpp)
    set(kernels ${gen_dir}/${stem}.graph.cpp)
    set(loops ${gen_dir}/${stem}.loops.cpp)
    set(depfile ${gen_dir}/${stem}.d)
    set(cuda_output "")
    set(cuda_option "")
    if(with_cuda)
      set(cuda_output ${gen_dir}/${stem}.graph.cu)
      set(cuda_option -fplugin-arg-cxxgraph-cuda=${cuda_output})
    endif()
    add_custom_command(
      OUTPUT ${copy} ${kernels} ${loops} ${cuda_output}
      COMMAND ${CMAKE_COMMAND} -E make_directory ${gen_dir}/${stem}
      COMMAND ${clang} -fsyntax-only -std=c++${std}
              "$<$<BOOL:${includes}>:-I$<JOIN:${includes},;-I>>"
              "$<$<BOOL:${defines}>:-D$<JOIN:${defines},;-D>>"
              -Wno-unknown-warning-option ${ARG_GENERATOR_FLAGS}
              -fplugin=$<TARGET_FILE:${plugin}>
              -fplugin-arg-cxxgraph-copy=${copy}
              -fplugin-arg-cxxgraph-kernels=${kernels}
              -fplugin-arg-cxxgraph-loops=${loops}
              ${cuda_option} ${dtypes_option}
              -fplugin-arg-cxxgraph-graph-dir=${gen_dir}/${stem}
              -MD -MF ${depfile} -MT ${copy}
              ${abs}
      DEPFILE ${depfile}
      DEPENDS ${abs} ${plugin}
      COMMENT "cxxgraph: lowering [[graph::static]] functions in ${rel}"
      COMMAND_EXPAND_LISTS VERBATIM)
    # Compile the copy instead of the original; quoted includes still resolve
    # next to the original.
    set_source_files_properties(${abs} TARGET_DIRECTORY ${target} PROPERTIES HEADER_FILE_ONLY TRUE)
    set_source_files_properties(${copy} TARGET_DIRECTORY ${target} PROPERTIES
      GENERATED TRUE COMPILE_OPTIONS "-iquote;${abs_dir}")
    target_sources(${target} PRIVATE ${copy})
    list(APPEND kernel_sources ${kernels} ${loops} ${cuda_output})
  endforeach()

  if(kernel_sources)
    # An object library, linked in as objects, so registrars are never dropped.
    add_library(${target}_cxxgraph_kernels OBJECT ${kernel_sources})
    target_link_libraries(${target}_cxxgraph_kernels PRIVATE ${runtime})
    # No fused multiply-add contraction: the fused loops' instruction-set
    # variants (graph/cpu_isa.h) and the eager kernels round a * b + c the
    # same way, so results are bitwise equal on every machine.
    target_compile_options(${target}_cxxgraph_kernels PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-ffp-contract=off>)
    # Optimized whatever the build type: under Debug or no build type the
    # kernels would be built at -O0 while the eager ops they replace come
    # prebuilt and optimized, and a static graph would run slower than eager.
    # CXXGRAPH_DEBUG_GENERATED=ON keeps the build type's flags, to step
    # through the generated loops in a debugger.
    if(NOT CXXGRAPH_DEBUG_GENERATED)
      target_compile_options(${target}_cxxgraph_kernels PRIVATE
        $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<NOT:$<CONFIG:Release,RelWithDebInfo,MinSizeRel>>>:-O2>)
    endif()
    if(with_cuda)
      # The .graph.cu files include only graph/cuda/fused.h and
      # graph/scalar_ops.h: about a second of nvcc each.
      target_compile_options(${target}_cxxgraph_kernels PRIVATE
        $<$<COMPILE_LANGUAGE:CUDA>:--expt-relaxed-constexpr>)
    endif()
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${target}_cxxgraph_kernels>)
  endif()
  set_property(TARGET ${target} APPEND PROPERTY CXXGRAPH_GENERATED_DIR ${gen_dir})
endfunction()
