/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cpu_mask.h: which CPUs a thread may run on, and whether two ranks can compete for one.
 *
 * Ranks that no other rank of their host can share a CPU with (each bound to its own cores, as
 * mpirun binds them) may poll without yielding, as Open MPI's ranks do: only other jobs compete for
 * those cores, and a rank that keeps its core through its time slice answers its peer at once,
 * where one that sleeps gets the core back only when the other job's slice ends (util/idle.h).
 */
#ifndef CHORUS_CPU_MASK_H_
#define CHORUS_CPU_MASK_H_

#include <stdint.h>

#define CHR_CPU_MASK_WORDS 16 /* 1024 CPUs, glibc's CPU_SETSIZE */

struct chrCpuMask {
  uint64_t bits[CHR_CPU_MASK_WORDS];
  int32_t known; /* 0: the affinity could not be read or names a CPU beyond the mask */
  int32_t pad;
};

/* The calling thread's affinity. */
void chrCpuMaskOfThread(struct chrCpuMask* m);

/* 1 when both masks are known, non-empty, and share no CPU. */
int chrCpuMasksDisjoint(const struct chrCpuMask* a, const struct chrCpuMask* b);

#endif /* CHORUS_CPU_MASK_H_ */
