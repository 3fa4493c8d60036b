/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * oob.c: the side channel between the two ranks of chorus-netcheck (a socketpair when forked on one
 * host, a TCP connection between two hosts). It carries listen handles, barriers between phases and
 * rank 1's tally. Every wait has a timeout, so a dead or hung peer is reported, never waited on.
 */
#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "netcheck.h"

double ncNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int ncOobSend(int fd, const void* buf, size_t len) {
  const char* p = buf;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int ncOobRecv(int fd, void* buf, size_t len, double timeoutSec) {
  char* p = buf;
  double deadline = ncNow() + timeoutSec;
  while (len > 0) {
    double left = deadline - ncNow();
    if (left <= 0) return -1;
    struct pollfd pfd = {.fd = fd, .events = POLLIN};
    int rc = poll(&pfd, 1, (int)(left * 1000) + 1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    ssize_t n = recv(fd, p, len, 0);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

int ncOobBarrier(int fd, double timeoutSec) {
  uint32_t mine = 0x42415252u, theirs = 0; /* "BARR" */
  if (ncOobSend(fd, &mine, sizeof(mine)) != 0) return -1;
  if (ncOobRecv(fd, &theirs, sizeof(theirs), timeoutSec) != 0) return -1;
  return theirs == mine ? 0 : -1;
}
