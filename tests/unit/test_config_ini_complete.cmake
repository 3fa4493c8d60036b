# SPDX-License-Identifier: BSD-3-Clause
# Generator check: config/chorus.ini must document every parameter of core/config/params.def.
add_test(NAME unit.config_ini_complete
         COMMAND test_config_ini_complete ${CMAKE_SOURCE_DIR}/config/chorus.ini)
set_tests_properties(unit.config_ini_complete PROPERTIES TIMEOUT 30)
