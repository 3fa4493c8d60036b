# SPDX-License-Identifier: BSD-3-Clause
# Collectives through the gdrtest NIC (testnet_gdr.c) on this host-only machine: every rank its own
# (acted-out) host and process, so all traffic crosses the plugin; strict, so it cannot fall back to
# the socket plugin it wraps. gdrtest_stats.sh checks each rank's counters: host registrations and
# bytes only, no region errors. Included by tests/plugins/CMakeLists.txt; chorus-netcheck's runs on
# it are in netcheck.cmake, the GPU test in tests/gpu (gpu.gdrtest.*).
# test_allreduce and test_colls come from tests/ranks, added after this folder (as in net_ofi.cmake).
if(NOT TARGET testnet_gdr)
  return()
endif()

set(GDR_STATS_RUN sh ${CMAKE_CURRENT_SOURCE_DIR}/gdrtest_stats.sh)
set(GDR_RANKS_ENV "NCCL_NET_PLUGIN=$<TARGET_FILE:testnet_gdr>;CHORUS_PLUGIN_STRICT=1;NCCL_SOCKET_IFNAME=lo;CHORUS_TIMEOUT=30;NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT")
add_test(NAME ranks.gdrtest.allreduce.n3.hosts
         COMMAND ${GDR_STATS_RUN} ${TESTNET_LOG_DIR}/gdrtest-allreduce-n3.stats 3 -- ${CHORUS_EXPECT_OUTPUT}
                 --has "uses net plugin gdrtest" -- $<TARGET_FILE:test_allreduce> 3 --hosts 3 --medium 1M --big 8M
                 --timeout 100)
add_test(NAME ranks.gdrtest.alltoall.n2.hosts
         COMMAND ${GDR_STATS_RUN} ${TESTNET_LOG_DIR}/gdrtest-alltoall-n2.stats 2 -- ${CHORUS_EXPECT_OUTPUT}
                 --has "uses net plugin gdrtest" -- $<TARGET_FILE:test_colls> alltoall 2 --hosts 2 --medium 300K
                 --big 4M --timeout 100)
set_tests_properties(ranks.gdrtest.allreduce.n3.hosts ranks.gdrtest.alltoall.n2.hosts PROPERTIES
                     TIMEOUT ${CHORUS_TEST_TIMEOUT} PROCESSORS 2 ENVIRONMENT "${GDR_RANKS_ENV}")

# Without a GPU: what the plugin must refuse (regions, foreign handles, CUDA registrations of host
# memory, dma-buf), its counters and its stats line (test_gdrtest_host.c).
add_executable(test_gdrtest_host ${CMAKE_CURRENT_SOURCE_DIR}/test_gdrtest_host.c)
target_include_directories(test_gdrtest_host PRIVATE ${CHORUS_PUBLIC_INCLUDE} ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_gdrtest_host PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(test_gdrtest_host testnet_gdr)
add_test(NAME plugins.gdrtest.host COMMAND test_gdrtest_host $<TARGET_FILE:testnet_gdr>
         ${TESTNET_LOG_DIR}/gdrtest-host.stats)
set_tests_properties(plugins.gdrtest.host PROPERTIES TIMEOUT 60 ENVIRONMENT "NCCL_SOCKET_IFNAME=lo")
