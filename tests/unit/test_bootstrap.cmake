# Bootstrap tests: one process per scenario, each forking its ranks on loopback.
# Short timeouts so that the failure scenarios (which wait for a timeout on purpose) stay fast; they
# are timing windows too (the root waits CHORUS_BOOTSTRAP_TIMEOUT s for the last rank), so they scale
# with the build like the test's own windows.
math(EXPR CHORUS_BS_TEST_BOOTSTRAP_TIMEOUT "3 * ${CHORUS_TIME_SCALE}")
math(EXPR CHORUS_BS_TEST_TIMEOUT "5 * ${CHORUS_TIME_SCALE}")
foreach(case rendezvous concurrent_roots p2p p2p_failures wrong_secret garbage exit_during_init bad_rank
             out_of_range missing bad_id)
  add_test(NAME unit.bootstrap.${case} COMMAND test_bootstrap ${case})
  set_tests_properties(unit.bootstrap.${case} PROPERTIES TIMEOUT 60
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=${CHORUS_BS_TEST_BOOTSTRAP_TIMEOUT};CHORUS_TIMEOUT=${CHORUS_BS_TEST_TIMEOUT};NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=")
endforeach()
