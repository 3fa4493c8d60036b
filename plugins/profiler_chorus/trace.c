/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * trace.c: the Chrome trace (JSON object format, loads in Perfetto and chrome://tracing) of one
 * communicator on one rank: <dir>/chorus-prof-<commId>-rank<r>.json. Opened at the first event;
 * events are written as they end, so the file grows during the run; finalize writes the closing
 * brackets, after which the file is valid JSON. Timestamps are CLOCK_MONOTONIC microseconds (one
 * clock for every process of the machine, so the ranks' files can be loaded together); pid = rank.
 */
#include <errno.h>
#include <string.h>

#include "profiler_chorus.h"

/* Microseconds with three decimals, printed as integers (printf's floating point is slow). */
#define US(ns) (unsigned long long)((ns) / 1000), (unsigned)((ns) % 1000)

static void jsonString(FILE* f, const char* s) {
  fputc('"', f);
  for (; s && *s; s++) {
    unsigned char c = (unsigned char)*s;
    if (c == '"' || c == '\\') fprintf(f, "\\%c", c);
    else if (c < 0x20) fprintf(f, "\\u%04x", c);
    else fputc(c, f);
  }
  fputc('"', f);
}

static void sep(struct pcCtx* ctx) {
  if (!ctx->firstEvent) fputs(",\n", ctx->trace);
  ctx->firstEvent = 0;
}

void pcTraceOpen(struct pcCtx* ctx) {
  if (ctx->trace != NULL || ctx->traceFailed) return;
  snprintf(ctx->tracePath, sizeof(ctx->tracePath), "%s/chorus-prof-%016llx-rank%d.json", ctx->dir,
           (unsigned long long)ctx->commId, ctx->rank);
  ctx->trace = fopen(ctx->tracePath, "w");
  if (ctx->trace == NULL) {
    ctx->traceFailed = 1;
    if (ctx->log) ctx->log(NCCL_LOG_WARN, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: cannot write %s: %s",
                           ctx->tracePath, strerror(errno));
    return;
  }
  setvbuf(ctx->trace, NULL, _IOFBF, 1 << 20); /* written as events end: few, large writes */
  fputs("{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n", ctx->trace);
  ctx->firstEvent = 1;
  sep(ctx);
  char name[256];
  snprintf(name, sizeof(name), "rank %d%s%s (comm %016llx)", ctx->rank, ctx->commName[0] ? " " : "", ctx->commName,
           (unsigned long long)ctx->commId);
  fprintf(ctx->trace, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":", ctx->rank);
  jsonString(ctx->trace, name);
  fputs("}}", ctx->trace);
}

/* The track's name, the first time it is used. */
static void nameTrack(struct pcCtx* ctx, int tid, const char* trackName) {
  for (int i = 0; i < ctx->nTracks; i++)
    if (ctx->tracks[i] == tid) return;
  if (ctx->nTracks == PC_MAX_TRACKS) return;
  ctx->tracks[ctx->nTracks++] = tid;
  sep(ctx);
  fprintf(ctx->trace, "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", ctx->rank, tid);
  jsonString(ctx->trace, trackName);
  fputs("}}", ctx->trace);
  sep(ctx);
  /* Threads first, then channels, then kernels: sort by the tid. */
  fprintf(ctx->trace, "{\"name\":\"thread_sort_index\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"sort_index\":%d}}",
          ctx->rank, tid, tid);
}

void pcTraceComplete(struct pcCtx* ctx, int tid, const char* trackName, const char* name, const char* cat,
                     uint64_t startNs, uint64_t endNs, const char* argsJson) {
  pcTraceOpen(ctx);
  if (ctx->trace == NULL) return;
  nameTrack(ctx, tid, trackName);
  sep(ctx);
  fprintf(ctx->trace, "{\"name\":");
  jsonString(ctx->trace, name);
  uint64_t dur = endNs - startNs;
  fprintf(ctx->trace, ",\"cat\":\"%s\",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":%llu.%03u,\"dur\":%llu.%03u", cat,
          ctx->rank, tid, US(startNs), US(dur));
  if (argsJson && argsJson[0]) fprintf(ctx->trace, ",\"args\":%s", argsJson);
  fputc('}', ctx->trace);
}

void pcTraceAsync(struct pcCtx* ctx, uint64_t id, const char* name, const char* cat, uint64_t startNs, uint64_t endNs,
                  const char* argsJson) {
  pcTraceOpen(ctx);
  if (ctx->trace == NULL) return;
  for (int end = 0; end < 2; end++) {
    sep(ctx);
    fprintf(ctx->trace, "{\"name\":");
    jsonString(ctx->trace, name);
    fprintf(ctx->trace, ",\"cat\":\"%s\",\"ph\":\"%c\",\"id\":\"0x%llx\",\"pid\":%d,\"tid\":0,\"ts\":%llu.%03u", cat,
            end ? 'e' : 'b', (unsigned long long)id, ctx->rank, US(end ? endNs : startNs));
    if (!end && argsJson && argsJson[0]) fprintf(ctx->trace, ",\"args\":%s", argsJson);
    fputc('}', ctx->trace);
  }
}

void pcTraceClose(struct pcCtx* ctx) {
  if (ctx->trace == NULL) return;
  fputs("\n]}\n", ctx->trace);
  if (fclose(ctx->trace) != 0 && ctx->log)
    ctx->log(NCCL_LOG_WARN, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: writing %s failed", ctx->tracePath);
  else if (ctx->log)
    ctx->log(NCCL_LOG_INFO, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: trace written to %s", ctx->tracePath);
  ctx->trace = NULL;
}
