/* SPDX-License-Identifier: BSD-3-Clause */
/* chorus.h: Chorus extensions beyond NCCL's API. Include after nccl.h. */
#ifndef CHORUS_H_
#define CHORUS_H_

#include "nccl.h"

#define CHORUS_VERSION_MAJOR 0
#define CHORUS_VERSION_MINOR 1
#define CHORUS_VERSION_PATCH 0

#ifdef __cplusplus
extern "C" {
#endif

/* Chorus's own version string, e.g. "chorus 0.1.0 (NCCL API 2.30.7)". */
const char* ncclChorusVersionString(void);

/* The algorithm and protocol the planner chose for the last collective planned on comm
 * (e.g. "RING"/"SIMPLE"; "" before any). Tools look it up with dlsym, so they also run on NCCL. */
ncclResult_t ncclChorusLastPlan(ncclComm_t comm, const char** algo, const char** proto);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_H_ */
