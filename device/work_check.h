/* work_check.h: host-side checks of a plan against a group, before launch (work_check.cu). */
#ifndef CHORUS_DEVICE_WORK_CHECK_H_
#define CHORUS_DEVICE_WORK_CHECK_H_

#include "device/dev_group.h"

/* One work of `rank` on `channel`. */
ncclResult_t chrDevCheckWork(const struct chrDevGroup* g, int rank, int channel, const struct chrWork* w);

/* Every work of a plan (laid out as chrDevLaunch takes it), and that no p2p end is used from two
 * channels. */
ncclResult_t chrDevCheckPlan(const struct chrDevGroup* g, int rank, const struct chrWork* works, const int* nWorks,
                             int nChannels);

#endif /* CHORUS_DEVICE_WORK_CHECK_H_ */
