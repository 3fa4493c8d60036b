/*
 * plugin/net_common.h: constants shared by every net plugin ABI version (v8 .. v12).
 *
 * Frozen. Each versioned header (net_v8.h .. net_v12.h) includes this file, so any
 * number of them can be included into one translation unit (a plugin that exports
 * several versions does exactly that).
 */
#ifndef CHORUS_PLUGIN_NET_COMMON_H_
#define CHORUS_PLUGIN_NET_COMMON_H_

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

/* "Not set" markers for trafficClass, attribute fields and ids. */
#define NCCL_NET_TRAFFIC_CLASS_UNDEF (-1)
#define NCCL_NET_ATTR_UNDEF (-1)
#define NCCL_NET_ID_UNDEF (-1)

/* Net plugin slots one process may hold. */
#define NCCL_NET_MAX_PLUGINS 16

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

#endif /* CHORUS_PLUGIN_NET_COMMON_H_ */
