/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c: memory registration. Every comm of a device shares the device's protection domain, so a
 * registration is an ibv_mr of that domain, with local write and remote write access. Host memory and, where the device takes them, CUDA buffers
 * (ibv_reg_mr through a peer-memory driver, or a dmabuf with ibv_reg_dmabuf_mr).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ib_plugin.h"

/* Receive buffers are written by the peer's NIC; nothing is ever read remotely, so no remote read. */
#define IB_MR_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE)

static ncclResult_t checkArgs(const ibComm* c, const void* data, size_t size, int type, void** mhandle) {
  if (c == NULL || mhandle == NULL) return ncclInternalError;
  *mhandle = NULL;
  if (c->dev < 0 || c->dev >= ibNDevs) return ncclInternalError;
  if (data == NULL || size == 0) {
    IB_WARN("regMr: empty region (%p, %zu bytes)", data, size);
    return ncclInvalidArgument;
  }
  if (type != NCCL_PTR_HOST && type != NCCL_PTR_CUDA) {
    IB_WARN("regMr: unknown memory type %d", type);
    return ncclInvalidArgument;
  }
  if (type == NCCL_PTR_CUDA && !ibDevs[c->dev].dmabuf) {
    IB_WARN("regMr: %s does not take GPU memory", ibDevs[c->dev].fullName);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static ncclResult_t wrap(const ibComm* c, struct ibv_mr* mr, const void* data, size_t size, void** mhandle) {
  if (mr == NULL) {
    IB_WARN("registering %zu bytes at %p on %s failed: %s", size, data, ibDevs[c->dev].fullName, strerror(errno));
    return ncclSystemError;
  }
  ibMr* m = calloc(1, sizeof(*m));
  if (m == NULL) {
    ibv_dereg_mr(mr);
    IB_WARN("regMr: out of memory");
    return ncclSystemError;
  }
  m->magic = IB_MR_MAGIC;
  m->dev = c->dev;
  m->mr = mr;
  *mhandle = m;
  return ncclSuccess;
}

ncclResult_t ibRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  ibComm* c = comm;
  ncclResult_t res = checkArgs(c, data, size, type, mhandle);
  if (res != ncclSuccess) return res;
  return wrap(c, ibv_reg_mr(ibDevs[c->dev].pd, data, size, IB_MR_ACCESS), data, size, mhandle);
}

ncclResult_t ibRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  ibComm* c = comm;
  ncclResult_t res = checkArgs(c, data, size, type, mhandle);
  if (res != ncclSuccess) return res;
  if (fd < 0) {
    IB_WARN("regMrDmaBuf: bad dmabuf fd %d", fd);
    return ncclInvalidArgument;
  }
  struct ibv_mr* mr = ibv_reg_dmabuf_mr(ibDevs[c->dev].pd, offset, size, (uint64_t)(uintptr_t)data, fd, IB_MR_ACCESS);
  return wrap(c, mr, data, size, mhandle);
}

ncclResult_t ibDeregMr(void* comm, void* mhandle) {
  ibMr* m = mhandle;
  if (comm == NULL || m == NULL || m->magic != IB_MR_MAGIC) {
    IB_WARN("deregMr: %p is not a registration of this plugin", mhandle);
    return ncclInternalError;
  }
  int rc = ibv_dereg_mr(m->mr);
  m->magic = 0;
  free(m);
  if (rc != 0) {
    IB_WARN("ibv_dereg_mr failed: %s", strerror(rc));
    return ncclSystemError;
  }
  return ncclSuccess;
}
