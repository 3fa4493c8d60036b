# SPDX-License-Identifier: BSD-3-Clause
# chorus-perf's JSON (-J) and CSV (-C) files: their fields, the CSV rows equal to the JSON rows, bad
# values refused (test_perf_output.sh, test_perf_output.py). Skipped where python3 is missing.
if(TARGET chorus-perf)
  add_test(NAME unit.perf_output
           COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_perf_output.sh $<TARGET_FILE:chorus-perf>
                   ${CMAKE_CURRENT_SOURCE_DIR}/test_perf_output.py)
  set_tests_properties(unit.perf_output PROPERTIES TIMEOUT 120 PROCESSORS 2 SKIP_RETURN_CODE 77)
endif()
