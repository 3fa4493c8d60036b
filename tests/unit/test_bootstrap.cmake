# SPDX-License-Identifier: BSD-3-Clause
# Bootstrap tests: one process per scenario, each forking its ranks on loopback. test_bootstrap runs
# ranks that should succeed, test_bootstrap_bad bad clients; both share bootstrap_kids.c.
# Short timeouts so that the failure scenarios (which wait for a timeout on purpose) stay fast; they
# are timing windows too (the root waits CHORUS_BOOTSTRAP_TIMEOUT s for the last rank), so they scale
# with the build like the test's own windows.
math(EXPR CHORUS_BS_TEST_BOOTSTRAP_TIMEOUT "3 * ${CHORUS_TIME_SCALE}")
math(EXPR CHORUS_BS_TEST_TIMEOUT "5 * ${CHORUS_TIME_SCALE}")
foreach(target test_bootstrap test_bootstrap_bad)
  target_sources(${target} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/bootstrap_kids.c)
endforeach()
foreach(entry rendezvous:test_bootstrap concurrent_roots:test_bootstrap p2p:test_bootstrap
              p2p_failures:test_bootstrap wrong_secret:test_bootstrap_bad garbage:test_bootstrap_bad
              exit_during_init:test_bootstrap_bad bad_rank:test_bootstrap_bad out_of_range:test_bootstrap_bad
              missing:test_bootstrap_bad bad_id:test_bootstrap_bad)
  string(REPLACE ":" ";" parts ${entry})
  list(GET parts 0 case)
  list(GET parts 1 binary)
  add_test(NAME unit.bootstrap.${case} COMMAND ${binary} ${case})
  set_tests_properties(unit.bootstrap.${case} PROPERTIES TIMEOUT 60
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=${CHORUS_BS_TEST_BOOTSTRAP_TIMEOUT};CHORUS_TIMEOUT=${CHORUS_BS_TEST_TIMEOUT};NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=")
endforeach()
