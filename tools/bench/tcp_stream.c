/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * tcp_stream.c: the raw-TCP baseline (see tcp_stream.h). Blocking sockets, one thread per stream:
 * the simplest way to move bytes over TCP, and so the yardstick for a net plugin on the same link.
 */
#include "tcp_stream.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Parse a numeric address into a sockaddr_storage with the given port. */
static int parseAddr(const char* ip, int port, struct sockaddr_storage* ss, socklen_t* len) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in* v4 = (struct sockaddr_in*)ss;
  struct sockaddr_in6* v6 = (struct sockaddr_in6*)ss;
  if (inet_pton(AF_INET, ip, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof(*v4);
    return 0;
  }
  if (inet_pton(AF_INET6, ip, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*v6);
    return 0;
  }
  fprintf(stderr, "tcp_stream: '%s' is not a numeric IPv4/IPv6 address\n", ip);
  return -1;
}

static void noDelay(int fd) {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int tcpsListen(const char* ip, int* port) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (parseAddr(ip, 0, &ss, &len) != 0) return -1;
  int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0 || bind(fd, (struct sockaddr*)&ss, len) != 0 || listen(fd, 64) != 0) {
    fprintf(stderr, "tcp_stream: listen on %s: %s\n", ip, strerror(errno));
    if (fd >= 0) close(fd);
    return -1;
  }
  len = sizeof(ss);
  getsockname(fd, (struct sockaddr*)&ss, &len);
  *port = ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in*)&ss)->sin_port : ((struct sockaddr_in6*)&ss)->sin6_port);
  return fd;
}

int tcpsAccept(int listenFd, double timeoutSec) {
  struct pollfd p = {.fd = listenFd, .events = POLLIN};
  int rc = poll(&p, 1, (int)(timeoutSec * 1000));
  if (rc <= 0) {
    fprintf(stderr, "tcp_stream: no connection within %.0f s\n", timeoutSec);
    return -1;
  }
  int fd = accept4(listenFd, NULL, NULL, SOCK_CLOEXEC);
  if (fd < 0) {
    fprintf(stderr, "tcp_stream: accept: %s\n", strerror(errno));
    return -1;
  }
  noDelay(fd);
  return fd;
}

int tcpsConnect(const char* ip, int port, double timeoutSec) {
  struct sockaddr_storage ss;
  socklen_t len;
  if (parseAddr(ip, port, &ss, &len) != 0) return -1;
  double deadline = nowSec() + timeoutSec;
  for (;;) {
    int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if (connect(fd, (struct sockaddr*)&ss, len) == 0) {
      noDelay(fd);
      return fd;
    }
    int e = errno;
    close(fd);
    if ((e != ECONNREFUSED && e != EINTR) || nowSec() > deadline) {
      fprintf(stderr, "tcp_stream: connect to %s:%d: %s\n", ip, port, strerror(e));
      return -1;
    }
    usleep(10000);
  }
  fprintf(stderr, "tcp_stream: socket: %s\n", strerror(errno));
  return -1;
}

static int sendAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int recvAll(int fd, char* p, size_t n) {
  while (n > 0) {
    ssize_t k = recv(fd, p, n, 0);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

typedef struct {
  int fd, isSender;
  size_t chunk, total;
  char* buf;
  int failed;
} streamArg;

static void* streamMain(void* arg) {
  streamArg* a = arg;
  char ack = 1;
  for (size_t done = 0; done < a->total && !a->failed;) {
    size_t n = a->total - done < a->chunk ? a->total - done : a->chunk;
    a->failed = a->isSender ? sendAll(a->fd, a->buf, n) : recvAll(a->fd, a->buf, n);
    done += n;
  }
  if (!a->failed) a->failed = a->isSender ? recvAll(a->fd, &ack, 1) : sendAll(a->fd, &ack, 1);
  return NULL;
}

double tcpsStream(const int* fds, int n, int isSender, size_t chunk, size_t total) {
  if (n < 1 || chunk == 0) return -1;
  streamArg* args = calloc((size_t)n, sizeof(*args));
  pthread_t* tids = calloc((size_t)n, sizeof(*tids));
  double result = -1;
  if (args == NULL || tids == NULL) goto out;
  for (int i = 0; i < n; i++) {
    args[i] = (streamArg){.fd = fds[i], .isSender = isSender, .chunk = chunk, .total = total};
    args[i].buf = malloc(chunk);
    if (args[i].buf == NULL) goto out_bufs;
    memset(args[i].buf, 0x5a, chunk);
  }
  double t0 = nowSec();
  int started = 0;
  for (; started < n; started++)
    if (pthread_create(&tids[started], NULL, streamMain, &args[started]) != 0) break;
  int failed = started < n;
  for (int i = 0; i < started; i++) {
    pthread_join(tids[i], NULL);
    failed |= args[i].failed;
  }
  double t1 = nowSec();
  if (failed) fprintf(stderr, "tcp_stream: a stream failed (peer closed or error)\n");
  else result = isSender ? t1 - t0 : 0;
out_bufs:
  for (int i = 0; i < n; i++) free(args[i].buf);
out:
  free(args);
  free(tids);
  return result;
}

double tcpsPingPong(int fd, int isClient, size_t size, int iters) {
  char* buf = calloc(1, size ? size : 1);
  if (buf == NULL) return -1;
  const int warmup = 20;
  double t0 = 0;
  int bad = 0;
  for (int i = 0; i < warmup + iters && !bad; i++) {
    if (i == warmup) t0 = nowSec();
    if (isClient) bad = sendAll(fd, buf, size) || recvAll(fd, buf, size);
    else bad = recvAll(fd, buf, size) || sendAll(fd, buf, size);
  }
  double t1 = nowSec();
  free(buf);
  if (bad) {
    fprintf(stderr, "tcp_stream: ping-pong failed (peer closed or error)\n");
    return -1;
  }
  return isClient ? (t1 - t0) / iters / 2 * 1e6 : 0;
}
