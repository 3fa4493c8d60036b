/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_test_cases.c: the cases every net plugin of this tree must pass, driven through the harness's
 * version-independent wrappers (net_test_harness.h). Buffers are registered when gRegisterBuffers.
 */
#include "net_test_harness.h"

#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

const size_t kSizes[] = {0, 1, 7, 4093, 1 << 20, 64 << 20, 0, 16384, 16385, 65537, 3 << 20};
const int NSIZES = (int)(sizeof(kSizes) / sizeof(kSizes[0]));

static void* xmalloc(size_t n) {
  void* p = malloc(n ? n : 1);
  if (p == NULL) FAIL("out of memory for %zu bytes", n);
  return p;
}

/* ---------------------------------------------------------------- transfers */

void* sendSeries(void* arg) {
  xferArg* a = arg;
  for (int i = 0; i < a->n; i++) {
    size_t sz = a->sizes[i];
    unsigned char* buf = xmalloc(sz);
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

void recvSeries(void* comm, const size_t* sizes, int n, uint64_t seed, size_t extra, ntAfterRecv after) {
  for (int i = 0; i < n; i++) {
    size_t sz = sizes[i];
    unsigned char* buf = xmalloc(sz + extra + 1);
    memset(buf, 0xAB, sz + extra + 1);
    void* mh = NULL;
    OK(xRegMr(comm, buf, sz + extra, &mh));
    void* req = NULL;
    while (req == NULL) OK(xIrecv(comm, buf, sz + extra, mh, &req));
    int got = -1;
    OK(waitReq(req, &got, 30));
    if ((size_t)got != sz) FAIL("size %zu: test reported %d bytes", sz, got);
    if (after) after(comm, buf, sz, got, mh);
    char what[64];
    snprintf(what, sizeof(what), "message %d (%zu bytes)", i, sz);
    checkData(buf, sz, seed + i, what);
    for (size_t k = sz; k < sz + extra + 1; k++)
      if (buf[k] != 0xAB) FAIL("size %zu: byte %zu past the message was written", sz, k);
    OK(xDeregMr(comm, mh));
    free(buf);
  }
}

/* ---------------------------------------------------------------- cases */

void caseSizes(size_t extra, const size_t* sizes, int n, ntAfterRecv after) {
  void *sc, *rc;
  connectPair(&sc, &rc);
  xferArg a = {sc, sizes, n, 42};
  pthread_t t;
  if (pthread_create(&t, NULL, sendSeries, &a) != 0) FAIL("pthread_create");
  recvSeries(rc, sizes, n, 42, extra, after);
  pthread_join(t, NULL);
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}

static void* recvSeriesThread(void* arg) {
  xferArg* a = arg;
  recvSeries(a->comm, a->sizes, a->n, a->seed, 0, NULL);
  return NULL;
}

/* Several connections of one process, each end driven by a thread of its own, all at once (NCCL
 * runs a proxy thread per communicator, so calls on different comms of one device come from
 * different threads): every byte checked. */
void caseThreads(void) {
  enum { PAIRS = 4 };
  static const size_t sizes[] = {0, 1, 7, 4093, 16385, 65537, 1 << 20, 3 << 20, 8 << 20, 12345};
  const int n = (int)(sizeof(sizes) / sizeof(sizes[0]));
  void *sc[PAIRS], *rc[PAIRS];
  for (int p = 0; p < PAIRS; p++) connectPair(&sc[p], &rc[p]);
  xferArg send[PAIRS], recv[PAIRS];
  pthread_t ts[PAIRS], tr[PAIRS];
  for (int p = 0; p < PAIRS; p++) {
    send[p] = (xferArg){sc[p], sizes, n, 1000u * (uint64_t)(p + 1)};
    recv[p] = send[p];
    recv[p].comm = rc[p];
    if (pthread_create(&tr[p], NULL, recvSeriesThread, &recv[p]) != 0 ||
        pthread_create(&ts[p], NULL, sendSeries, &send[p]) != 0)
      FAIL("pthread_create");
  }
  for (int p = 0; p < PAIRS; p++) {
    pthread_join(ts[p], NULL);
    pthread_join(tr[p], NULL);
  }
  for (int p = 0; p < PAIRS; p++) {
    OK(xClose(NT_CLOSE_SEND, sc[p]));
    OK(xClose(NT_CLOSE_RECV, rc[p]));
  }
}

/* Two processes: the parent listens and receives, the child connects and sends (a plugin with
 * per-process state must give the child its own). */
void caseFork(void) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(xListen(handle, &lc));
  pid_t pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    connArg a;
    memset(&a, 0, sizeof(a));
    memcpy(a.handle, handle, sizeof(handle));
    connectLoop(&a);
    xferArg x = {a.sendComm, kSizes, NSIZES, 7};
    sendSeries(&x);
    OK(xClose(NT_CLOSE_SEND, a.sendComm));
    _exit(0);
  }
  void* rc = acceptLoop(lc);
  recvSeries(rc, kSizes, NSIZES, 7, 0, NULL);
  int st = 0;
  waitpid(pid, &st, 0);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) FAIL("sender process failed (status 0x%x)", st);
  OK(xClose(NT_CLOSE_RECV, rc));
  OK(xClose(NT_CLOSE_LISTEN, lc));
}

/* 32 receives and 32 x 8 sends in flight at once on one connection (the ABI's limits); the request
 * after each limit is refused with a NULL request; completion in reverse order, since it must not
 * depend on the order of test() calls. */
void caseInflight(void) {
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
    sbuf[i] = xmalloc(sz[i] + 1);
    rbuf[i] = xmalloc(sz[i] + 1);
    fillRandom(sbuf[i], sz[i], 100 + i);
    smh[i] = ntReg(sc, sbuf[i], sz[i]);
    rmh[i] = ntReg(rc, rbuf[i], sz[i]);
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
  for (int base = NR; base < NS; base += NR) { /* the rest, 32 receives at a time */
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
    OK(ntDereg(sc, smh[i]));
    OK(ntDereg(rc, rmh[i]));
    free(sbuf[i]);
    free(rbuf[i]);
  }
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}

void caseGroupedRecv(const int* groupN, int ng) {
  enum { MAXG = 8, MAXB = 8 };
  if (ng < 1 || ng > MAXG) FAIL("%d groups: 1 to %d", ng, MAXG);
  for (int g = 0; g < ng; g++)
    if (groupN[g] < 1 || groupN[g] > MAXB) FAIL("group %d of %d buffers: 1 to %d", g, groupN[g], MAXB);
  void *sc, *rc;
  connectPair(&sc, &rc);
  unsigned char* rbuf[MAXG][MAXB];
  unsigned char* sbuf[MAXG][MAXB];
  void *rmh[MAXG][MAXB], *smh[MAXG][MAXB];
  size_t sent[MAXG][MAXB], posted[MAXG][MAXB];
  int tags[MAXG][MAXB];
  void* rreq[MAXG];
  for (int g = 0; g < ng; g++) {
    for (int i = 0; i < groupN[g]; i++) {
      sent[g][i] = (size_t)((g * 8 + i) * 70001 % 300000) + (i == 2 ? 0 : 1);
      if (g == 1 && i == 3) sent[g][i] = 0;
      posted[g][i] = sent[g][i] + (size_t)(i % 2) * 4096; /* some buffers larger than their message */
      tags[g][i] = 100 + g * 10 + i;
      rbuf[g][i] = xmalloc(posted[g][i] + 1);
      sbuf[g][i] = xmalloc(sent[g][i] + 1);
      memset(rbuf[g][i], 0xEE, posted[g][i] + 1);
      fillRandom(sbuf[g][i], sent[g][i], 1000 + g * 8 + i);
      rmh[g][i] = ntReg(rc, rbuf[g][i], posted[g][i]);
      smh[g][i] = ntReg(sc, sbuf[g][i], sent[g][i]);
    }
    OK(xIrecvN(rc, groupN[g], (void**)rbuf[g], posted[g], tags[g], rmh[g], &rreq[g]));
    if (rreq[g] == NULL) FAIL("grouped irecv %d (n %d) refused", g, groupN[g]);
  }
  /* Sends in a shuffled tag order within each group. */
  void* sreq[MAXG * MAXB];
  int ns = 0;
  for (int g = 0; g < ng; g++)
    for (int k = 0; k < groupN[g]; k++) {
      int i = (k * 5 + 3) % groupN[g];
      OK(xIsendTag(sc, sbuf[g][i], sent[g][i], tags[g][i], smh[g][i], &sreq[ns]));
      if (sreq[ns++] == NULL) FAIL("isend %d refused", ns - 1);
    }
  for (int g = ng - 1; g >= 0; g--) {
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
  for (int g = 0; g < ng; g++)
    for (int i = 0; i < groupN[g]; i++) {
      OK(ntDereg(rc, rmh[g][i]));
      OK(ntDereg(sc, smh[g][i]));
      free(rbuf[g][i]);
      free(sbuf[g][i]);
    }
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}

void caseOverflow(size_t bigSize, const char* warnText) {
  size_t sizes[2] = {bigSize, 10};
  for (int k = 0; k < 2; k++) { /* a large and a small (eager) message */
    void *sc, *rc;
    connectPair(&sc, &rc);
    size_t ssz = sizes[k], rsz = sizes[k] - 1;
    unsigned char* sbuf = calloc(1, ssz);
    unsigned char* rbuf = calloc(1, ssz);
    if (sbuf == NULL || rbuf == NULL) FAIL("out of memory");
    void* smh = ntReg(sc, sbuf, ssz);
    void* rmh = ntReg(rc, rbuf, rsz);
    void *sreq = NULL, *rreq = NULL;
    int before = atomic_load(&gWarns);
    OK(xIsend(sc, sbuf, ssz, smh, &sreq));
    OK(xIrecv(rc, rbuf, rsz, rmh, &rreq));
    if (sreq == NULL || rreq == NULL) FAIL("requests refused");
    int done = 0;
    ncclResult_t r = waitError(rreq, &done, 10);
    if (r != ncclSystemError) FAIL("send of %zu into a %zu-byte receive: test returned %d, done %d", ssz, rsz, r, done);
    if (atomic_load(&gWarns) == before) FAIL("the size error was not logged");
    if (warnText && strstr(gLastWarn, warnText) == NULL) FAIL("the WARN does not say what: %s", gLastWarn);
    /* Later calls keep failing, never crash. */
    void* again = NULL;
    if (xIrecv(rc, rbuf, rsz, rmh, &again) == ncclSuccess) FAIL("irecv on a failed comm succeeded");
    ntDereg(rc, rmh); /* the comm failed: its answer does not matter, only that it does not crash */
    OK(xClose(NT_CLOSE_RECV, rc));
    OK(xClose(NT_CLOSE_SEND, sc)); /* the send may still be in flight: close before freeing its buffer */
    ntDereg(sc, smh);
    free(sbuf);
    free(rbuf);
  }
}

/* The child's half of caseKill: moves `bytes` forever, until it is killed. */
static void killChild(int receive, const ntKillSpec* spec, char* handle, void* lc, int startedFd, int handleFd) {
  unsigned char* buf = xmalloc(spec->bytes);
  memset(buf, 1, spec->bytes);
  void* comm;
  if (receive) {
    if (spec->childListens) {
      OK(xListen(handle, &lc));
      if (write(handleFd, handle, NCCL_NET_HANDLE_MAXSIZE) != NCCL_NET_HANDLE_MAXSIZE) _exit(3);
    }
    comm = acceptLoop(lc);
  } else {
    connArg a;
    memset(&a, 0, sizeof(a));
    memcpy(a.handle, handle, sizeof(a.handle));
    connectLoop(&a);
    comm = a.sendComm;
  }
  void* mh = ntReg(comm, buf, spec->bytes);
  if (write(startedFd, "x", 1) != 1) _exit(3);
  for (;;) {
    void* req = NULL;
    while (req == NULL) OK(receive ? xIrecv(comm, buf, spec->bytes, mh, &req) : xIsend(comm, buf, spec->bytes, mh, &req));
    int done = 0;
    while (!done) OK(xTest(req, &done, NULL));
  }
}

void caseKill(int killSender, const ntKillSpec* spec) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  int started[2], handlePipe[2];
  if (pipe(started) != 0 || pipe(handlePipe) != 0) FAIL("pipe");
  int sendInParent = !killSender;
  /* The parent listens before the fork, unless the receiving child listens itself. */
  if (!(sendInParent && spec->childListens)) OK(xListen(handle, &lc));
  pid_t pid = fork();
  if (pid < 0) FAIL("fork");
  if (pid == 0) {
    close(started[0]);
    killChild(sendInParent, spec, handle, lc, started[1], handlePipe[1]);
    _exit(0);
  }
  close(started[1]);
  unsigned char* buf = xmalloc(spec->bytes);
  memset(buf, 2, spec->bytes);
  void* comm = NULL;
  if (sendInParent) {
    connArg a;
    memset(&a, 0, sizeof(a));
    if (!spec->childListens) memcpy(a.handle, handle, sizeof(handle));
    else if (read(handlePipe[0], a.handle, sizeof(a.handle)) != (ssize_t)sizeof(a.handle)) FAIL("no handle from the child");
    connectLoop(&a);
    comm = a.sendComm;
  } else {
    comm = acceptLoop(lc);
  }
  void* mh = ntReg(comm, buf, spec->bytes);
  char c;
  if (read(started[0], &c, 1) != 1) FAIL("child did not start");
  /* Keep transfers going; kill the peer after killAfter; the next error must come within maxError. */
  double t0 = nowSec(), tk = 0;
  int killed = 0;
  ncclResult_t r = ncclSuccess;
  while (r == ncclSuccess) {
    void* req = NULL;
    while (req == NULL && r == ncclSuccess)
      r = sendInParent ? xIsend(comm, buf, spec->bytes, mh, &req) : xIrecv(comm, buf, spec->bytes, mh, &req);
    int done = 0;
    while (r == ncclSuccess && !done) {
      r = xTest(req, &done, NULL);
      if (!killed && nowSec() - t0 > spec->killAfter) {
        kill(pid, SIGKILL);
        waitpid(pid, NULL, 0);
        killed = 1;
        tk = nowSec();
      }
      if (killed && nowSec() - tk > spec->giveUp) FAIL("test() still succeeds %.0f s after the peer was killed", spec->giveUp);
    }
  }
  if (!killed) FAIL("transfer failed (%d) before the peer was killed", r);
  if (r != ncclSystemError && r != ncclRemoteError) FAIL("test() returned %d, expected a system/remote error", r);
  if (nowSec() - tk > spec->maxError) FAIL("error took %.1f s", nowSec() - tk);
  OK(ntDereg(comm, mh));
  OK(xClose(sendInParent ? NT_CLOSE_SEND : NT_CLOSE_RECV, comm));
  if (lc) OK(xClose(NT_CLOSE_LISTEN, lc));
  close(started[0]);
  close(handlePipe[0]);
  close(handlePipe[1]);
  free(buf);
}

void ntAcceptOnlyRealPeer(void* lc, const char* handle, int polls, const char* strays) {
  void* rc = NULL;
  for (int i = 0; i < polls; i++) {
    OK(xAccept(lc, &rc));
    if (rc != NULL) FAIL("accept produced a comm from %s", strays);
    usleep(1000);
  }
  connArg a;
  memset(&a, 0, sizeof(a));
  memcpy(a.handle, handle, sizeof(a.handle));
  pthread_t t;
  if (pthread_create(&t, NULL, connectLoop, &a) != 0) FAIL("pthread_create");
  rc = acceptLoop(lc);
  pthread_join(t, NULL);
  xferArg x = {a.sendComm, kSizes, 6, 9};
  if (pthread_create(&t, NULL, sendSeries, &x) != 0) FAIL("pthread_create");
  recvSeries(rc, kSizes, 6, 9, 0, NULL);
  pthread_join(t, NULL);
  OK(xClose(NT_CLOSE_SEND, a.sendComm));
  OK(xClose(NT_CLOSE_RECV, rc));
}

int ntRunSharedCase(const char* c) {
  if (strcmp(c, "sizes") == 0) caseSizes(0, kSizes, NSIZES, NULL);
  else if (strcmp(c, "bigrecv") == 0) caseSizes(12345, kSizes, NSIZES, NULL);
  else if (strcmp(c, "fork") == 0) caseFork();
  else if (strcmp(c, "inflight") == 0) caseInflight();
  else if (strcmp(c, "threads") == 0) caseThreads();
  else if (strcmp(c, "version") == 0) { /* what every version's table must carry: small and medium sizes */
    static const size_t vs[] = {0, 1, 7, 4093, 1 << 20, 5 << 20};
    caseSizes(0, vs, 6, NULL);
    caseSizes(100, vs, 6, NULL);
  } else return 0;
  return 1;
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

void caseBandwidth(const char* settings) {
  const size_t size = 64u << 20;
  const int iters = 16;
  void *sc, *rc;
  connectPair(&sc, &rc);
  unsigned char* sbuf = xmalloc(size);
  unsigned char* rbuf = xmalloc(size);
  memset(sbuf, 3, size);
  memset(rbuf, 0, size);
  void* smh = ntReg(sc, sbuf, size);
  void* rmh = ntReg(rc, rbuf, size);
  for (int pass = 0; pass < 2; pass++) { /* the first pass warms up */
    int n = pass == 0 ? 2 : iters;
    bwArg b = {sc, sbuf, smh, size, n};
    pthread_t t;
    double t0 = nowSec();
    if (pthread_create(&t, NULL, bwSender, &b) != 0) FAIL("pthread_create");
    void* req[NCCL_NET_MAX_REQUESTS];
    for (int i = 0; i < n; i++) {
      req[i] = NULL;
      while (req[i] == NULL) OK(xIrecv(rc, rbuf, size, rmh, &req[i]));
    }
    for (int i = 0; i < n; i++) OK(waitReq(req[i], NULL, 60));
    pthread_join(t, NULL);
    double dt = nowSec() - t0;
    if (pass == 1)
      printf("bw: %d x %zu MiB in %.3f s = %.2f GB/s (%s)\n", n, size >> 20, dt, (double)n * size / dt / 1e9, settings);
  }
  OK(ntDereg(sc, smh));
  OK(ntDereg(rc, rmh));
  free(sbuf);
  free(rbuf);
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}
