# SPDX-License-Identifier: BSD-3-Clause
# docs/design.md's scale figures come from tools/scale_table.py, which reads its constants from the
# sources: it must still find them all and print every row after a change there.
add_test(NAME unit.scale_table COMMAND ${CHORUS_EXPECT_OUTPUT} --has "^\\| GPU arena" --has "^\\| bootstrap all-gather"
         -- python3 ${CMAKE_SOURCE_DIR}/tools/scale_table.py)
set_tests_properties(unit.scale_table PROPERTIES TIMEOUT 60 WORKING_DIRECTORY ${CMAKE_SOURCE_DIR})
