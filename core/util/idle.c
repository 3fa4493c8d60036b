/* idle.c: see idle.h. The thresholds were chosen by measuring 2 and 8 local ranks on 2 cores. */
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
  if (idleNs < 20000) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, idleNs < 2000000 ? 10000 : 100000};
  nanosleep(&ts, NULL);
}
