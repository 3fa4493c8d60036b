/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_link.c: links through the net plugin. Each link has CHR_STEPS staging slots in one
 * allocation (its own, or the caller's: the GPU path's host-mapped ends), registered once with the
 * plugin (regMr) when the link connects.
 * The plugin may refuse a request for now (NULL request): the post is then retried from test().
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "transport/net_link.h"
#include "transport/transport_ctx.h"

static ncclResult_t tryPost(struct chrLink* link, struct chrNetLink* nl, int slot) {
  void* req = NULL;
  void* data = nl->user[slot] ? nl->user[slot] : link->slots[slot];
  void* mh = nl->user[slot] ? nl->userMh[slot] : nl->mhandle;
  if (link->isSend) {
    CHECK(chrNetIsend(nl->net, nl->comm, data, nl->bytes[slot], nl->tag, mh, link->phandle[slot], &req));
  } else {
    size_t size = nl->user[slot] ? nl->bytes[slot] : link->stepSize;
    int tag = nl->tag;
    void* ph = link->phandle[slot];
    CHECK(chrNetIrecv(nl->net, nl->comm, 1, &data, &size, &tag, &mh, &ph, &req));
  }
  nl->req[slot] = req;
  nl->pending[slot] = (req == NULL);
  return ncclSuccess;
}

static ncclResult_t netPost(struct chrLink* link, int slot, size_t bytes) {
  struct chrNetLink* nl = link->priv;
  nl->bytes[slot] = bytes;
  nl->user[slot] = NULL;
  return tryPost(link, nl, slot);
}

static ncclResult_t netPostUser(struct chrLink* link, int slot, void* data, size_t bytes, void* handle) {
  struct chrNetLink* nl = link->priv;
  nl->bytes[slot] = bytes;
  nl->user[slot] = data;
  nl->userMh[slot] = handle;
  return tryPost(link, nl, slot);
}

static ncclResult_t netRegUser(struct chrLink* link, void* data, size_t bytes, void** handle) {
  struct chrNetLink* nl = link->priv;
  return chrNetRegMr(nl->net, nl->comm, data, bytes, NCCL_PTR_HOST, handle);
}

static void netDeregUser(struct chrLink* link, void* handle) {
  struct chrNetLink* nl = link->priv;
  chrNetDeregMr(nl->net, nl->comm, handle);
}

static ncclResult_t netTest(struct chrLink* link, int slot, int* done, size_t* bytes) {
  struct chrNetLink* nl = link->priv;
  *done = 0;
  if (nl->pending[slot]) {
    CHECK(tryPost(link, nl, slot));
    if (nl->pending[slot]) return ncclSuccess;
  }
  int size = 0;
  CHECK(chrNetTest(nl->net, nl->req[slot], done, &size));
  if (*done) {
    nl->req[slot] = NULL;
    if (bytes) *bytes = link->isSend ? nl->bytes[slot] : (size_t)size;
  }
  return ncclSuccess;
}

static void netClose(struct chrLink* link) {
  if (link == NULL) return;
  struct chrNetLink* nl = link->priv;
  if (nl != NULL) {
    if (nl->mhandle && nl->comm) chrNetDeregMr(nl->net, nl->comm, nl->mhandle);
    if (nl->comm) {
      if (link->isSend) chrNetCloseSend(nl->net, nl->comm);
      else chrNetCloseRecv(nl->net, nl->comm);
    }
    if (nl->ownsBuffer) free(nl->buffer);
    free(nl);
  }
  free(link);
}

const struct chrTransportOps chrNetTransportOps = {.name = "net", .post = netPost, .test = netTest, .close = netClose,
                                                   .regUser = netRegUser, .deregUser = netDeregUser,
                                                   .postUser = netPostUser,
                                                   .directMinParam = CHR_P_NET_DIRECT_MIN_BYTES};

ncclResult_t chrNetLinkCreate(const struct chrTransportCtx* ctx, int channel, int peer, int isSend, int dev,
                              void* netComm, size_t stepSize, char* slots, int memType, struct chrLink** out) {
  struct chrLink* link = calloc(1, sizeof(*link));
  struct chrNetLink* nl = calloc(1, sizeof(*nl));
  char* buffer = slots;
  ncclResult_t res = ncclSuccess;
  if (link == NULL || nl == NULL ||
      (slots == NULL && posix_memalign((void**)&buffer, 4096, stepSize * CHR_STEPS) != 0)) {
    res = chrFail(ncclSystemError, "out of memory for a net link (%zu bytes of slots)", stepSize * CHR_STEPS);
    goto fail_free;
  }
  nl->net = ctx->net;
  nl->comm = netComm;
  nl->buffer = buffer;
  nl->ownsBuffer = slots == NULL;
  nl->memType = slots == NULL ? NCCL_PTR_HOST : memType;
  /* The net ABI's tag is the sender's rank on both sides: isend passes its own rank, irecv the rank it
   * expects data from (plugins such as NCCL's IB match on it). */
  nl->tag = isSend ? ctx->rank : peer;
  link->ops = &chrNetTransportOps;
  link->peer = peer;
  link->channel = channel;
  link->isSend = isSend;
  link->stepSize = stepSize;
  link->priv = nl;
  ncclNetProperties_v12_t props;
  const int named = chrNetGetProperties(ctx->net, dev, &props) == ncclSuccess && props.name != NULL;
  snprintf(link->via, sizeof(link->via), "net device %d (%.24s)", dev, named ? props.name : "?");
  res = nl->memType == NCCL_PTR_CUDA ? chrNetTryRegMr(ctx->net, netComm, buffer, stepSize * CHR_STEPS, NCCL_PTR_CUDA,
                                                     &nl->mhandle)
                                      : chrNetRegMr(ctx->net, netComm, buffer, stepSize * CHR_STEPS, NCCL_PTR_HOST,
                                                    &nl->mhandle);
  if (res != ncclSuccess && nl->memType == NCCL_PTR_CUDA) { /* no GPUDirect here: host slots of its own */
    snprintf(nl->stagedWhy, sizeof(nl->stagedWhy), "net plugin device %d (%.24s) refused to register GPU memory "
             "(NCCL_PTR_CUDA): %s", dev, named ? props.name : "?", chrThreadLastError());
    nl->memType = NCCL_PTR_HOST;
    char* host = NULL;
    if (posix_memalign((void**)&host, 4096, stepSize * CHR_STEPS) != 0) {
      res = chrFail(ncclSystemError, "out of memory for the host slots of a net link (%zu bytes)", stepSize * CHR_STEPS);
      goto fail_close;
    }
    nl->buffer = buffer = host;
    nl->ownsBuffer = 1;
    res = chrNetRegMr(ctx->net, netComm, buffer, stepSize * CHR_STEPS, NCCL_PTR_HOST, &nl->mhandle);
  }
  if (res != ncclSuccess) goto fail_close;
  for (int i = 0; i < CHR_STEPS; i++) link->slots[i] = buffer + (size_t)i * stepSize;
  *out = link;
  return ncclSuccess;
fail_close:
  netClose(link); /* closes netComm too */
  return res;
fail_free:
  if (slots == NULL) free(buffer);
  free(nl);
  free(link);
  if (isSend) chrNetCloseSend(ctx->net, netComm);
  else chrNetCloseRecv(ctx->net, netComm);
  return res;
}

const char* chrNetLinkStagedWhy(const struct chrLink* link) {
  const struct chrNetLink* nl = link->priv;
  return nl->stagedWhy[0] ? nl->stagedWhy : NULL;
}

ncclResult_t chrNetLinkFlush(struct chrLink* link, int slot, size_t bytes, void** request) {
  struct chrNetLink* nl = link->priv;
  *request = NULL;
  if (nl->memType != NCCL_PTR_CUDA || link->isSend || bytes == 0) return ncclSuccess;
  if (bytes > (size_t)INT32_MAX) return chrFail(ncclInternalError, "net link flush of %zu bytes", bytes);
  void* data = link->slots[slot];
  int size = (int)bytes;
  void* mh = nl->mhandle;
  return chrNetIflush(nl->net, nl->comm, 1, &data, &size, &mh, request);
}

ncclResult_t chrNetLinkFlushTest(struct chrLink* link, void* request, int* done) {
  struct chrNetLink* nl = link->priv;
  int size = 0;
  return chrNetTest(nl->net, request, done, &size);
}
