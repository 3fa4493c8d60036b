/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/net_v10.h: net plugin ABI version 10 (the NCCL 2.26 generation). FROZEN.
 *
 * A net plugin is a shared library that exports the object
 *     const ncclNet_v10_t ncclNetPlugin_v10;
 * and optionally
 *     const ncclCollNet_v10_t ncclCollNetPlugin_v10;
 * The core dlopen()s the library (RTLD_NOW|RTLD_LOCAL) and reads these objects by name.
 * Differences from v12: init runs once per PROCESS (no ctx, no commId); listen and connect take no
 * ctx, connect takes the comm config instead; there is no finalize and no setNetAttr; the properties
 * have no maxMultiRequestSize, railId or planeId, and vProps holds at most 4 devices.
 * A plugin may export several versions (ncclNetPlugin_v12, _v11, ...); the core takes the newest.
 *
 * General rules for every callback below:
 *  - Plain C calling convention; every callback returns ncclResult_t.
 *  - Errors: ncclSystemError for OS, network or hardware failures; ncclInternalError when the
 *    core misused the interface; ncclInvalidUsage for a likely user error; ncclUnhandledCudaError
 *    for CUDA failures. On error, output arguments are left unspecified and nothing is owned by
 *    the core; the core treats an error from a data-path call as fatal for the communicator.
 *  - Objects returned by the plugin (listen/send/recv comms, mhandles, requests) are owned
 *    by the plugin; the core gives each one back exactly once to the matching close/dereg/test.
 *  - Threading: init/devices/getProperties run on application threads, one at a time. Connection
 *    setup and the data path for one comm are driven by one core thread at a time, but different
 *    comms may be used from different threads concurrently, so state shared between comms (all of
 *    it, in this version, since there is no per-comm ctx) must be locked by the plugin.
 *  - Nothing blocks: listen/connect/accept/isend/irecv/iflush/test return at once.
 */
#ifndef CHORUS_PLUGIN_NET_V10_H_
#define CHORUS_PLUGIN_NET_V10_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"
#include "plugin/net_common.h"

/* Most physical devices one virtual NIC (vNIC) may fuse in v10. */
#define NCCL_NET_MAX_DEVS_PER_NIC_V10 4

/* Children of a fused virtual NIC: ndevs physical device indexes (20 bytes). */
typedef struct {
  int ndevs;
  int devs[NCCL_NET_MAX_DEVS_PER_NIC_V10];
} ncclNetVDeviceProps_v10_t;

/* What getProperties reports about one device (104 bytes). All fields are written by the plugin. */
typedef struct {
  char* name;              /* device name for logs; string owned by the plugin, valid while loaded */
  char* pciPath;           /* /sys PCI directory of the NIC, NULL for a virtual NIC; plugin-owned */
  uint64_t guid;           /* identity of the physical port: equal guids = same port */
  int ptrSupport;          /* NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF bits */
  int regIsGlobal;         /* 1: registrations are not tied to one comm, and a registration covering
                              a later sub-range makes that later regMr cheap */
  int forceFlush;          /* 1: the core calls iflush after every receive into GPU memory */
  int speed;               /* port speed in Mbps (10^6 bit/s) */
  int port;                /* port number */
  float latency;           /* latency in microseconds */
  int maxComms;            /* most connections the device supports */
  int maxRecvs;            /* most buffers (n) one grouped irecv may carry; >= 1 */
  ncclNetDeviceType netDeviceType; /* NCCL_NET_DEVICE_HOST for plain host plugins */
  int netDeviceVersion;    /* 0 for NCCL_NET_DEVICE_HOST */
  ncclNetVDeviceProps_v10_t vProps; /* physical children; {1, {dev}} for a physical device */
  size_t maxP2pBytes;      /* largest single isend/irecv size; the core splits larger transfers;
                              at most NCCL_MAX_NET_SIZE_BYTES */
  size_t maxCollBytes;     /* largest collnet operation; at most NCCL_MAX_NET_SIZE_BYTES */
} ncclNetProperties_v10_t;

/* Per-communicator settings handed to connect (4 bytes). */
typedef struct {
  int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF (-1) when the user set none */
} ncclNetCommConfig_v10_t;

/* ncclNetDeviceHandle_v10_t: net_common.h (one type for every version). */

/* One scatter/gather element of a collnet operation (24 bytes). */
typedef struct {
  void* mhandle;
  void* address;
  size_t size;
} ncclNetSGE_v10_t;

typedef struct {
  /* Plugin name, matched case-insensitively against NCCL_NET / config.netName. Never NULL. */
  const char* name;

  /* Called once per process, before any other call. In: logFunction (thread-safe, may be kept for
   * the life of the process), profFunction (may be NULL; kept likewise). An error makes the core skip
   * this plugin. There is no finalize: the plugin lives until the process exits. */
  ncclResult_t (*init)(ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);

  /* Out: *ndev, the number of devices (physical plus any vNICs made so far). 0 makes the core treat
   * the plugin as unusable. */
  ncclResult_t (*devices)(int* ndev);

  /* In: dev in [0, ndev). Out: *props (core-owned storage, every field written). Callable any time
   * after init, from any thread. */
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);

  /* Receiver side, first step of a connection. In: dev. Out: up to
   * NCCL_NET_HANDLE_MAXSIZE bytes written into handle (core-owned buffer, shipped to the peer), and
   * *listenComm, non-NULL on success. Does not block. */
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);

  /* Sender side. In: dev, config (the comm's settings, core-owned, valid during the call), handle
   * (the bytes the peer's listen wrote; untrusted input).
   * Out: *sendComm. Non-blocking: success with *sendComm == NULL means "not yet, call again with the
   * same arguments". sendDevComm may be NULL; when *sendDevComm points to a handle the core asks for
   * device offload, which host plugins ignore. */
  ncclResult_t (*connect)(int dev, ncclNetCommConfig_v10_t* config, void* handle, void** sendComm,
                          ncclNetDeviceHandle_v10_t** sendDevComm);

  /* Receiver side, after listen. Out: *recvComm; success with NULL means "call again". recvDevComm
   * as for connect. listenComm stays valid and owned by the plugin until closeListen. */
  ncclResult_t (*accept)(void* listenComm, void** recvComm, ncclNetDeviceHandle_v10_t** recvDevComm);

  /* Register [data, data+size) of memory kind type (NCCL_PTR_HOST or NCCL_PTR_CUDA) for use with the
   * send or recv comm `comm`. Out: *mhandle, given back to isend/irecv/iflush and to deregMr. The
   * buffer stays owned by the core and valid until deregMr. */
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);

  /* As regMr for a dmabuf (fd, offset into it). Used only when ptrSupport has NCCL_PTR_DMABUF;
   * may be NULL otherwise. The fd stays owned by the core. */
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                              void** mhandle);

  /* Release a registration made by regMr or regMrDmaBuf on the same comm. */
  ncclResult_t (*deregMr)(void* comm, void* mhandle);

  /* Start sending size bytes at data (registered as mhandle). tag is the sender's rank. phandle is
   * the profiler parent handle to give to profFunction (may be NULL). Out: *request, or NULL when the
   * send cannot start now (the core retries). The buffer must stay untouched until test says done. */
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                        void** request);

  /* Post n (1..maxRecvs) receive buffers as one request. data[i]/sizes[i]/mhandles[i] describe buffer
   * i, tags[i] the rank expected to send into it, phandles[i] its profiler parent (array may be NULL).
   * Matching is FIFO per connection: the oldest posted receive takes the next send; tags only pick
   * the buffer inside it. A buffer may be larger than the send, never smaller (that is an error).
   * On entry *request may hold NCCL_NET_OPTIONAL_RECV_COMPLETION (see net_common.h). Out: *request,
   * or NULL to mean "retry later". Arrays are core-owned and valid only during the call. */
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                        void** phandles, void** request);

  /* Make a completed receive into GPU memory visible to the GPU (n buffers as given to irecv, sizes
   * as received). Out: *request polled with test; NULL request with success = nothing to do. */
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);

  /* Poll a request. Out: *done 1 when finished; then, if sizes is non-NULL, sizes[i] = bytes actually
   * moved for each of the n buffers of the request. After done = 1 the request is freed by the
   * plugin and must not be used again. */
  ncclResult_t (*test)(void* request, int* done, int* sizes);

  /* Tear down a comm; every request on it is complete or abandoned. The core never uses it again. */
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);

  /* Device-offload plugins only: out *dptr_mhandle, a device-usable copy of mhandle. May be NULL. */
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle);

  /* Device-offload plugins only: the GPU consumed the completed receive `request` of n buffers.
   * May be NULL. */
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);

  /* Optional (may be NULL). In: props->devs[0..ndevs-1], physical devices to fuse. Out: *d, the
   * index of the new virtual device; devices() grows by one. */
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v10_t* props);
} ncclNet_v10_t;

/* Optional in-network collective offload ("collnet"), object ncclCollNetPlugin_v10. Same ownership,
 * threading and error rules as ncclNet_v10_t. Failure of its init or devices() only disables collnet. */
typedef struct {
  const char* name;
  /* Once per process. */
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  /* Out: *ndev; 0 is allowed and disables collnet. */
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v10_t* props);
  /* As ncclNet listen: writes <= NCCL_NET_HANDLE_MAXSIZE bytes into handle. */
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  /* Build the collective comm from every rank's handle (handles[nranks], this rank's index rank).
   * Success with *collComm == NULL means "call again". */
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
  /* Out: *supported 1 if the (datatype, op) pair can be reduced in the network. */
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                              void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  /* Start an allreduce of count elements. Out: *request (NULL = retry). */
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, size_t count,
                             ncclDataType_t dataType, ncclRedOp_t redOp, void* sendMhandle, void* recvMhandle,
                             void** request);
  /* Allgather bytesPerRank from every rank into the nRecvParts scatter elements, limited to the window
   * [windowOffset, windowOffset+windowBytes) of the full result. */
  ncclResult_t (*iallgather)(void* collComm, void* sendData, int nRecvParts, ncclNetSGE_v10_t* recvParts,
                             size_t bytesPerRank, size_t windowOffset, size_t windowBytes, void* sendMhandle,
                             void** request);
  /* Reduce-scatter from nSendParts scatter elements into recvData, same window rules. */
  ncclResult_t (*ireducescatter)(void* collComm, int nSendParts, ncclNetSGE_v10_t* sendParts, void* recvData,
                                 size_t bytesPerRank, size_t windowOffset, size_t windowBytes,
                                 ncclDataType_t dataType, ncclRedOp_t redOp, void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  /* Out: *done; *size = bytes moved when done. */
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
  /* Optional (may be NULL). */
  ncclResult_t (*makeVDevice)(int* d, ncclNetVDeviceProps_v10_t* props);
} ncclCollNet_v10_t;

#endif /* CHORUS_PLUGIN_NET_V10_H_ */
