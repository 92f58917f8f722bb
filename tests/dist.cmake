# graph::dist under mpirun (label mpi): collectives at 2 and 3 ranks, DDP
# against single-process training (eager and static forwards), and the faults
# (a rank that never arrives, a rank that exits early, a DDP step a rank
# skips), each of which must end in an error naming the operation and the
# ranks within the timeout, never a hang. CI runs as root: Open MPI wants the
# two variables below; --oversubscribe lets 3 ranks share 2 cores, and
# GRAPH_NUM_THREADS=1 keeps each rank on one thread.
add_library(dist_test_main INTERFACE)
target_link_libraries(dist_test_main INTERFACE cxxgraph::dist GTest::gtest)
target_include_directories(dist_test_main INTERFACE ${CMAKE_CURRENT_LIST_DIR}/dist)

add_executable(dist_collectives_test ${CMAKE_CURRENT_LIST_DIR}/dist/collectives_test.cpp)
target_link_libraries(dist_collectives_test PRIVATE dist_test_main)

add_executable(dist_ddp_test ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_test.cpp ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)
target_link_libraries(dist_ddp_test PRIVATE dist_test_main)
cxxgraph_static_graphs(dist_ddp_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)

add_executable(dist_fault_test ${CMAKE_CURRENT_LIST_DIR}/dist/fault_test.cpp ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)
target_link_libraries(dist_fault_test PRIVATE cxxgraph::dist)
target_include_directories(dist_fault_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/dist)
cxxgraph_static_graphs(dist_fault_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)

set(CXXGRAPH_MPI_ENV OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 GRAPH_NUM_THREADS=1
    # no CMA single copy in containers without ptrace rights
    OMPI_MCA_btl_vader_single_copy_mechanism=none)
set(CXXGRAPH_MPIRUN ${CXXGRAPH_MPIEXEC} --oversubscribe --bind-to none)

foreach(np 2 3)
  add_test(NAME dist_collectives_np${np} COMMAND ${CXXGRAPH_MPIRUN} -np ${np} $<TARGET_FILE:dist_collectives_test>)
  set_tests_properties(dist_collectives_np${np} PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "${CXXGRAPH_MPI_ENV}")
endforeach()
add_test(NAME dist_ddp_np2 COMMAND ${CXXGRAPH_MPIRUN} -np 2 $<TARGET_FILE:dist_ddp_test>)
set_tests_properties(dist_ddp_np2 PROPERTIES LABELS mpi TIMEOUT 60 ENVIRONMENT "${CXXGRAPH_MPI_ENV}")

# A fault ends the job (MPI_Abort), so mpirun's status is not the verdict:
# rank 0 prints the error it got and whether it was the right one.
foreach(fault never_arrives exits_early ddp_step_skipped static_step_skipped)
  add_test(NAME dist_fault_${fault} COMMAND ${CXXGRAPH_MPIRUN} -np 2 $<TARGET_FILE:dist_fault_test> ${fault})
  set_tests_properties(dist_fault_${fault} PROPERTIES LABELS mpi TIMEOUT 30 ENVIRONMENT "${CXXGRAPH_MPI_ENV}"
    PASS_REGULAR_EXPRESSION "fault test passed" FAIL_REGULAR_EXPRESSION "fault test FAILED")
endforeach()

# A DDP step interrupted by an exception, eager and static, over an in-process
# loopback backend (no mpirun): it runs in every test configuration.
add_executable(dist_ddp_interrupted_test ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_interrupted_test.cpp
                                         ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)
target_link_libraries(dist_ddp_interrupted_test PRIVATE cxxgraph::dist GTest::gtest_main)
target_include_directories(dist_ddp_interrupted_test PRIVATE ${CMAKE_CURRENT_LIST_DIR}/dist)
cxxgraph_static_graphs(dist_ddp_interrupted_test SOURCES ${CMAKE_CURRENT_LIST_DIR}/dist/ddp_models.cpp)
gtest_discover_tests(dist_ddp_interrupted_test PROPERTIES LABELS "dist")
add_test(NAME dist_ddp_interrupted_interpreted COMMAND dist_ddp_interrupted_test --gtest_filter=DdpInterrupted.Static*)
set_tests_properties(dist_ddp_interrupted_interpreted PROPERTIES LABELS "dist" ENVIRONMENT "GRAPH_MODE=interpret")
