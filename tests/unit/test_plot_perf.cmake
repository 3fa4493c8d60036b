# SPDX-License-Identifier: BSD-3-Clause
# The plot script of docs/perf (tools/plot/plot_perf.py) and the figures it drew (test_plot_perf.sh).
# Skipped where python3 is missing.
add_test(NAME unit.plot_perf COMMAND sh ${CMAKE_CURRENT_SOURCE_DIR}/test_plot_perf.sh ${CMAKE_SOURCE_DIR})
set_tests_properties(unit.plot_perf PROPERTIES TIMEOUT 60 SKIP_RETURN_CODE 77)
