# Install rules and the CxxGraph package: find_package(CxxGraph) gives
# cxxgraph::runtime, cxxgraph::ir, the plugin and cxxgraph_static_graphs(),
# and cxxgraph::dist when built with MPI.
include(CMakePackageConfigHelpers)

set_target_properties(cxxgraph_ir PROPERTIES EXPORT_NAME ir)
set_target_properties(cxxgraph_runtime PROPERTIES EXPORT_NAME runtime)
install(TARGETS cxxgraph_ir cxxgraph_runtime EXPORT CxxGraphTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ir/include/ runtime/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET cxxgraph_cuda)  # the runtime links it: users' links need it and CUDA's libraries
  set_target_properties(cxxgraph_cuda PROPERTIES EXPORT_NAME cuda)
  install(TARGETS cxxgraph_cuda EXPORT CxxGraphTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY cuda/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
if(TARGET cxxgraph_dist)  # graph::dist over MPI: its users link cxxgraph::dist
  set_target_properties(cxxgraph_dist PROPERTIES EXPORT_NAME dist)
  install(TARGETS cxxgraph_dist EXPORT CxxGraphTargets ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
endif()
if(TARGET cxxgraph_plugin)
  set_target_properties(cxxgraph_plugin PROPERTIES EXPORT_NAME plugin)
  install(TARGETS cxxgraph_plugin EXPORT CxxGraphTargets LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/cxxgraph)
endif()
install(EXPORT CxxGraphTargets NAMESPACE cxxgraph:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/CxxGraph)

get_filename_component(CXXGRAPH_CLANG_DIR "${CXXGRAPH_CLANG}" DIRECTORY)
configure_package_config_file(cmake/CxxGraphConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/CxxGraphConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/CxxGraph)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/CxxGraphConfigVersion.cmake
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${CMAKE_CURRENT_BINARY_DIR}/CxxGraphConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/CxxGraphConfigVersion.cmake
  cmake/CxxGraphStaticGraphs.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/CxxGraph)
