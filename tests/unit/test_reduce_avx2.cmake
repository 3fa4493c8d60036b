# SPDX-License-Identifier: BSD-3-Clause
# test_reduce_avx2 skips (77) on CPUs without AVX2/F16C and in builds without the path.
add_test(NAME unit.test_reduce_avx2 COMMAND test_reduce_avx2)
set_tests_properties(unit.test_reduce_avx2 PROPERTIES TIMEOUT ${CHORUS_TEST_TIMEOUT} SKIP_RETURN_CODE 77)
