/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * futex.c: futex_waitv and FUTEX_WAKE by system call (glibc wraps neither).
 */
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "util/futex.h"

#ifndef SYS_futex_waitv
#define SYS_futex_waitv 449
#endif

static _Atomic int noWaitv; /* the kernel said ENOSYS once: never ask again */

int chrFutexWaitAny(const struct chrFutexWord* words, int n, uint64_t timeoutNs) {
  if (n <= 0 || n > CHR_FUTEX_MAX_WORDS || atomic_load_explicit(&noWaitv, memory_order_relaxed)) return -1;
  struct futex_waitv w[CHR_FUTEX_MAX_WORDS];
  for (int i = 0; i < n; i++) {
    w[i].val = words[i].expected;
    w[i].uaddr = (uint64_t)(uintptr_t)words[i].addr;
    w[i].flags = FUTEX_32 | (words[i].shared ? 0 : FUTEX_PRIVATE_FLAG);
    w[i].__reserved = 0;
  }
  struct timespec end;
  clock_gettime(CLOCK_MONOTONIC, &end);
  end.tv_sec += (time_t)(timeoutNs / 1000000000ull);
  end.tv_nsec += (long)(timeoutNs % 1000000000ull);
  if (end.tv_nsec >= 1000000000L) {
    end.tv_sec++;
    end.tv_nsec -= 1000000000L;
  }
  long rc = syscall(SYS_futex_waitv, w, (unsigned)n, 0u, &end, CLOCK_MONOTONIC);
  if (rc >= 0) return 1;
  if (errno == ENOSYS) {
    atomic_store_explicit(&noWaitv, 1, memory_order_relaxed);
    return -1;
  }
  return errno == ETIMEDOUT ? 0 : 1; /* EAGAIN: a word had changed already; EINTR: look again */
}

void chrFutexWakeAll(const volatile uint32_t* addr, int shared) {
  syscall(SYS_futex, addr, shared ? FUTEX_WAKE : FUTEX_WAKE_PRIVATE, INT_MAX, NULL, NULL, 0);
}
