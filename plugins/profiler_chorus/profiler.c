/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * profiler.c: the reference profiler, once, for ABI v6 (versions.c adapts v1..v5 to it).
 *
 * Per communicator (init) it keeps a context: settings, the Chrome trace file (trace.c) and the
 * summary (summary.c). Events:
 *   GroupApi, CollApi, P2pApi, Group   complete ("X") events on the track of the calling thread
 *   Coll, P2p                          async events from their start to their completion: the latest
 *                                      stop of the event or of a child (ProxyOp, KernelCh), since
 *                                      their own stop means only "enqueued"; each also goes into the
 *                                      summary
 *   ProxyOp                            "X" on a track per channel, peer and direction
 *   ProxyStep                          async events (transfers of one link overlap), with transSize
 *   KernelCh                           "X" on a track per channel ("kernel channel c")
 *   NetPlugin                          async events below their step
 * Coll/P2p records live in a pool of PC_POOL per context: their children start after they stopped,
 * so a record is written out (trace and summary) when the pool wraps around to it, or at finalize.
 *
 * Settings (environment; Chorus exports the INI section [profiler.chorus] there before init):
 *   CHORUS_PROFILER_DIR   folder for the files, made when missing (default: the current folder)
 *   CHORUS_PROFILER_MASK  the event mask (default PC_DEFAULT_MASK; e.g. 0x7ff for every event)
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "profiler_chorus.h"

enum { PC_KIND_OP = 1, PC_KIND_SPAN = 2 };

/* Every other event: alive from start to stop. */
struct pcSpan {
  int kind; /* PC_KIND_SPAN */
  struct pcCtx* ctx;
  uint64_t type;
  uint64_t startNs;
  struct pcOp* op;  /* the Coll/P2p above it (ProxyOp, ProxyStep, KernelCh, NetPlugin), or NULL */
  uint64_t opId;    /* op->id when linked: a recycled record is left alone */
  int tid;
  int channel, peer, isSend, step, nSteps, chunkSize, groupDepth;
  size_t transSize, count;
  const char* func;
  uint64_t id;
};

const char* const pcFuncNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce",
                                   "SendRecv",  "Send",   "Recv",      "AlltoAll",      "Scatter",
                                   "Gather",    "AllGatherV", NULL};

int pcFuncByName(const char* name) {
  for (int i = 0; name && pcFuncNames[i]; i++)
    if (strcmp(name, pcFuncNames[i]) == 0) return i;
  return -1;
}

size_t pcTypeSizeByName(const char* name) {
  static const struct { const char* n; size_t s; } types[] = {
      {"ncclInt8", 1},    {"ncclUint8", 1},    {"ncclInt32", 4},      {"ncclUint32", 4},
      {"ncclInt64", 8},   {"ncclUint64", 8},   {"ncclFloat16", 2},    {"ncclFloat32", 4},
      {"ncclFloat64", 8}, {"ncclBfloat16", 2}, {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1}};
  for (size_t i = 0; name && i < sizeof(types) / sizeof(types[0]); i++)
    if (strcmp(name, types[i].n) == 0) return types[i].s;
  return 1;
}

uint64_t pcNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts); /* one clock for every rank of the machine: traces merge */
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t nextId(void) {
  static uint64_t counter;
  return __atomic_add_fetch(&counter, 1, __ATOMIC_RELAXED) | ((uint64_t)getpid() << 32);
}

/* The folder for the files and its parents, as `mkdir -p` makes them. 0, or -1 with errno. */
static int makeFolder(const char* path) {
  char buf[sizeof(((struct pcCtx*)0)->dir)];
  snprintf(buf, sizeof(buf), "%s", path);
  for (char* p = buf + 1;; p++) {
    const char c = *p;
    if (c != '/' && c != '\0') continue;
    *p = '\0';
    if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
    *p = c;
    if (c == '\0') return 0;
  }
}

ncclResult_t pcInit(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                    int nranks, int rank, ncclDebugLogger_t logfn) {
  struct pcCtx* ctx = calloc(1, sizeof(*ctx));
  if (ctx == NULL) return ncclSystemError;
  pthread_mutex_init(&ctx->lock, NULL);
  ctx->commId = commId;
  snprintf(ctx->commName, sizeof(ctx->commName), "%s", commName ? commName : "");
  ctx->nNodes = nNodes;
  ctx->nRanks = nranks;
  ctx->rank = rank;
  ctx->log = logfn;
  ctx->mask = eActivationMask;
  const char* dir = getenv("CHORUS_PROFILER_DIR");
  snprintf(ctx->dir, sizeof(ctx->dir), "%s", dir && dir[0] ? dir : ".");
  if (makeFolder(ctx->dir) != 0 && logfn)
    logfn(NCCL_LOG_WARN, NCCL_PROFILE, __FILE__, __LINE__, "Chorus profiler: cannot create CHORUS_PROFILER_DIR %s: %s",
          ctx->dir, strerror(errno));
  const char* m = getenv("CHORUS_PROFILER_MASK");
  char* end = NULL;
  long mask = m && m[0] ? strtol(m, &end, 0) : PC_DEFAULT_MASK;
  if (m && m[0] && (end == NULL || *end != '\0')) {
    if (logfn) logfn(NCCL_LOG_WARN, NCCL_PROFILE, __FILE__, __LINE__,
                     "Chorus profiler: CHORUS_PROFILER_MASK=%s is not a number; using 0x%x", m, PC_DEFAULT_MASK);
    mask = PC_DEFAULT_MASK;
  }
  *eActivationMask = (int)mask;
  ctx->firstEvent = 1;
  *context = ctx;
  if (logfn) logfn(NCCL_LOG_INFO, NCCL_INIT | NCCL_PROFILE, __FILE__, __LINE__,
                   "Chorus profiler: comm 0x%llx rank %d: events 0x%lx, files in %s", (unsigned long long)commId, rank,
                   mask, ctx->dir);
  return ncclSuccess;
}

/* Write an op out: its async event and its summary row. */
static void emitOp(struct pcCtx* ctx, struct pcOp* op) {
  if (op->emitted || op->kind != PC_KIND_OP) return;
  op->emitted = 1;
  char args[256];
  snprintf(args, sizeof(args), "{\"seq\":%llu,\"count\":%zu,\"bytes\":%zu%s%d}", (unsigned long long)op->seq,
           op->count, op->count * op->typeSize, op->isP2p ? ",\"peer\":" : ",\"root\":", op->peer);
  const char* name = op->func >= 0 ? pcFuncNames[op->func] : "Unknown";
  pcTraceAsync(ctx, op->id, name, op->isP2p ? "p2p" : "coll", op->startNs, op->endNs, args);
  pcSummaryAdd(ctx, op);
}

static struct pcOp* newOp(struct pcCtx* ctx) {
  struct pcOp* op = &ctx->pool[ctx->nOps % PC_POOL];
  if (ctx->nOps >= PC_POOL) emitOp(ctx, op); /* long done: the pool wrapped around to it */
  ctx->nOps++;
  memset(op, 0, sizeof(*op));
  op->kind = PC_KIND_OP;
  op->ctx = ctx;
  op->id = nextId();
  op->startNs = op->endNs = pcNowNs();
  return op;
}

/* The Coll/P2p an event hangs below, through its parent. */
static struct pcOp* opOf(void* parent, uint64_t* id) {
  if (parent == NULL) return NULL;
  int kind = *(int*)parent;
  struct pcOp* op = kind == PC_KIND_OP ? parent : kind == PC_KIND_SPAN ? ((struct pcSpan*)parent)->op : NULL;
  if (op == NULL) return NULL;
  *id = kind == PC_KIND_OP ? op->id : ((struct pcSpan*)parent)->opId;
  return op;
}

static int threadTid(void) { return (int)syscall(SYS_gettid); }

ncclResult_t pcStartEvent(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* d) {
  struct pcCtx* ctx = context;
  *eHandle = NULL;
  if (ctx == NULL || d == NULL) return ncclSuccess;
  if (ctx->rank < 0 || ctx->nRanks == 0) ctx->rank = d->rank; /* v1..v3: init did not say */
  if (d->type == ncclProfileColl || d->type == ncclProfileP2p) {
    pthread_mutex_lock(&ctx->lock);
    struct pcOp* op = newOp(ctx);
    if (d->type == ncclProfileColl) {
      op->func = pcFuncByName(d->coll.func);
      op->seq = d->coll.seqNumber;
      op->count = d->coll.count;
      op->typeSize = pcTypeSizeByName(d->coll.datatype);
      op->peer = d->coll.root;
    } else {
      op->isP2p = 1;
      op->func = pcFuncByName(d->p2p.func);
      op->count = d->p2p.count;
      op->typeSize = pcTypeSizeByName(d->p2p.datatype);
      op->peer = d->p2p.peer;
    }
    pthread_mutex_unlock(&ctx->lock);
    *eHandle = op;
    return ncclSuccess;
  }
  struct pcSpan* s = calloc(1, sizeof(*s));
  if (s == NULL) return ncclSuccess;
  s->kind = PC_KIND_SPAN;
  s->ctx = ctx;
  s->type = d->type;
  /* API and group events go on the calling thread's track; the others on tracks of their own. */
  if (d->type & (ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileGroup)) s->tid = threadTid();
  switch (d->type) {
    case ncclProfileGroupApi: s->groupDepth = d->groupApi.groupDepth; break;
    case ncclProfileCollApi: s->func = d->collApi.func, s->count = d->collApi.count; break;
    case ncclProfileP2pApi: s->func = d->p2pApi.func, s->count = d->p2pApi.count; break;
    case ncclProfileProxyOp:
      s->channel = d->proxyOp.channelId;
      s->peer = d->proxyOp.peer;
      s->isSend = d->proxyOp.isSend;
      s->nSteps = d->proxyOp.nSteps;
      s->chunkSize = d->proxyOp.chunkSize;
      s->tid = 1000000 + s->channel * 20000 + s->peer * 2 + (s->isSend ? 1 : 0);
      if (d->proxyOp.pid == getpid()) s->op = opOf(d->parentObj, &s->opId); /* else: another process's */
      break;
    case ncclProfileProxyStep:
      s->step = d->proxyStep.step;
      s->op = opOf(d->parentObj, &s->opId);
      if (d->parentObj && *(int*)d->parentObj == PC_KIND_SPAN) s->isSend = ((struct pcSpan*)d->parentObj)->isSend;
      s->id = nextId();
      break;
    case ncclProfileKernelCh:
      s->channel = d->kernelCh.channelId;
      s->tid = 2000000 + s->channel;
      s->op = opOf(d->parentObj, &s->opId);
      break;
    case ncclProfileNetPlugin:
      s->op = opOf(d->parentObj, &s->opId);
      s->id = nextId();
      break;
    default: break;
  }
  s->startNs = pcNowNs();
  *eHandle = s;
  return ncclSuccess;
}

ncclResult_t pcRecordEventState(void* eHandle, ncclProfilerEventState_v6_t state, ncclProfilerEventStateArgs_v6_t* a) {
  if (eHandle == NULL || *(int*)eHandle != PC_KIND_SPAN) return ncclSuccess;
  struct pcSpan* s = eHandle;
  if (s->type == ncclProfileProxyStep && a != NULL && a->proxyStep.transSize > s->transSize)
    s->transSize = a->proxyStep.transSize;
  (void)state;
  return ncclSuccess;
}

static void extendOp(struct pcSpan* s, uint64_t now) {
  if (s->op != NULL && s->op->id == s->opId && !s->op->emitted && now > s->op->endNs) s->op->endNs = now;
}

ncclResult_t pcStopEvent(void* eHandle) {
  if (eHandle == NULL) return ncclSuccess;
  uint64_t now = pcNowNs();
  if (*(int*)eHandle == PC_KIND_OP) {
    struct pcOp* op = eHandle;
    pthread_mutex_lock(&op->ctx->lock);
    if (now > op->endNs) op->endNs = now;
    pthread_mutex_unlock(&op->ctx->lock);
    return ncclSuccess;
  }
  if (*(int*)eHandle != PC_KIND_SPAN) return ncclSuccess;
  struct pcSpan* s = eHandle;
  struct pcCtx* ctx = s->ctx;
  char args[256], name[96], track[96];
  args[0] = '\0';
  pthread_mutex_lock(&ctx->lock);
  snprintf(track, sizeof(track), "thread %d", s->tid);
  switch (s->type) {
    case ncclProfileGroupApi:
      snprintf(args, sizeof(args), "{\"groupDepth\":%d}", s->groupDepth);
      pcTraceComplete(ctx, s->tid, track, "Group API", "api", s->startNs, now, args);
      break;
    case ncclProfileCollApi:
    case ncclProfileP2pApi:
      snprintf(name, sizeof(name), "nccl%s", s->func ? s->func : "?");
      snprintf(args, sizeof(args), "{\"count\":%zu}", s->count);
      pcTraceComplete(ctx, s->tid, track, name, "api", s->startNs, now, args);
      break;
    case ncclProfileGroup: pcTraceComplete(ctx, s->tid, track, "Group", "group", s->startNs, now, NULL); break;
    case ncclProfileProxyOp:
      extendOp(s, now);
      snprintf(track, sizeof(track), "channel %d %s rank %d", s->channel, s->isSend ? "send to" : "recv from", s->peer);
      snprintf(name, sizeof(name), "%s %s", s->op && s->op->func >= 0 ? pcFuncNames[s->op->func] : "op",
               s->isSend ? "send" : "recv");
      snprintf(args, sizeof(args), "{\"channel\":%d,\"peer\":%d,\"nSteps\":%d,\"chunkSize\":%d}", s->channel, s->peer,
               s->nSteps, s->chunkSize);
      pcTraceComplete(ctx, s->tid, track, name, "proxy", s->startNs, now, args);
      break;
    case ncclProfileProxyStep:
      extendOp(s, now);
      snprintf(name, sizeof(name), "%s step %d", s->isSend ? "send" : "recv", s->step);
      snprintf(args, sizeof(args), "{\"transSize\":%zu}", s->transSize);
      pcTraceAsync(ctx, s->id, name, "step", s->startNs, now, args);
      break;
    case ncclProfileKernelCh:
      extendOp(s, now);
      snprintf(track, sizeof(track), "kernel channel %d", s->channel);
      pcTraceComplete(ctx, s->tid, track, "kernel", "kernel", s->startNs, now, NULL);
      break;
    case ncclProfileNetPlugin: pcTraceAsync(ctx, s->id, "net", "net", s->startNs, now, NULL); break;
    default: break;
  }
  pthread_mutex_unlock(&ctx->lock);
  free(s);
  return ncclSuccess;
}

ncclResult_t pcFinalize(void* context) {
  struct pcCtx* ctx = context;
  if (ctx == NULL) return ncclSuccess;
  pthread_mutex_lock(&ctx->lock);
  uint64_t first = ctx->nOps > PC_POOL ? ctx->nOps - PC_POOL : 0;
  for (uint64_t i = first; i < ctx->nOps; i++) emitOp(ctx, &ctx->pool[i % PC_POOL]); /* in start order */
  pcTraceClose(ctx);
  pcSummaryWrite(ctx);
  pthread_mutex_unlock(&ctx->lock);
  pthread_mutex_destroy(&ctx->lock);
  free(ctx);
  return ncclSuccess;
}
