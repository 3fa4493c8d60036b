/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v5.h: profiler plugin ABI version 5 (the NCCL 2.28 generation). FROZEN.
 *
 * Exported object: const ncclProfiler_v5_t ncclProfiler_v5;
 * Differences from v4: API-level events (GroupApi, CollApi, P2pApi, KernelLaunch) and the GroupApi
 * states; init gets commId first; Coll/P2p's parentObj is the CollApi/P2pApi event, and the legacy
 * Group handle moved to coll.parentGroup / p2p.parentGroup; the type field is 64 bits.
 * The rules of every callback (threading, activation mask and ancestors, handles, hierarchy, timing)
 * are those written at the top of profiler_v6.h, without the copy-engine events: a v5 plugin never
 * gets CeColl/CeSync/CeBatch events or their states, and those mask bits are ignored.
 */
#ifndef CHORUS_PLUGIN_PROFILER_V5_H_
#define CHORUS_PLUGIN_PROFILER_V5_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"

typedef ncclProfilerEventState_t ncclProfilerEventState_v5_t;

/* What an event is (112 bytes, offsets absolute; strings as in v6). */
typedef struct {
  uint64_t type;   /* @0 */
  void* parentObj; /* @8 */
  int rank;        /* @16 */
  union {          /* @24 */
    struct {
      bool graphCaptured; /* @24 */
      int groupDepth;     /* @28: 1 = implicit group of one bare call, > 1 = user group */
    } groupApi;
    struct {
      const char* func;     /* @24 */
      size_t count;         /* @32 */
      const char* datatype; /* @40 */
      int root;             /* @48 */
      void* stream;         /* @56 */
      bool graphCaptured;   /* @64 */
    } collApi;
    struct {
      const char* func;     /* @24 */
      size_t count;         /* @32 */
      const char* datatype; /* @40 */
      void* stream;         /* @48 */
      bool graphCaptured;   /* @56 */
    } p2pApi;
    struct {
      void* stream; /* @24 */
    } kernelLaunch;
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
      void* parentGroup;    /* @104 */
    } coll;
    struct {
      const char* func;     /* @24 */
      void* buff;           /* @32 */
      const char* datatype; /* @40 */
      size_t count;         /* @48 */
      int peer;             /* @56 */
      uint8_t nChannels;    /* @60 */
      void* parentGroup;    /* @64 */
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
} ncclProfilerEventDescr_v5_t;

/* Extra values of a state change (8 bytes), as in v6. */
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
} ncclProfilerEventStateArgs_v5_t;

/* The object ncclProfiler_v5 (48 bytes, 6 slots): the v6 callbacks with v5 types. */
typedef struct {
  const char* name;
  /* Per communicator: commId, the mask to write, commName (may be NULL), nNodes, nranks, rank,
   * logger. Out: *context; an error disables the profiler for this communicator. */
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);
  /* An event starts (eDescr valid during the call). Out: *eHandle, NULL drops it. */
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v5_t* eDescr);
  /* The event ends. */
  ncclResult_t (*stopEvent)(void* eHandle);
  /* The event changes state; eStateArgs may be NULL. */
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v5_t eState,
                                   ncclProfilerEventStateArgs_v5_t* eStateArgs);
  /* The communicator is being destroyed. */
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v5_t;

#endif /* CHORUS_PLUGIN_PROFILER_V5_H_ */
