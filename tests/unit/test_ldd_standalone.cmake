# SPDX-License-Identifier: BSD-3-Clause
# libnccl.so.2 and the plugins in the build's lib folder need nothing but the C library at run time.
# Not under the sanitizers: those builds need libasan/libubsan by design.
if(NOT CHORUS_SANITIZE)
  add_test(NAME unit.ldd_standalone
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_ldd_standalone.sh ${CMAKE_LIBRARY_OUTPUT_DIRECTORY}
                   $<TARGET_FILE:chorus>)
  set_tests_properties(unit.ldd_standalone PROPERTIES TIMEOUT 30)
endif()
