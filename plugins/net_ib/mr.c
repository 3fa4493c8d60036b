/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c: memory registration. Every comm of a device shares the device's protection domain, so a
 * registration is an ibv_mr of that domain. Host memory, and GPU memory (NCCL_PTR_CUDA) where the
 * device takes it: through a peer-memory driver with ibv_reg_mr (the GPU address is pinned by
 * nvidia_peermem / nv_peer_mem), or as a dma-buf with ibv_reg_dmabuf_mr. A device with neither
 * refuses GPU memory here, with a WARN, instead of letting ibv_reg_mr fail obscurely.
 *
 * Access: local write and remote write (the peer's NIC writes receive buffers). GPU memory also gets
 * remote read while flushing is on: the flush is an RDMA read of the received bytes through the recv
 * comm's own loopback QP (flush.c), which the key must allow. Host memory is never read remotely.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ib_plugin.h"

static int accessOf(int type) {
  int a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
  if (type == NCCL_PTR_CUDA && ibConf.gdrFlush) a |= IBV_ACCESS_REMOTE_READ;
  return a;
}

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
  if (type == NCCL_PTR_CUDA && !ibDevTakesGpu(&ibDevs[c->dev])) {
    IB_WARN("regMr: %s does not take GPU memory: no peer-memory driver (nvidia_peermem, nv_peer_mem) is loaded and "
            "the device registers no dma-bufs (NCCL_DMABUF_ENABLE)",
            ibDevs[c->dev].fullName);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static ncclResult_t wrap(const ibComm* c, struct ibv_mr* mr, const void* data, size_t size, int type, void** mhandle) {
  if (mr == NULL) {
    const ibDev* d = &ibDevs[c->dev];
    IB_WARN("registering %zu bytes of %s memory at %p on %s failed: %s%s", size, type == NCCL_PTR_CUDA ? "GPU" : "host",
            data, d->fullName, strerror(errno),
            type == NCCL_PTR_CUDA && !d->peerMem ? " (no peer-memory driver is loaded: GPU memory registers here only "
                                                   "as a dma-buf, through regMrDmaBuf)"
                                                 : "");
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
  m->type = type;
  m->mr = mr;
  *mhandle = m;
  return ncclSuccess;
}

ncclResult_t ibRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  ibComm* c = comm;
  ncclResult_t res = checkArgs(c, data, size, type, mhandle);
  if (res != ncclSuccess) return res;
  return wrap(c, ibv_reg_mr(ibDevs[c->dev].pd, data, size, accessOf(type)), data, size, type, mhandle);
}

ncclResult_t ibRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  ibComm* c = comm;
  ncclResult_t res = checkArgs(c, data, size, type, mhandle);
  if (res != ncclSuccess) return res;
  if (!ibDevs[c->dev].dmabuf) {
    IB_WARN("regMrDmaBuf: %s registers no dma-bufs (ptrSupport has no NCCL_PTR_DMABUF)", ibDevs[c->dev].fullName);
    return ncclInvalidUsage;
  }
  if (fd < 0) {
    IB_WARN("regMrDmaBuf: bad dmabuf fd %d", fd);
    return ncclInvalidArgument;
  }
  struct ibv_mr* mr =
      ibv_reg_dmabuf_mr(ibDevs[c->dev].pd, offset, size, (uint64_t)(uintptr_t)data, fd, accessOf(type));
  return wrap(c, mr, data, size, type, mhandle);
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
