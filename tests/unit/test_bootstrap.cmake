# Bootstrap tests: one process per scenario, each forking its ranks on loopback.
# Short timeouts so that the failure scenarios (which wait for a timeout on purpose) stay fast.
foreach(case rendezvous concurrent_roots p2p p2p_failures wrong_secret garbage exit_during_init bad_rank
             out_of_range missing bad_id)
  add_test(NAME unit.bootstrap.${case} COMMAND test_bootstrap ${case})
  set_tests_properties(unit.bootstrap.${case} PROPERTIES TIMEOUT 60
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=3;CHORUS_TIMEOUT=5;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=")
endforeach()
