/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_util.h: what the fuzz tests share: a seeded PRNG, a raw TCP client that sends bytes and
 * watches how the listening side reacts, counters, fd counting, and the rank processes' plumbing.
 *
 * Only libc: the net plugin's fuzz test does not link the core.
 *
 * Every connection a fuzzer opens is closed with an RST (SO_LINGER 0), so neither side is left in
 * TIME_WAIT and 10^5 connections do not run out of loopback ports.
 */
#ifndef CHORUS_TESTS_FUZZ_UTIL_H_
#define CHORUS_TESTS_FUZZ_UTIL_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

/* ---- PRNG (xoshiro256**, seeded through splitmix64): the same seed makes the same messages ---- */
typedef struct {
  uint64_t s[4];
} fuzzRng;

void fuzzRngSeed(fuzzRng* r, uint64_t seed);
uint64_t fuzzNext(fuzzRng* r);
uint64_t fuzzBelow(fuzzRng* r, uint64_t n); /* uniform in [0, n), n > 0 */
int fuzzChance(fuzzRng* r, int percent);    /* 1 with probability percent/100 */
void fuzzFill(fuzzRng* r, void* buf, size_t n);
/* Flip `bits` random bits of buf[0..n). */
void fuzzFlipBits(fuzzRng* r, void* buf, size_t n, int bits);

/* The run's seed: CHORUS_FUZZ_SEED when set (decimal or 0x hex), else from the clock and pid. */
uint64_t fuzzSeedFromEnv(void);
/* The seed every failure message prints, so a failing run can be repeated. */
extern uint64_t fuzzSeed;

#define FUZZ_FAIL(...)                                                                         \
  do {                                                                                         \
    fprintf(stderr, "FAIL [pid %d] %s:%d: ", (int)getpid(), __FILE__, __LINE__);               \
    fprintf(stderr, __VA_ARGS__);                                                              \
    fprintf(stderr, " (seed 0x%llx: rerun with CHORUS_FUZZ_SEED=0x%llx)\n",                    \
            (unsigned long long)fuzzSeed, (unsigned long long)fuzzSeed);                       \
    fflush(stderr);                                                                            \
    _exit(1);                                                                                  \
  } while (0)

/* ---- time ---- */
double fuzzNow(void); /* CLOCK_MONOTONIC seconds */
void fuzzSleepMs(int ms);

/* ---- raw client ---- */

/* Non-blocking connect to addr, waiting at most timeoutMs. Returns the (blocking-mode off,
 * non-blocking) fd, or -1 with errno set (ECONNREFUSED when nobody listens). */
int fuzzConnect(const struct sockaddr* addr, socklen_t len, int timeoutMs);

/* Send all len bytes within timeoutMs. 0: sent; 1: the peer closed or reset the connection first
 * (a reaction, not an error); -1: timed out or another error. */
int fuzzSendAll(int fd, const void* buf, size_t len, int timeoutMs);

/* Wait up to timeoutMs for the listener to react: data to read, EOF, or reset. 1: reacted, 0: not. */
int fuzzAwaitReaction(int fd, int timeoutMs);

/* Read what is there now without blocking (up to cap bytes). Returns the byte count (0: none or EOF). */
size_t fuzzReadNow(int fd, void* buf, size_t cap);

/* Close with an RST: no TIME_WAIT on either side. fd < 0 is a no-op. */
void fuzzAbortClose(int fd);

/* Open fds of this process. */
int fuzzCountFds(void);

/* ---- counters of one fuzzing run ---- */
typedef struct {
  uint64_t messages;   /* garbage / mutated messages sent (what the test's minimum counts) */
  uint64_t valid;      /* well-formed messages sent around them (fillers on kept connections) */
  uint64_t connections;
  uint64_t reacted;    /* rejected messages the listener answered or closed, as it must */
  uint64_t waited;     /* incomplete messages left for the listener to time out or see reset */
  uint64_t accepted;   /* mutated messages that happen to be well-formed (the listener keeps them) */
  uint64_t throttled;  /* connections the listener refused or closed at once (allowed) */
  uint64_t stalled;    /* connections held open mid-message for a while */
} fuzzStats;

void fuzzStatsAdd(fuzzStats* into, const fuzzStats* from);

#endif /* CHORUS_TESTS_FUZZ_UTIL_H_ */
