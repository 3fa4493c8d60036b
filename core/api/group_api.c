/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * group_api.c: ncclGroupStart, ncclGroupEnd, ncclGroupSimulateEnd. The group's semantics and
 * per-thread state are in group/group.c; this file only makes them public.
 */
#include "api/api.h"
#include "group/group.h"

NCCL_API(ncclResult_t, ncclGroupStart, void) { return chrGroupStart(); }

NCCL_API(ncclResult_t, ncclGroupEnd, void) { return chrGroupEnd(); }

NCCL_API(ncclResult_t, ncclGroupSimulateEnd, ncclSimInfo_t* simInfo) { return chrGroupSimulateEnd(simInfo); }
