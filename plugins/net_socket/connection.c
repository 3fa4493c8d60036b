/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * connection.c: listen / connect / accept / close of the TCP net plugin.
 *
 * A connection is 1 control socket + nSocks data sockets. The listener picks nSocks and nThreads and
 * writes them, its address and a random nonce into the handle. The connector opens every socket
 * without blocking and sends each one a hello {magic, nonce, index, nSocks}. The acceptor reads the
 * hello of every incoming socket and keeps only those whose every field is right; anything else
 * (a port scanner, garbage, a connection meant for another listener) is closed and ignored.
 *
 * connect() and accept() are state machines: each call makes as much progress as it can without
 * waiting and returns success with a NULL comm until the connection is complete. The connector's
 * state lives in a list keyed by (ctx, dev, nonce), never in the handle bytes, which come from the
 * network and are not trusted to hold a pointer.
 */
#include <errno.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "socket_plugin.h"

#define NS_MAX_PENDING (2 * (NS_MAX_SOCKS + 1))
#define NS_LISTEN_MAGIC 0x4c53544eu

typedef struct {
  int fd;
  size_t off;
  nsHello hello;
  int64_t since;
} nsPending;

typedef struct {
  uint32_t magic;
  int fd;
  int dev;
  int done;
  nsHandle h;
  ncclProfilerCallback_t prof;
  nsPending pending[NS_MAX_PENDING];
  int nPending;
  int slots[NS_MAX_SOCKS + 1]; /* fd per hello index, -1 = not yet */
  int nFilled;
} nsListenComm;

enum { CONN_IDLE = 0, CONN_CONNECTING, CONN_HELLO, CONN_DONE };

typedef struct nsConnecting {
  struct nsConnecting* next;
  void* ctx;
  int dev;
  nsHandle h;
  int64_t deadline;
  ncclProfilerCallback_t prof;
  struct {
    int fd;
    int stage;
    size_t off;
    int64_t retryAt;
    int backoffMs;
    nsHello hello;
  } s[NS_MAX_SOCKS + 1];
} nsConnecting;

static pthread_mutex_t nsConnLock = PTHREAD_MUTEX_INITIALIZER;
static nsConnecting* nsConnList = NULL;

/*
 * CHORUS_SOCKET_LINK_TIMEOUT_MS: a cut link sends no RST or FIN, so without this TCP retransmits for
 * about 15 minutes (tcp_retries2) and a socket with nothing in flight waits forever. TCP_USER_TIMEOUT
 * fails a socket whose sent data stays unacknowledged that long; keepalive probes (first after a
 * third of it, then every sixth) give an idle socket something to be acknowledged, and with
 * TCP_USER_TIMEOUT set the kernel aborts it by the same measure. Both count from the last segment the
 * peer's kernel sent, which a slow but live peer keeps sending (ACKs, window updates), so this
 * catches dead links and hosts, never slow ranks. Returns 0, or -1 with errno when the kernel
 * refused an option (the caller fails: the promised bound would not hold).
 */
static int setLinkTimeout(int fd, int ms) {
  unsigned int userTimeout = (unsigned int)ms;
  int one = 1;
  int idle = ms / 3000 > 0 ? ms / 3000 : 1, intvl = ms / 6000 > 0 ? ms / 6000 : 1, cnt = 6;
  if (setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &userTimeout, sizeof(userTimeout)) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) != 0 ||
      setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)) != 0)
    return -1;
  return 0;
}

static ncclResult_t tuneSocket(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (nsConf.sockBuf > 0) {
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &nsConf.sockBuf, sizeof(nsConf.sockBuf));
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &nsConf.sockBuf, sizeof(nsConf.sockBuf));
  }
  if (nsConf.linkTimeoutMs > 0 && setLinkTimeout(fd, nsConf.linkTimeoutMs) != 0) {
    NS_WARN("CHORUS_SOCKET_LINK_TIMEOUT_MS=%d: setting TCP_USER_TIMEOUT/keepalive failed: %s", nsConf.linkTimeoutMs,
            strerror(errno));
    return ncclSystemError;
  }
  return ncclSuccess;
}

static nsComm* newComm(int isSend, int dev, const nsHandle* h, int ctrlFd, const int* dataFds,
                       ncclProfilerCallback_t prof) {
  nsComm* c = nsCommAlloc(isSend, (int)h->nSocks, (int)h->nThreads);
  if (c == NULL) return NULL;
  c->dev = dev;
  c->ctrlFd = ctrlFd;
  for (int i = 0; i < c->nSocks; i++) c->fds[i] = dataFds[i];
  c->prof = prof;
  return c;
}

/* ---------------------------------------------------------------- listen */

ncclResult_t nsListen(void* ctx, int dev, void* handle, void** listenComm) {
  if (handle == NULL || listenComm == NULL) return ncclInternalError;
  *listenComm = NULL;
  if (dev < 0 || dev >= nsNDevs) {
    NS_WARN("listen: device %d out of range [0,%d)", dev, nsNDevs);
    return ncclInternalError;
  }
  nsListenComm* lc = calloc(1, sizeof(*lc));
  if (lc == NULL) {
    NS_WARN("listen: out of memory");
    return ncclSystemError;
  }
  chrSockAddr bindAddr = nsDevs[dev].addr;
  chrSockAddrSetPort(&bindAddr, 0);
  chrSockErr err = {{0}};
  ncclResult_t res = chrSockListen(&bindAddr, 256, &lc->fd, &lc->h.addr, &err);
  if (res != ncclSuccess) {
    char a[CHR_SOCK_ADDR_STRLEN];
    NS_WARN("listen on %s (%s) failed: %s", nsDevs[dev].name, chrSockAddrToString(&bindAddr, a, sizeof(a)),
            err.msg);
    free(lc);
    return res;
  }
  lc->magic = NS_LISTEN_MAGIC;
  lc->dev = dev;
  lc->h.magic = NS_HANDLE_MAGIC;
  chrPluginRandom(&lc->h.nonce, sizeof(lc->h.nonce));
  lc->h.nThreads = (uint32_t)nsConf.nThreads;
  lc->h.nSocks = (uint32_t)(nsConf.nThreads > 0 ? nsConf.nThreads * nsConf.nSocksPerThread : nsConf.nSocksPerThread);
  lc->prof = ctx ? ((nsCtx*)ctx)->prof : NULL;
  for (int i = 0; i <= NS_MAX_SOCKS; i++) lc->slots[i] = -1;
  _Static_assert(sizeof(nsHandle) <= NCCL_NET_HANDLE_MAXSIZE, "handle too large");
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &lc->h, sizeof(lc->h));
  *listenComm = lc;
  return ncclSuccess;
}

ncclResult_t nsCloseListen(void* listenComm) {
  nsListenComm* lc = listenComm;
  if (lc == NULL) return ncclSuccess;
  if (lc->magic != NS_LISTEN_MAGIC) return ncclInternalError;
  for (int i = 0; i < lc->nPending; i++) close(lc->pending[i].fd);
  if (!lc->done)
    for (int i = 0; i <= NS_MAX_SOCKS; i++)
      if (lc->slots[i] >= 0) close(lc->slots[i]);
  chrSockClose(&lc->fd);
  lc->magic = 0;
  free(lc);
  return ncclSuccess;
}

/* ---------------------------------------------------------------- accept */

static void dropPending(nsListenComm* lc, int i, const char* why) {
  char a[CHR_SOCK_ADDR_STRLEN] = "?";
  chrSockAddr peer;
  socklen_t len = sizeof(peer);
  if (getpeername(lc->pending[i].fd, &peer.sa, &len) == 0) chrSockAddrToString(&peer, a, sizeof(a));
  NS_INFO(NCCL_NET, "ignoring a connection from %s to the listen port of %s: %s", a, nsDevs[lc->dev].name, why);
  close(lc->pending[i].fd);
  lc->pending[i] = lc->pending[--lc->nPending];
}

/* Read what hellos have arrived; place the valid ones, drop the rest. */
static void progressPending(nsListenComm* lc, int64_t now) {
  for (int i = 0; i < lc->nPending;) {
    nsPending* p = &lc->pending[i];
    ssize_t n = recv(p->fd, (char*)&p->hello + p->off, sizeof(p->hello) - p->off, MSG_DONTWAIT);
    if (n > 0) p->off += (size_t)n;
    if (n == 0) {
      dropPending(lc, i, "closed before its hello");
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      dropPending(lc, i, strerror(errno));
      continue;
    }
    if (p->off < sizeof(p->hello)) {
      if (nsConf.helloTimeoutMs >= 0 && now - p->since > nsConf.helloTimeoutMs * 1000000LL) {
        dropPending(lc, i, "no hello in time");
        continue;
      }
      i++;
      continue;
    }
    const nsHello* h = &p->hello;
    if (h->magic != NS_HELLO_MAGIC) {
      dropPending(lc, i, "bad magic");
    } else if (h->nonce != lc->h.nonce) {
      dropPending(lc, i, "wrong nonce (meant for another connection)");
    } else if (h->nSocks != lc->h.nSocks || h->index > lc->h.nSocks) {
      dropPending(lc, i, "bad socket index or count");
    } else if (lc->slots[h->index] >= 0) {
      dropPending(lc, i, "duplicate socket index");
    } else {
      lc->slots[h->index] = p->fd;
      lc->nFilled++;
      lc->pending[i] = lc->pending[--lc->nPending];
    }
  }
}

ncclResult_t nsAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** recvDevComm) {
  nsListenComm* lc = listenComm;
  if (recvComm == NULL || lc == NULL || lc->magic != NS_LISTEN_MAGIC) return ncclInternalError;
  *recvComm = NULL;
  if (lc->done) {
    NS_WARN("accept called again on a listen comm whose connection was already accepted");
    return ncclInternalError;
  }
  int64_t now = chrSockNowNs();
  for (int k = 0; k < NS_MAX_SOCKS + 1; k++) { /* take what is queued now */
    int fd = -1;
    chrSockErr err = {{0}};
    ncclResult_t res = chrSockTryAccept(lc->fd, &fd, NULL, &err);
    if (res != ncclSuccess) {
      NS_WARN("accept on %s: %s", nsDevs[lc->dev].name, err.msg);
      return res;
    }
    if (fd < 0) break;
    if (lc->nPending == NS_MAX_PENDING) {
      /* Make room by dropping the oldest. (Not simply the first: dropping moves the newest into its
       * place, so the sockets of a real connection arriving together would push each other out.) */
      int oldest = 0;
      for (int i = 1; i < lc->nPending; i++)
        if (lc->pending[i].since < lc->pending[oldest].since) oldest = i;
      dropPending(lc, oldest, "too many connections waiting for a hello");
    }
    if (tuneSocket(fd) != ncclSuccess) {
      close(fd);
      return ncclSystemError;
    }
    lc->pending[lc->nPending++] = (nsPending){.fd = fd, .off = 0, .since = now};
  }
  progressPending(lc, now);
  if (lc->nFilled < (int)lc->h.nSocks + 1) return ncclSuccess;

  nsComm* c = newComm(0, lc->dev, &lc->h, lc->slots[0], &lc->slots[1], lc->prof);
  if (c == NULL) {
    NS_WARN("accept: out of memory");
    return ncclSystemError;
  }
  lc->done = 1; /* the sockets now belong to the comm */
  ncclResult_t res = nsCommStart(c);
  if (res != ncclSuccess) {
    nsCommFree(c);
    return res;
  }
  *recvComm = c;
  return ncclSuccess;
}

/* ---------------------------------------------------------------- connect */

static int retryable(int e) {
  return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == EAGAIN ||
         e == ECONNRESET || e == EADDRNOTAVAIL;
}

static void freeConnecting(nsConnecting* st, int closeFds) {
  if (closeFds)
    for (uint32_t i = 0; i <= st->h.nSocks; i++)
      if (st->s[i].fd >= 0) close(st->s[i].fd);
  free(st);
}

/* Advance socket i of a connection; returns ncclSuccess unless the connection failed for good. */
static ncclResult_t progressOne(nsConnecting* st, int i, int64_t now) {
  char a[CHR_SOCK_ADDR_STRLEN];
  __typeof__(st->s[0])* s = &st->s[i];
  int e = 0;
  if (s->stage == CONN_IDLE) {
    if (now < s->retryAt) return ncclSuccess;
    s->fd = socket(st->h.addr.sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s->fd < 0) {
      NS_WARN("connect: socket() failed: %s", strerror(errno));
      return ncclSystemError;
    }
    if (tuneSocket(s->fd) != ncclSuccess) return ncclSystemError; /* the caller closes s->fd */
    if (connect(s->fd, &st->h.addr.sa, chrSockAddrLen(&st->h.addr)) == 0) {
      s->stage = CONN_HELLO;
    } else if (errno == EINPROGRESS || errno == EINTR) {
      s->stage = CONN_CONNECTING;
    } else {
      e = errno;
      goto failed;
    }
  }
  if (s->stage == CONN_CONNECTING) {
    struct pollfd p = {.fd = s->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) <= 0) return ncclSuccess;
    socklen_t len = sizeof(e);
    if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0) e = errno;
    if (e != 0) goto failed;
    s->stage = CONN_HELLO;
  }
  if (s->stage == CONN_HELLO) {
    ssize_t n = send(s->fd, (char*)&s->hello + s->off, sizeof(s->hello) - s->off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) s->off += (size_t)n;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      e = errno;
      goto failed;
    }
    if (s->off == sizeof(s->hello)) s->stage = CONN_DONE;
  }
  return ncclSuccess;
failed:
  chrSockClose(&s->fd);
  s->stage = CONN_IDLE;
  s->off = 0;
  if (retryable(e) && now < st->deadline) {
    s->backoffMs = s->backoffMs ? (s->backoffMs * 2 > 200 ? 200 : s->backoffMs * 2) : 10;
    s->retryAt = now + (int64_t)s->backoffMs * 1000000LL;
    return ncclSuccess;
  }
  NS_WARN("connect to %s failed: %s", chrSockAddrToString(&st->h.addr, a, sizeof(a)), strerror(e));
  return retryable(e) ? ncclRemoteError : ncclSystemError;
}

static ncclResult_t validateHandle(const nsHandle* h) {
  int fam = h->addr.sa.sa_family;
  if (h->magic != NS_HANDLE_MAGIC) {
    NS_WARN("connect: the handle is not from this plugin (bad magic 0x%llx)", (unsigned long long)h->magic);
    return ncclInternalError;
  }
  if ((fam != AF_INET && fam != AF_INET6) || chrSockAddrPort(&h->addr) <= 0) {
    NS_WARN("connect: the handle holds no valid address (family %d)", fam);
    return ncclInternalError;
  }
  if (h->nSocks < 1 || h->nSocks > NS_MAX_SOCKS || h->nThreads > NS_MAX_THREADS ||
      (h->nThreads > 0 && h->nSocks % h->nThreads != 0)) {
    NS_WARN("connect: the handle asks for %u sockets and %u threads, out of range", h->nSocks, h->nThreads);
    return ncclInternalError;
  }
  return ncclSuccess;
}

ncclResult_t nsConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  if (handle == NULL || sendComm == NULL) return ncclInternalError;
  *sendComm = NULL;
  nsHandle h;
  memcpy(&h, handle, sizeof(h));
  ncclResult_t res = validateHandle(&h);
  if (res != ncclSuccess) return res;

  pthread_mutex_lock(&nsConnLock);
  nsConnecting** link = &nsConnList;
  while (*link && !((*link)->ctx == ctx && (*link)->dev == dev && (*link)->h.nonce == h.nonce &&
                    chrSockAddrEqual(&(*link)->h.addr, &h.addr)))
    link = &(*link)->next;
  nsConnecting* st = *link;
  if (st == NULL) {
    st = calloc(1, sizeof(*st));
    if (st == NULL) {
      pthread_mutex_unlock(&nsConnLock);
      NS_WARN("connect: out of memory");
      return ncclSystemError;
    }
    st->ctx = ctx;
    st->dev = dev;
    st->h = h;
    st->prof = ctx ? ((nsCtx*)ctx)->prof : NULL;
    st->deadline = chrSockDeadlineMs(nsConf.connectTimeoutMs);
    for (uint32_t i = 0; i <= h.nSocks; i++) {
      st->s[i].fd = -1;
      st->s[i].hello = (nsHello){.magic = NS_HELLO_MAGIC, .nonce = h.nonce, .index = i, .nSocks = h.nSocks};
    }
    st->next = nsConnList;
    nsConnList = st;
    link = &nsConnList;
  }
  pthread_mutex_unlock(&nsConnLock);

  /* One thread drives one connect at a time (ABI), so st is ours outside the lock. */
  int64_t now = chrSockNowNs();
  int nDone = 0;
  for (uint32_t i = 0; i <= h.nSocks && res == ncclSuccess; i++) {
    res = progressOne(st, (int)i, now);
    if (st->s[i].stage == CONN_DONE) nDone++;
  }
  if (res == ncclSuccess && nDone < (int)h.nSocks + 1) {
    if (now <= st->deadline) return ncclSuccess;
    char a[CHR_SOCK_ADDR_STRLEN];
    NS_WARN("connect to %s: %d of %u sockets connected after %lld ms", chrSockAddrToString(&h.addr, a, sizeof(a)),
            nDone, h.nSocks + 1, (long long)nsConf.connectTimeoutMs);
    res = ncclRemoteError;
  }

  pthread_mutex_lock(&nsConnLock); /* finished, one way or the other: unlink */
  for (link = &nsConnList; *link && *link != st; link = &(*link)->next) {}
  if (*link) *link = st->next;
  pthread_mutex_unlock(&nsConnLock);
  if (res != ncclSuccess) {
    freeConnecting(st, 1);
    return res;
  }
  int dataFds[NS_MAX_SOCKS];
  for (uint32_t i = 0; i < h.nSocks; i++) dataFds[i] = st->s[i + 1].fd;
  nsComm* c = newComm(1, dev, &h, st->s[0].fd, dataFds, st->prof);
  if (c == NULL) {
    NS_WARN("connect: out of memory");
    freeConnecting(st, 1);
    return ncclSystemError;
  }
  freeConnecting(st, 0);
  res = nsCommStart(c);
  if (res != ncclSuccess) {
    nsCommFree(c);
    return res;
  }
  *sendComm = c;
  return ncclSuccess;
}

/* Drop unfinished connects made through ctx (the core gave up on them). */
void nsConnectForget(void* ctx) {
  pthread_mutex_lock(&nsConnLock);
  nsConnecting** link = &nsConnList;
  while (*link) {
    if ((*link)->ctx == ctx) {
      nsConnecting* st = *link;
      *link = st->next;
      freeConnecting(st, 1);
    } else {
      link = &(*link)->next;
    }
  }
  pthread_mutex_unlock(&nsConnLock);
}

ncclResult_t nsCloseSend(void* sendComm) {
  if (sendComm != NULL) nsCommFree(sendComm);
  return ncclSuccess;
}

ncclResult_t nsCloseRecv(void* recvComm) {
  if (recvComm != NULL) nsCommFree(recvComm);
  return ncclSuccess;
}
