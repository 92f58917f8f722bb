# Sanitizer builds: -DCXXGRAPH_SANITIZE=address,undefined or =thread.
#
# The flags go to every target of this project (libraries, tests, examples,
# the generated kernel object libraries), except code that runs inside clang
# or as a build step: the plugin module is loaded by the unsanitized clang
# binary, which cannot host a sanitizer runtime, and graph-codegen runs while
# building. Both link unsanitized copies of ir and codegen (<lib>_host).
# -fno-sanitize-recover=all makes the first report fail the test.
# cxxgraph_apply_sanitizers() runs once, after every target exists.

set(CXXGRAPH_SANITIZE "" CACHE STRING "Sanitizers for cxxgraph's own targets: empty, address,undefined or thread")
set_property(CACHE CXXGRAPH_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")
if(CXXGRAPH_SANITIZE AND NOT CXXGRAPH_SANITIZE MATCHES "^(address,undefined|address|undefined|thread)$")
  message(FATAL_ERROR "CXXGRAPH_SANITIZE must be empty, address,undefined or thread, not '${CXXGRAPH_SANITIZE}'")
endif()

# The generator steps may run a plugin built elsewhere: the ThreadSanitizer
# build of tools/dev.sh, which builds only the concurrency tests, reuses the
# normal build's plugin instead of building one (about 3 CPU-minutes). Same
# sources, same generated code.
set(CXXGRAPH_GENERATOR_PLUGIN "" CACHE FILEPATH
    "A cxxgraph plugin built elsewhere, for the generator steps; empty: the plugin built here")

# Likewise graph-codegen, which turns tests/codegen_cases/*.graph into C++ at
# build time (tools/CMakeLists.txt imports it when given). With both given,
# a sanitizer build compiles no unsanitized copy of the IR and codegen
# libraries (about 2 CPU-minutes).
set(CXXGRAPH_GENERATOR_CODEGEN "" CACHE FILEPATH
    "A graph-codegen built elsewhere, for the build-time codegen steps; empty: the one built here")

# Sets `var` (the plugin target cxxgraph_static_graphs runs) to an imported
# CXXGRAPH_GENERATOR_PLUGIN when one is given.
function(cxxgraph_generator_plugin var)
  if(NOT CXXGRAPH_GENERATOR_PLUGIN)
    return()
  endif()
  if(NOT EXISTS "${CXXGRAPH_GENERATOR_PLUGIN}")
    message(FATAL_ERROR "CXXGRAPH_GENERATOR_PLUGIN: no file ${CXXGRAPH_GENERATOR_PLUGIN}")
  endif()
  add_library(cxxgraph_generator_plugin MODULE IMPORTED GLOBAL)
  set_target_properties(cxxgraph_generator_plugin PROPERTIES IMPORTED_LOCATION "${CXXGRAPH_GENERATOR_PLUGIN}")
  set(${var} cxxgraph_generator_plugin PARENT_SCOPE)
endfunction()

# Targets that run inside clang or at build time, and what they link instead
# of the sanitized libraries.
set(_cxxgraph_unsanitized cxxgraph_plugin graph-codegen)
set(_cxxgraph_host_libs cxxgraph_ir cxxgraph_codegen)

# Every target defined in `dir` and its subdirectories.
function(_cxxgraph_targets_in dir out)
  get_property(targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  get_property(subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(sub IN LISTS subdirs)
    _cxxgraph_targets_in(${sub} more)
    list(APPEND targets ${more})
  endforeach()
  set(${out} ${targets} PARENT_SCOPE)
endfunction()

# cxxgraph_ir -> cxxgraph_ir_host in a link-library list (also inside
# $<LINK_ONLY:...>).
function(_cxxgraph_use_host_libs var)
  foreach(lib IN LISTS _cxxgraph_host_libs)
    list(TRANSFORM ${var} REPLACE "^${lib}$" "${lib}_host")
    list(TRANSFORM ${var} REPLACE "^\\$<LINK_ONLY:${lib}>$" "$<LINK_ONLY:${lib}_host>")
  endforeach()
  set(${var} ${${var}} PARENT_SCOPE)
endfunction()

# An unsanitized copy of `lib`: same sources, include paths, options and
# definitions, linking the other host copies.
function(_cxxgraph_host_copy lib)
  get_target_property(dir ${lib} SOURCE_DIR)
  get_target_property(sources ${lib} SOURCES)
  list(TRANSFORM sources PREPEND "${dir}/" REGEX "^[^/$]")
  add_library(${lib}_host STATIC EXCLUDE_FROM_ALL ${sources})
  foreach(p INCLUDE_DIRECTORIES INTERFACE_INCLUDE_DIRECTORIES COMPILE_OPTIONS COMPILE_DEFINITIONS
            LINK_LIBRARIES INTERFACE_LINK_LIBRARIES)
    get_target_property(value ${lib} ${p})
    if(value)
      _cxxgraph_use_host_libs(value)
      set_property(TARGET ${lib}_host PROPERTY ${p} "${value}")
    endif()
  endforeach()
endfunction()

function(cxxgraph_apply_sanitizers)
  if(NOT CXXGRAPH_SANITIZE)
    return()
  endif()
  # -O1 -g1 (line tables: enough for the reports' stacks) after the build
  # type's flags and the runtime's -O3: these builds exist to find bugs, and
  # at -O3 -g the instrumented kernels took minutes per translation unit.
  set(flags -fsanitize=${CXXGRAPH_SANITIZE} -fno-sanitize-recover=all -fno-omit-frame-pointer -O1 -g1)
  message(STATUS "cxxgraph: sanitizers ${CXXGRAPH_SANITIZE} (the plugin and graph-codegen stay unsanitized)")

  # Unsanitized targets built here (not imported from another build) link
  # unsanitized copies of the libraries.
  set(built_here)
  foreach(t IN LISTS _cxxgraph_unsanitized)
    if(TARGET ${t})
      get_target_property(imported ${t} IMPORTED)
      if(NOT imported)
        list(APPEND built_here ${t})
      endif()
    endif()
  endforeach()
  set(skip ${_cxxgraph_unsanitized})
  if(built_here)
    foreach(lib IN LISTS _cxxgraph_host_libs)
      _cxxgraph_host_copy(${lib})
      list(APPEND skip ${lib}_host)
    endforeach()
  endif()
  foreach(t IN LISTS built_here)
    get_target_property(libs ${t} LINK_LIBRARIES)
    _cxxgraph_use_host_libs(libs)
    set_property(TARGET ${t} PROPERTY LINK_LIBRARIES "${libs}")
  endforeach()

  _cxxgraph_targets_in(${PROJECT_SOURCE_DIR} targets)
  foreach(t IN LISTS targets)
    get_target_property(type ${t} TYPE)
    if(t IN_LIST skip OR NOT type MATCHES "^(EXECUTABLE|STATIC_LIBRARY|OBJECT_LIBRARY|SHARED_LIBRARY)$")
      continue()
    endif()
    target_compile_options(${t} PRIVATE ${flags})
    # The instruction-set variants of the elementwise and reduction loops
    # (graph/cpu_isa.h) keep these flags instead of GCC's forced -O3: that
    # halved reduce.cpp's instrumented compile (50 to 24 s).
    target_compile_definitions(${t} PRIVATE GRAPH_ISA_FILE_FLAGS)
    get_target_property(dir ${t} SOURCE_DIR)
    if(type STREQUAL "EXECUTABLE" AND dir STREQUAL "${PROJECT_SOURCE_DIR}/tests")
      # Test drivers (GoogleTest macros around library calls): instrumented,
      # nn_test.cpp compiles in half the time at -O0 as at -O1 (10.6 vs 22.6
      # CPU-s); the libraries they call keep -O1.
      target_compile_options(${t} PRIVATE -O0)
    elseif(type STREQUAL "OBJECT_LIBRARY" AND t MATCHES "_cxxgraph_kernels$")
      # Generated kernels too: e2e_static_functions.graph.cpp took 75 CPU-s
      # at -O1, 32 at -O0, and the tests run them on small tensors.
      target_compile_options(${t} PRIVATE -O0)
    endif()
    if(type STREQUAL "STATIC_LIBRARY")
      # Whoever links a sanitized library (an installed user project too)
      # needs the sanitizer runtime.
      target_link_options(${t} INTERFACE ${flags})
    elseif(NOT type STREQUAL "OBJECT_LIBRARY")
      target_link_options(${t} PRIVATE ${flags})
    endif()
  endforeach()
endfunction()
