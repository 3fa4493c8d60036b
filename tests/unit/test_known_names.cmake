# SPDX-License-Identifier: BSD-3-Clause
# Every CHORUS_ name that plugins/ and tools/ read is known to the config loader (test_known_names.sh).
add_test(NAME unit.known_names COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_known_names.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.known_names PROPERTIES TIMEOUT 60)
