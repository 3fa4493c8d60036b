/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_abi.c: the frozen net plugin ABI headers (plugin/net_v8.h .. net_v12.h) have the sizes
 * and field offsets of NCCL's, so plugins built for NCCL load unchanged.
 * Also includes every version into one translation unit, which is what a multi-version plugin does.
 */
#include <stddef.h>
#include <stdio.h>

#include "plugin/net.h"

static int failures;

#define EXPECT_EQ(what, got, want)                                                          \
  do {                                                                                      \
    size_t g_ = (size_t)(got), w_ = (size_t)(want);                                         \
    if (g_ != w_) {                                                                         \
      fprintf(stderr, "FAIL %s: %zu, expected %zu\n", what, g_, w_);                        \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)
#define SIZE(T, want) EXPECT_EQ("sizeof(" #T ")", sizeof(T), want)
#define OFF(T, f, want) EXPECT_EQ("offsetof(" #T ", " #f ")", offsetof(T, f), want)
/* Table slots are pointers: slot k sits at 8*k. */
#define SLOT(T, f, k) EXPECT_EQ("slot " #T "." #f, offsetof(T, f), (k) * sizeof(void*))

static void constants(void) {
  EXPECT_EQ("NCCL_NET_HANDLE_MAXSIZE", NCCL_NET_HANDLE_MAXSIZE, 128);
  EXPECT_EQ("NCCL_PTR_HOST", NCCL_PTR_HOST, 1);
  EXPECT_EQ("NCCL_PTR_CUDA", NCCL_PTR_CUDA, 2);
  EXPECT_EQ("NCCL_PTR_DMABUF", NCCL_PTR_DMABUF, 4);
  EXPECT_EQ("NCCL_NET_MAX_REQUESTS", NCCL_NET_MAX_REQUESTS, 32);
  EXPECT_EQ("NCCL_NET_OPTIONAL_RECV_COMPLETION", NCCL_NET_OPTIONAL_RECV_COMPLETION, 1);
  EXPECT_EQ("NCCL_NET_MULTI_REQUEST", NCCL_NET_MULTI_REQUEST, 2);
  EXPECT_EQ("NCCL_MAX_NET_SIZE_BYTES", NCCL_MAX_NET_SIZE_BYTES, 1ULL << 40);
  EXPECT_EQ("NCCL_NET_MAX_DEVS_PER_NIC_V12", NCCL_NET_MAX_DEVS_PER_NIC_V12, 8);
  EXPECT_EQ("NCCL_NET_MAX_DEVS_PER_NIC_V11", NCCL_NET_MAX_DEVS_PER_NIC_V11, 4);
  EXPECT_EQ("NCCL_NET_MAX_DEVS_PER_NIC_V10", NCCL_NET_MAX_DEVS_PER_NIC_V10, 4);
  EXPECT_EQ("NCCL_NET_MAX_DEVS_PER_NIC_V9", NCCL_NET_MAX_DEVS_PER_NIC_V9, 4);
  EXPECT_EQ("NCCL_NET_TRAFFIC_CLASS_UNDEF", (long)NCCL_NET_TRAFFIC_CLASS_UNDEF + 2, 1);
  EXPECT_EQ("NCCL_NET_ATTR_UNDEF", (long)NCCL_NET_ATTR_UNDEF + 2, 1);
  EXPECT_EQ("NCCL_NET_ID_UNDEF", (long)NCCL_NET_ID_UNDEF + 2, 1);
  EXPECT_EQ("NCCL_NET_MAX_PLUGINS", NCCL_NET_MAX_PLUGINS, 16);
  EXPECT_EQ("NCCL_NET_DEVICE_HOST", NCCL_NET_DEVICE_HOST, 0);
  EXPECT_EQ("NCCL_NET_DEVICE_UNPACK", NCCL_NET_DEVICE_UNPACK, 1);
  EXPECT_EQ("NCCL_NET_DEVICE_GIN_PROXY", NCCL_NET_DEVICE_GIN_PROXY, 2);
  EXPECT_EQ("NCCL_NET_DEVICE_GIN_GDAKI", NCCL_NET_DEVICE_GIN_GDAKI, 3);
  EXPECT_EQ("NCCL_NET_DEVICE_GIN_GPI", NCCL_NET_DEVICE_GIN_GPI, 4);
  EXPECT_EQ("NCCL_NET_DEVICE_UNPACK_VERSION", NCCL_NET_DEVICE_UNPACK_VERSION, 7);
  SIZE(ncclNetDeviceType, 4);
}

/* Fields every properties version shares, at the same offsets. */
#define BASE_PROPS(T)                \
  OFF(T, name, 0);                   \
  OFF(T, pciPath, 8);                \
  OFF(T, guid, 16);                  \
  OFF(T, ptrSupport, 24);            \
  OFF(T, regIsGlobal, 28)

/* v9..v12 (forceFlush shifts the rest by 4 compared to v8). */
#define PROPS_V9_PLUS(T)             \
  BASE_PROPS(T);                     \
  OFF(T, forceFlush, 32);            \
  OFF(T, speed, 36);                 \
  OFF(T, port, 40);                  \
  OFF(T, latency, 44);               \
  OFF(T, maxComms, 48);              \
  OFF(T, maxRecvs, 52);              \
  OFF(T, netDeviceType, 56);         \
  OFF(T, netDeviceVersion, 60);      \
  OFF(T, vProps, 64)

static void properties(void) {
  SIZE(ncclNetProperties_v12_t, 128);
  PROPS_V9_PLUS(ncclNetProperties_v12_t);
  OFF(ncclNetProperties_v12_t, maxP2pBytes, 104);
  OFF(ncclNetProperties_v12_t, maxCollBytes, 112);
  OFF(ncclNetProperties_v12_t, maxMultiRequestSize, 120);
  OFF(ncclNetProperties_v12_t, railId, 124);
  OFF(ncclNetProperties_v12_t, planeId, 126);
  SIZE(ncclNetVDeviceProps_v12_t, 36);

  SIZE(ncclNetProperties_v11_t, 112);
  PROPS_V9_PLUS(ncclNetProperties_v11_t);
  OFF(ncclNetProperties_v11_t, maxP2pBytes, 88);
  OFF(ncclNetProperties_v11_t, maxCollBytes, 96);
  OFF(ncclNetProperties_v11_t, maxMultiRequestSize, 104);
  SIZE(ncclNetVDeviceProps_v11_t, 20);

  SIZE(ncclNetProperties_v10_t, 104);
  PROPS_V9_PLUS(ncclNetProperties_v10_t);
  OFF(ncclNetProperties_v10_t, maxP2pBytes, 88);
  OFF(ncclNetProperties_v10_t, maxCollBytes, 96);
  SIZE(ncclNetVDeviceProps_v10_t, 20);

  SIZE(ncclNetProperties_v9_t, 104);
  PROPS_V9_PLUS(ncclNetProperties_v9_t);
  OFF(ncclNetProperties_v9_t, maxP2pBytes, 88);
  OFF(ncclNetProperties_v9_t, maxCollBytes, 96);
  SIZE(ncclNetVDeviceProps_v9_t, 20);

  SIZE(ncclNetProperties_v8_t, 64);
  BASE_PROPS(ncclNetProperties_v8_t);
  OFF(ncclNetProperties_v8_t, speed, 32);
  OFF(ncclNetProperties_v8_t, port, 36);
  OFF(ncclNetProperties_v8_t, latency, 40);
  OFF(ncclNetProperties_v8_t, maxComms, 44);
  OFF(ncclNetProperties_v8_t, maxRecvs, 48);
  OFF(ncclNetProperties_v8_t, netDeviceType, 52);
  OFF(ncclNetProperties_v8_t, netDeviceVersion, 56);
}

#define DEVICE_HANDLE(T)             \
  SIZE(T, 32);                       \
  OFF(T, netDeviceType, 0);          \
  OFF(T, netDeviceVersion, 4);       \
  OFF(T, handle, 8);                 \
  OFF(T, size, 16);                  \
  OFF(T, needsProxyProgress, 24)

#define SGE(T)                       \
  SIZE(T, 24);                       \
  OFF(T, mhandle, 0);                \
  OFF(T, address, 8);                \
  OFF(T, size, 16)

static void smallStructs(void) {
  DEVICE_HANDLE(ncclNetDeviceHandle_v12_t);
  DEVICE_HANDLE(ncclNetDeviceHandle_v11_t);
  DEVICE_HANDLE(ncclNetDeviceHandle_v10_t);
  DEVICE_HANDLE(ncclNetDeviceHandle_v9_t);
  DEVICE_HANDLE(ncclNetDeviceHandle_v8_t);
  SGE(ncclNetSGE_v12_t);
  SGE(ncclNetSGE_v11_t);
  SGE(ncclNetSGE_v10_t);
  SGE(ncclNetSGE_v9_t);
  SGE(ncclNetSGE_v8_t);
  SIZE(ncclNetCommConfig_v12_t, 4);
  SIZE(ncclNetCommConfig_v11_t, 4);
  SIZE(ncclNetCommConfig_v10_t, 4);
  SIZE(ncclNetCommAttr_v12_t, 16);
  SIZE(ncclNetCommAttr_v11_t, 16);
  SIZE(ncclNetAttr_v12_t, 44);
  SIZE(ncclNetAttr_v11_t, 44);
  OFF(ncclNetAttr_v12_t, sendCommAttr, 0);
  OFF(ncclNetAttr_v12_t, recvCommAttr, 16);
  OFF(ncclNetAttr_v12_t, op, 32);
  OFF(ncclNetAttr_v12_t, algo, 36);
  OFF(ncclNetAttr_v12_t, proto, 40);
  OFF(ncclNetCommAttr_v12_t, minFlowsPerPeer, 12);
}

/* Slots 0..18 are the same in every version v8..v12. */
#define COMMON_SLOTS(T)                                                                          \
  SLOT(T, name, 0); SLOT(T, init, 1); SLOT(T, devices, 2); SLOT(T, getProperties, 3);            \
  SLOT(T, listen, 4); SLOT(T, connect, 5); SLOT(T, accept, 6); SLOT(T, regMr, 7);                \
  SLOT(T, regMrDmaBuf, 8); SLOT(T, deregMr, 9); SLOT(T, isend, 10); SLOT(T, irecv, 11);          \
  SLOT(T, iflush, 12); SLOT(T, test, 13); SLOT(T, closeSend, 14); SLOT(T, closeRecv, 15);        \
  SLOT(T, closeListen, 16); SLOT(T, getDeviceMr, 17); SLOT(T, irecvConsumed, 18)

static void netTables(void) {
  SIZE(ncclNet_v12_t, 176);
  COMMON_SLOTS(ncclNet_v12_t);
  SLOT(ncclNet_v12_t, makeVDevice, 19);
  SLOT(ncclNet_v12_t, finalize, 20);
  SLOT(ncclNet_v12_t, setNetAttr, 21);

  SIZE(ncclNet_v11_t, 176);
  COMMON_SLOTS(ncclNet_v11_t);
  SLOT(ncclNet_v11_t, makeVDevice, 19);
  SLOT(ncclNet_v11_t, finalize, 20);
  SLOT(ncclNet_v11_t, setNetAttr, 21);

  SIZE(ncclNet_v10_t, 160);
  COMMON_SLOTS(ncclNet_v10_t);
  SLOT(ncclNet_v10_t, makeVDevice, 19);

  SIZE(ncclNet_v9_t, 160);
  COMMON_SLOTS(ncclNet_v9_t);
  SLOT(ncclNet_v9_t, makeVDevice, 19);

  SIZE(ncclNet_v8_t, 152);
  COMMON_SLOTS(ncclNet_v8_t);
}

#define COLL_SLOTS(T)                                                                           \
  SLOT(T, name, 0); SLOT(T, init, 1); SLOT(T, devices, 2); SLOT(T, getProperties, 3);           \
  SLOT(T, listen, 4); SLOT(T, connect, 5); SLOT(T, reduceSupport, 6); SLOT(T, regMr, 7);        \
  SLOT(T, regMrDmaBuf, 8); SLOT(T, deregMr, 9); SLOT(T, iallreduce, 10); SLOT(T, iallgather, 11); \
  SLOT(T, ireducescatter, 12); SLOT(T, iflush, 13); SLOT(T, test, 14); SLOT(T, closeColl, 15);  \
  SLOT(T, closeListen, 16)

static void collNetTables(void) {
  SIZE(ncclCollNet_v12_t, 152);
  COLL_SLOTS(ncclCollNet_v12_t);
  SLOT(ncclCollNet_v12_t, makeVDevice, 17);
  SLOT(ncclCollNet_v12_t, finalize, 18);
  SIZE(ncclCollNet_v11_t, 152);
  COLL_SLOTS(ncclCollNet_v11_t);
  SLOT(ncclCollNet_v11_t, finalize, 18);
  SIZE(ncclCollNet_v10_t, 144);
  COLL_SLOTS(ncclCollNet_v10_t);
  SLOT(ncclCollNet_v10_t, makeVDevice, 17);
  SIZE(ncclCollNet_v9_t, 144);
  COLL_SLOTS(ncclCollNet_v9_t);
  SLOT(ncclCollNet_v9_t, makeVDevice, 17);
  SIZE(ncclCollNet_v8_t, 136);
  COLL_SLOTS(ncclCollNet_v8_t);
}

/* The unversioned names are the newest version. */
static void internalAliases(void) {
  ncclNet_t* a = (ncclNet_v12_t*)0;
  ncclNetProperties_t* b = (ncclNetProperties_v12_t*)0;
  ncclCollNet_t* c = (ncclCollNet_v12_t*)0;
  (void)a;
  (void)b;
  (void)c;
  EXPECT_EQ("NCCL_NET_MAX_DEVS_PER_NIC", NCCL_NET_MAX_DEVS_PER_NIC, 8);
}

int main(void) {
  constants();
  properties();
  smallStructs();
  netTables();
  collNetTables();
  internalAliases();
  if (failures) {
    fprintf(stderr, "%d ABI mismatches\n", failures);
    return 1;
  }
  return 0;
}
