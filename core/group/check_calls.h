/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * check_calls.h: CHORUS_CHECK_CALLS=1, the ranks' collective calls compared before they run
 * (group/check_calls.c says how).
 */
#ifndef CHORUS_CHECK_CALLS_H_
#define CHORUS_CHECK_CALLS_H_

#include "nccl.h"

struct chrCollTask;

/* Compare this group's collective calls with every other rank's, per communicator of the list.
 * ncclInvalidUsage (and the communicator failed) when they disagree; collective with the ranks. */
ncclResult_t chrCheckCalls(struct chrCollTask* list);

#endif /* CHORUS_CHECK_CALLS_H_ */
