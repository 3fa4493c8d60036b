/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * idle.h: what a polling loop does when nothing moved.
 *
 * The host executor polls its transports. When ranks outnumber cores (8 ranks on a 2-core machine),
 * spinning steals the core from exactly the rank we are waiting for, and every ring hop then costs a
 * scheduler time slice; sleeping costs the timer's slack (tens of microseconds) per hop. So: spin
 * for the first 3 microseconds of idleness (the common, fast case), then yield until 2 milliseconds,
 * then block until a peer writes (the caller's sleep, util/futex.h) or, where the caller cannot,
 * sleep 100 microseconds at a time.
 *
 * Yields that come back late, twice in a row, mean other processes want this core (a busy machine):
 * then, for 50 ms, the caller skips the yields and blocks after 20 us of spinning (a peer that runs
 * answers sooner), so the core goes to the peer and the peer's write wakes the waiter, instead of
 * every hop costing a scheduler time slice. One late yield alone changes nothing: a quiet virtual
 * machine sees those now and then.
 *
 * A rank on CPUs of its own (util/cpu_mask.h) polls without yielding for its own spin budget, then
 * blocks: no rank of its job waits for those CPUs, so keeping them costs its peers nothing, and
 * other jobs on the machine get them when it blocks or when its time slice ends.
 */
#ifndef CHORUS_IDLE_H_
#define CHORUS_IDLE_H_

#include <stdint.h>

uint64_t chrNowNs(void);
/* idleNs: how long the caller has seen no progress; ownCoreSpinNs: the spin budget of a rank on
 * CPUs of its own, 0 when it may share them. Spins or yields once and returns 0; returns 1 when the
 * caller should block now (it may, or call chrIdleNap). */
int chrIdlePoll(uint64_t idleNs, uint64_t ownCoreSpinNs);
/* For a caller that cannot block on its peers: 100 microseconds of sleep. */
void chrIdleNap(void);
/* chrIdlePoll, then chrIdleNap when it says so (callers that never block on their peers). */
void chrIdleWait(uint64_t idleNs);

#endif
