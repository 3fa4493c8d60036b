/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/net_common.h: constants shared by every net plugin ABI version (v8 .. v12).
 *
 * Frozen. Each versioned header (net_v8.h .. net_v12.h) includes this file, so any
 * number of them can be included into one translation unit (a plugin that exports
 * several versions does exactly that).
 */
#ifndef CHORUS_PLUGIN_NET_COMMON_H_
#define CHORUS_PLUGIN_NET_COMMON_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"

/* Bytes of the opaque connection handle. The core hands listen() a buffer of this size,
 * ships its content to the peer out of band and gives it to connect() there. */
#define NCCL_NET_HANDLE_MAXSIZE 128

/* Memory kinds: bits of ncclNetProperties.ptrSupport, and the `type` argument of regMr. */
#define NCCL_PTR_HOST 0x1
#define NCCL_PTR_CUDA 0x2
#define NCCL_PTR_DMABUF 0x4

/* Outstanding requests every send comm and every recv comm must be able to hold at once.
 * A send comm must hold NCCL_NET_MAX_REQUESTS * maxRecvs isends. */
#define NCCL_NET_MAX_REQUESTS 32

/* Value the core may store in *request before irecv: completion is detected by the core
 * through flags in the data itself, so the plugin may finish the request early (it still
 * returns a request that test() can poll). */
#define NCCL_NET_OPTIONAL_RECV_COMPLETION 0x1
/* Defined for completeness; the core never sets it. */
#define NCCL_NET_MULTI_REQUEST 0x2

/* Largest maxP2pBytes / maxCollBytes the core accepts from a plugin: 2^40 bytes. */
#define NCCL_MAX_NET_SIZE_BYTES (1ULL << 40)

/* Limits assumed for plugins whose properties carry no maxP2pBytes / maxCollBytes (v8 and older):
 * one transfer of at most 2^30 bytes (a power of two below INT_MAX), a collnet operation of 2^29. */
#define MAX_NET_SIZE (1LL << 30)
#define MAX_COLLNET_SIZE (1LL << 29)

/* Flags of a memory registration made for one-sided traffic (put/signal), a bit set:
 * FORCE_SO: writes into this region must become visible in the order they were issued (strong
 *   ordering), so a signal written after data is never seen before that data.
 * SIGNAL_NEVER_RESET: the region holds signal words that only grow and are never set back, which
 *   lets a plugin keep a shadow copy instead of reading them back. */
#define NCCL_NET_MR_FLAG_FORCE_SO (1 << 0)
#define NCCL_NET_MR_FLAG_SIGNAL_NEVER_RESET (1 << 1)

/* What a signal operation does to the remote signal word: add one, or add a given value. */
#define NCCL_NET_SIGNAL_OP_INC 0x1
#define NCCL_NET_SIGNAL_OP_ADD 0x2

/* "Not set" markers for trafficClass, attribute fields and ids. */
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)
#define NCCL_NET_ATTR_UNDEF (-1)
#define NCCL_NET_ID_UNDEF (-1)

/* Net plugin slots one process may hold (a build may set its own value beforehand). */
#ifndef NCCL_NET_MAX_PLUGINS
#define NCCL_NET_MAX_PLUGINS 16
#endif

/* Initial value of a ncclNetAttr_v11_t / ncclNetAttr_v12_t (the two layouts are the same): every
 * concurrency field NCCL_NET_ATTR_UNDEF and the op/algo/proto masks all ones. Written without field
 * names so that it is also a valid C++ initializer. */
#define NCCL_NET_ATTR_INIT                                                                       \
  {                                                                                              \
    {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF},        \
        {NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF, NCCL_NET_ATTR_UNDEF},    \
        (uint32_t)NCCL_NET_ATTR_UNDEF, (uint32_t)NCCL_NET_ATTR_UNDEF, (uint32_t)NCCL_NET_ATTR_UNDEF \
  }

/* Offload kind of a net device (int-sized enum). Host plugins report NCCL_NET_DEVICE_HOST
 * with netDeviceVersion 0. */
typedef enum {
  NCCL_NET_DEVICE_HOST = 0,
  NCCL_NET_DEVICE_UNPACK = 1,
  NCCL_NET_DEVICE_GIN_PROXY = 2,
  NCCL_NET_DEVICE_GIN_GDAKI = 3,
  NCCL_NET_DEVICE_GIN_GPI = 4
} ncclNetDeviceType;

/* The only netDeviceVersion accepted together with NCCL_NET_DEVICE_UNPACK. */
#define NCCL_NET_DEVICE_UNPACK_VERSION 0x7
/* netDeviceVersion meaning "no device offload at all". */
#define NCCL_NET_DEVICE_INVALID_VERSION 0x0
/* Bytes of one network packet as device-offload (unpack) code sees it. */
#define NCCL_NET_MTU_SIZE 4096

/* Device-offload handle (32 bytes). The layout has not changed since ABI v7, so every version's name
 * is the same type: a plugin may pass a v8 handle pointer where a v12 one is expected. Host plugins
 * never fill one. */
typedef struct {
  ncclNetDeviceType netDeviceType; /* offload kind this handle is for */
  int netDeviceVersion;            /* offload version */
  void* handle;                    /* plugin-defined device-side object */
  size_t size;                     /* bytes of *handle */
  int needsProxyProgress;          /* 1: the core's proxy thread must keep calling test() */
} ncclNetDeviceHandle_v7_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v8_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v9_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v10_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v11_t;
typedef ncclNetDeviceHandle_v7_t ncclNetDeviceHandle_v12_t;

#endif /* CHORUS_PLUGIN_NET_COMMON_H_ */
