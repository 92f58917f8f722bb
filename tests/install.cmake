# A user project built against the installed package (slow: label install).
add_test(NAME install_user_project
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/install/run_install_test.sh ${CMAKE_BINARY_DIR} ${CMAKE_CURRENT_BINARY_DIR}/install_scratch)
set_tests_properties(install_user_project PROPERTIES LABELS install PASS_REGULAR_EXPRESSION "install test: OK" TIMEOUT 600)
# examples/standalone, the user project the README shows, built with clang 19
# against the installed package (label install).
add_test(NAME install_standalone_example
  COMMAND ${CMAKE_CURRENT_LIST_DIR}/install/run_standalone_example.sh ${CMAKE_BINARY_DIR}
          ${CMAKE_CURRENT_BINARY_DIR}/standalone_scratch ${CMAKE_CURRENT_LIST_DIR}/../examples/standalone)
set_tests_properties(install_standalone_example PROPERTIES LABELS "install;example"
  PASS_REGULAR_EXPRESSION "standalone example: OK" TIMEOUT 600)
