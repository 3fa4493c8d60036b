/* SPDX-License-Identifier: BSD-3-Clause */
/* work_check.h: host-side checks of a plan against a rank, before launch (work_check.cu). */
#ifndef CHORUS_DEVICE_WORK_CHECK_H_
#define CHORUS_DEVICE_WORK_CHECK_H_

#include "device/launch/dev_group.h"

/* One work of the rank on `channel`. */
ncclResult_t chrDevCheckWork(const struct chrDevRank* rk, int channel, const struct chrWork* w);

/* Every work of a plan (laid out as chrDevLaunch takes it), and that no p2p end is used from two
 * channels (in rk->p2pOwner, the rank's scratch table). The caller has checked nWorks[c] >= 0
 * (chrDevRankLaunch). */
ncclResult_t chrDevCheckPlan(struct chrDevRank* rk, const struct chrWork* works, const int* nWorks,
                             int nChannels);

#endif /* CHORUS_DEVICE_WORK_CHECK_H_ */
