/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * mr.c: memory registration of the libfabric net plugin.
 *
 * What the provider's MR mode bits ask of us, and where it is done:
 * - FI_MR_LOCAL: buffers we send from or receive into must be registered and their descriptor passed
 *   (otherwise host memory goes unregistered and the descriptor is NULL);
 * - FI_MR_HMEM: device memory must always be registered, with its interface (FI_HMEM_CUDA);
 * - FI_MR_PROV_KEY: the provider picks keys; otherwise we request a fresh key per registration;
 * - FI_MR_ENDPOINT: a registration is bound to the endpoint and enabled before use;
 * - FI_MR_VIRT_ADDR: remote addresses are virtual addresses, else offsets into the registration
 *   (only our own flush reads use remote addresses: data.c);
 * - FI_MR_ALLOCATED: only allocated memory may be registered; we register page-rounded ranges of the
 *   buffers we are given, which are allocated by definition.
 * Registrations are cached per domain and counted, so a later regMr of a sub-range (and regMr on any
 * comm of the device) reuses one: regIsGlobal = 1.
 */
#include <stdlib.h>
#include <string.h>
#include "ofi_plugin.h"

#define OFI_MR_MAGIC 0x4f4d5248u
#define OFI_PAGE 4096u

int ofiMrNeeded(const ofiDev* d, int type) {
  if (type == NCCL_PTR_CUDA) return 1;
  return (d->mrMode & FI_MR_LOCAL) != 0 || (ofiConf.forceFlush && d->rma);
}

static uint64_t accessFor(const ofiDev* d) {
  uint64_t a = FI_SEND | FI_RECV;
  if (d->rma) a |= FI_READ | FI_WRITE | FI_REMOTE_READ | FI_REMOTE_WRITE; /* flush reads, rendezvous */
  return a;
}

static ncclResult_t mrGetLocked(ofiDev* d, void* data, size_t size, int type, uint64_t access, ofiMrEntry** out) {
  uintptr_t base = (uintptr_t)data & ~(uintptr_t)(OFI_PAGE - 1);
  uintptr_t end = ((uintptr_t)data + size + OFI_PAGE - 1) & ~(uintptr_t)(OFI_PAGE - 1);
  for (ofiMrEntry* e = d->mrs; e != NULL; e = e->next)
    if (e->type == type && e->base <= base && e->end >= end) {
      e->refs++;
      *out = e;
      return ncclSuccess;
    }
  ofiMrEntry* e = calloc(1, sizeof(*e));
  if (e == NULL) {
    OFI_WARN("regMr: out of memory");
    return ncclSystemError;
  }
  struct iovec iov = {.iov_base = (void*)base, .iov_len = end - base};
  struct fi_mr_attr attr = {.mr_iov = &iov, .iov_count = 1, .access = access | accessFor(d)};
  attr.requested_key = (d->mrMode & FI_MR_PROV_KEY) ? 0 : d->nextKey++;
  attr.iface = type == NCCL_PTR_CUDA ? FI_HMEM_CUDA : FI_HMEM_SYSTEM;
  attr.device.cuda = 0; /* the provider finds the device from the pointer */
  int rc = fi_mr_regattr(d->domain, &attr, 0, &e->mr);
  if (rc == 0 && (d->mrMode & FI_MR_ENDPOINT)) {
    rc = fi_mr_bind(e->mr, &d->eps[0].ep->fid, 0); /* the only endpoint then (endpoint.c) */
    if (rc == 0) rc = fi_mr_enable(e->mr);
  }
  if (rc != 0) {
    OFI_WARN("regMr on %s: registering %zu bytes at %p (%s memory) failed: %s", d->name, (size_t)(end - base),
             (void*)base, type == NCCL_PTR_CUDA ? "CUDA" : "host", fi_strerror(-rc));
    if (e->mr) fi_close(&e->mr->fid);
    free(e);
    return ncclSystemError;
  }
  e->base = base;
  e->end = end;
  e->type = type;
  e->refs = 1;
  e->desc = fi_mr_desc(e->mr);
  e->key = fi_mr_key(e->mr);
  e->next = d->mrs;
  d->mrs = e;
  *out = e;
  return ncclSuccess;
}

ncclResult_t ofiMrGet(ofiDev* d, void* data, size_t size, int type, uint64_t access, ofiMrEntry** out) {
  *out = NULL;
  if (size == 0) return ncclSuccess; /* nothing to describe: a NULL descriptor is fine */
  pthread_mutex_lock(&d->mrLock);
  ncclResult_t res = mrGetLocked(d, data, size, type, access, out);
  pthread_mutex_unlock(&d->mrLock);
  return res;
}

void ofiMrPut(ofiDev* d, ofiMrEntry* e) {
  if (e == NULL) return;
  pthread_mutex_lock(&d->mrLock);
  if (--e->refs == 0) {
    for (ofiMrEntry** l = &d->mrs; *l; l = &(*l)->next)
      if (*l == e) {
        *l = e->next;
        break;
      }
    fi_close(&e->mr->fid);
    free(e);
  }
  pthread_mutex_unlock(&d->mrLock);
}

/* Entry points: with FI_THREAD_DOMAIN a registration waits for the device's lock, as every other
 * provider call does; a thread-safe domain needs only the cache's lock. */
static void domainLock(ofiDev* d) {
  if (!d->threads) pthread_mutex_lock(&d->lock);
}

static void domainUnlock(ofiDev* d) {
  if (!d->threads) pthread_mutex_unlock(&d->lock);
}

/* The device of a send or receive comm, checked. */
static ofiDev* commDev(void* comm) {
  ofiComm* c = comm;
  if (c == NULL || c->magic != ofiCommMagic()) return NULL;
  return c->own.dev;
}

ncclResult_t ofiRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (mhandle == NULL) return ncclInternalError;
  *mhandle = NULL;
  ofiDev* d = commDev(comm);
  if (d == NULL) {
    OFI_WARN("regMr: %p is not a comm of this plugin", comm);
    return ncclInternalError;
  }
  if (type != NCCL_PTR_HOST && !(type == NCCL_PTR_CUDA && d->hmem)) {
    OFI_WARN("regMr: memory type 0x%x is not supported on %s (ptrSupport 0x%x)", type, d->name,
             NCCL_PTR_HOST | (d->hmem ? NCCL_PTR_CUDA : 0));
    return ncclInternalError;
  }
  if (data == NULL && size > 0) {
    OFI_WARN("regMr: NULL buffer of %zu bytes", size);
    return ncclInternalError;
  }
  ofiMrHandle* mh = calloc(1, sizeof(*mh));
  if (mh == NULL) {
    OFI_WARN("regMr: out of memory");
    return ncclSystemError;
  }
  mh->magic = OFI_MR_MAGIC;
  mh->type = type;
  mh->dev = d;
  ncclResult_t res = ncclSuccess;
  if (ofiMrNeeded(d, type)) {
    domainLock(d);
    res = ofiMrGet(d, data, size, type, 0, &mh->entry);
    domainUnlock(d);
  }
  if (res != ncclSuccess) {
    free(mh);
    return res;
  }
  *mhandle = mh;
  return ncclSuccess;
}

ncclResult_t ofiRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle) {
  /* ptrSupport never has NCCL_PTR_DMABUF (libfabric 1.17 has no dmabuf registration), so a core that
   * honours it does not call this; host memory is still accepted. */
  if (type == NCCL_PTR_HOST) return ofiRegMr(comm, data, size, type, mhandle);
  if (mhandle != NULL) *mhandle = NULL;
  OFI_WARN("regMrDmaBuf: dmabuf registration (type 0x%x, fd %d) is not supported", type, fd);
  return ncclInternalError;
}

/* Checked view of an mhandle; NULL (and a WARN) when it is not ours. */
ofiMrHandle* ofiMrCheck(void* mhandle, const char* what) {
  ofiMrHandle* mh = mhandle;
  if (mh != NULL && mh->magic != OFI_MR_MAGIC) {
    OFI_WARN("%s: %p is not a registration of this plugin", what, mhandle);
    return NULL;
  }
  return mh;
}

ncclResult_t ofiDeregMr(void* comm, void* mhandle) {
  if (mhandle == NULL) return ncclSuccess;
  ofiMrHandle* mh = ofiMrCheck(mhandle, "deregMr");
  if (mh == NULL) return ncclInternalError;
  ofiDev* d = mh->dev; /* the registration lives in the domain, whichever comm it came through */
  if (mh->entry != NULL) {
    domainLock(d);
    ofiMrPut(d, mh->entry);
    domainUnlock(d);
  }
  mh->magic = 0;
  free(mh);
  return ncclSuccess;
}

ncclResult_t ofiGetDeviceMr(void* comm, void* mhandle, void** dptr_mhandle) {
  /* No device offload: there is no device-side copy. */
  if (dptr_mhandle != NULL) *dptr_mhandle = NULL;
  return ncclSuccess;
}
