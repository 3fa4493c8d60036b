/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c: memory registration of the TCP net plugin.
 *
 * TCP needs no pinned or registered memory: send()/recv() work on any host address. A registration is
 * therefore only a small record of what the core registered, which lets deregMr and the data path
 * catch a handle that is not ours. Only host memory is accepted (ptrSupport = NCCL_PTR_HOST).
 */
#include <stdlib.h>
#include "socket_plugin.h"

typedef struct {
  uint32_t magic;
  int type;
  void* data;
  size_t size;
} nsMr;

ncclResult_t nsRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (comm == NULL || mhandle == NULL) return ncclInternalError;
  *mhandle = NULL;
  if (type != NCCL_PTR_HOST) {
    NS_WARN("regMr: memory type 0x%x is not supported (host memory only; this plugin reports ptrSupport = "
            "NCCL_PTR_HOST)", type);
    return ncclInternalError;
  }
  nsMr* mr = malloc(sizeof(*mr));
  if (mr == NULL) {
    NS_WARN("regMr: out of memory");
    return ncclSystemError;
  }
  *mr = (nsMr){.magic = NS_MR_MAGIC, .type = type, .data = data, .size = size};
  *mhandle = mr;
  return ncclSuccess;
}

ncclResult_t nsRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  /* Never called by a core that honours ptrSupport (no NCCL_PTR_DMABUF); host memory still works. */
  return nsRegMr(comm, data, size, type, mhandle);
}

ncclResult_t nsDeregMr(void* comm, void* mhandle) {
  nsMr* mr = mhandle;
  if (mr == NULL) return ncclSuccess;
  if (mr->magic != NS_MR_MAGIC) {
    NS_WARN("deregMr: %p is not a registration of this plugin", mhandle);
    return ncclInternalError;
  }
  mr->magic = 0;
  free(mr);
  return ncclSuccess;
}

ncclResult_t nsGetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  /* No device offload: there is no device-side copy. */
  if (dptr_mhandle != NULL) *dptr_mhandle = NULL;
  return ncclSuccess;
}
