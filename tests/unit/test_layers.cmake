# SPDX-License-Identifier: BSD-3-Clause
# The include order of the product code (tools/ci/check_layers.py, docs/design.md "Layout") holds,
# and the check fails where it should (test_layers.sh). Skipped where python3 is missing.
add_test(NAME unit.layers COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_layers.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.layers PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
