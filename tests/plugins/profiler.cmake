# SPDX-License-Identifier: BSD-3-Clause
# ABI conformance tests of the profiler plugin loader (core/plugin/profiler*.c) and of the core's
# event points (core/profile): tiny test profilers, one per ABI version, that check every event as
# it arrives (testprof_plugin.c), driven by test_profiler (collectives on N ranks) and
# test_profiler_loader (loading, fallback, strict, none). Included by tests/plugins/CMakeLists.txt.

set(TESTPROF_DIR ${CMAKE_CURRENT_BINARY_DIR}/proflib)
set(TESTPROF_DEFAULT_DIR ${CMAKE_CURRENT_BINARY_DIR}/profdefault) # holds a libnccl-profiler.so
set(TESTPROF_LOG_DIR ${CMAKE_CURRENT_BINARY_DIR}/log)
file(MAKE_DIRECTORY ${TESTPROF_LOG_DIR})

# A test profiler: a module named libnccl-profiler-<name>.so that exports only its ncclProfiler_vN
# (and testProf* for the tests).
function(chorus_test_profiler target name version)
  add_library(${target} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testprof_plugin.c)
  target_include_directories(${target} PRIVATE ${CHORUS_PUBLIC_INCLUDE})
  target_compile_definitions(${target} PRIVATE TESTPROF_VERSION=${version} TESTPROF_NAME="${name}" ${ARGN})
  target_compile_options(${target} PRIVATE -fvisibility=hidden)
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-profiler-${name}
                        LIBRARY_OUTPUT_DIRECTORY ${TESTPROF_DIR})
endfunction()

foreach(v 1 2 3 4 5 6)
  chorus_test_profiler(testprof_v${v} testv${v} ${v})
endforeach()
chorus_test_profiler(testprof_initfail initfail 6 TESTPROF_INIT_FAIL)
chorus_test_profiler(testprof_nullctx nullctx 6 TESTPROF_NULL_CONTEXT)
chorus_test_profiler(testprof_default default 5)
set_target_properties(testprof_default PROPERTIES OUTPUT_NAME nccl-profiler LIBRARY_OUTPUT_DIRECTORY ${TESTPROF_DEFAULT_DIR})
# A net plugin library that also carries a profiler (v4), as NCCL allows.
add_library(testnet_withprof MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testnet_plugin.c ${CMAKE_CURRENT_SOURCE_DIR}/testprof_plugin.c)
target_include_directories(testnet_withprof PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(testnet_withprof PRIVATE TESTNET_VERSION=12 TESTNET_NAME="withprof" TESTPROF_VERSION=4
                           TESTPROF_NAME="netbuiltin")
target_compile_options(testnet_withprof PRIVATE -fvisibility=hidden)
set_target_properties(testnet_withprof PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-net-withprof
                      LIBRARY_OUTPUT_DIRECTORY ${TESTPROF_DIR})

add_executable(test_profiler_loader ${CMAKE_CURRENT_SOURCE_DIR}/test_profiler_loader.c ${CMAKE_CURRENT_SOURCE_DIR}/loader_check.c)
target_link_libraries(test_profiler_loader PRIVATE chorus_static)
add_dependencies(test_profiler_loader testprof_v1 testprof_v2 testprof_v3 testprof_v4 testprof_v5 testprof_v6
                 testprof_initfail testprof_default testnet_withprof testnet_v12 testnet_nosym)

add_executable(test_profiler ${CMAKE_CURRENT_SOURCE_DIR}/test_profiler.c ${CMAKE_SOURCE_DIR}/tools/launch.c)
target_include_directories(test_profiler BEFORE PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_SOURCE_DIR}/tools)
target_link_libraries(test_profiler PRIVATE chorus ${CMAKE_DL_LIBS} Threads::Threads)
set_target_properties(test_profiler PROPERTIES BUILD_RPATH "${CMAKE_BINARY_DIR}/lib")
add_dependencies(test_profiler testprof_v1 testprof_v2 testprof_v3 testprof_v4 testprof_v5 testprof_v6 testprof_nullctx)

foreach(v 1 2 3 4 5 6)
  set(PV${v} $<TARGET_FILE:testprof_v${v}>)
endforeach()
set(P_INITFAIL $<TARGET_FILE:testprof_initfail>)
set(P_NOSYM $<TARGET_FILE:testnet_nosym>)
set(P_WITHPROF $<TARGET_FILE:testnet_withprof>)
set(P_NET12 $<TARGET_FILE:testnet_v12>)

# chorus_prof_test(<name> PROF <NCCL_PROFILER_PLUGIN value or UNSET> [ENV k=v ...] ARGS <test_profiler_loader args>)
function(chorus_prof_test name)
  cmake_parse_arguments(T "" "PROF" "ENV;ARGS" ${ARGN})
  set(test plugins.profiler.${name})
  add_test(NAME ${test} COMMAND test_profiler_loader ${T_ARGS})
  set(prof_env "NCCL_PROFILER_PLUGIN=${T_PROF}")
  if(T_PROF STREQUAL "UNSET")
    set(prof_env "NCCL_PROFILER_PLUGIN=")
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT 30 ENVIRONMENT
    "${prof_env};NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,NET,PROFILE;NCCL_DEBUG_FILE=${TESTPROF_LOG_DIR}/profiler.${name}.log;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET=;CHORUS_PLUGIN_STRICT=0;${T_ENV}")
endfunction()

# Each version loads and reports its version; init's mask lands in the process-wide int.
foreach(v 1 2 3 4 5 6)
  chorus_prof_test(load.v${v} PROF ${PV${v}} ENV TESTPROF_MASK=0x1b
    ARGS open pick=testv${v} version=${v} mask=0x1b warns=0 "log=loaded profiler plugin 'testv${v}'")
endforeach()
chorus_prof_test(byname PROF testv3 ENV LD_LIBRARY_PATH=${TESTPROF_DIR}
  ARGS open pick=testv3 version=3 warns=0 "log=${TESTPROF_DIR}/libnccl-profiler-testv3.so (ABI v3)")
# Asked for and unusable: one WARN with the path and the reason; the communicator runs without one.
chorus_prof_test(fallback.missing PROF /nonexistent/libnccl-profiler-missing.so
  ARGS open again=1 null=1 warns=1 "log=/nonexistent/libnccl-profiler-missing.so: cannot open shared object file"
       "log=running without a profiler")
chorus_prof_test(fallback.missing_name PROF doesnotexist
  ARGS open null=1 warns=1 "log=libnccl-profiler-doesnotexist.so" "log=cannot use profiler plugin 'doesnotexist'")
chorus_prof_test(fallback.nosym PROF ${P_NOSYM}
  ARGS open null=1 warns=1 "log=profiler plugin '${P_NOSYM}': no ncclProfiler_v6..v1 symbol")
chorus_prof_test(fallback.initfail PROF ${P_INITFAIL}
  ARGS open again=1 null=1 warns=1 "log=profiler plugin '${P_INITFAIL}' (initfail, ABI v6): init returned 3")
# CHORUS_PLUGIN_STRICT=1: the same failures are errors of communicator init.
set(STRICT ENV CHORUS_PLUGIN_STRICT=1)
chorus_prof_test(strict.missing PROF /nonexistent/libnccl-profiler-missing.so ${STRICT}
  ARGS open rc=5 "err=cannot open shared object file" err=CHORUS_PLUGIN_STRICT)
chorus_prof_test(strict.nosym PROF ${P_NOSYM} ${STRICT} ARGS open rc=5 "err=no ncclProfiler_v6..v1 symbol")
chorus_prof_test(strict.initfail PROF ${P_INITFAIL} ${STRICT} ARGS open rc=5 "err=init returned 3")
chorus_prof_test(strict.ok PROF ${PV6} ${STRICT} ARGS open pick=testv6 warns=0)
# "none", and nothing asked for: no profiler, no WARN; libnccl-profiler.so when it is there.
chorus_prof_test(none PROF none ENV LD_LIBRARY_PATH=${TESTPROF_DEFAULT_DIR}
  ARGS open null=1 warns=0 "log=profiler plugins disabled" nolog=loaded)
chorus_prof_test(unset PROF UNSET ARGS open null=1 warns=0 "log=libnccl-profiler.so not found")
chorus_prof_test(unset.default PROF UNSET ENV LD_LIBRARY_PATH=${TESTPROF_DEFAULT_DIR}
  ARGS open pick=default version=5 warns=0 "log=${TESTPROF_DEFAULT_DIR}/libnccl-profiler.so (ABI v5)")
# Unset and no libnccl-profiler.so: the net plugin library the communicator uses is searched.
chorus_prof_test(netlib PROF UNSET ENV NCCL_NET_PLUGIN=${P_WITHPROF}
  ARGS open net=1 again=1 pick=netbuiltin version=4 warns=0
       "log=loaded profiler plugin 'netbuiltin' from ${P_WITHPROF} (the net plugin's library) (ABI v4)")
chorus_prof_test(netlib.none PROF UNSET ENV NCCL_NET_PLUGIN=${P_NET12}
  ARGS open net=1 null=1 warns=0 "log=has no ncclProfiler_v6..v1 symbol")
chorus_prof_test(netlib.not_when_set PROF doesnotexist ENV NCCL_NET_PLUGIN=${P_WITHPROF}
  ARGS open net=1 null=1 warns=1 nolog=netbuiltin)
chorus_prof_test(describe PROF ${PV4} ARGS describe "out=${PV4}: name testv4, ABI v4")
chorus_prof_test(describe.none PROF none ARGS describe "out=none: profiler plugins disabled")

# The event points, end to end: collectives on 3 ranks (each its own host, so through the net
# plugin, whose own events come back as NetPlugin events) under each version's test profiler, which
# checks every event, parent, state and descriptor as its version lays them out. Then on one host
# (shared memory), and with the mask off (loaded, no event).
set(TESTPROF_EXPECT "AllReduce=2,AllGather=1,Broadcast=1,ReduceScatter=1,Send=1,Recv=1")
function(chorus_prof_run name prof)
  add_test(NAME plugins.profiler.${name} COMMAND test_profiler ${ARGN})
  set_tests_properties(plugins.profiler.${name} PROPERTIES TIMEOUT 60 PROCESSORS 2 ENVIRONMENT
    "NCCL_PROFILER_PLUGIN=${prof};TESTPROF_EXPECT=${TESTPROF_EXPECT};TESTPROF_COMMNAME=proftest;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;NCCL_NET=;CHORUS_PLUGIN_STRICT=1")
endfunction()
foreach(v 1 2 3 4 5 6)
  chorus_prof_run(ranks.v${v} ${PV${v}} 3 3 events=40)
endforeach()
chorus_prof_run(ranks.v6.shm ${PV6} 3 1 events=40)
chorus_prof_run(ranks.v6.masked ${PV6} 2 2 none=1)
set_tests_properties(plugins.profiler.ranks.v6.masked PROPERTIES ENVIRONMENT
  "NCCL_PROFILER_PLUGIN=${PV6};TESTPROF_MASK=0;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;NCCL_NET=")
# A peer dies in the middle of an AllReduce: the survivors' events are all stopped all the same.
chorus_prof_run(ranks.v6.deadpeer ${PV6} 2 2 die=1 events=5)
set_tests_properties(plugins.profiler.ranks.v6.deadpeer PROPERTIES ENVIRONMENT
  "NCCL_PROFILER_PLUGIN=${PV6};TESTPROF_PARTIAL_OK=1;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;NCCL_NET=;CHORUS_TIMEOUT=20")
# Masks that leave out the parents (NVIDIA's example profiler suggests 8, ProxyOp): each event still
# comes with its parent, up to GroupApi, as NCCL creates the ancestors of every event it creates.
foreach(case "6 2" "6 8" "6 16" "6 0x204" "5 2" "4 2" "3 8")
  string(REPLACE " " ";" case "${case}")
  list(GET case 0 v)
  list(GET case 1 m)
  chorus_prof_run(ranks.v${v}.mask${m} ${PV${v}} 2 2 events=10)
  set_tests_properties(plugins.profiler.ranks.v${v}.mask${m} PROPERTIES ENVIRONMENT
    "NCCL_PROFILER_PLUGIN=${PV${v}};TESTPROF_MASK=${m};TESTPROF_EXPECT=;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET_PLUGIN=;NCCL_NET=;CHORUS_PLUGIN_STRICT=1")
endforeach()
# A profiler whose init leaves its context NULL (NVIDIA's Inspector without a CUDA driver) gets no
# finalize: the stand-in aborts on finalize(NULL).
chorus_prof_run(ranks.nullctx $<TARGET_FILE:testprof_nullctx> 2 2 declined=1)
