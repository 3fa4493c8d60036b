/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * redop_api.c: user reduction ops (pre-multiplied sum), kept per communicator.
 */
#include <string.h>
#include "api/api.h"
#include "commstate/comm.h"
#include "exec/reduce.h"
#include "log/check.h"
#include "log/log.h"

NCCL_API(ncclResult_t, ncclRedOpCreatePreMulSum, ncclRedOp_t* op, void* scalar, ncclDataType_t datatype,
         ncclScalarResidence_t residence, ncclComm_t comm) {
  CHECK(chrCommCheck(comm, "ncclRedOpCreatePreMulSum"));
  if (op == NULL) return chrFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: op is NULL");
  if (scalar == NULL) return chrFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: scalar is NULL");
  if ((int)datatype < 0 || (int)datatype >= ncclNumTypes)
    return chrFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: datatype %d is invalid", (int)datatype);
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate)
    return chrFail(ncclInvalidArgument, "ncclRedOpCreatePreMulSum: residence %d is invalid", (int)residence);
  pthread_mutex_lock(&comm->lock);
  int idx = -1;
  for (int i = 0; i < CHR_MAX_USER_REDOPS; i++)
    if (!comm->userOps[i].inUse) { idx = i; break; }
  if (idx < 0) {
    pthread_mutex_unlock(&comm->lock);
    return chrFail(ncclInvalidUsage, "ncclRedOpCreatePreMulSum: more than %d ops alive on this communicator",
                   CHR_MAX_USER_REDOPS);
  }
  struct chrUserRedOp* u = &comm->userOps[idx];
  memset(u, 0, sizeof(*u));
  u->inUse = 1;
  u->type = datatype;
  u->residence = residence;
  u->scalarPtr = scalar;
  if (residence == ncclScalarHostImmediate) memcpy(u->scalar, scalar, chrTypeSize(datatype));
  pthread_mutex_unlock(&comm->lock);
  *op = (ncclRedOp_t)(ncclNumOps + idx);
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclRedOpDestroy, ncclRedOp_t op, ncclComm_t comm) {
  CHECK(chrCommCheck(comm, "ncclRedOpDestroy"));
  int idx = (int)op - ncclNumOps;
  if ((int)op < ncclNumOps)
    return chrFail(ncclInvalidArgument, "ncclRedOpDestroy: op %d is a built-in op and cannot be destroyed", (int)op);
  pthread_mutex_lock(&comm->lock);
  if (idx >= CHR_MAX_USER_REDOPS || !comm->userOps[idx].inUse) {
    pthread_mutex_unlock(&comm->lock);
    return chrFail(ncclInvalidArgument, "ncclRedOpDestroy: op %d was not created on this communicator", (int)op);
  }
  comm->userOps[idx].inUse = 0;
  pthread_mutex_unlock(&comm->lock);
  return ncclSuccess;
}
