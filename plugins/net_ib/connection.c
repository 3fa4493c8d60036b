/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connection.c: listen, connect, accept, close.
 *
 * Setup goes over one TCP socket (the socket helpers of plugins/support):
 *   sender   -> receiver: its connection info (QPs, LID/GID, MTU, and where its FIFO is), with the
 *                         handle's nonce
 *   receiver -> sender:   its connection info (QPs, LID/GID, MTU)
 *   sender   -> receiver: one byte 'R' once its QPs are ready to receive (RTR) and send (RTS)
 * Each side moves its QPs to RTR/RTS as soon as it knows the other's numbers, before it sends what
 * lets the peer start traffic, so no RDMA operation ever reaches a QP that cannot take it. Both
 * connect and accept are state machines that never wait on the peer: a call makes what progress the
 * socket allows and returns NULL until the connection is complete (the core calls again). The TCP
 * connect itself goes to a socket that is already listening, which the kernel completes at once.
 * The socket stays open for the life of the comms: when the peer process dies the kernel closes it,
 * and the data path turns that into an error instead of waiting forever (data.c, ibCheckPeer).
 * accept also makes the recv comm's flush QP when the device takes GPU memory and flushing is on
 * (NCCL_GDR_FLUSH_DISABLE unset): the core may register GPU receive buffers on any such comm.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib_plugin.h"

#define READY_BYTE 'R'

/* One connection in progress (sender side: keyed by ctx and handle; receiver side: in the listen comm). */
typedef struct ibPending {
  struct ibPending* next;
  void* ctx;
  uint8_t handle[IB_HANDLE_BYTES]; /* sender: the handle this connect was called with */
  ibComm* comm;
  ibConnInfo local;
  int stage;
  uint8_t out[IB_INFO_BYTES];
  size_t outOff;
  uint8_t in[IB_INFO_BYTES];
  size_t inOff;
  uint8_t ready;
  size_t readyOff;
  int64_t deadline;
} ibPending;

enum { ST_SEND_INFO, ST_RECV_INFO, ST_READY };

static pthread_mutex_t pendingLock = PTHREAD_MUTEX_INITIALIZER;
static ibPending* pendings; /* unfinished connects */

static ibComm* newComm(int dev, int isSend) {
  ibComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->dev = dev;
  c->isSend = isSend;
  c->fd = -1;
  return c;
}

static void freePending(ibPending* p) {
  if (p == NULL) return;
  ibCommDestroy(p->comm);
  free(p);
}

/* ---------------------------------------------------------------- listen */

ncclResult_t ibListen(void* ctx, int dev, void* handle, void** listenComm) {
  (void)ctx;
  if (handle == NULL || listenComm == NULL) return ncclInternalError;
  *listenComm = NULL;
  if (dev < 0 || dev >= ibNDevs) {
    IB_WARN("listen: device %d does not exist (%d devices)", dev, ibNDevs);
    return ncclInvalidArgument;
  }
  ibListenComm* lc = calloc(1, sizeof(*lc));
  if (lc == NULL) {
    IB_WARN("listen: out of memory");
    return ncclSystemError;
  }
  lc->dev = dev;
  lc->fd = -1;
  lc->prof = chrNetCtxProfiler(ctx);
  chrSockAddr bindAddr = ibConf.ifAddr;
  chrSockAddrSetPort(&bindAddr, 0);
  chrSockErr err = {{0}, 0};
  ncclResult_t res = chrSockListen(&bindAddr, 64, &lc->fd, &lc->h.addr, &err);
  if (res != ncclSuccess) {
    char a[CHR_SOCK_ADDR_STRLEN];
    IB_WARN("listen on %s (%s) failed: %s", ibConf.ifName, chrSockAddrToString(&bindAddr, a, sizeof(a)), err.msg);
    free(lc);
    return res;
  }
  chrPluginRandom(&lc->h.nonce, sizeof(lc->h.nonce));
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  ibHandleEncode(&lc->h, (uint8_t*)handle);
  *listenComm = lc;
  return ncclSuccess;
}

ncclResult_t ibCloseListen(void* listenComm) {
  ibListenComm* lc = listenComm;
  if (lc == NULL) return ncclSuccess;
  freePending(lc->pending);
  chrSockClose(&lc->fd);
  free(lc);
  return ncclSuccess;
}

/* Move bytes of one direction; *done when all len bytes have gone. Errors say which step. */
static ncclResult_t progress(ibComm* c, int isSend, void* buf, size_t len, size_t* off, const char* step, int* done) {
  chrSockErr err = {{0}, 0};
  ncclResult_t res = chrSockProgress(c->fd, isSend, buf, len, off, &err);
  if (res != ncclSuccess) {
    IB_WARN("connection setup on %s: %s failed: %s", ibDevs[c->dev].fullName, step, err.msg);
    return res == ncclRemoteError ? ncclRemoteError : ncclSystemError;
  }
  *done = (*off == len);
  return ncclSuccess;
}

static ncclResult_t checkDeadline(const ibPending* p, const char* who) {
  if (chrSockNowNs() < p->deadline) return ncclSuccess;
  IB_WARN("%s on %s: the peer did not complete the connection within %lld ms", who, ibDevs[p->comm->dev].fullName,
          (long long)ibConf.connectTimeoutMs);
  return ncclRemoteError;
}

/* ---------------------------------------------------------------- connect (sender) */

static ncclResult_t connectStart(void* ctx, int dev, const uint8_t* handle, ibPending** out) {
  ibHandle h;
  char err[256];
  if (ibHandleDecode(handle, &h, err, sizeof(err)) != 0) {
    IB_WARN("connect: the handle is not usable: %s", err);
    return ncclInvalidUsage;
  }
  ibPending* p = calloc(1, sizeof(*p));
  ibComm* c = newComm(dev, 1);
  if (p == NULL || c == NULL) {
    free(p);
    free(c);
    IB_WARN("connect: out of memory");
    return ncclSystemError;
  }
  p->ctx = ctx;
  memcpy(p->handle, handle, IB_HANDLE_BYTES);
  p->comm = c;
  c->prof = chrNetCtxProfiler(ctx);
  p->deadline = chrSockDeadlineMs(ibConf.connectTimeoutMs);
  chrSockErr serr = {{0}, 0};
  ncclResult_t res = chrSockConnect(&h.addr, p->deadline, NULL, &c->fd, &serr);
  if (res != ncclSuccess) {
    char a[CHR_SOCK_ADDR_STRLEN];
    IB_WARN("connect to %s failed: %s", chrSockAddrToString(&h.addr, a, sizeof(a)), serr.msg);
    freePending(p);
    return res;
  }
  res = ibCommCreateVerbs(c, ibConf.qpsPerConn, &p->local);
  if (res != ncclSuccess) {
    freePending(p);
    return res;
  }
  p->local.nonce = h.nonce;
  ibInfoEncode(&p->local, p->out);
  p->stage = ST_SEND_INFO;
  *out = p;
  return ncclSuccess;
}

/* Advance a connect; *complete once the comm is usable. */
static ncclResult_t connectProgress(ibPending* p, int* complete) {
  ibComm* c = p->comm;
  int done = 0;
  *complete = 0;
  if (p->stage == ST_SEND_INFO) {
    ncclResult_t res = progress(c, 1, p->out, IB_INFO_BYTES, &p->outOff, "sending the connection info", &done);
    if (res != ncclSuccess) return res;
    if (!done) return checkDeadline(p, "connect");
    p->stage = ST_RECV_INFO;
  }
  if (p->stage == ST_RECV_INFO) {
    ncclResult_t res = progress(c, 0, p->in, IB_INFO_BYTES, &p->inOff, "receiving the peer's connection info", &done);
    if (res != ncclSuccess) return res;
    if (!done) return checkDeadline(p, "connect");
    ibConnInfo remote;
    char err[256];
    if (ibInfoDecode(p->in, &remote, err, sizeof(err)) != 0) {
      IB_WARN("connect on %s: %s", ibDevs[c->dev].fullName, err);
      return ncclRemoteError;
    }
    if (remote.nonce != p->local.nonce) {
      IB_WARN("connect on %s: the listener answered with another connection's nonce", ibDevs[c->dev].fullName);
      return ncclRemoteError;
    }
    res = ibCommConnectQps(c, &p->local, &remote);
    if (res != ncclSuccess) return res;
    p->ready = READY_BYTE;
    p->stage = ST_READY;
  }
  if (p->stage == ST_READY) {
    ncclResult_t res = progress(c, 1, &p->ready, 1, &p->readyOff, "sending the ready byte", &done);
    if (res != ncclSuccess) return res;
    if (!done) return checkDeadline(p, "connect");
    *complete = 1;
  }
  return ncclSuccess;
}

ncclResult_t ibConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  (void)sendDevComm; /* host plugin: device offload requests are ignored */
  if (handle == NULL || sendComm == NULL) return ncclInternalError;
  *sendComm = NULL;
  if (dev < 0 || dev >= ibNDevs) {
    IB_WARN("connect: device %d does not exist (%d devices)", dev, ibNDevs);
    return ncclInvalidArgument;
  }
  pthread_mutex_lock(&pendingLock);
  ibPending** link = &pendings;
  while (*link && !((*link)->ctx == ctx && (*link)->comm->dev == dev && memcmp((*link)->handle, handle, IB_HANDLE_BYTES) == 0))
    link = &(*link)->next;
  ibPending* p = *link;
  if (p != NULL) *link = p->next; /* taken out while in use; put back if still unfinished */
  pthread_mutex_unlock(&pendingLock);
  ncclResult_t res = ncclSuccess;
  if (p == NULL) res = connectStart(ctx, dev, handle, &p);
  if (res != ncclSuccess) return res;
  int complete = 0;
  res = connectProgress(p, &complete);
  if (res != ncclSuccess) {
    freePending(p);
    return res;
  }
  if (complete) {
    *sendComm = p->comm;
    IB_TRACE("connected send comm %p on %s with %d QP(s)", (void*)p->comm, ibDevs[dev].fullName, p->comm->nQps);
    free(p);
    return ncclSuccess;
  }
  pthread_mutex_lock(&pendingLock);
  p->next = pendings;
  pendings = p;
  pthread_mutex_unlock(&pendingLock);
  return ncclSuccess;
}

/* ---------------------------------------------------------------- accept (receiver) */

static ncclResult_t acceptProgress(ibListenComm* lc, int* complete) {
  *complete = 0;
  ibPending* p = lc->pending;
  if (p == NULL) {
    int fd = -1;
    chrSockErr err = {{0}, 0};
    ncclResult_t res = chrSockTryAccept(lc->fd, &fd, NULL, &err);
    if (res != ncclSuccess) {
      IB_WARN("accept on %s failed: %s", ibDevs[lc->dev].fullName, err.msg);
      return res;
    }
    if (fd < 0) return ncclSuccess; /* nobody yet */
    p = calloc(1, sizeof(*p));
    ibComm* c = newComm(lc->dev, 0);
    if (p == NULL || c == NULL) {
      free(p);
      free(c);
      chrSockClose(&fd);
      IB_WARN("accept: out of memory");
      return ncclSystemError;
    }
    c->fd = fd;
    c->prof = lc->prof;
    p->comm = c;
    p->stage = ST_RECV_INFO;
    p->deadline = chrSockDeadlineMs(ibConf.connectTimeoutMs);
    lc->pending = p;
  }
  ibComm* c = p->comm;
  int done = 0;
  if (p->stage == ST_RECV_INFO) {
    ncclResult_t res = progress(c, 0, p->in, IB_INFO_BYTES, &p->inOff, "receiving the sender's connection info", &done);
    if (res == ncclSuccess && !done) res = checkDeadline(p, "accept");
    if (res != ncclSuccess) goto drop_stray;
    if (!done) return ncclSuccess;
    ibConnInfo remote;
    char err[256];
    int bad = ibInfoDecode(p->in, &remote, err, sizeof(err)) != 0;
    if (!bad && remote.nonce != lc->h.nonce) bad = snprintf(err, sizeof(err), "it does not know this listener's nonce");
    if (!bad && remote.fifoDepth == 0) bad = snprintf(err, sizeof(err), "it sent no FIFO, so it is not a sender");
    if (bad) {
      IB_WARN("accept on %s: dropped a connection that is not this listener's peer: %s", ibDevs[lc->dev].fullName, err);
      goto drop_stray;
    }
    res = ibCommCreateVerbs(c, (int)remote.nQps, &p->local);
    if (res != ncclSuccess) return res;
    res = ibCommConnectQps(c, &p->local, &remote);
    if (res == ncclSuccess && ibDevTakesGpu(&ibDevs[c->dev]) && ibConf.gdrFlush) res = ibCommCreateFlush(c);
    if (res != ncclSuccess) return res;
    p->local.nonce = lc->h.nonce;
    ibInfoEncode(&p->local, p->out);
    p->stage = ST_SEND_INFO;
  }
  if (p->stage == ST_SEND_INFO) {
    ncclResult_t res = progress(c, 1, p->out, IB_INFO_BYTES, &p->outOff, "sending the connection info", &done);
    if (res != ncclSuccess) return res;
    if (!done) return checkDeadline(p, "accept");
    p->stage = ST_READY;
  }
  if (p->stage == ST_READY) {
    ncclResult_t res = progress(c, 0, &p->ready, 1, &p->readyOff, "waiting for the sender's ready byte", &done);
    if (res != ncclSuccess) return res;
    if (!done) return checkDeadline(p, "accept");
    if (p->ready != READY_BYTE) {
      IB_WARN("accept on %s: the sender sent 0x%02x instead of its ready byte", ibDevs[lc->dev].fullName, p->ready);
      return ncclRemoteError;
    }
    *complete = 1;
  }
  return ncclSuccess;

drop_stray:
  /* Before the sender's info checks out, a failure is the stray connection's, not ours: drop it and
   * keep listening. */
  lc->pending = NULL;
  freePending(p);
  return ncclSuccess;
}

ncclResult_t ibAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  (void)recvDevComm;
  ibListenComm* lc = listenComm;
  if (lc == NULL || recvComm == NULL) return ncclInternalError;
  *recvComm = NULL;
  int complete = 0;
  ncclResult_t res = acceptProgress(lc, &complete);
  if (res != ncclSuccess) {
    freePending(lc->pending);
    lc->pending = NULL;
    return res;
  }
  if (complete) {
    *recvComm = lc->pending->comm;
    IB_TRACE("accepted recv comm %p on %s with %d QP(s)", (void*)lc->pending->comm, ibDevs[lc->dev].fullName,
             lc->pending->comm->nQps);
    free(lc->pending);
    lc->pending = NULL;
  }
  return ncclSuccess;
}

/* finalize(ctx): connects the core started through ctx and never finished are dropped. */
void ibConnectForget(void* ctx) {
  pthread_mutex_lock(&pendingLock);
  ibPending** link = &pendings;
  while (*link) {
    ibPending* p = *link;
    if (p->ctx == ctx) {
      *link = p->next;
      freePending(p);
    } else {
      link = &p->next;
    }
  }
  pthread_mutex_unlock(&pendingLock);
}

/* ---------------------------------------------------------------- close */

ncclResult_t ibCloseSend(void* sendComm) {
  ibCommDestroy(sendComm);
  return ncclSuccess;
}

ncclResult_t ibCloseRecv(void* recvComm) {
  ibCommDestroy(recvComm);
  return ncclSuccess;
}
