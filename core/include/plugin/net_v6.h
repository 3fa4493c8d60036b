/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/net_v6.h: net plugin ABI version 6 (the NCCL 2.12 generation). FROZEN.
 *
 * Chorus does not load v6 plugins; the types are here so that a plugin written for NCCL which also
 * exports ncclNetPlugin_v6 / ncclCollNetPlugin_v6 compiles against these headers unchanged.
 *
 * Differences from v7: no device offload at all (no netDeviceType/Version properties, no devComm
 * arguments to connect/accept, no getDeviceMr/irecvConsumed slots), and a comm then had to hold only
 * NCCL_NET_MAX_REQUESTS_V6 requests in flight.
 */
#ifndef CHORUS_PLUGIN_NET_V6_H_
#define CHORUS_PLUGIN_NET_V6_H_

#include <stddef.h>
#include <stdint.h>
#include "plugin/common.h"
#include "plugin/net_common.h"

#define NCCL_NET_MAX_REQUESTS_V6 8

/* Properties (48 bytes). */
typedef struct {
  char* name;
  char* pciPath;
  uint64_t guid;
  int ptrSupport;
  int speed;     /* Mbps */
  int port;
  float latency; /* microseconds */
  int maxComms;
  int maxRecvs;
} ncclNetProperties_v6_t;

/* The object ncclNetPlugin_v6 (136 bytes, 17 slots). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction); /* once per process */
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(int dev, void* handle, void** sendComm);
  ncclResult_t (*accept)(void* listenComm, void** recvComm);
  ncclResult_t (*regMr)(void* comm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd, void** mhandle);
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*isend)(void* sendComm, void* data, int size, int tag, void* mhandle, void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, int* sizes, int* tags, void** mhandles, void** request);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request);
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclNet_v6_t;

/* The object ncclCollNetPlugin_v6 (120 bytes, 15 slots): as v7's with v6 properties. */
typedef struct {
  const char* name;
  ncclResult_t (*init)(ncclDebugLogger_t logFunction);
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*getProperties)(int dev, ncclNetProperties_v6_t* props);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm);
  ncclResult_t (*connect)(void* handles[], int nranks, int rank, void* listenComm, void** collComm);
  ncclResult_t (*reduceSupport)(ncclDataType_t dataType, ncclRedOp_t redOp, int* supported);
  ncclResult_t (*regMr)(void* collComm, void* data, int size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* collComm, void* data, size_t size, int type, uint64_t offset, int fd,
                              void** mhandle);
  ncclResult_t (*deregMr)(void* collComm, void* mhandle);
  ncclResult_t (*iallreduce)(void* collComm, void* sendData, void* recvData, int count, ncclDataType_t dataType,
                             ncclRedOp_t redOp, void* sendMhandle, void* recvMhandle, void** request);
  ncclResult_t (*iflush)(void* collComm, void* data, int size, void* mhandle, void** request);
  ncclResult_t (*test)(void* request, int* done, int* size);
  ncclResult_t (*closeColl)(void* collComm);
  ncclResult_t (*closeListen)(void* listenComm);
} ncclCollNet_v6_t;

#endif /* CHORUS_PLUGIN_NET_V6_H_ */
