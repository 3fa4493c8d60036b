/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_socket.c: the socket utilities (plugins/support/socket): address parsing and printing,
 * interface specs, listen/connect/accept, send/recv all with deadlines and abort, a peer that closes
 * mid-message, the non-blocking progress step. Loopback only.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "socket/socket.h"

static int failures = 0;
#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: EXPECT failed: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                           \
    }                                                                       \
  } while (0)

static void testParse(void) {
  chrSockAddr a;
  chrSockErr err;
  char buf[CHR_SOCK_ADDR_STRLEN];
  EXPECT(chrSockAddrParse("127.0.0.1:1234", AF_UNSPEC, &a, &err) == ncclSuccess);
  EXPECT(a.sa.sa_family == AF_INET && chrSockAddrPort(&a) == 1234);
  EXPECT(strcmp(chrSockAddrToString(&a, buf, sizeof(buf)), "127.0.0.1:1234") == 0);
  EXPECT(chrSockAddrParse("[::1]:80", AF_UNSPEC, &a, &err) == ncclSuccess);
  EXPECT(a.sa.sa_family == AF_INET6 && chrSockAddrPort(&a) == 80);
  EXPECT(strcmp(chrSockAddrToString(&a, buf, sizeof(buf)), "[::1]:80") == 0);
  EXPECT(chrSockAddrParse("localhost:5", AF_INET, &a, &err) == ncclSuccess);
  EXPECT(a.sa.sa_family == AF_INET && chrSockAddrPort(&a) == 5);
  EXPECT(chrSockAddrParse("::1:80", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(strstr(err.msg, "brackets") != NULL);
  EXPECT(chrSockAddrParse("127.0.0.1", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(chrSockAddrParse("127.0.0.1:99999", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(chrSockAddrParse("127.0.0.1:12x", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(chrSockAddrParse("[::1:80", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(chrSockAddrParse("", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  EXPECT(chrSockAddrParse("no-such-host.invalid:1", AF_UNSPEC, &a, &err) == ncclInvalidArgument);
  int fam = -1;
  EXPECT(chrSockParseFamily("AF_INET6", &fam, &err) == ncclSuccess && fam == AF_INET6);
  EXPECT(chrSockParseFamily("", &fam, &err) == ncclSuccess && fam == AF_UNSPEC);
  EXPECT(chrSockParseFamily("ipx", &fam, &err) == ncclInvalidArgument);
}

static void testIfSpec(void) {
  EXPECT(chrSockIfMatches("", "eth0"));
  EXPECT(chrSockIfMatches("eth,ib", "eth0"));
  EXPECT(chrSockIfMatches("eth,ib", "ib1"));
  EXPECT(!chrSockIfMatches("eth,ib", "lo"));
  EXPECT(!chrSockIfMatches("^docker,lo", "lo"));
  EXPECT(chrSockIfMatches("^docker,lo", "eth0"));
  EXPECT(chrSockIfMatches("=eth0", "eth0"));
  EXPECT(!chrSockIfMatches("=eth0", "eth01"));
  EXPECT(!chrSockIfMatches("^=eth0", "eth0"));
  EXPECT(chrSockIfMatches("^=eth0", "eth01"));
  EXPECT(chrSockIfMatches(" eth0:1234 , ib", "eth0"));

  chrSockIf ifs[16];
  int n = -1;
  chrSockErr err;
  EXPECT(chrSockFindInterfaces("lo", AF_INET, ifs, 16, &n, &err) == ncclSuccess);
  EXPECT(n >= 1);
  if (n >= 1) EXPECT(ifs[0].addr.sa.sa_family == AF_INET && strncmp(ifs[0].name, "lo", 2) == 0);
  EXPECT(chrSockFindInterfaces("", AF_UNSPEC, ifs, 16, &n, &err) == ncclSuccess);
  EXPECT(n >= 1); /* something, if only lo */
  EXPECT(chrSockFindInterfaces("=no_such_if", AF_UNSPEC, ifs, 16, &n, &err) == ncclSuccess && n == 0);
  chrSockAddr remote, local;
  chrSockAddrParse("127.0.0.1:1", AF_INET, &remote, &err);
  EXPECT(chrSockLocalAddrFor(&remote, &local, &err) == ncclSuccess);
  EXPECT(local.sa.sa_family == AF_INET && local.sin.sin_addr.s_addr == htonl(INADDR_LOOPBACK));
}

struct acceptArg {
  int listenFd;
  int fd;
  ncclResult_t res;
};
static void* acceptThread(void* p) {
  struct acceptArg* a = p;
  a->res = chrSockAccept(a->listenFd, chrSockDeadlineSec(5), NULL, &a->fd, NULL, NULL);
  return NULL;
}

/* A connected pair over loopback. */
static void makePair(int* client, int* server) {
  chrSockAddr any, bound;
  chrSockErr err;
  int lfd = -1;
  chrSockAddrParse("127.0.0.1:0", AF_INET, &any, &err);
  EXPECT(chrSockListen(&any, 4, &lfd, &bound, &err) == ncclSuccess);
  EXPECT(chrSockAddrPort(&bound) > 0);
  struct acceptArg a = {lfd, -1, ncclSuccess};
  pthread_t t;
  pthread_create(&t, NULL, acceptThread, &a);
  EXPECT(chrSockConnect(&bound, chrSockDeadlineSec(5), NULL, client, &err) == ncclSuccess);
  pthread_join(t, NULL);
  EXPECT(a.res == ncclSuccess);
  *server = a.fd;
  chrSockClose(&lfd);
  EXPECT(lfd == -1);
}

struct sendArg {
  int fd;
  char* buf;
  size_t len;
  ncclResult_t res;
};
static void* sendThread(void* p) {
  struct sendArg* s = p;
  s->res = chrSockSendAll(s->fd, s->buf, s->len, chrSockDeadlineSec(10), NULL, NULL);
  return NULL;
}

static void testTransfer(void) {
  int c = -1, s = -1;
  makePair(&c, &s);
  size_t len = 8 << 20; /* bigger than the socket buffers: SendAll must wait for RecvAll */
  char* out = malloc(len);
  char* in = malloc(len);
  for (size_t i = 0; i < len; i++) out[i] = (char)(rand() & 0xff);
  struct sendArg sa = {c, out, len, ncclInternalError};
  pthread_t t;
  pthread_create(&t, NULL, sendThread, &sa);
  chrSockErr err;
  EXPECT(chrSockRecvAll(s, in, len, chrSockDeadlineSec(10), NULL, &err) == ncclSuccess);
  pthread_join(t, NULL);
  EXPECT(sa.res == ncclSuccess);
  EXPECT(memcmp(in, out, len) == 0);
  EXPECT(chrSockSendAll(c, out, 0, chrSockDeadlineSec(1), NULL, &err) == ncclSuccess);

  /* Progress: partial steps until done. */
  size_t off = 0, roff = 0;
  EXPECT(chrSockProgress(c, 1, out, 1000, &off, &err) == ncclSuccess && off == 1000);
  while (roff < 1000) EXPECT(chrSockProgress(s, 0, in, 1000, &roff, &err) == ncclSuccess);
  EXPECT(memcmp(in, out, 1000) == 0);
  roff = 0;
  EXPECT(chrSockProgress(s, 0, in, 10, &roff, &err) == ncclSuccess && roff == 0); /* nothing there */

  /* Timeout: nothing arrives. */
  int64_t t0 = chrSockNowNs();
  EXPECT(chrSockRecvAll(s, in, 10, chrSockDeadlineMs(200), NULL, &err) == ncclTimeout);
  int64_t dt = chrSockNowNs() - t0;
  EXPECT(dt >= 190000000LL && dt < 2000000000LL);

  /* Abort flag: a wait with no deadline returns once it is set. */
  volatile uint32_t abortFlag = 1;
  EXPECT(chrSockRecvAll(s, in, 10, CHR_SOCK_FOREVER, &abortFlag, &err) == ncclInternalError);

  /* Peer closes mid-message: a remote error that says so; chrSockPeerClosed sees it without reading. */
  EXPECT(chrSockPeerClosed(s) == 0);
  EXPECT(chrSockSendAll(c, out, 5, chrSockDeadlineSec(1), NULL, &err) == ncclSuccess);
  chrSockClose(&c);
  for (int i = 0; i < 100 && !chrSockPeerClosed(s); i++) usleep(10000);
  EXPECT(chrSockPeerClosed(s) == 1);
  EXPECT(chrSockRecvAll(s, in, 10, chrSockDeadlineSec(5), NULL, &err) == ncclRemoteError);
  EXPECT(strstr(err.msg, "closed") != NULL && strstr(err.msg, "5 of 10") != NULL);
  /* Sending to a closed peer: a remote error, never SIGPIPE. */
  ncclResult_t r = ncclSuccess;
  for (int i = 0; i < 100 && r == ncclSuccess; i++) r = chrSockSendAll(s, out, 65536, chrSockDeadlineSec(1), NULL, &err);
  EXPECT(r == ncclRemoteError);
  chrSockClose(&s);
  free(out);
  free(in);
}

static void testConnectFailures(void) {
  chrSockAddr any, bound;
  chrSockErr err;
  int lfd = -1, fd = -1;
  /* A port nobody listens on: refused until the deadline. */
  chrSockAddrParse("127.0.0.1:0", AF_INET, &any, &err);
  EXPECT(chrSockListen(&any, 1, &lfd, &bound, &err) == ncclSuccess);
  chrSockClose(&lfd);
  int64_t t0 = chrSockNowNs();
  EXPECT(chrSockConnect(&bound, chrSockDeadlineMs(300), NULL, &fd, &err) == ncclRemoteError);
  EXPECT(fd == -1);
  EXPECT(strstr(err.msg, "refused") != NULL);
  EXPECT(chrSockNowNs() - t0 < 2000000000LL);
  /* Accept with nothing coming: timeout. */
  EXPECT(chrSockListen(&any, 1, &lfd, &bound, &err) == ncclSuccess);
  EXPECT(chrSockAccept(lfd, chrSockDeadlineMs(100), NULL, &fd, NULL, &err) == ncclTimeout);
  /* Bind to a port in use: a system error with errno. */
  int lfd2 = -1;
  EXPECT(chrSockListen(&bound, 1, &lfd2, NULL, &err) == ncclSystemError);
  EXPECT(err.sysErrno == EADDRINUSE);
  chrSockClose(&lfd);
}

int main(void) {
  srand(1234);
  testParse();
  testIfSpec();
  testTransfer();
  testConnectFailures();
  if (failures) fprintf(stderr, "test_socket: %d failures\n", failures);
  return failures ? 1 : 0;
}
