/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_cuts.c (gpu.cuts): how the launcher cuts a plan into kernels (chrDevLaunchNext,
 * device/kernels/dev_work.h, the walk device/launch/launch.cu makes), on hand-made plans, without a GPU. Each launch must hold whole calls, in call
 * order, every reducing work in the launch's kernel:
 *   - a tree all-reduce: its up pass reduces on channel 0 and its down pass only copies on channel 1,
 *     two such calls with different kernels: the down passes of the second must not join the first
 *     launch (on the GPU they waited there for an up pass of the next launch: a hang);
 *   - copies before the first reducing call join its launch; a plan of copies alone is one launch;
 *   - calls of one kernel stay in one launch, however many.
 */
#include <stdio.h>
#include <string.h>
#include "device/kernels/dev_comm.h" /* CHR_DEV_MAX_CHANNELS */
#include "device/kernels/dev_work.h"
#include "nccl.h"

#define MAX_WORKS 64
static int failures;

struct plan {
  int nChannels;
  int n[CHR_DEV_MAX_CHANNELS];
  struct chrWork w[CHR_DEV_MAX_CHANNELS][MAX_WORKS];
};

static void add(struct plan* p, int channel, int call, int pattern, int type, int op) {
  struct chrWork* w = &p->w[channel][p->n[channel]++];
  memset(w, 0, sizeof(*w));
  w->call = call;
  w->pattern = (uint8_t)pattern;
  w->type = (uint8_t)type;
  w->op = (uint8_t)op;
  if (channel + 1 > p->nChannels) p->nChannels = channel + 1;
}

/* Walks the launches as device/launch/launch.cu does; want[k] is the number of calls launch k holds. */
static void expectLaunches(const char* name, const struct plan* p, const int* want, int nWant) {
  struct chrWork flat[CHR_DEV_MAX_CHANNELS * MAX_WORKS];
  int base[CHR_DEV_MAX_CHANNELS], end[CHR_DEV_MAX_CHANNELS], k = 0;
  for (int c = 0; c < p->nChannels; c++) {
    base[c] = k;
    for (int i = 0; i < p->n[c]; i++) flat[k++] = p->w[c][i];
    end[c] = k;
  }
  int launch = 0, nextCall = 0;
  for (;; launch++) {
    int key = -1, took = 0, lo = 1 << 30, hi = -1, take[CHR_DEV_MAX_CHANNELS];
    chrDevLaunchNext(flat, base, end, p->nChannels, take, &key);
    for (int c = 0; c < p->nChannels; c++)
      for (int stop = base[c] + take[c]; base[c] < stop; base[c]++, took++) {
        const struct chrWork* w = &flat[base[c]];
        const int wk = chrDevKernelKey(w);
        if (wk >= 0 && wk != key) {
          fprintf(stderr, "FAIL %s: launch %d (kernel %d) holds call %d of kernel %d\n", name, launch, key, w->call, wk);
          failures++;
        }
        if (w->call < lo) lo = w->call;
        if (w->call > hi) hi = w->call;
      }
    if (took == 0) break;
    if (lo != nextCall || launch >= nWant || hi - lo + 1 != want[launch]) {
      fprintf(stderr, "FAIL %s: launch %d holds calls %d..%d, expected %d calls from %d\n", name, launch, lo, hi,
              launch < nWant ? want[launch] : 0, nextCall);
      failures++;
    }
    nextCall = hi + 1;
  }
  if (launch != nWant) {
    fprintf(stderr, "FAIL %s: %d launches, expected %d\n", name, launch, nWant);
    failures++;
  }
  for (int c = 0; c < p->nChannels; c++)
    if (base[c] != end[c]) {
      fprintf(stderr, "FAIL %s: channel %d keeps %d works no launch takes\n", name, c, end[c] - base[c]);
      failures++;
    }
}

int main(void) {
  static struct plan p;
  /* Two tree all-reduces of different kernels (bf16 premulsum, then f64 min), a ring reduce of a
   * third: up passes on channel 0, down passes (copies) on channel 1. */
  memset(&p, 0, sizeof(p));
  add(&p, 0, 0, CHR_PAT_TREE_UP, ncclBfloat16, CHR_DEV_PREMULSUM);
  add(&p, 1, 0, CHR_PAT_TREE_DOWN, ncclBfloat16, CHR_DEV_SUM);
  add(&p, 0, 1, CHR_PAT_TREE_UP, ncclFloat64, CHR_DEV_MIN);
  add(&p, 1, 1, CHR_PAT_TREE_DOWN, ncclFloat64, CHR_DEV_SUM);
  add(&p, 0, 2, CHR_PAT_RING_REDUCE, ncclInt32, CHR_DEV_SUMPOSTDIV);
  add(&p, 1, 2, CHR_PAT_RING_REDUCE, ncclInt32, CHR_DEV_SUMPOSTDIV);
  expectLaunches("trees of two kernels", &p, (const int[]){1, 1, 1}, 3);

  /* A root: its down lane is empty, so channel 1 holds nothing of the first call. */
  memset(&p, 0, sizeof(p));
  add(&p, 0, 0, CHR_PAT_TREE_ROOT, ncclFloat32, CHR_DEV_SUM);
  add(&p, 0, 1, CHR_PAT_TREE_ROOT, ncclInt8, CHR_DEV_MAX);
  add(&p, 1, 1, CHR_PAT_TREE_DOWN, ncclInt8, CHR_DEV_SUM);
  expectLaunches("root of two kernels", &p, (const int[]){1, 1}, 2);

  /* Copies first (all-gather, broadcast), then reductions of one kernel, then one of another. */
  memset(&p, 0, sizeof(p));
  for (int c = 0; c < 4; c++) {
    add(&p, c, 0, CHR_PAT_RING_ALLGATHER, ncclInt8, CHR_DEV_SUM);
    add(&p, c, 1, CHR_PAT_RING_BROADCAST, ncclFloat16, CHR_DEV_SUM);
    add(&p, c, 2, CHR_PAT_RING_ALLREDUCE, ncclFloat32, CHR_DEV_SUM);
    add(&p, c, 3, CHR_PAT_RING_REDUCESCATTER, ncclFloat32, CHR_DEV_SUM);
    add(&p, c, 4, CHR_PAT_RING_ALLGATHER, ncclInt8, CHR_DEV_SUM);
    add(&p, c, 5, CHR_PAT_RING_ALLREDUCE, ncclFloat16, CHR_DEV_MAX);
  }
  expectLaunches("copies and two kernels", &p, (const int[]){5, 1}, 2);

  /* Copies alone: one launch. */
  memset(&p, 0, sizeof(p));
  for (int call = 0; call < 6; call++) add(&p, call % 3, call, CHR_PAT_RING_BROADCAST, ncclUint8, CHR_DEV_SUM);
  expectLaunches("copies only", &p, (const int[]){6}, 1);

  if (failures == 0) printf("gpu.cuts: every launch holds whole calls of one kernel, in call order\n");
  return failures ? 1 : 0;
}
