/*
 * register_api.c: buffer registration. Host buffers need no registration for the host executor
 * (it stages through registered slots), so a handle only records the range, checked on deregister.
 */
#include <stdlib.h>
#include "api/api.h"
#include "comm/comm.h"
#include "log/check.h"
#include "log/log.h"

#define REG_MAGIC 0x52454721u

struct chrRegHandle {
  uint32_t magic;
  struct ncclComm* comm;
  void* buff;
  size_t size;
};

NCCL_API(ncclResult_t, ncclCommRegister, const ncclComm_t comm, void* buff, size_t size, void** handle) {
  CHECK(chrCommCheck(comm, "ncclCommRegister"));
  if (handle == NULL) return chrFail(ncclInvalidArgument, "ncclCommRegister: handle is NULL");
  if (buff == NULL && size > 0) return chrFail(ncclInvalidArgument, "ncclCommRegister: buff is NULL with size %zu", size);
  struct chrRegHandle* h = malloc(sizeof(*h));
  if (h == NULL) return chrFail(ncclSystemError, "ncclCommRegister: out of memory");
  h->magic = REG_MAGIC;
  h->comm = comm;
  h->buff = buff;
  h->size = size;
  *handle = h;
  return ncclSuccess;
}

NCCL_API(ncclResult_t, ncclCommDeregister, const ncclComm_t comm, void* handle) {
  CHECK(chrCommCheck(comm, "ncclCommDeregister"));
  struct chrRegHandle* h = handle;
  if (h == NULL || h->magic != REG_MAGIC)
    return chrFail(ncclInvalidArgument, "ncclCommDeregister: handle %p is not a registration", handle);
  if (h->comm != comm)
    return chrFail(ncclInvalidArgument, "ncclCommDeregister: handle %p belongs to another communicator", handle);
  h->magic = 0;
  free(h);
  return ncclSuccess;
}
