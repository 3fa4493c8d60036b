# SPDX-License-Identifier: BSD-3-Clause
# The GPU path's net proxy with threads in place of kernels (test_dev_net.c): every rank its own
# acted-out host, so the ends cross the socket plugin.
target_sources(test_dev_net PRIVATE ${CMAKE_SOURCE_DIR}/tools/launch.c)
target_include_directories(test_dev_net PRIVATE ${CMAKE_SOURCE_DIR}/tools ${CMAKE_SOURCE_DIR})
target_link_libraries(test_dev_net PRIVATE Threads::Threads)
foreach(n 2 3)
  foreach(case data kill drain)
    add_test(NAME unit.dev_net.${case}.n${n} COMMAND test_dev_net ${case} ${n})
    set_tests_properties(unit.dev_net.${case}.n${n} PROPERTIES TIMEOUT 120 PROCESSORS 2
      ENVIRONMENT "CHORUS_BOOTSTRAP_TIMEOUT=30;NCCL_SOCKET_IFNAME=lo;NCCL_COMM_ID=;NCCL_DEBUG=WARN")
  endforeach()
endforeach()
