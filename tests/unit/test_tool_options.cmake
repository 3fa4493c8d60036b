# SPDX-License-Identifier: BSD-3-Clause
# --version on the three tools; chorus-netcheck's strict option values (test_tool_options.sh).
if(TARGET chorus-perf AND TARGET chorus-info AND TARGET chorus-netcheck)
  add_test(NAME unit.tool_options
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_tool_options.sh $<TARGET_FILE:chorus-perf>
                   $<TARGET_FILE:chorus-info> $<TARGET_FILE:chorus-netcheck>)
  set_tests_properties(unit.tool_options PROPERTIES TIMEOUT 30)
endif()
