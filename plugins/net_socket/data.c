/*
 * data.c: isend / irecv / iflush / test of the TCP net plugin, and the helper threads.
 *
 * Requests of a comm live in a ring of NS_MAX_REQUESTS slots indexed by message sequence number, so
 * FIFO matching is simply "message k of the sender lands in receive k". Per message, the sender
 * writes a header {magic, eager, seq, size} on the control socket; a small ("eager") message follows
 * its header there, in the same sendmsg. A larger message is cut into at most one contiguous piece
 * per data socket (nsPieceOf, the same arithmetic on both sides) and each socket moves its pieces in
 * message order. The receiver learns the size from the header before it reads any piece, checks it
 * against the posted buffer and only then lets its data sockets read: bytes always go straight
 * between the user buffer and the kernel, never through a staging copy.
 *
 * Who moves bytes: the control socket is always driven by the caller (isend/irecv/test). Data
 * sockets are driven by test() itself when nThreads == 0 (inline, the default), or by nThreads helper
 * threads that each own nSocks/nThreads sockets. The caller publishes "messages < readyUpTo have
 * their size fixed" with one atomic store; helpers report finished pieces with an atomic decrement
 * of the request's piecesLeft. A failure anywhere marks the comm failed (first reason kept and
 * logged once); every later call on that comm returns the same error.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/uio.h>
#include <unistd.h>
#include "socket_plugin.h"

#define NS_PIECE_ALIGN 4096

static ncclResult_t failComm(nsComm* c, ncclResult_t res, const char* fmt, ...) __attribute__((format(printf, 3, 4)));

/* Record the first failure of a comm and log it once. Returns the comm's failure result. */
static ncclResult_t failComm(nsComm* c, ncclResult_t res, const char* fmt, ...) {
  int expected = 0;
  if (atomic_compare_exchange_strong(&c->failed, &expected, (int)res)) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->failMsg, sizeof(c->failMsg), fmt, ap);
    va_end(ap);
    NS_WARN("%s comm on %s: %s", c->isSend ? "send" : "recv", nsDevs[c->dev].name, c->failMsg);
  }
  return (ncclResult_t)atomic_load(&c->failed);
}

void nsPieceOf(const nsComm* c, uint64_t seq, size_t size, int eager, int sock, size_t* start, size_t* len) {
  *start = 0;
  *len = 0;
  if (eager || size == 0) return;
  size_t n = (size_t)c->nSocks;
  size_t nPieces = (size + NS_MIN_PIECE - 1) / NS_MIN_PIECE;
  if (nPieces > n) nPieces = n;
  size_t pieceSize = (size + nPieces - 1) / nPieces;
  pieceSize = (pieceSize + NS_PIECE_ALIGN - 1) / NS_PIECE_ALIGN * NS_PIECE_ALIGN;
  /* Message seq starts on socket seq % n, so small messages still spread over every socket. */
  size_t k = ((size_t)sock + n - (size_t)(seq % n)) % n;
  size_t s = k * pieceSize;
  if (k >= nPieces || s >= size) return;
  *start = s;
  *len = size - s < pieceSize ? size - s : pieceSize;
}

static int countPieces(const nsComm* c, const nsRequest* r, uint64_t* threadMask) {
  int count = 0;
  *threadMask = 0;
  for (int j = 0; j < c->nSocks; j++) {
    size_t start, len;
    nsPieceOf(c, r->seq, r->size, r->eager, j, &start, &len);
    if (len > 0) {
      count++;
      if (c->nThreads > 0) *threadMask |= 1ULL << (j / (c->nSocks / c->nThreads));
    }
  }
  return count;
}

/* Let data sockets work on messages < upTo; wake the helper threads that got work. */
static void publish(nsComm* c, uint64_t upTo, uint64_t threadMask) {
  atomic_store(&c->readyUpTo, upTo); /* seq_cst: pairs with the helper's sleeping flag */
  for (int t = 0; t < c->nThreads; t++) {
    if (!(threadMask & (1ULL << t))) continue;
    if (atomic_load(&c->threads[t].sleeping)) {
      uint64_t one = 1;
      ssize_t rc = write(c->threads[t].evfd, &one, sizeof(one));
      (void)rc; /* a full counter already means "wake up" */
    }
  }
}

/* Move bytes of data socket j for as many messages as the socket allows now. Returns 1 if any byte
 * moved, 0 if not, -1 if the comm failed. */
static int progressSock(nsComm* c, int j) {
  int moved = 0;
  nsSockState* st = &c->sock[j];
  for (;;) {
    if (st->seq >= atomic_load_explicit(&c->readyUpTo, memory_order_acquire)) return moved;
    nsRequest* r = &c->reqs[st->seq % NS_MAX_REQUESTS];
    size_t start, len;
    nsPieceOf(c, st->seq, r->size, r->eager, j, &start, &len);
    if (len > 0) {
      size_t before = st->off;
      chrSockErr err = {{0}};
      ncclResult_t res = chrSockProgress(c->fds[j], c->isSend, r->data + start, len, &st->off, &err);
      if (res != ncclSuccess) {
        failComm(c, res, "data socket %d, message %llu: %s", j, (unsigned long long)st->seq, err.msg);
        return -1;
      }
      if (st->off != before) moved = 1;
      if (st->off < len) return moved;
      atomic_fetch_sub_explicit(&r->piecesLeft, 1, memory_order_release);
    }
    st->seq++;
    st->off = 0;
  }
}

/* Sender: write headers (and eager payloads) of posted messages in order. */
static ncclResult_t progressSendCtrl(nsComm* c) {
  while (c->ctrlSeq < c->postSeq) {
    nsRequest* r = &c->reqs[c->ctrlSeq % NS_MAX_REQUESTS];
    if (c->ctrlOff == 0)
      c->hdr = (nsMsgHdr){.magic = NS_MSG_MAGIC, .eager = (uint32_t)r->eager, .seq = r->seq, .size = r->size};
    size_t payload = r->eager ? r->size : 0;
    size_t total = sizeof(c->hdr) + payload;
    struct iovec iov[2];
    int nIov = 0;
    if (c->ctrlOff < sizeof(c->hdr)) {
      iov[nIov].iov_base = (char*)&c->hdr + c->ctrlOff;
      iov[nIov++].iov_len = sizeof(c->hdr) - c->ctrlOff;
    }
    if (payload > 0) {
      size_t done = c->ctrlOff > sizeof(c->hdr) ? c->ctrlOff - sizeof(c->hdr) : 0;
      iov[nIov].iov_base = r->data + done;
      iov[nIov++].iov_len = payload - done;
    }
    struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)nIov};
    ssize_t n = sendmsg(c->ctrlFd, &m, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0) {
      int e = errno;
      if (e == EINTR) continue;
      if (e == EAGAIN || e == EWOULDBLOCK) return ncclSuccess;
      int remote = (e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ETIMEDOUT || e == EHOSTUNREACH);
      return failComm(c, remote ? ncclRemoteError : ncclSystemError, "control socket, message %llu: send failed: %s",
                      (unsigned long long)r->seq, strerror(e));
    }
    c->ctrlOff += (size_t)n;
    if (c->ctrlOff < total) return ncclSuccess;
    r->ctrlDone = 1;
    c->ctrlOff = 0;
    c->ctrlSeq++;
  }
  return ncclSuccess;
}

/* Receiver: read the header of the next message once its receive is posted, check it, read an
 * eager payload straight into the user buffer, then open the message to the data sockets. */
static ncclResult_t progressRecvCtrl(nsComm* c) {
  while (c->ctrlSeq < c->postSeq) {
    nsRequest* r = &c->reqs[c->ctrlSeq % NS_MAX_REQUESTS];
    chrSockErr err = {{0}};
    if (!c->hdrValid) {
      ncclResult_t res = chrSockProgress(c->ctrlFd, 0, &c->hdr, sizeof(c->hdr), &c->ctrlOff, &err);
      if (res != ncclSuccess)
        return failComm(c, res, "control socket, waiting for message %llu: %s", (unsigned long long)c->ctrlSeq,
                        err.msg);
      if (c->ctrlOff < sizeof(c->hdr)) return ncclSuccess;
      if (c->hdr.magic != NS_MSG_MAGIC || c->hdr.seq != c->ctrlSeq || c->hdr.eager > 1)
        return failComm(c, ncclSystemError,
                        "control socket: corrupt header for message %llu (magic 0x%x, seq %llu, eager %u)",
                        (unsigned long long)c->ctrlSeq, c->hdr.magic, (unsigned long long)c->hdr.seq, c->hdr.eager);
      if (c->hdr.size > r->capacity)
        return failComm(c, ncclSystemError,
                        "message %llu: the peer sends %llu bytes but the posted receive buffer holds only %zu",
                        (unsigned long long)c->ctrlSeq, (unsigned long long)c->hdr.size, r->capacity);
      c->hdrValid = 1;
      c->ctrlOff = 0;
      r->size = (size_t)c->hdr.size;
      r->eager = (int)c->hdr.eager;
      r->ev.sock.length = r->size;
      uint64_t mask;
      atomic_store_explicit(&r->piecesLeft, countPieces(c, r, &mask), memory_order_relaxed);
      publish(c, c->ctrlSeq + 1, mask);
    }
    if (r->eager) {
      ncclResult_t res = chrSockProgress(c->ctrlFd, 0, r->data, r->size, &c->ctrlOff, &err);
      if (res != ncclSuccess)
        return failComm(c, res, "control socket, payload of message %llu: %s", (unsigned long long)c->ctrlSeq,
                        err.msg);
      if (c->ctrlOff < r->size) return ncclSuccess;
    }
    r->ctrlDone = 1;
    c->hdrValid = 0;
    c->ctrlOff = 0;
    c->ctrlSeq++;
  }
  return ncclSuccess;
}

static ncclResult_t progressComm(nsComm* c) {
  ncclResult_t res = c->isSend ? progressSendCtrl(c) : progressRecvCtrl(c);
  if (res != ncclSuccess) return res;
  if (c->nThreads == 0)
    for (int j = 0; j < c->nSocks; j++)
      if (progressSock(c, j) < 0) break;
  return (ncclResult_t)atomic_load(&c->failed);
}

/* ---------------------------------------------------------------- helper threads */

static void* helperMain(void* arg) {
  nsThread* t = arg;
  nsComm* c = t->comm;
  int per = c->nSocks / c->nThreads;
  int first = t->index * per;
  struct pollfd pfd[NS_MAX_SOCKS + 1];
  while (!atomic_load(&c->stopping) && !atomic_load(&c->failed)) {
    int moved = 0;
    for (int j = first; j < first + per; j++) {
      int m = progressSock(c, j);
      if (m < 0) return NULL;
      moved |= m;
    }
    if (moved) continue;
    /* Nothing moved: sleep until a socket is ready, new work is published, or the comm closes. */
    atomic_store(&t->sleeping, 1);
    int n = 0;
    uint64_t ready = atomic_load(&c->readyUpTo);
    for (int j = first; j < first + per; j++)
      if (c->sock[j].seq < ready) pfd[n++] = (struct pollfd){.fd = c->fds[j], .events = c->isSend ? POLLOUT : POLLIN};
    pfd[n++] = (struct pollfd){.fd = t->evfd, .events = POLLIN};
    if (!atomic_load(&c->stopping)) poll(pfd, (nfds_t)n, 1000);
    atomic_store(&t->sleeping, 0);
    if (pfd[n - 1].revents & POLLIN) {
      uint64_t v;
      ssize_t rc = read(t->evfd, &v, sizeof(v));
      (void)rc;
    }
  }
  return NULL;
}

ncclResult_t nsCommStart(nsComm* c) {
  for (int t = 0; t < c->nThreads; t++) {
    nsThread* th = &c->threads[t];
    th->comm = c;
    th->index = t;
    th->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (th->evfd < 0) {
      NS_WARN("eventfd failed: %s", strerror(errno));
      return ncclSystemError;
    }
    int e = pthread_create(&th->tid, NULL, helperMain, th);
    if (e != 0) {
      NS_WARN("creating helper thread %d failed: %s", t, strerror(e));
      return ncclSystemError;
    }
    th->started = 1;
  }
  return ncclSuccess;
}

void nsCommFree(nsComm* c) {
  atomic_store(&c->stopping, 1);
  for (int t = 0; t < c->nThreads; t++) {
    nsThread* th = &c->threads[t];
    if (th->started) {
      uint64_t one = 1;
      ssize_t rc = write(th->evfd, &one, sizeof(one));
      (void)rc;
      pthread_join(th->tid, NULL);
    }
    if (th->evfd >= 0) close(th->evfd);
  }
  /* Close profiler events of requests the core abandoned. */
  for (int i = 0; i < NS_MAX_REQUESTS; i++) {
    nsRequest* r = &c->reqs[i];
    if (r->used && r->eHandle != NULL && c->prof != NULL) c->prof(&r->eHandle, 1, r->phandle, NS_PROF_PLUGIN_ID, &r->ev);
  }
  chrSockClose(&c->ctrlFd);
  for (int j = 0; j < c->nSocks; j++) chrSockClose(&c->fds[j]);
  free(c);
}

/* ---------------------------------------------------------------- API */

static void profStart(nsComm* c, nsRequest* r, void* phandle) {
  r->phandle = phandle;
  r->eHandle = NULL;
  if (c->prof == NULL || phandle == NULL) return;
  r->ev.type = 1;
  r->ev.sock.fd = c->nSocks > 0 ? c->fds[r->seq % (uint64_t)c->nSocks] : c->ctrlFd;
  r->ev.sock.op = c->isSend ? 0 : 1;
  r->ev.sock.length = r->capacity;
  c->prof(&r->eHandle, 0, phandle, NS_PROF_PLUGIN_ID, &r->ev);
}

ncclResult_t nsIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle, void** request) {
  nsComm* c = sendComm;
  if (c == NULL || request == NULL || !c->isSend || (data == NULL && size > 0)) {
    NS_WARN("isend: bad arguments (comm %p, data %p, size %zu)", sendComm, data, size);
    return ncclInternalError;
  }
  *request = NULL;
  ncclResult_t res = (ncclResult_t)atomic_load(&c->failed);
  if (res != ncclSuccess) return res;
  nsRequest* r = &c->reqs[c->postSeq % NS_MAX_REQUESTS];
  if (r->used) return ncclSuccess; /* NS_MAX_REQUESTS in flight: the core retries */
  r->used = 1;
  r->seq = c->postSeq;
  r->data = data;
  r->capacity = size;
  r->size = size;
  r->eager = size > 0 && size <= nsConf.eagerBytes;
  r->ctrlDone = 0;
  uint64_t mask;
  atomic_store_explicit(&r->piecesLeft, countPieces(c, r, &mask), memory_order_relaxed);
  profStart(c, r, phandle);
  c->postSeq++;
  publish(c, c->postSeq, mask);
  *request = r;
  /* Start moving now (lowest latency). A failure found here is kept in the comm and reported by
   * the next test/isend/irecv, so the request handed out stays valid. */
  (void)progressComm(c);
  return ncclSuccess;
}

ncclResult_t nsIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles, void** phandles,
                     void** request) {
  nsComm* c = recvComm;
  if (c == NULL || request == NULL || c->isSend || data == NULL || sizes == NULL) {
    NS_WARN("irecv: bad arguments");
    return ncclInternalError;
  }
  if (n != 1) {
    NS_WARN("irecv: %d buffers in one request, but maxRecvs is 1", n);
    return ncclInternalError;
  }
  if (data[0] == NULL && sizes[0] > 0) {
    NS_WARN("irecv: NULL buffer of %zu bytes", sizes[0]);
    return ncclInternalError;
  }
  *request = NULL; /* NCCL_NET_OPTIONAL_RECV_COMPLETION needs nothing special: we always complete */
  ncclResult_t res = (ncclResult_t)atomic_load(&c->failed);
  if (res != ncclSuccess) return res;
  nsRequest* r = &c->reqs[c->postSeq % NS_MAX_REQUESTS];
  if (r->used) return ncclSuccess;
  r->used = 1;
  r->seq = c->postSeq;
  r->data = data[0];
  r->capacity = sizes[0];
  r->size = 0;
  r->eager = 0;
  r->ctrlDone = 0;
  atomic_store_explicit(&r->piecesLeft, 0, memory_order_relaxed);
  profStart(c, r, phandles ? phandles[0] : NULL);
  c->postSeq++;
  *request = r;
  (void)progressComm(c); /* see nsIsend */
  return ncclSuccess;
}

ncclResult_t nsIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  /* Host memory only (ptrSupport = NCCL_PTR_HOST): received bytes are visible once test() says done,
   * so there is nothing to flush. A NULL request with success means exactly that to the core. */
  if (recvComm == NULL || request == NULL) return ncclInternalError;
  *request = NULL;
  return ncclSuccess;
}

ncclResult_t nsTest(void* request, int* done, int* sizes) {
  nsRequest* r = request;
  if (r == NULL || done == NULL || r->comm == NULL || !r->used) {
    NS_WARN("test: invalid or already completed request %p", request);
    return ncclInternalError;
  }
  nsComm* c = r->comm;
  *done = 0;
  ncclResult_t res = progressComm(c);
  if (res != ncclSuccess) return res;
  if (!r->ctrlDone || atomic_load_explicit(&r->piecesLeft, memory_order_acquire) != 0) {
    if (c->nThreads > 0) sched_yield(); /* helpers are moving the bytes; give them the core */
    return ncclSuccess;
  }
  if (sizes != NULL) sizes[0] = r->size > INT_MAX ? INT_MAX : (int)r->size;
  if (r->eHandle != NULL && c->prof != NULL) c->prof(&r->eHandle, 1, r->phandle, NS_PROF_PLUGIN_ID, &r->ev);
  r->eHandle = NULL;
  r->used = 0;
  *done = 1;
  return ncclSuccess;
}

