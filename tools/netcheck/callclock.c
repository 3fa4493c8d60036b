/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * callclock.c: how long a plugin call kept the calling thread blocked.
 *
 * The nonblocking rule is about a call that sleeps (waits on a peer, a lock, a timer), not one that
 * was slow because the machine was busy. Linux accounts each thread's time on a CPU and its time
 * runnable but waiting for one (/proc/thread-self/schedstat, fields 1 and 2, in ns); what is left of
 * the wall-clock time was spent asleep. Where that file cannot be read, the thread's CPU clock gives
 * the time on a CPU and the runnable wait counts as blocked.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "netcheck.h"

/* The file stays open per thread, as every plugin call of the traffic is clocked; a forked child
 * inherits the parent's descriptor, which reads the parent's thread, so it is opened again there. */
static __thread int statFd = -1;
static __thread pid_t statTid = 0;

static int readSchedstat(double* onCpu, double* waiting) {
  pid_t tid = gettid();
  if (statTid != tid) {
    if (statFd >= 0) close(statFd);
    statFd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
    statTid = tid;
  }
  if (statFd < 0) return -1;
  char buf[96];
  ssize_t n = pread(statFd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return -1;
  buf[n] = '\0';
  char* end;
  unsigned long long run = strtoull(buf, &end, 10);
  if (end == buf) return -1;
  char* p = end;
  unsigned long long wait = strtoull(p, &end, 10);
  if (end == p) return -1;
  *onCpu = (double)run * 1e-9;
  *waiting = (double)wait * 1e-9;
  return 0;
}

static double threadCpu(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void ncCallClockStart(ncCallClock* c) {
  c->schedstat = readSchedstat(&c->onCpu, &c->waiting) == 0;
  if (!c->schedstat) {
    c->onCpu = threadCpu();
    c->waiting = 0;
  }
  c->wall = ncNow();
}

void ncCallClockStop(ncCallClock* c) {
  double wall = ncNow() - c->wall, onCpu = 0, waiting = 0;
  if (!c->schedstat) {
    onCpu = threadCpu() - c->onCpu;
  } else if (readSchedstat(&onCpu, &waiting) == 0) {
    onCpu -= c->onCpu;
    waiting -= c->waiting;
  } /* else: unreadable now, so the whole call counts as blocked */
  c->wall = wall;
  c->blocked = wall - onCpu - waiting;
  if (c->blocked < 0) c->blocked = 0;
}
