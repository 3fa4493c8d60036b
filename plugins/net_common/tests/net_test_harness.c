/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_test_harness.c: loading a net plugin's table of one ABI version, version-independent calls
 * into it, and the cases every net plugin of this tree must pass (net_test_harness.h).
 */
#include "net_test_harness.h"

#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int gVer = 12;
const ncclNet_v12_t* n12;
const ncclNet_v11_t* n11;
const ncclNet_v10_t* n10;
const ncclNet_v9_t* n9;
const ncclNet_v8_t* n8;
void* gCtx;
atomic_int gWarns;
char gLastWarn[512];
int gProfToken;
int gRegisterBuffers;

static void* gLib;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  if (level == NCCL_LOG_WARN) {
    atomic_fetch_add(&gWarns, 1);
    va_start(ap, fmt);
    vsnprintf(gLastWarn, sizeof(gLastWarn), fmt, ap);
    va_end(ap);
    /* NT_EXIT_AT_WARN=S: exit(S) from inside the plugin's call that warns, with whatever it holds
     * held, as a host's fatal-error handler (or a provider's signal handler) would: the plugin's exit
     * path must not hang on it. */
    const char* exitAt = getenv("NT_EXIT_AT_WARN");
    if (exitAt != NULL) exit(atoi(exitAt));
  }
  if (getenv("TEST_VERBOSE") == NULL) return;
  va_start(ap, fmt);
  fprintf(stderr, "[plugin %d %s:%d] ", (int)level, file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- loading */

/* init and devices() of the bound version; the first failure is returned. */
static ncclResult_t initBound(ncclProfilerCallback_t profCb, int* ndev) {
  ncclResult_t r;
  switch (gVer) {
    case 12: {
      ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
      r = n12->init(&gCtx, 0x1234, &cfg, logger, profCb);
      return r != ncclSuccess ? r : n12->devices(ndev);
    }
    case 11: {
      ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
      r = n11->init(&gCtx, 0x1234, &cfg, logger, profCb);
      return r != ncclSuccess ? r : n11->devices(ndev);
    }
    case 10: r = n10->init(logger, profCb); return r != ncclSuccess ? r : n10->devices(ndev);
    case 9: r = n9->init(logger); return r != ncclSuccess ? r : n9->devices(ndev);
    default: r = n8->init(logger); return r != ncclSuccess ? r : n8->devices(ndev);
  }
}

static ncclResult_t propsBound(int dev, ntProps* p) {
  switch (gVer) {
    case 12: return n12->getProperties(dev, &p->v12);
    case 11: return n11->getProperties(dev, &p->v11);
    case 10: return n10->getProperties(dev, &p->v10);
    case 9: return n9->getProperties(dev, &p->v9);
    default: return n8->getProperties(dev, &p->v8);
  }
}

void ntLoad(const char* path, int ver, const ntLoadSpec* spec) {
  if (ver < 8 || ver > 12) FAIL("unknown version %d", ver);
  gLib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (gLib == NULL) FAIL("dlopen %s: %s", path, dlerror());
  char sym[32];
  snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", ver);
  void* t = dlsym(gLib, sym);
  if (t == NULL) FAIL("%s not exported", sym);
  if (spec->internalSym && dlsym(gLib, spec->internalSym) != NULL)
    FAIL("internal symbol %s is exported", spec->internalSym);
  gVer = ver;
  switch (ver) {
    case 12: n12 = t; break;
    case 11: n11 = t; break;
    case 10: n10 = t; break;
    case 9: n9 = t; break;
    default: n8 = t; break;
  }
  int ndev = 0;
  ncclResult_t r = initBound(spec->profCb, &ndev);
  if (spec->onInit) spec->onInit(r, ndev);
  else if (r != ncclSuccess) FAIL("init or devices() of the v%d table returned %d", ver, (int)r);
  ntProps p;
  memset(&p, 0, sizeof(p));
  OK(propsBound(0, &p));
  spec->checkProps(ver, &p);
  if (ndev < 1) FAIL("no devices");
}

const char* ntStart(int argc, char** argv, const ntLoadSpec* spec, int* ver) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <plugin.so> <case> [version]\n", argv[0]);
    exit(2);
  }
  signal(SIGPIPE, SIG_IGN); /* a peer that is gone is an error return, not a signal */
  *ver = argc > 3 ? atoi(argv[3]) : 12;
  ntLoad(argv[1], *ver, spec);
  return argv[2];
}

void ntFinalize(void) {
  if (gVer == 12) OK(n12->finalize(gCtx));
  else if (gVer == 11) OK(n11->finalize(gCtx));
}

/* ---------------------------------------------------------------- version-independent wrappers */

ncclResult_t xListen(void* handle, void** lc) {
  switch (gVer) {
    case 12: return n12->listen(gCtx, 0, handle, lc);
    case 11: return n11->listen(gCtx, 0, handle, lc);
    case 10: return n10->listen(0, handle, lc);
    case 9: return n9->listen(0, handle, lc);
    default: return n8->listen(0, handle, lc);
  }
}
ncclResult_t xConnect(void* handle, void** sc) {
  ncclNetCommConfig_v10_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  switch (gVer) {
    case 12: return n12->connect(gCtx, 0, handle, sc, NULL);
    case 11: return n11->connect(gCtx, 0, handle, sc, NULL);
    case 10: return n10->connect(0, &cfg, handle, sc, NULL);
    case 9: return n9->connect(0, handle, sc, NULL);
    default: return n8->connect(0, handle, sc, NULL);
  }
}
ncclResult_t xAccept(void* lc, void** rc) {
  switch (gVer) {
    case 12: return n12->accept(lc, rc, NULL);
    case 11: return n11->accept(lc, rc, NULL);
    case 10: return n10->accept(lc, rc, NULL);
    case 9: return n9->accept(lc, rc, NULL);
    default: return n8->accept(lc, rc, NULL);
  }
}
/* isend and irecv of any version; ph: the profiler handle(s), which v8 and v9 do not take. */
static ncclResult_t isendAny(void* sc, void* data, size_t size, int tag, void* mh, void* ph, void** req) {
  switch (gVer) {
    case 12: return n12->isend(sc, data, size, tag, mh, ph, req);
    case 11: return n11->isend(sc, data, size, tag, mh, ph, req);
    case 10: return n10->isend(sc, data, size, tag, mh, ph, req);
    case 9: return n9->isend(sc, data, size, tag, mh, req);
    default: return n8->isend(sc, data, (int)size, tag, mh, req);
  }
}
static ncclResult_t irecvAny(void* rc, int n, void** data, size_t* sizes, int* tags, void** mh, void** ph, void** req) {
  int isizes[8];
  if (n < 1 || n > 8) FAIL("irecv of %d buffers: 1 to 8", n);
  for (int i = 0; i < n; i++) isizes[i] = (int)sizes[i];
  switch (gVer) {
    case 12: return n12->irecv(rc, n, data, sizes, tags, mh, ph, req);
    case 11: return n11->irecv(rc, n, data, sizes, tags, mh, ph, req);
    case 10: return n10->irecv(rc, n, data, sizes, tags, mh, ph, req);
    case 9: return n9->irecv(rc, n, data, sizes, tags, mh, req);
    default: return n8->irecv(rc, n, data, isizes, tags, mh, req);
  }
}
ncclResult_t xIsend(void* sc, void* data, size_t size, void* mh, void** req) {
  return isendAny(sc, data, size, 0, mh, &gProfToken, req);
}
ncclResult_t xIrecv(void* rc, void* data, size_t size, void* mh, void** req) {
  int tag = 0;
  void* ph = &gProfToken;
  *req = (void*)(uintptr_t)NCCL_NET_OPTIONAL_RECV_COMPLETION;
  return irecvAny(rc, 1, &data, &size, &tag, &mh, &ph, req);
}
ncclResult_t xIrecvN(void* rc, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
  void* noMh[8] = {NULL};
  *req = NULL;
  return irecvAny(rc, n, data, sizes, tags, mh ? mh : noMh, NULL, req);
}
ncclResult_t xIsendTag(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  *req = NULL;
  return isendAny(sc, data, size, tag, mh, NULL, req);
}
ncclResult_t xTest(void* req, int* done, int* size) {
  switch (gVer) {
    case 12: return n12->test(req, done, size);
    case 11: return n11->test(req, done, size);
    case 10: return n10->test(req, done, size);
    case 9: return n9->test(req, done, size);
    default: return n8->test(req, done, size);
  }
}
ncclResult_t xRegMr(void* comm, void* data, size_t size, void** mh) {
  switch (gVer) {
    case 12: return n12->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 11: return n11->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 10: return n10->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 9: return n9->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    default: return n8->regMr(comm, data, size, NCCL_PTR_HOST, mh);
  }
}
ncclResult_t xDeregMr(void* comm, void* mh) {
  switch (gVer) {
    case 12: return n12->deregMr(comm, mh);
    case 11: return n11->deregMr(comm, mh);
    case 10: return n10->deregMr(comm, mh);
    case 9: return n9->deregMr(comm, mh);
    default: return n8->deregMr(comm, mh);
  }
}
ncclResult_t xClose(int which, void* comm) {
  switch (gVer) {
    case 12: return which == 0 ? n12->closeSend(comm) : which == 1 ? n12->closeRecv(comm) : n12->closeListen(comm);
    case 11: return which == 0 ? n11->closeSend(comm) : which == 1 ? n11->closeRecv(comm) : n11->closeListen(comm);
    case 10: return which == 0 ? n10->closeSend(comm) : which == 1 ? n10->closeRecv(comm) : n10->closeListen(comm);
    case 9: return which == 0 ? n9->closeSend(comm) : which == 1 ? n9->closeRecv(comm) : n9->closeListen(comm);
    default: return which == 0 ? n8->closeSend(comm) : which == 1 ? n8->closeRecv(comm) : n8->closeListen(comm);
  }
}

void* ntReg(void* comm, void* data, size_t size) {
  void* mh = NULL;
  if (gRegisterBuffers) OK(xRegMr(comm, data, size, &mh));
  return mh;
}
ncclResult_t ntDereg(void* comm, void* mh) { return mh == NULL ? ncclSuccess : xDeregMr(comm, mh); }

/* ---------------------------------------------------------------- waiting, data */

ncclResult_t waitReq(void* req, int* size, double timeoutSec) {
  double end = nowSec() + timeoutSec;
  int done = 0;
  while (!done) {
    ncclResult_t r = xTest(req, &done, size);
    if (r != ncclSuccess) return r;
    if (!done && nowSec() > end) FAIL("request %p not done after %.0f s", req, timeoutSec);
  }
  return ncclSuccess;
}

ncclResult_t waitError(void* req, int* done, double sec) {
  double end = nowSec() + sec;
  ncclResult_t r = ncclSuccess;
  *done = 0;
  while (r == ncclSuccess && !*done && nowSec() < end) r = xTest(req, done, NULL);
  return r;
}

void fillRandom(unsigned char* buf, size_t n, uint64_t seed) {
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    memcpy(buf + i, &x, 8);
  }
  for (; i < n; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    buf[i] = (unsigned char)x;
  }
}

void checkData(const unsigned char* got, size_t n, uint64_t seed, const char* what) {
  unsigned char* want = malloc(n ? n : 1);
  if (want == NULL) FAIL("out of memory for %zu bytes", n);
  fillRandom(want, n, seed);
  if (memcmp(got, want, n) != 0) {
    size_t i = 0;
    while (got[i] == want[i]) i++;
    FAIL("%s: %zu bytes differ from byte %zu", what, n, i);
  }
  free(want);
}

/* ---------------------------------------------------------------- connection setup */

void* connectLoop(void* arg) {
  connArg* a = arg;
  double end = nowSec() + 20;
  while (a->sendComm == NULL) {
    OK(xConnect(a->handle, &a->sendComm));
    if (nowSec() > end) FAIL("connect did not finish");
    if (a->sendComm == NULL) usleep(100);
  }
  return NULL;
}

void* acceptLoop(void* lc) {
  void* rc = NULL;
  double end = nowSec() + 20;
  while (rc == NULL) {
    OK(xAccept(lc, &rc));
    if (nowSec() > end) FAIL("accept did not finish");
    if (rc == NULL) usleep(100);
  }
  return rc;
}

void connectPair(void** sc, void** rc) {
  connArg a;
  memset(&a, 0, sizeof(a));
  void* lc = NULL;
  OK(xListen(a.handle, &lc));
  if (lc == NULL) FAIL("listen returned no comm");
  pthread_t t;
  if (pthread_create(&t, NULL, connectLoop, &a) != 0) FAIL("pthread_create");
  *rc = acceptLoop(lc);
  pthread_join(t, NULL);
  *sc = a.sendComm;
  OK(xClose(NT_CLOSE_LISTEN, lc));
}
