# SPDX-License-Identifier: BSD-3-Clause
# Tests of the reference profiler libnccl-profiler-chorus.so (plugins/profiler_chorus).
# Included by tests/plugins/CMakeLists.txt; the global property keeps a second include harmless.
get_property(pc_tests_added GLOBAL PROPERTY CHORUS_PROFILER_CHORUS_TESTS_ADDED)
if(pc_tests_added OR NOT TARGET nccl-profiler-chorus)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_PROFILER_CHORUS_TESTS_ADDED TRUE)
set(PC_LIB $<TARGET_FILE:nccl-profiler-chorus>)

# NVIDIA's NCCL looks for these objects by name: all six must be in the dynamic symbol table, and
# nothing else of the library may be exported.
find_program(PC_NM nm)
if(PC_NM)
  add_test(NAME plugins.profiler_chorus.symbols COMMAND ${CHORUS_EXPECT_OUTPUT}
           --has " [DR] ncclProfiler_v6$" --has " [DR] ncclProfiler_v5$" --has " [DR] ncclProfiler_v4$"
           --has " [DR] ncclProfiler_v3$" --has " [DR] ncclProfiler_v2$" --has " [DR] ncclProfiler_v1$"
           --lacks " [TtWiB] [^_]" --lacks " [TtWiB] _[^_]" -- ${PC_NM} -D --defined-only ${PC_LIB})
  set_tests_properties(plugins.profiler_chorus.symbols PROPERTIES TIMEOUT 30)
endif()

# End to end: chorus-perf on several ranks under the reference profiler; then the traces must parse,
# hold every collective once per rank, and close every event they open (check_prof_trace.py).
find_program(PC_PYTHON python3)
if(TARGET chorus-perf AND PC_PYTHON)
  set(PC_PERF $<TARGET_FILE:chorus-perf>)
  set(PC_CHECK ${CMAKE_CURRENT_SOURCE_DIR}/check_prof_trace.py)
  # Every event (ProxyStep included), settings from the environment, ranks on one host.
  set(PC_OUT1 ${CMAKE_CURRENT_BINARY_DIR}/profchorus-env)
  add_test(NAME plugins.profiler_chorus.perf COMMAND sh -c
    "rm -rf ${PC_OUT1} && mkdir -p ${PC_OUT1} && ${PC_PERF} -np 3 -T 50 allreduce -b 8 -e 256K -f 8 -n 3 -w 1 -c 1 -q >${PC_OUT1}/perf.txt && ${PC_PYTHON} ${PC_CHECK} ${PC_OUT1} 3 AllReduce 18")
  set_tests_properties(plugins.profiler_chorus.perf PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_PROFILER_PLUGIN=chorus;CHORUS_PROFILER_DIR=${PC_OUT1};CHORUS_PROFILER_MASK=0x7ff;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;CHORUS_PLUGIN_STRICT=1")
  # Settings from the INI file ([profiler] and [profiler.chorus]), each rank its own host: transfers
  # through the net plugin, whose events come back as NetPlugin events.
  set(PC_OUT2 ${CMAKE_CURRENT_BINARY_DIR}/profchorus-ini)
  set(PC_INI ${CMAKE_CURRENT_BINARY_DIR}/profiler_chorus.ini)
  file(WRITE ${PC_INI} "[profiler]\nprofiler_plugin = chorus\n[profiler.chorus]\nCHORUS_PROFILER_DIR = ${PC_OUT2}\nCHORUS_PROFILER_MASK = 0xfff\n")
  add_test(NAME plugins.profiler_chorus.ini COMMAND sh -c
    "rm -rf ${PC_OUT2} && mkdir -p ${PC_OUT2} && ${PC_PERF} -np 2 --hosts 2 -T 50 allgather -b 1K -e 1M -f 32 -n 2 -w 1 -c 1 -q >${PC_OUT2}/perf.txt && ${PC_PYTHON} ${PC_CHECK} ${PC_OUT2} 2 AllGather 12 && grep -q '\"cat\":\"net\"' ${PC_OUT2}/chorus-prof-*-rank0.json")
  set_tests_properties(plugins.profiler_chorus.ini PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "CHORUS_CONF=${PC_INI};HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;CHORUS_PLUGIN_STRICT=1")
endif()
