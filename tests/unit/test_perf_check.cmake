# SPDX-License-Identifier: BSD-3-Clause
# chorus-perf's data check (tools/perf/data.c, its threads in tools/perf/parallel.c): built into its
# test here from chorus-perf's own sources.
target_sources(test_perf_check PRIVATE ${CMAKE_SOURCE_DIR}/tools/perf/data.c ${CMAKE_SOURCE_DIR}/tools/perf/colls.c
               ${CMAKE_SOURCE_DIR}/tools/perf/numeric.c ${CMAKE_SOURCE_DIR}/tools/perf/parallel.c)
target_include_directories(test_perf_check BEFORE PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_SOURCE_DIR}/tools)
target_link_libraries(test_perf_check PRIVATE m Threads::Threads)
add_test(NAME unit.perf_check COMMAND test_perf_check)
set_tests_properties(unit.perf_check PROPERTIES TIMEOUT 120)
