/*
 * test_net_ofi.c: drives libnccl-net-ofi.so through its exported tables, as a core would.
 *
 *   test_net_ofi <path/to/libnccl-net-ofi.so> <case> [version]
 *
 * Cases: probe (loads and inits only), sizes, cuda (GPU buffers, where the provider has FI_HMEM), bigrecv, fork, inflight, grouped, badtag, overflow, flush, kill_sender, kill_receiver,
 * strangers, badhandle, version (with 8..12), bw (prints bandwidth, not a test). Exit 0 = pass, 77 =
 * the provider cannot be opened here (skip, with the reason), anything else = fail with one line
 * saying what. The provider and domain come from the environment (FI_PROVIDER, CHORUS_OFI_DOMAIN).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "plugin/net.h"

#define SKIP_CODE 77
#define FAIL(...)                                              \
  do {                                                         \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
    fprintf(stderr, __VA_ARGS__);                              \
    fprintf(stderr, "\n");                                     \
    exit(1);                                                   \
  } while (0)
#define OK(call)                                                        \
  do {                                                                  \
    ncclResult_t r_ = (call);                                           \
    if (r_ != ncclSuccess) FAIL("%s returned %d", #call, (int)r_);      \
  } while (0)

static void* gLib;
static int gVer = 12;
static const ncclNet_v12_t* n12;
static const ncclNet_v11_t* n11;
static const ncclNet_v10_t* n10;
static const ncclNet_v9_t* n9;
static const ncclNet_v8_t* n8;
static void* gCtx;
static atomic_int gWarns;
static char gLastWarn[512];
static int gProfToken;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  va_list ap;
  if (level == NCCL_LOG_WARN) {
    atomic_fetch_add(&gWarns, 1);
    va_start(ap, fmt);
    vsnprintf(gLastWarn, sizeof(gLastWarn), fmt, ap);
    va_end(ap);
  }
  if (getenv("TEST_VERBOSE") == NULL) return;
  va_start(ap, fmt);
  fprintf(stderr, "[plugin %d %s:%d] ", (int)level, file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- loading */

static void skipIfNoProvider(ncclResult_t r, int ndev) {
  if (r == ncclSuccess && ndev > 0) return;
  fprintf(stderr, "SKIP: the libfabric provider cannot be opened here (init returned %d, %d devices; "
          "FI_PROVIDER=\"%s\", CHORUS_OFI_DOMAIN=\"%s\")%s%s\n", (int)r, ndev, getenv("FI_PROVIDER") ?: "",
          getenv("CHORUS_OFI_DOMAIN") ?: "", gLastWarn[0] ? ": " : "", gLastWarn);
  exit(SKIP_CODE);
}

static int gMaxRecvs, gPtrSupport, gForceFlush, gRegIsGlobal;

static void loadPlugin(const char* path, int ver) {
  gLib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (gLib == NULL) FAIL("dlopen %s: %s", path, dlerror());
  char sym[32];
  snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", ver);
  void* t = dlsym(gLib, sym);
  if (t == NULL) FAIL("%s not exported", sym);
  if (dlsym(gLib, "ofiProgress") != NULL) FAIL("internal symbol ofiProgress is exported");
  gVer = ver;
  int ndev = 0;
  ncclResult_t r;
  switch (ver) {
    case 12: {
      n12 = t;
      ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
      r = n12->init(&gCtx, 0x1234, &cfg, logger, NULL);
      if (r == ncclSuccess) r = n12->devices(&ndev);
      skipIfNoProvider(r, ndev);
      ncclNetProperties_v12_t p;
      OK(n12->getProperties(0, &p));
      if (!(p.ptrSupport & NCCL_PTR_HOST) || p.vProps.ndevs != 1 || p.railId != -1 || p.name == NULL ||
          p.speed <= 0 || p.maxMultiRequestSize != 1 || p.maxComms < 1 || p.maxP2pBytes == 0 ||
          p.netDeviceType != NCCL_NET_DEVICE_HOST || p.latency < 0)
        FAIL("unexpected v12 properties");
      gMaxRecvs = p.maxRecvs, gPtrSupport = p.ptrSupport, gForceFlush = p.forceFlush, gRegIsGlobal = p.regIsGlobal;
      if (strcmp(n12->name, "OFI") != 0) FAIL("name %s", n12->name);
      break;
    }
    case 11: {
      n11 = t;
      ncclNetCommConfig_v11_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
      r = n11->init(&gCtx, 0x1234, &cfg, logger, NULL);
      if (r == ncclSuccess) r = n11->devices(&ndev);
      skipIfNoProvider(r, ndev);
      ncclNetProperties_v11_t p;
      OK(n11->getProperties(0, &p));
      if (!(p.ptrSupport & NCCL_PTR_HOST) || p.maxMultiRequestSize != 1) FAIL("bad v11 props");
      gMaxRecvs = p.maxRecvs;
      break;
    }
    case 10: {
      n10 = t;
      r = n10->init(logger, NULL);
      if (r == ncclSuccess) r = n10->devices(&ndev);
      skipIfNoProvider(r, ndev);
      ncclNetProperties_v10_t p;
      OK(n10->getProperties(0, &p));
      if (!(p.ptrSupport & NCCL_PTR_HOST) || p.vProps.ndevs != 1) FAIL("bad v10 props");
      gMaxRecvs = p.maxRecvs;
      break;
    }
    case 9: {
      n9 = t;
      r = n9->init(logger);
      if (r == ncclSuccess) r = n9->devices(&ndev);
      skipIfNoProvider(r, ndev);
      ncclNetProperties_v9_t p;
      OK(n9->getProperties(0, &p));
      if (!(p.ptrSupport & NCCL_PTR_HOST)) FAIL("bad v9 props");
      gMaxRecvs = p.maxRecvs;
      break;
    }
    case 8: {
      n8 = t;
      r = n8->init(logger);
      if (r == ncclSuccess) r = n8->devices(&ndev);
      skipIfNoProvider(r, ndev);
      ncclNetProperties_v8_t p;
      OK(n8->getProperties(0, &p));
      if (!(p.ptrSupport & NCCL_PTR_HOST)) FAIL("bad v8 props");
      gMaxRecvs = p.maxRecvs;
      break;
    }
    default: FAIL("unknown version %d", ver);
  }
  if (gMaxRecvs < 1 || gMaxRecvs > 8) FAIL("maxRecvs %d", gMaxRecvs);
}

/* ---------------------------------------------------------------- version-independent wrappers */

static ncclResult_t xListen(void* handle, void** lc) {
  switch (gVer) {
    case 12: return n12->listen(gCtx, 0, handle, lc);
    case 11: return n11->listen(gCtx, 0, handle, lc);
    case 10: return n10->listen(0, handle, lc);
    case 9: return n9->listen(0, handle, lc);
    default: return n8->listen(0, handle, lc);
  }
}
static ncclResult_t xConnect(void* handle, void** sc) {
  ncclNetCommConfig_v10_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  switch (gVer) {
    case 12: return n12->connect(gCtx, 0, handle, sc, NULL);
    case 11: return n11->connect(gCtx, 0, handle, sc, NULL);
    case 10: return n10->connect(0, &cfg, handle, sc, NULL);
    case 9: return n9->connect(0, handle, sc, NULL);
    default: return n8->connect(0, handle, sc, NULL);
  }
}
static ncclResult_t xAccept(void* lc, void** rc) {
  switch (gVer) {
    case 12: return n12->accept(lc, rc, NULL);
    case 11: return n11->accept(lc, rc, NULL);
    case 10: return n10->accept(lc, rc, NULL);
    case 9: return n9->accept(lc, rc, NULL);
    default: return n8->accept(lc, rc, NULL);
  }
}
static ncclResult_t xIsend(void* sc, void* data, size_t size, void* mh, void** req) {
  switch (gVer) {
    case 12: return n12->isend(sc, data, size, 0, mh, &gProfToken, req);
    case 11: return n11->isend(sc, data, size, 0, mh, &gProfToken, req);
    case 10: return n10->isend(sc, data, size, 0, mh, &gProfToken, req);
    case 9: return n9->isend(sc, data, size, 0, mh, req);
    default: return n8->isend(sc, data, (int)size, 0, mh, req);
  }
}
static ncclResult_t xIrecv(void* rc, void* data, size_t size, void* mh, void** req) {
  int tag = 0;
  int isize = (int)size;
  void* ph = &gProfToken;
  *req = (void*)(uintptr_t)NCCL_NET_OPTIONAL_RECV_COMPLETION; /* the hint NCCL may leave here */
  switch (gVer) {
    case 12: return n12->irecv(rc, 1, &data, &size, &tag, &mh, &ph, req);
    case 11: return n11->irecv(rc, 1, &data, &size, &tag, &mh, &ph, req);
    case 10: return n10->irecv(rc, 1, &data, &size, &tag, &mh, &ph, req);
    case 9: return n9->irecv(rc, 1, &data, &size, &tag, &mh, req);
    default: return n8->irecv(rc, 1, &data, &isize, &tag, &mh, req);
  }
}
static ncclResult_t xTest(void* req, int* done, int* size) {
  switch (gVer) {
    case 12: return n12->test(req, done, size);
    case 11: return n11->test(req, done, size);
    case 10: return n10->test(req, done, size);
    case 9: return n9->test(req, done, size);
    default: return n8->test(req, done, size);
  }
}
static ncclResult_t xRegMr(void* comm, void* data, size_t size, void** mh) {
  switch (gVer) {
    case 12: return n12->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 11: return n11->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 10: return n10->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    case 9: return n9->regMr(comm, data, size, NCCL_PTR_HOST, mh);
    default: return n8->regMr(comm, data, size, NCCL_PTR_HOST, mh);
  }
}
static ncclResult_t xDeregMr(void* comm, void* mh) {
  switch (gVer) {
    case 12: return n12->deregMr(comm, mh);
    case 11: return n11->deregMr(comm, mh);
    case 10: return n10->deregMr(comm, mh);
    case 9: return n9->deregMr(comm, mh);
    default: return n8->deregMr(comm, mh);
  }
}
static ncclResult_t xClose(int which, void* comm) { /* 0 send, 1 recv, 2 listen */
  const ncclNet_v12_t* t = n12;
  if (gVer == 12) return which == 0 ? t->closeSend(comm) : which == 1 ? t->closeRecv(comm) : t->closeListen(comm);
  if (gVer == 11) return which == 0 ? n11->closeSend(comm) : which == 1 ? n11->closeRecv(comm) : n11->closeListen(comm);
  if (gVer == 10) return which == 0 ? n10->closeSend(comm) : which == 1 ? n10->closeRecv(comm) : n10->closeListen(comm);
  if (gVer == 9) return which == 0 ? n9->closeSend(comm) : which == 1 ? n9->closeRecv(comm) : n9->closeListen(comm);
  return which == 0 ? n8->closeSend(comm) : which == 1 ? n8->closeRecv(comm) : n8->closeListen(comm);
}

/* irecv of n buffers with tags, as any version's table takes it (v8: int sizes, v9: no phandles). */
static ncclResult_t xIrecvN(void* rc, int n, void** data, size_t* sizes, int* tags, void** mh, void** req) {
  int isizes[8];
  for (int i = 0; i < n; i++) isizes[i] = (int)sizes[i];
  *req = NULL;
  switch (gVer) {
    case 12: return n12->irecv(rc, n, data, sizes, tags, mh, NULL, req);
    case 11: return n11->irecv(rc, n, data, sizes, tags, mh, NULL, req);
    case 10: return n10->irecv(rc, n, data, sizes, tags, mh, NULL, req);
    case 9: return n9->irecv(rc, n, data, sizes, tags, mh, req);
    default: return n8->irecv(rc, n, data, isizes, tags, mh, req);
  }
}
static ncclResult_t xIsendTag(void* sc, void* data, size_t size, int tag, void* mh, void** req) {
  *req = NULL;
  switch (gVer) {
    case 12: return n12->isend(sc, data, size, tag, mh, NULL, req);
    case 11: return n11->isend(sc, data, size, tag, mh, NULL, req);
    case 10: return n10->isend(sc, data, size, tag, mh, NULL, req);
    case 9: return n9->isend(sc, data, size, tag, mh, req);
    default: return n8->isend(sc, data, (int)size, tag, mh, req);
  }
}

/* Poll a request until done; returns the result of the last test call (an error stops early). */
static ncclResult_t waitReq(void* req, int* size, double timeoutSec) {
  double end = nowSec() + timeoutSec;
  int done = 0;
  while (!done) {
    ncclResult_t r = xTest(req, &done, size);
    if (r != ncclSuccess) return r;
    if (!done && nowSec() > end) FAIL("request %p not done after %.0f s", req, timeoutSec);
  }
  return ncclSuccess;
}

/* ---------------------------------------------------------------- data */

static void fillRandom(unsigned char* buf, size_t n, uint64_t seed) {
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

static void checkData(const unsigned char* got, size_t n, uint64_t seed, const char* what) {
  unsigned char* want = malloc(n ? n : 1);
  fillRandom(want, n, seed);
  if (memcmp(got, want, n) != 0) {
    size_t i = 0;
    while (got[i] == want[i]) i++;
    FAIL("%s: %zu bytes differ from byte %zu", what, n, i);
  }
  free(want);
}

/* ---------------------------------------------------------------- connection setup */

typedef struct {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* sendComm;
} connArg;

static void* connectLoop(void* arg) {
  connArg* a = arg;
  double end = nowSec() + 20;
  while (a->sendComm == NULL) {
    OK(xConnect(a->handle, &a->sendComm));
    if (nowSec() > end) FAIL("connect did not finish");
    if (a->sendComm == NULL) usleep(100);
  }
  return NULL;
}

static void* acceptLoop(void* lc) {
  void* rc = NULL;
  double end = nowSec() + 20;
  while (rc == NULL) {
    OK(xAccept(lc, &rc));
    if (nowSec() > end) FAIL("accept did not finish");
    if (rc == NULL) usleep(100);
  }
  return rc;
}

/* Connect in a second thread while this thread accepts. */
static void connectPair(void** sc, void** rc) {
  connArg a;
  memset(&a, 0, sizeof(a));
  void* lc = NULL;
  OK(xListen(a.handle, &lc));
  if (lc == NULL) FAIL("listen returned no comm");
  pthread_t t;
  pthread_create(&t, NULL, connectLoop, &a);
  *rc = acceptLoop(lc);
  pthread_join(t, NULL);
  *sc = a.sendComm;
  OK(xClose(2, lc));
}

/* ---------------------------------------------------------------- transfers */

typedef struct {
  void* comm;
  const size_t* sizes;
  int n;
  uint64_t seed;
} xferArg;

static void* sendSeries(void* arg) {
  xferArg* a = arg;
  for (int i = 0; i < a->n; i++) {
    size_t sz = a->sizes[i];
    unsigned char* buf = malloc(sz ? sz : 1);
    fillRandom(buf, sz, a->seed + i);
    void* mh = NULL;
    OK(xRegMr(a->comm, buf, sz, &mh));
    void* req = NULL;
    double end = nowSec() + 20;
    while (req == NULL) {
      OK(xIsend(a->comm, buf, sz, mh, &req));
      if (nowSec() > end) FAIL("isend never accepted");
    }
    int got = -1;
    OK(waitReq(req, &got, 30));
    if ((size_t)got != sz) FAIL("send of %zu bytes: test reported %d", sz, got);
    OK(xDeregMr(a->comm, mh));
    free(buf);
  }
  return NULL;
}

/* Receives into buffers `extra` bytes larger than each message, checks size, bytes and guard bytes;
 * with flush, each completed receive is flushed (iflush) before its bytes are looked at. */
static void recvSeries(void* comm, const size_t* sizes, int n, uint64_t seed, size_t extra, int flush) {
  for (int i = 0; i < n; i++) {
    size_t sz = sizes[i];
    unsigned char* buf = malloc(sz + extra + 1);
    memset(buf, 0xAB, sz + extra + 1);
    void* mh = NULL;
    OK(xRegMr(comm, buf, sz + extra, &mh));
    void* req = NULL;
    while (req == NULL) OK(xIrecv(comm, buf, sz + extra, mh, &req));
    int got = -1;
    OK(waitReq(req, &got, 30));
    if ((size_t)got != sz) FAIL("size %zu: test reported %d bytes", sz, got);
    if (flush) {
      void* data = buf;
      int isz = got;
      void* freq = NULL;
      OK(n12->iflush(comm, 1, &data, &isz, &mh, &freq));
      if (sz > 0 && gForceFlush && freq == NULL) FAIL("iflush of %zu bytes gave no request with forceFlush", sz);
      if (sz == 0 && freq != NULL) FAIL("iflush of 0 bytes gave a request");
      if (freq != NULL) OK(waitReq(freq, NULL, 10));
    }
    char what[64];
    snprintf(what, sizeof(what), "message %d (%zu bytes)", i, sz);
    checkData(buf, sz, seed + i, what);
    for (size_t k = sz; k < sz + extra + 1; k++)
      if (buf[k] != 0xAB) FAIL("size %zu: byte %zu past the message was written", sz, k);
    OK(xDeregMr(comm, mh));
    free(buf);
  }
}

static const size_t kSizes[] = {0, 1, 7, 4093, 1 << 20, 64 << 20, 0, 16384, 16385, 65537, 3 << 20};
#define NSIZES ((int)(sizeof(kSizes) / sizeof(kSizes[0])))

static void caseSizes(size_t extra, const size_t* sizes, int n, int flush) {
  void *sc, *rc;
  connectPair(&sc, &rc);
  xferArg a = {sc, sizes, n, 42};
  pthread_t t;
  pthread_create(&t, NULL, sendSeries, &a);
  recvSeries(rc, sizes, n, 42, extra, flush);
  pthread_join(t, NULL);
  OK(xClose(0, sc));
  OK(xClose(1, rc));
}

/* Two processes: the parent listens and receives, the child connects and sends. The child opens its
 * own endpoint (the parent's was opened before the fork and is not the child's to use). */
static void caseFork(void) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(xListen(handle, &lc));
  pid_t pid = fork();
  if (pid == 0) {
    connArg a;
    memset(&a, 0, sizeof(a));
    memcpy(a.handle, handle, sizeof(handle));
    connectLoop(&a);
    xferArg x = {a.sendComm, kSizes, NSIZES, 7};
    sendSeries(&x);
    OK(xClose(0, a.sendComm));
    _exit(0);
  }
  void* rc = acceptLoop(lc);
  recvSeries(rc, kSizes, NSIZES, 7, 0, 0);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) FAIL("sender process failed (status 0x%x)", st);
  OK(xClose(1, rc));
  OK(xClose(2, lc));
}

/* 32 receives and 32 x maxRecvs sends in flight at once on one connection (the ABI's limits); the
 * request after each limit is refused with a NULL request; completion in reverse order. */
static void caseInflight(void) {
  enum { NR = NCCL_NET_MAX_REQUESTS, NS = NCCL_NET_MAX_REQUESTS * 8 };
  void *sc, *rc;
  connectPair(&sc, &rc);
  unsigned char* sbuf[NS];
  unsigned char* rbuf[NS];
  void *smh[NS], *rmh[NS];
  size_t sz[NS];
  void *sreq[NS], *rreq[NS];
  for (int i = 0; i < NS; i++) {
    sz[i] = i < NR ? (i * 7919u) % 200000u + (i % 3 == 0 ? 0 : 1) : (i * 131u) % 5000u;
    sbuf[i] = malloc(sz[i] + 1);
    rbuf[i] = malloc(sz[i] + 1);
    fillRandom(sbuf[i], sz[i], 100 + i);
    OK(xRegMr(sc, sbuf[i], sz[i], &smh[i]));
    OK(xRegMr(rc, rbuf[i], sz[i], &rmh[i]));
  }
  for (int i = 0; i < NR; i++) {
    OK(xIrecv(rc, rbuf[i], sz[i], rmh[i], &rreq[i]));
    if (rreq[i] == NULL) FAIL("irecv %d of %d refused", i, NR);
  }
  void* extra = NULL;
  OK(xIrecv(rc, rbuf[0], sz[0], rmh[0], &extra));
  if (extra != NULL) FAIL("irecv number %d accepted: limit is %d", NR + 1, NR);
  for (int i = 0; i < NS; i++) {
    OK(xIsend(sc, sbuf[i], sz[i], smh[i], &sreq[i]));
    if (sreq[i] == NULL) FAIL("isend %d of %d refused", i, NS);
  }
  OK(xIsend(sc, sbuf[0], sz[0], smh[0], &extra));
  if (extra != NULL) FAIL("isend number %d accepted: limit is %d", NS + 1, NS);
  for (int i = NR - 1; i >= 0; i--) {
    int got = -1;
    OK(waitReq(rreq[i], &got, 30));
    if ((size_t)got != sz[i]) FAIL("receive %d: %d bytes, expected %zu", i, got, sz[i]);
  }
  for (int base = NR; base < NS; base += NR) {
    for (int i = base; i < base + NR; i++) {
      OK(xIrecv(rc, rbuf[i], sz[i], rmh[i], &rreq[i]));
      if (rreq[i] == NULL) FAIL("irecv %d refused", i);
    }
    for (int i = base + NR - 1; i >= base; i--) {
      int got = -1;
      OK(waitReq(rreq[i], &got, 30));
      if ((size_t)got != sz[i]) FAIL("receive %d: %d bytes, expected %zu", i, got, sz[i]);
    }
  }
  for (int i = NS - 1; i >= 0; i--) OK(waitReq(sreq[i], NULL, 30));
  for (int i = 0; i < NS; i++) {
    checkData(rbuf[i], sz[i], 100 + i, "in-flight message");
    OK(xDeregMr(sc, smh[i]));
    OK(xDeregMr(rc, rmh[i]));
    free(sbuf[i]);
    free(rbuf[i]);
  }
  OK(xClose(0, sc));
  OK(xClose(1, rc));
}

/* Grouped receives: each send lands in the buffer posted with its tag, whatever the order of the
 * sends; test() reports one size per buffer; buffers larger than their message. */
static void caseGrouped(void) {
  enum { NG = 4, MAXB = 8 };
  static const int groupN[NG] = {4, 8, 1, 3};
  if (gMaxRecvs < 8) FAIL("maxRecvs is %d, this case needs 8", gMaxRecvs);
  void *sc, *rc;
  connectPair(&sc, &rc);
  unsigned char* rbuf[NG][MAXB];
  unsigned char* sbuf[NG][MAXB];
  void *rmh[NG][MAXB], *smh[NG][MAXB];
  size_t sent[NG][MAXB], posted[NG][MAXB];
  int tags[NG][MAXB];
  void* rreq[NG];
  for (int g = 0; g < NG; g++) {
    for (int i = 0; i < groupN[g]; i++) {
      sent[g][i] = (size_t)((g * 8 + i) * 70001 % 300000) + (i == 2 ? 0 : 1);
      if (g == 1 && i == 3) sent[g][i] = 0;
      posted[g][i] = sent[g][i] + (size_t)(i % 2) * 4096;
      tags[g][i] = 100 + g * 10 + i;
      rbuf[g][i] = malloc(posted[g][i] + 1);
      sbuf[g][i] = malloc(sent[g][i] + 1);
      memset(rbuf[g][i], 0xEE, posted[g][i] + 1);
      fillRandom(sbuf[g][i], sent[g][i], 1000 + g * 8 + i);
      OK(xRegMr(rc, rbuf[g][i], posted[g][i], &rmh[g][i]));
      OK(xRegMr(sc, sbuf[g][i], sent[g][i], &smh[g][i]));
    }
    OK(xIrecvN(rc, groupN[g], (void**)rbuf[g], posted[g], tags[g], rmh[g], &rreq[g]));
    if (rreq[g] == NULL) FAIL("grouped irecv %d (n %d) refused", g, groupN[g]);
  }
  void* sreq[NG * MAXB];
  int ns = 0;
  for (int g = 0; g < NG; g++)
    for (int k = 0; k < groupN[g]; k++) {
      int i = (k * 5 + 3) % groupN[g];
      OK(xIsendTag(sc, sbuf[g][i], sent[g][i], tags[g][i], smh[g][i], &sreq[ns]));
      if (sreq[ns++] == NULL) FAIL("isend %d refused", ns - 1);
    }
  for (int g = NG - 1; g >= 0; g--) {
    int sizes[MAXB];
    for (int i = 0; i < MAXB; i++) sizes[i] = -1;
    double end = nowSec() + 30;
    int done = 0;
    while (!done) {
      OK(xTest(rreq[g], &done, sizes));
      if (nowSec() > end) FAIL("grouped receive %d never completed", g);
    }
    for (int i = 0; i < groupN[g]; i++) {
      if ((size_t)sizes[i] != sent[g][i]) FAIL("group %d buffer %d: test reported %d bytes, %zu sent", g, i, sizes[i], sent[g][i]);
      char what[64];
      snprintf(what, sizeof(what), "group %d buffer %d (tag %d)", g, i, tags[g][i]);
      checkData(rbuf[g][i], sent[g][i], 1000 + g * 8 + i, what);
      for (size_t k = sent[g][i]; k <= posted[g][i]; k++)
        if (rbuf[g][i][k] != 0xEE) FAIL("%s: byte %zu past the message was written", what, k);
    }
  }
  for (int k = 0; k < ns; k++) OK(waitReq(sreq[k], NULL, 30));
  for (int g = 0; g < NG; g++)
    for (int i = 0; i < groupN[g]; i++) {
      OK(xDeregMr(rc, rmh[g][i]));
      OK(xDeregMr(sc, smh[g][i]));
      free(rbuf[g][i]);
      free(sbuf[g][i]);
    }
  OK(xClose(0, sc));
  OK(xClose(1, rc));
}

/* Wait until test() on req fails or completes; returns the result. */
static ncclResult_t waitError(void* req, int* done, double sec) {
  double end = nowSec() + sec;
  ncclResult_t r = ncclSuccess;
  *done = 0;
  while (r == ncclSuccess && !*done && nowSec() < end) r = xTest(req, done, NULL);
  return r;
}

/* A send whose tag no buffer of the oldest grouped receive expects is an error, not a guess. */
static void caseBadTag(void) {
  void *sc, *rc;
  connectPair(&sc, &rc);
  char a[16], b[16], c[16];
  void* bufs[2] = {a, b};
  size_t sz2[2] = {sizeof(a), sizeof(b)};
  int tg[2] = {1, 2};
  void *mh[2], *smh, *req, *sreq;
  OK(xRegMr(rc, a, sizeof(a), &mh[0]));
  OK(xRegMr(rc, b, sizeof(b), &mh[1]));
  OK(xRegMr(sc, c, sizeof(c), &smh));
  OK(xIrecvN(rc, 2, bufs, sz2, tg, mh, &req));
  OK(xIsendTag(sc, c, sizeof(c), 3, smh, &sreq));
  int done = 0;
  ncclResult_t r = waitError(req, &done, 10);
  if (r == ncclSuccess) FAIL("a send with an unexpected tag was %s", done ? "accepted" : "never reported");
  if (r != ncclInvalidUsage) FAIL("unexpected tag: test returned %d, expected ncclInvalidUsage", r);
  OK(xClose(0, sc));
  OK(xClose(1, rc));
  OK(xDeregMr(rc, mh[0])); /* registrations belong to the domain: released after the comms too */
  OK(xDeregMr(rc, mh[1]));
  OK(xDeregMr(sc, smh));
}

/* A message longer than the posted receive fails the receive with ncclSystemError, logged. */
static void caseOverflow(void) {
  size_t sizes[2] = {1000000, 10};
  for (int k = 0; k < 2; k++) { /* a large (rendezvous) and a small (eager) message */
    void *sc, *rc;
    connectPair(&sc, &rc);
    size_t ssz = sizes[k], rsz = sizes[k] - 1;
    unsigned char* sbuf = calloc(1, ssz);
    unsigned char* rbuf = calloc(1, ssz);
    void *smh, *rmh, *sreq = NULL, *rreq = NULL;
    OK(xRegMr(sc, sbuf, ssz, &smh));
    OK(xRegMr(rc, rbuf, rsz, &rmh));
    int before = atomic_load(&gWarns);
    OK(xIsend(sc, sbuf, ssz, smh, &sreq));
    OK(xIrecv(rc, rbuf, rsz, rmh, &rreq));
    if (sreq == NULL || rreq == NULL) FAIL("requests refused");
    int done = 0;
    ncclResult_t r = waitError(rreq, &done, 10);
    if (r != ncclSystemError) FAIL("send of %zu into a %zu-byte receive: test returned %d, done %d", ssz, rsz, r, done);
    if (atomic_load(&gWarns) == before) FAIL("the size error was not logged");
    if (strstr(gLastWarn, "longer than the posted receive") == NULL) FAIL("the WARN does not say what: %s", gLastWarn);
    void* again = NULL;
    if (xIrecv(rc, rbuf, rsz, rmh, &again) == ncclSuccess) FAIL("irecv on a failed comm succeeded");
    xDeregMr(rc, rmh);
    OK(xClose(1, rc));
    OK(xClose(0, sc)); /* the send may still be in flight: close before freeing its buffer */
    xDeregMr(sc, smh);
    free(sbuf);
    free(rbuf);
  }
}

/* A process killed mid-transfer: the survivor's test() must fail within a few seconds (the probe). */
static void caseKill(int killSender) {
  const size_t big = 64u << 20;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  int pipefd[2];
  if (pipe(pipefd) != 0) FAIL("pipe");
  int sendInParent = !killSender;
  /* The receiving side listens; the handle goes through the pipe when the child is the listener. */
  int hpipe[2];
  if (pipe(hpipe) != 0) FAIL("pipe");
  if (!sendInParent) OK(xListen(handle, &lc));
  pid_t pid = fork();
  if (pid == 0) {
    close(pipefd[0]);
    unsigned char* buf = malloc(big);
    memset(buf, 1, big);
    if (sendInParent) { /* child receives, forever */
      OK(xListen(handle, &lc));
      if (write(hpipe[1], handle, sizeof(handle)) != (ssize_t)sizeof(handle)) _exit(3);
      void* rc = acceptLoop(lc);
      void* mh;
      OK(xRegMr(rc, buf, big, &mh));
      ssize_t w = write(pipefd[1], "x", 1);
      (void)w;
      for (;;) {
        void* req = NULL;
        while (req == NULL) OK(xIrecv(rc, buf, big, mh, &req));
        int done = 0;
        while (!done) OK(xTest(req, &done, NULL));
      }
    } else { /* child sends, forever */
      connArg a;
      memset(&a, 0, sizeof(a));
      memcpy(a.handle, handle, sizeof(handle));
      connectLoop(&a);
      void* mh;
      OK(xRegMr(a.sendComm, buf, big, &mh));
      ssize_t w = write(pipefd[1], "x", 1);
      (void)w;
      for (;;) {
        void* req = NULL;
        while (req == NULL) OK(xIsend(a.sendComm, buf, big, mh, &req));
        int done = 0;
        while (!done) OK(xTest(req, &done, NULL));
      }
    }
    _exit(0);
  }
  close(pipefd[1]);
  unsigned char* buf = malloc(big);
  memset(buf, 2, big);
  void* comm = NULL;
  if (sendInParent) {
    connArg a;
    memset(&a, 0, sizeof(a));
    if (read(hpipe[0], a.handle, sizeof(a.handle)) != (ssize_t)sizeof(a.handle)) FAIL("no handle from the child");
    connectLoop(&a);
    comm = a.sendComm;
  } else {
    comm = acceptLoop(lc);
  }
  void* mh;
  OK(xRegMr(comm, buf, big, &mh));
  char c;
  if (read(pipefd[0], &c, 1) != 1) FAIL("child did not start");
  double t0 = nowSec(), tk = 0;
  int killed = 0;
  ncclResult_t r = ncclSuccess;
  while (r == ncclSuccess) {
    void* req = NULL;
    while (req == NULL && r == ncclSuccess)
      r = sendInParent ? xIsend(comm, buf, big, mh, &req) : xIrecv(comm, buf, big, mh, &req);
    int done = 0;
    while (r == ncclSuccess && !done) {
      r = xTest(req, &done, NULL);
      if (!killed && nowSec() - t0 > 0.2) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        killed = 1;
        tk = nowSec();
      }
      if (killed && nowSec() - tk > 15) FAIL("test() still succeeds 15 s after the peer was killed");
    }
  }
  if (!killed) FAIL("transfer failed (%d) before the peer was killed", r);
  if (r != ncclSystemError && r != ncclRemoteError) FAIL("test() returned %d, expected a system/remote error", r);
  if (nowSec() - tk > 10) FAIL("error took %.1f s", nowSec() - tk);
  OK(xDeregMr(comm, mh));
  OK(xClose(sendInParent ? 0 : 1, comm));
  if (lc) OK(xClose(2, lc));
  free(buf);
}

/* Connect messages that are not for this connection (wrong nonce) are dropped; the real one works. */
static void caseStrangers(void) {
  char handle[NCCL_NET_HANDLE_MAXSIZE], bad[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(xListen(handle, &lc));
  memcpy(bad, handle, sizeof(bad));
  bad[8] ^= 0x5a; /* the nonce follows the 8-byte magic */
  connArg s;
  memset(&s, 0, sizeof(s));
  memcpy(s.handle, bad, sizeof(bad));
  connectLoop(&s); /* delivered, so the listener has seen it */
  void* rc = NULL;
  for (int i = 0; i < 50; i++) {
    OK(xAccept(lc, &rc));
    if (rc != NULL) FAIL("accept produced a comm from a connect message with the wrong nonce");
    usleep(1000);
  }
  connArg a;
  memset(&a, 0, sizeof(a));
  memcpy(a.handle, handle, sizeof(handle));
  pthread_t t;
  pthread_create(&t, NULL, connectLoop, &a);
  rc = acceptLoop(lc);
  pthread_join(t, NULL);
  xferArg x = {a.sendComm, kSizes, 6, 9};
  pthread_create(&t, NULL, sendSeries, &x);
  recvSeries(rc, kSizes, 6, 9, 0, 0);
  pthread_join(t, NULL);
  OK(xClose(0, s.sendComm));
  OK(xClose(0, a.sendComm));
  OK(xClose(1, rc));
  OK(xClose(2, lc));
}

/* Handles that cannot be ours are refused with an error, never used. */
static void caseBadHandle(void) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(xListen(handle, &lc));
  unsigned char junk[NCCL_NET_HANDLE_MAXSIZE];
  for (int k = 0; k < 4; k++) {
    memcpy(junk, handle, sizeof(junk));
    if (k == 0) fillRandom(junk, sizeof(junk), 3);               /* random bytes */
    if (k == 1) memset(junk + 20, 0xff, 4);                       /* address length */
    if (k == 2) memset(junk + 16, 0, 4);                          /* listen id 0 */
    if (k == 3) memset(junk + 16, 0xff, 4);                       /* listen id out of range */
    void* sc = NULL;
    if (xConnect(junk, &sc) == ncclSuccess) FAIL("connect accepted bad handle %d", k);
    if (sc != NULL) FAIL("connect returned a comm for bad handle %d", k);
  }
  OK(xClose(2, lc));
}

typedef struct {
  void* comm;
  unsigned char* buf;
  void* mh;
  size_t size;
  int n;
} bwArg;

static void* bwSender(void* arg) {
  bwArg* b = arg;
  void* req[NCCL_NET_MAX_REQUESTS];
  for (int i = 0; i < b->n; i++) {
    req[i] = NULL;
    while (req[i] == NULL) OK(xIsend(b->comm, b->buf, b->size, b->mh, &req[i]));
  }
  for (int i = 0; i < b->n; i++) OK(waitReq(req[i], NULL, 60));
  return NULL;
}

/* Not a test: prints GB/s of n back-to-back 64 MiB messages (all posted at once). */
static void caseBandwidth(void) {
  const size_t size = 64u << 20;
  const int iters = 16;
  void *sc, *rc;
  connectPair(&sc, &rc);
  unsigned char* sbuf = malloc(size);
  unsigned char* rbuf = malloc(size);
  memset(sbuf, 3, size);
  memset(rbuf, 0, size);
  void *smh, *rmh;
  OK(xRegMr(sc, sbuf, size, &smh));
  OK(xRegMr(rc, rbuf, size, &rmh));
  for (int pass = 0; pass < 2; pass++) {
    int n = pass == 0 ? 2 : iters;
    bwArg b = {sc, sbuf, smh, size, n};
    pthread_t t;
    double t0 = nowSec();
    pthread_create(&t, NULL, bwSender, &b);
    void* req[NCCL_NET_MAX_REQUESTS];
    for (int i = 0; i < n; i++) {
      req[i] = NULL;
      while (req[i] == NULL) OK(xIrecv(rc, rbuf, size, rmh, &req[i]));
    }
    for (int i = 0; i < n; i++) OK(waitReq(req[i], NULL, 60));
    pthread_join(t, NULL);
    double dt = nowSec() - t0;
    if (pass == 1)
      printf("bw: %d x %zu MiB in %.3f s = %.2f GB/s (FI_PROVIDER=%s)\n", n, size >> 20, dt, (double)n * size / dt / 1e9,
             getenv("FI_PROVIDER") ?: "unset");
  }
  OK(xDeregMr(sc, smh));
  OK(xDeregMr(rc, rmh));
  free(sbuf);
  free(rbuf);
  OK(xClose(0, sc));
  OK(xClose(1, rc));
}

/* ---------------------------------------------------------------- CUDA buffers (FI_HMEM) */

/* The few CUDA driver calls this case needs, found at run time (no CUDA at build time). */
typedef unsigned long long cuPtr;
static struct {
  int (*init)(unsigned);
  int (*deviceGet)(int*, int);
  int (*primaryCtxRetain)(void**, int);
  int (*ctxSetCurrent)(void*);
  int (*memAlloc)(cuPtr*, size_t);
  int (*memFree)(cuPtr);
  int (*htod)(cuPtr, const void*, size_t);
  int (*dtoh)(void*, cuPtr, size_t);
} cu;

static void cudaOrSkip(void) {
  void* lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "SKIP: no CUDA driver here (libcuda.so.1: %s)\n", dlerror());
    exit(SKIP_CODE);
  }
  *(void**)&cu.init = dlsym(lib, "cuInit");
  *(void**)&cu.deviceGet = dlsym(lib, "cuDeviceGet");
  *(void**)&cu.primaryCtxRetain = dlsym(lib, "cuDevicePrimaryCtxRetain");
  *(void**)&cu.ctxSetCurrent = dlsym(lib, "cuCtxSetCurrent");
  *(void**)&cu.memAlloc = dlsym(lib, "cuMemAlloc_v2");
  *(void**)&cu.memFree = dlsym(lib, "cuMemFree_v2");
  *(void**)&cu.htod = dlsym(lib, "cuMemcpyHtoD_v2");
  *(void**)&cu.dtoh = dlsym(lib, "cuMemcpyDtoH_v2");
  if (!cu.init || !cu.deviceGet || !cu.primaryCtxRetain || !cu.ctxSetCurrent || !cu.memAlloc || !cu.memFree ||
      !cu.htod || !cu.dtoh)
    FAIL("libcuda.so.1 lacks a driver call this test uses");
  int dev = 0;
  void* ctx = NULL;
  if (cu.init(0) != 0 || cu.deviceGet(&dev, 0) != 0) {
    fprintf(stderr, "SKIP: the CUDA driver finds no GPU\n");
    exit(SKIP_CODE);
  }
  if (cu.primaryCtxRetain(&ctx, dev) != 0 || cu.ctxSetCurrent(ctx) != 0) FAIL("no CUDA context on GPU 0");
}

/* GPU buffer to GPU buffer through the plugin (regMr NCCL_PTR_CUDA), each receive flushed (iflush
 * must give a request for CUDA memory), bytes checked after a copy back to the host. */
static void caseCuda(void) {
  cudaOrSkip();
  if (!(gPtrSupport & NCCL_PTR_CUDA)) {
    fprintf(stderr, "SKIP: the provider offers no FI_HMEM here (ptrSupport 0x%x)\n", gPtrSupport);
    exit(SKIP_CODE);
  }
  static const size_t sizes[] = {4, 4093, (1 << 20) + 3, 8 << 20};
  void *sc, *rc;
  connectPair(&sc, &rc);
  for (int k = 0; k < 4; k++) {
    size_t sz = sizes[k];
    unsigned char* host = malloc(sz);
    fillRandom(host, sz, 77 + k);
    cuPtr sbuf, rbuf;
    if (cu.memAlloc(&sbuf, sz) != 0 || cu.memAlloc(&rbuf, sz + 64) != 0) FAIL("cuMemAlloc of %zu bytes", sz);
    if (cu.htod(sbuf, host, sz) != 0) FAIL("cuMemcpyHtoD");
    memset(host, 0, sz);
    if (cu.htod(rbuf, host, sz) != 0) FAIL("cuMemcpyHtoD");
    void *smh, *rmh, *sreq = NULL, *rreq = NULL;
    OK(n12->regMr(sc, (void*)(uintptr_t)sbuf, sz, NCCL_PTR_CUDA, &smh));
    OK(n12->regMr(rc, (void*)(uintptr_t)rbuf, sz + 64, NCCL_PTR_CUDA, &rmh));
    void* rdata = (void*)(uintptr_t)rbuf;
    size_t rsize = sz + 64;
    int tag = 5;
    while (rreq == NULL) OK(n12->irecv(rc, 1, &rdata, &rsize, &tag, &rmh, NULL, &rreq));
    while (sreq == NULL) OK(n12->isend(sc, (void*)(uintptr_t)sbuf, sz, tag, smh, NULL, &sreq));
    int sdone = 0, rdone = 0, got = -1;
    double end = nowSec() + 30;
    while (!sdone || !rdone) {
      if (!sdone) OK(n12->test(sreq, &sdone, NULL));
      if (!rdone) OK(n12->test(rreq, &rdone, &got));
      if (nowSec() > end) FAIL("CUDA transfer of %zu bytes not done after 30 s", sz);
    }
    if ((size_t)got != sz) FAIL("CUDA receive: %d bytes, %zu sent", got, sz);
    void* freq = NULL;
    int isz = got;
    OK(n12->iflush(rc, 1, &rdata, &isz, &rmh, &freq));
    if (freq == NULL) FAIL("iflush of CUDA memory gave no request");
    OK(waitReq(freq, NULL, 10));
    if (cu.dtoh(host, rbuf, sz) != 0) FAIL("cuMemcpyDtoH");
    char what[64];
    snprintf(what, sizeof(what), "CUDA message of %zu bytes", sz);
    checkData(host, sz, 77 + k, what);
    OK(n12->deregMr(sc, smh));
    OK(n12->deregMr(rc, rmh));
    cu.memFree(sbuf);
    cu.memFree(rbuf);
    free(host);
  }
  OK(xClose(0, sc));
  OK(xClose(1, rc));
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <plugin.so> <case> [version]\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  const char* c = argv[2];
  int ver = argc > 3 ? atoi(argv[3]) : 12;
  loadPlugin(argv[1], ver);
  if (strcmp(c, "probe") == 0) return 0; /* the provider opens (else loadPlugin exited 77) */
  else if (strcmp(c, "sizes") == 0) caseSizes(0, kSizes, NSIZES, 0);
  else if (strcmp(c, "bigrecv") == 0) caseSizes(12345, kSizes, NSIZES, 0);
  else if (strcmp(c, "flush") == 0) {
    if (ver != 12) FAIL("flush runs on the v12 table");
    if (getenv("CHORUS_OFI_FORCE_FLUSH") && !gForceFlush) {
      fprintf(stderr, "SKIP: the provider offers no FI_RMA, so there is no read-back flush to test\n");
      return SKIP_CODE;
    }
    caseSizes(0, kSizes, NSIZES, 1);
  } else if (strcmp(c, "cuda") == 0) {
    if (ver != 12) FAIL("cuda runs on the v12 table");
    caseCuda();
  } else if (strcmp(c, "fork") == 0) caseFork();
  else if (strcmp(c, "inflight") == 0) caseInflight();
  else if (strcmp(c, "grouped") == 0) caseGrouped();
  else if (strcmp(c, "badtag") == 0) caseBadTag();
  else if (strcmp(c, "overflow") == 0) caseOverflow();
  else if (strcmp(c, "kill_sender") == 0) caseKill(1);
  else if (strcmp(c, "kill_receiver") == 0) caseKill(0);
  else if (strcmp(c, "strangers") == 0) caseStrangers();
  else if (strcmp(c, "badhandle") == 0) caseBadHandle();
  else if (strcmp(c, "version") == 0) {
    static const size_t vs[] = {0, 1, 7, 4093, 1 << 20, 5 << 20};
    caseSizes(0, vs, 6, 0);
    caseSizes(100, vs, 6, 0);
  } else if (strcmp(c, "bw") == 0) caseBandwidth();
  else FAIL("unknown case %s", c);
  if (ver >= 11) {
    if (ver == 12) OK(n12->finalize(gCtx));
    else OK(n11->finalize(gCtx));
  }
  return 0;
}
