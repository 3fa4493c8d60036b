/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * futex.h: sleeping until another thread or process changes a 32-bit word (Linux futexes).
 *
 * The host executor's idle wait sleeps on the words its peers write (a link's fill or release
 * counter in shared memory, the communicator's abort flag), so a busy machine's scheduler can give
 * the core to the peer, and the peer's write wakes the waiter at once instead of after a time slice.
 */
#ifndef CHORUS_FUTEX_H_
#define CHORUS_FUTEX_H_

#include <stdint.h>

#define CHR_FUTEX_MAX_WORDS 128 /* the kernel's limit for one wait */

struct chrFutexWord {
  const volatile uint32_t* addr;
  uint32_t expected; /* sleep only while *addr holds this */
  int shared;        /* 1: the word is in memory shared between processes */
};

/* Sleep until one of the n words differs from its expected value, a wake on one, or timeoutNs.
 * Returns 1 when woken or a word differs, 0 at the timeout, -1 when this kernel has no
 * futex_waitv (before 5.16): the caller waits another way. */
int chrFutexWaitAny(const struct chrFutexWord* words, int n, uint64_t timeoutNs);
/* Wake every sleeper on addr. */
void chrFutexWakeAll(const volatile uint32_t* addr, int shared);

#endif /* CHORUS_FUTEX_H_ */
