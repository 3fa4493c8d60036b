# SPDX-License-Identifier: BSD-3-Clause
# test_reduce runs as usual, plus once more against a build of core/exec/reduce.c without the AVX2
# variant (CHR_NO_TARGET_CLONES) and without the AVX2 float16/bfloat16 path (CHR_NO_AVX2_PATH), so the baseline
# (SSE2) loops are checked on AVX2 machines too.
add_test(NAME unit.test_reduce COMMAND test_reduce)
set_tests_properties(unit.test_reduce PROPERTIES TIMEOUT ${CHORUS_TEST_TIMEOUT})

add_executable(test_reduce_baseline ${CMAKE_CURRENT_SOURCE_DIR}/test_reduce.c
                                    ${CMAKE_SOURCE_DIR}/core/exec/reduce.c)
target_compile_definitions(test_reduce_baseline PRIVATE CHR_NO_TARGET_CLONES CHR_NO_AVX2_PATH)
target_compile_options(test_reduce_baseline PRIVATE -O3 -ffp-contract=off -fno-trapping-math)
target_link_libraries(test_reduce_baseline PRIVATE chorus_static)
add_test(NAME unit.test_reduce_baseline COMMAND test_reduce_baseline)
set_tests_properties(unit.test_reduce_baseline PROPERTIES TIMEOUT ${CHORUS_TEST_TIMEOUT})
