/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_p2p.c: point-to-point messages between the ranks of a bootstrap.
 *
 * Connections are one-way: the sender connects to the receiver's listening socket the first time it
 * sends to it and keeps that connection; the receiver only reads from the connections it accepted.
 * (One-way also means no side ever closes a socket with unread data in it, which would reset the
 * connection and could destroy messages the other side has not read yet.)
 *
 * Every message is a chrBsMsgHdr {magic, src, secret, tag, size} and size bytes. The receiver reads
 * all its connections without blocking on any one of them (a small state machine per connection) and
 * queues complete messages by (src, tag); Recv takes the oldest message queued for its (peer, tag).
 * A header that fails validation drops that connection with a WARN; if it came from a known rank
 * that has no other connection open, later receives from that rank fail at once instead of waiting
 * for the timeout. At the connection limit the oldest connection that never named a rank makes room.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/bootstrap_internal.h"
#include "log/check.h"
#include "log/log.h"

#define P2P_SLICE_MS 100   /* longest poll: bounds how late the abort flag and a dead peer are seen */
#define PROBE_CONNECT_MS 2000 /* a liveness probe's connect; inconclusive (tried again) when it runs out */

static int aborted(const struct chrBootstrap* bs) {
  return bs->abortFlag != NULL && __atomic_load_n(bs->abortFlag, __ATOMIC_ACQUIRE) != 0;
}

ncclResult_t chrBsP2pSetup(struct chrBootstrap* bs) {
  int n = bs->nranks;
  bs->peerAddrs = calloc((size_t)n, sizeof(chrSockAddr));
  bs->sendFds = malloc(sizeof(int) * (size_t)n);
  bs->peerClosed = calloc((size_t)n, 1);
  if (bs->peerAddrs == NULL || bs->sendFds == NULL || bs->peerClosed == NULL)
    return chrFail(ncclSystemError, "bootstrap: out of memory for %d peers", n);
  for (int k = 0; k < n; k++) bs->sendFds[k] = -1;
  pthread_mutex_init(&bs->sendLock, NULL);
  pthread_mutex_init(&bs->recvLock, NULL);
  bs->locksReady = 1;
  return ncclSuccess;
}

static void freeInConn(struct chrBsInConn* c) {
  chrSockClose(&c->fd);
  free(c->data);
  c->data = NULL;
}

void chrBsP2pFree(struct chrBootstrap* bs) {
  chrSockClose(&bs->listenFd);
  if (bs->sendFds != NULL)
    for (int k = 0; k < bs->nranks; k++) chrSockClose(&bs->sendFds[k]);
  for (int i = 0; i < bs->nIn; i++) freeInConn(&bs->in[i]);
  while (bs->queueHead != NULL) {
    struct chrBsQueued* q = bs->queueHead;
    bs->queueHead = q->next;
    free(q->data);
    free(q);
  }
  if (bs->locksReady) {
    pthread_mutex_destroy(&bs->sendLock);
    pthread_mutex_destroy(&bs->recvLock);
  }
  free(bs->in);
  free(bs->pfds);
  free(bs->sendFds);
  free(bs->peerClosed);
  free(bs->peerAddrs);
  free(bs);
}

/* ---- receiving side (all with recvLock held) ---- */

static void enqueue(struct chrBootstrap* bs, struct chrBsQueued* q) {
  q->next = NULL;
  if (bs->queueTail != NULL)
    bs->queueTail->next = q;
  else
    bs->queueHead = q;
  bs->queueTail = q;
}

/* Unlink and return the oldest message queued for (src, tag), or NULL. */
static struct chrBsQueued* dequeue(struct chrBootstrap* bs, int src, int tag) {
  struct chrBsQueued* prev = NULL;
  for (struct chrBsQueued* q = bs->queueHead; q != NULL; prev = q, q = q->next) {
    if (q->src != src || q->tag != tag) continue;
    if (prev != NULL)
      prev->next = q->next;
    else
      bs->queueHead = q->next;
    if (bs->queueTail == q) bs->queueTail = prev;
    return q;
  }
  return NULL;
}

static void removeInConn(struct chrBootstrap* bs, int i) {
  freeInConn(&bs->in[i]);
  bs->in[i] = bs->in[bs->nIn - 1];
  bs->nIn--;
}

/* Drop connection i. A known sender's messages are now lost: receives from it fail from now on,
 * unless another live connection names the same sender (a stray or duplicate connection that
 * breaks says nothing about the one the rank really sends on). */
static void dropInConn(struct chrBootstrap* bs, int i, int warn, const char* why) {
  struct chrBsInConn* c = &bs->in[i];
  if (warn) {
    char name[CHR_SOCK_ADDR_STRLEN] = "?";
    chrSockAddr a;
    socklen_t l = sizeof(a);
    if (getpeername(c->fd, &a.sa, &l) == 0) chrSockAddrToString(&a, name, sizeof(name));
    if (c->src >= 0)
      WARN("bootstrap: rank %d dropped its connection from rank %d (%s): %s", bs->rank, c->src, name, why);
    else
      WARN("bootstrap: rank %d dropped a connection from %s: %s", bs->rank, name, why);
  }
  if (c->src >= 0) {
    int another = 0;
    for (int k = 0; k < bs->nIn && !another; k++) another = (k != i && bs->in[k].src == c->src);
    if (!another) bs->peerClosed[c->src] = 1;
  }
  removeInConn(bs, i);
}

static int checkHeader(struct chrBootstrap* bs, int i, char* why, size_t whySize) {
  struct chrBsInConn* c = &bs->in[i];
  const struct chrBsMsgHdr* h = &c->hdr;
  if (h->magic != CHR_BS_MSG_MAGIC) {
    snprintf(why, whySize, "bad magic 0x%08x (not a bootstrap message)", h->magic);
    return 0;
  }
  if (!chrBsSecretEqual(h->secret, bs->secret)) {
    snprintf(why, whySize, "wrong secret (a rank of another communicator, or another CHORUS_COMM_SECRET?)");
    return 0;
  }
  if (h->src < 0 || h->src >= bs->nranks || h->src == bs->rank) {
    snprintf(why, whySize, "source rank %d out of range (nranks %d)", h->src, bs->nranks);
    return 0;
  }
  if (c->src >= 0 && h->src != c->src) {
    snprintf(why, whySize, "source rank changed from %d to %d on one connection", c->src, h->src);
    return 0;
  }
  if (h->size > CHR_BOOTSTRAP_MAX_MSG) {
    snprintf(why, whySize, "message size %llu is over the limit", (unsigned long long)h->size);
    return 0;
  }
  return 1;
}

/* Read what connection i has now; queue every complete message. */
static void progressInConn(struct chrBootstrap* bs, int i) {
  struct chrBsInConn* c = &bs->in[i];
  chrSockErr err;
  char why[160];
  for (;;) {
    if (c->hdrOff < sizeof(c->hdr)) {
      if (chrSockProgress(c->fd, 0, &c->hdr, sizeof(c->hdr), &c->hdrOff, &err) != ncclSuccess) {
        /* Closed between messages is how a peer's Close looks: not worth a WARN. */
        int clean = (c->hdrOff == 0 && err.sysErrno == 0);
        dropInConn(bs, i, !clean, err.msg);
        return;
      }
      if (c->hdrOff < sizeof(c->hdr)) return;
      if (!checkHeader(bs, i, why, sizeof(why))) {
        dropInConn(bs, i, 1, why);
        return;
      }
      c->src = c->hdr.src;
      bs->peerClosed[c->src] = 0; /* a new connection from it: it is alive */
      c->dataOff = 0;
      c->data = malloc(c->hdr.size ? (size_t)c->hdr.size : 1);
      if (c->data == NULL) {
        snprintf(why, sizeof(why), "out of memory for a message of %llu bytes", (unsigned long long)c->hdr.size);
        dropInConn(bs, i, 1, why);
        return;
      }
    }
    if (chrSockProgress(c->fd, 0, c->data, (size_t)c->hdr.size, &c->dataOff, &err) != ncclSuccess) {
      dropInConn(bs, i, 1, err.msg);
      return;
    }
    if (c->dataOff < c->hdr.size) return;
    struct chrBsQueued* q = malloc(sizeof(*q));
    if (q == NULL) {
      dropInConn(bs, i, 1, "out of memory queueing a message");
      return;
    }
    q->src = c->hdr.src;
    q->tag = c->hdr.tag;
    q->size = c->hdr.size;
    q->data = c->data;
    c->data = NULL;
    c->hdrOff = 0;
    enqueue(bs, q);
  }
}

static void acceptIncoming(struct chrBootstrap* bs) {
  for (;;) {
    int fd = -1;
    chrSockErr err;
    if (chrSockTryAccept(bs->listenFd, &fd, NULL, &err) != ncclSuccess) {
      WARN("bootstrap: rank %d: %s", bs->rank, err.msg);
      return;
    }
    if (fd < 0) return;
    /* Each peer needs one connection; a few more cover reconnects. Beyond that it is abuse: make
     * room by dropping the oldest connection that never named a rank (a real peer names itself at
     * once, so idle strangers cannot lock it out); refuse only when every one is named. */
    if (bs->nIn >= 2 * bs->nranks + 16) {
      int oldest = -1;
      for (int k = 0; k < bs->nIn; k++)
        if (bs->in[k].src < 0 && (oldest < 0 || bs->in[k].acceptedNs < bs->in[oldest].acceptedNs)) oldest = k;
      if (oldest < 0) {
        WARN("bootstrap: rank %d refused a connection: %d already open", bs->rank, bs->nIn);
        chrSockClose(&fd);
        continue;
      }
      dropInConn(bs, oldest, 1, "too many connections open; this is the oldest that never named its rank");
    }
    if (bs->nIn == bs->inCap) {
      int cap = bs->inCap ? 2 * bs->inCap : 16;
      struct chrBsInConn* in = realloc(bs->in, sizeof(*in) * (size_t)cap);
      if (in == NULL) {
        WARN("bootstrap: rank %d refused a connection: out of memory", bs->rank);
        chrSockClose(&fd);
        return;
      }
      bs->in = in;
      bs->inCap = cap;
    }
    struct chrBsInConn* c = &bs->in[bs->nIn++];
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->src = -1;
    c->acceptedNs = chrSockNowNs();
  }
}

/* Poll the listening socket and every incoming connection (plus extraFd for extraEvents when it is
 * >= 0) for up to ms, and process what is ready. *extraRevents gets extraFd's events. */
static ncclResult_t pollIncoming(struct chrBootstrap* bs, int extraFd, short extraEvents, int ms,
                                 short* extraRevents) {
  int need = bs->nIn + 2;
  if (need > bs->pfdCap) {
    struct pollfd* p = realloc(bs->pfds, sizeof(*p) * (size_t)need);
    if (p == NULL) return chrFail(ncclSystemError, "bootstrap: out of memory polling %d connections", bs->nIn);
    bs->pfds = p;
    bs->pfdCap = need;
  }
  int nIn = bs->nIn;
  struct pollfd* pf = bs->pfds;
  pf[0] = (struct pollfd){.fd = bs->listenFd, .events = POLLIN};
  pf[1] = (struct pollfd){.fd = extraFd, .events = extraEvents}; /* fd -1 is ignored by poll */
  for (int i = 0; i < nIn; i++) pf[2 + i] = (struct pollfd){.fd = bs->in[i].fd, .events = POLLIN};
  int rc = poll(pf, (nfds_t)(nIn + 2), ms);
  if (rc < 0) {
    if (errno == EINTR) return ncclSuccess;
    return chrFail(ncclSystemError, "bootstrap: poll failed: %s", strerror(errno));
  }
  if (extraRevents != NULL) *extraRevents = pf[1].revents;
  if (rc == 0) return ncclSuccess;
  /* From the last, so that removing one does not move one still to visit. */
  for (int i = nIn - 1; i >= 0; i--)
    if (pf[2 + i].revents) progressInConn(bs, i);
  if (pf[0].revents & POLLIN) acceptIncoming(bs);
  return ncclSuccess;
}

static int sliceMs(int64_t deadlineNs) {
  if (deadlineNs == CHR_SOCK_FOREVER) return P2P_SLICE_MS;
  int64_t left = deadlineNs - chrSockNowNs();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  return ms < P2P_SLICE_MS ? (int)ms : P2P_SLICE_MS;
}

/* Has `peer` gone (its process exited or was killed)? Our outgoing connection to a peer carries only
 * our bytes, so the peer never writes on it: it becomes readable (EOF) or fails only when the peer's
 * side was closed, which the kernel does when the process ends. Without a connection yet, one is made
 * (sends would make it anyway): every peer listened before the address table was built, so a refusal
 * means its listening socket is gone. A sender holding sendLock is never waited for (trylock): then
 * this check is skipped and made on the next slice. 0 when alive or unknown. */
static int peerGone(struct chrBootstrap* bs, int peer) {
  if (peer == bs->rank || pthread_mutex_trylock(&bs->sendLock) != 0) return 0;
  int gone = 0;
  if (bs->sendFds[peer] < 0) {
    chrSockErr err;
    ncclResult_t r = chrSockConnectListening(&bs->peerAddrs[peer], chrSockDeadlineMs(PROBE_CONNECT_MS), bs->abortFlag,
                                             &bs->sendFds[peer], &err);
    gone = (r == ncclRemoteError);
  } else {
    gone = chrSockPeerClosed(bs->sendFds[peer]);
  }
  pthread_mutex_unlock(&bs->sendLock);
  return gone;
}

/* A peer that sent its last message and exited at once is gone, yet that message may still sit unread
 * in our socket (or its connection in our listen backlog): read everything there is before giving up.
 * Two passes: the first may accept the connection that the second reads. recvLock held. */
static int drainedMessage(struct chrBootstrap* bs, int peer, int tag) {
  for (int pass = 0; pass < 2; pass++) {
    if (pollIncoming(bs, -1, 0, 0, NULL) != ncclSuccess) return 0;
    for (struct chrBsQueued* q = bs->queueHead; q != NULL; q = q->next)
      if (q->src == peer && q->tag == tag) return 1;
  }
  return 0;
}

ncclResult_t chrBootstrapCheckPeer(struct chrBootstrap* bs, int peer) {
  if (bs == NULL || peer < 0 || peer >= bs->nranks) return ncclSuccess;
  int closed = 0;
  if (pthread_mutex_trylock(&bs->recvLock) == 0) {
    closed = bs->peerClosed[peer];
    pthread_mutex_unlock(&bs->recvLock);
  }
  if (closed || peerGone(bs, peer))
    return chrFail(ncclRemoteError, "bootstrap: rank %d is gone (its process exited or was killed); rank %d cannot go on",
                   peer, bs->rank);
  return ncclSuccess;
}

ncclResult_t chrBootstrapRecv(struct chrBootstrap* bs, int peer, int tag, void* data, size_t size) {
  if (bs == NULL) return chrFail(ncclInvalidArgument, "bootstrap: recv on a NULL bootstrap");
  if (peer < 0 || peer >= bs->nranks)
    return chrFail(ncclInvalidArgument, "bootstrap: rank %d: recv from rank %d out of range (nranks %d)", bs->rank,
                   peer, bs->nranks);
  if (size > 0 && data == NULL) return chrFail(ncclInvalidArgument, "bootstrap: recv of %zu bytes into NULL", size);
  ncclResult_t res = ncclSuccess;
  int64_t deadline = chrSockDeadlineSec(bs->timeoutSec);
  pthread_mutex_lock(&bs->recvLock);
  for (;;) {
    struct chrBsQueued* q = dequeue(bs, peer, tag);
    if (q != NULL) {
      if (q->size != size)
        res = chrFail(ncclInvalidUsage, "bootstrap: rank %d expected %zu bytes from rank %d (tag %d), got %llu", bs->rank,
                      size, peer, tag, (unsigned long long)q->size);
      else if (size > 0)
        memcpy(data, q->data, size);
      free(q->data);
      free(q);
      break;
    }
    if (bs->peerClosed[peer]) {
      res = chrFail(ncclRemoteError,
                    "bootstrap: rank %d closed its connection to rank %d (exited or failed?) before sending tag %d",
                    peer, bs->rank, tag);
      break;
    }
    if (peerGone(bs, peer) && !drainedMessage(bs, peer, tag)) {
      res = chrFail(ncclRemoteError, "bootstrap: rank %d is gone (its process exited or was killed) while rank %d waits for its message (tag %d)",
                    peer, bs->rank, tag);
      break;
    }
    if (aborted(bs)) {
      res = chrFail(ncclInternalError, "bootstrap: aborted while rank %d waits for rank %d (tag %d)", bs->rank, peer, tag);
      break;
    }
    int ms = sliceMs(deadline);
    if (ms == 0) {
      res = chrFail(ncclTimeout, "bootstrap: rank %d timed out after %lld s waiting for rank %d (tag %d, %zu bytes)",
                    bs->rank, (long long)bs->timeoutSec, peer, tag, size);
      break;
    }
    CHECK_GOTO(pollIncoming(bs, -1, 0, ms, NULL), res, unlock);
  }
unlock:
  pthread_mutex_unlock(&bs->recvLock);
  return res;
}

/* ---- sending side (with sendLock held) ---- */

/* Send len bytes on fd. While the socket is full, keep reading incoming messages when no receiver
 * holds the receive side, so that two ranks sending to each other first cannot block each other. */
static ncclResult_t sendDraining(struct chrBootstrap* bs, int fd, const void* buf, size_t len, int64_t deadline,
                                 chrSockErr* err) {
  size_t off = 0;
  for (;;) {
    CHECK(chrSockProgress(fd, 1, (void*)buf, len, &off, err));
    if (off == len) return ncclSuccess;
    if (aborted(bs)) return chrSockSetErr(err, ncclInternalError, "aborted");
    int ms = sliceMs(deadline);
    if (ms == 0) return chrSockSetErr(err, ncclTimeout, "timed out (%zu of %zu bytes sent)", off, len);
    if (pthread_mutex_trylock(&bs->recvLock) == 0) {
      short rev = 0;
      ncclResult_t r = pollIncoming(bs, fd, POLLOUT, ms, &rev);
      pthread_mutex_unlock(&bs->recvLock);
      if (r != ncclSuccess) return chrSockSetErr(err, r, "%s", chrThreadLastError());
    } else {
      short rev = 0;
      int64_t sliceDeadline = chrSockNowNs() + (int64_t)ms * 1000000LL;
      ncclResult_t r = chrSockWait(fd, POLLOUT, sliceDeadline, bs->abortFlag, &rev, err);
      if (r != ncclSuccess && r != ncclTimeout) return r;
    }
  }
}

static ncclResult_t sendSelf(struct chrBootstrap* bs, int tag, const void* data, size_t size) {
  struct chrBsQueued* q = malloc(sizeof(*q));
  char* copy = malloc(size ? size : 1);
  if (q == NULL || copy == NULL) {
    free(q);
    free(copy);
    return chrFail(ncclSystemError, "bootstrap: out of memory queueing %zu bytes to self", size);
  }
  if (size > 0) memcpy(copy, data, size);
  q->src = bs->rank;
  q->tag = tag;
  q->size = size;
  q->data = copy;
  pthread_mutex_lock(&bs->recvLock);
  enqueue(bs, q);
  pthread_mutex_unlock(&bs->recvLock);
  return ncclSuccess;
}

ncclResult_t chrBootstrapSend(struct chrBootstrap* bs, int peer, int tag, const void* data, size_t size) {
  if (bs == NULL) return chrFail(ncclInvalidArgument, "bootstrap: send on a NULL bootstrap");
  if (peer < 0 || peer >= bs->nranks)
    return chrFail(ncclInvalidArgument, "bootstrap: rank %d: send to rank %d out of range (nranks %d)", bs->rank, peer,
                   bs->nranks);
  if (size > 0 && data == NULL) return chrFail(ncclInvalidArgument, "bootstrap: send of %zu bytes from NULL", size);
  if ((uint64_t)size > CHR_BOOTSTRAP_MAX_MSG)
    return chrFail(ncclInvalidArgument, "bootstrap: send of %zu bytes is over the limit", size);
  if (aborted(bs))
    return chrFail(ncclInternalError, "bootstrap: rank %d: send to rank %d (tag %d) after abort", bs->rank, peer, tag);
  if (peer == bs->rank) return sendSelf(bs, tag, data, size);

  ncclResult_t res = ncclSuccess;
  chrSockErr err;
  char addr[CHR_SOCK_ADDR_STRLEN];
  int64_t deadline = chrSockDeadlineSec(bs->timeoutSec);
  pthread_mutex_lock(&bs->sendLock);
  if (bs->sendFds[peer] < 0) {
    ncclResult_t r = chrSockConnectListening(&bs->peerAddrs[peer], deadline, bs->abortFlag, &bs->sendFds[peer], &err);
    if (r != ncclSuccess) {
      res = chrFail(r, "bootstrap: rank %d cannot connect to rank %d at %s: %s", bs->rank, peer,
                    chrSockAddrToString(&bs->peerAddrs[peer], addr, sizeof(addr)), err.msg);
      goto unlock;
    }
  }
  struct chrBsMsgHdr hdr;
  memset(&hdr, 0, sizeof(hdr));
  hdr.magic = CHR_BS_MSG_MAGIC;
  hdr.src = bs->rank;
  hdr.secret = bs->secret;
  hdr.tag = tag;
  hdr.size = size;
  ncclResult_t r = sendDraining(bs, bs->sendFds[peer], &hdr, sizeof(hdr), deadline, &err);
  if (r == ncclSuccess) r = sendDraining(bs, bs->sendFds[peer], data, size, deadline, &err);
  if (r != ncclSuccess) {
    /* The peer may hold half a message: this connection cannot carry another one. */
    chrSockClose(&bs->sendFds[peer]);
    res = chrFail(r, "bootstrap: rank %d cannot send %zu bytes (tag %d) to rank %d: %s", bs->rank, size, tag, peer,
                  err.msg);
  }
unlock:
  pthread_mutex_unlock(&bs->sendLock);
  return res;
}
