# SPDX-License-Identifier: BSD-3-Clause
# Logging tests: one process per case; each writes its log into its own temp dir.
foreach(case levels file_fallback problems_logged threads last_error)
  add_test(NAME unit.config_log.${case} COMMAND test_config_log ${case})
  set_tests_properties(unit.config_log.${case} PROPERTIES TIMEOUT 30)
endforeach()
