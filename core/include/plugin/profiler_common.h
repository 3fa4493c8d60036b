/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/profiler_common.h: event types, states and net-event masks shared by every profiler plugin
 * ABI version (v1 .. v6).
 *
 * Frozen. Each versioned header (profiler_v1.h .. profiler_v6.h) includes this file, so any number of
 * them can be included into one translation unit (a profiler that exports several versions does so).
 *
 * Event types are bits: the same value is the descriptor's `type` and the event's bit in the
 * activation mask the plugin writes at init. A version knows only the types that existed when it was
 * frozen (see each header); the core never sends a version an event type or a state it does not know.
 */
#ifndef CHORUS_PLUGIN_PROFILER_COMMON_H_
#define CHORUS_PLUGIN_PROFILER_COMMON_H_

#include "plugin/common.h"

/* Event types (descriptor type, activation-mask bits). */
enum {
  ncclProfileGroup = (1 << 0),        /* v1+: a group of operations of one communicator (legacy group) */
  ncclProfileColl = (1 << 1),         /* v1+: one collective */
  ncclProfileP2p = (1 << 2),          /* v1+: one send or receive */
  ncclProfileProxyOp = (1 << 3),      /* v1+: one operation on one link (channel, peer, direction) */
  ncclProfileProxyStep = (1 << 4),    /* v1+: one transfer step of a proxy operation */
  ncclProfileProxyCtrl = (1 << 5),    /* v1+: the progress thread's own state */
  ncclProfileKernelCh = (1 << 6),     /* v3+: one channel of a device kernel */
  ncclProfileNetPlugin = (1 << 7),    /* v3+: an event the net plugin defines */
  ncclProfileGroupApi = (1 << 8),     /* v5+: ncclGroupStart .. ncclGroupEnd (or a bare call) */
  ncclProfileCollApi = (1 << 9),      /* v5+: one collective API call */
  ncclProfileP2pApi = (1 << 10),      /* v5+: one send/recv API call */
  ncclProfileKernelLaunch = (1 << 11),/* v5+: a kernel launch on a stream */
  ncclProfileCeColl = (1 << 12),      /* v6: a copy-engine collective */
  ncclProfileCeSync = (1 << 13),      /* v6: a copy-engine synchronisation */
  ncclProfileCeBatch = (1 << 14),     /* v6: a batch of copy-engine operations */
};

/* Event states (recordEventState). One enum for every version; each state names the event it
 * belongs to. Values 0..7 are used only by v1..v3; the _v4 states and later exist from v4. */
typedef enum {
  /* ProxyOp, v1..v3 */
  ncclProfilerProxyOpSendPosted = 0,
  ncclProfilerProxyOpSendRemFifoWait = 1,
  ncclProfilerProxyOpSendTransmitted = 2,
  ncclProfilerProxyOpSendDone = 3,
  ncclProfilerProxyOpRecvPosted = 4,
  ncclProfilerProxyOpRecvReceived = 5,
  ncclProfilerProxyOpRecvTransmitted = 6,
  ncclProfilerProxyOpRecvDone = 7,
  ncclProfilerProxyOpInProgress_v4 = 19, /* v4+: the operation is being progressed */
  /* ProxyStep: a send step waits for its data (GPU), then for room at the peer (v4+), then for the
   * transfer; a receive step waits for the data, then for the flush, then for the GPU to consume it. */
  ncclProfilerProxyStepSendGPUWait = 8,
  ncclProfilerProxyStepSendPeerWait_v4 = 20,
  ncclProfilerProxyStepSendWait = 9,
  ncclProfilerProxyStepRecvWait = 10,
  ncclProfilerProxyStepRecvFlushWait = 11,
  ncclProfilerProxyStepRecvGPUWait = 12,
  /* ProxyCtrl */
  ncclProfilerProxyCtrlIdle = 13,
  ncclProfilerProxyCtrlActive = 14,
  ncclProfilerProxyCtrlSleep = 15,
  ncclProfilerProxyCtrlWakeup = 16,
  ncclProfilerProxyCtrlAppend = 17,
  ncclProfilerProxyCtrlAppendEnd = 18,
  /* NetPlugin (v4+) */
  ncclProfilerNetPluginUpdate = 21,
  /* KernelCh (v4+) */
  ncclProfilerKernelChStop = 22,
  /* GroupApi (v5+) */
  ncclProfilerGroupStartApiStop = 23,
  ncclProfilerGroupEndApiStart = 24,
  /* Copy engine (v6) */
  ncclProfilerCeCollStart = 25,
  ncclProfilerCeCollComplete = 26,
  ncclProfilerCeSyncStart = 27,
  ncclProfilerCeSyncComplete = 28,
  ncclProfilerCeBatchStart = 29,
  ncclProfilerCeBatchComplete = 30,
} ncclProfilerEventState_t;

/* A net plugin's own events (NetPlugin, netPlugin.id): the low NCCL_PROFILER_NET_VER_BITS bits carry
 * the version of the net plugin's descriptor layout, the next 16 bits which kind of network defined it
 * (ncclProfilerNetType). Higher bits are unused. */
#define NCCL_PROFILER_NET_VER_BITS 16
#define NCCL_PROFILER_NET_VER_MASK 0xffffU
#define NCCL_PROFILER_NET_TYPE_MASK 0xffff0000U

/* The network kinds whose descriptor layouts are published (profiler_net_ib.h, profiler_net_socket.h). */
typedef enum {
  NCCL_PROFILER_NET_TYPE_IB = (1U << 16),
  NCCL_PROFILER_NET_TYPE_SOCK = (2U << 16),
} ncclProfilerNetType;

/* What the net-plugin callback's `type` argument means (plugin/common.h, ncclProfilerCallback_t). */
#define NCCL_PROFILER_NET_EVENT_START 0
#define NCCL_PROFILER_NET_EVENT_STOP 1
#define NCCL_PROFILER_NET_EVENT_UPDATE 2
#define NCCL_PROFILER_NET_EVENT_UPDATE_AND_STOP 3

#endif /* CHORUS_PLUGIN_PROFILER_COMMON_H_ */
