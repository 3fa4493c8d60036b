# SPDX-License-Identifier: BSD-3-Clause
# test_bootstrap_bad's tests are registered by test_bootstrap.cmake (same environment, shared harness).
