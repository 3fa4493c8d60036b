/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_ofi.c: drives libnccl-net-chorus-ofi.so through its exported tables, as a core would.
 *
 *   test_net_ofi <path/to/libnccl-net-chorus-ofi.so> <case> [version]
 *
 * Cases: probe (loads and inits only), sizes, cuda (GPU buffers, where the provider has FI_HMEM), bigrecv, fork, inflight, grouped, badtag, overflow, flush, kill_sender, kill_receiver,
 * strangers, badhandle, version (with 8..12), bw (prints bandwidth, not a test). Exit 0 = pass, 77 =
 * the provider cannot be opened here (skip, with the reason), anything else = fail with one line
 * saying what. The provider and domain come from the environment (FI_PROVIDER, CHORUS_OFI_DOMAIN).
 * What every net plugin of the tree must pass lives in plugins/net_common/tests/net_test_*.c; this
 * file holds the libfabric plugin's own checks and cases (skips, flush, tags, handles, CUDA).
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "net_test_harness.h"

/* ---------------------------------------------------------------- loading */

static void skipIfNoProvider(ncclResult_t r, int ndev) {
  if (r == ncclSuccess && ndev > 0) return;
  fprintf(stderr, "SKIP: the libfabric provider cannot be opened here (init returned %d, %d devices; "
          "FI_PROVIDER=\"%s\", CHORUS_OFI_DOMAIN=\"%s\")%s%s\n", (int)r, ndev, getenv("FI_PROVIDER") ?: "",
          getenv("CHORUS_OFI_DOMAIN") ?: "", gLastWarn[0] ? ": " : "", gLastWarn);
  exit(NT_SKIP_CODE);
}

static int gMaxRecvs, gPtrSupport, gForceFlush;

/* What any provider must report; what it may choose (maxRecvs, CUDA, flush) is kept for the cases. */
static void checkProps(int ver, const ntProps* props) {
  switch (ver) {
    case 12: {
      const ncclNetProperties_v12_t* p = &props->v12;
      if (!(p->ptrSupport & NCCL_PTR_HOST) || p->vProps.ndevs != 1 || p->railId != -1 || p->name == NULL ||
          p->speed <= 0 || p->maxMultiRequestSize != 1 || p->maxComms < 1 || p->maxP2pBytes == 0 ||
          p->netDeviceType != NCCL_NET_DEVICE_HOST || p->latency < 0)
        FAIL("unexpected v12 properties");
      gMaxRecvs = p->maxRecvs, gPtrSupport = p->ptrSupport, gForceFlush = p->forceFlush;
      if (strcmp(n12->name, "OFI") != 0) FAIL("name %s", n12->name);
      break;
    }
    case 11: {
      const ncclNetProperties_v11_t* p = &props->v11;
      if (!(p->ptrSupport & NCCL_PTR_HOST) || p->maxMultiRequestSize != 1) FAIL("bad v11 props");
      gMaxRecvs = p->maxRecvs;
      break;
    }
    case 10:
      if (!(props->v10.ptrSupport & NCCL_PTR_HOST) || props->v10.vProps.ndevs != 1) FAIL("bad v10 props");
      gMaxRecvs = props->v10.maxRecvs;
      break;
    case 9:
      if (!(props->v9.ptrSupport & NCCL_PTR_HOST)) FAIL("bad v9 props");
      gMaxRecvs = props->v9.maxRecvs;
      break;
    default:
      if (!(props->v8.ptrSupport & NCCL_PTR_HOST)) FAIL("bad v8 props");
      gMaxRecvs = props->v8.maxRecvs;
  }
  if (gMaxRecvs < 1 || gMaxRecvs > 8) FAIL("maxRecvs %d", gMaxRecvs);
}

/* ---------------------------------------------------------------- the libfabric plugin's own cases */

/* recvSeries' hook for the flush case: each completed receive is flushed (iflush) before its bytes
 * are looked at; with forceFlush a non-empty one must give a request. */
static void flushReceived(void* comm, void* buf, size_t sz, int got, void* mh) {
  void* data = buf;
  int isz = got;
  void* freq = NULL;
  OK(n12->iflush(comm, 1, &data, &isz, &mh, &freq));
  if (sz > 0 && gForceFlush && freq == NULL) FAIL("iflush of %zu bytes gave no request with forceFlush", sz);
  if (sz == 0 && freq != NULL) FAIL("iflush of 0 bytes gave a request");
  if (freq != NULL) OK(waitReq(freq, NULL, 10));
}

/* Grouped receives of 4, 8, 1 and 3 buffers (maxRecvs must be 8 here). */
static void caseGrouped(void) {
  static const int groupN[] = {4, 8, 1, 3};
  if (gMaxRecvs < 8) FAIL("maxRecvs is %d, this case needs 8", gMaxRecvs);
  caseGroupedRecv(groupN, 4);
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
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
  OK(xDeregMr(rc, mh[0])); /* registrations belong to the domain: released after the comms too */
  OK(xDeregMr(rc, mh[1]));
  OK(xDeregMr(sc, smh));
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
  ntAcceptOnlyRealPeer(lc, handle, 50, "a connect message with the wrong nonce");
  OK(xClose(NT_CLOSE_SEND, s.sendComm));
  OK(xClose(NT_CLOSE_LISTEN, lc));
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
  OK(xClose(NT_CLOSE_LISTEN, lc));
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
    exit(NT_SKIP_CODE);
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
    exit(NT_SKIP_CODE);
  }
  if (cu.primaryCtxRetain(&ctx, dev) != 0 || cu.ctxSetCurrent(ctx) != 0) FAIL("no CUDA context on GPU 0");
}

/* GPU buffer to GPU buffer through the plugin (regMr NCCL_PTR_CUDA), each receive flushed (iflush
 * must give a request for CUDA memory), bytes checked after a copy back to the host. */
static void caseCuda(void) {
  cudaOrSkip();
  if (!(gPtrSupport & NCCL_PTR_CUDA)) {
    fprintf(stderr, "SKIP: the provider offers no FI_HMEM here (ptrSupport 0x%x)\n", gPtrSupport);
    exit(NT_SKIP_CODE);
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
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}

int main(int argc, char** argv) {
  const ntLoadSpec spec = {.internalSym = "ofiProgress", .profCb = NULL, .onInit = skipIfNoProvider, .checkProps = checkProps};
  int ver;
  const char* c = ntStart(argc, argv, &spec, &ver);
  gRegisterBuffers = 1; /* the provider may need registered memory (FI_MR_LOCAL) */
  /* The endpoint probes its peers: an error within 10 s of the kill; a forked child opens its own. */
  static const ntKillSpec killSpec = {.bytes = 64u << 20, .killAfter = 0.2, .giveUp = 15, .maxError = 10, .childListens = 1};
  if (strcmp(c, "probe") == 0) return 0; /* the provider opens (else ntLoad exited 77) */
  else if (ntRunSharedCase(c)) {
  } else if (strcmp(c, "flush") == 0) {
    if (ver != 12) FAIL("flush runs on the v12 table");
    if (getenv("CHORUS_OFI_FORCE_FLUSH") && !gForceFlush) {
      fprintf(stderr, "SKIP: the provider offers no FI_RMA, so there is no read-back flush to test\n");
      return NT_SKIP_CODE;
    }
    caseSizes(0, kSizes, NSIZES, flushReceived);
  } else if (strcmp(c, "cuda") == 0) {
    if (ver != 12) FAIL("cuda runs on the v12 table");
    caseCuda();
  } else if (strcmp(c, "grouped") == 0) caseGrouped();
  else if (strcmp(c, "badtag") == 0) caseBadTag();
  else if (strcmp(c, "overflow") == 0) caseOverflow(1000000, "longer than the posted receive"); /* large: rendezvous */
  else if (strcmp(c, "kill_sender") == 0) caseKill(1, &killSpec);
  else if (strcmp(c, "kill_receiver") == 0) caseKill(0, &killSpec);
  else if (strcmp(c, "strangers") == 0) caseStrangers();
  else if (strcmp(c, "badhandle") == 0) caseBadHandle();
  else if (strcmp(c, "bw") == 0) {
    char settings[128];
    snprintf(settings, sizeof(settings), "FI_PROVIDER=%s", getenv("FI_PROVIDER") ?: "unset");
    caseBandwidth(settings);
  } else FAIL("unknown case %s", c);
  ntFinalize();
  return 0;
}
