/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_loader.c: conformance tests of the net plugin loader, the v8..v11 adapters and the call
 * wrappers, driven by the test plugins (testnet_plugin.c). One scenario per process; the ctest
 * entry (tests/plugins/CMakeLists.txt) sets NCCL_NET_PLUGIN and the rest of the environment.
 *
 *   test_net_loader abi <N>          full round trip through a vN plugin, checking what it received
 *   test_net_loader open [checks]    one chrNetOpen, then checks:
 *        rc=<int>        expected result (default 0)
 *        name=<s>        netName argument ("" when absent: NULL)
 *        pick=<s>        name of the plugin expected to be chosen
 *        version=<N>     its ABI version
 *        null=1          expect *out == NULL (NCCL_NET_PLUGIN=none)
 *        err=<s>         the thread's last error contains s
 *        log=<s>         the NCCL_DEBUG_FILE log contains s      (repeatable)
 *        nolog=<s>       the log does not contain s              (repeatable)
 *        warns=<N>       number of WARN lines in the log
 *        again=1         open and close a second time (repeat failures must not WARN again)
 *   test_net_loader describe out=<s> ...   chrNetDescribe output contains each s
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"
#include "plugin/net_plugin.h"
#include "loader_check.h"
#include "testnet_stats.h"

/* ---- abi round trip ----------------------------------------------------------------------------- */

static struct testNetStats* statsOf(struct chrNet* net) {
  void* h = dlopen(net->path, RTLD_NOW | RTLD_NOLOAD);
  EXPECT(h != NULL, "plugin %s is not loaded: %s", net->path, dlerror());
  testNetStatsFn fn = (testNetStatsFn)dlsym(h, "testNetStats");
  EXPECT(fn != NULL, "no testNetStats in %s", net->path);
  dlclose(h); /* drops only the reference taken here */
  return fn();
}

static void fillRandom(unsigned char* p, size_t n, unsigned seed) {
  for (size_t i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    p[i] = (unsigned char)(seed >> 16);
  }
}

static void wait(struct chrNet* net, void* request, int* sizes) {
  int done = 0;
  for (int spins = 0; !done; spins++) {
    EXPECT(spins < 1000, "request %p never completed", request);
    OK(chrNetTest(net, request, &done, sizes));
  }
}

static void checkProperties(struct chrNet* net, int v) {
  ncclNetProperties_v12_t p;
  OK(chrNetGetProperties(net, 0, &p));
  char name[32];
  snprintf(name, sizeof(name), "testv%d-dev0", v);
  EXPECT(p.name && strcmp(p.name, name) == 0, "props name %s", p.name ? p.name : "(null)");
  EXPECT(p.guid == 0x1234 && p.speed == 10000 && p.port == 1 && p.latency == 1.5f && p.maxComms == 1024,
         "base properties garbled (guid %llx speed %d port %d maxComms %d)", (unsigned long long)p.guid, p.speed,
         p.port, p.maxComms);
  EXPECT(p.ptrSupport == NCCL_PTR_HOST && p.maxRecvs == TESTNET_MAX_RECVS && p.netDeviceType == NCCL_NET_DEVICE_HOST,
         "ptrSupport %d maxRecvs %d type %d", p.ptrSupport, p.maxRecvs, (int)p.netDeviceType);
  if (v == 8) {
    EXPECT(p.forceFlush == 0, "v8 forceFlush %d", p.forceFlush);
    EXPECT(p.maxP2pBytes == (1ULL << 30) && p.maxCollBytes == (1ULL << 29), "v8 limits %zu %zu", p.maxP2pBytes,
           p.maxCollBytes);
  } else {
    EXPECT(p.forceFlush == 1, "forceFlush %d", p.forceFlush);
    EXPECT(p.maxP2pBytes == (1ULL << 31) && p.maxCollBytes == (1ULL << 28), "limits %zu %zu", p.maxP2pBytes,
           p.maxCollBytes);
  }
  EXPECT(p.vProps.ndevs == 1 && p.vProps.devs[0] == 0, "vProps %d {%d}", p.vProps.ndevs, p.vProps.devs[0]);
  EXPECT(p.maxMultiRequestSize == (v >= 11 ? 3 : 1), "maxMultiRequestSize %d", p.maxMultiRequestSize);
  EXPECT(p.railId == (v >= 12 ? 5 : -1) && p.planeId == (v >= 12 ? 6 : -1), "rail %d plane %d", p.railId, p.planeId);
  EXPECT(chrNetGetProperties(net, 1, &p) == ncclInternalError, "device 1 of 1 must be refused");
}

static void connectPair(struct chrNet* net, struct testNetStats* st, void** listenComm, void** sendComm,
                        void** recvComm) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  OK(chrNetListen(net, 0, handle, listenComm));
  *sendComm = *recvComm = NULL;
  for (int spins = 0; *sendComm == NULL || *recvComm == NULL; spins++) {
    EXPECT(spins < 100, "connection never completed");
    if (*sendComm == NULL) OK(chrNetConnect(net, 0, handle, sendComm, NULL));
    if (*recvComm == NULL) OK(chrNetAccept(net, *listenComm, recvComm, NULL));
  }
  EXPECT(st->connectNotYet == 1, "connect's 'not yet' answer was not passed through (%d)", st->connectNotYet);
}

static void dataPath(struct chrNet* net, struct testNetStats* st, int v, void* sendComm, void* recvComm) {
  enum { BIG = 1000, SMALL = 77 };
  unsigned char sbuf[BIG + SMALL], r0[100], r1[2000];
  fillRandom(sbuf, sizeof(sbuf), 42u + (unsigned)v);
  memset(r0, 0, sizeof(r0));
  memset(r1, 0, sizeof(r1));
  void *smh, *rmh0, *rmh1;
  OK(chrNetRegMr(net, sendComm, sbuf, sizeof(sbuf), NCCL_PTR_HOST, &smh));
  OK(chrNetRegMr(net, recvComm, r0, sizeof(r0), NCCL_PTR_HOST, &rmh0));
  OK(chrNetRegMr(net, recvComm, r1, sizeof(r1), NCCL_PTR_HOST, &rmh1));
  EXPECT(st->lastRegType == NCCL_PTR_HOST, "reg type %d", st->lastRegType);

  /* Two sends; one grouped receive whose buffers are listed in the other order of tags. */
  void *sreq0, *sreq1;
  OK(chrNetIsend(net, sendComm, sbuf, BIG, 3, smh, (void*)0x5150, &sreq0));
  EXPECT(sreq0 != NULL, "isend deferred");
  EXPECT(st->lastIsendSize == BIG && st->lastIsendTag == 3, "isend got size %lld tag %d", st->lastIsendSize,
         st->lastIsendTag);
  EXPECT(st->lastIsendPhandle == (v >= 10 ? (void*)0x5150 : NULL), "isend phandle %p", st->lastIsendPhandle);
  OK(chrNetIsend(net, sendComm, sbuf + BIG, SMALL, 7, smh, NULL, &sreq1));

  void* data[2] = {r0, r1};
  size_t sizes[2] = {sizeof(r0), sizeof(r1)};
  int tags[2] = {7, 3};
  void* mh[2] = {rmh0, rmh1};
  void* ph[2] = {(void*)0x6160, (void*)0x6161};
  void* rreq = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION;
  OK(chrNetIrecv(net, recvComm, 2, data, sizes, tags, mh, ph, &rreq));
  EXPECT(rreq != NULL && rreq != (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION, "irecv request %p", rreq);
  EXPECT(st->lastIrecvRequestIn == (v == 8 ? NULL : (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION),
         "irecv entered with *request %p", st->lastIrecvRequestIn);
  EXPECT(st->lastIrecvN == 2 && st->lastIrecvSizes[0] == 100 && st->lastIrecvSizes[1] == 2000 &&
             st->lastIrecvTags[0] == 7 && st->lastIrecvTags[1] == 3,
         "irecv got n %d sizes %lld,%lld tags %d,%d", st->lastIrecvN, st->lastIrecvSizes[0], st->lastIrecvSizes[1],
         st->lastIrecvTags[0], st->lastIrecvTags[1]);
  EXPECT(st->lastIrecvPhandle0 == (v >= 10 ? (void*)0x6160 : NULL), "irecv phandle %p", st->lastIrecvPhandle0);

  int got[2] = {-1, -1};
  wait(net, rreq, got);
  EXPECT(got[0] == SMALL && got[1] == BIG, "received sizes %d,%d", got[0], got[1]);
  EXPECT(memcmp(r0, sbuf + BIG, SMALL) == 0 && memcmp(r1, sbuf, BIG) == 0, "received bytes differ from sent");
  int ssize = -1;
  wait(net, sreq0, &ssize);
  EXPECT(ssize == BIG, "send size %d", ssize);
  wait(net, sreq1, NULL);

  void* freq;
  int fsizes[1] = {BIG};
  void* fdata[1] = {r1};
  OK(chrNetIflush(net, recvComm, 1, fdata, fsizes, &mh[1], &freq));
  EXPECT(freq != NULL, "iflush request");
  wait(net, freq, NULL);

  if (v == 8) {
    /* The adapter refuses sizes an int cannot carry before the plugin sees them, and says so once. */
    int calls = st->isendCalls;
    void* req;
    EXPECT(chrNetIsend(net, sendComm, sbuf, (1ULL << 30) + 1, 3, smh, NULL, &req) == ncclInternalError,
           "v8 isend above 2^30 must fail");
    EXPECT(st->isendCalls == calls && req == NULL, "the oversized isend reached the plugin");
    EXPECT(strstr(chrThreadLastError(), "2^30") != NULL, "last error: %s", chrThreadLastError());
    size_t bigSizes[1] = {(1ULL << 31)};
    calls = st->irecvCalls;
    EXPECT(chrNetIrecv(net, recvComm, 1, data, bigSizes, tags, mh, NULL, &req) == ncclInternalError,
           "v8 irecv above 2^30 must fail");
    EXPECT(st->irecvCalls == calls, "the oversized irecv reached the plugin");
  }

  /* Optional slots the test plugins leave NULL. */
  void* dptr = (void*)1;
  OK(chrNetGetDeviceMr(net, sendComm, smh, &dptr));
  EXPECT(dptr == NULL, "getDeviceMr without a slot must give NULL");
  OK(chrNetIrecvConsumed(net, recvComm, 1, NULL));
  void* dmh;
  EXPECT(chrNetRegMrDmaBuf(net, sendComm, sbuf, sizeof(sbuf), NCCL_PTR_HOST, 0, 3, &dmh) == ncclInternalError,
         "regMrDmaBuf without a slot must fail");

  OK(chrNetDeregMr(net, sendComm, smh));
  OK(chrNetDeregMr(net, recvComm, rmh0));
  OK(chrNetDeregMr(net, recvComm, rmh1));
  EXPECT(st->mismatchedHandles == 0, "the plugin saw %d comm/mhandle pairs that do not belong together",
         st->mismatchedHandles);
}

static void deviceCalls(struct chrNet* net, struct testNetStats* st, int v) {
  ncclNetAttr_v12_t attr;
  memset(&attr, 0xff, sizeof(attr));
  attr.op = 1u << ncclFuncAllReduce;
  OK(chrNetSetNetAttr(net, &attr));
  EXPECT(st->setNetAttrCalls == (v >= 11 ? 1 : 0) && (v < 11 || st->lastAttrOp == attr.op), "setNetAttr calls %d op %x",
         st->setNetAttrCalls, st->lastAttrOp);

  ncclNetVDeviceProps_v12_t vp = {.ndevs = 2, .devs = {0, 0}};
  int d = -1;
  if (v == 8) {
    EXPECT(chrNetMakeVDevice(net, &d, &vp) == ncclInvalidUsage, "v8 has no makeVDevice");
  } else {
    OK(chrNetMakeVDevice(net, &d, &vp));
    EXPECT(d == 7 && st->lastVDeviceNdevs == 2 && st->lastVDeviceDevs[1] == 0, "makeVDevice d %d ndevs %d", d,
           st->lastVDeviceNdevs);
    vp.ndevs = 5;
    ncclResult_t r = chrNetMakeVDevice(net, &d, &vp);
    EXPECT(r == (v >= 12 ? ncclSuccess : ncclInvalidUsage), "fusing 5 devices on v%d returned %d", v, (int)r);
  }
}

static int runAbi(int v) {
  struct chrNet* net = NULL;
  OK(chrNetOpen(0xabc123ull, NULL, 5, &net));
  EXPECT(net != NULL, "no net");
  char name[16];
  snprintf(name, sizeof(name), "testv%d", v);
  EXPECT(net->version == v && strcmp(net->name, name) == 0 && net->ndev == 1, "got %s v%d ndev %d", net->name,
         net->version, net->ndev);
  struct testNetStats* st = statsOf(net);
  EXPECT(st->version == v, "the stats belong to a v%d plugin", st->version);
  EXPECT(st->initCalls == 1, "init calls %d", st->initCalls);
  if (v >= 11) EXPECT(st->lastCommId == 0xabc123ull && st->initTrafficClass == 5, "init commId %llx tc %d",
                      (unsigned long long)st->lastCommId, st->initTrafficClass);
  if (v >= 10) EXPECT(st->profCallbackGiven == 1, "init got no profiler callback");

  checkProperties(net, v);
  void *listenComm, *sendComm, *recvComm;
  connectPair(net, st, &listenComm, &sendComm, &recvComm);
  if (v == 10) EXPECT(st->connectTrafficClass == 5, "v10 connect got trafficClass %d", st->connectTrafficClass);
  dataPath(net, st, v, sendComm, recvComm);
  OK(chrNetCloseSend(net, sendComm));
  OK(chrNetCloseRecv(net, recvComm));
  OK(chrNetCloseListen(net, listenComm));
  EXPECT(st->liveObjects == 0, "%d plugin objects leaked", st->liveObjects);
  deviceCalls(net, st, v);

  const char* path = net->path; /* owned by the loaded library, outlives net */
  /* init per comm from v11; once per process (counted) before. */
  struct chrNet* second = NULL;
  OK(chrNetOpen(0x2ull, NULL, -1, &second));
  EXPECT(st->initCalls == (v >= 11 ? 2 : 1), "init calls after a second comm: %d", st->initCalls);
  OK(chrNetClose(net));
  OK(chrNetClose(second));
  EXPECT(st->finalizeCalls == (v >= 11 ? 2 : 0), "finalize calls %d", st->finalizeCalls);
  OK(chrNetOpen(0x3ull, NULL, -1, &net));
  EXPECT(st->initCalls == (v >= 11 ? 3 : 1), "init calls after reopening: %d", st->initCalls);
  OK(chrNetClose(net));

  char* log = readLog();
  EXPECT(countLines(log, "NET/Plugin: loaded net plugin", name) == 1, "expected one INFO load line:\n%s", log);
  char abi[16];
  snprintf(abi, sizeof(abi), "(ABI v%d)", v);
  EXPECT(countLines(log, "NET/Plugin: loaded net plugin", abi) == 1, "load line without %s:\n%s", abi, log);
  EXPECT(countLines(log, "NET/Plugin: loaded net plugin", path) == 1, "load line without the path:\n%s", log);
  EXPECT(countLines(log, "NET/Plugin", "WARN") == 0, "unexpected plugin WARN:\n%s", log);
  if (v == 8) EXPECT(countLines(log, "WARN", "2^30") == 2 && countLines(log, "WARN", "returned error") == 0,
                     "the v8 size refusals must be logged once each:\n%s", log);
  free(log);
  return 0;
}

/* ---- open scenarios ----------------------------------------------------------------------------- */

static int runOpen(int argc, char** argv) {
  int wantRc = 0, wantNull = 0, again = 0, warns = -1, version = -1;
  const char *name = NULL, *pick = NULL, *v;
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "rc"))) wantRc = atoi(v);
    else if ((v = argValue(argv[i], "name"))) name = v;
    else if ((v = argValue(argv[i], "pick"))) pick = v;
    else if ((v = argValue(argv[i], "version"))) version = atoi(v);
    else if ((v = argValue(argv[i], "null"))) wantNull = atoi(v);
    else if ((v = argValue(argv[i], "again"))) again = atoi(v);
    else if ((v = argValue(argv[i], "warns"))) warns = atoi(v);
  }
  for (int round = 0; round < (again ? 2 : 1); round++) {
    struct chrNet* net = (struct chrNet*)1;
    ncclResult_t rc = chrNetOpen(0x77ull + (uint64_t)round, name, -1, &net);
    EXPECT((int)rc == wantRc, "chrNetOpen returned %d, expected %d (last error: %s)", (int)rc, wantRc,
           chrThreadLastError());
    if (rc != ncclSuccess) {
      EXPECT(net == NULL, "failed open left a net object");
      continue;
    }
    if (wantNull) {
      EXPECT(net == NULL, "expected no net plugin");
      continue;
    }
    EXPECT(net != NULL, "no net");
    if (pick) EXPECT(strcmp(net->name, pick) == 0, "picked %s, expected %s", net->name, pick);
    if (version >= 0) EXPECT(net->version == version, "version %d, expected %d", net->version, version);
    OK(chrNetClose(net));
  }
  char* log = readLog();
  for (int i = 2; i < argc; i++) {
    if ((v = argValue(argv[i], "err"))) EXPECT(strstr(chrThreadLastError(), v), "last error lacks '%s': %s", v,
                                               chrThreadLastError());
    if ((v = argValue(argv[i], "log"))) EXPECT(strstr(log, v), "log lacks '%s':\n%s", v, log);
    if ((v = argValue(argv[i], "nolog"))) EXPECT(!strstr(log, v), "log has '%s':\n%s", v, log);
  }
  if (warns >= 0) EXPECT(countLines(log, "NCCL WARN", NULL) == warns, "expected %d WARN lines:\n%s", warns, log);
  free(log);
  return 0;
}

static int runDescribe(int argc, char** argv) {
  char* text = NULL;
  size_t len = 0;
  FILE* out = open_memstream(&text, &len);
  chrNetDescribe(out);
  fclose(out);
  const char* v;
  for (int i = 2; i < argc; i++)
    if ((v = argValue(argv[i], "out"))) EXPECT(strstr(text, v), "description lacks '%s':\n%s", v, text);
  free(text);
  return 0;
}

int main(int argc, char** argv) {
  if (argc >= 3 && strcmp(argv[1], "abi") == 0) return runAbi(atoi(argv[2]));
  if (argc >= 2 && strcmp(argv[1], "open") == 0) return runOpen(argc, argv);
  if (argc >= 2 && strcmp(argv[1], "describe") == 0) return runDescribe(argc, argv);
  fprintf(stderr, "usage: %s abi <N> | open [checks] | describe [out=...]\n", argv[0]);
  return 2;
}
