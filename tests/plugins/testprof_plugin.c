/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testprof_plugin.c: a tiny profiler plugin for the ABI conformance tests, built once per ABI version
 * (TESTPROF_VERSION = 1..6). It exports exactly one ncclProfiler_vN object, plus testProfReport().
 *
 * It records every event that arrives, in the layout of its own version, and checks as it goes:
 * the descriptor holds what that version lays out (strings or numbers, commName/commHash where the
 * version carries them, sane counts, ranks, channels, pids); a parent is NULL or an event started
 * before, of the type the hierarchy says; states belong to the event and come in the documented
 * order; a handle is stopped exactly once and used by no call after that. At finalize every event
 * must have been stopped, and the Coll/P2p events must match TESTPROF_EXPECT
 * ("AllReduce=2,Send=1,..."; each collective once). Settings: TESTPROF_MASK (the activation mask,
 * default every bit), TESTPROF_COMMNAME (the commName the program gives), TESTPROF_PARTIAL_OK=1
 * (an event may stop before its last state: error paths). Built with TESTPROF_NULL_CONTEXT, init
 * leaves its context NULL (declines the communicator, as NVIDIA's Inspector does without a CUDA
 * driver), starts no event for it, and aborts when finalize gets the NULL context, as NCCL never
 * finalizes one.
 * testProfReport() prints the failures and a summary on stderr and returns their number.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plugin/profiler.h"

#ifndef TESTPROF_VERSION
#error "build with -DTESTPROF_VERSION=1..6"
#endif
#ifndef TESTPROF_NAME
#define TESTPROF_NAME "testprof"
#endif

#define V TESTPROF_VERSION
#define EXPORT __attribute__((visibility("default")))
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define VT(name) CAT(CAT(CAT(name, _v), TESTPROF_VERSION), _t)

#define MAX_EVENTS 200000
#define MAX_STATES 6

struct event {
  uint64_t type;
  int parent;   /* index of the parent event, -1 none */
  int group;    /* index of coll.parentGroup / p2p.parentGroup (v5+), -1 none */
  int stopped;
  int nStates;
  int states[MAX_STATES];
  size_t trans[MAX_STATES];
  int isSend;
  int nSteps;
  char func[32];
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct event events[MAX_EVENTS];
static int nEvents, dropped, failures, inits, finalizes, initRank = -1, initNRanks;
static uint64_t initHash;
static int mask;
static char messages[8192];
static uint64_t nextSeq[ncclNumFuncs];
static int byType[16];

static void fail(const char* fmt, ...) {
  failures++;
  size_t len = strlen(messages);
  if (len + 200 >= sizeof(messages)) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(messages + len, sizeof(messages) - len - 1, fmt, ap);
  va_end(ap);
  strcat(messages, "\n");
}
#define CHECKP(cond, ...) \
  do {                    \
    if (!(cond)) fail(__VA_ARGS__); \
  } while (0)

static int typeIndex(uint64_t type) {
  for (int i = 0; i < 16; i++)
    if (type == (1ull << i)) return i;
  return 15;
}

/* Which event types this version knows. */
static int known(uint64_t type) {
  int top = V >= 5 ? ncclProfileKernelLaunch : V >= 3 ? ncclProfileNetPlugin : ncclProfileProxyCtrl;
  if (V >= 6) top = ncclProfileCeBatch;
  return type != 0 && type <= (uint64_t)top && (type & (type - 1)) == 0;
}

static int indexOf(void* handle) {
  if (handle == NULL) return -1;
  struct event* e = handle;
  if (e < events || e >= events + nEvents) return -2;
  return (int)(e - events);
}

/* The parent types each event may have (NULL is always allowed: the ancestor may be dropped or off). */
static int parentOk(uint64_t type, uint64_t parentType) {
  switch (type) {
    case ncclProfileCollApi:
    case ncclProfileP2pApi:
    case ncclProfileKernelLaunch: return parentType == ncclProfileGroupApi;
    case ncclProfileColl: return V >= 5 ? parentType == ncclProfileCollApi : parentType == ncclProfileGroup;
    case ncclProfileP2p: return V >= 5 ? parentType == ncclProfileP2pApi : parentType == ncclProfileGroup;
    case ncclProfileProxyOp:
    case ncclProfileKernelCh: return parentType == ncclProfileColl || parentType == ncclProfileP2p;
    case ncclProfileProxyStep: return parentType == ncclProfileProxyOp;
    case ncclProfileNetPlugin: return parentType == ncclProfileProxyStep;
    default: return 0; /* Group, ProxyCtrl, GroupApi have no parent */
  }
}

/* The mask bits that make an event of this type exist (NCCL's rule: a child's bit creates its
 * ancestors, up to GroupApi). */
static int createdBy(uint64_t type) {
  const int step = ncclProfileProxyStep | ncclProfileNetPlugin, op = ncclProfileProxyOp | step;
  const int belowTask = op | ncclProfileKernelCh;
  const int coll = ncclProfileColl | belowTask, p2p = ncclProfileP2p | belowTask;
  switch (type) {
    case ncclProfileProxyStep: return step;
    case ncclProfileProxyOp: return op;
    case ncclProfileColl: return coll;
    case ncclProfileP2p: return p2p;
    case ncclProfileGroup: return ncclProfileGroup | coll | p2p;
#if V >= 5
    case ncclProfileCollApi: return ncclProfileCollApi | coll;
    case ncclProfileP2pApi: return ncclProfileP2pApi | p2p;
    case ncclProfileGroupApi:
      return ncclProfileGroupApi | ncclProfileCollApi | ncclProfileP2pApi | ncclProfileKernelLaunch | ncclProfileGroup |
             coll | p2p;
#endif
    default: return (int)type;
  }
}

/* Each event below the roots has its parent: whatever the mask, the parent exists when the child
 * does. A NULL parent is allowed only for the roots. */
static int parentRequired(uint64_t type) {
  switch (type) {
    case ncclProfileProxyOp:
    case ncclProfileProxyStep:
    case ncclProfileNetPlugin:
    case ncclProfileKernelCh:
    case ncclProfileColl:
    case ncclProfileP2p:
    case ncclProfileCollApi:
    case ncclProfileP2pApi: return 1;
    default: return 0;
  }
}

static const char* funcNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce", "SendRecv",
                                  "Send",      "Recv",   "AlltoAll",  "Scatter",       "Gather"};
static __attribute__((unused)) int funcNumber(const char* s) {
  for (int i = 0; i < (int)(sizeof(funcNames) / sizeof(funcNames[0])); i++)
    if (strcmp(s, funcNames[i]) == 0) return i;
  return -1;
}

static ncclResult_t initCommon(void** context, int* eActivationMask, uint64_t commHash, const char* commName,
                               int nranks, int rank) {
#ifdef TESTPROF_INIT_FAIL
  (void)context, (void)eActivationMask, (void)commHash, (void)commName, (void)nranks, (void)rank;
  return ncclInternalError;
#endif
  pthread_mutex_lock(&lock);
  inits++;
  initRank = rank;
  initNRanks = nranks;
  initHash = commHash;
  const char* m = getenv("TESTPROF_MASK");
  mask = m && m[0] ? (int)strtol(m, NULL, 0) : -1;
  *eActivationMask = mask;
  const char* want = getenv("TESTPROF_COMMNAME");
  if (V >= 4 && want != NULL) CHECKP(commName && strcmp(commName, want) == 0, "init: commName %s, expected %s",
                                     commName ? commName : "(null)", want);
#ifdef TESTPROF_NULL_CONTEXT
  *context = NULL; /* declined, as NVIDIA's Inspector does without a CUDA driver */
#else
  *context = &events[0]; /* any non-NULL value */
#endif
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

#if V >= 5
static ncclResult_t testInit(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                             int nranks, int rank, ncclDebugLogger_t logfn) {
  if (logfn == NULL || nNodes < 1 || nranks < 1 || rank < 0 || rank >= nranks || commId == 0) {
    pthread_mutex_lock(&lock);
    fail("init: logger %p nNodes %d nranks %d rank %d commId %llx", (void*)logfn, nNodes, nranks, rank,
         (unsigned long long)commId);
    pthread_mutex_unlock(&lock);
  }
  return initCommon(context, eActivationMask, commId, commName, nranks, rank);
}
#elif V == 4
static ncclResult_t testInit(void** context, int* eActivationMask, const char* commName, uint64_t commHash,
                             int nNodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  if (logfn == NULL || nNodes < 1 || nranks < 1 || rank < 0 || rank >= nranks || commHash == 0) {
    pthread_mutex_lock(&lock);
    fail("init: logger %p nNodes %d nranks %d rank %d", (void*)logfn, nNodes, nranks, rank);
    pthread_mutex_unlock(&lock);
  }
  return initCommon(context, eActivationMask, commHash, commName, nranks, rank);
}
#else
static ncclResult_t testInit(void** context, int* eActivationMask) {
  return initCommon(context, eActivationMask, 0, NULL, 0, -1);
}
#endif

/* The Coll descriptor of this version, checked; returns its func number (-1 if bad). */
static void checkColl(const VT(ncclProfilerEventDescr) * d, struct event* e) {
  int func;
#if V == 1
  func = d->coll.func;
  CHECKP(d->coll.datatype == ncclFloat32, "coll: datatype %d", d->coll.datatype);
  CHECKP(d->coll.op == ncclSum, "coll: op %u", d->coll.op);
  CHECKP(d->coll.algo == NCCL_ALGO_RING || d->coll.algo == NCCL_ALGO_TREE, "coll: algo %d", d->coll.algo);
  CHECKP(d->coll.proto == NCCL_PROTO_SIMPLE, "coll: proto %d", d->coll.proto);
  CHECKP(d->coll.isCollnet == 0 && d->coll.isNvls == 0, "coll: collnet/nvls");
#else
  func = funcNumber(d->coll.func);
  CHECKP(strcmp(d->coll.datatype, "ncclFloat32") == 0, "coll: datatype %s", d->coll.datatype);
  CHECKP(strcmp(d->coll.algo, "RING") == 0 || strcmp(d->coll.algo, "TREE") == 0, "coll: algo %s", d->coll.algo);
  CHECKP(strcmp(d->coll.proto, "SIMPLE") == 0, "coll: proto %s", d->coll.proto);
#endif
  CHECKP(func >= 0 && func <= ncclFuncAllReduce, "coll: func %d", func);
  if (func < 0 || func > ncclFuncAllReduce) return;
  snprintf(e->func, sizeof(e->func), "%s", funcNames[func]);
  CHECKP(d->coll.count > 0 && d->coll.sendBuff != NULL && d->coll.recvBuff != NULL, "coll %s: count %zu bufs %p %p",
         e->func, d->coll.count, d->coll.sendBuff, d->coll.recvBuff);
  CHECKP(d->coll.seqNumber == nextSeq[func], "coll %s: seqNumber %llu, expected %llu", e->func,
         (unsigned long long)d->coll.seqNumber, (unsigned long long)nextSeq[func]);
  nextSeq[func] = d->coll.seqNumber + 1;
#if V >= 4
  CHECKP(d->coll.nChannels >= 1 && d->coll.nChannels <= 32, "coll: nChannels %d", d->coll.nChannels);
#else
  CHECKP(d->coll.nMaxChannels >= 1 && d->coll.nMaxChannels <= 32, "coll: nMaxChannels %d", d->coll.nMaxChannels);
  CHECKP(d->coll.commHash != 0, "coll: commHash 0");
  if (initHash == 0) initHash = d->coll.commHash;
  CHECKP(d->coll.commHash == initHash, "coll: commHash changed");
  const char* want = getenv("TESTPROF_COMMNAME");
  if (want) CHECKP(d->coll.name && strcmp(d->coll.name, want) == 0, "coll: name %s", d->coll.name ? d->coll.name : "(null)");
#endif
#if V <= 2
  size_t bytes = d->coll.count * 4;
  if (func == ncclFuncAllGather || func == ncclFuncReduceScatter) bytes *= (size_t)(initNRanks > 0 ? initNRanks : 1);
  if (initNRanks > 0) CHECKP(d->coll.trafficBytes == bytes, "coll %s: trafficBytes %zu, expected %zu", e->func,
                             d->coll.trafficBytes, bytes);
  CHECKP(d->coll.trafficBytes > 0, "coll: trafficBytes 0");
#endif
}

static void checkP2p(const VT(ncclProfilerEventDescr) * d, struct event* e) {
#if V == 1
  int func = d->p2p.func;
  CHECKP(d->p2p.datatype == ncclFloat32, "p2p: datatype %d", d->p2p.datatype);
#else
  int func = funcNumber(d->p2p.func);
  CHECKP(strcmp(d->p2p.datatype, "ncclFloat32") == 0, "p2p: datatype %s", d->p2p.datatype);
#endif
  CHECKP(func == ncclFuncSend || func == ncclFuncRecv, "p2p: func %d", func);
  if (func == ncclFuncSend || func == ncclFuncRecv) snprintf(e->func, sizeof(e->func), "%s", funcNames[func]);
  CHECKP(d->p2p.count > 0 && d->p2p.buff != NULL, "p2p: count %zu buff %p", d->p2p.count, d->p2p.buff);
  CHECKP(d->p2p.peer >= 0 && (initNRanks == 0 || d->p2p.peer < initNRanks), "p2p: peer %d", d->p2p.peer);
#if V <= 3
  CHECKP(d->p2p.commHash != 0, "p2p: commHash 0");
#endif
}

static ncclResult_t testStart(void* context, void** eHandle, VT(ncclProfilerEventDescr) * d) {
  *eHandle = NULL;
#ifdef TESTPROF_NULL_CONTEXT
  if (context == NULL) return ncclSuccess; /* declined: no events */
#else
  (void)context;
#endif
  pthread_mutex_lock(&lock);
  uint64_t type = d->type;
  if (!known(type)) {
    fail("start: type 0x%llx unknown to v%d", (unsigned long long)type, V);
    goto out;
  }
  if (mask != -1) CHECKP(mask & createdBy(type), "start: type 0x%llx not asked for (mask 0x%x)",
                         (unsigned long long)type, mask);
  if (initRank >= 0) CHECKP(d->rank == initRank, "start: rank %d, init said %d", d->rank, initRank);
  if (nEvents == MAX_EVENTS) {
    dropped++;
    goto out;
  }
  struct event* e = &events[nEvents];
  memset(e, 0, sizeof(*e));
  e->type = type;
  e->group = -1;
  e->parent = indexOf(d->parentObj);
  if (e->parent == -2) {
    fail("start: type 0x%llx: parentObj %p is not a handle of this plugin", (unsigned long long)type, d->parentObj);
    e->parent = -1;
  } else if (e->parent >= 0) {
    CHECKP(parentOk(type, events[e->parent].type), "start: type 0x%llx has a parent of type 0x%llx",
           (unsigned long long)type, (unsigned long long)events[e->parent].type);
  } else {
    CHECKP(!parentRequired(type), "start: type 0x%llx without a parent", (unsigned long long)type);
  }
  switch (type) {
    case ncclProfileColl:
      checkColl(d, e);
#if V >= 5
      e->group = indexOf(d->coll.parentGroup);
      CHECKP(e->group >= 0 && events[e->group].type == ncclProfileGroup, "coll: parentGroup is not a Group event");
#endif
      break;
    case ncclProfileP2p:
      checkP2p(d, e);
#if V >= 5
      e->group = indexOf(d->p2p.parentGroup);
      CHECKP(e->group >= 0 && events[e->group].type == ncclProfileGroup, "p2p: parentGroup is not a Group event");
#endif
      break;
    case ncclProfileProxyOp:
      CHECKP(d->proxyOp.pid == getpid(), "proxyOp: pid %d", (int)d->proxyOp.pid);
      CHECKP(d->proxyOp.peer >= 0 && (initNRanks == 0 || d->proxyOp.peer < initNRanks), "proxyOp: peer %d",
             d->proxyOp.peer);
      CHECKP(d->proxyOp.isSend == 0 || d->proxyOp.isSend == 1, "proxyOp: isSend %d", d->proxyOp.isSend);
      CHECKP(d->proxyOp.nSteps > 0 && d->proxyOp.chunkSize > 0 && d->proxyOp.channelId < 32,
             "proxyOp: nSteps %d chunkSize %d channel %d", d->proxyOp.nSteps, d->proxyOp.chunkSize,
             d->proxyOp.channelId);
      e->isSend = d->proxyOp.isSend;
      e->nSteps = d->proxyOp.nSteps;
      break;
    case ncclProfileProxyStep:
      if (e->parent >= 0) {
        e->isSend = events[e->parent].isSend;
        CHECKP(d->proxyStep.step >= 0 && d->proxyStep.step < events[e->parent].nSteps, "proxyStep: step %d of %d",
               d->proxyStep.step, events[e->parent].nSteps);
        CHECKP(!events[e->parent].stopped, "proxyStep: its ProxyOp was stopped");
      }
      break;
#if V >= 5
    case ncclProfileGroupApi: CHECKP(d->groupApi.groupDepth >= 1, "groupApi: depth %d", d->groupApi.groupDepth); break;
    case ncclProfileCollApi:
      CHECKP(funcNumber(d->collApi.func) >= 0 && d->collApi.count > 0 &&
                 strcmp(d->collApi.datatype, "ncclFloat32") == 0,
             "collApi: %s %zu %s", d->collApi.func, d->collApi.count, d->collApi.datatype);
      break;
    case ncclProfileP2pApi:
      CHECKP((strcmp(d->p2pApi.func, "Send") == 0 || strcmp(d->p2pApi.func, "Recv") == 0) && d->p2pApi.count > 0,
             "p2pApi: %s %zu", d->p2pApi.func, d->p2pApi.count);
      break;
#endif
    default: break;
  }
  byType[typeIndex(type)]++;
  nEvents++;
  *eHandle = e;
out:
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

static ncclResult_t testRecord(void* eHandle, VT(ncclProfilerEventState) state, VT(ncclProfilerEventStateArgs) * args) {
  pthread_mutex_lock(&lock);
  int i = indexOf(eHandle);
  if (i < 0) {
    fail("record: bad handle %p", eHandle);
  } else if (events[i].stopped) {
    fail("record: state %d on a stopped event", (int)state);
  } else if (events[i].nStates < MAX_STATES) {
    struct event* e = &events[i];
    e->states[e->nStates] = (int)state;
#if V >= 4
    if (e->type == ncclProfileProxyStep && args) e->trans[e->nStates] = args->proxyStep.transSize;
#else
    if (e->type == ncclProfileProxyStep && args) e->trans[e->nStates] = args->proxyOp.transSize;
    CHECKP((int)state <= ncclProfilerProxyCtrlAppendEnd, "record: state %d unknown to v%d", (int)state, V);
#endif
#if V < 4
    CHECKP((int)state < ncclProfilerProxyOpInProgress_v4, "record: v4 state %d", (int)state);
#elif V < 5
    CHECKP((int)state <= ncclProfilerKernelChStop, "record: v5 state %d", (int)state);
#endif
    e->nStates++;
  } else {
    fail("record: too many states on event type 0x%llx", (unsigned long long)events[i].type);
  }
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

/* TESTPROF_PARTIAL_OK=1 (error-path tests): an event may stop after a prefix of its states. */
static int statesAre(const struct event* e, const int* want, int n) {
  const char* partial = getenv("TESTPROF_PARTIAL_OK");
  if (partial && partial[0] == '1' && e->nStates < n) n = e->nStates;
  if (e->nStates != n) return 0;
  for (int i = 0; i < n; i++)
    if (e->states[i] != want[i]) return 0;
  return 1;
}

static ncclResult_t testStop(void* eHandle) {
  pthread_mutex_lock(&lock);
  int i = indexOf(eHandle);
  if (i < 0) {
    fail("stop: bad handle %p", eHandle);
    goto out;
  }
  struct event* e = &events[i];
  if (e->stopped) {
    fail("stop: event type 0x%llx stopped twice", (unsigned long long)e->type);
    goto out;
  }
  e->stopped = 1;
  if (e->type == ncclProfileProxyStep) {
    static const int send4[] = {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendPeerWait_v4,
                                ncclProfilerProxyStepSendWait};
    static const int send3[] = {ncclProfilerProxyStepSendGPUWait, ncclProfilerProxyStepSendWait};
    static const int recv[] = {ncclProfilerProxyStepRecvWait, ncclProfilerProxyStepRecvFlushWait,
                               ncclProfilerProxyStepRecvGPUWait};
    int ok = e->isSend ? (V >= 4 ? statesAre(e, send4, 3) : statesAre(e, send3, 2)) : statesAre(e, recv, 3);
    CHECKP(ok, "proxyStep (%s): %d states, first %d", e->isSend ? "send" : "recv", e->nStates, e->states[0]);
    if (ok && e->nStates == (e->isSend ? (V >= 4 ? 3 : 2) : 3))
      CHECKP(e->trans[e->nStates - 1] > 0, "proxyStep: transSize 0 at the last state");
  } else if (e->type == ncclProfileProxyOp) {
    static const int op4[] = {ncclProfilerProxyOpInProgress_v4};
    CHECKP(V >= 4 ? statesAre(e, op4, 1) : e->nStates == 0, "proxyOp: %d states", e->nStates);
  } else if (e->type == ncclProfileGroupApi) {
    static const int g[] = {ncclProfilerGroupStartApiStop, ncclProfilerGroupEndApiStart};
    CHECKP(statesAre(e, g, 2), "groupApi: %d states", e->nStates);
  } else if (e->type == ncclProfileKernelCh) {
    static const int k[] = {ncclProfilerKernelChStop};
    CHECKP(V >= 4 ? statesAre(e, k, 1) : e->nStates == 0, "kernelCh: %d states", e->nStates);
  } else if (e->type != ncclProfileNetPlugin) {
    CHECKP(e->nStates == 0, "event type 0x%llx got %d states", (unsigned long long)e->type, e->nStates);
  }
out:
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

/* "AllReduce=2,Send=1": each named function must have exactly that many Coll/P2p events. */
static void checkExpected(void) {
  const char* want = getenv("TESTPROF_EXPECT");
  if (want == NULL || want[0] == '\0') return;
  char* copy = strdup(want);
  for (char* tok = strtok(copy, ","); tok; tok = strtok(NULL, ",")) {
    char* eq = strchr(tok, '=');
    if (eq == NULL) continue;
    *eq = '\0';
    int n = atoi(eq + 1), got = 0;
    for (int i = 0; i < nEvents; i++)
      if ((events[i].type == ncclProfileColl || events[i].type == ncclProfileP2p) && strcmp(events[i].func, tok) == 0)
        got++;
    CHECKP(got == n, "finalize: %d %s events, expected %d", got, tok, n);
  }
  free(copy);
}

static ncclResult_t testFinalize(void* context) {
#ifdef TESTPROF_NULL_CONTEXT
  if (context == NULL) { /* what the Inspector does with it: dereference it */
    fprintf(stderr, "testprof: finalize(NULL) on a context init left NULL\n");
    abort();
  }
#else
  (void)context;
#endif
  pthread_mutex_lock(&lock);
  finalizes++;
  int open = 0;
  for (int i = 0; i < nEvents; i++) open += !events[i].stopped;
  CHECKP(open == 0, "finalize: %d of %d events never stopped", open, nEvents);
  checkExpected();
  pthread_mutex_unlock(&lock);
  return ncclSuccess;
}

EXPORT int testProfReport(void) {
  pthread_mutex_lock(&lock);
  static const char* names[] = {"Group", "Coll", "P2p", "ProxyOp", "ProxyStep", "ProxyCtrl", "KernelCh", "NetPlugin",
                                "GroupApi", "CollApi", "P2pApi", "KernelLaunch", "CeColl", "CeSync", "CeBatch", "?"};
  if (failures > 0 || getenv("TESTPROF_VERBOSE")) {
    fprintf(stderr, "testprof v%d rank %d: inits %d finalizes %d events %d dropped %d:", V, initRank, inits,
            finalizes, nEvents, dropped);
    for (int i = 0; i < 16; i++)
      if (byType[i]) fprintf(stderr, " %s %d", names[i], byType[i]);
    fprintf(stderr, "\n%s", messages);
  }
  int f = failures;
  pthread_mutex_unlock(&lock);
  return f;
}

/* Counts of events by type bit index, for the test program's own expectations. */
EXPORT int testProfCount(int bitIndex) { return bitIndex >= 0 && bitIndex < 16 ? byType[bitIndex] : 0; }
EXPORT int testProfFinalizes(void) { return finalizes; }

EXPORT const VT(ncclProfiler) CAT(ncclProfiler_v, TESTPROF_VERSION) = {
    TESTPROF_NAME, testInit, testStart, testStop, testRecord, testFinalize,
};
