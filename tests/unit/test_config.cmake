# SPDX-License-Identifier: BSD-3-Clause
# Config and log tests: one process per case (each case isolates HOME, /etc and the environment itself).
foreach(case order named_file flat sections problems plugin_sections long_value export_names special_files)
  add_test(NAME unit.config.${case} COMMAND test_config ${case})
  set_tests_properties(unit.config.${case} PROPERTIES TIMEOUT 30)
endforeach()
