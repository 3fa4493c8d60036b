/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_ib_gdr.c: GPU memory and the flush, through the v12 table of the plugin's test copy
 * (libnccl-net-ibmock.so, over tests/mock_verbs.c, where "GPU memory" is host memory and the mock
 * says how each buffer was registered and counts RDMA reads: mock_verbs.h).
 *   test_net_ib_gdr <plugin.so> <case>
 * The test lays out a fake peer-memory tree itself and points CHORUS_TEST_IB_PEERMEM_ROOT at it;
 * ctest sets the other knobs (MOCK_VERBS_DMABUF, NCCL_GDR_FLUSH_DISABLE, MOCK_VERBS_FAULT, ...).
 *   peermem   a peer-memory driver, no dma-buf: NCCL_PTR_CUDA only; regMr(CUDA) is an ibv_reg_mr with
 *             remote read; receives of random sizes into it, each flushed by exactly one 1-byte read
 *             of its last byte (several flushes in flight too); host memory and 0 bytes: no flush
 *   nogpu     neither: host only; CUDA registration refused (WARN, ncclInvalidUsage); no flush QP
 *   dmabuf    dma-buf only (MOCK_VERBS_DMABUF=1): CUDA and DMABUF; regMrDmaBuf is an
 *             ibv_reg_dmabuf_mr with remote read; flushes as with peermem
 *   noflush   peer memory with NCCL_GDR_FLUSH_DISABLE=1: no flush QP, no remote read, no flush
 *   badkey    every registration without remote read (MOCK_VERBS_FAULT=noremoteread): the flush
 *             fails with an error (never done, never a hang) and the comm stays failed
 *   failsetup accept's flush QP or flush buffer cannot be made (MOCK_VERBS_FAIL_QP / _MR = 3):
 *             accept fails with a WARN and nothing is left behind
 * Every case ends with no QP and no registration left in the mock.
 */
#include <dlfcn.h>
#include <infiniband/verbs.h> /* access flags only: nothing here calls verbs */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "mock_verbs.h"
#include "plugin/net.h"
#include "ib_test_log.h"


static const ncclNet_v12_t* net;
static void* ctx;
static mockVerbsGetStats_t getStats;
static mockVerbsMrAt_t mrAt;
static char fakeRoot[64];

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* xorshift64: ctl draws sizes, offsets and the seed of each transfer's data */
static uint64_t ctl = 0x2545f4914f6cdd1dULL;
static uint64_t next(uint64_t* s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}
static uint64_t rnd(void) { return next(&ctl); }

static mockVerbsStats stats(void) {
  mockVerbsStats s;
  getStats(&s);
  return s;
}

static void removeFakeRoot(void) {
  const char* parts[] = {"/sys/module/nvidia_peermem/version", "/sys/module/nvidia_peermem", "/sys/module", "/sys", ""};
  for (int i = 0; i < 5; i++) {
    char path[256];
    snprintf(path, sizeof(path), "%s%s", fakeRoot, parts[i]);
    (void)remove(path); /* the layout without peer memory has only the root */
  }
}

/* A fake root with (peerMem) or without nvidia_peermem's version file, made before init. */
static void fakePeerMem(int peerMem) {
  snprintf(fakeRoot, sizeof(fakeRoot), "/tmp/chorus_ib_gdr_XXXXXX");
  if (mkdtemp(fakeRoot) == NULL) FAIL("mkdtemp");
  atexit(removeFakeRoot);
  if (peerMem) {
    char path[256];
    const char* dirs[] = {"/sys", "/sys/module", "/sys/module/nvidia_peermem"};
    for (int i = 0; i < 3; i++) {
      snprintf(path, sizeof(path), "%s%s", fakeRoot, dirs[i]);
      if (mkdir(path, 0700) != 0) FAIL("mkdir %s", path);
    }
    snprintf(path, sizeof(path), "%s/sys/module/nvidia_peermem/version", fakeRoot);
    FILE* f = fopen(path, "w");
    if (f == NULL) FAIL("create %s", path);
    fputs("570.86.15\n", f);
    fclose(f);
  }
  setenv("CHORUS_TEST_IB_PEERMEM_ROOT", fakeRoot, 1);
}

static void init(int peerMem) {
  fakePeerMem(peerMem);
  ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  if (net->init(&ctx, 7, &cfg, logger, NULL) != ncclSuccess) FAIL("init");
  int n = 0;
  if (net->devices(&n) != ncclSuccess || n != 1) FAIL("the mock should give one device, got %d", n);
}

static int ptrSupport(void) {
  ncclNetProperties_v12_t p;
  if (net->getProperties(0, &p) != ncclSuccess) FAIL("getProperties");
  if (p.forceFlush != 0) FAIL("forceFlush %d; NCCL's verbs plugin says 0 off Data-Direct NICs", p.forceFlush);
  return p.ptrSupport;
}

static void connectPair(void** sc, void** rc, void** lc) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  if (net->listen(ctx, 0, handle, lc) != ncclSuccess || *lc == NULL) FAIL("listen");
  *sc = *rc = NULL;
  double end = nowSec() + 20;
  while (*sc == NULL || *rc == NULL) {
    if (*sc == NULL && net->connect(ctx, 0, handle, sc, NULL) != ncclSuccess) FAIL("connect");
    if (*rc == NULL && net->accept(*lc, rc, NULL) != ncclSuccess) FAIL("accept");
    if (nowSec() > end) FAIL("connect/accept did not finish in 20 s");
  }
}

/* Test a request until done; returns the last result (an error stops it). */
static ncclResult_t waitReq(void* req, int* size) {
  int done = 0;
  double end = nowSec() + 10;
  while (!done) {
    ncclResult_t res = net->test(req, &done, size);
    if (res != ncclSuccess) return res;
    if (nowSec() > end) FAIL("a request is not done after 10 s");
  }
  return ncclSuccess;
}

/* One transfer of size bytes of random data from sbuf into rbuf, checked against a reference drawn
 * again from the same seed; returns the bytes received. */
static int transfer(void* sc, void* rc, uint8_t* sbuf, void* smh, uint8_t* rbuf, size_t cap, void* rmh, size_t size) {
  uint64_t seed = rnd() | 1, gen = seed;
  for (size_t i = 0; i < size; i++) sbuf[i] = (uint8_t)next(&gen);
  memset(rbuf, 0xee, cap);
  void *rr = NULL, *sr = NULL;
  int tag = 3;
  void* ph = NULL;
  while (rr == NULL)
    if (net->irecv(rc, 1, (void**)&rbuf, &cap, &tag, &rmh, &ph, &rr) != ncclSuccess) FAIL("irecv");
  while (sr == NULL)
    if (net->isend(sc, sbuf, size, tag, smh, NULL, &sr) != ncclSuccess) FAIL("isend");
  int got = -1, sent = -1;
  if (waitReq(sr, &sent) != ncclSuccess || waitReq(rr, &got) != ncclSuccess) FAIL("transfer of %zu bytes", size);
  if ((size_t)got != size) FAIL("received %d bytes of %zu", got, size);
  gen = seed;
  for (size_t i = 0; i < size; i++)
    if (rbuf[i] != (uint8_t)next(&gen)) FAIL("%zu-byte transfer: byte %zu differs from the reference", size, i);
  if (size < cap && rbuf[size] != 0xee) FAIL("%zu-byte transfer wrote past its end", size);
  return got;
}

/* iflush of a receive of size bytes at data: a request exactly when expectRead, which completes after
 * exactly one read of the receive's last byte. */
static void flushOne(void* rc, uint8_t* data, int size, void* mh, int expectRead) {
  mockVerbsStats before = stats();
  void* req = (void*)1;
  if (net->iflush(rc, 1, (void**)&data, &size, &mh, &req) != ncclSuccess) FAIL("iflush of %d bytes", size);
  if ((req != NULL) != expectRead) FAIL("iflush of %d bytes: request %p, expected %s", size, req, expectRead ? "one" : "NULL");
  if (req != NULL) {
    int sz = -7;
    if (waitReq(req, &sz) != ncclSuccess) FAIL("the flush of %d bytes failed", size);
    if (sz != -7) FAIL("test of a flush wrote a size (%d)", sz);
  }
  mockVerbsStats after = stats();
  if (after.reads - before.reads != (uint64_t)expectRead)
    FAIL("flush of %d bytes made %llu reads, expected %d", size, (unsigned long long)(after.reads - before.reads), expectRead);
  if (expectRead && (after.lastReadAddr != (uint64_t)(uintptr_t)(data + size - 1) || after.lastReadLen != 1 ||
                     after.lastReadData[0] != data[size - 1]))
    FAIL("the flush read %u bytes at %p (data %p, %d bytes) and got 0x%02x", after.lastReadLen,
         (void*)(uintptr_t)after.lastReadAddr, (void*)data, size, after.lastReadData[0]);
}

enum { RCAP = 1 << 20 };

/* Transfers of 0, 1, odd and large sizes (random in between) into GPU-registered memory at random
 * offsets, each flushed; then four receives flushed together; then host memory, never flushed. */
static void flushTraffic(void* sc, void* rc, void* gpuMh, uint8_t* gpuBuf, int flushOn) {
  uint8_t* sbuf = malloc(RCAP);
  uint8_t* hbuf = malloc(RCAP);
  void *smh = NULL, *hmh = NULL;
  if (!sbuf || !hbuf) FAIL("malloc");
  if (net->regMr(sc, sbuf, RCAP, NCCL_PTR_HOST, &smh) != ncclSuccess) FAIL("regMr send");
  if (net->regMr(rc, hbuf, RCAP, NCCL_PTR_HOST, &hmh) != ncclSuccess) FAIL("regMr host recv");
  const size_t fixed[] = {0, 1, 2, 127, 4096, 65537, RCAP / 2};
  uint64_t readsBefore = stats().reads;
  int flushed = 0;
  for (int k = 0; k < 60; k++) {
    size_t size = k < 7 ? fixed[k] : (size_t)(rnd() % (RCAP / 2 + 1));
    size_t off = (size_t)(rnd() % (RCAP / 2));
    int got = transfer(sc, rc, sbuf, smh, gpuBuf + off, RCAP - off, gpuMh, size);
    flushOne(rc, gpuBuf + off, got, gpuMh, flushOn && got > 0);
    flushed += flushOn && got > 0;
  }
  /* four receives in different places, then their flushes in flight together */
  uint8_t* at[4];
  int sizes[4];
  void* reqs[4];
  for (int k = 0; k < 4; k++) {
    at[k] = gpuBuf + (size_t)k * (RCAP / 4);
    sizes[k] = transfer(sc, rc, sbuf, smh, at[k], RCAP / 4, gpuMh, 1 + (size_t)(rnd() % 1000));
  }
  for (int k = 0; k < 4; k++) {
    reqs[k] = NULL;
    if (net->iflush(rc, 1, (void**)&at[k], &sizes[k], &gpuMh, &reqs[k]) != ncclSuccess) FAIL("iflush %d", k);
    if ((reqs[k] != NULL) != flushOn) FAIL("flush %d: request %p", k, reqs[k]);
  }
  for (int k = 3; k >= 0; k--)
    if (reqs[k] && waitReq(reqs[k], NULL) != ncclSuccess) FAIL("flush %d", k);
  flushed += flushOn ? 4 : 0;
  uint64_t reads = stats().reads - readsBefore;
  if (reads != (uint64_t)flushed) FAIL("%llu reads for %d flushed receives", (unsigned long long)reads, flushed);
  /* host memory: the CPU sees DMA coherently, nothing to flush */
  int got = transfer(sc, rc, sbuf, smh, hbuf, RCAP, hmh, 5000);
  flushOne(rc, hbuf, got, hmh, 0);
  net->deregMr(sc, smh);
  net->deregMr(rc, hmh);
  free(sbuf);
  free(hbuf);
  printf("%d receives flushed, %llu reads\n", flushed, (unsigned long long)reads);
}

/* Registration kind and access in the mock of what regMr made at p. */
static void expectMr(const void* p, size_t len, int kind, int remoteRead) {
  int access = 0;
  int k = mrAt(p, len, &access);
  if (k != kind) FAIL("registration at %p is of kind %d, expected %d", p, k, kind);
  int want = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | (remoteRead ? IBV_ACCESS_REMOTE_READ : 0);
  if (access != want) FAIL("registration at %p has access 0x%x, expected 0x%x", p, access, want);
}

static void closeAll(void* sc, void* rc, void* lc) {
  if (net->closeSend(sc) != ncclSuccess || net->closeRecv(rc) != ncclSuccess || net->closeListen(lc) != ncclSuccess)
    FAIL("close");
  if (net->finalize(ctx) != ncclSuccess) FAIL("finalize");
  mockVerbsStats s = stats();
  if (s.liveQps != 0 || s.liveMrs != 0) FAIL("after close: %d QPs and %d registrations left", s.liveQps, s.liveMrs);
}

/* peermem, dmabuf, noflush: GPU memory taken, flushed unless NCCL_GDR_FLUSH_DISABLE=1. */
static void caseGpu(int peerMem, int dmabuf, int flushOn) {
  init(peerMem);
  int want = NCCL_PTR_HOST | NCCL_PTR_CUDA | (dmabuf ? NCCL_PTR_DMABUF : 0);
  if (ptrSupport() != want) FAIL("ptrSupport 0x%x, expected 0x%x", ptrSupport(), want);
  if (peerMem && !strstr(logText, "peer-memory driver loaded")) FAIL("no INFO line about the peer-memory driver");
  void *sc, *rc, *lc;
  connectPair(&sc, &rc, &lc);
  if (stats().loopbackQps != flushOn) FAIL("%d flush QPs for one recv comm, expected %d", stats().loopbackQps, flushOn);
  uint8_t* gpuBuf = malloc(RCAP); /* "GPU memory": the mock cannot tell */
  if (gpuBuf == NULL) FAIL("malloc");
  void* mh = NULL;
  if (dmabuf) {
    FILE* f = tmpfile(); /* any open fd stands for the dma-buf */
    if (f == NULL) FAIL("tmpfile");
    if (net->regMrDmaBuf(rc, gpuBuf, RCAP, NCCL_PTR_CUDA, 0, fileno(f), &mh) != ncclSuccess) FAIL("regMrDmaBuf");
    fclose(f);
    expectMr(gpuBuf, RCAP, MOCK_MR_DMABUF, flushOn);
    void* bad = (void*)1;
    if (net->regMrDmaBuf(rc, gpuBuf, RCAP, NCCL_PTR_CUDA, 0, 1000, &bad) == ncclSuccess || bad != NULL)
      FAIL("regMrDmaBuf of a closed fd succeeded");
  } else {
    if (net->regMr(rc, gpuBuf, RCAP, NCCL_PTR_CUDA, &mh) != ncclSuccess) FAIL("regMr CUDA");
    expectMr(gpuBuf, RCAP, MOCK_MR_PLAIN, flushOn);
    void* bad = (void*)1;
    if (net->regMrDmaBuf(rc, gpuBuf, RCAP, NCCL_PTR_CUDA, 0, 0, &bad) != ncclInvalidUsage || bad != NULL)
      FAIL("regMrDmaBuf on a device without dma-buf did not fail with ncclInvalidUsage");
    if (!strstr(logText, "registers no dma-bufs")) FAIL("no WARN saying the device registers no dma-bufs");
  }
  /* host memory is registered without remote read whatever the flush */
  static uint8_t host[4096];
  void* hmh = NULL;
  if (net->regMr(rc, host, sizeof(host), NCCL_PTR_HOST, &hmh) != ncclSuccess) FAIL("regMr host");
  expectMr(host, sizeof(host), MOCK_MR_PLAIN, 0);
  net->deregMr(rc, hmh);
  flushTraffic(sc, rc, mh, gpuBuf, flushOn);
  if (net->deregMr(rc, mh) != ncclSuccess) FAIL("deregMr");
  free(gpuBuf);
  closeAll(sc, rc, lc);
}

/* Neither peer memory nor dma-buf: host memory only; GPU registration refused with a reason. */
static void caseNoGpu(void) {
  init(0);
  if (ptrSupport() != NCCL_PTR_HOST) FAIL("ptrSupport 0x%x without peer memory or dma-buf", ptrSupport());
  void *sc, *rc, *lc;
  connectPair(&sc, &rc, &lc);
  if (stats().loopbackQps != 0) FAIL("a flush QP on a device that takes no GPU memory");
  static uint8_t buf[4096];
  void* mh = (void*)1;
  if (net->regMr(rc, buf, sizeof(buf), NCCL_PTR_CUDA, &mh) != ncclInvalidUsage || mh != NULL)
    FAIL("regMr(NCCL_PTR_CUDA) did not fail with ncclInvalidUsage");
  if (!strstr(logText, "does not take GPU memory") || !strstr(logText, "nvidia_peermem")) FAIL("no WARN with the reason");
  mh = (void*)1;
  if (net->regMrDmaBuf(rc, buf, sizeof(buf), NCCL_PTR_CUDA, 0, 0, &mh) != ncclInvalidUsage || mh != NULL)
    FAIL("regMrDmaBuf did not fail with ncclInvalidUsage");
  uint8_t* sbuf = malloc(RCAP);
  uint8_t* hbuf = malloc(RCAP);
  void *smh, *hmh;
  if (!sbuf || !hbuf) FAIL("malloc");
  if (net->regMr(sc, sbuf, RCAP, NCCL_PTR_HOST, &smh) != ncclSuccess) FAIL("regMr");
  if (net->regMr(rc, hbuf, RCAP, NCCL_PTR_HOST, &hmh) != ncclSuccess) FAIL("regMr");
  int got = transfer(sc, rc, sbuf, smh, hbuf, RCAP, hmh, 70000);
  flushOne(rc, hbuf, got, hmh, 0);
  net->deregMr(sc, smh);
  net->deregMr(rc, hmh);
  free(sbuf);
  free(hbuf);
  closeAll(sc, rc, lc);
}

/* The key names a registration without remote read: the flush read fails; test() reports it, at
 * once and on every later call, and the comm is failed, then closes cleanly. */
static void caseBadKey(void) {
  init(1);
  void *sc, *rc, *lc;
  connectPair(&sc, &rc, &lc);
  uint8_t* sbuf = malloc(RCAP);
  uint8_t* gbuf = malloc(RCAP);
  void *smh, *gmh;
  if (!sbuf || !gbuf) FAIL("malloc");
  if (net->regMr(sc, sbuf, RCAP, NCCL_PTR_HOST, &smh) != ncclSuccess) FAIL("regMr");
  if (net->regMr(rc, gbuf, RCAP, NCCL_PTR_CUDA, &gmh) != ncclSuccess) FAIL("regMr CUDA");
  int got = transfer(sc, rc, sbuf, smh, gbuf, RCAP, gmh, 12345);
  void* req = NULL;
  if (net->iflush(rc, 1, (void**)&gbuf, &got, &gmh, &req) != ncclSuccess || req == NULL) FAIL("iflush gave no request");
  int done = 0;
  ncclResult_t res = ncclSuccess;
  double end = nowSec() + 10;
  while (res == ncclSuccess && !done && nowSec() < end) res = net->test(req, &done, NULL);
  if (res == ncclSuccess) FAIL("the flush %s", done ? "completed without read access" : "still waits after 10 s");
  if (!strstr(logText, "flush read") || !strstr(logText, "remote access error")) FAIL("no WARN naming the failed flush read");
  if (stats().readErrors != 1 || stats().reads != 0) FAIL("the mock saw %llu failed and %llu good reads",
                                                       (unsigned long long)stats().readErrors, (unsigned long long)stats().reads);
  if (net->test(req, &done, NULL) != res || done) FAIL("testing the failed flush again did not fail");
  void* r2 = NULL;
  int tag = 3;
  size_t cap = RCAP;
  void* ph = NULL;
  if (net->irecv(rc, 1, (void**)&gbuf, &cap, &tag, &gmh, &ph, &r2) == ncclSuccess) FAIL("irecv on the failed comm");
  if (net->iflush(rc, 1, (void**)&gbuf, &got, &gmh, &r2) == ncclSuccess) FAIL("iflush on the failed comm");
  printf("flush error %d\n", (int)res);
  net->deregMr(sc, smh);
  net->deregMr(rc, gmh);
  free(sbuf);
  free(gbuf);
  closeAll(sc, rc, lc);
}

/* accept cannot make the flush QP or its buffer (the mock fails the third QP or registration of
 * the process: the sender's, the receiver's, then the flush's): accept fails with a WARN, the
 * waiting connect then fails too, and nothing is left. */
static void caseFailSetup(void) {
  init(1);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc = NULL, *sc = NULL, *rc = NULL;
  if (net->listen(ctx, 0, handle, &lc) != ncclSuccess) FAIL("listen");
  ncclResult_t ares = ncclSuccess, cres = ncclSuccess;
  double end = nowSec() + 20;
  while (ares == ncclSuccess && rc == NULL) {
    if (sc == NULL && cres == ncclSuccess) cres = net->connect(ctx, 0, handle, &sc, NULL);
    ares = net->accept(lc, &rc, NULL);
    if (nowSec() > end) FAIL("accept neither failed nor completed");
  }
  if (ares == ncclSuccess || rc != NULL) FAIL("accept succeeded without its flush QP");
  if (!strstr(logText, "ibv_create_qp") && !strstr(logText, "registering the flush buffer"))
    FAIL("no WARN naming what failed");
  while (cres == ncclSuccess && sc == NULL && nowSec() < end) cres = net->connect(ctx, 0, handle, &sc, NULL);
  if (cres == ncclSuccess) FAIL("connect did not fail after the receiver gave up");
  if (net->closeListen(lc) != ncclSuccess || net->finalize(ctx) != ncclSuccess) FAIL("close");
  mockVerbsStats s = stats();
  if (s.liveQps != 0 || s.liveMrs != 0) FAIL("after the failure: %d QPs and %d registrations left", s.liveQps, s.liveMrs);
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s <plugin.so> peermem|nogpu|dmabuf|noflush|badkey|failsetup\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) FAIL("dlopen: %s", dlerror());
  net = dlsym(lib, "ncclNetPlugin_v12");
  getStats = (mockVerbsGetStats_t)dlsym(lib, "mockVerbsGetStats");
  mrAt = (mockVerbsMrAt_t)dlsym(lib, "mockVerbsMrAt");
  if (net == NULL || getStats == NULL || mrAt == NULL) FAIL("%s is not the plugin's test copy over the verbs mock", argv[1]);
  const char* c = argv[2];
  if (!strcmp(c, "peermem")) caseGpu(1, 0, 1);
  else if (!strcmp(c, "dmabuf")) caseGpu(0, 1, 1);
  else if (!strcmp(c, "noflush")) caseGpu(1, 0, 0);
  else if (!strcmp(c, "nogpu")) caseNoGpu();
  else if (!strcmp(c, "badkey")) caseBadKey();
  else if (!strcmp(c, "failsetup")) caseFailSetup();
  else FAIL("unknown case %s", c);
  return 0;
}
