/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v3.h: profiler plugin ABI version 3 (the NCCL 2.26 generation). FROZEN.
 *
 * Exported object: const ncclProfiler_v3_t ncclProfiler_v3;
 * Event types: Group, Coll, P2p, ProxyOp, ProxyStep, ProxyCtrl, KernelCh, NetPlugin (bits 0..7).
 * Differences from v4: init knows only (context, mask), so the descriptors of Coll and P2p carry the
 * communicator's name and hash; kernelCh has only the channel; coll.nChannels is called nMaxChannels;
 * the state args are 16 bytes (proxyOp {transSize, steps}, proxyCtrl); states are those up to
 * ProxyCtrlAppendEnd (18): ProxyOpInProgress_v4, ProxyStepSendPeerWait_v4, NetPluginUpdate and
 * KernelChStop are never sent.
 * The other rules (threading, mask and ancestors, handles, timing) are those of profiler_v6.h;
 * the parentObj of Coll/P2p is the Group event.
 */
#ifndef CHORUS_PLUGIN_PROFILER_V3_H_
#define CHORUS_PLUGIN_PROFILER_V3_H_

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"

typedef ncclProfilerEventState_t ncclProfilerEventState_v3_t;

typedef struct {
  uint8_t type;    /* @0 */
  void* parentObj; /* @8 */
  int rank;        /* @16 */
  union {          /* @24 */
    struct {
      const char* name;     /* the communicator's name (may be NULL) */
      uint64_t commHash;
      uint64_t seqNumber;
      const char* func;
      const void* sendBuff;
      void* recvBuff;
      size_t count;
      int root;
      const char* datatype;
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
    struct {
      uint8_t channelId;
    } kernelCh;
    struct {
      int64_t id;
      void* data;
    } netPlugin;
  };
} ncclProfilerEventDescr_v3_t;

/* Extra values of a state change (16 bytes). */
typedef union {
  struct {
    size_t transSize; /* bytes of the transfer (ProxyStep states) */
    int steps;        /* the step's index */
  } proxyOp;
  struct {
    int appendedProxyOps;
  } proxyCtrl;
} ncclProfilerEventStateArgs_v3_t;

/* The object ncclProfiler_v3 (48 bytes, 6 slots). */
typedef struct {
  const char* name;
  /* Per communicator: only the mask to write. Out: *context. */
  ncclResult_t (*init)(void** context, int* eActivationMask);
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v3_t* eDescr);
  ncclResult_t (*stopEvent)(void* eHandle);
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v3_t eState,
                                   ncclProfilerEventStateArgs_v3_t* eStateArgs);
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v3_t;

#endif /* CHORUS_PLUGIN_PROFILER_V3_H_ */
