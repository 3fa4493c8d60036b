/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket_conn.c: TCP connections: listen, connect with retry, accept, send/recv all with deadline
 * and abort flag, and the non-blocking progress step for a polled data path.
 */
#include <errno.h>
#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "socket/socket_internal.h"

#define WAIT_SLICE_MS 100 /* longest single poll(): bounds how late an abort is noticed */

static int aborted(volatile uint32_t* abortFlag) {
  return abortFlag != NULL && __atomic_load_n(abortFlag, __ATOMIC_ACQUIRE) != 0;
}

/* Milliseconds for the next poll(): min(slice, time to deadline), 0 when the deadline passed. */
static int sliceMs(int64_t deadlineNs) {
  if (deadlineNs == CHR_SOCK_FOREVER) return WAIT_SLICE_MS;
  int64_t left = deadlineNs - chrSockNowNs();
  if (left <= 0) return 0;
  int64_t ms = (left + 999999) / 1000000;
  return ms < WAIT_SLICE_MS ? (int)ms : WAIT_SLICE_MS;
}

static const char* peerName(int fd, char* buf, size_t size) {
  chrSockAddr a;
  socklen_t l = sizeof(a);
  memset(&a, 0, sizeof(a));
  if (getpeername(fd, &a.sa, &l) != 0) {
    snprintf(buf, size, "peer");
    return buf;
  }
  return chrSockAddrToString(&a, buf, size);
}

static void setNoDelay(int fd) {
  int one = 1;
  /* Best effort: failure only costs latency. */
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

void chrSockClose(int* fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

ncclResult_t chrSockWait(int fd, short events, int64_t deadlineNs, volatile uint32_t* abortFlag,
                         short* revents, chrSockErr* err) {
  for (;;) {
    if (aborted(abortFlag)) return chrSockSetErr(err, ncclInternalError, "aborted");
    int ms = sliceMs(deadlineNs);
    struct pollfd p = {.fd = fd, .events = events, .revents = 0};
    int rc = poll(&p, 1, ms);
    if (rc < 0) {
      if (errno == EINTR) continue;
      return chrSockSetErrno(err, ncclSystemError, errno, "poll failed: %s", strerror(errno));
    }
    if (rc > 0) {
      if (p.revents & POLLNVAL) return chrSockSetErr(err, ncclSystemError, "poll: fd %d is not open", fd);
      *revents = p.revents;
      return ncclSuccess;
    }
    if (ms == 0 || (deadlineNs != CHR_SOCK_FOREVER && chrSockNowNs() >= deadlineNs))
      return chrSockSetErr(err, ncclTimeout, "timed out");
  }
}

/* Sleep ms, waking every slice to look at the abort flag. 1 if aborted. */
static int sleepAbortable(int ms, volatile uint32_t* abortFlag) {
  while (ms > 0) {
    if (aborted(abortFlag)) return 1;
    int s = ms < WAIT_SLICE_MS ? ms : WAIT_SLICE_MS;
    poll(NULL, 0, s);
    ms -= s;
  }
  return aborted(abortFlag);
}

ncclResult_t chrSockListen(const chrSockAddr* bindAddr, int backlog, int* fd, chrSockAddr* bound,
                           chrSockErr* err) {
  char abuf[CHR_SOCK_ADDR_STRLEN];
  *fd = -1;
  socklen_t len = chrSockAddrLen(bindAddr);
  if (len == 0) return chrSockSetErr(err, ncclInvalidArgument, "listen: address has unknown family");
  int s = socket(bindAddr->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (s < 0) return chrSockSetErrno(err, ncclSystemError, errno, "socket failed: %s", strerror(errno));
  int one = 1;
  /* Lets a fixed port (NCCL_COMM_ID) be reused right after a previous run's TIME_WAIT. */
  (void)setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s, &bindAddr->sa, len) != 0) {
    int e = errno;
    close(s);
    return chrSockSetErrno(err, ncclSystemError, e, "bind to %s failed: %s",
                         chrSockAddrToString(bindAddr, abuf, sizeof(abuf)), strerror(e));
  }
  if (listen(s, backlog > 0 ? backlog : SOMAXCONN) != 0) {
    int e = errno;
    close(s);
    return chrSockSetErrno(err, ncclSystemError, e, "listen on %s failed: %s",
                         chrSockAddrToString(bindAddr, abuf, sizeof(abuf)), strerror(e));
  }
  if (bound != NULL) {
    socklen_t l = sizeof(*bound);
    memset(bound, 0, sizeof(*bound));
    if (getsockname(s, &bound->sa, &l) != 0) {
      int e = errno;
      close(s);
      return chrSockSetErrno(err, ncclSystemError, e, "getsockname failed: %s", strerror(e));
    }
  }
  *fd = s;
  return ncclSuccess;
}

static int retryableConnectError(int e) {
  return e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH || e == ENETUNREACH || e == EAGAIN ||
         e == ECONNRESET || e == EADDRNOTAVAIL;
}

/* A loopback connect to a port nobody listens on can connect the socket to itself (TCP
 * simultaneous open when the ephemeral port equals the target port). */
static int isSelfConnected(int fd) {
  chrSockAddr a, b;
  socklen_t la = sizeof(a), lb = sizeof(b);
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  if (getsockname(fd, &a.sa, &la) != 0 || getpeername(fd, &b.sa, &lb) != 0) return 0;
  return chrSockAddrEqual(&a, &b);
}

static ncclResult_t connectLoop(const chrSockAddr* addr, int64_t deadlineNs, volatile uint32_t* abortFlag,
                               int refusedIsFinal, int* fd, chrSockErr* err) {
  char abuf[CHR_SOCK_ADDR_STRLEN];
  *fd = -1;
  socklen_t len = chrSockAddrLen(addr);
  if (len == 0) return chrSockSetErr(err, ncclInvalidArgument, "connect: address has unknown family");
  chrSockAddrToString(addr, abuf, sizeof(abuf));
  int backoffMs = 10;
  int lastErr = 0;
  int tries = 0;
  for (;;) {
    if (aborted(abortFlag)) return chrSockSetErr(err, ncclInternalError, "aborted while connecting to %s", abuf);
    tries++;
    int s = socket(addr->sa.sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (s < 0) return chrSockSetErrno(err, ncclSystemError, errno, "socket failed: %s", strerror(errno));
    int e = 0;
    if (connect(s, &addr->sa, len) != 0) {
      e = errno;
      if (e == EINPROGRESS || e == EINTR) {
        short rev = 0;
        chrSockErr werr;
        ncclResult_t r = chrSockWait(s, POLLOUT, deadlineNs, abortFlag, &rev, &werr);
        if (r != ncclSuccess) {
          close(s);
          if (r == ncclTimeout)
            return chrSockSetErr(err, ncclTimeout, "connect to %s timed out (%d attempts)", abuf, tries);
          return chrSockSetErr(err, r, "connect to %s: %s", abuf, werr.msg);
        }
        socklen_t el = sizeof(e);
        if (getsockopt(s, SOL_SOCKET, SO_ERROR, &e, &el) != 0) e = errno;
      }
    }
    if (e == 0 && isSelfConnected(s)) e = ECONNREFUSED;
    if (e == 0) {
      setNoDelay(s);
      *fd = s;
      if (tries > 1) CHR_SOCK_TRACE("socket: connected to %s after %d attempts", abuf, tries);
      return ncclSuccess;
    }
    close(s);
    lastErr = e;
    if (refusedIsFinal && (e == ECONNREFUSED || e == ECONNRESET))
      return chrSockSetErrno(err, ncclRemoteError, e, "connect to %s: %s (nobody listens there any more)", abuf,
                             strerror(e));
    if (!retryableConnectError(e))
      return chrSockSetErrno(err, ncclSystemError, e, "connect to %s failed: %s", abuf, strerror(e));
    int64_t now = chrSockNowNs();
    if (deadlineNs != CHR_SOCK_FOREVER && now + (int64_t)backoffMs * 1000000LL >= deadlineNs) break;
    if (tries == 1 || tries % 50 == 0)
      CHR_SOCK_TRACE("socket: connect to %s: %s, retrying", abuf, strerror(e));
    if (sleepAbortable(backoffMs, abortFlag))
      return chrSockSetErr(err, ncclInternalError, "aborted while connecting to %s", abuf);
    backoffMs = backoffMs * 2 > 200 ? 200 : backoffMs * 2;
  }
  if (lastErr == ECONNREFUSED)
    return chrSockSetErr(err, ncclRemoteError, "connect to %s refused until the deadline (%d attempts)", abuf,
                         tries);
  return chrSockSetErr(err, ncclTimeout, "connect to %s timed out (%d attempts, last error: %s)", abuf, tries,
                       strerror(lastErr));
}

ncclResult_t chrSockConnect(const chrSockAddr* addr, int64_t deadlineNs, volatile uint32_t* abortFlag,
                            int* fd, chrSockErr* err) {
  return connectLoop(addr, deadlineNs, abortFlag, 0, fd, err);
}

ncclResult_t chrSockConnectListening(const chrSockAddr* addr, int64_t deadlineNs, volatile uint32_t* abortFlag,
                                     int* fd, chrSockErr* err) {
  return connectLoop(addr, deadlineNs, abortFlag, 1, fd, err);
}

ncclResult_t chrSockTryAccept(int listenFd, int* fd, chrSockAddr* peer, chrSockErr* err) {
  chrSockAddr a;
  socklen_t l = sizeof(a);
  *fd = -1;
  memset(&a, 0, sizeof(a));
  for (;;) {
    int s = accept4(listenFd, &a.sa, &l, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (s >= 0) {
      setNoDelay(s);
      if (peer != NULL) *peer = a;
      *fd = s;
      return ncclSuccess;
    }
    int e = errno;
    if (e == EINTR) continue;
    /* A connection that was reset before we took it, or a transient network error on it: none
     * pending for us (accept(2) says to treat these like EAGAIN). */
    if (e == EAGAIN || e == EWOULDBLOCK || e == ECONNABORTED || e == EPROTO || e == ENETDOWN ||
        e == ENOPROTOOPT || e == EHOSTDOWN || e == ENONET || e == EHOSTUNREACH || e == EOPNOTSUPP ||
        e == ENETUNREACH)
      return ncclSuccess;
    return chrSockSetErrno(err, ncclSystemError, e, "accept failed: %s", strerror(e));
  }
}

ncclResult_t chrSockAccept(int listenFd, int64_t deadlineNs, volatile uint32_t* abortFlag, int* fd,
                           chrSockAddr* peer, chrSockErr* err) {
  *fd = -1;
  for (;;) {
    short rev = 0;
    chrSockErr werr;
    ncclResult_t r = chrSockWait(listenFd, POLLIN, deadlineNs, abortFlag, &rev, &werr);
    if (r != ncclSuccess) return chrSockSetErr(err, r, "accept: %s", werr.msg);
    r = chrSockTryAccept(listenFd, fd, peer, err);
    if (r != ncclSuccess) return r;
    if (*fd >= 0) return ncclSuccess;
    /* Nothing pending after all (the connection was reset first): wait again. */
  }
}

ncclResult_t chrSockProgress(int fd, int isSend, void* buf, size_t len, size_t* offset, chrSockErr* err) {
  char pbuf[CHR_SOCK_ADDR_STRLEN];
  while (*offset < len) {
    ssize_t n;
    if (isSend)
      n = send(fd, (const char*)buf + *offset, len - *offset, MSG_NOSIGNAL | MSG_DONTWAIT);
    else
      n = recv(fd, (char*)buf + *offset, len - *offset, MSG_DONTWAIT);
    if (n > 0) {
      *offset += (size_t)n;
      continue;
    }
    if (n == 0 && !isSend)
      return chrSockSetErr(err, ncclRemoteError, "connection closed by %s after %zu of %zu bytes",
                           peerName(fd, pbuf, sizeof(pbuf)), *offset, len);
    int e = (n == 0) ? EAGAIN : errno;
    if (e == EINTR) continue;
    if (e == EAGAIN || e == EWOULDBLOCK) return ncclSuccess;
    if (e == EPIPE || e == ECONNRESET || e == ENOTCONN || e == ETIMEDOUT || e == EHOSTUNREACH)
      return chrSockSetErrno(err, ncclRemoteError, e, "connection to %s lost while %s (%zu of %zu bytes): %s",
                           peerName(fd, pbuf, sizeof(pbuf)), isSend ? "sending" : "receiving", *offset, len,
                           strerror(e));
    return chrSockSetErrno(err, ncclSystemError, e, "%s failed on fd %d: %s", isSend ? "send" : "recv", fd,
                         strerror(e));
  }
  return ncclSuccess;
}

static ncclResult_t transferAll(int fd, int isSend, void* buf, size_t len, int64_t deadlineNs,
                                volatile uint32_t* abortFlag, chrSockErr* err) {
  char pbuf[CHR_SOCK_ADDR_STRLEN];
  size_t off = 0;
  for (;;) {
    ncclResult_t r = chrSockProgress(fd, isSend, buf, len, &off, err);
    if (r != ncclSuccess) return r;
    if (off == len) return ncclSuccess;
    short rev = 0;
    chrSockErr werr;
    r = chrSockWait(fd, isSend ? POLLOUT : POLLIN, deadlineNs, abortFlag, &rev, &werr);
    if (r == ncclTimeout)
      return chrSockSetErr(err, ncclTimeout, "timed out %s %s (%zu of %zu bytes done)",
                           isSend ? "sending to" : "receiving from", peerName(fd, pbuf, sizeof(pbuf)), off, len);
    if (r != ncclSuccess)
      return chrSockSetErr(err, r, "%s %s: %s", isSend ? "sending to" : "receiving from",
                           peerName(fd, pbuf, sizeof(pbuf)), werr.msg);
    /* POLLHUP/POLLERR: the next send/recv reports the exact error. */
  }
}

ncclResult_t chrSockSendAll(int fd, const void* buf, size_t len, int64_t deadlineNs,
                            volatile uint32_t* abortFlag, chrSockErr* err) {
  return transferAll(fd, 1, (void*)buf, len, deadlineNs, abortFlag, err);
}

ncclResult_t chrSockRecvAll(int fd, void* buf, size_t len, int64_t deadlineNs, volatile uint32_t* abortFlag,
                            chrSockErr* err) {
  return transferAll(fd, 0, buf, len, deadlineNs, abortFlag, err);
}

int chrSockPeerClosed(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN | POLLRDHUP, .revents = 0};
  int rc;
  do rc = poll(&p, 1, 0);
  while (rc < 0 && errno == EINTR);
  if (rc <= 0) return 0;
  if (p.revents & (POLLRDHUP | POLLHUP | POLLERR | POLLNVAL)) return 1;
  if (p.revents & POLLIN) {
    char c;
    ssize_t n = recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT);
    if (n == 0) return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return 1;
  }
  return 0;
}
