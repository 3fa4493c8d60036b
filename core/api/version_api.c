/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * version_api.c: version, error strings, last error.
 *
 * ncclGetVersion reports 2.30.7 (23007): the API and ABI level of our nccl.h (every function,
 * type, enum value and the ncclConfig_t layout of NCCL 2.30.7). Functions of that level that Chorus
 * does not implement yet fail with ncclInvalidUsage and say so; README.md lists them, and
 * docs/api-level.md explains the choice.
 */
#include <stdio.h>
#include <string.h>
#include "api/api.h"
#include "chorus.h"
#include "commstate/comm.h"
#include "log/log.h"

NCCL_API(ncclResult_t, ncclGetVersion, int* version) {
  if (version == NULL) return chrFail(ncclInvalidArgument, "ncclGetVersion: version is NULL");
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

NCCL_API(const char*, ncclGetErrorString, ncclResult_t result) {
  switch (result) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError: return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError: return "internal error - please report this issue to the Chorus developers";
    case ncclInvalidArgument: return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage: return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    case ncclTimeout: return "timeout";
    default: return "unknown result code";
  }
}

/* The comm's last error (which may come from another thread: the init thread, a peer failure),
 * unless this thread has seen a newer one. */
NCCL_API(const char*, ncclGetLastError, ncclComm_t comm) {
  if (comm != NULL && comm->magic == CHR_COMM_MAGIC && comm->lastError[0] &&
      comm->lastErrorSeq > chrThreadLastErrorSeq())
    return comm->lastError;
  return chrThreadLastError();
}

/* Deprecated in nccl.h for callers; we still have to define it. */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
NCCL_API(void, ncclResetDebugInit, void) {
  chrLogReset();
}
#pragma GCC diagnostic pop

NCCL_API(const char*, ncclChorusVersionString, void) {
  static char text[64];
  snprintf(text, sizeof(text), "chorus %d.%d.%d (NCCL API %d.%d.%d)", CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR,
           CHORUS_VERSION_PATCH, NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH);
  return text;
}

NCCL_API(ncclResult_t, ncclChorusLastPlan, ncclComm_t comm, const char** algo, const char** proto) {
  if (comm == NULL || comm->magic != CHR_COMM_MAGIC)
    return chrFail(ncclInvalidArgument, "ncclChorusLastPlan: comm is not a communicator");
  if (algo == NULL || proto == NULL) return chrFail(ncclInvalidArgument, "ncclChorusLastPlan: NULL output");
  *algo = comm->lastAlgo ? comm->lastAlgo : "";
  *proto = comm->lastProto ? comm->lastProto : "";
  return ncclSuccess;
}
