/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_timing.cuh: where a kernel-copied transfer's time goes (ce_kernels.cu), for a build with
 * CHR_CE_TIMING=1 in CUDA_DEFINES; without it every hook is empty and nothing is kept.
 *
 * Per device, summed over its copies: the copy kernel's start after the previous copy's end, the
 * wait until the publish (dstK) was seen, the wait for the receiver's ready word after it, the copy
 * from part 0's sight of both to the last CTA's end; per copy (the first TIMING_LOG): its transfer
 * number and its part 0's globaltimer stamps, the spread of its CTAs' starts and sights, and the
 * waits CTA's start and end. chrCeTimingPrint writes them to stderr when a rank's engine state ends.
 * The stamps are %globaltimer: comparable within one GPU, and with the host's CLOCK_REALTIME only
 * roughly (ce_sends.cu logs the host's posts and publishes on that clock).
 * Part of ce_kernels.cu, which alone includes it: it defines the timing build's device variables and
 * chrCeTimingPrint (declared in ce_kernels.h).
 */
#ifndef CHORUS_DEVICE_CE_TIMING_CUH_
#define CHORUS_DEVICE_CE_TIMING_CUH_

#include <stdio.h>
#include "device/copy_engine/ce_kernels.h"

/* One CTA's stamps of one copy (thread 0's). */
struct chrCeClock {
  unsigned long long t0, pub, ready, both;
};

#if CHR_CE_TIMING
#define TIMING_LOG 1024
enum { T_COPIES, T_GAP, T_PUB, T_READY, T_COPY, T_WAITS, T_N };
__device__ unsigned long long chrCeTimes[T_N];
__device__ unsigned long long chrCeLastEnd, chrCeCopyFrom;
__device__ unsigned long long chrCeCopyLog[TIMING_LOG][5]; /* k, part 0's start, publish seen, ready seen, last end */
__device__ unsigned long long chrCeCtaLog[TIMING_LOG][4];  /* over the CTAs: latest start, ~earliest start, latest and ~earliest sight */
__device__ unsigned long long chrCeWaitsLog[TIMING_LOG][3]; /* the waits CTA: its first word's number, start, end */

__device__ static __forceinline__ unsigned long long chrCeNow(void) {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}
#endif

__device__ static __forceinline__ void chrCeClockStart(struct chrCeClock* c) {
  c->t0 = c->pub = c->ready = c->both = 0;
#if CHR_CE_TIMING
  c->t0 = chrCeNow();
#endif
}

/* In the poll loop: the first sight of each word at its number. */
__device__ static __forceinline__ void chrCeClockPoll(struct chrCeClock* c, int pubOk, int readyOk) {
#if CHR_CE_TIMING
  if (c->pub == 0 && pubOk) c->pub = chrCeNow();
  if (c->ready == 0 && readyOk) c->ready = chrCeNow();
#else
  (void)c, (void)pubOk, (void)readyOk;
#endif
}

/* Both seen (the poll loop left). */
__device__ static __forceinline__ void chrCeClockSeen(struct chrCeClock* c) {
#if CHR_CE_TIMING
  c->both = chrCeNow();
  if (c->pub == 0) c->pub = c->both;
  if (c->ready == 0) c->ready = c->both;
#else
  (void)c;
#endif
}

/* Thread 0 of every CTA, after its share and before it counts. */
__device__ static __forceinline__ void chrCeClockShareDone(const struct chrCeClock* c, unsigned long long k, int part) {
#if CHR_CE_TIMING
  const unsigned long long at = atomicAdd(&chrCeTimes[T_COPIES], 0ull) % TIMING_LOG; /* copies before this one */
  atomicMax(&chrCeCtaLog[at][0], c->t0);
  atomicMax(&chrCeCtaLog[at][1], ~c->t0);
  atomicMax(&chrCeCtaLog[at][2], c->both);
  atomicMax(&chrCeCtaLog[at][3], ~c->both);
  if (part != 0) return;
  chrCeCopyFrom = c->both;
  __threadfence(); /* before this CTA counts: the last CTA reads it */
  if (chrCeLastEnd != 0 && c->t0 > chrCeLastEnd) atomicAdd(&chrCeTimes[T_GAP], c->t0 - chrCeLastEnd);
  atomicAdd(&chrCeTimes[T_PUB], c->pub - c->t0);
  atomicAdd(&chrCeTimes[T_READY], c->both - c->pub);
  chrCeCopyLog[at][0] = k;
  chrCeCopyLog[at][1] = c->t0;
  chrCeCopyLog[at][2] = c->pub;
  chrCeCopyLog[at][3] = c->ready;
#else
  (void)c, (void)k, (void)part;
#endif
}

/* The copy's last CTA, before it writes the done word. */
__device__ static __forceinline__ void chrCeClockCopyEnd(void) {
#if CHR_CE_TIMING
  const unsigned long long end = chrCeNow();
  chrCeLastEnd = end;
  chrCeCopyLog[atomicAdd(&chrCeTimes[T_COPIES], 1ull) % TIMING_LOG][4] = end;
  atomicAdd(&chrCeTimes[T_COPY], end - chrCeCopyFrom);
#endif
}

/* The waits CTA: its start (returned) and its end. */
__device__ static __forceinline__ unsigned long long chrCeClockWaitsStart(void) {
#if CHR_CE_TIMING
  return chrCeNow();
#else
  return 0;
#endif
}
__device__ static __forceinline__ void chrCeClockWaitsEnd(unsigned long long t0, unsigned long long firstK) {
#if CHR_CE_TIMING
  const unsigned long long at = atomicAdd(&chrCeTimes[T_WAITS], 1ull) % TIMING_LOG;
  chrCeWaitsLog[at][0] = firstK;
  chrCeWaitsLog[at][1] = t0;
  chrCeWaitsLog[at][2] = chrCeNow();
#else
  (void)t0, (void)firstK;
#endif
}

void chrCeTimingPrint(int rank) {
#if CHR_CE_TIMING
  static unsigned long long t[T_N], copies[TIMING_LOG][5], ctas[TIMING_LOG][4], waits[TIMING_LOG][3];
  if (cudaMemcpyFromSymbol(t, chrCeTimes, sizeof t) != cudaSuccess ||
      cudaMemcpyFromSymbol(copies, chrCeCopyLog, sizeof copies) != cudaSuccess ||
      cudaMemcpyFromSymbol(ctas, chrCeCtaLog, sizeof ctas) != cudaSuccess ||
      cudaMemcpyFromSymbol(waits, chrCeWaitsLog, sizeof waits) != cudaSuccess) {
    cudaGetLastError();
    return;
  }
  for (unsigned long long i = 0; i < t[T_COPIES] && i < TIMING_LOG; i++)
    fprintf(stderr, "chorus ce gpu rank %d k %llu start %llu seen %llu ready %llu end %llu; ctas start %.1f us apart, "
            "see from %.1f to %.1f us after the first start\n", rank, copies[i][0], copies[i][1], copies[i][2],
            copies[i][3], copies[i][4], (ctas[i][0] - ~ctas[i][1]) / 1e3, (~ctas[i][3] - ~ctas[i][1]) / 1e3,
            (ctas[i][2] - ~ctas[i][1]) / 1e3);
  for (unsigned long long i = 0; i < t[T_WAITS] && i < TIMING_LOG; i++)
    fprintf(stderr, "chorus ce waits rank %d k %llu start %llu reached %llu\n", rank, waits[i][0], waits[i][1], waits[i][2]);
  const double n = t[T_COPIES] ? (double)t[T_COPIES] : 1.0;
  fprintf(stderr, "chorus ce timing rank %d: %llu kernel copies; mean us: start after the last copy's end %.1f, "
          "publish wait %.1f, ready wait after it %.1f, copy (part 0's sight to the last CTA's end) %.1f\n", rank,
          t[T_COPIES], t[T_GAP] / n / 1e3, t[T_PUB] / n / 1e3, t[T_READY] / n / 1e3, t[T_COPY] / n / 1e3);
#else
  (void)rank;
#endif
}

#endif /* CHORUS_DEVICE_CE_TIMING_CUH_ */
