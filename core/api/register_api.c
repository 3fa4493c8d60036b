/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * register_api.c: buffer registration (comm/register.h keeps the handles).
 */
#include "api/api.h"
#include "comm/register.h"
#include "commstate/comm.h"
#include "log/check.h"
#include "log/log.h"

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  CHECK(chrCommCheck(comm, "ncclCommRegister"));
  if (handle == NULL) return chrFail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  if (buff == NULL && size > 0) return chrFail(ncclInvalidArgument, "ncclCommRegister: buff is NULL with size %zu", size);
  return chrRegAdd(comm, buff, size, handle);
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  CHECK(chrCommCheck(comm, "ncclCommDeregister"));
  if (handle == NULL) return chrFail(ncclInvalidArgument, "ncclCommDeregister: handle is NULL");
  return chrRegRemove(comm, handle);
}
