# Tests of the TCP net plugin libnccl-net-socket.so (owner: net_socket engineer).
# Registered either by tests/plugins/CMakeLists.txt including this file, or, when nothing includes
# it, by plugins/net_socket/CMakeLists.txt at the end of the top-level directory (after
# enable_testing()). The global property below keeps it from being added twice.
get_property(ns_tests_added GLOBAL PROPERTY CHORUS_NET_SOCKET_TESTS_ADDED)
if(ns_tests_added OR NOT TARGET nccl-net-socket)
  return()
endif()
set_property(GLOBAL PROPERTY CHORUS_NET_SOCKET_TESTS_ADDED TRUE)

# One executable, one ctest per case and setting; each runs in its own process with a timeout.
add_executable(test_net_socket ${CMAKE_SOURCE_DIR}/plugins/net_socket/tests/test_net_socket.c)
target_include_directories(test_net_socket BEFORE PRIVATE ${CMAKE_SOURCE_DIR}/core/include)
target_link_libraries(test_net_socket PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
add_dependencies(test_net_socket nccl-net-socket)

function(ns_add_test name case)
  cmake_parse_arguments(T "" "VERSION" "ENV" ${ARGN})
  if(NOT T_VERSION)
    set(T_VERSION 12)
  endif()
  add_test(NAME plugins.net_socket.${name}
           COMMAND test_net_socket $<TARGET_FILE:nccl-net-socket> ${case} ${T_VERSION})
  set_tests_properties(plugins.net_socket.${name} PROPERTIES
    TIMEOUT 60 ENVIRONMENT "NCCL_SOCKET_IFNAME=lo;${T_ENV}")
endfunction()
set(NS_INLINE "NCCL_SOCKET_NTHREADS=0")
set(NS_2x2 "NCCL_SOCKET_NTHREADS=2;NCCL_NSOCKS_PERTHREAD=2")
set(NS_4x1 "NCCL_SOCKET_NTHREADS=4;NCCL_NSOCKS_PERTHREAD=1")
set(NS_INLINE3 "NCCL_SOCKET_NTHREADS=0;NCCL_NSOCKS_PERTHREAD=3")

ns_add_test(sizes sizes ENV ${NS_INLINE})
ns_add_test(sizes_2x2 sizes ENV ${NS_2x2})
ns_add_test(sizes_4x1 sizes ENV ${NS_4x1})
ns_add_test(sizes_inline3 sizes ENV ${NS_INLINE3})
ns_add_test(sizes_noeager sizes ENV "CHORUS_SOCKET_EAGER_BYTES=0")
ns_add_test(fork fork ENV ${NS_INLINE})
ns_add_test(fork_2x2 fork ENV ${NS_2x2})
ns_add_test(inflight inflight ENV ${NS_INLINE})
ns_add_test(inflight_2x2 inflight ENV ${NS_2x2})
ns_add_test(bigrecv bigrecv ENV ${NS_INLINE})
ns_add_test(bigrecv_4x1 bigrecv ENV ${NS_4x1})
ns_add_test(overflow overflow ENV ${NS_INLINE})
ns_add_test(overflow_2x2 overflow ENV ${NS_2x2})
ns_add_test(kill_sender kill_sender ENV ${NS_INLINE})
ns_add_test(kill_receiver kill_receiver ENV ${NS_INLINE})
ns_add_test(kill_sender_2x2 kill_sender ENV ${NS_2x2})
ns_add_test(kill_receiver_2x2 kill_receiver ENV ${NS_2x2})
ns_add_test(garbage garbage ENV ${NS_INLINE})
ns_add_test(garbage_2x2 garbage ENV ${NS_2x2})
foreach(v 8 9 10 11 12)
  ns_add_test(v${v} version VERSION ${v} ENV ${NS_INLINE})
endforeach()
ns_add_test(v8_2x2 version VERSION 8 ENV ${NS_2x2})
