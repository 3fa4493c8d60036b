# SPDX-License-Identifier: BSD-3-Clause
# ABI conformance tests of the tuner plugin loader (core/plugin/tuner*.c) and of the planner's use of
# a tuner (core/plan/tuner_hook.c): tiny test tuners, one per ABI version and a few broken ones,
# driven by test_tuner_loader. Each scenario is its own process; its environment is set here.
# Included by tests/plugins/CMakeLists.txt (after the net test plugins, which some scenarios use).

set(TESTTUNER_DIR ${CMAKE_CURRENT_BINARY_DIR}/tunerlib)
set(TESTTUNER_DEFAULT_DIR ${CMAKE_CURRENT_BINARY_DIR}/tunerdefault) # holds a libnccl-tuner.so
set(TESTTUNER_LOG_DIR ${CMAKE_CURRENT_BINARY_DIR}/log)
file(MAKE_DIRECTORY ${TESTTUNER_LOG_DIR})

# A test tuner: a module named libnccl-tuner-<name>.so that exports only its ncclTunerPlugin_vN
# (and testTunerStats for the tests).
function(chorus_test_tuner target name version)
  add_library(${target} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testtuner_plugin.c)
  target_include_directories(${target} PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR})
  target_compile_definitions(${target} PRIVATE TESTTUNER_VERSION=${version} TESTTUNER_NAME="${name}" ${ARGN})
  target_compile_options(${target} PRIVATE -fvisibility=hidden)
  set_target_properties(${target} PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-tuner-${name}
                        LIBRARY_OUTPUT_DIRECTORY ${TESTTUNER_DIR})
endfunction()

foreach(v 2 3 4 5 6)
  chorus_test_tuner(testtuner_v${v} testv${v} ${v})
endforeach()
chorus_test_tuner(testtuner_initfail initfail 6 TESTTUNER_INIT_FAIL)
chorus_test_tuner(testtuner_initfail_v3 initfailv3 3 TESTTUNER_INIT_FAIL)
chorus_test_tuner(testtuner_nullslot nullslot 4 TESTTUNER_NULL_SLOT)
# The default name libnccl-tuner.so, in a folder of its own (found through LD_LIBRARY_PATH).
chorus_test_tuner(testtuner_default default 6)
set_target_properties(testtuner_default PROPERTIES OUTPUT_NAME nccl-tuner LIBRARY_OUTPUT_DIRECTORY ${TESTTUNER_DEFAULT_DIR})
add_library(testtuner_old MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testtuner_old.c)
set_target_properties(testtuner_old PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-tuner-old LIBRARY_OUTPUT_DIRECTORY ${TESTTUNER_DIR})
# A net plugin library that also carries a tuner (v5), as NCCL allows.
add_library(testnet_withtuner MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testnet_plugin.c ${CMAKE_CURRENT_SOURCE_DIR}/testtuner_plugin.c)
target_include_directories(testnet_withtuner PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_definitions(testnet_withtuner PRIVATE TESTNET_VERSION=12 TESTNET_NAME="withtuner" TESTTUNER_VERSION=5
                           TESTTUNER_NAME="netbuiltin")
target_compile_options(testnet_withtuner PRIVATE -fvisibility=hidden)
set_target_properties(testnet_withtuner PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-net-withtuner
                      LIBRARY_OUTPUT_DIRECTORY ${TESTTUNER_DIR})

add_executable(test_tuner_loader ${CMAKE_CURRENT_SOURCE_DIR}/test_tuner_loader.c ${CMAKE_CURRENT_SOURCE_DIR}/loader_check.c)
target_link_libraries(test_tuner_loader PRIVATE chorus_static)
target_include_directories(test_tuner_loader PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(test_tuner_loader testtuner_v2 testtuner_v3 testtuner_v4 testtuner_v5 testtuner_v6 testtuner_initfail
                 testtuner_initfail_v3 testtuner_nullslot testtuner_default testtuner_old testnet_withtuner testnet_v12
                 testnet_nosym)

foreach(v 2 3 4 5 6)
  set(TV${v} $<TARGET_FILE:testtuner_v${v}>)
endforeach()
set(T_INITFAIL $<TARGET_FILE:testtuner_initfail>)
set(T_NULLSLOT $<TARGET_FILE:testtuner_nullslot>)
set(T_OLD $<TARGET_FILE:testtuner_old>)
set(T_NOSYM $<TARGET_FILE:testnet_nosym>)
set(T_WITHTUNER $<TARGET_FILE:testnet_withtuner>)
set(T_NET12 $<TARGET_FILE:testnet_v12>)

# chorus_tuner_test(<name> TUNER <NCCL_TUNER_PLUGIN value or UNSET> [ENV k=v ...] ARGS <test_tuner_loader args>)
function(chorus_tuner_test name)
  cmake_parse_arguments(T "" "TUNER" "ENV;ARGS" ${ARGN})
  set(test plugins.tuner.${name})
  add_test(NAME ${test} COMMAND test_tuner_loader ${T_ARGS})
  set(tuner_env "NCCL_TUNER_PLUGIN=${T_TUNER}")
  if(T_TUNER STREQUAL "UNSET")
    set(tuner_env "NCCL_TUNER_PLUGIN=")
  endif()
  # HOME points here so no user config file leaks in.
  set_tests_properties(${test} PROPERTIES TIMEOUT 30 ENVIRONMENT
    "${tuner_env};NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,NET,TUNING;NCCL_DEBUG_FILE=${TESTTUNER_LOG_DIR}/tuner.${name}.log;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET=;NCCL_ALGO=;NCCL_PROTO=;CHORUS_PLUGIN_STRICT=0;${T_ENV}")
endfunction()

# Each ABI version loads, reports its version, and gets every argument as the ABI says.
foreach(v 2 3 4 5 6)
  chorus_tuner_test(abi.v${v} TUNER ${TV${v}} ARGS abi ${v})
endforeach()

# A bare name resolves to libnccl-tuner-<name>.so through the loader search path.
chorus_tuner_test(byname TUNER testv5 ENV LD_LIBRARY_PATH=${TESTTUNER_DIR}
  ARGS open pick=testv5 version=5 warns=0 "log=loaded tuner plugin 'testv5' from ${TESTTUNER_DIR}/libnccl-tuner-testv5.so (ABI v5)")

# A tuner that was asked for and cannot be used: one WARN with the path and the exact reason, then
# the communicator plans without a tuner. Repeats (again=1) stay quiet.
chorus_tuner_test(fallback.missing TUNER /nonexistent/libnccl-tuner-missing.so
  ARGS open again=1 null=1 warns=1 "log=/nonexistent/libnccl-tuner-missing.so: cannot open shared object file"
       "log=planning with the core's own cost model")
chorus_tuner_test(fallback.missing_name TUNER doesnotexist
  ARGS open null=1 warns=1 "log=libnccl-tuner-doesnotexist.so" "log=cannot use tuner plugin 'doesnotexist'")
chorus_tuner_test(fallback.nosym TUNER ${T_NOSYM}
  ARGS open null=1 warns=1 "log=tuner plugin '${T_NOSYM}': no ncclTunerPlugin_v6..v2 symbol")
chorus_tuner_test(fallback.old TUNER ${T_OLD}
  ARGS open null=1 warns=1 "log=it exports ncclTunerPlugin_v1, an ABI older than Chorus supports")
chorus_tuner_test(fallback.nullslot TUNER ${T_NULLSLOT}
  ARGS open null=1 warns=1 "log=its ncclTunerPlugin_v4 table has a NULL getCollInfo slot")
chorus_tuner_test(fallback.initfail TUNER ${T_INITFAIL}
  ARGS open again=1 null=1 warns=1 "log=tuner plugin '${T_INITFAIL}' (initfail, ABI v6): init returned 3")
chorus_tuner_test(fallback.initfail_v3 TUNER initfailv3 ENV LD_LIBRARY_PATH=${TESTTUNER_DIR}
  ARGS open null=1 warns=1
       "log=tuner plugin 'initfailv3' (${TESTTUNER_DIR}/libnccl-tuner-initfailv3.so: initfailv3, ABI v3): init returned 3")
chorus_tuner_test(fallback.static TUNER STATIC_PLUGIN
  ARGS open null=1 warns=1 "log=(main program)" "log=no ncclTunerPlugin_v6..v2 symbol")

# CHORUS_PLUGIN_STRICT=1: the same failures are errors with a clear last error.
set(STRICT ENV CHORUS_PLUGIN_STRICT=1)
chorus_tuner_test(strict.missing TUNER /nonexistent/libnccl-tuner-missing.so ${STRICT}
  ARGS open rc=5 warns=1 "err=cannot open shared object file" err=CHORUS_PLUGIN_STRICT)
chorus_tuner_test(strict.nosym TUNER ${T_NOSYM} ${STRICT}
  ARGS open rc=5 "err=no ncclTunerPlugin_v6..v2 symbol" err=${T_NOSYM})
chorus_tuner_test(strict.initfail TUNER ${T_INITFAIL} ${STRICT} ARGS open rc=5 "err=init returned 3")
chorus_tuner_test(strict.ok TUNER ${TV6} ${STRICT} ARGS open pick=testv6 warns=0)

# "none", and nothing asked for: no tuner, no WARN.
chorus_tuner_test(none TUNER none ENV LD_LIBRARY_PATH=${TESTTUNER_DEFAULT_DIR}
  ARGS open null=1 warns=0 "log=tuner plugins disabled" nolog=loaded)
chorus_tuner_test(unset TUNER UNSET ARGS open null=1 warns=0 "log=libnccl-tuner.so not found"
  "log=no net plugin library to search")
chorus_tuner_test(unset.default TUNER UNSET ENV LD_LIBRARY_PATH=${TESTTUNER_DEFAULT_DIR}
  ARGS open pick=default version=6 warns=0 "log=${TESTTUNER_DEFAULT_DIR}/libnccl-tuner.so (ABI v6)")

# Unset and no libnccl-tuner.so: the net plugin library the communicator uses is searched.
chorus_tuner_test(netlib TUNER UNSET ENV NCCL_NET_PLUGIN=${T_WITHTUNER}
  ARGS open net=1 again=1 pick=netbuiltin version=5 warns=0
       "log=loaded tuner plugin 'netbuiltin' from ${T_WITHTUNER} (the net plugin's library) (ABI v5)")
chorus_tuner_test(netlib.none TUNER UNSET ENV NCCL_NET_PLUGIN=${T_NET12}
  ARGS open net=1 null=1 warns=0 "log=has no ncclTunerPlugin_v6..v2 symbol")
# libnccl-tuner.so comes first; a set NCCL_TUNER_PLUGIN never falls back to the net library.
chorus_tuner_test(netlib.default_first TUNER UNSET ENV NCCL_NET_PLUGIN=${T_WITHTUNER} LD_LIBRARY_PATH=${TESTTUNER_DEFAULT_DIR}
  ARGS open net=1 pick=default version=6 warns=0)
chorus_tuner_test(netlib.not_when_set TUNER doesnotexist ENV NCCL_NET_PLUGIN=${T_WITHTUNER}
  ARGS open net=1 null=1 warns=1 nolog=netbuiltin)

# chorus-info's view.
chorus_tuner_test(describe TUNER ${TV4} ARGS describe "out=${TV4}: name testv4, ABI v4")
chorus_tuner_test(describe.unset TUNER UNSET ARGS describe "out=no libnccl-tuner.so (tried libnccl-tuner.so"
  "out=net plugin library is searched")
chorus_tuner_test(describe.none TUNER none ARGS describe "out=none: tuner plugins disabled")
chorus_tuner_test(describe.nosym TUNER ${T_NOSYM} ARGS describe "out=not usable" "out=no ncclTunerPlugin_v6..v2 symbol")

# The planner with a tuner (a fake 4-rank communicator on one host): the choice is used, with the
# right arguments; answers that cannot run are refused (one WARN per communicator and collective)
# or, strict, fail the call.
foreach(v 2 3 4 5 6)
  set(P TUNER ${TV${v}})
  # The model picks RING for 1 MB on 4 ranks and TREE for 64 bytes on 8: force the other one.
  chorus_tuner_test(plan.v${v}.tree ${P} ARGS plan count=262144 force=TREE/SIMPLE expect=TREE/SIMPLE nch=4
    "usable=TREE/SIMPLE,RING/SIMPLE" warns=0)
  chorus_tuner_test(plan.v${v}.ring ${P} ARGS plan nranks=8 count=16 force=RING/SIMPLE channels=3 expect=RING/SIMPLE
    nch=3 warns=0)
  chorus_tuner_test(plan.v${v}.allgather ${P} ARGS plan func=allgather count=1000 nbytes=16000 expect=RING/SIMPLE
    "usable=RING/SIMPLE" nch=1 warns=0)
  chorus_tuner_test(plan.v${v}.unrunnable ${P} ARGS plan calls=3 count=262144 force=RING/LL expect=RING/SIMPLE warns=1)
endforeach()
set(P TUNER ${TV6})
chorus_tuner_test(plan.refuse.enabled ${P} ARGS plan calls=2 func=allgather force=TREE/SIMPLE expect=RING/SIMPLE
  warns=1 "log=it set TREE/SIMPLE to 0, an entry that was -1 (cannot be used, Chorus cannot run it for this call)"
  "log=using Chorus's own choice")
chorus_tuner_test(plan.refuse.algo_setting ${P} ENV NCCL_ALGO=ring ARGS plan count=16 nranks=8 force=TREE/SIMPLE
  expect=RING/SIMPLE "usable=RING/SIMPLE" warns=1 "log=removed by NCCL_ALGO")
chorus_tuner_test(plan.refuse.forbid_all ${P} ARGS plan calls=2 forbid=1 count=262144 expect=RING/SIMPLE warns=1
  "log=it left no entry that can run")
chorus_tuner_test(plan.refuse.error ${P} ARGS plan calls=2 fail=1 count=262144 expect=RING/SIMPLE warns=1
  "log=getCollInfo returned error 3")
chorus_tuner_test(plan.refuse.channels ${P} ARGS plan channels=-2 count=262144 expect=RING/SIMPLE nch=1 warns=1
  "log=it asked for -2 channels")
chorus_tuner_test(plan.strict.error ${P} ${STRICT} ARGS plan fail=1 rc=5 warns=1 "err=getCollInfo returned error 3"
  err=CHORUS_PLUGIN_STRICT)
chorus_tuner_test(plan.strict.enabled ${P} ${STRICT} ARGS plan force=RING/LL128 rc=5 warns=1 "err=RING/LL128"
  err=CHORUS_PLUGIN_STRICT)
chorus_tuner_test(plan.v2.strict TUNER ${TV2} ${STRICT} ARGS plan force=RING/LL rc=5 warns=1
  "err=it chose algorithm 1 (RING) protocol 0 (LL), which cannot run for this call" err=CHORUS_PLUGIN_STRICT)
# NCCL_ALGO / NCCL_PROTO entries are -1 before the tuner sees the table; channels above NCCL_MAX_NCHANNELS are capped.
chorus_tuner_test(plan.algo_setting ${P} ENV NCCL_ALGO=tree ARGS plan count=262144 expect=TREE/SIMPLE
  "usable=TREE/SIMPLE" warns=0)
chorus_tuner_test(plan.channels_capped ${P} ARGS plan count=262144 force=RING/SIMPLE channels=9 nch=4 warns=0)
# v6 getChunkSize: called with the choice; the size is clamped to [4 KiB, the staging slot].
chorus_tuner_test(plan.chunk ${P} ARGS plan count=262144 force=RING/SIMPLE chunk=8192 chunkelems=2048 warns=0)
chorus_tuner_test(plan.chunk.big ${P} ENV NCCL_BUFFSIZE=1048576 ARGS plan count=262144 chunk=1073741824
  chunkelems=32768 warns=0)
chorus_tuner_test(plan.chunk.small ${P} ARGS plan count=262144 chunk=3 chunkelems=1024 warns=0)
chorus_tuner_test(plan.chunk.error ${P} ARGS plan count=262144 failchunk=1 chunkelems=131072 warns=1
  "log=getChunkSize returned error 3")
chorus_tuner_test(plan.v5.nochunk TUNER ${TV5} ARGS plan count=262144 chunk=8192 chunkelems=131072 warns=0)
