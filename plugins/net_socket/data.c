/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.c: isend / irecv / iflush / test of the TCP net plugin, and the helper threads.
 *
 * Requests of a comm live in a ring indexed by post order (NS_SEND_REQUESTS isends, or
 * NS_RECV_REQUESTS receives of up to NS_MAX_RECVS buffers each). Per message, the sender writes a
 * header {magic, eager, seq, size, tag} on the control socket; a small ("eager") message follows its
 * header there, in the same sendmsg. A larger message is cut into at most one contiguous piece per
 * data socket (nsPieceOf, the same arithmetic on both sides). Matching is FIFO: the oldest posted
 * receive takes the next headers, one per buffer; in a grouped receive (n > 1) the header's tag picks
 * the buffer. The receiver learns the size from the header before any piece is read, checks it
 * against the buffer and only then queues the message's pieces: bytes always go straight between
 * the user buffer and the kernel, never through a staging copy.
 *
 * Who moves bytes: the control socket is always driven by the caller (isend/irecv/test). Each data
 * socket has a queue of the pieces it must move, in message order (socket_plugin.h, nsSockQueue):
 * the caller appends a message's pieces when the message is posted (sender) or its header arrived
 * (receiver), and the socket's mover takes them from the head: test() itself when nThreads == 0
 * (inline, the default), or the one of the nThreads helper threads that owns the socket. A piece
 * leaves its queue only once moved, and the request's piecesLeft drops after that: no mover ever
 * looks at a request slot, so slots can be reused however far ahead of an idle socket the others
 * run. A failure anywhere marks the comm failed (first reason kept and logged once); every later
 * call on that comm returns the same error.
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

static int threadOf(const nsComm* c, int sock) { return sock / (c->nSocks / c->nThreads); }

/* Queue the data-socket pieces of message seq (buffer b of request r). Returns the helper threads
 * that got work (bit per thread), for wake(). Caller thread only. */
static ncclResult_t queuePieces(nsComm* c, nsRequest* r, const nsBuf* b, uint64_t seq, uint64_t* threadMask) {
  size_t start[NS_MAX_SOCKS], len[NS_MAX_SOCKS];
  int count = 0;
  for (int j = 0; j < c->nSocks; j++) {
    nsPieceOf(c, seq, b->size, b->eager, j, &start[j], &len[j]);
    count += len[j] > 0;
  }
  if (count == 0) return ncclSuccess;
  /* Count first: a fast mover must never see piecesLeft reach 0 before every piece is counted. */
  atomic_fetch_add_explicit(&r->piecesLeft, count, memory_order_relaxed);
  for (int j = 0; j < c->nSocks; j++) {
    if (len[j] == 0) continue;
    nsSockQueue* q = &c->queues[j];
    uint64_t tail = atomic_load_explicit(&q->tail, memory_order_relaxed);
    if (tail - atomic_load_explicit(&q->head, memory_order_acquire) >= NS_QUEUE_LEN)
      return failComm(c, ncclInternalError, "data socket %d: more than %d pieces queued (message %llu)", j, NS_QUEUE_LEN,
                      (unsigned long long)seq);
    q->items[tail % NS_QUEUE_LEN] = (nsPiece){.data = b->data + start[j], .len = len[j], .req = r};
    atomic_store(&q->tail, tail + 1); /* seq_cst: pairs with the helper's sleeping flag (wake) */
    if (c->nThreads > 0) *threadMask |= 1ULL << threadOf(c, j);
  }
  return ncclSuccess;
}

/* Wake the helper threads in mask that sleep. */
static void wake(nsComm* c, uint64_t threadMask) {
  for (int t = 0; t < c->nThreads; t++) {
    if (!(threadMask & (1ULL << t)) || !atomic_load(&c->threads[t].sleeping)) continue;
    uint64_t one = 1;
    ssize_t rc = write(c->threads[t].evfd, &one, sizeof(one));
    (void)rc; /* a full counter already means "wake up" */
  }
}

static int queueEmpty(nsSockQueue* q) {
  return atomic_load_explicit(&q->head, memory_order_relaxed) == atomic_load(&q->tail);
}

/* Move bytes of data socket j for as many queued pieces as the socket takes now. Returns 1 if any
 * byte moved, 0 if not, -1 if the comm failed. Only the socket's mover calls this. */
static int progressSock(nsComm* c, int j) {
  int moved = 0;
  nsSockQueue* q = &c->queues[j];
  for (;;) {
    uint64_t head = atomic_load_explicit(&q->head, memory_order_relaxed);
    if (head == atomic_load_explicit(&q->tail, memory_order_acquire)) return moved;
    nsPiece* p = &q->items[head % NS_QUEUE_LEN];
    size_t before = q->off;
    chrSockErr err = {{0}};
    ncclResult_t res = chrSockProgress(c->fds[j], c->isSend, p->data, p->len, &q->off, &err);
    if (res != ncclSuccess) {
      failComm(c, res, "data socket %d: %s", j, err.msg);
      return -1;
    }
    if (q->off != before) moved = 1;
    if (q->off < p->len) return moved;
    nsRequest* r = p->req;
    q->off = 0;
    atomic_store_explicit(&q->head, head + 1, memory_order_release);
    /* Last touch of the request: once piecesLeft is 0 its slot may be reused. */
    atomic_fetch_sub_explicit(&r->piecesLeft, 1, memory_order_release);
  }
}

/* Sender: write headers (and eager payloads) of posted messages in order. */
static ncclResult_t progressSendCtrl(nsComm* c) {
  while (c->ctrlSeq < c->postSeq) {
    nsRequest* r = &c->reqs[c->ctrlSeq % (uint64_t)c->nReqs];
    nsBuf* b = &r->bufs[0];
    if (c->ctrlOff == 0)
      c->hdr = (nsMsgHdr){.magic = NS_MSG_MAGIC, .eager = (uint32_t)b->eager, .seq = c->ctrlSeq, .size = b->size, .tag = b->tag};
    size_t payload = b->eager ? b->size : 0;
    size_t total = sizeof(c->hdr) + payload;
    struct iovec iov[2];
    int nIov = 0;
    if (c->ctrlOff < sizeof(c->hdr)) {
      iov[nIov].iov_base = (char*)&c->hdr + c->ctrlOff;
      iov[nIov++].iov_len = sizeof(c->hdr) - c->ctrlOff;
    }
    if (payload > 0) {
      size_t done = c->ctrlOff > sizeof(c->hdr) ? c->ctrlOff - sizeof(c->hdr) : 0;
      iov[nIov].iov_base = b->data + done;
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
                      (unsigned long long)c->ctrlSeq, strerror(e));
    }
    c->ctrlOff += (size_t)n;
    if (c->ctrlOff < total) return ncclSuccess;
    r->ctrlDone = 1;
    c->ctrlOff = 0;
    c->ctrlSeq++;
  }
  return ncclSuccess;
}

/* Receiver: which buffer of r does a message with this tag fill? A plain receive (n = 1) takes any
 * tag (FIFO); a grouped one the first unfilled buffer posted with that tag. -1: none. */
static int matchBuffer(const nsRequest* r, int tag) {
  if (r->n == 1) return r->matched ? -1 : 0;
  for (int i = 0; i < r->n; i++)
    if (!(r->matched & (1u << i)) && r->bufs[i].tag == tag) return i;
  return -1;
}

/* Receiver: read the headers of posted receives in order, match each to its buffer, check it, read an
 * eager payload straight into the user buffer, and queue the pieces of the others. */
static ncclResult_t progressRecvCtrl(nsComm* c) {
  while (c->ctrlSeq < c->postSeq) {
    nsRequest* r = &c->reqs[c->ctrlSeq % (uint64_t)c->nReqs];
    chrSockErr err = {{0}};
    if (!c->hdrValid) {
      ncclResult_t res = chrSockProgress(c->ctrlFd, 0, &c->hdr, sizeof(c->hdr), &c->ctrlOff, &err);
      if (res != ncclSuccess)
        return failComm(c, res, "control socket, waiting for message %llu: %s", (unsigned long long)c->msgSeq, err.msg);
      if (c->ctrlOff < sizeof(c->hdr)) return ncclSuccess;
      if (c->hdr.magic != NS_MSG_MAGIC || c->hdr.seq != c->msgSeq || c->hdr.eager > 1 ||
          (c->hdr.eager && c->hdr.size == 0))
        return failComm(c, ncclSystemError,
                        "control socket: corrupt header for message %llu (magic 0x%x, seq %llu, eager %u, size %llu)",
                        (unsigned long long)c->msgSeq, c->hdr.magic, (unsigned long long)c->hdr.seq, c->hdr.eager,
                        (unsigned long long)c->hdr.size);
      int i = matchBuffer(r, c->hdr.tag);
      if (i < 0)
        return failComm(c, ncclInvalidUsage,
                        "message %llu has tag %d, which no unfilled buffer of the posted %d-buffer receive expects",
                        (unsigned long long)c->msgSeq, (int)c->hdr.tag, r->n);
      nsBuf* b = &r->bufs[i];
      if (c->hdr.size > b->capacity)
        return failComm(c, ncclSystemError,
                        "message %llu: the peer sends %llu bytes but the posted receive buffer holds only %zu",
                        (unsigned long long)c->msgSeq, (unsigned long long)c->hdr.size, b->capacity);
      c->hdrValid = 1;
      c->curBuf = i;
      c->ctrlOff = 0;
      r->matched |= 1u << i;
      r->nMatched++;
      b->size = (size_t)c->hdr.size;
      b->eager = (int)c->hdr.eager;
      b->ev.sock.length = b->size;
      uint64_t mask = 0;
      res = queuePieces(c, r, b, c->msgSeq, &mask);
      if (res != ncclSuccess) return res;
      wake(c, mask);
    }
    nsBuf* b = &r->bufs[c->curBuf];
    if (b->eager) {
      ncclResult_t res = chrSockProgress(c->ctrlFd, 0, b->data, b->size, &c->ctrlOff, &err);
      if (res != ncclSuccess)
        return failComm(c, res, "control socket, payload of message %llu: %s", (unsigned long long)c->msgSeq, err.msg);
      if (c->ctrlOff < b->size) return ncclSuccess;
    }
    c->hdrValid = 0;
    c->ctrlOff = 0;
    c->msgSeq++;
    if (r->nMatched == r->n) {
      r->ctrlDone = 1;
      c->ctrlSeq++;
    }
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
    /* Nothing moved: sleep until a socket with queued pieces is ready, a piece is queued, or the
     * comm closes. The flag is raised before the queues are looked at, and a producer looks at the
     * flag after queueing (both seq_cst), so a piece queued meanwhile is seen or wakes us. */
    atomic_store(&t->sleeping, 1);
    int n = 0;
    for (int j = first; j < first + per; j++)
      if (!queueEmpty(&c->queues[j])) pfd[n++] = (struct pollfd){.fd = c->fds[j], .events = c->isSend ? POLLOUT : POLLIN};
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

nsComm* nsCommAlloc(int isSend, int nSocks, int nThreads) {
  nsComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return NULL;
  c->isSend = isSend;
  c->nSocks = nSocks;
  c->nThreads = nThreads;
  c->nReqs = isSend ? NS_SEND_REQUESTS : NS_RECV_REQUESTS;
  int perReq = isSend ? 1 : NS_MAX_RECVS;
  c->reqs = calloc((size_t)c->nReqs, sizeof(*c->reqs));
  c->bufStore = calloc((size_t)c->nReqs * (size_t)perReq, sizeof(*c->bufStore));
  c->queues = calloc((size_t)(nSocks > 0 ? nSocks : 1), sizeof(*c->queues));
  if (c->reqs == NULL || c->bufStore == NULL || c->queues == NULL) {
    free(c->reqs);
    free(c->bufStore);
    free(c->queues);
    free(c);
    return NULL;
  }
  for (int i = 0; i < c->nReqs; i++) {
    c->reqs[i].comm = c;
    c->reqs[i].bufs = &c->bufStore[(size_t)i * (size_t)perReq];
  }
  c->ctrlFd = -1;
  for (int i = 0; i < NS_MAX_SOCKS; i++) c->fds[i] = -1;
  for (int t = 0; t < NS_MAX_THREADS; t++) c->threads[t].evfd = -1;
  return c;
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
  for (int i = 0; i < c->nReqs; i++) {
    nsRequest* r = &c->reqs[i];
    for (int k = 0; r->used && k < r->n; k++)
      if (r->bufs[k].eHandle != NULL && c->prof != NULL)
        c->prof(&r->bufs[k].eHandle, 1, r->bufs[k].phandle, NS_PROF_PLUGIN_ID, &r->bufs[k].ev);
  }
  chrSockClose(&c->ctrlFd);
  for (int j = 0; j < c->nSocks; j++) chrSockClose(&c->fds[j]);
  free(c->reqs);
  free(c->bufStore);
  free(c->queues);
  free(c);
}

/* ---------------------------------------------------------------- API */

static void profStart(nsComm* c, nsBuf* b, uint64_t seq, void* phandle) {
  b->phandle = phandle;
  b->eHandle = NULL;
  if (c->prof == NULL || phandle == NULL) return;
  b->ev.type = 1;
  b->ev.sock.fd = c->nSocks > 0 ? c->fds[seq % (uint64_t)c->nSocks] : c->ctrlFd;
  b->ev.sock.op = c->isSend ? 0 : 1;
  b->ev.sock.length = b->capacity;
  c->prof(&b->eHandle, 0, phandle, NS_PROF_PLUGIN_ID, &b->ev);
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
  nsRequest* r = &c->reqs[c->postSeq % (uint64_t)c->nReqs];
  if (r->used) return ncclSuccess; /* NS_SEND_REQUESTS in flight: the core retries */
  r->used = 1;
  r->n = 1;
  r->ctrlDone = 0;
  atomic_store_explicit(&r->piecesLeft, 0, memory_order_relaxed);
  nsBuf* b = &r->bufs[0];
  b->data = data;
  b->capacity = size;
  b->size = size;
  b->tag = tag;
  b->eager = size > 0 && size <= nsConf.eagerBytes;
  profStart(c, b, c->postSeq, phandle);
  uint64_t mask = 0;
  res = queuePieces(c, r, b, c->postSeq, &mask);
  if (res != ncclSuccess) return res;
  c->postSeq++;
  wake(c, mask);
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
  if (n < 1 || n > NS_MAX_RECVS || (n > 1 && tags == NULL)) {
    NS_WARN("irecv: %d buffers in one request (maxRecvs is %d)%s", n, NS_MAX_RECVS, n > 1 ? ", or no tags" : "");
    return ncclInternalError;
  }
  for (int i = 0; i < n; i++)
    if (data[i] == NULL && sizes[i] > 0) {
      NS_WARN("irecv: NULL buffer %d of %zu bytes", i, sizes[i]);
      return ncclInternalError;
    }
  *request = NULL; /* NCCL_NET_OPTIONAL_RECV_COMPLETION needs nothing special: we always complete */
  ncclResult_t res = (ncclResult_t)atomic_load(&c->failed);
  if (res != ncclSuccess) return res;
  nsRequest* r = &c->reqs[c->postSeq % (uint64_t)c->nReqs];
  if (r->used) return ncclSuccess;
  r->used = 1;
  r->n = n;
  r->matched = 0;
  r->nMatched = 0;
  r->ctrlDone = 0;
  atomic_store_explicit(&r->piecesLeft, 0, memory_order_relaxed);
  for (int i = 0; i < n; i++) {
    nsBuf* b = &r->bufs[i];
    b->data = data[i];
    b->capacity = sizes[i];
    b->size = 0;
    b->tag = tags ? tags[i] : 0;
    b->eager = 0;
    profStart(c, b, c->postSeq, phandles ? phandles[i] : NULL);
  }
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
  if (!r->ctrlDone) return ncclSuccess; /* the control socket is ours to drive: nothing to wait for */
  if (atomic_load_explicit(&r->piecesLeft, memory_order_acquire) != 0) {
    if (c->nThreads > 0) sched_yield(); /* helpers are moving the bytes; give them the core */
    return ncclSuccess;
  }
  for (int i = 0; i < r->n; i++) {
    nsBuf* b = &r->bufs[i];
    if (sizes != NULL) sizes[i] = b->size > INT_MAX ? INT_MAX : (int)b->size;
    if (b->eHandle != NULL && c->prof != NULL) c->prof(&b->eHandle, 1, b->phandle, NS_PROF_PLUGIN_ID, &b->ev);
    b->eHandle = NULL;
  }
  r->used = 0;
  *done = 1;
  return ncclSuccess;
}
