# SPDX-License-Identifier: BSD-3-Clause
# The copy-engine rendezvous, one ctest per world (ranks, who issues, one queue, pulls, bounded wait),
# so that a busy machine stretches each one alone: every world spins several threads per rank.
# The header is core/hostdev/ce_mailbox.h (header-only, no CUDA), found through chorus_static.
foreach(world "2 0 0 0 0" "3 0 0 0 0" "2 1 0 0 0" "3 1 0 0 0" "2 1 1 0 0" "3 1 1 0 0" "2 1 0 1 0" "3 1 0 1 0"
              "2 1 1 1 0" "3 1 1 1 0" "2 1 0 1 1" "3 1 1 1 1")
  string(REPLACE " " ";" args "${world}")
  string(REPLACE " " "" tag "${world}")
  add_test(NAME unit.test_ce_mailbox.w${tag} COMMAND test_ce_mailbox ${args})
  set_tests_properties(unit.test_ce_mailbox.w${tag} PROPERTIES TIMEOUT 300)
endforeach()
