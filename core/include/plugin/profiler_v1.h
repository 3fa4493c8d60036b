/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v1.h: profiler plugin ABI version 1 (the NCCL 2.23 generation). FROZEN.
 *
 * Exported object: const ncclProfiler_v1_t ncclProfiler_v1;
 * Event types: Group, Coll, P2p, ProxyOp, ProxyStep, ProxyCtrl (bits 0..5).
 * Differences from v2: func, datatype, algo and proto are numbers, not strings (func: ncclFunc_t;
 * datatype: ncclDataType_t; algo: NCCL_ALGO_*; proto: NCCL_PROTO_*, tuner_common.h), coll carries
 * the reduction op (ncclRedOp_t) after datatype, and ends with isCollnet and isNvls (always 0 in
 * Chorus). States and state args as v2/v3.
 */
#ifndef CHORUS_PLUGIN_PROFILER_V1_H_
#define CHORUS_PLUGIN_PROFILER_V1_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"
#include "plugin/tuner_common.h" /* NCCL_ALGO_* / NCCL_PROTO_* numbers */

typedef ncclProfilerEventState_t ncclProfilerEventState_v1_t;

typedef struct {
  uint8_t type;    /* @0 */
  void* parentObj; /* @8 */
  int rank;        /* @16 */
  union {          /* @24 */
    struct {
      const char* name;
      uint64_t commHash;
      uint64_t seqNumber;
      uint8_t func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      uint8_t datatype;
      uint32_t op;
      size_t trafficBytes;
      uint8_t nMaxChannels;
      uint8_t nWarps;
      uint8_t algo;
      uint8_t proto;
      int isCollnet;
      int isNvls;
    } coll;
    struct {
      const char* name;
      uint64_t commHash;
      uint8_t func;
      void* buff;
      uint8_t datatype;
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
} ncclProfilerEventDescr_v1_t;

/* Extra values of a state change (16 bytes), as v2. */
typedef union {
  struct {
    size_t transSize;
    int steps;
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v1_t;

/* The object ncclProfiler_v1 (48 bytes, 6 slots). */
typedef struct {
  const char* name;
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v1_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v1_t eState,
                                   ncclProfilerEventStateArgs_v1_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v1_t;

#endif /* CHORUS_PLUGIN_PROFILER_V1_H_ */
