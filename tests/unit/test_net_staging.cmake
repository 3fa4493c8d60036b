# SPDX-License-Identifier: BSD-3-Clause
# The proxy's staging copier (test_net_staging.c) over the stand-in CUDA driver of tests/ranks.
add_dependencies(test_net_staging fake_libcuda)
target_link_libraries(test_net_staging PRIVATE Threads::Threads ${CMAKE_DL_LIBS})
add_test(NAME unit.net_staging COMMAND test_net_staging)
set_tests_properties(unit.net_staging PROPERTIES TIMEOUT 60
                     ENVIRONMENT "LD_LIBRARY_PATH=${CMAKE_BINARY_DIR}/test-fake-cuda;NCCL_DEBUG=WARN")
