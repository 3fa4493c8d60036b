/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * summary.c: at finalize, a table per communicator and rank of what its collectives and
 * point-to-point operations took: per function and size bucket (the bytes nccl-tests would print as
 * "size", rounded up to a power of two), the count, the bytes, the total and mean time, and the
 * bandwidths nccl-tests reports: algbw = S / time, busbw = algbw x its factor (AllReduce 2(n-1)/n;
 * AllGather, ReduceScatter, AlltoAll, Gather, Scatter (n-1)/n; the others 1). An operation's time
 * runs from its start to its last child's stop (its completion). Written to
 * <dir>/chorus-prof-<commId>-rank<r>.summary.txt. With ABI v1..v3 the plugin is not told the
 * number of ranks: busbw is then left out.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profiler_chorus.h"

/* nccl-tests' S: the API count is per rank for AllGather and ReduceScatter. */
static double opBytes(const struct pcCtx* ctx, const struct pcOp* op) {
  double bytes = (double)op->count * (double)op->typeSize;
  if (op->func == 2 /* AllGather */ || op->func == 3 /* ReduceScatter */) bytes *= ctx->nRanks > 0 ? ctx->nRanks : 1;
  return bytes;
}

double pcBusFactor(int func, int nRanks) {
  if (nRanks <= 0) return 0.0;
  double n = nRanks;
  switch (func) {
    case 4: return 2.0 * (n - 1) / n;                        /* AllReduce */
    case 2: case 3: case 8: case 9: case 10: return (n - 1) / n; /* AllGather, ReduceScatter, AlltoAll, Scatter, Gather */
    default: return 1.0;
  }
}

void pcSummaryAdd(struct pcCtx* ctx, const struct pcOp* op) {
  double bytes = opBytes(ctx, op);
  uint64_t bucket = 1;
  while ((double)bucket < bytes && bucket < (1ull << 62)) bucket <<= 1;
  struct pcRow* row = NULL;
  for (int i = 0; i < ctx->nRows && row == NULL; i++)
    if (ctx->rows[i].func == op->func && ctx->rows[i].bucket == bucket) row = &ctx->rows[i];
  if (row == NULL) {
    if (ctx->nRows == PC_SUMMARY_ROWS) return;
    row = &ctx->rows[ctx->nRows++];
    memset(row, 0, sizeof(*row));
    row->func = op->func;
    row->bucket = bucket;
  }
  row->count++;
  row->bytes += bytes;
  row->seconds += (double)(op->endNs - op->startNs) / 1e9;
}

static int byFuncThenSize(const void* a, const void* b) {
  const struct pcRow *x = a, *y = b;
  if (x->func != y->func) return x->func - y->func;
  return x->bucket < y->bucket ? -1 : x->bucket > y->bucket;
}

void pcSummaryWrite(struct pcCtx* ctx) {
  if (ctx->nRows == 0) return;
  char path[1200];
  snprintf(path, sizeof(path), "%s/chorus-prof-%016llx-rank%d.summary.txt", ctx->dir, (unsigned long long)ctx->commId,
           ctx->rank);
  FILE* f = fopen(path, "w");
  if (f == NULL) {
    if (ctx->log) ctx->log(NCCL_LOG_WARN, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: cannot write %s: %s",
                           path, strerror(errno));
    return;
  }
  qsort(ctx->rows, (size_t)ctx->nRows, sizeof(ctx->rows[0]), byFuncThenSize);
  fprintf(f, "# Chorus profiler summary: comm %016llx%s%s, rank %d of %d, %d node(s)\n",
          (unsigned long long)ctx->commId, ctx->commName[0] ? " " : "", ctx->commName, ctx->rank, ctx->nRanks,
          ctx->nNodes);
  fprintf(f, "# time: start to completion (last proxy op / kernel channel); algbw = bytes/time, busbw = algbw x "
             "nccl-tests' factor\n");
  fprintf(f, "%-14s %14s %8s %16s %14s %12s %12s %12s\n", "function", "size<=(B)", "count", "bytes", "time(us)",
          "avg(us)", "algbw(GB/s)", "busbw(GB/s)");
  for (int i = 0; i < ctx->nRows; i++) {
    const struct pcRow* r = &ctx->rows[i];
    double us = r->seconds * 1e6;
    double algbw = r->seconds > 0 ? r->bytes / 1e9 / r->seconds : 0.0;
    double factor = pcBusFactor(r->func, ctx->nRanks);
    fprintf(f, "%-14s %14llu %8llu %16.0f %14.1f %12.2f %12.3f ", r->func >= 0 ? pcFuncNames[r->func] : "Unknown",
            (unsigned long long)r->bucket, (unsigned long long)r->count, r->bytes, us, us / (double)r->count, algbw);
    if (factor > 0) fprintf(f, "%12.3f\n", algbw * factor);
    else fprintf(f, "%12s\n", "-");
  }
  fclose(f);
  if (ctx->log) ctx->log(NCCL_LOG_INFO, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: summary written to %s", path);
}
