/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * unimplemented_api.c: functions of the NCCL 2.30 API that Chorus does not implement yet.
 * Each is exported (so programs built against nccl.h link and load) and fails with
 * ncclInvalidUsage and a last-error text naming it. README.md lists them.
 */
#include "api/api.h"
#include "log/log.h"

#define NOT_YET(name) chrFail(ncclInvalidUsage, "%s is not implemented yet in Chorus (see README: not yet implemented)", name)

/* The host side of NCCL's device API (nccl_device.h, NCCL 2.28+), for kernels that communicate from
 * device code. Chorus has no device API yet; PyTorch 2.11 links against these two, so they exist (a
 * missing symbol would stop the program from loading at all). The arguments are opaque here. */
NCCL_API(ncclResult_t, ncclDevCommCreate, ncclComm_t comm, const void* requirements, void* outDevComm) {
  return NOT_YET("ncclDevCommCreate (NCCL's device API)");
}
NCCL_API(ncclResult_t, ncclDevCommDestroy, ncclComm_t comm, const void* devComm) {
  return NOT_YET("ncclDevCommDestroy (NCCL's device API)");
}
