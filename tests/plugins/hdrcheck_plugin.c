/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hdrcheck_plugin.c: a net + tuner plugin written the way a plugin written for NCCL is, using every
 * name NCCL's plugin headers give plugin authors (NCCL_NET_PLUGIN_SYMBOL, NCCL_NET_ATTR_INIT, the MR
 * and signal flags, NCCL_NET_MTU_SIZE, the net profiler descriptors, NCCL_TUNER_PLUGIN_SYMBOL ...).
 * Built as a C module (loaded by test_plugin_headers) and compiled again as C++20 (syntax only), since
 * many NCCL plugins are C++. The values are checked against numbers written out here, independently
 * of the headers. The env plugin tables' sizes are checked too.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plugin/env.h"
#include "plugin/net.h"
#include "plugin/profiler.h"
#include "plugin/profiler_net_ib.h"
#include "plugin/profiler_net_socket.h"
#include "plugin/tuner.h"

#ifdef __cplusplus
#define HC_ASSERT(cond, msg) static_assert(cond, msg)
#define HC_EXTERN extern "C"
#else
#define HC_ASSERT(cond, msg) _Static_assert(cond, msg)
#define HC_EXTERN
#endif
#define HC_EXPORT HC_EXTERN __attribute__((visibility("default")))

/* ---- constants, against the published values ---- */
HC_ASSERT(NCCL_NET_HANDLE_MAXSIZE == 128, "handle size");
HC_ASSERT(NCCL_PTR_HOST == 1 && NCCL_PTR_CUDA == 2 && NCCL_PTR_DMABUF == 4, "pointer kinds");
HC_ASSERT(NCCL_NET_MR_FLAG_FORCE_SO == 1 && NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET == 2, "MR flags");
HC_ASSERT(NCCL_NET_SIGNAL_OP_INC == 1 && NCCL_NET_SIGNAL_OP_ADD == 2, "signal ops");
HC_ASSERT(NCCL_NET_MAX_REQUESTS == 32, "max requests");
HC_ASSERT(NCCL_NET_MAX_PLUGINS == 16, "plugin slots");
HC_ASSERT(NCCL_NET_OPTIONAL_RECV_COMPLETION == 1 && NCCL_NET_MULTI_REQUEST == 2, "request hints");
HC_ASSERT(NCCL_MAX_NET_SIZE_BYTES == 1099511627776ULL, "2^40");
HC_ASSERT(MAX_NET_SIZE == 1073741824LL && MAX_COLLNET_SIZE == 536870912LL, "v8 limits");
HC_ASSERT(NCCL_NET_MTU_SIZE == 4096, "mtu");
HC_ASSERT(NCCL_NET_DEVICE_INVALID_VERSION == 0 && NCCL_NET_DEVICE_UNPACK_VERSION == 7, "device versions");
HC_ASSERT(NCCL_NET_DEVICE_HOST == 0 && NCCL_NET_DEVICE_UNPACK == 1 && NCCL_NET_DEVICE_GIN_GPI == 4, "dev types");
HC_ASSERT(NCCL_NET_MAX_DEVS_PER_NIC == 8 && NCCL_NET_MAX_DEVS_PER_NIC_V9 == 4, "vNIC fan-in");
HC_ASSERT(NCCL_NET_TRAFFIC_CLASS_UNDEF == -1 && NCCL_NET_ATTR_UNDEF == -1 && NCCL_NET_ID_UNDEF == -1, "undef");
HC_ASSERT(sizeof(ncclNetAttr_t) == 44 && sizeof(ncclNetProperties_t) == 128, "v12 layouts");
HC_ASSERT(sizeof(ncclNetDeviceHandle_t) == 32, "device handle");
HC_ASSERT(sizeof(ncclNetProperties_v7_t) == 56 && sizeof(ncclNetProperties_v6_t) == 48, "old properties");
HC_ASSERT(sizeof(ncclNet_v7_t) == 152 && sizeof(ncclNet_v6_t) == 136, "old net tables");
HC_ASSERT(sizeof(ncclCollNet_v7_t) == 120 && sizeof(ncclCollNet_v6_t) == 120, "old collnet tables");
HC_ASSERT(sizeof(ncclEnv_v2_t) == 32 && sizeof(ncclEnv_v1_t) == 32 && sizeof(ncclEnv_t) == 32, "env tables");
HC_ASSERT(NCCL_NET_MAX_REQUESTS_V6 == 8, "v6 request limit");
HC_ASSERT(ncclProfilerNetEventStart == 0 && ncclProfilerNetEventStop == 1 && ncclProfilerNetEventUpdate == 2 &&
              ncclProfilerNetEventUpdateAndStop == 3, "net event actions");
HC_ASSERT(NCCL_PROFILER_NET_VER_BITS == 16 && NCCL_PROFILER_NET_VER_MASK == 0xffffU &&
              NCCL_PROFILER_NET_TYPE_MASK == 0xffff0000U, "net id masks");
HC_ASSERT(NCCL_PROFILER_NET_TYPE_IB == 0x10000 && NCCL_PROFILER_NET_TYPE_SOCK == 0x20000, "net types");
HC_ASSERT(NCCL_PROFILER_NET_IB_VER == 1 && NCCL_PROFILER_NET_SOCKET_VER == 1, "descr versions");
HC_ASSERT(ncclProfileQp == 1 && ncclProfileSocket == 1 && ncclProfileNetPlugin == 128, "event kinds");
HC_ASSERT(offsetof(ncclProfilerNetIbDescr_v1_t, qp.device) == 8 && offsetof(ncclProfilerNetIbDescr_v1_t, qp.wr_id) == 16 &&
              offsetof(ncclProfilerNetIbDescr_v1_t, qp.length) == 32 && sizeof(ncclProfilerNetIbDescr_v1_t) == 40,
          "IB descriptor layout");
HC_ASSERT(offsetof(ncclProfilerNetSockDescr_v1_t, sock.fd) == 8 && offsetof(ncclProfilerNetSockDescr_v1_t, sock.length) == 16 &&
              sizeof(ncclProfilerNetSockDescr_v1_t) == 24,
          "socket descriptor layout");
HC_ASSERT(NCCL_NUM_FUNCTIONS == 5 && NCCL_NUM_ALGORITHMS_V5 == 7 && NCCL_NUM_PROTOCOLS_V5 == 3 &&
              NCCL_NUM_HW_LINKS_V5 == 3 && NCCL_NUM_COMPCAPS_V5 == 4 && NCCL_NUM_TUNING_SCALES_V5 == 3,
          "tuner dimensions");
HC_ASSERT(NCCL_TUNING_IGNORE == -1.0 && NCCL_ALGO_PROTO_IGNORE == -1.0, "ignore");

/* ---- a net plugin, as NCCL plugins write one ---- */
static ncclDebugLogger_t hcLog;
static ncclProfilerCallback_t hcProf;
static ncclNetAttr_t hcAttr = NCCL_NET_ATTR_INIT; /* a static initializer, as NCCL's core uses it */

static ncclResult_t hcInit(void** ctx, uint64_t commId, ncclNetCommConfig_t* config, ncclDebugLogger_t logFunction,
                           ncclProfilerCallback_t profFunction) {
  (void)commId;
  (void)config;
  hcLog = logFunction;
  hcProf = profFunction;
  *ctx = &hcAttr;
  return ncclSuccess;
}
static ncclResult_t hcDevices(int* ndev) {
  *ndev = 1;
  return ncclSuccess;
}
static ncclResult_t hcGetProperties(int dev, ncclNetProperties_t* props) {
  memset(props, 0, sizeof(*props));
  props->name = (char*)"hdrcheck";
  props->ptrSupport = NCCL_PTR_HOST;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = MAX_COLLNET_SIZE;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}
/* The device handle of every version is one type: a v8-era helper takes the v12 argument as is. */
static int hcOffloadRequested(ncclNetDeviceHandle_v8_t** devComm) { return devComm != NULL && *devComm != NULL; }
static ncclResult_t hcConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm) {
  (void)ctx;
  (void)dev;
  (void)handle;
  *sendComm = NULL;
  return hcOffloadRequested(sendDevComm) ? ncclInvalidUsage : ncclSuccess;
}
/* isend reports one IB queue-pair event through the profiler callback, as NCCL's IB transport does. */
static ncclResult_t hcIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                            void** request) {
  static ncclProfilerNetIbDescr_v1_t descr;
  void* eHandle = NULL;
  (void)sendComm;
  (void)data;
  (void)mhandle;
  memset(&descr, 0, sizeof(descr));
  descr.type = ncclProfileQp;
  descr.qp.device = 0;
  descr.qp.wr_id = 77;
  descr.qp.opcode = 4;
  descr.qp.qpNum = tag;
  descr.qp.length = size;
  *request = NULL;
  if (hcProf == NULL) return ncclInternalError;
  ncclResult_t res = hcProf(&eHandle, ncclProfilerNetEventStart, phandle,
                            (int64_t)(NCCL_PROFILER_NET_TYPE_IB | NCCL_PROFILER_NET_IB_VER), &descr);
  if (res != ncclSuccess) return res;
  return hcProf(&eHandle, ncclProfilerNetEventStop, phandle, 0, NULL);
}
static ncclResult_t hcSetNetAttr(void* ctx, ncclNetAttr_t* netAttr) {
  (void)ctx;
  hcAttr = *netAttr;
  return ncclSuccess;
}
static ncclResult_t hcFinalize(void* ctx) {
  (void)ctx;
  return ncclSuccess;
}

HC_EXPORT const ncclNet_t NCCL_NET_PLUGIN_SYMBOL = {
    /* .name = */ "hdrcheck",
    /* .init = */ hcInit,
    /* .devices = */ hcDevices,
    /* .getProperties = */ hcGetProperties,
    /* .listen = */ NULL,
    /* .connect = */ hcConnect,
    /* .accept = */ NULL,
    /* .regMr = */ NULL,
    /* .regMrDmaBuf = */ NULL,
    /* .deregMr = */ NULL,
    /* .isend = */ hcIsend,
    /* .irecv = */ NULL,
    /* .iflush = */ NULL,
    /* .test = */ NULL,
    /* .closeSend = */ NULL,
    /* .closeRecv = */ NULL,
    /* .closeListen = */ NULL,
    /* .getDeviceMr = */ NULL,
    /* .irecvConsumed = */ NULL,
    /* .makeVDevice = */ NULL,
    /* .finalize = */ hcFinalize,
    /* .setNetAttr = */ hcSetNetAttr,
};

/* Older NCCL releases find the plugin through its v7 table (Chorus itself refuses v7: types only). */
static ncclResult_t hcInitV7(ncclDebugLogger_t logFunction) {
  hcLog = logFunction;
  return ncclSuccess;
}
static ncclResult_t hcConnectV7(int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v7_t** sendDevComm) {
  return hcConnect(NULL, dev, handle, sendComm, sendDevComm); /* one handle type for every version */
}
HC_EXPORT const ncclNet_v7_t ncclNetPlugin_v7 = {
    /* .name = */ "hdrcheck",
    /* .init = */ hcInitV7,
    /* .devices = */ hcDevices,
    /* .getProperties = */ NULL,
    /* .listen = */ NULL,
    /* .connect = */ hcConnectV7,
    /* .accept = */ NULL,
    /* .regMr = */ NULL,
    /* .regMrDmaBuf = */ NULL,
    /* .deregMr = */ NULL,
    /* .isend = */ NULL,
    /* .irecv = */ NULL,
    /* .iflush = */ NULL,
    /* .test = */ NULL,
    /* .closeSend = */ NULL,
    /* .closeRecv = */ NULL,
    /* .closeListen = */ NULL,
    /* .getDeviceMr = */ NULL,
    /* .irecvConsumed = */ NULL,
};

/* Read back by the test: the attribute state after init (NCCL_NET_ATTR_INIT) or after setNetAttr. */
HC_EXPORT const ncclNetAttr_t* hcCurrentAttr(void) { return &hcAttr; }

/* ---- a tuner in the same library, found through the string symbol name ---- */
static ncclResult_t hcTunerInit(void** ctx, uint64_t commId, size_t nRanks, size_t nNodes, ncclDebugLogger_t logFunction,
                                ncclNvlDomainInfo_t* nvlDomainInfo, ncclTunerConstants_t* constants) {
  (void)commId;
  (void)nRanks;
  (void)nNodes;
  (void)logFunction;
  (void)nvlDomainInfo;
  (void)constants;
  *ctx = NULL;
  return ncclSuccess;
}
static ncclResult_t hcGetCollInfo(void* ctx, ncclFunc_t collType, size_t nBytes, int numPipeOps, float** collCostTable,
                                  int numAlgo, int numProto, int regBuff, int* nChannels) {
  float* table = (float*)collCostTable;
  (void)ctx;
  (void)collType;
  (void)nBytes;
  (void)numPipeOps;
  (void)regBuff;
  (void)nChannels;
  if (numAlgo != NCCL_NUM_ALGORITHMS || numProto != NCCL_NUM_PROTOCOLS) return ncclInternalError;
  if (table[NCCL_ALGO_RING * numProto + NCCL_PROTO_SIMPLE] != NCCL_ALGO_PROTO_IGNORE)
    table[NCCL_ALGO_RING * numProto + NCCL_PROTO_SIMPLE] = 0.0f;
  return ncclSuccess;
}
static ncclResult_t hcTunerFinalize(void* ctx) {
  (void)ctx;
  return ncclSuccess;
}
HC_EXPORT const ncclTuner_t ncclTunerPlugin_v6 = {
    /* .name = */ "hdrcheck",
    /* .init = */ hcTunerInit,
    /* .getCollInfo = */ hcGetCollInfo,
    /* .finalize = */ hcTunerFinalize,
    /* .getChunkSize = */ NULL,
};
