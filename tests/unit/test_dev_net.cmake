# SPDX-License-Identifier: BSD-3-Clause
# The GPU path's net proxy with threads in place of kernels (test_dev_net.c): every rank its own
# acted-out host, so the ends cross the socket plugin.
target_sources(test_dev_net PRIVATE ${CMAKE_SOURCE_DIR}/tools/launch.c)
target_include_directories(test_dev_net PRIVATE ${CMAKE_SOURCE_DIR}/tools ${CMAKE_SOURCE_DIR})
target_link_libraries(test_dev_net PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
foreach(n 2 3)
  foreach(case data kill drain)
    add_test(NAME unit.dev_net.${case}.n${n} COMMAND test_dev_net ${case} ${n})
    set_tests_properties(unit.dev_net.${case}.n${n} PROPERTIES TIMEOUT 120 PROCESSORS 2
      ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=WARN")
  endforeach()
endforeach()
# The same through the gdrtest NIC, every end's slots registered as GPU memory (host memory taken as
# such by the plugin here): the proxy's GPUDirect side, its registrations and flushes; and its
# fallback to host staging when the NIC refuses the GPU memory.
if(TARGET chorus_net_common AND TARGET nccl-net-socket) # tests/plugins builds testnet_gdr then
  add_dependencies(test_dev_net testnet_gdr)
  add_test(NAME unit.dev_net.gdr.n2 COMMAND test_dev_net gdr 2)
  set_tests_properties(unit.dev_net.gdr.n2 PROPERTIES TIMEOUT 120 PROCESSORS 2
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=WARN;NCCL_NET_PLUGIN=$<TARGET_FILE:testnet_gdr>;CHORUS_PLUGIN_STRICT=1;TESTNET_GDR_HOST_AS_CUDA=1;TESTNET_GDR_FLUSH_COPIES=1")
  # A GPU that orders the NIC's writes itself (the topology's NOFLUSH bit): no flush at all.
  add_test(NAME unit.dev_net.noflush.n2 COMMAND test_dev_net noflush 2)
  set_tests_properties(unit.dev_net.noflush.n2 PROPERTIES TIMEOUT 120 PROCESSORS 2
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=WARN;NCCL_NET_PLUGIN=$<TARGET_FILE:testnet_gdr>;CHORUS_PLUGIN_STRICT=1;TESTNET_GDR_HOST_AS_CUDA=1")
  # A NIC that advertises GPU memory and refuses it: every end staged through host memory, one WARN.
  add_test(NAME unit.dev_net.stage.n2 COMMAND ${CHORUS_EXPECT_OUTPUT} --has "stage through host memory"
           -- $<TARGET_FILE:test_dev_net> stage 2)
  set_tests_properties(unit.dev_net.stage.n2 PROPERTIES TIMEOUT 120 PROCESSORS 2
    ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=WARN;NCCL_NET_PLUGIN=$<TARGET_FILE:testnet_gdr>;CHORUS_PLUGIN_STRICT=1;TESTNET_GDR_HOST_AS_CUDA=1;TESTNET_GDR_FAULT=refuse-cuda")
endif()
