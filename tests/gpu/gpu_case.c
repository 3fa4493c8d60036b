/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_case.c: test cases (gpu_case.h). */
#include "gpu_case.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "gpu_data.h"
#include "gpu_sim.h"
#include "config/algo_select.h"

#define CT_GUARD 64 /* bytes after the last call: a write past an output lands here */

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

int chrTestCaseInit(struct chrTestCase* tc, uint64_t seed) {
  size_t a = 0, b = 0;
  for (int k = 0; k < tc->nCalls; k++) {
    const struct chrTestCall* call = &tc->calls[k];
    uint64_t sendE, recvE;
    chrTestBufferElems(call, tc->nRanks, &sendE, &recvE);
    const size_t ts = (size_t)call->typeSize;
    tc->sizeA[k] = call->inPlace ? 0 : sendE * ts;
    tc->sizeB[k] = (call->inPlace && sendE > recvE ? sendE : recvE) * ts;
    tc->offA[k] = align256(a) + (size_t)tc->misalign;
    tc->offB[k] = align256(b) + (size_t)tc->misalign;
    a = tc->offA[k] + tc->sizeA[k];
    b = tc->offB[k] + tc->sizeB[k];
  }
  tc->bytesA = a + CT_GUARD;
  tc->bytesB = b + CT_GUARD;
  uint64_t rng = seed * 0x9E3779B97F4A7C15ull + 1;
  for (int r = 0; r < tc->nRanks; r++) {
    tc->initA[r] = (char*)malloc(tc->bytesA);
    tc->initB[r] = (char*)malloc(tc->bytesB);
    tc->simA[r] = (char*)malloc(tc->bytesA);
    tc->simB[r] = (char*)malloc(tc->bytesB);
    if (!tc->initA[r] || !tc->initB[r] || !tc->simA[r] || !tc->simB[r]) return -1;
    chrTestFillBytes(tc->initA[r], tc->bytesA, &rng);
    chrTestFillBytes(tc->initB[r], tc->bytesB, &rng);
    for (int k = 0; k < tc->nCalls; k++) {
      const struct chrTestCall* call = &tc->calls[k];
      if (call->inPlace)
        chrTestFill(tc->initB[r] + tc->offB[k], call->type, tc->sizeB[k] / (size_t)call->typeSize, &rng, 1);
      else
        chrTestFill(tc->initA[r] + tc->offA[k], call->type, tc->sizeA[k] / (size_t)call->typeSize, &rng, 1);
    }
    memcpy(tc->simA[r], tc->initA[r], tc->bytesA);
    memcpy(tc->simB[r], tc->initB[r], tc->bytesB);
  }
  return 0;
}

int chrTestCaseBuild(struct chrTestCase* tc) {
  for (int r = 0; r < tc->nRanks; r++) {
    memset(&tc->plans[r], 0, sizeof tc->plans[r]);
    for (int k = 0; k < tc->nCalls; k++) {
      struct chrTestCall call = tc->calls[k];
      if (call.scalarPtr) call.opArg = tc->devScalar;
      uint64_t send, recv;
      chrTestAddresses(&call, r, tc->devA[r] + tc->offA[k], tc->devB[r] + tc->offB[k], &send, &recv);
      if (chrTestAddCall(&tc->plans[r], &call, tc->nRanks, tc->ringOrder, r, send, recv)) return -1;
    }
    memset(tc->nWorks[r], 0, sizeof tc->nWorks[r]);
    chrTestFlatten(&tc->plans[r], tc->flat[r], tc->nWorks[r]);
  }
  return 0;
}

int chrTestCaseSimulate(struct chrTestCase* tc, char* err, size_t errLen) {
  struct chrSimRegion regions[2 * CT_MAX_RANKS + 1];
  struct chrSimRank ranks[CT_MAX_RANKS];
  int nr = 0;
  for (int r = 0; r < tc->nRanks; r++) {
    regions[nr++] = (struct chrSimRegion){tc->devA[r], tc->simA[r], tc->bytesA};
    regions[nr++] = (struct chrSimRegion){tc->devB[r], tc->simB[r], tc->bytesB};
    ranks[r].works = tc->flat[r];
    ranks[r].nWorks = tc->nWorks[r];
    ranks[r].nChannels = tc->plans[r].nChannels;
    ranks[r].launch = NULL; /* as one kernel: these plans keep sends in call order, not last */
  }
  regions[nr++] = (struct chrSimRegion){tc->devScalar, (char*)&tc->scalarBits, sizeof tc->scalarBits};
  return chrSimRun(tc->nRanks, tc->ringOrder, ranks, regions, nr, err, errLen);
}

int64_t chrTestCaseCheck(const struct chrTestCase* tc, int rank, int regionB, const char* got, char* err, size_t errLen) {
  const char* want = regionB ? tc->simB[rank] : tc->simA[rank];
  const size_t bytes = regionB ? tc->bytesB : tc->bytesA;
  if (memcmp(got, want, bytes) == 0) return -1;
  size_t pos = 0;
  for (int k = 0; k <= tc->nCalls; k++) {
    /* The bytes before call k's slice (or before the end) must be identical. */
    const size_t sliceOff = k < tc->nCalls ? (regionB ? tc->offB[k] : tc->offA[k]) : bytes;
    const size_t sliceLen = k < tc->nCalls ? (regionB ? tc->sizeB[k] : tc->sizeA[k]) : 0;
    for (; pos < sliceOff; pos++)
      if (got[pos] != want[pos]) {
        snprintf(err, errLen, "rank %d region %c: byte %zu outside every output changed: 0x%02x, expected 0x%02x", rank,
                 regionB ? 'B' : 'A', pos, (uint8_t)got[pos], (uint8_t)want[pos]);
        return (int64_t)pos;
      }
    if (k == tc->nCalls) break;
    const struct chrTestCall* call = &tc->calls[k];
    const size_t ts = (size_t)call->typeSize;
    int64_t i = chrTestCompare(got + sliceOff, want + sliceOff, call->type, sliceLen / ts);
    if (i >= 0) {
      char g[64], w[64];
      chrTestFormat(got + sliceOff + (size_t)i * ts, call->type, g, sizeof g);
      chrTestFormat(want + sliceOff + (size_t)i * ts, call->type, w, sizeof w);
      snprintf(err, errLen, "rank %d region %c call %d (%s %s): element %lld is %s, expected %s", rank, regionB ? 'B' : 'A',
               k, chrTestFuncName(call->func), chrTestTypeName(call->type), (long long)i, g, w);
      return i;
    }
    pos = sliceOff + sliceLen;
  }
  return -1;
}

void chrTestCaseFree(struct chrTestCase* tc) {
  for (int r = 0; r < tc->nRanks; r++) {
    free(tc->initA[r]);
    free(tc->initB[r]);
    free(tc->simA[r]);
    free(tc->simB[r]);
    tc->initA[r] = tc->initB[r] = tc->simA[r] = tc->simB[r] = NULL;
  }
}

void chrTestCaseName(const struct chrTestCase* tc, char* buf, size_t len) {
  static const char* ops[] = {"sum", "prod", "max", "min", "premulsum", "sumpostdiv"};
  size_t used = (size_t)snprintf(buf, len, "n=%d misalign=%d:", tc->nRanks, tc->misalign);
  for (int k = 0; k < tc->nCalls && used < len; k++) {
    const struct chrTestCall* c = &tc->calls[k];
    used += (size_t)snprintf(buf + used, len - used, " [%s %s %s%s count=%llu root=%d %s %s ch=%d chunk=%llu]",
                             chrTestFuncName(c->func), chrTestTypeName(c->type), c->op >= 0 && c->op < 6 ? ops[c->op] : "?",
                             c->scalarPtr ? "(ptr)" : "", (unsigned long long)c->count, c->root,
                             c->inPlace ? "in-place" : "out-of-place", c->proto == CHR_PROTO_LL ? "LL" : "SIMPLE",
                             c->nChannels, (unsigned long long)c->chunkElems);
  }
}
