/*
 * dev_work.h: how the device side classifies a work (C and CUDA): its op numbering and whether the
 * work only moves bytes.
 */
#ifndef CHORUS_DEVICE_DEV_WORK_H_
#define CHORUS_DEVICE_DEV_WORK_H_

#include "plan/work.h"

/* Ops, numbered as chrRedKind (core/exec/reduce.h; the launcher checks), plus a pure copy for the
 * works that do not reduce. */
enum { CHR_DEV_SUM = 0, CHR_DEV_PROD, CHR_DEV_MAX, CHR_DEV_MIN, CHR_DEV_PREMULSUM, CHR_DEV_SUMPOSTDIV,
       CHR_DEV_NUM_OPS, CHR_DEV_COPY = CHR_DEV_NUM_OPS };

#define CHR_DEV_NUM_TYPES 12 /* ncclNumTypes */

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

#endif /* CHORUS_DEVICE_DEV_WORK_H_ */
