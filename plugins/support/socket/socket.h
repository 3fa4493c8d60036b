/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * socket.h: small TCP socket utilities shared by the core (bootstrap) and the net plugins.
 *
 * Part of plugins/support (chorus_plugin_support), linked into libchorus AND into the net plugins,
 * which must also load into NVIDIA's NCCL. So it never calls chrLog/chrFail/chrParam*: every function
 * that can fail returns an ncclResult_t and, when `err` is not NULL, writes one line of text (no
 * newline) saying exactly what went wrong. The caller decides how to report it (the core:
 * chrFail("...: %s", err.msg)). Optional INFO/TRACE messages (connect retries, chosen interfaces) go
 * to the logger set with chrSockSetLogger(); with none set, nothing is printed.
 *
 * Each embedding library has its OWN copy of these functions and of the logger pointer: they must not
 * be exported (the archive is built with hidden visibility; libchorus exports only nccl* and pnccl*),
 * otherwise one library's calls could bind to the other's copy.
 *
 * Results (the same everywhere below):
 *   ncclSuccess         done
 *   ncclSystemError     an OS call failed (socket, bind, poll, getifaddrs, ...): errno text in err
 *   ncclRemoteError     the peer closed the connection or reset it (mid-message or before it began),
 *                       or a connect was refused until the deadline passed
 *   ncclTimeout         the deadline passed before the operation finished
 *   ncclInternalError   *abortFlag became nonzero: the wait was abandoned on purpose (the caller knows
 *                       why; err says "aborted")
 *   ncclInvalidArgument a bad address string, interface spec, or parameter
 *
 * Sockets: every fd made here is non-blocking, close-on-exec, and (for TCP streams) TCP_NODELAY.
 * Sends use MSG_NOSIGNAL, so a dead peer gives EPIPE (ncclRemoteError), never SIGPIPE.
 * All waits use poll() in slices of at most 100 ms, so a set abort flag is seen within ~100 ms.
 *
 * Deadlines are absolute CLOCK_MONOTONIC times in nanoseconds (chrSockNowNs() + timeout), or
 * CHR_SOCK_FOREVER. chrSockDeadlineSec() builds one from a timeout in seconds (<= 0: forever).
 *
 * Thread-safety: all functions are reentrant; the logger pointer should be set once before use.
 */
#ifndef CHORUS_SOCKET_H_
#define CHORUS_SOCKET_H_

#include <stddef.h>
#include <stdint.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "plugin/common.h" /* ncclResult_t (nccl.h), the logger type */

typedef union {
  struct sockaddr sa;
  struct sockaddr_in sin;
  struct sockaddr_in6 sin6;
} chrSockAddr;

/* Filled by a failing call: the text, and the errno of the failing OS call (0 when the error did not
 * come from one), so callers can tell e.g. EADDRINUSE apart without parsing text. */
#define CHR_SOCK_ERR_LEN 256
typedef struct {
  char msg[CHR_SOCK_ERR_LEN];
  int sysErrno;
} chrSockErr;

/* Format the error text into err (if not NULL), set err->sysErrno = 0, and return res (also for
 * callers that report their own failures through a chrSockErr, as the bootstrap does). */
ncclResult_t chrSockSetErr(chrSockErr* err, ncclResult_t res, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Room for "[v6addr%scope]:port" plus NUL. */
#define CHR_SOCK_ADDR_STRLEN 80

#define CHR_SOCK_FOREVER INT64_MAX

/* ---- logging, time ---- */

/* Logger for INFO/TRACE messages (NULL: silent). Set once by the embedding library. */
void chrSockSetLogger(ncclDebugLogger_t logger);

int64_t chrSockNowNs(void);                  /* CLOCK_MONOTONIC in ns */
int64_t chrSockDeadlineSec(int64_t seconds); /* now + seconds, or CHR_SOCK_FOREVER when seconds <= 0 */
int64_t chrSockDeadlineMs(int64_t ms);       /* now + ms, or CHR_SOCK_FOREVER when ms < 0 */

/* ---- addresses ---- */

/* Parse "host:port", "ip:port" or "[v6addr]:port" (getaddrinfo, numeric port 0..65535). `family` is
 * AF_INET, AF_INET6 or AF_UNSPEC (first result of any family, IPv4 preferred). A bare IPv6 address
 * without brackets ("::1:80") is refused as ambiguous: use brackets. */
ncclResult_t chrSockAddrParse(const char* str, int family, chrSockAddr* out, chrSockErr* err);

/* "1.2.3.4:5" or "[fe80::1%eth0]:5" into buf (size >= CHR_SOCK_ADDR_STRLEN is always enough).
 * Returns buf; an unknown family prints "<family N>". */
const char* chrSockAddrToString(const chrSockAddr* addr, char* buf, size_t size);

socklen_t chrSockAddrLen(const chrSockAddr* addr); /* sizeof the family's struct, 0 if unknown */
int chrSockAddrPort(const chrSockAddr* addr);      /* host order, -1 if unknown family */
void chrSockAddrSetPort(chrSockAddr* addr, int port);
int chrSockAddrEqual(const chrSockAddr* a, const chrSockAddr* b); /* family, address and port */
int chrSockAddrIsAny(const chrSockAddr* addr);                   /* 0.0.0.0 or :: */

/* Parse a family name: "" -> AF_UNSPEC, "AF_INET"/"inet"/"ipv4"/"4" -> AF_INET,
 * "AF_INET6"/"inet6"/"ipv6"/"6" -> AF_INET6; anything else is ncclInvalidArgument. */
ncclResult_t chrSockParseFamily(const char* name, int* family, chrSockErr* err);

/* ---- interfaces ---- */

typedef struct {
  char name[IF_NAMESIZE];
  chrSockAddr addr; /* port 0 */
} chrSockIf;

/* Interfaces that are up, have an address of `family` (AF_UNSPEC: both; IPv4 ones are listed first),
 * and match `spec` (NCCL_SOCKET_IFNAME syntax):
 *   "eth,ib"     names starting with eth or ib
 *   "^docker,lo" names NOT starting with docker or lo
 *   "=eth0,ib1"  exactly eth0 or ib1; "^=eth0" excludes exactly eth0 ('^' comes first)
 * Spaces around names are ignored; a ":port" suffix on a name is ignored, as NCCL does.
 * Empty/NULL spec: every interface except lo* and docker*; when that finds none, lo*.
 * IPv6 link-local addresses (fe80::/10) are skipped. One entry per (interface, address).
 * Writes up to maxIfs entries and their count to *nIfs (0 is not an error; the caller decides). */
ncclResult_t chrSockFindInterfaces(const char* spec, int family, chrSockIf* ifs, int maxIfs, int* nIfs,
                                   chrSockErr* err);

/* 1 if interface `name` matches `spec` (syntax above; empty spec matches everything). */
int chrSockIfMatches(const char* spec, const char* name);

/* The local address the kernel would use to reach `remote` (UDP connect + getsockname; sends no
 * packet). Port 0. Used to pick the interface that reaches a given root (NCCL_COMM_ID). */
ncclResult_t chrSockLocalAddrFor(const chrSockAddr* remote, chrSockAddr* local, chrSockErr* err);

/* ---- connections ---- */

/* Bind a TCP listening socket to `bindAddr` (port 0: ephemeral; SO_REUSEADDR set) and listen with
 * `backlog` (<= 0: SOMAXCONN). *bound (may be NULL) gets the real bound address. */
ncclResult_t chrSockListen(const chrSockAddr* bindAddr, int backlog, int* fd, chrSockAddr* bound,
                           chrSockErr* err);

/* Connect to `addr`. Retries with backoff (10 ms growing to 200 ms) on ECONNREFUSED, ETIMEDOUT,
 * EHOSTUNREACH, ENETUNREACH, EAGAIN and on a loopback self-connection, until the deadline; then
 * ncclRemoteError (refused until the end) or ncclTimeout. On success *fd is connected, non-blocking,
 * TCP_NODELAY. */
ncclResult_t chrSockConnect(const chrSockAddr* addr, int64_t deadlineNs, volatile uint32_t* abortFlag,
                            int* fd, chrSockErr* err);

/* Connect to an address that is known to have been listening (a peer's socket from a table): a
 * refusal or reset then means the listener is gone (its process exited), so it is ncclRemoteError at
 * once instead of a retry until the deadline. Other transient errors are retried as above. */
ncclResult_t chrSockConnectListening(const chrSockAddr* addr, int64_t deadlineNs, volatile uint32_t* abortFlag,
                                     int* fd, chrSockErr* err);

/* Wait for and accept one connection on listenFd. *peer may be NULL. ncclTimeout at the deadline. */
ncclResult_t chrSockAccept(int listenFd, int64_t deadlineNs, volatile uint32_t* abortFlag, int* fd,
                           chrSockAddr* peer, chrSockErr* err);

/* Non-blocking accept: *fd = -1 when no connection is pending. */
ncclResult_t chrSockTryAccept(int listenFd, int* fd, chrSockAddr* peer, chrSockErr* err);

/* Send / receive exactly len bytes (len 0: nothing, success). A peer that closes before all bytes are
 * received is ncclRemoteError with "connection closed by <peer> after X of Y bytes". */
ncclResult_t chrSockSendAll(int fd, const void* buf, size_t len, int64_t deadlineNs,
                            volatile uint32_t* abortFlag, chrSockErr* err);
ncclResult_t chrSockRecvAll(int fd, void* buf, size_t len, int64_t deadlineNs,
                            volatile uint32_t* abortFlag, chrSockErr* err);

/* One non-blocking step of a transfer for a data path driven by polling: moves as many bytes of
 * buf[*offset..len) as the socket takes/has now and advances *offset (0 bytes moved is success; the
 * transfer is done when *offset == len). Peer closed/reset: ncclRemoteError. */
ncclResult_t chrSockProgress(int fd, int isSend, void* buf, size_t len, size_t* offset, chrSockErr* err);

/* poll() one fd for `events` until ready, deadline, or abort. *revents gets what poll reported
 * (POLLHUP/POLLERR are returned as success with those bits; the caller decides). */
ncclResult_t chrSockWait(int fd, short events, int64_t deadlineNs, volatile uint32_t* abortFlag,
                         short* revents, chrSockErr* err);

/* 1 if the peer has closed or reset the connection (POLLRDHUP/POLLHUP/POLLERR seen now, or a
 * MSG_PEEK read returns 0). Does not consume data. Unread data pending with no close: 0. */
int chrSockPeerClosed(int fd);

/* close(*fd) if >= 0, then *fd = -1. */
void chrSockClose(int* fd);

#endif /* CHORUS_SOCKET_H_ */
