/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v4.h: profiler plugin ABI version 4 (the NCCL 2.27 generation). FROZEN.
 *
 * Exported object: const ncclProfiler_v4_t ncclProfiler_v4;
 * Event types: Group, Coll, P2p, ProxyOp, ProxyStep, ProxyCtrl, KernelCh, NetPlugin (bits 0..7);
 * higher mask bits are ignored and those events never sent.
 * Differences from v5: the type field is 8 bits (the offsets of parentObj, rank and the union are
 * unchanged); no API-level events; the parentObj of a Coll or P2p event is the Group event (there is
 * no parentGroup member); init takes (context, mask, commName, commHash, nNodes, nranks, rank,
 * logger). States: v4 introduced ProxyOpInProgress_v4, ProxyStepSendPeerWait_v4, NetPluginUpdate
 * and KernelChStop; the v1..v3 ProxyOp states are no longer sent.
 * The other rules (threading, mask and ancestors, handles, timing) are those of profiler_v6.h.
 */
#ifndef CHORUS_PLUGIN_PROFILER_V4_H_
#define CHORUS_PLUGIN_PROFILER_V4_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"

typedef ncclProfilerEventState_t ncclProfilerEventState_v4_t;

/* What an event is (104 bytes). */
typedef struct {
  uint8_t type;    /* @0 */
  void* parentObj; /* @8: Coll/P2p -> Group; ProxyOp -> Coll/P2p; ProxyStep -> ProxyOp; ... */
  int rank;        /* @16 */
  union {          /* @24 */
    struct {
      uint64_t seqNumber;   /* @24 */
      const char* func;     /* @32 */
      const void* sendBuff; /* @40 */
      void* recvBuff;       /* @48 */
      size_t count;         /* @56 */
      int root;             /* @64 */
      const char* datatype; /* @72 */
      uint8_t nChannels;    /* @80 */
      uint8_t nWarps;       /* @81 */
      const char* algo;     /* @88 */
      const char* proto;    /* @96 */
    } coll;
    struct {
      const char* func;     /* @24 */
      void* buff;           /* @32 */
      const char* datatype; /* @40 */
      size_t count;         /* @48 */
      int peer;             /* @56 */
      uint8_t nChannels;    /* @60 */
    } p2p;
    struct {
      pid_t pid;         /* @24 */
      uint8_t channelId; /* @28 */
      int peer;          /* @32 */
      int nSteps;        /* @36 */
      int chunkSize;     /* @40 */
      int isSend;        /* @44 */
    } proxyOp;
    struct {
      int step; /* @24 */
    } proxyStep;
    struct {
      uint8_t channelId; /* @24 */
      uint64_t pTimer;   /* @32 */
    } kernelCh;
    struct {
      int64_t id; /* @24 */
      void* data; /* @32 */
    } netPlugin;
  };
} ncclProfilerEventDescr_v4_t;

/* Extra values of a state change (8 bytes), as in v5/v6. */
typedef union {
  struct {
    size_t transSize;
  } proxyStep;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
  struct {
    void* data;
  } netPlugin;
  struct {
    uint64_t pTimer;
  } kernelCh;
} ncclProfilerEventStateArgs_v4_t;

/* The object ncclProfiler_v4 (48 bytes, 6 slots). */
typedef struct {
  const char* name;
  /* Per communicator. Out: *context; an error disables the profiler for this communicator. */
  ncclResult_t (*init)(void** context, int* eActivationMask, const char* commName, uint64_t commHash, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v4_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v4_t eState,
                                   ncclProfilerEventStateArgs_v4_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v4_t;

#endif /* CHORUS_PLUGIN_PROFILER_V4_H_ */
