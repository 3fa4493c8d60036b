# SPDX-License-Identifier: BSD-3-Clause
# Config check at init (chrConfigValidate): one process per case; each isolates HOME, /etc and env.
foreach(case algo_proto ranges file_value cached init_fails unknown_names malformed)
  add_test(NAME unit.config_check.${case} COMMAND test_config_check ${case})
  set_tests_properties(unit.config_check.${case} PROPERTIES TIMEOUT 30)
endforeach()
