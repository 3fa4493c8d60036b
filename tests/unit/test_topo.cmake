# SPDX-License-Identifier: BSD-3-Clause
# The topology module on the real machines' files of tests/data/topologies and on broken input
# (test_topo.c), one process per case, discovery on a fake sysfs tree the test makes and on this
# machine; then chorus-info --topo's output (test_topo_info.sh). Where the
# compiler has AddressSanitizer and the build is not sanitized already, the malformed-input cases run
# once more with the topology sources built under it.
set(CHORUS_TOPO_DATA ${CMAKE_SOURCE_DIR}/tests/data/topologies)
foreach(case p4d ndv5 ndv2 ndv4 p5 ncv4 gdr pxn bandwidth roundtrip malformed files init discover discover_local)
  add_test(NAME unit.topo_${case} COMMAND test_topo ${case} ${CHORUS_TOPO_DATA})
  set_tests_properties(unit.topo_${case} PROPERTIES TIMEOUT 30)
endforeach()
if(TARGET chorus-info)
  add_test(NAME unit.topo_info
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_topo_info.sh $<TARGET_FILE:chorus-info> ${CHORUS_TOPO_DATA})
  set_tests_properties(unit.topo_info PROPERTIES TIMEOUT 60)
endif()
include(CheckCSourceCompiles)
set(CMAKE_REQUIRED_FLAGS -fsanitize=address)
check_c_source_compiles("int main(void) { return 0; }" CHORUS_HAVE_ASAN)
unset(CMAKE_REQUIRED_FLAGS)
if(CHORUS_HAVE_ASAN AND NOT CHORUS_SANITIZE)
  # The topology objects come first, so the archive's own copies are never pulled in.
  file(GLOB CHORUS_TOPO_SOURCES ${CMAKE_SOURCE_DIR}/core/topo/*.c)
  add_executable(test_topo_asan ${CMAKE_CURRENT_SOURCE_DIR}/test_topo.c ${CHORUS_TOPO_SOURCES})
  target_compile_options(test_topo_asan PRIVATE -fsanitize=address -fno-omit-frame-pointer)
  target_link_options(test_topo_asan PRIVATE -fsanitize=address)
  target_link_libraries(test_topo_asan PRIVATE chorus_static)
  foreach(case malformed files roundtrip p5 discover)
    add_test(NAME unit.topo_asan_${case} COMMAND test_topo_asan ${case} ${CHORUS_TOPO_DATA})
    set_tests_properties(unit.topo_asan_${case} PROPERTIES TIMEOUT 60 ENVIRONMENT "ASAN_OPTIONS=detect_leaks=1")
  endforeach()
endif()
