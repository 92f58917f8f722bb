# A user project that includes the source tree instead of an installed package,
# with add_subdirectory() and with FetchContent, its target compiled by GCC and
# by clang 19. Each run builds cxxgraph's runtime once more (label consume,
# slow), so CI runs two of the four pairs, each style and each compiler once:
# FetchContent with clang built and run, and add_subdirectory with GCC
# compiled but not linked (configure, plugin, the app's sources and kernels;
# FetchContent is add_subdirectory underneath, so linking is covered once).
# -DCXXGRAPH_CONSUME_ALL=ON builds and runs all four.
option(CXXGRAPH_CONSUME_ALL "consume tests: every style with every compiler" OFF)
foreach(_style add_subdirectory fetchcontent)
  foreach(_name gcc clang)
    if(NOT CXXGRAPH_CONSUME_ALL AND ((_style STREQUAL "add_subdirectory" AND _name STREQUAL "clang") OR
                                     (_style STREQUAL "fetchcontent" AND _name STREQUAL "gcc")))
      continue()
    endif()
    set(_cxx g++)
    if(_name STREQUAL "clang")
      set(_cxx clang++-19)
    endif()
    set(_mode run)
    if(NOT CXXGRAPH_CONSUME_ALL AND _style STREQUAL "add_subdirectory")
      set(_mode compile)
    endif()
    set(_test consume_${_style}_${_name})
    add_test(NAME ${_test}
      COMMAND ${CMAKE_CURRENT_LIST_DIR}/consume/run_consume_test.sh ${_style} ${_cxx} ${PROJECT_SOURCE_DIR}
              ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/${_test} ${_mode})
    set_tests_properties(${_test} PROPERTIES LABELS "consume;slow" TIMEOUT 900
      PASS_REGULAR_EXPRESSION "consume test \\(${_style}, [^)]*\\): OK")
  endforeach()
endforeach()
