/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap_root.c: the bootstrap root, one detached thread per unique id.
 *
 * It accepts connections, reads each hello without blocking on any one client (a poll loop with a
 * small state machine per connection), checks it, and once all nranks ranks are in, sends each the
 * table of listen addresses and info blobs. Then it closes everything and the thread ends.
 *
 * What can go wrong, and what the root does:
 *   garbage or a client that closes before its hello is complete  -> WARN, drop it, go on
 *   a new connection while ROOT_MAX_PENDING are pending           -> WARN, drop the oldest pending
 *   a hello that is well-formed but wrong (secret, rank, nranks)  -> WARN, send a reject with the
 *                                                                   reason, go on waiting
 *   a registered rank closes its connection before the table     -> send every registered rank an
 *                                                                   abort naming it; end
 *   not all ranks in, CHORUS_BOOTSTRAP_TIMEOUT s after the first  -> send every registered rank an
 *                                                                   abort listing the missing; end
 *   a rank of this process gave up its init (chrBootstrapAbandon) -> send every registered rank an
 *                                                                   abort naming it; end
 * No input can crash the root: every length and index is checked before use.
 */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include "bootstrap/bootstrap_internal.h"
#include "log/check.h"
#include "log/log.h"

#define ROOT_MAX_PENDING 1024      /* connections still sending their hello */
#define ROOT_POLL_MAX_MS 1000      /* the loop looks at its deadlines at least this often */
#define ROOT_DRAIN_MS 2000         /* how long a rejected client gets to read its reject */
#define ROOT_SEND_TIMEOUT_SEC 10   /* cap for one reply send to one rank */
#define ROOT_BIND_RETRY_MS 50      /* NCCL_COMM_ID port still held: retry the bind this often */

enum { CONN_HEADER, CONN_INFO, CONN_DRAIN };

struct rootConn {
  int fd;
  int state;
  chrSockAddr peer;
  int64_t expireNs; /* drop it when still pending at this time */
  int64_t acceptedNs;
  struct chrBsHello hello;
  size_t off;
  char* info;
  size_t infoOff;
};

struct chrBsRoot {
  struct chrBsRoot* next; /* in this process's list of live roots (rootsLock) */
  chrSockAddr bound;
  _Atomic int abandoned;  /* a rank of this process will not join (abandonText says why) */
  char abandonText[CHR_BS_MAX_TEXT];
  int listenFd;
  uint64_t secret;
  int64_t timeoutSec;
  char addrStr[CHR_SOCK_ADDR_STRLEN];

  struct rootConn* conns; /* pending (hello not complete) and draining connections */
  int nConns;

  int nranks; /* -1 until the first complete hello */
  uint32_t infoSize;
  int nReady;
  int64_t deadlineNs; /* CHR_SOCK_FOREVER until the first complete hello */
  int* rankFd;        /* per rank, -1 until registered */
  chrSockAddr* rankAddr;
  char* infos; /* nranks * infoSize */
};

/* The roots running in this process, so that a rank of it that gives up its init can tell its root. */
static pthread_mutex_t rootsLock = PTHREAD_MUTEX_INITIALIZER;
static struct chrBsRoot* roots;

static void rootListed(struct chrBsRoot* r, int add) {
  pthread_mutex_lock(&rootsLock);
  if (add) {
    r->next = roots;
    roots = r;
  } else {
    for (struct chrBsRoot** l = &roots; *l != NULL; l = &(*l)->next)
      if (*l == r) {
        *l = r->next;
        break;
      }
  }
  pthread_mutex_unlock(&rootsLock);
}

void chrBootstrapAbandon(const ncclUniqueId* id, int rank, const char* why) {
  struct chrBsId bid;
  if (id == NULL) return;
  memcpy(&bid, id->internal, sizeof(bid));
  if (bid.magic != CHR_BS_ID_MAGIC) return;
  const uint64_t secret = chrBsJoinSecret(bid.secret);
  pthread_mutex_lock(&rootsLock);
  for (struct chrBsRoot* r = roots; r != NULL; r = r->next) {
    if (!chrSockAddrEqual(&r->bound, &bid.root) || !chrBsSecretEqual(r->secret, secret)) continue;
    if (atomic_load(&r->abandoned)) break;
    snprintf(r->abandonText, sizeof(r->abandonText), "rank %d gave up its init in the process that runs the root: %s",
             rank, why && why[0] ? why : "(no reason given)");
    atomic_store(&r->abandoned, 1);
    break;
  }
  pthread_mutex_unlock(&rootsLock);
}

static const char* connName(const struct rootConn* c, char* buf, size_t size) {
  return chrSockAddrToString(&c->peer, buf, size);
}

static void removeConn(struct chrBsRoot* r, int i) {
  chrSockClose(&r->conns[i].fd);
  free(r->conns[i].info);
  r->conns[i] = r->conns[r->nConns - 1];
  r->nConns--;
}

/* Send one reply (header + payload) to fd, best effort within the deadline. */
static ncclResult_t sendReply(int fd, uint32_t type, int nranks, uint32_t infoSize, ncclResult_t result,
                              const void* p1, size_t n1, const void* p2, size_t n2, int64_t deadlineNs,
                              chrSockErr* err) {
  struct chrBsReply rep;
  memset(&rep, 0, sizeof(rep));
  rep.magic = CHR_BS_REPLY_MAGIC;
  rep.type = type;
  rep.nranks = nranks;
  rep.infoSize = infoSize;
  rep.result = (int32_t)result;
  rep.payloadSize = (uint64_t)n1 + n2;
  CHECK(chrSockSendAll(fd, &rep, sizeof(rep), deadlineNs, NULL, err));
  CHECK(chrSockSendAll(fd, p1, n1, deadlineNs, NULL, err));
  CHECK(chrSockSendAll(fd, p2, n2, deadlineNs, NULL, err));
  return ncclSuccess;
}

/* Refuse a hello: WARN here, tell the client why, then let it read that before we close. */
static void rejectConn(struct chrBsRoot* r, int i, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
static void rejectConn(struct chrBsRoot* r, int i, const char* fmt, ...) {
  struct rootConn* c = &r->conns[i];
  char reason[CHR_BS_MAX_TEXT];
  char name[CHR_SOCK_ADDR_STRLEN];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(reason, sizeof(reason), fmt, ap);
  va_end(ap);
  WARN("bootstrap root %s: rejected %s: %s", r->addrStr, connName(c, name, sizeof(name)), reason);
  chrSockErr err;
  if (sendReply(c->fd, CHR_BS_REPLY_REJECT, r->nranks, r->infoSize, ncclInvalidUsage, reason, strlen(reason),
                NULL, 0, chrSockDeadlineMs(ROOT_DRAIN_MS), &err) != ncclSuccess) {
    removeConn(r, i);
    return;
  }
  /* Closing now with unread bytes from the client would reset the connection and could destroy the
   * reject before the client reads it. Half-close and discard its input until it closes. */
  shutdown(c->fd, SHUT_WR);
  free(c->info);
  c->info = NULL;
  c->state = CONN_DRAIN;
  c->expireNs = chrSockNowNs() + (int64_t)ROOT_DRAIN_MS * 1000000LL;
}

static void dropConn(struct chrBsRoot* r, int i, const char* why) {
  char name[CHR_SOCK_ADDR_STRLEN];
  WARN("bootstrap root %s: dropped connection from %s: %s", r->addrStr, connName(&r->conns[i], name, sizeof(name)),
       why);
  removeConn(r, i);
}

/* Send every registered rank an abort with this text, and WARN it here. */
static void abortAll(struct chrBsRoot* r, ncclResult_t result, const char* text) {
  WARN("bootstrap root %s: %s; telling the ranks that are in", r->addrStr, text);
  int64_t deadline = chrSockDeadlineSec(ROOT_SEND_TIMEOUT_SEC);
  for (int k = 0; k < r->nranks; k++) {
    if (r->rankFd[k] < 0) continue;
    chrSockErr err;
    if (sendReply(r->rankFd[k], CHR_BS_REPLY_ABORT, r->nranks, r->infoSize, result, text, strlen(text), NULL, 0,
                  deadline, &err) != ncclSuccess)
      INFO(NCCL_BOOTSTRAP, "bootstrap root %s: could not tell rank %d: %s", r->addrStr, k, err.msg);
  }
}

/* "2,5,7-9" (truncated with "..." when long). */
static void missingRanks(const struct chrBsRoot* r, char* buf, size_t size) {
  size_t len = 0;
  buf[0] = '\0';
  for (int k = 0; k < r->nranks; k++) {
    if (r->rankFd[k] >= 0) continue;
    int end = k;
    while (end + 1 < r->nranks && r->rankFd[end + 1] < 0) end++;
    char item[32];
    if (end == k)
      snprintf(item, sizeof(item), "%s%d", len ? "," : "", k);
    else
      snprintf(item, sizeof(item), "%s%d-%d", len ? "," : "", k, end);
    if (len + strlen(item) + 4 >= size) {
      snprintf(buf + len, size - len, ",...");
      return;
    }
    len += (size_t)snprintf(buf + len, size - len, "%s", item);
    k = end;
  }
}

/* The hello header is complete: check everything that does not need the info bytes.
 * Returns 1 when the connection was removed or rejected (index i is no longer this conn). */
static int checkHello(struct chrBsRoot* r, int i) {
  struct chrBsHello* h = &r->conns[i].hello;
  if (h->magic != CHR_BS_HELLO_MAGIC) {
    char why[96];
    snprintf(why, sizeof(why), "bad magic 0x%08x (not a Chorus bootstrap hello)", h->magic);
    dropConn(r, i, why);
    return 1;
  }
  if (h->version != CHR_BS_WIRE_VERSION) {
    rejectConn(r, i, "bootstrap protocol version %u, root speaks %u (mixed Chorus versions?)", h->version,
               CHR_BS_WIRE_VERSION);
    return 1;
  }
  if (!chrBsSecretEqual(h->secret, r->secret)) {
    rejectConn(r, i, "wrong secret (a unique id from another ncclGetUniqueId, or this rank's CHORUS_COMM_SECRET differs "
                     "from the root's)");
    return 1;
  }
  if (h->nranks <= 0 || h->nranks > CHR_BOOTSTRAP_MAX_RANKS) {
    rejectConn(r, i, "nranks %d out of range (1..%d)", h->nranks, CHR_BOOTSTRAP_MAX_RANKS);
    return 1;
  }
  if (h->rank < 0 || h->rank >= h->nranks) {
    rejectConn(r, i, "rank %d out of range (nranks %d)", h->rank, h->nranks);
    return 1;
  }
  if (h->infoSize > CHR_BOOTSTRAP_MAX_INFO) {
    rejectConn(r, i, "info size %u is over the limit of %d bytes", h->infoSize, CHR_BOOTSTRAP_MAX_INFO);
    return 1;
  }
  if (r->nranks >= 0 && h->nranks != r->nranks) {
    rejectConn(r, i, "nranks %d differs from nranks %d given by the ranks already in", h->nranks, r->nranks);
    return 1;
  }
  if (r->nranks >= 0 && h->infoSize != r->infoSize) {
    rejectConn(r, i, "info size %u differs from %u given by the ranks already in", h->infoSize, r->infoSize);
    return 1;
  }
  if (r->nranks >= 0 && r->rankFd[h->rank] >= 0) {
    rejectConn(r, i, "rank %d is already taken by another process", h->rank);
    return 1;
  }
  if (chrSockAddrLen(&h->listenAddr) == 0 || chrSockAddrPort(&h->listenAddr) <= 0) {
    rejectConn(r, i, "its listen address is not valid (family %d)", (int)h->listenAddr.sa.sa_family);
    return 1;
  }
  return 0;
}

/* First complete hello: now nranks and infoSize are known. */
static ncclResult_t allocRanks(struct chrBsRoot* r, int nranks, uint32_t infoSize) {
  r->rankFd = malloc(sizeof(int) * (size_t)nranks);
  r->rankAddr = calloc((size_t)nranks, sizeof(chrSockAddr));
  r->infos = calloc((size_t)nranks, infoSize ? infoSize : 1);
  if (r->rankFd == NULL || r->rankAddr == NULL || r->infos == NULL) {
    free(r->rankFd);
    free(r->rankAddr);
    free(r->infos);
    r->rankFd = NULL;
    r->rankAddr = NULL;
    r->infos = NULL;
    WARN("bootstrap root %s: out of memory for %d ranks x %u bytes", r->addrStr, nranks, infoSize);
    return ncclSystemError;
  }
  for (int k = 0; k < nranks; k++) r->rankFd[k] = -1;
  r->nranks = nranks;
  r->infoSize = infoSize;
  r->deadlineNs = chrSockDeadlineSec(r->timeoutSec);
  return ncclSuccess;
}

/* The hello and its info are complete and checked: this connection becomes rank h->rank. */
static int registerRank(struct chrBsRoot* r, int i) {
  struct rootConn* c = &r->conns[i];
  struct chrBsHello* h = &c->hello;
  if (r->nranks < 0) {
    if (allocRanks(r, h->nranks, h->infoSize) != ncclSuccess) return -1;
  } else if (checkHello(r, i)) {
    return 0; /* another connection took the rank (or set nranks) while this one sent its info */
  }
  int rank = h->rank;
  r->rankFd[rank] = c->fd;
  r->rankAddr[rank] = h->listenAddr;
  if (r->infoSize) memcpy(r->infos + (size_t)rank * r->infoSize, c->info, r->infoSize);
  r->nReady++;
  TRACE(NCCL_BOOTSTRAP, "bootstrap root %s: rank %d in (%d of %d)", r->addrStr, rank, r->nReady, r->nranks);
  c->fd = -1; /* now owned by rankFd */
  removeConn(r, i);
  return 0;
}

/* Read what a pending connection has. Returns -1 on a fatal root error. */
static int progressConn(struct chrBsRoot* r, int i, short revents) {
  struct rootConn* c = &r->conns[i];
  chrSockErr err;
  if (c->state == CONN_DRAIN) {
    char sink[4096];
    ssize_t n;
    do n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
    while (n > 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) removeConn(r, i);
    return 0;
  }
  if (c->state == CONN_HEADER) {
    if (chrSockProgress(c->fd, 0, &c->hello, sizeof(c->hello), &c->off, &err) != ncclSuccess) {
      dropConn(r, i, c->off == 0 ? "closed before sending a hello" : err.msg);
      return 0;
    }
    if (c->off < sizeof(c->hello)) return 0;
    if (checkHello(r, i)) return 0;
    c->state = CONN_INFO;
    c->infoOff = 0;
    c->info = malloc(c->hello.infoSize ? c->hello.infoSize : 1);
    if (c->info == NULL) {
      dropConn(r, i, "out of memory for its info");
      return 0;
    }
  }
  if (c->state == CONN_INFO) {
    if (chrSockProgress(c->fd, 0, c->info, c->hello.infoSize, &c->infoOff, &err) != ncclSuccess) {
      dropConn(r, i, err.msg);
      return 0;
    }
    if (c->infoOff < c->hello.infoSize) return 0;
    return registerRank(r, i);
  }
  (void)revents;
  return 0;
}

static void acceptAll(struct chrBsRoot* r) {
  for (;;) {
    int fd = -1;
    chrSockAddr peer;
    chrSockErr err;
    if (chrSockTryAccept(r->listenFd, &fd, &peer, &err) != ncclSuccess) {
      /* e.g. EMFILE: leave it in the backlog and try again on the next loop. */
      WARN("bootstrap root %s: %s", r->addrStr, err.msg);
      return;
    }
    if (fd < 0) return;
    if (r->nConns >= ROOT_MAX_PENDING) {
      /* Make room by dropping the oldest: a real rank sends its hello at once, so connections that
       * idle (or trickle) cannot lock the ranks out until they expire. */
      int oldest = 0;
      for (int i = 1; i < r->nConns; i++)
        if (r->conns[i].acceptedNs < r->conns[oldest].acceptedNs) oldest = i;
      char why[96];
      snprintf(why, sizeof(why), "%d connections pending; this is the oldest", ROOT_MAX_PENDING);
      dropConn(r, oldest, why);
    }
    struct rootConn* c = &r->conns[r->nConns++];
    memset(c, 0, sizeof(*c));
    c->fd = fd;
    c->peer = peer;
    c->state = CONN_HEADER;
    c->acceptedNs = chrSockNowNs();
    /* A client gets the bootstrap timeout to send its hello (it normally takes microseconds). */
    c->expireNs = chrSockDeadlineSec(r->timeoutSec > 0 ? r->timeoutSec : 60);
  }
}

static void sendTable(struct chrBsRoot* r) {
  int64_t deadline = chrSockDeadlineSec(ROOT_SEND_TIMEOUT_SEC > r->timeoutSec ? ROOT_SEND_TIMEOUT_SEC : r->timeoutSec);
  size_t addrBytes = sizeof(chrSockAddr) * (size_t)r->nranks;
  size_t infoBytes = (size_t)r->infoSize * (size_t)r->nranks;
  for (int k = 0; k < r->nranks; k++) {
    chrSockErr err;
    if (sendReply(r->rankFd[k], CHR_BS_REPLY_TABLE, r->nranks, r->infoSize, ncclSuccess, r->rankAddr, addrBytes,
                  r->infos, infoBytes, deadline, &err) != ncclSuccess)
      WARN("bootstrap root %s: could not send the table to rank %d: %s", r->addrStr, k, err.msg);
  }
  INFO(NCCL_BOOTSTRAP, "bootstrap root %s: all %d ranks in, table sent", r->addrStr, r->nranks);
}

static void rootFree(struct chrBsRoot* r) {
  chrSockClose(&r->listenFd);
  while (r->nConns > 0) removeConn(r, r->nConns - 1);
  if (r->rankFd != NULL)
    for (int k = 0; k < r->nranks; k++) chrSockClose(&r->rankFd[k]);
  free(r->conns);
  free(r->rankFd);
  free(r->rankAddr);
  free(r->infos);
  free(r);
}

static void rootLoop(struct chrBsRoot* r) {
  struct pollfd* pfds = NULL;
  int pfdCap = 0;
  for (;;) {
    if (atomic_load(&r->abandoned)) {
      abortAll(r, ncclRemoteError, r->abandonText);
      break;
    }
    if (r->nranks > 0 && r->nReady == r->nranks) {
      chrSockClose(&r->listenFd); /* late or extra clients now get refused */
      sendTable(r);
      break;
    }
    int64_t now = chrSockNowNs();
    if (r->deadlineNs != CHR_SOCK_FOREVER && now >= r->deadlineNs) {
      char missing[512], text[CHR_BS_MAX_TEXT];
      missingRanks(r, missing, sizeof(missing));
      snprintf(text, sizeof(text), "timed out after %lld s waiting for ranks %s (of %d)", (long long)r->timeoutSec,
               missing, r->nranks);
      abortAll(r, ncclTimeout, text);
      break;
    }
    /* Pending connections past their time go; a silent client must not hold an fd forever. */
    for (int i = r->nConns - 1; i >= 0; i--)
      if (now >= r->conns[i].expireNs) {
        if (r->conns[i].state == CONN_DRAIN)
          removeConn(r, i);
        else
          dropConn(r, i, "no complete hello in time");
      }

    int nr = r->nranks > 0 ? r->nranks : 0;
    int need = 1 + r->nConns + nr;
    if (need > pfdCap) {
      struct pollfd* p = realloc(pfds, sizeof(*p) * (size_t)need);
      if (p == NULL) {
        WARN("bootstrap root %s: out of memory", r->addrStr);
        abortAll(r, ncclSystemError, "the bootstrap root ran out of memory");
        break;
      }
      pfds = p;
      pfdCap = need;
    }
    int np = 0;
    pfds[np++] = (struct pollfd){.fd = r->listenFd, .events = POLLIN};
    for (int i = 0; i < r->nConns; i++) pfds[np++] = (struct pollfd){.fd = r->conns[i].fd, .events = POLLIN | POLLRDHUP};
    /* Registered ranks send nothing more; any event on them means they closed or broke. */
    for (int k = 0; k < nr; k++) pfds[np++] = (struct pollfd){.fd = r->rankFd[k], .events = POLLRDHUP};

    int64_t waitNs = (int64_t)ROOT_POLL_MAX_MS * 1000000LL;
    if (r->deadlineNs != CHR_SOCK_FOREVER && r->deadlineNs - now < waitNs) waitNs = r->deadlineNs - now;
    for (int i = 0; i < r->nConns; i++)
      if (r->conns[i].expireNs - now < waitNs) waitNs = r->conns[i].expireNs - now;
    int ms = waitNs <= 0 ? 0 : (int)((waitNs + 999999) / 1000000);
    int rc = poll(pfds, (nfds_t)np, ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      char text[160];
      snprintf(text, sizeof(text), "the bootstrap root failed: poll: %s", strerror(errno));
      abortAll(r, ncclSystemError, text);
      break;
    }
    if (rc == 0) continue;

    /* Ranks that closed: init cannot complete, tell the others now rather than at the timeout. */
    int closedRank = -1;
    for (int k = 0; k < nr; k++) {
      short ev = pfds[1 + r->nConns + k].revents;
      if (r->rankFd[k] >= 0 && (ev & (POLLRDHUP | POLLHUP | POLLERR))) {
        closedRank = k;
        chrSockClose(&r->rankFd[k]);
        break;
      }
    }
    if (closedRank >= 0) {
      char text[160];
      snprintf(text, sizeof(text), "rank %d closed its bootstrap connection during init", closedRank);
      abortAll(r, ncclRemoteError, text);
      break;
    }
    /* Pending connections, from the last so that removals do not shift the ones still to visit.
     * pfds[1 + i] belongs to conns[i] as they were before this pass. */
    int fatal = 0;
    for (int i = r->nConns - 1; i >= 0 && !fatal; i--) {
      short ev = pfds[1 + i].revents;
      if (ev == 0) continue;
      if (progressConn(r, i, ev) < 0) fatal = 1;
    }
    if (fatal) {
      abortAll(r, ncclSystemError, "the bootstrap root ran out of memory");
      break;
    }
    if (pfds[0].revents & POLLIN) acceptAll(r);
  }
  free(pfds);
}

static void* rootThread(void* arg) {
  struct chrBsRoot* r = arg;
  rootLoop(r);
  rootListed(r, 0);
  rootFree(r);
  return NULL;
}

ncclResult_t chrBsRootStart(const chrSockAddr* addr, uint64_t secret, int64_t timeoutSec, int64_t bindDeadlineNs,
                            chrSockAddr* bound) {
  ncclResult_t res = ncclSuccess;
  chrSockErr err;
  struct chrBsRoot* r = calloc(1, sizeof(*r));
  if (r == NULL) return chrFail(ncclSystemError, "bootstrap: out of memory for the root");
  r->listenFd = -1;
  r->nranks = -1;
  r->secret = secret;
  r->timeoutSec = timeoutSec;
  r->deadlineNs = CHR_SOCK_FOREVER;
  r->conns = calloc(ROOT_MAX_PENDING, sizeof(*r->conns));
  if (r->conns == NULL) {
    res = chrFail(ncclSystemError, "bootstrap: out of memory for the root");
    goto fail_free_root;
  }
  while (chrSockListen(addr, 0, &r->listenFd, bound, &err) != ncclSuccess) {
    /* A fixed port (NCCL_COMM_ID) may still be held for a moment by the root of the previous
     * communicator made from the same address: it closes its listening socket when it is done. */
    if (err.sysErrno == EADDRINUSE && chrSockNowNs() + ROOT_BIND_RETRY_MS * 1000000LL < bindDeadlineNs) {
      struct timespec ts = {0, ROOT_BIND_RETRY_MS * 1000000L};
      nanosleep(&ts, NULL);
      continue;
    }
    res = chrFail(ncclSystemError, "bootstrap: cannot start the root: %s", err.msg);
    goto fail_free_root;
  }
  chrSockAddrToString(bound, r->addrStr, sizeof(r->addrStr));
  r->bound = *bound;
  rootListed(r, 1);

  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  int rc = pthread_create(&thread, &attr, rootThread, r);
  pthread_attr_destroy(&attr);
  if (rc != 0) {
    rootListed(r, 0);
    res = chrFail(ncclSystemError, "bootstrap: cannot start the root thread: %s", strerror(rc));
    goto fail_free_root;
  }
  return ncclSuccess;

fail_free_root:
  rootFree(r);
  return res;
}
