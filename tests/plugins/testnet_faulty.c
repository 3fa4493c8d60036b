/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_faulty.c: deliberately broken net plugins, to prove that chorus-netcheck names the rule a
 * plugin breaks. Each build wraps the real TCP plugin (libnccl-net-socket.so, path TESTNET_INNER)
 * and breaks exactly one rule:
 *   FAULT_REORDER    two consecutive sends of the same size leave in swapped order (data.order)
 *   FAULT_DROPBYTE   every 5th completed receive of 2+ bytes loses its middle byte: the bytes after
 *                    it move down by one, the last one is stale (data.bytes)
 *   FAULT_WRONGSIZE  test() on a receive reports the posted size, not the bytes sent (test.size)
 *   FAULT_SLEEPLISTEN  listen() sleeps 1.5 s, as one that waits for something would (nonblocking)
 *   FAULT_SPINLISTEN   listen() computes for 1.5 s of CPU time: slow, yet never asleep, so it breaks
 *                      no rule; the report names it as the slowest call
 * Everything else is passed through. Exports ncclNetPlugin_v12 only.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plugin/net.h"

#if !defined(FAULT_REORDER) && !defined(FAULT_DROPBYTE) && !defined(FAULT_WRONGSIZE) && \
    !defined(FAULT_SLEEPLISTEN) && !defined(FAULT_SPINLISTEN)
#error "build with one of -DFAULT_REORDER, -DFAULT_DROPBYTE, -DFAULT_WRONGSIZE, -DFAULT_SLEEPLISTEN, -DFAULT_SPINLISTEN"
#endif
#ifndef TESTNET_INNER
#error "build with -DTESTNET_INNER=\"/path/to/libnccl-net-socket.so\""
#endif

#define EXPORT __attribute__((visibility("default")))
#define MAXN 32
#define COMM_MAGIC 0x46415554u /* "FAUT" */

static const ncclNet_v12_t* inner;

typedef struct faultReq faultReq;

typedef struct {
  uint32_t magic;
  int isSend;
  void* inner;
  faultReq* held; /* FAULT_REORDER: a send kept back so the next one overtakes it */
  unsigned long completions;
} faultComm;

struct faultReq {
  faultComm* comm;
  void* inner; /* NULL while held back */
  int isSend;
  int n;
  void* data[MAXN];
  size_t posted[MAXN];
  /* the arguments of a held-back send */
  size_t size;
  int tag;
  void* mhandle;
  void* phandle;
};

static ncclResult_t loadInner(void) {
  if (inner != NULL) return ncclSuccess;
  void* h = dlopen(TESTNET_INNER, RTLD_NOW | RTLD_LOCAL);
  if (h == NULL) {
    fprintf(stderr, "testnet_faulty: cannot open %s: %s\n", TESTNET_INNER, dlerror());
    return ncclSystemError;
  }
  inner = dlsym(h, "ncclNetPlugin_v12");
  return inner ? ncclSuccess : ncclSystemError;
}

static ncclResult_t fInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                          ncclProfilerCallback_t prof) {
  if (loadInner() != ncclSuccess) return ncclSystemError;
  return inner->init(ctx, commId, config, log, prof);
}
static ncclResult_t fDevices(int* n) { return inner->devices(n); }
static ncclResult_t fGetProperties(int dev, ncclNetProperties_v12_t* p) { return inner->getProperties(dev, p); }
static ncclResult_t fListen(void* ctx, int dev, void* handle, void** lc) {
#ifdef FAULT_SLEEPLISTEN
  struct timespec nap = {1, 500000000};
  nanosleep(&nap, NULL);
#endif
#ifdef FAULT_SPINLISTEN
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  do clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < 1.5);
#endif
  return inner->listen(ctx, dev, handle, lc);
}
static ncclResult_t fCloseListen(void* lc) { return inner->closeListen(lc); }
static ncclResult_t fFinalize(void* ctx) { return inner->finalize(ctx); }

static ncclResult_t wrap(void* raw, int isSend, void** out) {
  *out = NULL;
  if (raw == NULL) return ncclSuccess;
  faultComm* c = calloc(1, sizeof(*c));
  if (c == NULL) return ncclSystemError;
  c->magic = COMM_MAGIC;
  c->isSend = isSend;
  c->inner = raw;
  *out = c;
  return ncclSuccess;
}

static ncclResult_t fConnect(void* ctx, int dev, void* handle, void** sc, ncclNetDeviceHandle_v12_t** dc) {
  void* raw = NULL;
  ncclResult_t res = inner->connect(ctx, dev, handle, &raw, dc);
  if (res != ncclSuccess) return res;
  return wrap(raw, 1, sc);
}

static ncclResult_t fAccept(void* lc, void** rc, ncclNetDeviceHandle_v12_t** dc) {
  void* raw = NULL;
  ncclResult_t res = inner->accept(lc, &raw, dc);
  if (res != ncclSuccess) return res;
  return wrap(raw, 0, rc);
}

#define INNER(c) (((faultComm*)(c))->inner)
static ncclResult_t fRegMr(void* c, void* d, size_t s, int t, void** mh) { return inner->regMr(INNER(c), d, s, t, mh); }
static ncclResult_t fRegMrDmaBuf(void* c, void* d, size_t s, int t, uint64_t o, int fd, void** mh) {
  return inner->regMrDmaBuf(INNER(c), d, s, t, o, fd, mh);
}
static ncclResult_t fDeregMr(void* c, void* mh) { return inner->deregMr(INNER(c), mh); }
static ncclResult_t fIflush(void* c, int n, void** d, int* s, void** mh, void** req) {
  return inner->iflush(INNER(c), n, d, s, mh, req);
}

static ncclResult_t fClose(void* comm) {
  faultComm* c = comm;
  ncclResult_t res = c->isSend ? inner->closeSend(c->inner) : inner->closeRecv(c->inner);
  free(c->held);
  c->magic = 0;
  free(c);
  return res;
}

/* Hand a held-back send to the real plugin; success with req->inner still NULL means "not yet". */
static ncclResult_t release(faultReq* r) {
  void* in = NULL;
  ncclResult_t res = inner->isend(r->comm->inner, r->data[0], r->size, r->tag, r->mhandle, r->phandle, &in);
  if (res != ncclSuccess || in == NULL) return res;
  r->inner = in;
  if (r->comm->held == r) r->comm->held = NULL;
  return ncclSuccess;
}

static ncclResult_t fIsend(void* comm, void* data, size_t size, int tag, void* mh, void* ph, void** request) {
  faultComm* c = comm;
  *request = NULL;
  faultReq* r = calloc(1, sizeof(*r));
  if (r == NULL) return ncclSystemError;
  *r = (faultReq){.comm = c, .isSend = 1, .n = 1, .size = size, .tag = tag, .mhandle = mh, .phandle = ph};
  r->data[0] = data;
#ifdef FAULT_REORDER
  if (c->held != NULL && c->held->size != size) { /* only equal sizes swap: the receives still fit */
    ncclResult_t res = release(c->held);
    if (res != ncclSuccess || c->held != NULL) {
      free(r);
      return res; /* the held one could not go yet: ask the core to retry this one */
    }
  }
  if (c->held == NULL) { /* keep this one back; the next send of its size overtakes it */
    c->held = r;
    *request = r;
    return ncclSuccess;
  }
  ncclResult_t res = inner->isend(c->inner, data, size, tag, mh, ph, &r->inner);
  if (res != ncclSuccess || r->inner == NULL) {
    free(r);
    return res;
  }
  res = release(c->held); /* after the newer one: swapped on the wire */
  *request = r;
  return res;
#else
  ncclResult_t res = inner->isend(c->inner, data, size, tag, mh, ph, &r->inner);
  if (res != ncclSuccess || r->inner == NULL) {
    free(r);
    return res;
  }
  *request = r;
  return ncclSuccess;
#endif
}

static ncclResult_t fIrecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mh, void** ph, void** request) {
  faultComm* c = comm;
  if (n < 1 || n > MAXN) return ncclInternalError;
  faultReq* r = calloc(1, sizeof(*r));
  if (r == NULL) return ncclSystemError;
  r->comm = c;
  r->n = n;
  for (int i = 0; i < n; i++) {
    r->data[i] = data[i];
    r->posted[i] = sizes[i];
  }
  void* in = *request; /* keeps the optional-completion hint */
  ncclResult_t res = inner->irecv(c->inner, n, data, sizes, tags, mh, ph, &in);
  *request = NULL;
  if (res != ncclSuccess || in == NULL) {
    free(r);
    return res;
  }
  r->inner = in;
  *request = r;
  return ncclSuccess;
}

static ncclResult_t fTest(void* request, int* done, int* sizes) {
  faultReq* r = request;
  *done = 0;
  if (r->inner == NULL) { /* a held-back send nobody overtook: let it go now */
    ncclResult_t res = release(r);
    if (res != ncclSuccess || r->inner == NULL) return res;
  }
  int got[MAXN];
  ncclResult_t res = inner->test(r->inner, done, got);
  if (res != ncclSuccess || !*done) return res;
#ifdef FAULT_DROPBYTE
  if (!r->isSend && got[0] >= 2 && (r->comm->completions++ % 5) == 4) {
    char* p = r->data[0];
    size_t k = (size_t)got[0] / 2;
    memmove(p + k, p + k + 1, (size_t)got[0] - k - 1);
  }
#endif
#ifdef FAULT_WRONGSIZE
  if (!r->isSend)
    for (int i = 0; i < r->n; i++) got[i] = (int)r->posted[i];
#endif
  if (sizes != NULL)
    for (int i = 0; i < r->n; i++) sizes[i] = got[i];
  free(r);
  return ncclSuccess;
}

static ncclResult_t fGetDeviceMr(void* c, void* mh, void** d) { return inner->getDeviceMr(INNER(c), mh, d); }

EXPORT const ncclNet_v12_t ncclNetPlugin_v12 = {
    .name = "Faulty",
    .init = fInit,
    .devices = fDevices,
    .getProperties = fGetProperties,
    .listen = fListen,
    .connect = fConnect,
    .accept = fAccept,
    .regMr = fRegMr,
    .regMrDmaBuf = fRegMrDmaBuf,
    .deregMr = fDeregMr,
    .isend = fIsend,
    .irecv = fIrecv,
    .iflush = fIflush,
    .test = fTest,
    .closeSend = fClose,
    .closeRecv = fClose,
    .closeListen = fCloseListen,
    .getDeviceMr = fGetDeviceMr,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = fFinalize,
    .setNetAttr = NULL,
};
