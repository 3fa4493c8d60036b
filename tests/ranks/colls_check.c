/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls_check.c: buffers with guards and the checks of test_colls (see colls_check.h).
 */
#include "colls_check.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- buffers with guards ------------------------------------------------------------------------ */

int chrTestBufInit(chrTestBuf* b, size_t elems, size_t ts) {
  b->elems = elems;
  b->ts = ts;
  b->bytes = (elems + 2 * GUARD) * ts;
  b->alloc = malloc(b->bytes);
  b->snap = NULL;
  if (!b->alloc) {
    fprintf(stderr, "out of memory for %zu bytes\n", b->bytes);
    return 1;
  }
  memset(b->alloc, SENTINEL, b->bytes);
  b->p = b->alloc + GUARD * ts;
  return 0;
}

void chrTestBufFree(chrTestBuf* b) {
  free(b->alloc);
  free(b->snap);
  b->alloc = b->snap = NULL;
}

int chrTestSnapshot(chrTestBuf* b) {
  if (!b->snap) b->snap = malloc(b->bytes);
  if (!b->snap) return 1;
  memcpy(b->snap, b->alloc, b->bytes);
  return 0;
}

/* --- checks: each returns the number of problems found and prints the first few ------------------ */

void chrTestSetCase(chrTestRank* st, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(st->desc, sizeof(st->desc), fmt, ap);
  va_end(ap);
  st->reports = 0;
}

void chrTestReport(chrTestRank* st, const char* what, long long i, uint64_t got, uint64_t want) {
  if (st->reports++ >= MAX_REPORTS) return;
  fprintf(stderr, "rank %d/%d: %s: %s element %lld: got 0x%llx, expected 0x%llx\n", st->rank, st->nranks, st->desc,
          what, i, (unsigned long long)got, (unsigned long long)want);
}

int chrTestCheckGuards(chrTestRank* st, const char* what, const chrTestBuf* b) {
  size_t g = GUARD * b->ts, tail = g + b->elems * b->ts;
  for (size_t i = 0; i < g; i++)
    if (b->alloc[i] != SENTINEL || b->alloc[tail + i] != SENTINEL) {
      char w[96];
      snprintf(w, sizeof(w), "%s guard (%s the buffer) byte", what, b->alloc[i] != SENTINEL ? "before" : "after");
      chrTestReport(st, w, (long long)i, b->alloc[i] != SENTINEL ? b->alloc[i] : b->alloc[tail + i], SENTINEL);
      return 1;
    }
  return 0;
}

/* The whole buffer, guards included, is what chrTestSnapshot() saw. */
int chrTestCheckUnchanged(chrTestRank* st, const char* what, const chrTestBuf* b) {
  if (memcmp(b->alloc, b->snap, b->bytes) == 0) return 0;
  int ts = (int)b->ts;
  for (size_t i = 0; i < b->bytes / b->ts; i++) {
    uint64_t got = chrNumLoad(b->alloc, i, ts), want = chrNumLoad(b->snap, i, ts);
    if (got != want) chrTestReport(st, what, (long long)i - GUARD, got, want);
  }
  return 1;
}

/* n elements at `out` hold chrTestCopyBits(seed, srcRank, srcOff + i). */
int chrTestCheckCopy(chrTestRank* st, const char* what, const unsigned char* out, size_t n, int ts, uint64_t seed,
                     int srcRank, size_t srcOff) {
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = chrNumLoad(out, i, ts), want = chrTestCopyBits(ts, seed, srcRank, srcOff + i);
    if (got != want) {
      chrTestReport(st, what, (long long)i, got, want);
      bad = 1;
    }
  }
  return bad;
}

/* n elements at `out` hold the reference elements refOff.. of a reducing case. */
int chrTestCheckReduced(chrTestRank* st, const char* what, const chrTestCase* c, const chrTestRef* ref, size_t refOff,
                        const unsigned char* out, size_t n) {
  const size_t ts = (size_t)c->t->size;
  int avgFloat = c->t->isFloat && c->op == CHR_TOP_AVG;
  if (!avgFloat && memcmp(out, (const unsigned char*)ref->expect + refOff * ts, n * ts) == 0) return 0;
  int bad = 0;
  for (size_t i = 0; i < n; i++) {
    uint64_t got = chrNumLoad(out, i, (int)ts);
    if (!chrTestRefMatches(c, ref, refOff + i, got)) {
      uint64_t want =
          avgFloat ? chrNumEncode(c->type, ref->exact[refOff + i]) : chrNumLoad(ref->expect, refOff + i, (int)ts);
      chrTestReport(st, what, (long long)i, got, want);
      bad = 1;
    }
  }
  return bad;
}

int chrTestNcclFailed(chrTestRank* st, const char* call, ncclResult_t res) {
  const char* last = ncclGetLastError(st->comm);
  fprintf(stderr, "rank %d/%d: %s: %s failed: %s: %s\n", st->rank, st->nranks, st->desc, call, ncclGetErrorString(res),
          last ? last : "");
  return 1;
}

void chrTestEndCase(chrTestRank* st, int bad) {
  if (bad) st->failures++;
}

/* --- sizes and seeds ---------------------------------------------------------------------------- */

/* Element count of size index s: the whole buffer is about --medium bytes, split in `blocks` blocks
 * for the collectives that hold one block per rank. */
size_t chrTestCountOf(const chrTestArgs* a, int s, size_t ts, int blocks) {
  static const size_t fixed[3] = {0, 1, 1031};
  return s < 3 ? fixed[s] : a->medium / ts / (size_t)blocks;
}

uint64_t chrTestSeedOf(int coll, int s, int type, int op) {
  return chrTestMix64(((uint64_t)coll << 48) ^ ((uint64_t)s << 32) ^ ((uint64_t)type << 16) ^ (uint64_t)op);
}
