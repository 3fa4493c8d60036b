/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fd_pass: device/memory/fd_pass.c between real processes. A server process offers memfd descriptors
 * with random contents; client processes fetch them and check every byte through their own
 * mapping. Also: a key never offered (ENOENT), one withdrawn (ENOENT), a process the server was not
 * told to trust (EPERM, and no descriptor reaches it), a server that does not exist
 * (ECONNREFUSED), a name too long, a replaced offer (the new contents), and many fetches at once
 * from several threads of one client. chrFdPeerReachable: this process and its parent are in
 * reach; a process that is gone is not; nor is a child in a network namespace of its own (made here
 * with unshare, skipped where not permitted), whose fetch finds no server (ECONNREFUSED). Each case prints a line; any wrong outcome is a FAIL line and
 * exit status 1.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>
#include "device/memory/fd_pass.h"

#define REGION 65536
#define KEYS 8
#define THREADS 4
#define FETCHES_PER_THREAD 50
#define TIMEOUT_MS 5000

static char serverName[CHR_FD_NAME_MAX];
static int failures;

static void fail(const char* what) {
  printf("FAIL %s\n", what);
  fflush(stdout);
  failures++;
}

/* The contents of key k's region, generation g (a replaced offer is generation 1). */
static unsigned char byteOf(uint64_t k, int g, size_t i) {
  uint64_t x = (k + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)g * 0xC2B2AE3D27D4EB4Full ^ (i * 0x165667B19E3779F9ull);
  x ^= x >> 29;
  return (unsigned char)(x * 0xBF58476D1CE4E5B9ull >> 56);
}

static int makeRegion(uint64_t k, int g) {
  const int fd = memfd_create("fd-pass-test", MFD_CLOEXEC);
  if (fd < 0 || ftruncate(fd, REGION) != 0) return -1;
  unsigned char* p = mmap(NULL, REGION, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return -1;
  for (size_t i = 0; i < REGION; i++) p[i] = byteOf(k, g, i);
  munmap(p, REGION);
  return fd;
}

/* The info offered with key k's region of generation g. */
static uint64_t infoOf(uint64_t k, int g) { return (k << 32) ^ (uint64_t)(g + 1) * 0x51ED27u; }

/* Fetches key k and checks its contents and info against generation g: 0 when right. */
static int fetchAndCheck(uint64_t k, int g) {
  int fd = -1;
  uint64_t info = 0;
  const int err = chrFdFetch(serverName, k, TIMEOUT_MS, &fd, &info);
  if (err != 0) return err;
  if (info != infoOf(k, g)) {
    close(fd);
    return EBADMSG;
  }
  const unsigned char* p = mmap(NULL, REGION, PROT_READ, MAP_SHARED, fd, 0);
  close(fd);
  if (p == MAP_FAILED) return errno;
  size_t wrong = 0;
  for (size_t i = 0; i < REGION; i++) wrong += p[i] != byteOf(k, g, i);
  munmap((void*)p, REGION);
  return wrong ? EBADMSG : 0;
}

static void* fetcher(void* arg) {
  const int t = (int)(intptr_t)arg;
  long bad = 0;
  for (int i = 0; i < FETCHES_PER_THREAD; i++) bad += fetchAndCheck((uint64_t)((t + i) % KEYS), 0) != 0;
  return (void*)(intptr_t)bad;
}

/* A trusted client: every key from several threads at once. */
static int clientTrusted(void) {
  pthread_t th[THREADS];
  long bad = 0;
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, fetcher, (void*)(intptr_t)t);
  for (int t = 0; t < THREADS; t++) {
    void* r;
    pthread_join(th[t], &r);
    bad += (long)(intptr_t)r;
  }
  return bad == 0 ? 0 : 1;
}

/* An untrusted client: refused, with no descriptor. */
static int clientUntrusted(void) {
  int fd = -1;
  const int err = chrFdFetch(serverName, 0, TIMEOUT_MS, &fd, NULL);
  return err == EPERM && fd == -1 ? 0 : 1;
}

/* Runs fn in a child process; its exit status (1 when it could not run). The server is told to
 * trust the child before the child asks (the pipe holds it back until then) when trust is set. */
static int inChild(struct chrFdServer* s, int trust, int (*fn)(void)) {
  int go[2];
  if (pipe(go) != 0) return 1;
  const pid_t pid = fork();
  if (pid < 0) return 1;
  if (pid == 0) {
    char c;
    close(go[1]);
    if (read(go[0], &c, 1) != 1) _exit(1);
    _exit(fn());
  }
  close(go[0]);
  if (trust && chrFdServerAllow(s, pid) != 0) fail("chrFdServerAllow");
  const char c = 1;
  if (write(go[1], &c, 1) != 1) fail("releasing the child");
  close(go[1]);
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return 1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

static void expect(int cond, const char* what) {
  if (!cond) fail(what);
  else printf("ok %s\n", what);
}

/* A child in a network namespace of its own (or, unprivileged, in a user namespace with one): it
 * says over `ready` whether it got there ('y' or 'n'), fetches from the server (exit status 0 when
 * that finds no server), and exits once `go` closes. */
static void isolatedChild(int ready, int go) {
  const int alone = unshare(CLONE_NEWNET) == 0 || unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0;
  const char c = alone ? 'y' : 'n';
  if (write(ready, &c, 1) != 1) _exit(2);
  int fd = -1;
  const int err = alone ? chrFdFetch(serverName, 0, TIMEOUT_MS, &fd, NULL) : ECONNREFUSED;
  char wait;
  while (read(go, &wait, 1) > 0) {
  }
  _exit(err == ECONNREFUSED && fd == -1 ? 0 : 1);
}

static void reachability(void) {
  expect(chrFdPeerReachable(getpid()) == 1, "this process is in reach");
  expect(chrFdPeerReachable(getppid()) == 1, "its parent (another process, same namespaces) is in reach");
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  int status = 0;
  waitpid(gone, &status, 0);
  expect(gone > 0 && chrFdPeerReachable(gone) == 0, "a process that is gone is not in reach");
  int ready[2], go[2];
  if (pipe(ready) != 0 || pipe(go) != 0) {
    fail("pipes");
    return;
  }
  const pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    close(go[1]);
    isolatedChild(ready[1], go[0]);
  }
  close(ready[1]);
  close(go[0]);
  char c = 0;
  if (pid < 0 || read(ready[0], &c, 1) != 1) c = 0;
  if (c == 'y') expect(chrFdPeerReachable(pid) == 0, "a child in a network namespace of its own is not in reach");
  else if (c == 'n') printf("skip a child in a network namespace of its own (unshare not permitted here)\n");
  else fail("the isolated child");
  close(go[1]);
  if (pid > 0 && waitpid(pid, &status, 0) == pid)
    expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
           "... and its fetch finds no server (ECONNREFUSED: abstract sockets are per network namespace)");
  close(ready[0]);
}

int main(void) {
  snprintf(serverName, sizeof serverName, "chorus-test-fd-pass-%d", (int)getpid());
  struct chrFdServer* s = NULL;
  int err = chrFdServerStart(serverName, &s);
  expect(err == 0, "server starts");
  if (err != 0) return 1;
  struct chrFdServer* twice = NULL;
  expect(chrFdServerStart(serverName, &twice) == EADDRINUSE && twice == NULL, "a second server of that name: EADDRINUSE");
  for (uint64_t k = 0; k < KEYS; k++) {
    const int fd = makeRegion(k, 0);
    if (fd < 0 || chrFdServerOffer(s, k, fd, infoOf(k, 0)) != 0) fail("offering a region");
    if (fd >= 0) close(fd); /* the server keeps its own duplicate */
  }
  expect(inChild(s, 1, clientTrusted) == 0,
         "a trusted process: 4 threads x 50 fetches of 8 keys, every byte and info right");
  expect(inChild(s, 0, clientUntrusted) == 0, "a process not trusted: EPERM, no descriptor");

  /* This process is trusted from here on: the remaining cases fetch from it directly. */
  expect(chrFdServerAllow(s, getpid()) == 0, "trusting this process");
  int fd = -1;
  expect(chrFdFetch(serverName, 1000, TIMEOUT_MS, &fd, NULL) == ENOENT && fd == -1, "a key never offered: ENOENT");
  chrFdServerWithdraw(s, 3);
  expect(chrFdFetch(serverName, 3, TIMEOUT_MS, &fd, NULL) == ENOENT && fd == -1, "a withdrawn key: ENOENT");
  const int newer = makeRegion(5, 1);
  expect(newer >= 0 && chrFdServerOffer(s, 5, newer, infoOf(5, 1)) == 0 && fetchAndCheck(5, 1) == 0,
         "a replaced offer: the new contents and info");
  if (newer >= 0) close(newer);
  expect(fetchAndCheck(4, 0) == 0, "the other offers unchanged");
  char missing[CHR_FD_NAME_MAX];
  snprintf(missing, sizeof missing, "chorus-test-fd-pass-none-%d", (int)getpid());
  expect(chrFdFetch(missing, 0, TIMEOUT_MS, &fd, NULL) == ECONNREFUSED && fd == -1, "no such server: ECONNREFUSED");
  reachability();
  char longName[CHR_FD_NAME_MAX + 8];
  memset(longName, 'x', sizeof longName - 1);
  longName[sizeof longName - 1] = 0;
  expect(chrFdFetch(longName, 0, TIMEOUT_MS, &fd, NULL) == ENAMETOOLONG, "a name too long: ENAMETOOLONG");
  chrFdServerStop(s);
  expect(chrFdFetch(serverName, 4, TIMEOUT_MS, &fd, NULL) == ECONNREFUSED, "after stop: ECONNREFUSED");
  printf("test_fd_pass: %d failures\n", failures);
  return failures ? 1 : 0;
}
