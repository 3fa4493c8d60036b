/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/common.h: the types every NCCL plugin ABI shares (logger, profiler callback, function ids).
 * Frozen: these values and signatures are the same from net v8 / tuner v2 / profiler v1 to the newest.
 */
#ifndef CHORUS_PLUGIN_COMMON_H_
#define CHORUS_PLUGIN_COMMON_H_

#include <stdint.h>
#include "nccl.h"

/* Log levels handed to a plugin's logger calls. */
typedef enum {
  NCCL_LOG_NONE = 0,
  NCCL_LOG_VERSION = 1,
  NCCL_LOG_WARN = 2,
  NCCL_LOG_INFO = 3,
  NCCL_LOG_ABORT = 4,
  NCCL_LOG_TRACE = 5
} ncclDebugLogLevel;

/* Subsystem bits (NCCL_DEBUG_SUBSYS). */
typedef enum {
  NCCL_INIT = 0x1,
  NCCL_COLL = 0x2,
  NCCL_P2P = 0x4,
  NCCL_SHM = 0x8,
  NCCL_NET = 0x10,
  NCCL_GRAPH = 0x20,
  NCCL_TUNING = 0x40,
  NCCL_ENV = 0x80,
  NCCL_ALLOC = 0x100,
  NCCL_CALL = 0x200,
  NCCL_PROXY = 0x400,
  NCCL_NVLS = 0x800,
  NCCL_BOOTSTRAP = 0x1000,
  NCCL_REG = 0x2000,
  NCCL_PROFILE = 0x4000,
  NCCL_RAS = 0x8000,
  NCCL_DESTROY = 0x10000,
  NCCL_ALLOC_HOST = 0x20000,
  NCCL_ALL = ~0
} ncclDebugLogSubSys;

/* printf-style logger the core passes to every plugin init. Thread-safe. */
typedef void (*ncclDebugLogger_t)(ncclDebugLogLevel level, unsigned long flags, const char* file, int line,
                                  const char* fmt, ...);

/* What a net plugin asks of the profiler callback below (its `type` argument). */
enum {
  ncclProfilerNetEventStart = 0,        /* open an event; the callback writes its handle to *eHandle */
  ncclProfilerNetEventStop = 1,         /* close the event *eHandle */
  ncclProfilerNetEventUpdate = 2,       /* new data for the open event *eHandle */
  ncclProfilerNetEventUpdateAndStop = 3 /* both at once */
};

/* Net plugins report their own events to the profiler through this callback.
 * type: one of the values above. pHandle: the phandle given to isend/irecv. pluginId and extData:
 * see profiler_common.h (NCCL_PROFILER_NET_TYPE_*) and profiler_net_ib.h / profiler_net_socket.h. */
typedef ncclResult_t (*ncclProfilerCallback_t)(void** eHandle, int type, void* pHandle, int64_t pluginId,
                                               void* extData);

/* Operation ids shared by the tuner, profiler and net attribute ABIs. */
typedef enum {
  ncclFuncBroadcast = 0,
  ncclFuncReduce = 1,
  ncclFuncAllGather = 2,
  ncclFuncReduceScatter = 3,
  ncclFuncAllReduce = 4,
  ncclFuncSendRecv = 5,
  ncclFuncSend = 6,
  ncclFuncRecv = 7,
  ncclFuncAlltoAll = 8,
  ncclFuncScatter = 9,
  ncclFuncGather = 10,
  ncclFuncAllGatherV = 11,
  ncclFuncPutSignal = 12,
  ncclFuncSignal = 13,
  ncclFuncWaitSignal = 14,
  ncclNumFuncs = 15
} ncclFunc_t;

#endif /* CHORUS_PLUGIN_COMMON_H_ */
