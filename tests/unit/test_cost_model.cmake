# SPDX-License-Identifier: BSD-3-Clause
# The planner's cost model from the [cost_model] section: one process per case (each isolates its config).
foreach(case read estimate flip repeat invalid unknown)
  add_test(NAME unit.cost_model.${case} COMMAND test_cost_model ${case})
  set_tests_properties(unit.cost_model.${case} PROPERTIES TIMEOUT 30)
endforeach()
add_test(NAME unit.cost_model.docs COMMAND test_cost_model docs ${CMAKE_SOURCE_DIR}/docs/perf/cost-model.md)
set_tests_properties(unit.cost_model.docs PROPERTIES TIMEOUT 30)
