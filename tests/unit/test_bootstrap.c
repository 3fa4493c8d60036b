/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_bootstrap.c: the bootstrap (core/bootstrap) with real processes on loopback: ranks that
 * should succeed (rendezvous at several sizes, concurrent roots, p2p, p2p failures). Bad clients:
 * test_bootstrap_bad.c; the harness both use: bootstrap_kids.c.
 *
 * usage: test_bootstrap <scenario>. Each scenario forks child processes that play ranks (or bad
 * clients); each child checks its own outcome (results, error texts, timing) and exits with 0 when it
 * saw what it should. The parent checks the exit statuses and kills children that outlive its own
 * deadline. The environment (from test_bootstrap.cmake) sets CHORUS_BOOTSTRAP_TIMEOUT=3,
 * CHORUS_TIMEOUT=5 (both times CHORUS_TEST_TIME_SCALE), NCCL_SOCKET_IFNAME=lo; scenarios that need
 * other values setenv them in the child and reload the config there.
 *
 * Timing: every window this test allows for scheduling (how long a failure may take, how long the
 * parent waits) is multiplied by CHORUS_TEST_TIME_SCALE (1 normally, more in slow builds such as the
 * sanitizer one). The order in which children reach the root is set by when the parent starts them
 * (see "children bookkeeping"), not by sleeps.
 */
#include "bootstrap_kids.h"

/* rendezvous for 1, 2, 3, 4, 8 ranks, with a root thread in the parent and with NCCL_COMM_ID. */
static void scenarioRendezvous(int onlyCommId) {
  int sizes[] = {1, 2, 3, 4, 8};
  int fds0 = countFds();
  /* One NCCL_COMM_ID for every round, as a job that makes several communicators would: each round's
   * rank 0 binds the port the previous round's root just released. */
  char commId[64];
  snprintf(commId, sizeof(commId), "127.0.0.1:%d", freePort());
  for (int withCommId = onlyCommId; withCommId < 2; withCommId++) {
    for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
      struct rankArg a;
      memset(&a, 0, sizeof(a));
      a.nranks = sizes[s];
      a.commId = withCommId ? commId : NULL;
      a.useId = !withCommId;
      /* Start the ranks in reverse so that rank 0 (the root, with NCCL_COMM_ID) comes last. */
      for (int i = 0; i < a.nranks; i++) a.rankOf[i] = a.nranks - 1 - i;
      struct kids k = {.n = 0};
      for (int i = 0; i < a.nranks; i++) spawn(&k, rankChild, &a, withCommId ? NULL : &a.id);
      if (!withCommId && chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
        fprintf(stderr, "GetUniqueId failed: %s\n", chrThreadLastError());
        failures++;
        reap(&k);
        return;
      }
      startAll(&k, &a.id);
      reap(&k);
      for (int i = 0; i < a.nranks; i++) expectStatus(withCommId ? "rendezvous(NCCL_COMM_ID)" : "rendezvous", &k, i, OK);
    }
  }
  /* Every root thread of this process has finished and closed its sockets. */
  int fds1 = fdsSettle(fds0, (int)scaled(3000));
  if (fds1 != fds0) {
    fprintf(stderr, "rendezvous: parent has %d fds, %d before (root threads leaked sockets?)\n", fds1, fds0);
    failures++;
  }
}

/* Two ids at once: their roots run side by side in this process; the ids differ. */
static void scenarioConcurrentRoots(void) {
  struct rankArg a, b;
  memset(&a, 0, sizeof(a));
  memset(&b, 0, sizeof(b));
  a.useId = b.useId = 1;
  a.nranks = 3;
  b.nranks = 4;
  struct kids k = {.n = 0};
  /* rankOf is per child index, so fill both tables for every index. */
  for (int i = 0; i < 7; i++) {
    a.rankOf[i] = i;
    b.rankOf[i] = i - 3;
  }
  for (int i = 0; i < 3; i++) spawn(&k, rankChild, &a, &a.id);
  for (int i = 3; i < 7; i++) spawn(&k, rankChild, &b, &b.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess || chrBootstrapGetUniqueId(&b.id) != ncclSuccess) {
    fprintf(stderr, "GetUniqueId failed\n");
    failures++;
    reap(&k);
    return;
  }
  if (memcmp(&a.id, &b.id, sizeof(a.id)) == 0) {
    fprintf(stderr, "two unique ids are equal\n");
    failures++;
  }
  /* Interleave the two groups. */
  for (int i = 0; i < 4; i++) {
    if (i < 3) startKid(&k, i, &a.id);
    startKid(&k, 3 + i, &b.id);
  }
  reap(&k);
  for (int i = 0; i < 7; i++) expectStatus("concurrent_roots", &k, i, OK);
}

/* ---- p2p ---- */

#define MIB (1 << 20)

struct pairArg {
  struct chrBootstrap* bs;
  int peer;
  ncclResult_t res;
};
static void* threadRecvMany(void* p) {
  struct pairArg* a = p;
  char* buf = malloc(4096);
  for (int i = 0; i < 50 && a->res == ncclSuccess; i++) {
    a->res = chrBootstrapRecv(a->bs, a->peer, 1000 + i, buf, 4096);
    if (a->res == ncclSuccess && !checkPattern(buf, 4096, 900000 + (uint64_t)a->peer * 1000 + i)) a->res = ncclInternalError;
  }
  free(buf);
  return NULL;
}

static void p2pChild(int idx, void* p) {
  struct rankArg* a = p;
  int rank = a->rankOf[idx], n = a->nranks;
  childEnv(NULL, NULL);
  struct chrBootstrap* bs = NULL;
  int fds0 = countFds();
  if (chrBootstrapInit(&a->id, rank, n, NULL, 0, NULL, NULL, &bs) != ncclSuccess) CFAIL(E_INIT, "init");
  char* big = malloc(MIB);
  char* got = malloc(MIB);
  char one = 0x5a, oneIn = 0;
  if (rank == 0 || rank == 1) {
    int peer = 1 - rank;
    /* Both send first (1 MiB, more than socket buffers), then receive: must not deadlock. */
    fillPattern(big, MIB, 100 + (uint64_t)rank);
    if (chrBootstrapSend(bs, peer, 9, big, MIB) != ncclSuccess) CFAIL(E_P2P, "send 1MiB");
    if (chrBootstrapSend(bs, peer, 7, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send 1");
    if (chrBootstrapSend(bs, peer, 5, NULL, 0) != ncclSuccess) CFAIL(E_P2P, "send 0");
    if (chrBootstrapSend(bs, peer, 11, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send 1 (tag 11)");
    /* Received in another order than sent. */
    if (chrBootstrapRecv(bs, peer, 5, NULL, 0) != ncclSuccess) CFAIL(E_P2P, "recv 0");
    if (chrBootstrapRecv(bs, peer, 7, &oneIn, 1) != ncclSuccess || oneIn != one) CFAIL(E_P2P, "recv 1");
    if (chrBootstrapRecv(bs, peer, 9, got, MIB) != ncclSuccess) CFAIL(E_P2P, "recv 1MiB");
    if (!checkPattern(got, MIB, 100 + (uint64_t)peer)) CFAIL(E_DATA, "1 MiB payload wrong");
    /* Wrong size: an error that says so. */
    if (chrBootstrapRecv(bs, peer, 11, got, 2) != ncclInvalidUsage) CFAIL(E_P2P, "wrong-size recv not refused");
    if (!strstr(chrThreadLastError(), "expected 2 bytes")) CFAIL(E_TEXT, "wrong-size text");
  }
  /* Self messages. */
  if (chrBootstrapSend(bs, rank, 3, &one, 1) != ncclSuccess) CFAIL(E_P2P, "send self");
  if (chrBootstrapRecv(bs, rank, 3, &oneIn, 1) != ncclSuccess || oneIn != one) CFAIL(E_P2P, "recv self");
  /* One thread receives from the previous rank while the main thread sends to the next. */
  int next = (rank + 1) % n, prev = (rank - 1 + n) % n;
  struct pairArg ra = {bs, prev, ncclSuccess};
  pthread_t t;
  pthread_create(&t, NULL, threadRecvMany, &ra);
  for (int i = 0; i < 50; i++) {
    fillPattern(big, 4096, 900000 + (uint64_t)rank * 1000 + i);
    if (chrBootstrapSend(bs, next, 1000 + i, big, 4096) != ncclSuccess) CFAIL(E_P2P, "threaded send %d", i);
  }
  pthread_join(t, NULL);
  if (ra.res != ncclSuccess) CFAIL(E_P2P, "threaded recv");
  if (chrBootstrapBarrier(bs) != ncclSuccess) CFAIL(E_P2P, "barrier");
  chrBootstrapClose(bs);
  free(big);
  free(got);
  if (countFds() != fds0) CFAIL(E_FD, "fds leaked: %d -> %d", fds0, countFds());
}

static void scenarioP2p(void) {
  struct rankArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  for (int i = 0; i < 3; i++) a.rankOf[i] = i;
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, p2pChild, &a, &a.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
    failures++;
    reap(&k);
    return;
  }
  startAll(&k, &a.id);
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("p2p", &k, i, OK);
}

/* p2p failures: a peer that closes, a peer that never sends (timeout), the abort flag. */
static volatile uint32_t gAbort = 0;
static void* setAbortLater(void* p) {
  usleep(300000);
  __atomic_store_n(&gAbort, 1, __ATOMIC_RELEASE);
  return NULL;
}

static void p2pFailChild(int idx, void* p) {
  struct rankArg* a = p;
  int rank = a->rankOf[idx];
  childEnv(NULL, NULL);
  /* Rank 2 waits for rank 0 without a deadline (it must outlive rank 0's own 2 s wait for it). */
  setenv("CHORUS_TIMEOUT", rank == 2 ? "0" : "2", 1);
  chrConfigReload();
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&a->id, rank, 3, NULL, 0, NULL, &gAbort, &bs) != ncclSuccess) CFAIL(E_INIT, "init");
  char c = 1;
  if (rank == 1) {
    /* Say hello to rank 0 (so it knows this connection), then leave. */
    if (chrBootstrapSend(bs, 0, 1, &c, 1) != ncclSuccess) CFAIL(E_P2P, "send");
    chrBootstrapClose(bs);
    return;
  }
  if (rank == 0) {
    if (chrBootstrapRecv(bs, 1, 1, &c, 1) != ncclSuccess) CFAIL(E_P2P, "recv");
    double t0 = nowSec();
    if (chrBootstrapRecv(bs, 1, 2, &c, 1) != ncclRemoteError) CFAIL(E_P2P, "recv from a closed rank did not fail");
    /* Seen either way: its connection to us closed, or nobody listens at its address any more. */
    if (!strstr(chrThreadLastError(), "rank 1 closed its connection") && !strstr(chrThreadLastError(), "rank 1 is gone"))
      CFAIL(E_TEXT, "closed text");
    if (nowSec() - t0 > scaled(1.5)) CFAIL(E_TIME, "closed peer noticed after %.1f s", nowSec() - t0);
    /* Rank 2 never sends: the timeout, with who and what. */
    t0 = nowSec();
    if (chrBootstrapRecv(bs, 2, 4, &c, 1) != ncclTimeout) CFAIL(E_P2P, "recv did not time out");
    double dt = nowSec() - t0;
    if (dt < 1.8 || dt > 2 + scaled(2)) CFAIL(E_TIME, "timeout after %.1f s, expected 2", dt);
    if (!strstr(chrThreadLastError(), "waiting for rank 2 (tag 4")) CFAIL(E_TEXT, "timeout text");
    /* Abort: a blocked receive returns soon after the flag is set. */
    pthread_t t;
    pthread_create(&t, NULL, setAbortLater, NULL);
    t0 = nowSec();
    if (chrBootstrapRecv(bs, 2, 5, &c, 1) != ncclInternalError) CFAIL(E_P2P, "abort did not stop recv");
    if (nowSec() - t0 > scaled(1.0)) CFAIL(E_TIME, "abort noticed after %.1f s", nowSec() - t0);
    pthread_join(t, NULL);
    if (chrBootstrapSend(bs, 2, 6, &c, 1) != ncclInternalError) CFAIL(E_P2P, "send after abort");
    if (chrBootstrapSend(bs, 7, 6, &c, 1) != ncclInvalidArgument) CFAIL(E_P2P, "peer out of range");
    /* Tell rank 2 we are done (abort set: use a raw close instead). */
    chrBootstrapClose(bs);
    return;
  }
  /* rank 2: wait until rank 0 goes away (its close), then leave. */
  if (chrBootstrapRecv(bs, 0, 99, &c, 1) == ncclSuccess) CFAIL(E_P2P, "unexpected message");
  chrBootstrapClose(bs);
}

static void scenarioP2pFailures(void) {
  struct rankArg a;
  memset(&a, 0, sizeof(a));
  for (int i = 0; i < 3; i++) a.rankOf[i] = i;
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, p2pFailChild, &a, &a.id);
  if (chrBootstrapGetUniqueId(&a.id) != ncclSuccess) {
    failures++;
    reap(&k);
    return;
  }
  startAll(&k, &a.id);
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("p2p_failures", &k, i, OK);
}

int main(int argc, char** argv) {
  const char* s = argc > 1 ? argv[1] : "rendezvous";
  const char* scale = getenv("CHORUS_TEST_TIME_SCALE");
  if (scale != NULL && atoi(scale) > 1) gScale = atoi(scale);
  gBaseThreads = threadCount();
  if (!strcmp(s, "rendezvous")) scenarioRendezvous(0);
  /* Only the NCCL_COMM_ID half: no root thread in the parent, so every child's heap is its own
   * (handy under valgrind --trace-children, where inherited root state would look leaked). */
  else if (!strcmp(s, "rendezvous_commid")) scenarioRendezvous(1);
  else if (!strcmp(s, "concurrent_roots")) scenarioConcurrentRoots();
  else if (!strcmp(s, "p2p")) scenarioP2p();
  else if (!strcmp(s, "p2p_failures")) scenarioP2pFailures();
  else {
    fprintf(stderr, "unknown scenario %s\n", s);
    return 2;
  }
  if (failures) fprintf(stderr, "test_bootstrap %s: %d failures\n", s, failures);
  return failures ? 1 : 0;
}
