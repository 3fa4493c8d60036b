/* SPDX-License-Identifier: BSD-3-Clause */
/* reqpool.c: the per-comm request pool (ib_logic.h): a bit mask over a fixed array, no allocation on
 * the data path. */
#include "ib_logic.h"

int ibReqAlloc(ibReqPool* p) {
  for (int i = 0; i < IB_MAX_REQUESTS; i++)
    if (!(p->used & (1u << i))) {
      p->used |= 1u << i;
      return i;
    }
  return -1;
}

int ibReqFree(ibReqPool* p, int idx) {
  if (idx < 0 || idx >= IB_MAX_REQUESTS || !(p->used & (1u << idx))) return -1;
  p->used &= ~(1u << idx);
  return 0;
}

int ibReqInUse(const ibReqPool* p) { return __builtin_popcount(p->used); }
