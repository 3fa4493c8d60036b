/* SPDX-License-Identifier: BSD-3-Clause */
/* work_check.h: host-side checks of a plan against a rank, before launch (work_check.cu). */
#ifndef CHORUS_DEVICE_WORK_CHECK_H_
#define CHORUS_DEVICE_WORK_CHECK_H_

#include "device/launch/dev_group.h"

/* One work of the rank on `channel`. */
ncclResult_t chrDevCheckWork(const struct chrDevRank* rk, int channel, const struct chrWork* w);

/* Every work and count of a launch (hostdev/dev_api.h, struct chrDevLaunch), and that no p2p end is
 * used from two channels (in rk->p2pOwner, the rank's scratch table). */
ncclResult_t chrDevCheckLaunch(struct chrDevRank* rk, const struct chrDevLaunch* launch);

#endif /* CHORUS_DEVICE_WORK_CHECK_H_ */
