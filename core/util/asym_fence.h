/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * asym_fence.h: a store-then-load order that costs the frequent side nothing.
 *
 * A waker stores a counter and then looks whether a sleeper flagged itself; a sleeper stores its flag
 * and then looks at the counter. Each side needs its store ordered before its load, or both may miss
 * the other. With a fence on both sides every step of a host link paid a full fence, which waits for
 * the counter's cache line to reach this core (about a fifth of a small all-reduce's time). Here the
 * waker orders only the compiler (chrFenceLight) and the rare sleeper makes every other thread of the
 * machine's registered processes order theirs (chrFenceHeavy: membarrier's global expedited command).
 * A process that cannot register keeps the full fence on its light side.
 */
#ifndef CHORUS_ASYM_FENCE_H_
#define CHORUS_ASYM_FENCE_H_

#include <stdatomic.h>

extern _Atomic int chrFenceRegistered; /* 1: this process receives heavy fences; set by chrFenceInit */

/* Register this process for heavy fences (once; later calls return at once). */
void chrFenceInit(void);

/* The waker's side: a store before this is ordered before a load after it, given the sleeper's
 * chrFenceHeavy. */
static inline void chrFenceLight(void) {
  if (atomic_load_explicit(&chrFenceRegistered, memory_order_relaxed) == 1)
    atomic_signal_fence(memory_order_seq_cst);
  else
    atomic_thread_fence(memory_order_seq_cst);
}

/* The sleeper's side: a full fence here and, in effect, in every thread of every registered process.
 * Returns 0, or -1 when the kernel refuses it (the caller must not sleep on a waker's light fence). */
int chrFenceHeavy(void);

#endif /* CHORUS_ASYM_FENCE_H_ */
