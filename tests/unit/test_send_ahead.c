/*
 * test_send_ahead.c: CHR_WORK_SEND_AHEAD (plan/work.h chrLoopOrder) only reorders a work's steps.
 * For random works of the looped patterns (ring all-reduce, reduce-scatter, all-gather on 2..7
 * ranks, the pair all-reduce), 0 to many loops, a last loop cut short:
 *   - the steps with the flag are the steps without it, each once (a permutation);
 *   - every link sees the same steps in the same order (so a peer cannot tell, and ranks may
 *     differ in the setting): the k-th step that sends (receives) on a link is the same step,
 *     field for field, in both orders;
 *   - no step runs before a step of the same loop that comes before it without the flag, except
 *     a loop's last step after the next loop's first (the one swap the order makes).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/work.h"

static int failures;
#define FAIL(...)                     \
  do {                                \
    fprintf(stderr, __VA_ARGS__);     \
    fputc('\n', stderr);              \
    failures++;                       \
  } while (0)

static uint64_t rnd(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

static int sameStep(const struct chrStep* a, const struct chrStep* b) {
  if (a->nRecv != b->nRecv || a->nSend != b->nSend || a->localOff != b->localOff || a->outOff != b->outOff ||
      a->count != b->count || a->final != b->final)
    return 0;
  for (int i = 0; i < a->nRecv; i++)
    if (a->recv[i] != b->recv[i]) return 0;
  for (int i = 0; i < a->nSend; i++)
    if (a->send[i] != b->send[i]) return 0;
  return 1;
}

/* Link l's k-th use (sends when isSend) among steps[0..n): its index, or -1. */
static long nthUse(const struct chrStep* steps, uint64_t n, int l, int isSend, uint64_t k) {
  for (uint64_t i = 0; i < n; i++) {
    const int m = isSend ? steps[i].nSend : steps[i].nRecv;
    const int* ls = isSend ? steps[i].send : steps[i].recv;
    for (int j = 0; j < m; j++)
      if (ls[j] == l && k-- == 0) return (long)i;
  }
  return -1;
}

static void checkWork(struct chrWork* w, const int* ringOrder) {
  uint64_t nSteps, nRecvs[CHR_WORK_MAX_LINKS];
  w->flags = 0;
  chrWorkCounts(w, &nSteps, nRecvs);
  struct chrStep* plain = calloc(nSteps + 1, sizeof(*plain));
  struct chrStep* ahead = calloc(nSteps + 1, sizeof(*ahead));
  char* used = calloc(nSteps + 1, 1);
  for (uint64_t i = 0; i < nSteps; i++) chrWorkStep(w, ringOrder, i, &plain[i]);
  w->flags = CHR_WORK_SEND_AHEAD;
  uint64_t n2;
  chrWorkCounts(w, &n2, nRecvs);
  if (n2 != nSteps) FAIL("pattern %d: %llu steps ahead, %llu plain", w->pattern, (unsigned long long)n2, (unsigned long long)nSteps);
  const uint64_t perLoop = w->pattern == CHR_PAT_RING_ALLREDUCE ? (uint64_t)(2 * w->nRanks - 1)
                           : w->pattern == CHR_PAT_PAIR_ALLREDUCE ? 2 : (uint64_t)w->nRanks;
  for (uint64_t i = 0; i < nSteps; i++) {
    chrWorkStep(w, ringOrder, i, &ahead[i]);
    uint64_t loop, s;
    chrLoopOrder(w, i, perLoop, &loop, &s);
    const uint64_t orig = loop * perLoop + s;
    if (orig >= nSteps || used[orig]) {
      FAIL("pattern %d n=%d: step %llu maps to (%llu,%llu), out of range or twice", w->pattern, w->nRanks,
           (unsigned long long)i, (unsigned long long)loop, (unsigned long long)s);
      continue;
    }
    used[orig] = 1;
    if (!sameStep(&ahead[i], &plain[orig]))
      FAIL("pattern %d n=%d: step %llu is not plain step %llu", w->pattern, w->nRanks, (unsigned long long)i,
           (unsigned long long)orig);
    /* At most one step ahead of its place, and only a loop's first step. */
    if (orig > i + 1 || (orig == i + 1 && s != 0))
      FAIL("pattern %d n=%d: step %llu is plain step %llu", w->pattern, w->nRanks, (unsigned long long)i,
           (unsigned long long)orig);
  }
  for (int l = 0; l < w->nLinks; l++)
    for (int isSend = 0; isSend < 2; isSend++)
      for (uint64_t k = 0;; k++) {
        long a = nthUse(plain, nSteps, l, isSend, k), b = nthUse(ahead, nSteps, l, isSend, k);
        if (a < 0 && b < 0) break;
        if (a < 0 || b < 0 || !sameStep(&plain[a], &ahead[b])) {
          FAIL("pattern %d n=%d: link %d's %s %llu differs", w->pattern, w->nRanks, l, isSend ? "send" : "receive",
               (unsigned long long)k);
          break;
        }
      }
  free(plain);
  free(ahead);
  free(used);
}

int main(void) {
  uint64_t seed = 0x9e3779b97f4a7c15ull;
  int ringOrder[8];
  const uint8_t patterns[] = {CHR_PAT_RING_ALLREDUCE, CHR_PAT_RING_REDUCESCATTER, CHR_PAT_RING_ALLGATHER,
                              CHR_PAT_PAIR_ALLREDUCE};
  int cases = 0;
  for (int iter = 0; iter < 4000; iter++) {
    struct chrWork w;
    memset(&w, 0, sizeof(w));
    w.pattern = patterns[rnd(&seed) % 4];
    w.nRanks = w.pattern == CHR_PAT_PAIR_ALLREDUCE ? 2 : 2 + (int)(rnd(&seed) % 6);
    for (int i = 0; i < w.nRanks; i++) ringOrder[i] = (i + 1) % w.nRanks; /* any order: a permutation */
    w.ringPos = (int)(rnd(&seed) % (uint64_t)w.nRanks);
    w.typeSize = (uint8_t)(1u << (rnd(&seed) % 4));
    w.chunkElems = 1 + rnd(&seed) % 64;
    const uint64_t perLoop = w.pattern == CHR_PAT_RING_ALLREDUCE ? (uint64_t)w.nRanks * w.chunkElems : w.chunkElems;
    const uint64_t loops = rnd(&seed) % 9; /* 0 .. 8 loops, the last one short half the time */
    w.len = loops * perLoop - (loops && rnd(&seed) % 2 ? rnd(&seed) % perLoop : 0);
    w.start = rnd(&seed) % 1000;
    w.count = w.start + w.len;
    w.sendbuff = 0x10000;
    w.recvbuff = rnd(&seed) % 2 ? w.sendbuff : 0x900000;
    w.nLinks = 2;
    w.links[CHR_RING_SEND].peer = (w.ringPos + 1) % w.nRanks;
    w.links[CHR_RING_SEND].isSend = 1;
    w.links[CHR_RING_RECV].peer = (w.ringPos + w.nRanks - 1) % w.nRanks;
    checkWork(&w, ringOrder);
    cases++;
  }
  printf("send-ahead: %d random works, %d failures\n", cases, failures);
  return failures ? 1 : 0;
}
