# SPDX-License-Identifier: BSD-3-Clause
# Every source file we wrote names its license in an SPDX line (test_spdx.sh says which files).
add_test(NAME unit.spdx COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_spdx.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.spdx PROPERTIES TIMEOUT 60)
