/* SPDX-License-Identifier: BSD-3-Clause */
/* idle.c: see idle.h. The thresholds were chosen by measuring 2, 4 and 8 local ranks on 2 cores
 * (docs/perf/host.md, "8 ranks" and "a busy machine"). */
#include <sched.h>
#include <time.h>
#include "util/idle.h"

#define SPIN_NS 3000ull
#define YIELD_NS 2000000ull
#define LATE_YIELD_NS 50000ull  /* a yield this long ran someone else */
#define BUSY_HOLD_NS 50000000ull /* two late yields in a row: block without yielding for this long */
#define BUSY_SPIN_NS 20000ull    /* busy: spin this long before blocking */

static __thread int lateYields;     /* late yields in a row (one alone may be the hypervisor's doing) */
static __thread uint64_t busyUntil; /* the machine is busy: block at once until then */

uint64_t chrNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void pause1(void) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

int chrIdlePoll(uint64_t idleNs, uint64_t ownCoreSpinNs) {
  if (ownCoreSpinNs) {
    if (idleNs >= ownCoreSpinNs) return 1;
    pause1();
    return 0;
  }
  if (idleNs < SPIN_NS) {
    /* A peer usually answers within a few microseconds: spinning keeps the core (a yield is a
     * system call and may hand the core to another process for a whole time slice). */
    pause1();
    return 0;
  }
  if (idleNs >= YIELD_NS) return 1; /* a slow peer, or an idle communicator */
  const uint64_t before = chrNowNs();
  if (before < busyUntil) {
    /* Busy: no yields; a peer that runs still answers within microseconds, so spin a little. */
    if (idleNs >= BUSY_SPIN_NS) return 1;
    pause1();
    return 0;
  }
  /* Hand the core to whoever is runnable (with more ranks than cores, the peer we wait for) and
   * come back at once. A sleep here, however short, lasts the kernel's timer slack (tens of
   * microseconds) at every ring or tree hop (docs/perf/host.md has the runs). */
  sched_yield();
  const uint64_t after = chrNowNs();
  lateYields = after - before > LATE_YIELD_NS ? lateYields + 1 : 0;
  if (lateYields < 2) return 0;
  busyUntil = after + BUSY_HOLD_NS;
  return 1;
}

void chrIdleNap(void) {
  struct timespec ts = {0, 100000};
  nanosleep(&ts, NULL);
}

void chrIdleWait(uint64_t idleNs) {
  if (chrIdlePoll(idleNs, 0)) chrIdleNap();
}
