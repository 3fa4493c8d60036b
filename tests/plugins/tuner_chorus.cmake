# SPDX-License-Identifier: BSD-3-Clause
# Tests of the reference tuner libnccl-tuner-chorus.so (plugins/tuner_chorus).
# Included by tests/plugins/CMakeLists.txt; the global property keeps a second include harmless.
get_property(tc_tests_added GLOBAL PROPERTY CHORUS_TUNER_CHORUS_TESTS_ADDED)
if(tc_tests_added OR NOT TARGET nccl-tuner-chorus)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_TUNER_CHORUS_TESTS_ADDED TRUE)
set(TC_LIB $<TARGET_FILE:nccl-tuner-chorus>)

# The rules, through the exported tables (no Chorus code linked in), one case per process.
add_executable(test_tuner_chorus ${CMAKE_SOURCE_DIR}/plugins/tuner_chorus/tests/test_tuner_chorus.c)
target_include_directories(test_tuner_chorus BEFORE PRIVATE ${CMAKE_SOURCE_DIR}/core/include)
target_link_libraries(test_tuner_chorus PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(test_tuner_chorus nccl-tuner-chorus)
foreach(case parse errors match impossible v2 chunk)
  add_test(NAME plugins.tuner_chorus.${case} COMMAND test_tuner_chorus ${TC_LIB} ${case})
  set_tests_properties(plugins.tuner_chorus.${case} PROPERTIES TIMEOUT 30)
endforeach()

# NVIDIA's NCCL looks for these objects by name: all five must be in the dynamic symbol table, and
# nothing else of the library may be exported.
find_program(TC_NM nm)
if(TC_NM)
  add_test(NAME plugins.tuner_chorus.symbols COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has " [DR] ncclTunerPlugin_v6$" --has " [DR] ncclTunerPlugin_v5$" --has " [DR] ncclTunerPlugin_v4$"
           --has " [DR] ncclTunerPlugin_v3$" --has " [DR] ncclTunerPlugin_v2$" --lacks " [TtWiB] [^_]" --lacks " [TtWiB] _[^_]"
           -- ${TC_NM} -D --defined-only ${TC_LIB})
  set_tests_properties(plugins.tuner_chorus.symbols PROPERTIES TIMEOUT 30)
endif()

# End to end: chorus-perf on 4 ranks, the reference tuner forcing RING, then TREE, on all-reduce at
# every size (the model alone picks TREE for small sizes and RING for large ones): the last column
# must show only the forced choice, and every result must be right (-c 1). The RING rules come from
# the INI file's [tuner.chorus] section (exported before the plugin's init), the TREE rule from the
# environment.
if(TARGET chorus-perf)
  set(TC_PERF $<TARGET_FILE:chorus-perf>)
  set(TC_INI_RING ${CMAKE_CURRENT_BINARY_DIR}/tuner_chorus_ring.ini)
  file(WRITE ${TC_INI_RING}
       "[tuner]\ntuner_plugin = chorus\n[tuner.chorus]\nTUNER_RULE_1 = allreduce * ranks=2-8 -> ring simple 2\n")
  set(TC_PERF_ARGS -np 4 -T 60 allreduce -b 8 -e 1M -f 32 -n 2 -w 1 -c 1)
  add_test(NAME plugins.tuner_chorus.perf.ring COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --has "RING/SIMPLE" --lacks "TREE/" --lacks "WARN"
           --has "uses tuner plugin Chorus \\(ABI v6\\)" -- ${TC_PERF} ${TC_PERF_ARGS})
  set_tests_properties(plugins.tuner_chorus.perf.ring PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "CHORUS_CONF=${TC_INI_RING};HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_TUNER_PLUGIN=;NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=TUNING;NCCL_ALGO=;NCCL_PROTO=")
  add_test(NAME plugins.tuner_chorus.perf.tree COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --has "TREE/SIMPLE" --lacks "RING/" --lacks "WARN"
           -- ${TC_PERF} ${TC_PERF_ARGS})
  set_tests_properties(plugins.tuner_chorus.perf.tree PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_TUNER_PLUGIN=chorus;TUNER_RULE_1=allreduce 0-1G -> tree;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;NCCL_ALGO=;NCCL_PROTO=")
  # A step size that is no power of two (5000 bytes: 1250 floats, 625 doubles) gives right results for
  # every type, on the ring and (over two acted-out hosts) on the tree.
  add_test(NAME plugins.tuner_chorus.perf.chunk COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --lacks "WARN" -- ${TC_PERF} -np 3 -T 60 allreduce -b 4 -e 256K -f 16
           -n 1 -w 0 -d all -c 1)
  add_test(NAME plugins.tuner_chorus.perf.chunk.tree COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --has "TREE/SIMPLE" --lacks "RING/" --lacks "WARN"
           -- ${TC_PERF} -np 5 --hosts 2 -T 60 allreduce -b 4 -e 256K -f 16 -n 1 -w 0 -c 1)
  set_tests_properties(plugins.tuner_chorus.perf.chunk PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_TUNER_PLUGIN=chorus;TUNER_RULE_1=* -> * * chunk=5000;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;NCCL_ALGO=;NCCL_PROTO=")
  set_tests_properties(plugins.tuner_chorus.perf.chunk.tree PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_TUNER_PLUGIN=chorus;TUNER_RULE_1=allreduce -> tree * chunk=5000;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;NCCL_ALGO=;NCCL_PROTO=")
  # A rule the communicator cannot run is named at init, and the run goes on with the planner's choice.
  add_test(NAME plugins.tuner_chorus.perf.impossible COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has "Out of bounds values : 0 OK" --has "RING/SIMPLE"
           --has "WARN Chorus tuner: TUNER_RULE_1 \"allgather -> tree\": TREE cannot run AllGather"
           -- ${TC_PERF} -np 2 -T 60 allgather -b 64 -e 4K -f 8 -n 1 -w 0 -c 1)
  set_tests_properties(plugins.tuner_chorus.perf.impossible PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_TUNER_PLUGIN=chorus;TUNER_RULE_1=allgather -> tree;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;NCCL_ALGO=;NCCL_PROTO=")
endif()
