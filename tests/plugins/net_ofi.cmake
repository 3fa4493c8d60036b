# SPDX-License-Identifier: BSD-3-Clause
# Tests of the libfabric net plugin libnccl-net-chorus-ofi.so (plugins/net_ofi), over the tcp;ofi_rxm provider
# on loopback. Each test skips (77) with the reason when that provider cannot be opened here.
# Included by tests/plugins/CMakeLists.txt; the global property keeps a second include harmless.
get_property(ofi_tests_added GLOBAL PROPERTY CHORUS_NET_OFI_TESTS_ADDED)
if(ofi_tests_added OR NOT TARGET nccl-net-chorus-ofi)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_NET_OFI_TESTS_ADDED TRUE)

add_executable(test_net_ofi ${CMAKE_SOURCE_DIR}/plugins/net_ofi/tests/test_net_ofi.c)
target_include_directories(test_net_ofi BEFORE PRIVATE ${CMAKE_SOURCE_DIR}/core/include)
# The harness shared with the other net plugins' test programs (plugins/net_common/tests).
target_link_libraries(test_net_ofi PRIVATE chorus_net_test_harness Threads::Threads ${CMAKE_DL_LIBS})
add_dependencies(test_net_ofi nccl-net-chorus-ofi)

set(OFI_LIB $<TARGET_FILE:nccl-net-chorus-ofi>)
set(OFI_ENV "FI_PROVIDER=tcp\\;ofi_rxm;CHORUS_OFI_DOMAIN=lo;HOME=${CMAKE_CURRENT_BINARY_DIR}")
set(OFI_IF sh ${CMAKE_SOURCE_DIR}/plugins/net_ofi/tests/if_provider.sh $<TARGET_FILE:test_net_ofi> ${OFI_LIB} --)

# The plugin's own program: one ctest per case and ABI version.
function(ofi_add_test name case)
  cmake_parse_arguments(T "" "VERSION" "ENV" ${ARGN})
  if(NOT T_VERSION)
    set(T_VERSION 12)
  endif()
  add_test(NAME plugins.net_ofi.${name} COMMAND test_net_ofi ${OFI_LIB} ${case} ${T_VERSION})
  set_tests_properties(plugins.net_ofi.${name} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                       ENVIRONMENT "${OFI_ENV};${T_ENV}")
endfunction()
foreach(case sizes bigrecv fork inflight threads grouped badtag overflow kill_sender kill_receiver strangers badhandle)
  ofi_add_test(${case} ${case})
endforeach()
ofi_add_test(flush flush ENV "CHORUS_OFI_FORCE_FLUSH=1")
ofi_add_test(cuda cuda) # skips without a GPU, or where the provider has no FI_HMEM
ofi_add_test(grouped_v8 grouped VERSION 8)
# The provider's queues cut to 4 sends and 4 receives: requests wait inside the plugin and go out as
# room appears, so the ABI's 32 receives / 256 sends and grouped receives still complete.
foreach(case inflight grouped sizes)
  ofi_add_test(${case}_shortqueue ${case} ENV "FI_OFI_RXM_TX_SIZE=4;FI_OFI_RXM_RX_SIZE=4")
endforeach()
foreach(v 8 9 10 11 12)
  ofi_add_test(v${v} version VERSION ${v})
endforeach()
# Over tcp the plugin runs a progress thread on each of 4 endpoints by default where the process has
# 8 CPUs or more (none on the 2-core CI machines), so the cases above run either way: each also runs
# with threads and without them, explicitly, on the endpoint counts each mode defaults to and others.
foreach(case sizes bigrecv inflight threads grouped badtag overflow fork kill_sender kill_receiver strangers badhandle)
  ofi_add_test(${case}_thr ${case} ENV "CHORUS_OFI_PROGRESS_THREADS=1")
  ofi_add_test(${case}_thr_eps1 ${case} ENV "CHORUS_OFI_PROGRESS_THREADS=1;CHORUS_OFI_ENDPOINTS=1")
  ofi_add_test(${case}_nothr ${case} ENV "CHORUS_OFI_PROGRESS_THREADS=0")
  ofi_add_test(${case}_nothr_eps3 ${case} ENV "CHORUS_OFI_PROGRESS_THREADS=0;CHORUS_OFI_ENDPOINTS=3")
endforeach()
ofi_add_test(inflight_thr_shortqueue inflight ENV "CHORUS_OFI_PROGRESS_THREADS=1;FI_OFI_RXM_TX_SIZE=4;FI_OFI_RXM_RX_SIZE=4")
ofi_add_test(flush_thr flush ENV "CHORUS_OFI_PROGRESS_THREADS=1;CHORUS_OFI_FORCE_FLUSH=1")
foreach(case inflight grouped sizes)
  ofi_add_test(${case}_nothr_shortqueue ${case} ENV "CHORUS_OFI_PROGRESS_THREADS=0;FI_OFI_RXM_TX_SIZE=4;FI_OFI_RXM_RX_SIZE=4")
endforeach()
ofi_add_test(flush_nothr flush ENV "CHORUS_OFI_PROGRESS_THREADS=0;CHORUS_OFI_FORCE_FLUSH=1")
# The process exits (status 42) from inside the plugin's call that reports the killed sender, with the
# endpoint's lock held, as a provider's SIGSEGV handler that calls exit does: the plugin's exit-time
# stop of its progress threads must not wait for that lock forever (a hang is the test's timeout).
foreach(mode thr_eps1 nothr)
  if(mode STREQUAL "thr_eps1")
    set(exit_env "CHORUS_OFI_PROGRESS_THREADS=1;CHORUS_OFI_ENDPOINTS=1")
  else()
    set(exit_env "CHORUS_OFI_PROGRESS_THREADS=0")
  endif()
  add_test(NAME plugins.net_ofi.exit_at_warn_${mode} COMMAND sh -c
           "\"$@\"; s=$?; [ $s = 42 ] && exit 0; [ $s = ${CHORUS_SKIP_CODE} ] && exit $s; echo \"exit status $s, expected 42\"; exit 1"
           -- $<TARGET_FILE:test_net_ofi> ${OFI_LIB} kill_sender 12)
  set_tests_properties(plugins.net_ofi.exit_at_warn_${mode} PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                       ENVIRONMENT "${OFI_ENV};${exit_env};NT_EXIT_AT_WARN=42")
endforeach()

# chorus-netcheck drives it as a core does (several comms, depths, grouped receives, churn), as ABI v12
# and through Chorus's v8 adapter; the first one also prints the table against raw TCP.
if(TARGET chorus-netcheck)
  function(ofi_netcheck name)
    cmake_parse_arguments(T "" "" "HAS;ARGS" ${ARGN})
    set(has "")
    foreach(h ${T_HAS})
      list(APPEND has --has ${h})
    endforeach()
    add_test(NAME plugins.netcheck.ofi_${name} COMMAND ${OFI_IF} ${CHORUS_EXPECT_OUTPUT} --has "^result: PASS"
             --lacks "^  FAIL" ${has} -- $<TARGET_FILE:chorus-netcheck> ${T_ARGS} ${OFI_LIB})
    set_tests_properties(plugins.netcheck.ofi_${name} PROPERTIES TIMEOUT 240 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                         ENVIRONMENT "${OFI_ENV};NCCL_DEBUG=WARN")
  endfunction()
  ofi_netcheck(v12 HAS "name OFI, ABI v12" "^bandwidth, rank 0 -> rank 1" "PASS +recv\\.grouped"
               ARGS --scale 2 --perf-bytes 8M --baseline --time-limit 200)
  ofi_netcheck(v8 HAS "name OFI, ABI v8" ARGS --no-perf --abi 8 --scale 1 --time-limit 200)
  ofi_netcheck(forceflush ARGS --no-perf --scale 1 --time-limit 200 -s "CHORUS_OFI_FORCE_FLUSH=1")
  ofi_netcheck(endpoints3 ARGS --no-perf --scale 2 --time-limit 200 -s "CHORUS_OFI_ENDPOINTS=3")
  ofi_netcheck(threads ARGS --no-perf --scale 2 --time-limit 200 -s "CHORUS_OFI_PROGRESS_THREADS=1"
               -s "CHORUS_OFI_PROGRESS_THREADS=0")
endif()

# Collectives through Chorus with NCCL_NET_PLUGIN=chorus-ofi, every rank its own (acted-out) host and its own
# process, so all traffic crosses the plugin; strict, so a plugin that fails to load cannot fall back
# to another. The log line proves which plugin carried it.
set(OFI_RANKS_ENV "${OFI_ENV};NCCL_NET_PLUGIN=chorus-ofi;CHORUS_PLUGIN_STRICT=1;CHORUS_TIMEOUT=30;NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT")
foreach(n 2 3 4)
  set(tests "")
  foreach(coll broadcast reduce allgather reducescatter gather scatter alltoall sendrecv)
    add_test(NAME ranks.ofi.${coll}.n${n}.hosts COMMAND ${OFI_IF} ${CHORUS_EXPECT_OUTPUT}
             --has "uses net plugin OFI" --lacks "unknown variable" -- $<TARGET_FILE:test_colls> ${coll} ${n} --hosts ${n}
             --medium 300K --big 4M --timeout 100)
    list(APPEND tests ranks.ofi.${coll}.n${n}.hosts)
  endforeach()
  add_test(NAME ranks.ofi.allreduce.n${n}.hosts COMMAND ${OFI_IF} ${CHORUS_EXPECT_OUTPUT}
           --has "uses net plugin OFI" --lacks "unknown variable" -- $<TARGET_FILE:test_allreduce> ${n} --hosts ${n} --medium 1M --big 16M
           --timeout 100)
  list(APPEND tests ranks.ofi.allreduce.n${n}.hosts)
  set_tests_properties(${tests} PROPERTIES TIMEOUT ${CHORUS_TEST_TIMEOUT} PROCESSORS 2
                       SKIP_RETURN_CODE ${CHORUS_SKIP_CODE} ENVIRONMENT "${OFI_RANKS_ENV}")
endforeach()

# A 3-rank all-reduce on two channels through one endpoint setting (ENV): the log must show the
# endpoints (and threads) asked for (EXPECT: "--has"/"--lacks" pairs).
function(ofi_allreduce_variant name)
  cmake_parse_arguments(V "" "" "ENV;EXPECT" ${ARGN})
  add_test(NAME ranks.ofi.allreduce.n3.hosts.${name} COMMAND ${OFI_IF} ${CHORUS_EXPECT_OUTPUT}
           --has "uses net plugin OFI" ${V_EXPECT} --lacks "unknown variable"
           -- $<TARGET_FILE:test_allreduce> 3 --hosts 3 --medium 1M --big 16M --timeout 100)
  set_tests_properties(ranks.ofi.allreduce.n3.hosts.${name} PROPERTIES TIMEOUT ${CHORUS_TEST_TIMEOUT} PROCESSORS 2
                       SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                       ENVIRONMENT "${OFI_RANKS_ENV};NCCL_DEBUG_SUBSYS=INIT,NET;${V_ENV};NCCL_MIN_NCHANNELS=2;NCCL_MAX_NCHANNELS=2")
endfunction()
# Three endpoints per device (more connections than endpoints); progress threads on 3 endpoints (the
# bytes of Chorus's net proxy move on the plugin's threads); none (inside the proxy's own calls,
# every endpoint under the device's lock).
ofi_allreduce_variant(eps3 ENV CHORUS_OFI_ENDPOINTS=3 EXPECT --has "device lo: 3 endpoints open")
ofi_allreduce_variant(thr ENV CHORUS_OFI_PROGRESS_THREADS=1 CHORUS_OFI_ENDPOINTS=3
                      EXPECT --has "device lo: 3 endpoints open .*a progress thread each")
ofi_allreduce_variant(nothr ENV CHORUS_OFI_PROGRESS_THREADS=0
                      EXPECT --has "device lo: 1 endpoint open" --lacks "progress thread")

# A rank SIGKILLs itself mid all-reduce (tests/ranks/test_kill.c): every survivor gets an error and
# aborts. CHORUS_TIMEOUT is far above the plugin's probe (1 s + 5 s), so the errors come from the
# plugin seeing the dead peer (within --deadline 30 s), not from Chorus's own deadline.
add_test(NAME ranks.ofi.kill.n4.hosts COMMAND ${OFI_IF} $<TARGET_FILE:test_kill> 4 2 --hosts 4 --deadline 30)
set_tests_properties(ranks.ofi.kill.n4.hosts PROPERTIES TIMEOUT 120 PROCESSORS 2 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                     ENVIRONMENT "${OFI_ENV};NCCL_NET_PLUGIN=chorus-ofi;CHORUS_PLUGIN_STRICT=1;CHORUS_TIMEOUT=60")
foreach(thr 0 1)
  add_test(NAME ranks.ofi.kill.n4.hosts.thr${thr} COMMAND ${OFI_IF} $<TARGET_FILE:test_kill> 4 2 --hosts 4 --deadline 30)
  set_tests_properties(ranks.ofi.kill.n4.hosts.thr${thr} PROPERTIES TIMEOUT 120 PROCESSORS 2 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                       ENVIRONMENT "${OFI_ENV};NCCL_NET_PLUGIN=chorus-ofi;CHORUS_PLUGIN_STRICT=1;CHORUS_TIMEOUT=60;CHORUS_OFI_PROGRESS_THREADS=${thr}")
endforeach()

# A receive that timed out (CHORUS_TIMEOUT) while posted straight into the user's buffer
# (core/exec/direct.h): with progress threads the provider completes a posted receive without being
# asked, so only closing the link (which cancels it) keeps the late data out of the buffer.
add_test(NAME ranks.ofi.comm.latesend.n2.hosts.thr1 COMMAND ${OFI_IF} $<TARGET_FILE:test_comm> latesend 2 2)
set_tests_properties(ranks.ofi.comm.latesend.n2.hosts.thr1 PROPERTIES TIMEOUT 120 SKIP_RETURN_CODE ${CHORUS_SKIP_CODE}
                     ENVIRONMENT "${OFI_ENV};NCCL_NET_PLUGIN=chorus-ofi;CHORUS_PLUGIN_STRICT=1;CHORUS_TIMEOUT=20;CHORUS_OFI_PROGRESS_THREADS=1")
