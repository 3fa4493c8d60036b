/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_plugin_headers.c: loads hdrcheck_plugin.c's module (a plugin written against Chorus's plugin
 * headers the way NCCL plugins are written) and checks that the names resolve and behave: the objects
 * are found under the names NCCL_NET_PLUGIN_SYMBOL / NCCL_TUNER_PLUGIN_SYMBOL stand for, the attribute
 * initializer gives all-undefined values, and a net profiler event arrives with the IB descriptor.
 * Usage: test_plugin_headers <module.so>
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#include "plugin/net.h"
#include "plugin/profiler_net_ib.h"
#include "plugin/tuner.h"

#define STR2(x) #x
#define STR(x) STR2(x)

static int failures;
#define CHECK_TRUE(cond)                                            \
  do {                                                              \
    if (!(cond)) {                                                  \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                   \
    }                                                               \
  } while (0)

static int events;
static int phandleToken; /* stands for the proxy-step handle the core would pass to isend */
static ncclResult_t profCallback(void** eHandle, int type, void* pHandle, int64_t pluginId, void* extData) {
  CHECK_TRUE(pHandle == (void*)&phandleToken);
  if (type == ncclProfilerNetEventStart) {
    const ncclProfilerNetIbDescr_v1_t* d = (const ncclProfilerNetIbDescr_v1_t*)extData;
    CHECK_TRUE((pluginId & NCCL_PROFILER_NET_TYPE_MASK) == NCCL_PROFILER_NET_TYPE_IB);
    CHECK_TRUE((pluginId & NCCL_PROFILER_NET_VER_MASK) == 1);
    CHECK_TRUE(d != NULL && d->type == ncclProfileQp && d->qp.wr_id == 77 && d->qp.qpNum == 5 && d->qp.length == 1234);
    *eHandle = &events;
  } else {
    CHECK_TRUE(type == ncclProfilerNetEventStop && *eHandle == (void*)&events);
  }
  events++;
  return ncclSuccess;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <module.so>\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  CHECK_TRUE(strcmp(STR(NCCL_NET_PLUGIN_SYMBOL), "ncclNetPlugin_v12") == 0);
  CHECK_TRUE(strcmp(STR(NCCL_COLLNET_PLUGIN_SYMBOL), "ncclCollNetPlugin_v12") == 0);
  const ncclNet_t* net = (const ncclNet_t*)dlsym(lib, STR(NCCL_NET_PLUGIN_SYMBOL));
  const ncclTuner_t* tuner = (const ncclTuner_t*)dlsym(lib, NCCL_TUNER_PLUGIN_SYMBOL);
  const ncclNetAttr_t* (*currentAttr)(void) = (const ncclNetAttr_t* (*)(void))dlsym(lib, "hcCurrentAttr");
  if (net == NULL || tuner == NULL || currentAttr == NULL) {
    fprintf(stderr, "missing symbols: net %p tuner %p attr %p\n", (void*)net, (void*)tuner, (void*)currentAttr);
    return 1;
  }
  CHECK_TRUE(strcmp(net->name, "hdrcheck") == 0 && strcmp(tuner->name, "hdrcheck") == 0);

  /* NCCL_NET_ATTR_INIT: every field undefined (-1, all ones for the masks). */
  const ncclNetAttr_t* a = currentAttr();
  const int32_t* words = (const int32_t*)(const void*)a;
  for (size_t i = 0; i < sizeof(*a) / sizeof(int32_t); i++) CHECK_TRUE(words[i] == -1);
  CHECK_TRUE(a->op == 0xffffffffu && a->algo == 0xffffffffu && a->proto == 0xffffffffu);

  void* ctx = NULL;
  ncclNetCommConfig_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  CHECK_TRUE(net->init(&ctx, 42, &cfg, NULL, profCallback) == ncclSuccess);
  ncclNetAttr_t set = NCCL_NET_ATTR_INIT;
  set.sendCommAttr.maxConcurrentPeers = 3;
  set.op = 1u << ncclFuncAllReduce;
  CHECK_TRUE(net->setNetAttr(ctx, &set) == ncclSuccess);
  CHECK_TRUE(currentAttr()->sendCommAttr.maxConcurrentPeers == 3 && currentAttr()->recvCommAttr.maxConcurrentPeers == -1);
  CHECK_TRUE(currentAttr()->op == 16u && currentAttr()->algo == 0xffffffffu);

  ncclNetProperties_t props;
  CHECK_TRUE(net->getProperties(0, &props) == ncclSuccess && props.maxCollBytes == (size_t)MAX_COLLNET_SIZE);

  /* A device-offload request is seen through a pointer of another version's name (same type). */
  ncclNetDeviceHandle_v10_t h10;
  ncclNetDeviceHandle_v12_t* dev = &h10;
  void* sendComm = NULL;
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  CHECK_TRUE(net->connect(ctx, 0, handle, &sendComm, &dev) == ncclInvalidUsage);
  CHECK_TRUE(net->connect(ctx, 0, handle, &sendComm, NULL) == ncclSuccess);

  /* isend reports one queue-pair event: start with the IB descriptor, then stop. */
  void* request = (void*)1;
  CHECK_TRUE(net->isend(NULL, NULL, 1234, 5, NULL, &phandleToken, &request) == ncclSuccess);
  CHECK_TRUE(events == 2 && request == NULL);
  CHECK_TRUE(net->finalize(ctx) == ncclSuccess);

  float table[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
  for (int i = 0; i < NCCL_NUM_ALGORITHMS; i++)
    for (int j = 0; j < NCCL_NUM_PROTOCOLS; j++) table[i][j] = 10.0f;
  void* tctx = NULL;
  CHECK_TRUE(tuner->init(&tctx, 1, 2, 1, NULL, NULL, NULL) == ncclSuccess);
  CHECK_TRUE(tuner->getCollInfo(tctx, ncclFuncAllReduce, 1024, 1, (float**)table, NCCL_NUM_ALGORITHMS,
                                NCCL_NUM_PROTOCOLS, 0, NULL) == ncclSuccess);
  CHECK_TRUE(table[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] == 0.0f && table[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] == 10.0f);
  dlclose(lib);
  if (failures) return 1;
  return 0;
}
