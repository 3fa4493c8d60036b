# SPDX-License-Identifier: BSD-3-Clause
# A GPU rank's net devices ordered by the topology (test_topo_netdevs.c) on the real machines' files.
add_test(NAME unit.topo_netdevs COMMAND test_topo_netdevs ${CMAKE_SOURCE_DIR}/tests/data/topologies)
set_tests_properties(unit.topo_netdevs PROPERTIES TIMEOUT 30)
