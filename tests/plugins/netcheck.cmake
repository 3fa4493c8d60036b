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
foreach(fault REORDER DROPBYTE WRONGSIZE)
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

# nc_test(<name> <plugin> [ENV k=v ...] [EXPECT --has ERE ...] [HAS ERE ...] ARGS <netcheck args>)
# Without EXPECT the check must pass (plus any HAS lines); with EXPECT it must fail as described.
function(nc_test name plugin)
  cmake_parse_arguments(T "" "" "ENV;EXPECT;HAS;ARGS" ${ARGN})
  set(test plugins.netcheck.${name})
  if(T_EXPECT)
    add_test(NAME ${test} COMMAND ${CHORUS_EXPECT_OUTPUT} --status fail ${T_EXPECT} -- ${NC_BIN} ${T_ARGS} ${plugin})
  else()
    set(has "")
    foreach(h ${T_HAS})
      list(APPEND has --has ${h})
    endforeach()
    add_test(NAME ${test} COMMAND ${CHORUS_EXPECT_OUTPUT} --has "^result: PASS" --lacks "^  FAIL" ${has}
             -- ${NC_BIN} ${T_ARGS} ${plugin})
  endif()
  set_tests_properties(${test} PROPERTIES TIMEOUT 60 ENVIRONMENT
    "NCCL_SOCKET_IFNAME=lo;HOME=${CMAKE_CURRENT_BINARY_DIR};NCCL_DEBUG=WARN;${T_ENV}")
endfunction()

# Each broken plugin fails, and the report names the rule it breaks.
nc_test(faulty_reorder $<TARGET_FILE:testnet_faulty_reorder> ARGS --no-perf --scale 0.3 --time-limit 50
        EXPECT --has "^  FAIL  data\\.order .*FIFO order" --has "holds message" --has "^result: FAIL")
nc_test(faulty_dropbyte $<TARGET_FILE:testnet_faulty_dropbyte> ARGS --no-perf --scale 0.3 --time-limit 50
        EXPECT --has "^  FAIL  data\\.bytes .*every byte arrives intact" --has "bytes differ" --has "^result: FAIL")
nc_test(faulty_wrongsize $<TARGET_FILE:testnet_faulty_wrongsize> ARGS --no-perf --scale 0.3 --time-limit 50
        EXPECT --has "^  FAIL  test\\.size .*not the posted size" --has "test\\(\\) reported [0-9]+ bytes, the sender sent"
               --has "^result: FAIL")
