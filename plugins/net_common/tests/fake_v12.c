/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fake_v12.c: a v12 net plugin built on net_common that records what reaches it, so the test can see
 * what the older tables net_common exports turn each call into. No data moves. With
 * FAKE_NO_OPTIONAL the optional slots (makeVDevice, setNetAttr) are NULL.
 */
#include <stdlib.h>
#include <string.h>

#include "fake_stats.h"
#include "net_versions.h"

static struct fakeStats stats;
static int ctxToken;

__attribute__((visibility("default"))) struct fakeStats* fakeStats(void) { return &stats; }

static ncclResult_t fInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                          ncclProfilerCallback_t prof) {
  (void)log;
  stats.inits++;
  /* FAKE_INIT_FAILURES=k: the first k inits fail (the per-process init must stay retryable) */
  const char* f = getenv("FAKE_INIT_FAILURES");
  if (f && stats.inits <= atoi(f)) {
    *ctx = NULL;
    return ncclSystemError;
  }
  stats.lastCommId = commId;
  stats.lastTrafficClass = config ? config->trafficClass : -100;
  stats.lastProf = (void*)prof;
  *ctx = &ctxToken;
  return ncclSuccess;
}
static ncclResult_t fDevices(int* n) {
  *n = 1;
  return ncclSuccess;
}
/* Every field distinct, and 6 vNIC children: more than the v9..v11 arrays hold. */
static ncclResult_t fGetProperties(int dev, ncclNetProperties_v12_t* p) {
  memset(p, 0x5a, sizeof(*p));
  p->name = (char*)"fake";
  p->pciPath = (char*)"/sys/fake";
  p->guid = 0x1122334455667788ULL;
  p->ptrSupport = NCCL_PTR_HOST | NCCL_PTR_DMABUF;
  p->regIsGlobal = 1;
  p->forceFlush = 1;
  p->speed = 100000;
  p->port = 2;
  p->latency = 1.5f;
  p->maxComms = 1000;
  p->maxRecvs = 4;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = 0;
  p->vProps.ndevs = 6;
  for (int i = 0; i < 8; i++) p->vProps.devs[i] = dev * 10 + i;
  p->maxP2pBytes = 1ULL << 33;
  p->maxCollBytes = 1ULL << 31;
  p->maxMultiRequestSize = 3;
  p->railId = 7;
  p->planeId = 9;
  return ncclSuccess;
}
static ncclResult_t fListen(void* ctx, int dev, void* handle, void** listenComm) {
  (void)dev;
  (void)handle;
  stats.lastCtxSeen = ctx;
  *listenComm = &stats;
  return ncclSuccess;
}
static ncclResult_t fConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** devComm) {
  (void)dev;
  (void)handle;
  (void)devComm;
  stats.lastCtxSeen = ctx;
  *sendComm = &stats;
  return ncclSuccess;
}
static ncclResult_t fAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** devComm) {
  (void)devComm;
  *recvComm = listenComm;
  return ncclSuccess;
}
static ncclResult_t fRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  (void)comm;
  (void)data;
  (void)size;
  (void)type;
  *mhandle = &stats;
  return ncclSuccess;
}
static ncclResult_t fDeregMr(void* comm, void* mhandle) {
  (void)comm;
  (void)mhandle;
  return ncclSuccess;
}
static ncclResult_t fIsend(void* comm, void* data, size_t size, int tag, void* mh, void* phandle, void** request) {
  (void)comm;
  (void)data;
  (void)tag;
  (void)mh;
  stats.lastSendSize = size;
  stats.lastSendPhandle = phandle;
  *request = &stats;
  return ncclSuccess;
}
static ncclResult_t fIrecv(void* comm, int n, void** data, size_t* sizes, int* tags, void** mh, void** phandles,
                           void** request) {
  (void)comm;
  (void)data;
  (void)tags;
  (void)mh;
  stats.requestOnEntry = *request;
  stats.lastRecvN = n;
  for (int i = 0; i < n && i < 8; i++) stats.lastRecvSizes[i] = sizes[i];
  stats.lastRecvPhandles = (void*)phandles;
  *request = &stats;
  return ncclSuccess;
}
static ncclResult_t fTest(void* request, int* done, int* sizes) {
  (void)request;
  (void)sizes;
  *done = 1;
  return ncclSuccess;
}
static ncclResult_t fClose(void* comm) {
  (void)comm;
  return ncclSuccess;
}
#ifndef FAKE_NO_OPTIONAL
static ncclResult_t fMakeVDevice(int* d, ncclNetVDeviceProps_v12_t* props) {
  stats.vdevNdevs = props->ndevs;
  memcpy(stats.vdevDevs, props->devs, sizeof(stats.vdevDevs));
  *d = 1;
  return ncclSuccess;
}
static ncclResult_t fSetNetAttr(void* ctx, ncclNetAttr_v12_t* attr) {
  (void)ctx;
  stats.attrMaxPeers = attr->sendCommAttr.maxConcurrentPeers;
  stats.attrProto = attr->proto;
  return ncclSuccess;
}
#define F_MAKEVDEVICE fMakeVDevice
#define F_SETNETATTR fSetNetAttr
#else
#define F_MAKEVDEVICE NULL
#define F_SETNETATTR NULL
#endif
static ncclResult_t fFinalize(void* ctx) {
  (void)ctx;
  return ncclSuccess;
}

const ncclNet_v12_t chrNetPluginV12 = {
    .name = "Fake",
    .init = fInit,
    .devices = fDevices,
    .getProperties = fGetProperties,
    .listen = fListen,
    .connect = fConnect,
    .accept = fAccept,
    .regMr = fRegMr,
    .regMrDmaBuf = NULL,
    .deregMr = fDeregMr,
    .isend = fIsend,
    .irecv = fIrecv,
    .iflush = NULL,
    .test = fTest,
    .closeSend = fClose,
    .closeRecv = fClose,
    .closeListen = fClose,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = F_MAKEVDEVICE,
    .finalize = fFinalize,
    .setNetAttr = F_SETNETATTR,
};
CHR_NET_EXPORT_V12();
