/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_common.c: loads a fake v12 plugin built on net_common (fake_v12.c) and checks what each
 * older table does with a call, against values written out here.
 *   test_net_common <fake.so> <case>   cases: tables props init init_retry (with FAKE_INIT_FAILURES=1)
 *   sizes optional no_optional (no_optional: the fake built with FAKE_NO_OPTIONAL)
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugin/net.h"
#include "tests/fake_stats.h"

static int failures;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static void* lib;
static struct fakeStats* st;
static const ncclNet_v12_t* t12;
static const ncclNet_v11_t* t11;
static const ncclNet_v10_t* t10;
static const ncclNet_v9_t* t9;
static const ncclNet_v8_t* t8;

static ncclResult_t dummyProf(void** e, int type, void* p, int64_t id, void* data) {
  (void)e;
  (void)type;
  (void)p;
  (void)id;
  (void)data;
  return ncclSuccess;
}

static void caseTables(void) {
  EXPECT(strcmp(t12->name, "Fake") == 0 && t11->name == t12->name && t10->name == t12->name &&
         t9->name == t12->name && t8->name == t12->name);
  /* same-signature slots are the v12 functions themselves */
  EXPECT(t11->test == t12->test && t10->regMr == t12->regMr && t9->closeRecv == t12->closeRecv &&
         t8->deregMr == t12->deregMr && t8->accept == t12->accept);
  EXPECT(t11->isend == t12->isend && t11->connect == t12->connect && t11->finalize == t12->finalize);
  EXPECT(t9->isend != NULL && t8->irecv != NULL && t10->listen != NULL);
}

static void caseProps(void) {
  ncclNetProperties_v11_t p11;
  ncclNetProperties_v10_t p10;
  ncclNetProperties_v9_t p9;
  ncclNetProperties_v8_t p8;
  memset(&p11, 0xee, sizeof(p11));
  memset(&p8, 0xee, sizeof(p8));
  EXPECT(t11->getProperties(1, &p11) == ncclSuccess);
  EXPECT(t10->getProperties(1, &p10) == ncclSuccess);
  EXPECT(t9->getProperties(1, &p9) == ncclSuccess);
  EXPECT(t8->getProperties(1, &p8) == ncclSuccess);
  EXPECT(strcmp(p11.name, "fake") == 0 && strcmp(p11.pciPath, "/sys/fake") == 0);
  EXPECT(p11.guid == 0x1122334455667788ULL && p11.ptrSupport == (NCCL_PTR_HOST | NCCL_PTR_DMABUF));
  EXPECT(p11.regIsGlobal == 1 && p11.forceFlush == 1 && p11.speed == 100000 && p11.port == 2);
  EXPECT(p11.latency == 1.5f && p11.maxComms == 1000 && p11.maxRecvs == 4);
  EXPECT(p11.maxP2pBytes == (1ULL << 33) && p11.maxCollBytes == (1ULL << 31) && p11.maxMultiRequestSize == 3);
  /* 6 children clipped to the 4 the older array holds */
  EXPECT(p11.vProps.ndevs == 4 && p11.vProps.devs[0] == 10 && p11.vProps.devs[3] == 13);
  EXPECT(p10.vProps.ndevs == 4 && p10.maxP2pBytes == (1ULL << 33) && p10.forceFlush == 1 && p10.port == 2);
  EXPECT(p9.vProps.devs[2] == 12 && p9.maxCollBytes == (1ULL << 31) && p9.guid == 0x1122334455667788ULL);
  EXPECT(strcmp(p8.name, "fake") == 0 && p8.guid == 0x1122334455667788ULL && p8.speed == 100000 &&
         p8.maxRecvs == 4 && p8.netDeviceType == NCCL_NET_DEVICE_HOST && p8.netDeviceVersion == 0 &&
         p8.latency == 1.5f && p8.regIsGlobal == 1 && p8.maxComms == 1000);
}

static void caseInit(void) {
  void* ctx = NULL;
  ncclNetCommConfig_v11_t c11 = {5};
  EXPECT(t11->init(&ctx, 99, &c11, NULL, dummyProf) == ncclSuccess);
  EXPECT(st->inits == 1 && st->lastCommId == 99 && st->lastTrafficClass == 5 && st->lastProf == (void*)dummyProf);
  void* ctx11 = ctx;
  EXPECT(t11->finalize(ctx11) == ncclSuccess);
  /* per-process versions: one v12 init, commId 0, undefined traffic class, shared by every table */
  EXPECT(t10->init(NULL, dummyProf) == ncclSuccess);
  EXPECT(st->inits == 2 && st->lastCommId == 0 && st->lastTrafficClass == NCCL_NET_TRAFFIC_CLASS_UNDEF);
  EXPECT(t9->init(NULL) == ncclSuccess && t8->init(NULL) == ncclSuccess && t10->init(NULL, NULL) == ncclSuccess);
  EXPECT(st->inits == 2);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* comm = NULL;
  st->lastCtxSeen = NULL;
  EXPECT(t10->listen(0, handle, &comm) == ncclSuccess && st->lastCtxSeen == ctx11 && comm != NULL);
  st->lastCtxSeen = NULL;
  ncclNetCommConfig_v10_t c10 = {3};
  EXPECT(t10->connect(0, &c10, handle, &comm, NULL) == ncclSuccess && st->lastCtxSeen == ctx11);
  st->lastCtxSeen = NULL;
  EXPECT(t9->connect(0, handle, &comm, NULL) == ncclSuccess && st->lastCtxSeen == ctx11);
  st->lastCtxSeen = NULL;
  EXPECT(t8->listen(0, handle, &comm) == ncclSuccess && st->lastCtxSeen == ctx11);
}

/* Run with FAKE_INIT_FAILURES=1: the first per-process init fails and leaves nothing behind; the next
 * one (of any old version) makes the context, and later ones reuse it. */
static void caseInitRetry(void) {
  EXPECT(t10->init(NULL, NULL) == ncclSystemError && st->inits == 1);
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* comm = NULL;
  st->lastCtxSeen = (void*)1;
  EXPECT(t9->listen(0, handle, &comm) == ncclSuccess && st->lastCtxSeen == NULL); /* no context yet */
  EXPECT(t9->init(NULL) == ncclSuccess && st->inits == 2);
  EXPECT(t8->init(NULL) == ncclSuccess && st->inits == 2);
  EXPECT(t8->listen(0, handle, &comm) == ncclSuccess && st->lastCtxSeen != NULL);
}

static void caseSizes(void) {
  void* req = NULL;
  int phToken;
  void* phs[2] = {&phToken, &phToken};
  /* v12/v11 pass phandles; v9 and v8 drop them */
  EXPECT(t11->isend(st, NULL, (size_t)5 << 32, 1, NULL, &phToken, &req) == ncclSuccess);
  EXPECT(st->lastSendSize == ((size_t)5 << 32) && st->lastSendPhandle == &phToken);
  EXPECT(t9->isend(st, NULL, 1000, 1, NULL, &req) == ncclSuccess && st->lastSendPhandle == NULL && st->lastSendSize == 1000);
  EXPECT(t8->isend(st, NULL, 123456, 1, NULL, &req) == ncclSuccess && st->lastSendSize == 123456);
  EXPECT(t8->isend(st, NULL, -1, 1, NULL, &req) == ncclInternalError);

  void* data[2] = {NULL, NULL};
  int tags[2] = {0, 1};
  void* mh[2] = {NULL, NULL};
  size_t wide[2] = {7, 9};
  req = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION;
  EXPECT(t11->irecv(st, 2, data, wide, tags, mh, phs, &req) == ncclSuccess);
  EXPECT(st->requestOnEntry == (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION && st->lastRecvPhandles == (void*)phs);
  req = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION;
  EXPECT(t9->irecv(st, 2, data, wide, tags, mh, &req) == ncclSuccess && st->lastRecvPhandles == NULL);
  int narrow[2] = {2000000000, 0};
  req = (void*)0x1234; /* junk a v8 core might leave there */
  EXPECT(t8->irecv(st, 2, data, narrow, tags, mh, &req) == ncclSuccess);
  EXPECT(st->requestOnEntry == NULL && st->lastRecvN == 2 && st->lastRecvSizes[0] == 2000000000u &&
         st->lastRecvSizes[1] == 0 && req == (void*)st);
  narrow[1] = -5;
  EXPECT(t8->irecv(st, 2, data, narrow, tags, mh, &req) == ncclInternalError);
  EXPECT(t8->irecv(st, 0, data, narrow, tags, mh, &req) == ncclInternalError);
  EXPECT(t8->irecv(st, 65, data, narrow, tags, mh, &req) == ncclInternalError);
}

static void caseOptional(int present) {
  if (!present) {
    EXPECT(t12->makeVDevice == NULL && t12->setNetAttr == NULL);
    EXPECT(t11->makeVDevice == NULL && t11->setNetAttr == NULL && t10->makeVDevice == NULL && t9->makeVDevice == NULL);
    EXPECT(t8->getDeviceMr == NULL && t8->irecvConsumed == NULL && t11->regMrDmaBuf == NULL);
    return;
  }
  ncclNetVDeviceProps_v11_t v11 = {3, {4, 5, 6, 0}};
  int d = -1;
  EXPECT(t11->makeVDevice(&d, &v11) == ncclSuccess && d == 1 && st->vdevNdevs == 3 && st->vdevDevs[2] == 6 &&
         st->vdevDevs[3] == 0);
  ncclNetVDeviceProps_v9_t v9 = {5, {1, 2, 3, 4}};
  EXPECT(t9->makeVDevice(&d, &v9) == ncclInvalidUsage);
  ncclNetVDeviceProps_v10_t v10 = {1, {8, 0, 0, 0}};
  EXPECT(t10->makeVDevice(&d, &v10) == ncclSuccess && st->vdevNdevs == 1 && st->vdevDevs[0] == 8);
  ncclNetAttr_v11_t a = NCCL_NET_ATTR_INIT;
  a.sendCommAttr.maxConcurrentPeers = 6;
  a.proto = 4;
  EXPECT(t11->setNetAttr(NULL, &a) == ncclSuccess && st->attrMaxPeers == 6 && st->attrProto == 4);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s <fake.so> <case>\n", argv[0]);
    return 2;
  }
  lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  struct fakeStats* (*stats)(void) = (struct fakeStats * (*)(void)) dlsym(lib, "fakeStats");
  t12 = (const ncclNet_v12_t*)dlsym(lib, "ncclNetPlugin_v12");
  t11 = (const ncclNet_v11_t*)dlsym(lib, "ncclNetPlugin_v11");
  t10 = (const ncclNet_v10_t*)dlsym(lib, "ncclNetPlugin_v10");
  t9 = (const ncclNet_v9_t*)dlsym(lib, "ncclNetPlugin_v9");
  t8 = (const ncclNet_v8_t*)dlsym(lib, "ncclNetPlugin_v8");
  if (!stats || !t12 || !t11 || !t10 || !t9 || !t8) {
    fprintf(stderr, "missing exported symbols\n");
    return 1;
  }
  if (dlsym(lib, "chrNetPluginV12") != NULL) fprintf(stderr, "FAILED: chrNetPluginV12 is exported\n"), failures++;
  st = stats();
  const char* c = argv[2];
  if (strcmp(c, "tables") == 0) caseTables();
  else if (strcmp(c, "props") == 0) caseProps();
  else if (strcmp(c, "init") == 0) caseInit();
  else if (strcmp(c, "sizes") == 0) caseSizes();
  else if (strcmp(c, "init_retry") == 0) caseInitRetry();
  else if (strcmp(c, "optional") == 0) caseOptional(1);
  else if (strcmp(c, "no_optional") == 0) caseOptional(0);
  else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  return failures ? 1 : 0;
}
