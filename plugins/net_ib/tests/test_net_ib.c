/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_ib.c: libnccl-net-ib.so driven through its exported tables, as a core drives it.
 *   test_net_ib <plugin.so> <case> <version>
 * Cases that run anywhere:
 *   load      every ncclNetPlugin_v12..v8 is exported and named IB; init succeeds; without RDMA
 *             devices devices() is 0 (said at INFO) and device calls fail cleanly
 *   nodev     NCCL_IB_DISABLE=1: 0 devices, said at INFO
 *   badenv    (argument: the variable set wrong by ctest) init fails with a WARN naming it
 *   nodevhca  devices exist, but NCCL_IB_HCA / NCCL_IB_GID_INDEX leave every port out: 0 devices
 * Cases that need an RDMA device (exit 77, skipped, without one):
 *   pair      a send comm and a recv comm of this process on device 0: many transfers in flight,
 *             sizes 0 .. 8 MiB, contents checked byte for byte; a send larger than its receive fails
 *   deadpeer  the sending process is SIGKILLed: the receiver gets an error within seconds, no hang
 *   deadrecv  the receiving process is SIGKILLed while a send waits for its FIFO entry: isend fails
 *   garbage   strangers connect to the listen port first (random bytes, a wrong nonce, nothing):
 *             accept drops them and completes with the real sender
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "plugin/net.h"
#include "plugin/profiler_net_ib.h"
#include "ib_test_log.h"

#define SKIP 77

/* Net profiler events (profiler_net_ib.h): every start must carry the IB id and a queue-pair
 * descriptor, every stop close an open event. */
static int phToken;
static int profStarts, profStops, profOpen;
static int profHandles[4096];
static ncclResult_t profCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  const ncclProfilerNetIbDescr_v1_t* d = extData;
  if (pHandle != &phToken || pluginId != (NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER) || d == NULL ||
      d->type != ncclProfileQp || d->qp.qpNum == 0) {
    fprintf(stderr, "FAIL: profiler event with parent %p id 0x%llx descriptor %p\n", pHandle, (long long)pluginId, extData);
    exit(1);
  }
  if (type == ncclProfilerNetEventStart) {
    if (profStarts >= 4096) exit(1);
    *eHandle = &profHandles[profStarts++];
    profOpen++;
  } else if (type == ncclProfilerNetEventStop) {
    int* h = *eHandle;
    if (h < profHandles || h >= profHandles + profStarts || *h) {
      fprintf(stderr, "FAIL: stop of an event that is not open\n");
      exit(1);
    }
    *h = 1;
    profStops++;
    profOpen--;
  }
  return ncclSuccess;
}

static void* lib;
static const ncclNet_v12_t* t12;
static const ncclNet_v8_t* t8;
static int version;
static void* ctx;

static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* init through the table of the version under test */
static ncclResult_t initVersion(void) {
  char sym[32];
  snprintf(sym, sizeof(sym), "ncclNetPlugin_v%d", version);
  void* t = dlsym(lib, sym);
  if (t == NULL) FAIL("%s is not exported", sym);
  ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  switch (version) {
    case 12: return ((const ncclNet_v12_t*)t)->init(&ctx, 7, &cfg, logger, profCallback);
    case 11: return ((const ncclNet_v11_t*)t)->init(&ctx, 7, (ncclNetCommConfig_v11_t*)&cfg, logger, profCallback);
    case 10: return ((const ncclNet_v10_t*)t)->init(logger, profCallback);
    case 9: return ((const ncclNet_v9_t*)t)->init(logger);
    case 8: return ((const ncclNet_v8_t*)t)->init(logger);
  }
  FAIL("unknown version %d", version);
}

static int devicesOf(void) {
  int n = -1;
  if (t12->devices(&n) != ncclSuccess || n < 0) FAIL("devices() failed or negative (%d)", n);
  return n;
}

static void caseLoad(void) {
  const char* names[] = {"ncclNetPlugin_v12", "ncclNetPlugin_v11", "ncclNetPlugin_v10", "ncclNetPlugin_v9",
                         "ncclNetPlugin_v8"};
  for (int i = 0; i < 5; i++) {
    const char* const* name = dlsym(lib, names[i]); /* every table starts with its name */
    if (name == NULL || *name == NULL || strcmp(*name, "IB") != 0) FAIL("%s missing or not named IB", names[i]);
  }
  if (dlsym(lib, "ibIsend") != NULL || dlsym(lib, "chrSockProgress") != NULL || dlsym(lib, "chrNetPluginV12") != NULL)
    FAIL("internal symbols are exported");
  ncclResult_t res = initVersion();
  if (res != ncclSuccess) FAIL("init returned %d", (int)res);
  int n = devicesOf();
  if (n == 0) {
    if (!strstr(logText, "INFO") || !strstr(logText, "0 devices")) FAIL("no INFO line saying 0 devices");
    if (strstr(logText, "WARN")) FAIL("a WARN without devices");
    ncclNetProperties_v12_t p;
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void* comm = NULL;
    if (t12->getProperties(0, &p) != ncclInvalidArgument) FAIL("getProperties(0) without devices did not fail");
    if (t12->listen(ctx, 0, handle, &comm) != ncclInvalidArgument || comm != NULL) FAIL("listen without devices");
    if (t12->connect(ctx, 0, handle, &comm, NULL) != ncclInvalidArgument || comm != NULL) FAIL("connect without devices");
  } else {
    for (int d = 0; d < n; d++) {
      ncclNetProperties_v12_t p;
      if (t12->getProperties(d, &p) != ncclSuccess) FAIL("getProperties(%d)", d);
      if (p.name == NULL || !(p.ptrSupport & NCCL_PTR_HOST) || p.maxRecvs != 1 || p.speed <= 0 || p.vProps.ndevs != 1)
        FAIL("implausible properties of device %d", d);
    }
  }
  if (version >= 11 && t12->finalize(ctx) != ncclSuccess) FAIL("finalize");
}

static void caseNodev(void) {
  if (initVersion() != ncclSuccess) FAIL("init");
  if (devicesOf() != 0) FAIL("NCCL_IB_DISABLE=1 but devices > 0");
  if (!strstr(logText, "NCCL_IB_DISABLE")) FAIL("no INFO line naming NCCL_IB_DISABLE");
}

/* Devices exist but the settings leave every port out (NCCL_IB_HCA, an unusable NCCL_IB_GID_INDEX). */
static void caseNodevHca(void) {
  if (initVersion() != ncclSuccess) FAIL("init");
  if (devicesOf() != 0) FAIL("a port was taken although the settings leave it out");
  if (!strstr(logText, "0 devices")) FAIL("no INFO line saying 0 devices");
}

static void caseBadEnv(const char* var) {
  ncclResult_t res = initVersion();
  if (res == ncclSuccess) FAIL("init succeeded with a malformed %s", var);
  if (!strstr(logText, "WARN") || !strstr(logText, var)) FAIL("no WARN naming %s", var);
}

/* ---------------------------------------------------------------- with devices */

static void connectPair(void** sendComm, void** recvComm, void** listenComm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  if (t12->listen(ctx, 0, handle, listenComm) != ncclSuccess || *listenComm == NULL) FAIL("listen");
  *sendComm = *recvComm = NULL;
  double end = nowSec() + 20;
  while (*sendComm == NULL || *recvComm == NULL) {
    if (*sendComm == NULL && t12->connect(ctx, 0, handle, sendComm, NULL) != ncclSuccess) FAIL("connect");
    if (*recvComm == NULL && t12->accept(*listenComm, recvComm, NULL) != ncclSuccess) FAIL("accept");
    if (nowSec() > end) FAIL("connect/accept did not finish in 20 s");
  }
}

static uint8_t pattern(size_t i, unsigned msg) { return (uint8_t)((i * 131u + msg * 7u + (i >> 9)) & 0xff); }

static ncclResult_t isendV(void* comm, void* data, size_t size, int tag, void* mh, void** req) {
  if (version == 8) return t8->isend(comm, data, (int)size, tag, mh, req);
  return t12->isend(comm, data, size, tag, mh, &phToken, req);
}
static ncclResult_t irecvV(void* comm, void* data, size_t size, int tag, void* mh, void** req) {
  if (version == 8) {
    int s = (int)size;
    return t8->irecv(comm, 1, &data, &s, &tag, &mh, req);
  }
  void* ph = &phToken;
  return t12->irecv(comm, 1, &data, &size, &tag, &mh, &ph, req);
}

/* The plugin initialised, or the test skipped when there is no RDMA device. */
static void initOrSkip(void) {
  if (initVersion() != ncclSuccess) FAIL("init");
  if (devicesOf() == 0) {
    printf("no RDMA device: skipped\n");
    exit(SKIP);
  }
}

static void casePair(void) {
  initOrSkip();
  void *sc, *rc, *lc;
  connectPair(&sc, &rc, &lc);
  enum { NMSG = 200, SLOT = 8 << 20 };
  uint8_t* sbuf = malloc((size_t)SLOT * 2);
  uint8_t* rbuf = malloc((size_t)SLOT * 2);
  if (!sbuf || !rbuf) FAIL("malloc");
  void *smh, *rmh;
  if (t12->regMr(sc, sbuf, (size_t)SLOT * 2, NCCL_PTR_HOST, &smh) != ncclSuccess) FAIL("regMr send");
  if (t12->regMr(rc, rbuf, (size_t)SLOT * 2, NCCL_PTR_HOST, &rmh) != ncclSuccess) FAIL("regMr recv");
  const size_t sizes[] = {0, 1, 127, 4096, 65537, 1 << 20, (8 << 20) - 3};
  /* one message at a time per buffer half, two halves in flight: sends and receives interleaved */
  void* sreq[2] = {NULL, NULL};
  void* rreq[2] = {NULL, NULL};
  size_t rsize[2] = {0, 0};
  unsigned msgOf[2] = {0, 0};
  unsigned posted = 0, received = 0;
  double end = nowSec() + 40;
  while (received < NMSG) {
    if (nowSec() > end) FAIL("transfers stalled: %u of %d received", received, NMSG);
    int h = posted % 2;
    if (posted < NMSG && rreq[h] == NULL && sreq[h] == NULL && posted - received < 2) {
      size_t size = sizes[posted % (sizeof(sizes) / sizeof(sizes[0]))];
      for (size_t i = 0; i < size; i++) sbuf[(size_t)h * SLOT + i] = pattern(i, posted);
      memset(rbuf + (size_t)h * SLOT, 0xee, SLOT);
      while (rreq[h] == NULL) {
        if (irecvV(rc, rbuf + (size_t)h * SLOT, SLOT, 5, rmh, &rreq[h]) != ncclSuccess) FAIL("irecv");
      }
      while (sreq[h] == NULL) {
        if (isendV(sc, sbuf + (size_t)h * SLOT, size, 5, smh, &sreq[h]) != ncclSuccess) FAIL("isend");
      }
      rsize[h] = size;
      msgOf[h] = posted;
      posted++;
    }
    for (int k = 0; k < 2; k++) {
      int done = 0, got = -1;
      if (sreq[k] && t12->test(sreq[k], &done, &got) != ncclSuccess) FAIL("test send");
      if (sreq[k] && done) {
        if ((size_t)got != rsize[k]) FAIL("send reported %d bytes, sent %zu", got, rsize[k]);
        sreq[k] = NULL;
      }
      done = 0;
      if (rreq[k] && t12->test(rreq[k], &done, &got) != ncclSuccess) FAIL("test recv");
      if (rreq[k] && done) {
        if ((size_t)got != rsize[k]) FAIL("receive reported %d bytes, sent %zu", got, rsize[k]);
        for (size_t i = 0; i < rsize[k]; i++)
          if (rbuf[(size_t)k * SLOT + i] != pattern(i, msgOf[k])) FAIL("message %u: byte %zu differs", msgOf[k], i);
        if (rsize[k] < SLOT && rbuf[(size_t)k * SLOT + rsize[k]] != 0xee) FAIL("message %u wrote past its size", msgOf[k]);
        rreq[k] = NULL;
        received++;
      }
    }
  }
  /* a send larger than the posted receive is refused, and nothing lands */
  void *r = NULL, *s = NULL;
  while (r == NULL)
    if (irecvV(rc, rbuf, 100, 5, rmh, &r) != ncclSuccess) FAIL("irecv");
  ncclResult_t res = ncclSuccess;
  double stop = nowSec() + 10;
  while (s == NULL && res == ncclSuccess && nowSec() < stop) res = isendV(sc, sbuf, 200, 5, smh, &s);
  if (res == ncclSuccess) FAIL("a 200-byte send into a 100-byte receive was accepted");
  if (!strstr(logText, "matches a receive of only 100 bytes")) FAIL("no WARN saying the receive is too small");
  /* one event per transfer and side, all closed but the receive still pending. Only where the comms
   * come from a ctx whose init had the callback: v11/v12 here (this test hands v8..v10 no ctx). */
  int prof = version >= 11;
  int expect = prof ? 2 * NMSG : 0;
  if (profStops != expect || profStarts != expect + prof || profOpen != prof)
    FAIL("profiler events: %d started, %d stopped, expected %d transfers", profStarts, profStops, expect);
  t12->deregMr(sc, smh);
  t12->deregMr(rc, rmh);
  t12->closeSend(sc);
  t12->closeRecv(rc);
  t12->closeListen(lc);
  free(sbuf);
  free(rbuf);
}

static void caseDeadPeer(void) {
  initOrSkip();
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  if (t12->listen(ctx, 0, handle, &lc) != ncclSuccess) FAIL("listen");
  pid_t child = fork();
  if (child == 0) { /* the sender: connects, then waits to be killed */
    void* sc = NULL;
    while (sc == NULL)
      if (t12->connect(ctx, 0, handle, &sc, NULL) != ncclSuccess) _exit(3);
    pause();
    _exit(0);
  }
  void* rc = NULL;
  double end = nowSec() + 20;
  while (rc == NULL) {
    if (t12->accept(lc, &rc, NULL) != ncclSuccess) FAIL("accept");
    if (nowSec() > end) FAIL("accept did not finish");
  }
  static uint8_t buf[4096];
  void* mh = NULL;
  if (t12->regMr(rc, buf, sizeof(buf), NCCL_PTR_HOST, &mh) != ncclSuccess) FAIL("regMr");
  void* req = NULL;
  while (req == NULL)
    if (irecvV(rc, buf, sizeof(buf), 1, mh, &req) != ncclSuccess) FAIL("irecv");
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  double t0 = nowSec();
  ncclResult_t res = ncclSuccess;
  int done = 0;
  while (res == ncclSuccess && !done && nowSec() - t0 < 30) res = t12->test(req, &done, NULL);
  if (res == ncclSuccess) FAIL("the receive %s after the sender died", done ? "completed" : "still waits 30 s");
  printf("error %d after %.2f s\n", (int)res, nowSec() - t0);
  /* a failed comm is still closed cleanly */
  if (t12->deregMr(rc, mh) != ncclSuccess || t12->closeRecv(rc) != ncclSuccess || t12->closeListen(lc) != ncclSuccess)
    FAIL("closing after the error");
}

/* The receiving process dies while a send waits for its FIFO entry (the receiver never posted): no
 * RDMA operation is outstanding, so only the setup socket can tell; isend must fail, not wait forever. */
static void caseDeadReceiver(void) {
  initOrSkip();
  int fds[2];
  if (pipe(fds) != 0) FAIL("pipe");
  pid_t child = fork();
  if (child == 0) { /* the receiver: listens, hands the handle over, accepts, then waits to be killed */
    char handle[NCCL_NET_HANDLE_MAXSIZE];
    void *lc = NULL, *rc = NULL;
    if (t12->listen(ctx, 0, handle, &lc) != ncclSuccess) _exit(3);
    if (write(fds[1], handle, sizeof(handle)) != (ssize_t)sizeof(handle)) _exit(4);
    while (rc == NULL)
      if (t12->accept(lc, &rc, NULL) != ncclSuccess) _exit(5);
    pause();
    _exit(0);
  }
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  if (read(fds[0], handle, sizeof(handle)) != (ssize_t)sizeof(handle)) FAIL("no handle from the child");
  void* sc = NULL;
  double end = nowSec() + 20;
  while (sc == NULL) {
    if (t12->connect(ctx, 0, handle, &sc, NULL) != ncclSuccess) FAIL("connect");
    if (nowSec() > end) FAIL("connect did not finish");
  }
  static uint8_t buf[4096];
  void* mh = NULL;
  if (t12->regMr(sc, buf, sizeof(buf), NCCL_PTR_HOST, &mh) != ncclSuccess) FAIL("regMr");
  void* req = NULL;
  for (int i = 0; i < 100; i++) /* no receive posted: the send cannot start */
    if (isendV(sc, buf, sizeof(buf), 1, mh, &req) != ncclSuccess || req != NULL) FAIL("isend started without a receive");
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  double t0 = nowSec();
  ncclResult_t res = ncclSuccess;
  while (res == ncclSuccess && req == NULL && nowSec() - t0 < 30) res = isendV(sc, buf, sizeof(buf), 1, mh, &req);
  if (res == ncclSuccess) FAIL("isend %s after the receiver died", req ? "started" : "still waits 30 s");
  if (!strstr(logText, "the peer closed its connection")) FAIL("no WARN saying the peer is gone");
  printf("error %d after %.2f s\n", (int)res, nowSec() - t0);
  if (t12->deregMr(sc, mh) != ncclSuccess || t12->closeSend(sc) != ncclSuccess) FAIL("closing after the error");
}

/* Before the real sender, strangers connect to the listen port: one sends 200 random bytes, one a
 * well-formed info with the wrong nonce, one closes at once. accept drops each (WARN) and still
 * completes with the real sender, whose transfer then works. */
static void caseGarbage(void) {
  initOrSkip();
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  if (t12->listen(ctx, 0, handle, &lc) != ncclSuccess) FAIL("listen");
  /* the listen address, from the handle's documented layout (family @12, port @16, IPv4 @24) */
  struct sockaddr_in sa;
  memset(&sa, 0, sizeof(sa));
  sa.sin_family = AF_INET;
  memcpy(&sa.sin_port, (uint8_t[]){(uint8_t)handle[17], (uint8_t)handle[16]}, 2);
  memcpy(&sa.sin_addr, handle + 24, 4);
  if (handle[12] != AF_INET) {
    printf("listen address is not IPv4: skipped\n");
    exit(SKIP);
  }
  uint8_t junk[200];
  for (int k = 0; k < 3; k++) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0 || connect(fd, (struct sockaddr*)&sa, sizeof(sa)) != 0) FAIL("raw connect");
    if (k == 0) {
      for (size_t i = 0; i < sizeof(junk); i++) junk[i] = (uint8_t)(rand() & 0xff);
    } else if (k == 1) {
      /* a well-formed connection info (layout in wire.c) with a nonce of its own */
      memset(junk, 0, sizeof(junk));
      const uint8_t magic[8] = {0x31, 0x4e, 0x49, 0x42, 0x49, 0x52, 0x48, 0x43}; /* "CHRIBIN1" little-endian */
      memcpy(junk, magic, 8);
      junk[8] = 1;       /* version */
      junk[12] = 1;      /* one QP */
      junk[16] = 2;      /* RoCE */
      junk[24] = 5;      /* MTU 4096 */
      junk[32 + 15] = 1; /* GID ::1 */
      junk[48] = 0x23;   /* QP number */
      junk[176] = 0x40;  /* FIFO address */
      junk[188] = 32;    /* FIFO depth */
      junk[192] = 0x5a;  /* nonce */
    }
    if (k < 2 && write(fd, junk, sizeof(junk)) != (ssize_t)sizeof(junk)) FAIL("raw write");
    void* rc = NULL;
    for (int i = 0; i < 50 && rc == NULL; i++) {
      if (t12->accept(lc, &rc, NULL) != ncclSuccess) FAIL("accept failed on a stranger's connection %d", k);
      usleep(2000);
    }
    if (rc != NULL) FAIL("accept took stranger %d as its peer", k);
    close(fd);
  }
  if (!strstr(logText, "dropped a connection") || !strstr(logText, "bad magic") ||
      !strstr(logText, "does not know this listener's nonce"))
    FAIL("no WARN for each dropped connection");
  void *sc = NULL, *rc = NULL;
  double end = nowSec() + 20;
  while (sc == NULL || rc == NULL) {
    if (sc == NULL && t12->connect(ctx, 0, handle, &sc, NULL) != ncclSuccess) FAIL("connect");
    if (rc == NULL && t12->accept(lc, &rc, NULL) != ncclSuccess) FAIL("accept");
    if (nowSec() > end) FAIL("the real connection did not complete");
  }
  static uint8_t sbuf[5000], rbuf[5000];
  for (size_t i = 0; i < sizeof(sbuf); i++) sbuf[i] = pattern(i, 9);
  void *smh, *rmh, *sr = NULL, *rr = NULL;
  if (t12->regMr(sc, sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh) != ncclSuccess) FAIL("regMr");
  if (t12->regMr(rc, rbuf, sizeof(rbuf), NCCL_PTR_HOST, &rmh) != ncclSuccess) FAIL("regMr");
  while (rr == NULL)
    if (irecvV(rc, rbuf, sizeof(rbuf), 2, rmh, &rr) != ncclSuccess) FAIL("irecv");
  while (sr == NULL)
    if (isendV(sc, sbuf, sizeof(sbuf), 2, smh, &sr) != ncclSuccess) FAIL("isend");
  int sd = 0, rd = 0, got = 0;
  end = nowSec() + 20;
  while (!sd || !rd) {
    if (!sd && t12->test(sr, &sd, NULL) != ncclSuccess) FAIL("test send");
    if (!rd && t12->test(rr, &rd, &got) != ncclSuccess) FAIL("test recv");
    if (nowSec() > end) FAIL("transfer stalled");
  }
  if (got != (int)sizeof(sbuf) || memcmp(sbuf, rbuf, sizeof(sbuf)) != 0) FAIL("data differs");
  t12->deregMr(sc, smh);
  t12->deregMr(rc, rmh);
  t12->closeSend(sc);
  t12->closeRecv(rc);
  t12->closeListen(lc);
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: %s <plugin.so> load|nodev|badenv|pair|deadpeer <version|VAR>\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) FAIL("dlopen: %s", dlerror());
  t12 = dlsym(lib, "ncclNetPlugin_v12");
  t8 = dlsym(lib, "ncclNetPlugin_v8");
  if (t12 == NULL || t8 == NULL) FAIL("tables missing");
  const char* c = argv[2];
  version = atoi(argv[3]);
  if (!strcmp(c, "badenv")) {
    version = 12;
    caseBadEnv(argv[3]);
  } else if (version < 8 || version > 12) {
    FAIL("version %s", argv[3]);
  } else if (!strcmp(c, "load")) {
    caseLoad();
  } else if (!strcmp(c, "nodev")) {
    caseNodev();
  } else if (!strcmp(c, "nodevhca")) {
    caseNodevHca();
  } else if (!strcmp(c, "pair")) {
    casePair();
  } else if (!strcmp(c, "deadpeer")) {
    caseDeadPeer();
  } else if (!strcmp(c, "deadrecv")) {
    caseDeadReceiver();
  } else if (!strcmp(c, "garbage")) {
    caseGarbage();
  } else {
    FAIL("unknown case %s", c);
  }
  return 0;
}
