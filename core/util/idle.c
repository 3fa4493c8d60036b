/* idle.c: see idle.h. The thresholds were chosen by measuring 2, 4 and 8 local ranks on 2 cores
 * (docs/perf/host.md, "8 ranks"). */
#include <sched.h>
#include <time.h>
#include "util/idle.h"

uint64_t chrNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

void chrIdleWait(uint64_t idleNs) {
  if (idleNs < 3000) {
    /* A peer usually answers within a few microseconds: spinning keeps the core (a yield is a
     * system call and may hand the core to another process for a whole time slice). */
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
    return;
  }
  if (idleNs < 2000000) {
    /* Hand the core to whoever is runnable (with more ranks than cores, the peer we wait for) and
     * come back at once. A sleep here, even of 10 us, costs ~60 us (the kernel's timer slack) per
     * ring or tree hop: 8 ranks on 2 cores took 270-300 us for an 8-byte all-reduce, 43-56 us
     * yielding. */
    sched_yield();
    return;
  }
  /* Nothing for 2 ms: a slow peer, or an idle communicator; stop burning the core. */
  struct timespec ts = {0, 100000};
  nanosleep(&ts, NULL);
}
