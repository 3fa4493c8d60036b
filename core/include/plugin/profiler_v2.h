/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v2.h: profiler plugin ABI version 2 (the NCCL 2.24 generation). FROZEN.
 *
 * Exported object: const ncclProfiler_v2_t ncclProfiler_v2;
 * Event types: Group, Coll, P2p, ProxyOp, ProxyStep, ProxyCtrl (bits 0..5); no KernelCh or NetPlugin.
 * Differences from v3: coll has trafficBytes (bytes the collective moves on this rank: element size
 * x count, count x ranks for AllGather and ReduceScatter) between datatype and nMaxChannels; no
 * kernelCh or netPlugin members. States and state args as v3.
 */
#ifndef CHORUS_PLUGIN_PROFILER_V2_H_
#define CHORUS_PLUGIN_PROFILER_V2_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"

typedef ncclProfilerEventState_t ncclProfilerEventState_v2_t;

typedef struct {
  uint8_t type;    /* @0 */
  void* parentObj; /* @8 */
  int rank;        /* @16 */
  union {          /* @24 */
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      const char* algo;
      const char* proto;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      const char* func;
      void* buff;
      const char* datatype;
      size_t count;
      int peer;
    } p2p;
    struct {
      pid_t pid;
      uint8_t channelId;
      int peer;
      int nSteps;
      int chunkSize;
      int isSend;
    } proxyOp;
    struct {
      int step;
    } proxyStep;
  };
} ncclProfilerEventDescr_v2_t;

/* Extra values of a state change (16 bytes), as v3. */
typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v2_t;

/* The object ncclProfiler_v2 (48 bytes, 6 slots). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v2_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v2_t eState,
                                   ncclProfilerEventStateArgs_v2_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v2_t;

#endif /* CHORUS_PLUGIN_PROFILER_V2_H_ */
