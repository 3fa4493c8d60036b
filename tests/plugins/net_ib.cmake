# SPDX-License-Identifier: BSD-3-Clause
# The core with the IB plugin first in NCCL_NET_PLUGIN (owner: net_ib). Without RDMA devices the plugin
# reports 0 devices and the core falls back to the socket plugin (one WARN naming the reason), listed
# or not, or, strict, fails with a clear error: never a crash or a hang. Included by
# tests/plugins/CMakeLists.txt.
if(NOT TARGET nccl-net-ib OR NOT TARGET nccl-net-socket OR NOT TARGET test_net_loader)
  return()
endif()
set(IB_LOG_DIR ${CMAKE_CURRENT_BINARY_DIR}/log)
file(MAKE_DIRECTORY ${IB_LOG_DIR})
function(net_ib_loader_test name plugins)
  add_test(NAME plugins.net_ib.${name} COMMAND test_net_loader ${ARGN})
  set_tests_properties(plugins.net_ib.${name} PROPERTIES TIMEOUT 30 ENVIRONMENT
    "NCCL_NET_PLUGIN=${plugins};NCCL_DEBUG=INFO;NCCL_DEBUG_SUBSYS=INIT,NET;NCCL_DEBUG_FILE=${IB_LOG_DIR}/ib_${name}.log;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_NET=;CHORUS_PLUGIN_STRICT=0;NCCL_SOCKET_IFNAME=lo;${IB_LOADER_ENV}")
endfunction()
# NCCL_IB_HCA names no device, so the result is the same on a host that has RDMA hardware.
set(IB_LOADER_ENV "NCCL_IB_HCA==chorus_no_such_hca")
net_ib_loader_test(fallback_socket "$<TARGET_FILE:nccl-net-ib>,$<TARGET_FILE:nccl-net-socket>"
  open pick=Socket warns=1 "log=(IB, ABI v12): devices() returned 0 devices" "log=trying the next one")
net_ib_loader_test(alone_falls_back "$<TARGET_FILE:nccl-net-ib>"
  open pick=Socket warns=1 "log=(IB, ABI v12): devices() returned 0 devices; falling back to Chorus's socket plugin")
add_dependencies(test_net_loader nccl-net-ib nccl-net-socket)

# The same through the public API: two ranks on two (acted-out) hosts run all-reduces over the net
# plugin the core falls back to, listed or not; strict, init fails with the reason, at once (the
# launcher stops the other rank as soon as one fails, so only the first rank's line is certain).
add_test(NAME plugins.net_ib.ranks_fallback COMMAND test_allreduce 2 --hosts 2 --medium 64K --big 1M --timeout 60)
set_tests_properties(plugins.net_ib.ranks_fallback PROPERTIES TIMEOUT 120 PROCESSORS 2 ENVIRONMENT
  "NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-ib>,$<TARGET_FILE:nccl-net-socket>;NCCL_SOCKET_IFNAME=lo;${IB_LOADER_ENV}")
add_test(NAME plugins.net_ib.ranks_alone_falls_back COMMAND ${CHORUS_EXPECT_OUTPUT}
  --has "devices\\(\\) returned 0 devices; falling back to Chorus's socket plugin"
  -- $<TARGET_FILE:test_allreduce> 2 --hosts 2 --medium 64K --big 1M --timeout 60)
set_tests_properties(plugins.net_ib.ranks_alone_falls_back PROPERTIES TIMEOUT 120 PROCESSORS 2 ENVIRONMENT
  "NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-ib>;NCCL_SOCKET_IFNAME=lo;NCCL_DEBUG=WARN;${IB_LOADER_ENV}")
add_test(NAME plugins.net_ib.ranks_alone_strict_fails COMMAND ${CHORUS_EXPECT_OUTPUT} --status fail
  --has "rank [01]/2: .*ncclCommInitRank failed.*devices\\(\\) returned 0 devices.*CHORUS_PLUGIN_STRICT=1"
  -- $<TARGET_FILE:test_allreduce> 2 --hosts 2 --medium 64K --big 1M --timeout 60)
set_tests_properties(plugins.net_ib.ranks_alone_strict_fails PROPERTIES TIMEOUT 60 ENVIRONMENT
  "NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-ib>;NCCL_SOCKET_IFNAME=lo;CHORUS_PLUGIN_STRICT=1;${IB_LOADER_ENV}")

# The whole core over the IB plugin's verbs code: three ranks of one process (ncclCommInitAll), every
# link through the net plugin (CHORUS_TRANSPORT=net), the plugin linked with the verbs mock.
if(TARGET nccl-net-ibmock)
  add_test(NAME plugins.net_ib.mock.core_initall COMMAND test_comm initall 3)
  set_tests_properties(plugins.net_ib.mock.core_initall PROPERTIES TIMEOUT 60 ENVIRONMENT
    "NCCL_NET_PLUGIN=$<TARGET_FILE:nccl-net-ibmock>;CHORUS_TRANSPORT=net;NCCL_SOCKET_IFNAME=lo;CHORUS_PLUGIN_STRICT=1")
endif()
