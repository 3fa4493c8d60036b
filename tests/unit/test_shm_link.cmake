# SPDX-License-Identifier: BSD-3-Clause
# shm transport: one process per scenario (see test_shm_link.c). CHORUS_TIMEOUT is long on purpose:
# a dead peer must be reported by the link itself, well before the executor's backstop.
foreach(case data flow kill_sender kill_receiver close byref byref_bad sleepers validate)
  add_test(NAME unit.shm_link.${case} COMMAND test_shm_link ${case})
  set_tests_properties(unit.shm_link.${case} PROPERTIES TIMEOUT 60
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=10;CHORUS_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=")
endforeach()

# End to end through tests/ranks/test_allreduce (public API): transport choice per peer, read from the
# INFO lines of the connections ("via shm" / "via net"); the wrapper also requires exit status 0.
# mixed: 4 ranks on 2 acted-out hosts, so each rank has one shm link and one net link.
set(SHM_ALLREDUCE $<TARGET_FILE:test_allreduce>)
add_test(NAME ranks.shm.mixed.n4 COMMAND ${CHORUS_EXPECT_OUTPUT} --has "via shm" --has "via net" --
         ${SHM_ALLREDUCE} 4 --hosts 2 --medium 256K --big 4M --timeout 100)
# The net transport between ranks of one host, forced both ways.
add_test(NAME ranks.shm.disabled.n3 COMMAND ${CHORUS_EXPECT_OUTPUT} --has "via net" --lacks "via shm|FAIL|mismatch" --
         ${SHM_ALLREDUCE} 3 --medium 256K --big 4M --timeout 100)
add_test(NAME ranks.shm.forced_net.n2 COMMAND ${CHORUS_EXPECT_OUTPUT} --has "via net" --lacks "via shm|FAIL|mismatch" --
         ${SHM_ALLREDUCE} 2 --medium 256K --big 4M --timeout 100)
set_tests_properties(ranks.shm.mixed.n4 ranks.shm.disabled.n3 ranks.shm.forced_net.n2 PROPERTIES
  TIMEOUT 120 PROCESSORS 2 ENVIRONMENT "NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT")
set_tests_properties(ranks.shm.disabled.n3 PROPERTIES
  ENVIRONMENT "NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT;NCCL_SHM_DISABLE=1")
set_tests_properties(ranks.shm.forced_net.n2 PROPERTIES
  ENVIRONMENT "NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT;CHORUS_TRANSPORT=net")
# shm forced between two hosts: a clear error (non-zero exit, not a crash or a timeout), not a hang.
add_test(NAME ranks.shm.forced_cross_host COMMAND ${CHORUS_EXPECT_OUTPUT} --status fail
         --has "CHORUS_TRANSPORT=shm, but rank [0-9]+ \\(host [^)]*\\) and rank [0-9]+ \\(host [^)]*\\) are on different hosts" --
         ${SHM_ALLREDUCE} 2 --hosts 2 --medium 1K --big 1K --timeout 60)
set_tests_properties(ranks.shm.forced_cross_host PROPERTIES TIMEOUT 90 ENVIRONMENT "CHORUS_TRANSPORT=shm;NCCL_DEBUG=WARN")
