/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_work.h: how the device side classifies a work (C and CUDA): its op numbering and whether the
 * work only moves bytes.
 */
#ifndef CHORUS_DEVICE_DEV_WORK_H_
#define CHORUS_DEVICE_DEV_WORK_H_

#include "hostdev/reduce_op.h"
#include "hostdev/work.h"

/* The kernels' ops: a work's op, a chrRedKind (hostdev/reduce_op.h), and after them a pure copy for
 * the works that do not reduce. */
enum {
  CHR_DEV_SUM = chrRedSum,
  CHR_DEV_PROD = chrRedProd,
  CHR_DEV_MAX = chrRedMax,
  CHR_DEV_MIN = chrRedMin,
  CHR_DEV_PREMULSUM = chrRedPreMulSum,
  CHR_DEV_SUMPOSTDIV = chrRedSumPostDiv,
  CHR_DEV_NUM_OPS = CHR_RED_KINDS,
  CHR_DEV_COPY = CHR_DEV_NUM_OPS
};

/* A work that only moves bytes: all-gather, broadcast, point-to-point and the tree's down pass move
 * one term unchanged (their op is Sum, which has no pre or post step), and so does a local copy
 * unless its op scales (PreMulSum) or divides (SumPostDiv). Such works run as byte copies whatever
 * their type, so every kernel can run them. */
CHR_HD int chrDevWorkIsCopy(const struct chrWork* w) {
  switch (w->pattern) {
    case CHR_PAT_RING_ALLGATHER:
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_P2P_SEND:
    case CHR_PAT_P2P_RECV:
    case CHR_PAT_TREE_DOWN: return 1;
    case CHR_PAT_LOCAL: return w->op != CHR_DEV_PREMULSUM && w->op != CHR_DEV_SUMPOSTDIV;
    default: return 0;
  }
}

/* Which kernel a work needs: -1 any (it copies), else type * (ops + 1) + op. */
CHR_HD int chrDevKernelKey(const struct chrWork* w) {
  return chrDevWorkIsCopy(w) ? -1 : (int)w->type * (CHR_DEV_NUM_OPS + 1) + (int)w->op;
}

/* Where the next launch of a plan's collective works stops. Each kernel reduces one type with one
 * op, so a group of calls that reduce differently runs as several launches, one after the other on
 * the rank's stream. Each launch holds WHOLE calls, on every channel: a call's works wait for each
 * other across channels (the tree's down pass waits for its up pass, which runs on another channel),
 * so a channel that ran ahead into a later call's copy-only works would wait in this launch for works
 * the next launch holds, and never finish. Channel c's works not yet launched are works[base[c] ..
 * collEnd[c]), in call order. Returns the first call the launch leaves out (INT32_MAX: all of them);
 * *key is the launch's kernel: that of the earliest call that reduces (-1 if none does). */
CHR_HD int32_t chrDevLaunchCut(const struct chrWork* works, const int* base, const int* collEnd, int nChannels,
                               int* key) {
  int32_t keyCall = INT32_MAX, cut = INT32_MAX;
  *key = -1;
  for (int c = 0; c < nChannels; c++)
    for (int i = base[c]; i < collEnd[c]; i++) {
      const int k = chrDevKernelKey(&works[i]);
      if (k >= 0 && works[i].call < keyCall) {
        keyCall = works[i].call;
        *key = k;
      }
    }
  for (int c = 0; c < nChannels; c++)
    for (int i = base[c]; i < collEnd[c]; i++) {
      const int k = chrDevKernelKey(&works[i]);
      if (k >= 0 && k != *key && works[i].call < cut) cut = works[i].call;
    }
  return cut;
}

/* The next launch's collective works: take[c] of channel c, from base[c] on (whole calls, up to
 * chrDevLaunchCut's cut); *key its kernel. Returns 1 if collective works remain after it (the last
 * launch, returning 0, also carries the point-to-point works). */
CHR_HD int chrDevLaunchNext(const struct chrWork* works, const int* base, const int* collEnd, int nChannels, int* take,
                            int* key) {
  const int32_t cut = chrDevLaunchCut(works, base, collEnd, nChannels, key);
  int left = 0;
  for (int c = 0; c < nChannels; c++) {
    take[c] = 0;
    while (base[c] + take[c] < collEnd[c] && works[base[c] + take[c]].call < cut) take[c]++;
    left |= base[c] + take[c] < collEnd[c];
  }
  return left;
}

#endif /* CHORUS_DEVICE_DEV_WORK_H_ */
