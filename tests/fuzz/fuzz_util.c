/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_util.c: see fuzz_util.h.
 */
#include "fuzz_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

uint64_t fuzzSeed;

static uint64_t splitmix(uint64_t* x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void fuzzRngSeed(fuzzRng* r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix(&x);
}

static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t fuzzNext(fuzzRng* r) {
  uint64_t* s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

uint64_t fuzzBelow(fuzzRng* r, uint64_t n) { return n <= 1 ? 0 : fuzzNext(r) % n; }

int fuzzChance(fuzzRng* r, int percent) { return (int)fuzzBelow(r, 100) < percent; }

void fuzzFill(fuzzRng* r, void* buf, size_t n) {
  unsigned char* p = buf;
  while (n >= 8) {
    uint64_t v = fuzzNext(r);
    memcpy(p, &v, 8);
    p += 8;
    n -= 8;
  }
  if (n > 0) {
    uint64_t v = fuzzNext(r);
    memcpy(p, &v, n);
  }
}

void fuzzFlipBits(fuzzRng* r, void* buf, size_t n, int bits) {
  unsigned char* p = buf;
  for (int i = 0; i < bits && n > 0; i++) {
    uint64_t bit = fuzzBelow(r, (uint64_t)n * 8);
    p[bit / 8] ^= (unsigned char)(1u << (bit % 8));
  }
}

uint64_t fuzzSeedFromEnv(void) {
  const char* s = getenv("CHORUS_FUZZ_SEED");
  if (s != NULL && s[0] != '\0') return strtoull(s, NULL, 0);
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  uint64_t x = (uint64_t)ts.tv_sec * 1000000007ULL ^ (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
  return splitmix(&x);
}

double fuzzNow(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

void fuzzSleepMs(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
  }
}

static int pollOne(int fd, short events, int timeoutMs, short* revents) {
  struct pollfd p = {.fd = fd, .events = events};
  double end = fuzzNow() + timeoutMs / 1000.0;
  for (;;) {
    int left = (int)((end - fuzzNow()) * 1000.0 + 0.999);
    if (left < 0) left = 0;
    int rc = poll(&p, 1, left);
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) return rc;
    *revents = p.revents;
    return 1;
  }
}

int fuzzConnect(const struct sockaddr* addr, socklen_t len, int timeoutMs) {
  int fd = socket(addr->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  if (connect(fd, addr, len) == 0) return fd;
  if (errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    errno = e;
    return -1;
  }
  short rev = 0;
  if (pollOne(fd, POLLOUT, timeoutMs, &rev) <= 0) {
    close(fd);
    errno = ETIMEDOUT;
    return -1;
  }
  int e = 0;
  socklen_t l = sizeof(e);
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &l) != 0) e = errno;
  if (e != 0) {
    close(fd);
    errno = e;
    return -1;
  }
  return fd;
}

int fuzzSendAll(int fd, const void* buf, size_t len, int timeoutMs) {
  const char* p = buf;
  double end = fuzzNow() + timeoutMs / 1000.0;
  while (len > 0) {
    ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      len -= (size_t)n;
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EPIPE || errno == ECONNRESET || errno == ENOTCONN)) return 1;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) return -1;
    int left = (int)((end - fuzzNow()) * 1000.0);
    if (left <= 0) return -1;
    short rev = 0;
    if (pollOne(fd, POLLOUT, left, &rev) <= 0) return -1;
    if (rev & (POLLERR | POLLHUP)) return 1;
  }
  return 0;
}

int fuzzAwaitReaction(int fd, int timeoutMs) {
  short rev = 0;
  return pollOne(fd, POLLIN | POLLRDHUP, timeoutMs, &rev) > 0;
}

size_t fuzzReadNow(int fd, void* buf, size_t cap) {
  size_t got = 0;
  while (got < cap) {
    ssize_t n = recv(fd, (char*)buf + got, cap - got, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += (size_t)n;
  }
  return got;
}

void fuzzAbortClose(int fd) {
  if (fd < 0) return;
  struct linger lg = {.l_onoff = 1, .l_linger = 0};
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
  close(fd);
}

int fuzzCountFds(void) {
  int n = 0;
  DIR* d = opendir("/proc/self/fd");
  if (d == NULL) return -1;
  struct dirent* e;
  while ((e = readdir(d)) != NULL)
    if (e->d_name[0] != '.') n++;
  closedir(d);
  return n - 1; /* the DIR's own fd */
}

void fuzzStatsAdd(fuzzStats* into, const fuzzStats* from) {
  into->messages += from->messages;
  into->valid += from->valid;
  into->connections += from->connections;
  into->reacted += from->reacted;
  into->waited += from->waited;
  into->accepted += from->accepted;
  into->throttled += from->throttled;
  into->stalled += from->stalled;
}
