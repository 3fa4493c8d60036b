/* SPDX-License-Identifier: BSD-3-Clause */
/* cpu_mask.c: see cpu_mask.h. */
#include "util/cpu_mask.h"

#include <sched.h>
#include <string.h>

void chrCpuMaskOfThread(struct chrCpuMask* m) {
  memset(m, 0, sizeof(*m));
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return;
  for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
    if (!CPU_ISSET(cpu, &set)) continue;
    if (cpu >= 64 * CHR_CPU_MASK_WORDS) return; /* beyond what peers can compare: unknown */
    m->bits[cpu / 64] |= 1ull << (cpu % 64);
  }
  m->known = 1;
}

int chrCpuMasksDisjoint(const struct chrCpuMask* a, const struct chrCpuMask* b) {
  if (!a->known || !b->known) return 0;
  uint64_t anyA = 0, anyB = 0;
  for (int w = 0; w < CHR_CPU_MASK_WORDS; w++) {
    if (a->bits[w] & b->bits[w]) return 0;
    anyA |= a->bits[w];
    anyB |= b->bits[w];
  }
  return anyA != 0 && anyB != 0;
}
