/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_v6.h: profiler plugin ABI version 6 (the NCCL 2.30 generation). FROZEN.
 *
 * A profiler plugin is a shared library that exports the object
 *     const ncclProfiler_v6_t ncclProfiler_v6;
 * The core dlopen()s it (RTLD_NOW|RTLD_LOCAL) and reads the object by name; a library may export
 * several versions (ncclProfiler_v6 .. _v1) and the core takes the newest it knows.
 * Differences from v5: copy-engine events (CeColl, CeSync, CeBatch) and their states and
 * descriptor members. Everything else is v5.
 *
 * General rules for every callback:
 *  - Plain C calling convention; init returns the status that matters. The core ignores what the
 *    other callbacks return (return ncclSuccess).
 *  - init is called once per communicator; each gets its own context. finalize once per successful
 *    init, when that communicator is destroyed.
 *  - Threading: calls come from application threads (API, group, collective, kernel events) and from
 *    the threads that progress operations (ProxyOp, ProxyStep, ProxyCtrl, KernelCh, NetPlugin), for
 *    one context concurrently: the plugin must be thread-safe.
 *  - The activation mask: init gets a pointer to an int and writes the event bits it wants
 *    (profiler_common.h). The int is one process-wide variable the core re-reads (a relaxed atomic
 *    load) at every event point, so the plugin may keep the pointer and change the mask later.
 *    Asking for a child event also creates its ancestors, so that parentObj is always filled:
 *      Coll/P2p     when any of Coll|P2p, ProxyOp, ProxyStep, KernelCh, NetPlugin is on
 *      ProxyOp      when any of ProxyOp, ProxyStep, NetPlugin is on
 *      ProxyStep    when any of ProxyStep, NetPlugin is on
 *      Group        when any of Group, Coll, P2p, ProxyOp, ProxyStep, KernelCh, NetPlugin is on
 *  - Handles: startEvent returns an opaque handle in *eHandle (NULL: the plugin drops the event; the
 *    core then gives its children a NULL parent). The core passes the handle as the parentObj of the
 *    event's children, to recordEventState and to stopEvent. Every started event is stopped exactly
 *    once, on error paths too. A child may be started after its parent was stopped (see below), so a
 *    plugin keeps a parent alive as long as it has children.
 *  - Hierarchy (parentObj): GroupApi has none; CollApi, P2pApi, KernelLaunch -> GroupApi;
 *    Coll/P2p -> CollApi/P2pApi (coll.parentGroup / p2p.parentGroup: the legacy Group); ProxyOp ->
 *    Coll/P2p; ProxyStep -> ProxyOp; NetPlugin -> ProxyStep; KernelCh -> Coll/P2p; CeColl ->
 *    CollApi; CeSync/CeBatch -> CeColl. Group and ProxyCtrl have no parent. A proxy op may run in
 *    another process (proxyOp.pid): compare it with getpid() before dereferencing parentObj.
 *  - Timing: the stop of CollApi, P2pApi, Coll, P2p and Group means "enqueued", not "done": an
 *    operation is done at the stop of its last ProxyOp (host) or KernelCh (device).
 */
#ifndef CHORUS_PLUGIN_PROFILER_V6_H_
#define CHORUS_PLUGIN_PROFILER_V6_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "plugin/profiler_common.h"

typedef ncclProfilerEventState_t ncclProfilerEventState_v6_t;

/* What an event is (112 bytes). Offsets are absolute. Strings stay valid during startEvent only
 * unless noted: func and datatype names ("AllReduce", "ncclFloat32"), algo ("RING", "TREE", ...) and
 * proto ("SIMPLE", ...) are static strings that stay valid for the life of the process. */
typedef struct {
  uint64_t type;   /* @0: one ncclProfile* bit */
  void* parentObj; /* @8: the parent event's handle (see the hierarchy above) or NULL */
  int rank;        /* @16: the communicator rank that reports the event */
  union {          /* @24 */
    struct {
      bool graphCaptured; /* @24: the calls are being captured into a CUDA graph */
      int groupDepth;     /* @28: 1 = the implicit group of one bare call, > 1 = a user group */
    } groupApi;
    struct {
      const char* func;     /* @24 */
      size_t count;         /* @32: elements, as the API call got them */
      const char* datatype; /* @40 */
      int root;             /* @48 */
      void* stream;         /* @56: the call's cudaStream_t */
      bool graphCaptured;   /* @64 */
    } collApi;
    struct {
      const char* func;     /* @24: "Send" or "Recv" */
      size_t count;         /* @32 */
      const char* datatype; /* @40 */
      void* stream;         /* @48 */
      bool graphCaptured;   /* @56 */
    } p2pApi;
    struct {
      void* stream; /* @24 */
    } kernelLaunch;
    struct {
      uint64_t seqNumber;   /* @24: per communicator and function, from 0 */
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
      void* parentGroup;    /* @104: the legacy Group event's handle */
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
      pid_t pid;         /* @24: the process that runs the operation */
      uint8_t channelId; /* @28 */
      int peer;          /* @32: the rank at the other end */
      int nSteps;        /* @36: transfers of this operation */
      int chunkSize;     /* @40: bytes per transfer */
      int isSend;        /* @44 */
    } proxyOp;
    struct {
      int step; /* @24: the transfer's index in its operation */
    } proxyStep;
    struct {
      uint8_t channelId; /* @24 */
      uint64_t pTimer;   /* @32: timestamp (ns) when the channel started */
    } kernelCh;
    struct {
      int64_t id;  /* @24: the net plugin's event id (NCCL_PROFILER_NET_*_MASK) */
      void* data;  /* @32: the net plugin's own descriptor */
    } netPlugin;
    struct {
      uint64_t seqNumber;       /* @24 */
      const char* func;         /* @32 */
      const void* sendBuff;     /* @40 */
      void* recvBuff;           /* @48 */
      size_t count;             /* @56 */
      int root;                 /* @64 */
      const char* datatype;     /* @72 */
      const char* syncStrategy; /* @80: "MC" or "UC" */
      bool intraBatchSync;      /* @88 */
      uint32_t batchSize;       /* @92 */
      uint32_t numBatches;      /* @96 */
      uint32_t ceSeqNum;        /* @100 */
      void* stream;             /* @104 */
    } ceColl;
    struct {
      bool isComplete; /* @24 */
      int nRanks;      /* @28 */
    } ceCollSync;
    struct {
      int numOps;        /* @24 */
      size_t totalBytes; /* @32 */
      bool useIntraSync; /* @40 */
    } ceCollBatch;
  };
} ncclProfilerEventDescr_v6_t;

/* Extra values of a state change (8 bytes). Which member is valid depends on the event. */
typedef union {
  struct {
    size_t transSize; /* bytes of the step's transfer */
  } proxyStep;
  struct {
    int appendedProxyOps; /* operations appended (ProxyCtrlAppendEnd) */
  } proxyCtrl;
  struct {
    void* data; /* the net plugin's update */
  } netPlugin;
  struct {
    uint64_t pTimer; /* timestamp (ns) when the channel ended (KernelChStop) */
  } kernelCh;
} ncclProfilerEventStateArgs_v6_t;

/* The object ncclProfiler_v6 (48 bytes, 6 slots). */
typedef struct {
  /* Name for logs. */
  const char* name;

  /* A communicator is being created.
   *   commId          its 64-bit id (the value the net and tuner plugins get)
   *   eActivationMask where to write the event bits wanted (see the rules above)
   *   commName        the configuration's commName, may be NULL
   *   nNodes, nranks, rank   its size and this rank
   *   logfn           the core's logger
   * Out: *context. An error disables the profiler for this communicator. */
  ncclResult_t (*init)(void** context, uint64_t commId, int* eActivationMask, const char* commName, int nNodes,
                       int nranks, int rank, ncclDebugLogger_t logfn);

  /* An event starts. eDescr is valid during the call only. Out: *eHandle (NULL drops the event). */
  ncclResult_t (*startEvent)(void* context, void** eHandle, ncclProfilerEventDescr_v6_t* eDescr);

  /* The event ends; its handle is not used again by the core, except as a parent already given out. */
  ncclResult_t (*stopEvent)(void* eHandle);

  /* The event changes state. eStateArgs may be NULL (GroupApi states). */
  ncclResult_t (*recordEventState)(void* eHandle, ncclProfilerEventState_v6_t eState,
                                   ncclProfilerEventStateArgs_v6_t* eStateArgs);

  /* The communicator is being destroyed: release context. */
  ncclResult_t (*finalize)(void* context);
} ncclProfiler_v6_t;

#endif /* CHORUS_PLUGIN_PROFILER_V6_H_ */
