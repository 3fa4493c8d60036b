/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_socket.c: drives libnccl-net-socket.so through its exported tables, as a core would.
 *
 *   test_net_socket <path/to/libnccl-net-socket.so> <case> [version]
 *
 * Cases: sizes, fork, inflight, runthenbig, grouped, bigrecv, overflow, kill_sender, kill_receiver, garbage, version (with
 * 8..12), bw (prints bandwidth, not a test). Exit 0 = pass; failures print one line saying what.
 * Settings (NCCL_SOCKET_NTHREADS etc.) come from the environment, set by ctest.
 * What every net plugin of the tree must pass lives in plugins/net_common/tests/net_test_*.c; this
 * file holds the socket plugin's own cases (its profiler events, pipelined runs, raw strangers).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "net_test_harness.h"

/* Profiler callback: counts events and checks the socket descriptor (type 1, pluginId SOCK|v1). */
static atomic_int gProfStarts, gProfStops, gProfBad;
static ncclResult_t profCb(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  const struct {
    uint8_t type;
    struct {
      int fd;
      int op;
      size_t length;
    } sock;
  }* ev = extData;
  if (pHandle != &gProfToken || pluginId != ((2 << 16) | 1) || ev == NULL || ev->type != 1 || ev->sock.fd < 0 ||
      (ev->sock.op != 0 && ev->sock.op != 1))
    atomic_fetch_add(&gProfBad, 1);
  if (type == 0) {
    atomic_fetch_add(&gProfStarts, 1);
    *eHandle = &gProfToken;
  } else if (type == 1) {
    if (*eHandle != &gProfToken) atomic_fetch_add(&gProfBad, 1);
    atomic_fetch_add(&gProfStops, 1);
  }
  return ncclSuccess;
}

/* What the socket plugin reports in each version: host memory only, 8 receives per irecv, one device. */
static void checkProps(int ver, const ntProps* props) {
  switch (ver) {
    case 12: {
      const ncclNetProperties_v12_t* p = &props->v12;
      if (p->ptrSupport != NCCL_PTR_HOST || p->maxRecvs != 8 || p->vProps.ndevs != 1 || p->railId != -1 ||
          p->maxP2pBytes != NCCL_MAX_NET_SIZE_BYTES || p->name == NULL || p->speed <= 0 || p->maxMultiRequestSize != 1)
        FAIL("unexpected v12 properties");
      break;
    }
    case 11: {
      const ncclNetProperties_v11_t* p = &props->v11;
      if (p->ptrSupport != NCCL_PTR_HOST || p->maxRecvs != 8 || p->maxMultiRequestSize != 1) FAIL("bad v11 props");
      break;
    }
    case 10:
      if (props->v10.ptrSupport != NCCL_PTR_HOST || props->v10.vProps.ndevs != 1) FAIL("bad v10 props");
      break;
    case 9:
      if (props->v9.ptrSupport != NCCL_PTR_HOST) FAIL("bad v9 props");
      break;
    default:
      if (props->v8.ptrSupport != NCCL_PTR_HOST || props->v8.maxRecvs != 8) FAIL("bad v8 props");
  }
}

/* ---------------------------------------------------------------- the socket plugin's own cases */

/* Pipelined traffic as NCCL's proxy makes it: a long run of eager messages (no data-socket pieces),
 * then large ones that need every socket, 32 in flight each way. Regression: helper threads that
 * had no piece in the run were never woken, fell more than a request ring behind, and then read
 * reused request slots (wrong data from 2 MB up, then a hang, at NCCL_SOCKET_NTHREADS > 0). */
static void caseRunThenBig(void) {
  enum { NTINY = 48, NBIG = 24, N = NTINY + NBIG, DEPTH = NCCL_NET_MAX_REQUESTS };
  void *sc, *rc;
  connectPair(&sc, &rc);
  size_t sz[N];
  unsigned char* sbuf[N];
  unsigned char* rbuf[N];
  for (int i = 0; i < N; i++) {
    sz[i] = i < NTINY ? (size_t)(i * 37 % 2000) : (size_t)(524288 + i * 4099);
    sbuf[i] = malloc(sz[i] + 1);
    rbuf[i] = malloc(sz[i] + 1);
    fillRandom(sbuf[i], sz[i], 500 + i);
    memset(rbuf[i], 0, sz[i] + 1);
  }
  void *sreq[N], *rreq[N];
  int sPosted = 0, rPosted = 0, sDone = 0, rDone = 0;
  double end = nowSec() + 30;
  while (sDone < N || rDone < N) {
    while (sPosted < N && sPosted - sDone < DEPTH) {
      OK(xIsend(sc, sbuf[sPosted], sz[sPosted], NULL, &sreq[sPosted]));
      if (sreq[sPosted] == NULL) break;
      sPosted++;
    }
    while (rPosted < N && rPosted - rDone < DEPTH) {
      OK(xIrecv(rc, rbuf[rPosted], sz[rPosted] + 1, NULL, &rreq[rPosted]));
      if (rreq[rPosted] == NULL) break;
      rPosted++;
    }
    int done = 0, got = -1;
    if (sDone < sPosted) {
      OK(xTest(sreq[sDone], &done, NULL));
      if (done) sDone++;
    }
    if (rDone < rPosted) {
      OK(xTest(rreq[rDone], &done, &got));
      if (done) {
        if ((size_t)got != sz[rDone]) FAIL("message %d: test reported %d bytes, %zu sent", rDone, got, sz[rDone]);
        char what[64];
        snprintf(what, sizeof(what), "message %d (%zu bytes)", rDone, sz[rDone]);
        checkData(rbuf[rDone], sz[rDone], 500 + rDone, what);
        rDone++;
      }
    }
    if (nowSec() > end) FAIL("stuck: %d of %d sends and %d of %d receives done", sDone, N, rDone, N);
  }
  for (int i = 0; i < N; i++) {
    free(sbuf[i]);
    free(rbuf[i]);
  }
  OK(xClose(NT_CLOSE_SEND, sc));
  OK(xClose(NT_CLOSE_RECV, rc));
}

/* Grouped receives (maxRecvs = 8): each send lands in the buffer posted with its tag, whatever the
 * order of the sends; a tag no buffer expects fails the comm. */
static void caseGrouped(void) {
  static const int groupN[] = {4, 8, 1};
  caseGroupedRecv(groupN, 3);

  /* A send whose tag no buffer of the oldest grouped receive expects is an error, not a guess. */
  void *sc, *rc;
  connectPair(&sc, &rc);
  char a[16], b[16], c[16];
  void* bufs[2] = {a, b};
  size_t sz2[2] = {sizeof(a), sizeof(b)};
  int tg[2] = {1, 2};
  void *req, *sreq1;
  OK(xIrecvN(rc, 2, bufs, sz2, tg, NULL, &req));
  OK(xIsendTag(sc, c, sizeof(c), 3, NULL, &sreq1));
  int done = 0;
  ncclResult_t res = waitError(req, &done, 10);
  if (res == ncclSuccess) FAIL("a send with an unexpected tag was %s", done ? "accepted" : "never reported");
  xClose(NT_CLOSE_SEND, sc);
  xClose(NT_CLOSE_RECV, rc);
}

/* Stray connections to the listen port before the real one must be ignored. */
static void caseGarbage(void) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(xListen(handle, &lc));
  /* The handle starts with magic(8) nonce(8) then the sockaddr; we only need the port. */
  struct sockaddr_in sin;
  memcpy(&sin, handle + 16, sizeof(sin));
  if (sin.sin_family != AF_INET) FAIL("expected an IPv4 listen address in this test");
  int fds[6];
  for (int i = 0; i < 6; i++) {
    fds[i] = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(fds[i], (struct sockaddr*)&sin, sizeof(sin)) != 0) FAIL("raw connect: %s", strerror(errno));
  }
  unsigned char junk[64];
  fillRandom(junk, sizeof(junk), 5);
  if (write(fds[0], junk, sizeof(junk)) < 0) FAIL("write");             /* random bytes */
  unsigned char hello[24];
  memset(hello, 0, sizeof(hello));
  memcpy(hello, handle, 8); /* right-looking magic? No: handle magic != hello magic */
  if (write(fds[1], hello, sizeof(hello)) < 0) FAIL("write");
  if (write(fds[2], junk, 3) < 0) FAIL("write");                        /* partial, stays open */
  close(fds[3]);                                                         /* connect and leave */
  fds[3] = -1;
  /* fds[4]: says nothing. fds[5]: a copy of a real-looking hello with the right nonce but a bad index,
   * built from what an attacker can see on the wire would need the nonce; use a wrong one. */
  memcpy(hello + 8, junk, 8);
  if (write(fds[5], hello, sizeof(hello)) < 0) FAIL("write");
  ntAcceptOnlyRealPeer(lc, handle, 20, "garbage");
  for (int i = 0; i < 6; i++)
    if (fds[i] >= 0) close(fds[i]);
  OK(xClose(NT_CLOSE_LISTEN, lc));
}

int main(int argc, char** argv) {
  const ntLoadSpec spec = {.internalSym = "chrSockProgress", .profCb = profCb, .onInit = NULL, .checkProps = checkProps};
  int ver;
  const char* c = ntStart(argc, argv, &spec, &ver);
  static const ntKillSpec killSpec = {.bytes = 256u << 20, .killAfter = 0.05, .giveUp = 10, .maxError = 5, .childListens = 0};
  if (ntRunSharedCase(c)) {
  } else if (strcmp(c, "runthenbig") == 0) caseRunThenBig();
  else if (strcmp(c, "grouped") == 0) caseGrouped();
  else if (strcmp(c, "overflow") == 0) caseOverflow(100000, NULL); /* large: through the data sockets */
  else if (strcmp(c, "kill_sender") == 0) caseKill(1, &killSpec);
  else if (strcmp(c, "kill_receiver") == 0) caseKill(0, &killSpec);
  else if (strcmp(c, "garbage") == 0) caseGarbage();
  else if (strcmp(c, "bw") == 0) {
    char settings[128];
    snprintf(settings, sizeof(settings), "NCCL_SOCKET_NTHREADS=%s NCCL_NSOCKS_PERTHREAD=%s",
             getenv("NCCL_SOCKET_NTHREADS") ?: "unset", getenv("NCCL_NSOCKS_PERTHREAD") ?: "unset");
    caseBandwidth(settings);
  } else FAIL("unknown case %s", c);
  if (strcmp(c, "sizes") == 0 || strcmp(c, "version") == 0) { /* every request reported one event */
    int starts = atomic_load(&gProfStarts), stops = atomic_load(&gProfStops);
    if (atomic_load(&gProfBad) != 0) FAIL("%d malformed profiler events", atomic_load(&gProfBad));
    if (ver >= 10 && (starts == 0 || starts != stops)) FAIL("profiler: %d starts, %d stops", starts, stops);
    if (ver < 10 && starts != 0) FAIL("profiler events from a v%d table", ver);
  }
  ntFinalize();
  return 0;
}
