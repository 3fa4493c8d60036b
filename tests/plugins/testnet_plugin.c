/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_plugin.c: a tiny net plugin for the ABI conformance tests, built once per ABI version
 * (TESTNET_VERSION = 8..12) and in a few broken variants (TESTNET_INIT_FAIL, TESTNET_NO_DEVICES).
 * It exports exactly one ncclNetPlugin_vN object, plus testNetStats() for the tests.
 *
 * Data path: an in-process loopback. connect() reaches the listen comm of the same process through
 * the handle; isend copies the bytes into the connection's FIFO at once; the matching receive's
 * test() takes the oldest messages and places each into the buffer whose tag matches.
 * Every call is recorded in a struct testNetStats.
 */
#include <stdlib.h>
#include <string.h>

#include "plugin/net.h"
#include "testnet_stats.h"

#ifndef TESTNET_VERSION
#error "build with -DTESTNET_VERSION=8..12"
#endif
#ifndef TESTNET_NAME
#define TESTNET_NAME "testnet"
#endif

#define EXPORT __attribute__((visibility("default")))
#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
#define V(name) CAT(CAT(name, _v), TESTNET_VERSION)     /* V(ncclNet) -> ncclNet_vN */
#define VT(name) CAT(CAT(CAT(name, _v), TESTNET_VERSION), _t) /* VT(ncclNet) -> ncclNet_vN_t */

#if TESTNET_VERSION == 8
typedef int testSize_t;
#else
typedef size_t testSize_t;
#endif

static struct testNetStats stats = {.version = TESTNET_VERSION, .initTrafficClass = -100, .connectTrafficClass = -100};

EXPORT struct testNetStats* testNetStats(void) { return &stats; }

#define HANDLE_MAGIC 0x54455354u /* "TEST" */

struct message {
  struct message* next;
  int tag;
  size_t size;
  char bytes[];
};

struct connection {
  struct message* head;
  struct message* tail;
  struct connection* nextPending;
};

struct listenComm {
  struct connection* pending; /* connected, not yet accepted */
  int connectTries;
};

struct sendComm {
  struct connection* conn;
};

struct recvComm {
  struct connection* conn;
};

struct handleBytes {
  uint32_t magic;
  struct listenComm* listen;
};

struct mhandle {
  void* comm;
  void* data;
  size_t size;
};

enum { REQ_SEND, REQ_RECV, REQ_FLUSH };
struct request {
  int kind;
  int n;
  size_t sendSize;
  struct recvComm* recv;
  void* data[TESTNET_MAX_RECVS];
  size_t sizes[TESTNET_MAX_RECVS];
  int tags[TESTNET_MAX_RECVS];
};

/* ---- device level ----------------------------------------------------------------------------- */

#if TESTNET_VERSION >= 11
static ncclResult_t testInit(void** ctx, uint64_t commId, VT(ncclNetCommConfig) * config, ncclDebugLogger_t logger,
                             ncclProfilerCallback_t prof) {
  stats.initCalls++;
  stats.lastCommId = commId;
  stats.initTrafficClass = config ? config->trafficClass : -200;
  stats.profCallbackGiven = prof != NULL;
#ifdef TESTNET_INIT_FAIL
  return ncclSystemError;
#endif
  *ctx = &stats; /* any non-NULL per-comm context */
  return ncclSuccess;
}
#elif TESTNET_VERSION == 10
static ncclResult_t testInit(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  stats.initCalls++;
  stats.profCallbackGiven = prof != NULL;
#ifdef TESTNET_INIT_FAIL
  return ncclSystemError;
#endif
  return ncclSuccess;
}
#else
static ncclResult_t testInit(ncclDebugLogger_t logger) {
  stats.initCalls++;
#ifdef TESTNET_INIT_FAIL
  return ncclSystemError;
#endif
  return ncclSuccess;
}
#endif

static ncclResult_t testDevices(int* ndev) {
#ifdef TESTNET_NO_DEVICES
  *ndev = 0;
#else
  *ndev = 1;
#endif
  return ncclSuccess;
}

static ncclResult_t testGetProperties(int dev, VT(ncclNetProperties) * props) {
  if (dev != 0) return ncclInvalidArgument;
  memset(props, 0, sizeof(*props));
  props->name = (char*)TESTNET_NAME "-dev0";
  props->pciPath = NULL;
  props->guid = 0x1234;
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 0;
  props->speed = 10000;
  props->port = 1;
  props->latency = 1.5f;
  props->maxComms = 1024;
  props->maxRecvs = TESTNET_MAX_RECVS;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
#if TESTNET_VERSION >= 9
  props->forceFlush = 1;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = 1ULL << 31;
  props->maxCollBytes = 1ULL << 28;
#endif
#if TESTNET_VERSION >= 11
  props->maxMultiRequestSize = 3;
#endif
#if TESTNET_VERSION >= 12
  props->railId = 5;
  props->planeId = 6;
#endif
  return ncclSuccess;
}

#if TESTNET_VERSION >= 9
static ncclResult_t testMakeVDevice(int* d, VT(ncclNetVDeviceProps) * props) {
  stats.makeVDeviceCalls++;
  stats.lastVDeviceNdevs = props->ndevs;
  for (int i = 0; i < props->ndevs && i < 8; i++) stats.lastVDeviceDevs[i] = props->devs[i];
  *d = 7;
  return ncclSuccess;
}
#endif

#if TESTNET_VERSION >= 11
static ncclResult_t testFinalize(void* ctx) {
  if (ctx != &stats) return ncclInternalError;
  stats.finalizeCalls++;
  return ncclSuccess;
}

static ncclResult_t testSetNetAttr(void* ctx, VT(ncclNetAttr) * attr) {
  if (ctx != &stats) return ncclInternalError;
  stats.setNetAttrCalls++;
  stats.lastAttrOp = attr->op;
  return ncclSuccess;
}
#endif

/* ---- connection setup -------------------------------------------------------------------------- */

static ncclResult_t doListen(int dev, void* handle, void** listenComm) {
  if (dev != 0) return ncclInvalidArgument;
  struct listenComm* l = calloc(1, sizeof(*l));
  if (l == NULL) return ncclSystemError;
  struct handleBytes h = {.magic = HANDLE_MAGIC, .listen = l};
  memset(handle, 0, NCCL_NET_HANDLE_MAXSIZE);
  memcpy(handle, &h, sizeof(h));
  stats.liveObjects++;
  *listenComm = l;
  return ncclSuccess;
}

/* The first attempt on each listen answers "not yet", to exercise the core's retry loop. */
static ncclResult_t doConnect(int dev, void* handle, void** sendComm) {
  struct handleBytes h;
  memcpy(&h, handle, sizeof(h));
  if (dev != 0 || h.magic != HANDLE_MAGIC) return ncclInvalidArgument;
  *sendComm = NULL;
  if (h.listen->connectTries++ == 0) {
    stats.connectNotYet++;
    return ncclSuccess;
  }
  struct connection* conn = calloc(1, sizeof(*conn));
  struct sendComm* s = calloc(1, sizeof(*s));
  if (conn == NULL || s == NULL) return ncclSystemError;
  s->conn = conn;
  conn->nextPending = h.listen->pending;
  h.listen->pending = conn;
  stats.liveObjects++;
  *sendComm = s;
  return ncclSuccess;
}

#if TESTNET_VERSION >= 11
static ncclResult_t testListen(void* ctx, int dev, void* handle, void** listenComm) {
  if (ctx != &stats) return ncclInternalError;
  return doListen(dev, handle, listenComm);
}
static ncclResult_t testConnect(void* ctx, int dev, void* handle, void** sendComm,
                                VT(ncclNetDeviceHandle) * *sendDevComm) {
  if (ctx != &stats) return ncclInternalError;
  return doConnect(dev, handle, sendComm);
}
#elif TESTNET_VERSION == 10
static ncclResult_t testListen(int dev, void* handle, void** listenComm) { return doListen(dev, handle, listenComm); }
static ncclResult_t testConnect(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                                ncclNetDeviceHandle_v10_t** sendDevComm) {
  stats.connectTrafficClass = config ? config->trafficClass : -200;
  return doConnect(dev, handle, sendComm);
}
#else
static ncclResult_t testListen(int dev, void* handle, void** listenComm) { return doListen(dev, handle, listenComm); }
static ncclResult_t testConnect(int dev, void* handle, void** sendComm, VT(ncclNetDeviceHandle) * *sendDevComm) {
  return doConnect(dev, handle, sendComm);
}
#endif

static ncclResult_t testAccept(void* listenComm, void** recvComm, VT(ncclNetDeviceHandle) * *recvDevComm) {
  struct listenComm* l = listenComm;
  *recvComm = NULL;
  if (l->pending == NULL) return ncclSuccess; /* not yet */
  struct recvComm* r = calloc(1, sizeof(*r));
  if (r == NULL) return ncclSystemError;
  r->conn = l->pending;
  l->pending = l->pending->nextPending;
  stats.liveObjects++;
  *recvComm = r;
  return ncclSuccess;
}

/* ---- registration ------------------------------------------------------------------------------ */

static ncclResult_t testRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  struct mhandle* m = malloc(sizeof(*m));
  if (m == NULL) return ncclSystemError;
  m->comm = comm;
  m->data = data;
  m->size = size;
  stats.regMrCalls++;
  stats.lastRegType = type;
  stats.liveObjects++;
  *mhandle = m;
  return ncclSuccess;
}

static ncclResult_t testDeregMr(void* comm, void* mhandle) {
  struct mhandle* m = mhandle;
  if (m->comm != comm) stats.mismatchedHandles++;
  free(m);
  stats.liveObjects--;
  return ncclSuccess;
}

/* ---- data path ---------------------------------------------------------------------------------- */

static int owns(void* comm, void* mhandle, void* data, size_t size) {
  struct mhandle* m = mhandle;
  if (m == NULL || m->comm != comm || (char*)data < (char*)m->data || (char*)data + size > (char*)m->data + m->size) {
    stats.mismatchedHandles++;
    return 0;
  }
  return 1;
}

static ncclResult_t doIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void** request) {
  struct sendComm* s = sendComm;
  stats.isendCalls++;
  stats.lastIsendSize = (long long)size;
  stats.lastIsendTag = tag;
  if (!owns(sendComm, mhandle, data, size)) return ncclInternalError;
  struct message* msg = malloc(sizeof(*msg) + size);
  struct request* req = calloc(1, sizeof(*req));
  if (msg == NULL || req == NULL) return ncclSystemError;
  msg->next = NULL;
  msg->tag = tag;
  msg->size = size;
  memcpy(msg->bytes, data, size);
  if (s->conn->tail) s->conn->tail->next = msg;
  else s->conn->head = msg;
  s->conn->tail = msg;
  req->kind = REQ_SEND;
  req->n = 1;
  req->sendSize = size;
  stats.liveObjects++;
  *request = req;
  return ncclSuccess;
}

#if TESTNET_VERSION >= 10
static ncclResult_t testIsend(void* sendComm, void* data, testSize_t size, int tag, void* mhandle, void* phandle,
                              void** request) {
  stats.lastIsendPhandle = phandle;
  return doIsend(sendComm, data, (size_t)size, tag, mhandle, request);
}
#else
static ncclResult_t testIsend(void* sendComm, void* data, testSize_t size, int tag, void* mhandle, void** request) {
  if ((long long)size < 0) return ncclInternalError;
  return doIsend(sendComm, data, (size_t)size, tag, mhandle, request);
}
#endif

static ncclResult_t doIrecv(void* recvComm, int n, void** data, testSize_t* sizes, int* tags, void** mhandles,
                            void** request) {
  stats.irecvCalls++;
  stats.lastIrecvRequestIn = *request;
  stats.lastIrecvN = n;
  if (n < 1 || n > TESTNET_MAX_RECVS) return ncclInternalError;
  struct request* req = calloc(1, sizeof(*req));
  if (req == NULL) return ncclSystemError;
  req->kind = REQ_RECV;
  req->n = n;
  req->recv = recvComm;
  for (int i = 0; i < n; i++) {
    stats.lastIrecvSizes[i] = (long long)sizes[i];
    stats.lastIrecvTags[i] = tags[i];
    if ((long long)sizes[i] < 0 || !owns(recvComm, mhandles[i], data[i], (size_t)sizes[i])) {
      free(req);
      return ncclInternalError;
    }
    req->data[i] = data[i];
    req->sizes[i] = (size_t)sizes[i];
    req->tags[i] = tags[i];
  }
  stats.liveObjects++;
  *request = req;
  return ncclSuccess;
}

#if TESTNET_VERSION >= 10
static ncclResult_t testIrecv(void* recvComm, int n, void** data, testSize_t* sizes, int* tags, void** mhandles,
                              void** phandles, void** request) {
  stats.lastIrecvPhandle0 = phandles ? phandles[0] : NULL;
  return doIrecv(recvComm, n, data, sizes, tags, mhandles, request);
}
#else
static ncclResult_t testIrecv(void* recvComm, int n, void** data, testSize_t* sizes, int* tags, void** mhandles,
                              void** request) {
  return doIrecv(recvComm, n, data, sizes, tags, mhandles, request);
}
#endif

static ncclResult_t testIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  struct request* req = calloc(1, sizeof(*req));
  if (req == NULL) return ncclSystemError;
  req->kind = REQ_FLUSH;
  req->n = 0;
  stats.liveObjects++;
  *request = req;
  return ncclSuccess;
}

/* A receive completes once n messages are queued; each goes to the unfilled buffer with its tag. */
static ncclResult_t testTest(void* request, int* done, int* sizes) {
  struct request* req = request;
  *done = 0;
  if (req->kind == REQ_RECV) {
    struct connection* conn = req->recv->conn;
    int queued = 0;
    for (struct message* m = conn->head; m != NULL; m = m->next) queued++;
    if (queued < req->n) return ncclSuccess;
    int filled[TESTNET_MAX_RECVS] = {0};
    for (int k = 0; k < req->n; k++) {
      struct message* m = conn->head;
      conn->head = m->next;
      if (conn->head == NULL) conn->tail = NULL;
      int slot = -1;
      for (int i = 0; i < req->n; i++)
        if (!filled[i] && req->tags[i] == m->tag) {
          slot = i;
          break;
        }
      if (slot < 0 || m->size > req->sizes[slot]) {
        free(m);
        return ncclInvalidUsage; /* no buffer for this tag, or a buffer too small */
      }
      memcpy(req->data[slot], m->bytes, m->size);
      filled[slot] = 1;
      if (sizes) sizes[slot] = (int)m->size;
      free(m);
    }
  } else if (req->kind == REQ_SEND) {
    if (sizes) sizes[0] = (int)req->sendSize;
  }
  *done = 1;
  free(req);
  stats.liveObjects--;
  return ncclSuccess;
}

/* ---- teardown ----------------------------------------------------------------------------------- */

static void freeConnection(struct connection* conn) {
  while (conn->head) {
    struct message* m = conn->head;
    conn->head = m->next;
    free(m);
  }
  free(conn);
}

/* The connection belongs to the receive side once accepted; the send side only drops its pointer. */
static ncclResult_t testCloseSend(void* sendComm) {
  free(sendComm);
  stats.liveObjects--;
  return ncclSuccess;
}

static ncclResult_t testCloseRecv(void* recvComm) {
  struct recvComm* r = recvComm;
  freeConnection(r->conn);
  free(r);
  stats.liveObjects--;
  return ncclSuccess;
}

static ncclResult_t testCloseListen(void* listenComm) {
  struct listenComm* l = listenComm;
  while (l->pending) {
    struct connection* c = l->pending;
    l->pending = c->nextPending;
    freeConnection(c);
  }
  free(l);
  stats.liveObjects--;
  return ncclSuccess;
}

/* ---- the exported table ------------------------------------------------------------------------- */

EXPORT const VT(ncclNet) V(ncclNetPlugin) = {
    .name = TESTNET_NAME,
    .init = testInit,
    .devices = testDevices,
    .getProperties = testGetProperties,
    .listen = testListen,
    .connect = testConnect,
    .accept = testAccept,
    .regMr = testRegMr,
    .regMrDmaBuf = NULL,
    .deregMr = testDeregMr,
    .isend = testIsend,
    .irecv = testIrecv,
    .iflush = testIflush,
    .test = testTest,
    .closeSend = testCloseSend,
    .closeRecv = testCloseRecv,
    .closeListen = testCloseListen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
#if TESTNET_VERSION >= 9
    .makeVDevice = testMakeVDevice,
#endif
#if TESTNET_VERSION >= 11
    .finalize = testFinalize,
    .setNetAttr = testSetNetAttr,
#endif
};
