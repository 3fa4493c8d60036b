# SPDX-License-Identifier: BSD-3-Clause
# device/memory/fd_pass.c (file descriptors between processes, for GPU memory CUDA IPC cannot share) is
# plain POSIX C: built into its test here, so the CPU machines run it.
target_sources(test_fd_pass PRIVATE ${CMAKE_SOURCE_DIR}/device/memory/fd_pass.c)
target_include_directories(test_fd_pass PRIVATE ${CMAKE_SOURCE_DIR})
add_test(NAME unit.fd_pass COMMAND test_fd_pass)
set_tests_properties(unit.fd_pass PROPERTIES TIMEOUT 60)
