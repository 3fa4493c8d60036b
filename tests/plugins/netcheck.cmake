# SPDX-License-Identifier: BSD-3-Clause
# chorus-netcheck against the TCP plugin (it must pass at NCCL-style thread/socket settings) and against
# deliberately broken plugins (it must fail, naming the broken rule). Included by tests/plugins/CMakeLists.txt.
get_property(nc_tests_added GLOBAL PROPERTY CHORUS_NETCHECK_TESTS_ADDED)
if(nc_tests_added OR NOT TARGET nccl-net-socket OR NOT TARGET chorus-netcheck)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_NETCHECK_TESTS_ADDED TRUE)

set(NC_BIN $<TARGET_FILE:chorus-netcheck>)
set(NC_SOCKET $<TARGET_FILE:nccl-net-socket>)

# The broken plugins wrap the real one (testnet_faulty.c says how each one breaks).
foreach(fault REORDER DROPBYTE WRONGSIZE SLEEPLISTEN SPINLISTEN)
  string(TOLOWER ${fault} lower)
  add_library(testnet_faulty_${lower} MODULE ${CMAKE_CURRENT_SOURCE_DIR}/testnet_faulty.c)
  target_include_directories(testnet_faulty_${lower} PRIVATE ${CHORUS_PUBLIC_INCLUDE})
  target_compile_definitions(testnet_faulty_${lower} PRIVATE FAULT_${fault} TESTNET_INNER="${NC_SOCKET}")
  target_compile_options(testnet_faulty_${lower} PRIVATE -fvisibility=hidden)
  target_link_libraries(testnet_faulty_${lower} PRIVATE ${CMAKE_DL_LIBS})
  set_target_properties(testnet_faulty_${lower} PROPERTIES PREFIX "lib" OUTPUT_NAME nccl-net-faulty-${lower}
                        LIBRARY_OUTPUT_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/lib)
  add_dependencies(testnet_faulty_${lower} nccl-net-socket)
endforeach()

# nc_test(<name> <plugin> [ENV k=v ...] [WRAP cmd ...] [EXPECT --has ERE ...] [HAS ERE ...] ARGS <netcheck args>)
# --time-limit (a setting that runs longer is killed as a hang) and TIMEOUT leave room for a busy
# machine: with two CPU-bound processes and the suite beside it, socket_v11_4x4 took over 50 s.
# Without EXPECT the check must pass (plus any HAS lines); with EXPECT it must fail as described.
# WRAP runs the check under another command (gdrtest_stats.sh ... --).
function(nc_test name plugin)
  cmake_parse_arguments(T "" "" "ENV;WRAP;EXPECT;HAS;ARGS" ${ARGN})
  set(test plugins.netcheck.${name})
  if(T_EXPECT)
    add_test(NAME ${test} COMMAND ${T_WRAP} ${CHORUS_EXPECT_OUTPUT} --status fail ${T_EXPECT} -- ${NC_BIN} ${T_ARGS} ${plugin})
  else()
    set(has "")
    foreach(h ${T_HAS})
      list(APPEND has --has ${h})
    endforeach()
    add_test(NAME ${test} COMMAND ${T_WRAP} ${CHORUS_EXPECT_OUTPUT} --has "^result: PASS" --lacks "^  FAIL" ${has}
             -- ${NC_BIN} ${T_ARGS} ${plugin})
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT 240 ENVIRONMENT
    "NCCL_SOCKET_IFNAME=lo;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;${T_ENV}")
endfunction()

# The socket plugin as NCCL drives it, at the thread x socket settings NCCL users pick.
nc_test(socket_1x1 ${NC_SOCKET} HAS "^bandwidth, rank 0 -> rank 1" "^latency, 8-byte ping-pong.*raw TCP"
        ARGS --scale 3 --perf-bytes 8M --baseline --time-limit 200
        -s "NCCL_SOCKET_NTHREADS=1 NCCL_NSOCKS_PERTHREAD=1")
nc_test(socket_2x2 ${NC_SOCKET} ARGS --no-perf --scale 3 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2")
nc_test(socket_4x4 ${NC_SOCKET} ARGS --no-perf --scale 3 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4")
nc_test(socket_8x2 ${NC_SOCKET} ARGS --no-perf --scale 3 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=8 NCCL_NSOCKS_PERTHREAD=2")
# As NVIDIA's NCCL 2.28 binds it (ABI v11), and through the v8 adapter (int sizes), inline progress.
nc_test(socket_v11_4x4 ${NC_SOCKET} HAS "name Socket, ABI v11" ARGS --no-perf --scale 3 --abi 11 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=4 NCCL_NSOCKS_PERTHREAD=4")
nc_test(socket_v8_inline3 ${NC_SOCKET} HAS "name Socket, ABI v8" ARGS --no-perf --abi 8 --scale 0.5 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=0 NCCL_NSOCKS_PERTHREAD=3")

# Each broken plugin fails, and the report names the rule it breaks.
nc_test(faulty_reorder $<TARGET_FILE:testnet_faulty_reorder> ARGS --no-perf --scale 0.3 --time-limit 200
        EXPECT --has "^  FAIL  data\\.order .*FIFO order" --has "holds message" --has "^result: FAIL")
nc_test(faulty_dropbyte $<TARGET_FILE:testnet_faulty_dropbyte> ARGS --no-perf --scale 0.3 --time-limit 200
        EXPECT --has "^  FAIL  data\\.bytes .*every byte arrives intact" --has "bytes differ" --has "^result: FAIL")
nc_test(faulty_wrongsize $<TARGET_FILE:testnet_faulty_wrongsize> ARGS --no-perf --scale 0.3 --time-limit 200
        EXPECT --has "^  FAIL  test\\.size .*not the posted size" --has "test\\(\\) reported [0-9]+ bytes, the sender sent"
               --has "^result: FAIL")
# A listen that sleeps breaks the non-blocking rule; one that computes as long does not (a busy
# machine stretches calls the same way), and the report shows it as the slowest call.
nc_test(faulty_sleeplisten $<TARGET_FILE:testnet_faulty_sleeplisten> ARGS --no-perf --scale 0.1 --time-limit 200
        EXPECT --has "^  FAIL  nonblocking " --has "rank [01]: listen slept 1\\.[0-9]+ s" --has "^result: FAIL")
nc_test(faulty_spinlisten $<TARGET_FILE:testnet_faulty_spinlisten> ARGS --no-perf --scale 0.1 --time-limit 200
        HAS "^  PASS  nonblocking " "^slowest call: rank [01]: listen, [1-9][0-9.]* s, of which 0\\.[0-9]+ s asleep")

# The gdrtest NIC (testnet_gdr.c) over the socket plugin: with host buffers it must pass as the socket
# plugin does, under its own name, as ABI v12 and as NCCL 2.28 binds it (v11, built by net_common).
if(TARGET testnet_gdr)
  nc_test(gdrtest_2x2 $<TARGET_FILE:testnet_gdr> HAS "name gdrtest, ABI v12" "^device 0: gdrtest-.*ptrSupport 0x3,"
          ARGS --no-perf --time-limit 200 -s "NCCL_SOCKET_NTHREADS=2 NCCL_NSOCKS_PERTHREAD=2")
  nc_test(gdrtest_v11_inline $<TARGET_FILE:testnet_gdr> HAS "name gdrtest, ABI v11"
          ARGS --no-perf --abi 11 --time-limit 200 -s "NCCL_SOCKET_NTHREADS=0")

  # The GPU rules without a GPU (--mem cuda-host): host memory the NIC takes as GPU memory
  # (TESTNET_GDR_HOST_AS_CUDA=1). It must pass them, and its own counters (gdrtest_stats.sh --gpu)
  # must show CUDA registrations, GPU bytes both ways and flushes in both rank processes.
  set(NC_GDR $<TARGET_FILE:testnet_gdr>)
  set(NC_GDR_STATS sh ${CMAKE_CURRENT_SOURCE_DIR}/gdrtest_stats.sh --gpu)
  nc_test(gdrtest_gpu_host ${NC_GDR} ENV TESTNET_GDR_HOST_AS_CUDA=1
          WRAP ${NC_GDR_STATS} ${TESTNET_LOG_DIR}/netcheck-gdrtest-gpu-host.stats 2 --
          HAS "^GPU memory \\(--mem cuda-host," "^  PASS  gpu\\.reg " "^  PASS  gpu\\.flush " "^  PASS  gpu\\.data "
              "^  PASS  gpu\\.dereg " "^  SKIP  gpu\\.dmabuf .*: plugin does not advertise NCCL_PTR_DMABUF"
              "^GPU memory, rank 0: [1-9][0-9]* regMr\\(NCCL_PTR_CUDA\\).*; [1-9][0-9]* receives flushed"
          ARGS --mem cuda-host --no-perf --time-limit 200)
  # A NIC whose received bytes reach the GPU only in iflush: right only if every receive with bytes
  # is flushed, with its buffers and sizes, before it is read. As NCCL 2.28 binds it (v11).
  nc_test(gdrtest_gpu_flushcopies_v11 ${NC_GDR} ENV TESTNET_GDR_HOST_AS_CUDA=1 TESTNET_GDR_FLUSH_COPIES=1
          WRAP ${NC_GDR_STATS} ${TESTNET_LOG_DIR}/netcheck-gdrtest-gpu-flushcopies.stats 2 --
          HAS "name gdrtest, ABI v11" "^  PASS  gpu\\.data "
          ARGS --mem cuda-host --no-perf --abi 11 --scale 0.5 --time-limit 200)
  # Broken GPUDirect sides fail, naming the rule: a flush that leaves the bytes behind, a flush that
  # fails, CUDA registrations refused while ptrSupport claims them (the rest still passes).
  nc_test(gdrtest_gpu_noflush ${NC_GDR} ENV TESTNET_GDR_HOST_AS_CUDA=1 TESTNET_GDR_FAULT=noflush
          ARGS --mem cuda-host --no-perf --scale 0.3 --time-limit 200
          EXPECT --has "^  FAIL  gpu\\.data " --has "into GPU memory: wrong once its iflush completed"
                 --has "^  PASS  gpu\\.flush " --has "^result: FAIL")
  nc_test(gdrtest_gpu_flusherror ${NC_GDR} ENV TESTNET_GDR_HOST_AS_CUDA=1 TESTNET_GDR_FAULT=flush-error
          ARGS --mem cuda-host --no-perf --scale 0.3 --time-limit 200
          EXPECT --has "^  FAIL  gpu\\.flush " --has "receive [0-9]+: iflush of [0-9]+ buffers? failed"
                 --has "^result: FAIL")
  nc_test(gdrtest_gpu_refusecuda ${NC_GDR} ENV TESTNET_GDR_HOST_AS_CUDA=1 TESTNET_GDR_FAULT=refuse-cuda
          ARGS --mem cuda-host --no-perf --scale 0.3 --time-limit 200
          EXPECT --has "^  FAIL  gpu\\.reg " --has "failed, although ptrSupport has NCCL_PTR_CUDA"
                 --has "^  PASS  data\\.bytes " --has "^result: FAIL \\(1 rule broken\\)")
endif()
# A plugin without NCCL_PTR_CUDA: the GPU rules are skipped, not failed.
nc_test(socket_gpu_skip ${NC_SOCKET} HAS "^  SKIP  gpu\\.reg .*: plugin does not advertise NCCL_PTR_CUDA"
        "^  SKIP  gpu\\.flush .*: plugin does not advertise NCCL_PTR_CUDA" "^  PASS  mr\\.reg "
        ARGS --mem cuda-host --no-perf --scale 0.3 --time-limit 200)
