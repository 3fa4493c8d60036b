/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_plugin.h: the core's only door to net plugins.
 *
 * Net plugin libraries are loaded once per process (NCCL_NET_PLUGIN: comma list of names or paths,
 * default "socket", "none" for no plugin). Whatever ABI version a library exports (v8 .. v12), the
 * core sees the v12 interface: older tables are wrapped by the adapters in net_v8.c .. net_v11.c.
 * Every call below checks its arguments, handles optional (NULL) slots and traces the call
 * (NCCL_DEBUG=TRACE, subsystem NET). An error returned by the plugin is reported once here (WARN and
 * the thread's last error) and passed on.
 *
 * Threading: chrNetOpen/chrNetClose are thread-safe. The calls on one comm object (listen, send or
 * recv comm) must come from one thread at a time; different comms may be used concurrently.
 */
#ifndef CHORUS_NET_PLUGIN_H_
#define CHORUS_NET_PLUGIN_H_

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "plugin/net.h"

struct chrNetLib; /* one loaded plugin library (private to core/plugin) */

/* A net plugin opened for one communicator. */
struct chrNet {
  /* The v12 table the wrappers call. For a library of an older version it is the adapter's table,
   * whose init/getProperties/makeVDevice slots are NULL (they need the library): always go through
   * the chrNet* wrappers below. */
  const ncclNet_v12_t* ncclNet;
  void* ctx;           /* what init returned for this communicator */
  int ndev;            /* devices() at open time (> 0) */
  int version;         /* ABI version the library exports: 8 .. 12 */
  const char* name;    /* the plugin's name (its table's name field) */
  const char* path;    /* the file that was opened */
  uint64_t commHash;
  struct chrNetLib* lib;
};

/* Pick and initialise a net plugin for a communicator.
 *   commHash      64-bit hash of the communicator (handed to v11+ init as commId)
 *   netName       config.netName, or NULL to use the NCCL_NET parameter; when set (non-empty), only a
 *                 plugin whose name matches it (case-insensitive) is eligible
 *   trafficClass  config.trafficClass, NCCL_NET_TRAFFIC_CLASS_UNDEF (-1) when unset
 * The first candidate of NCCL_NET_PLUGIN that loads, matches netName, initialises and has
 * devices() > 0 (device 0 of a supported kind) is used. Failures of earlier candidates are WARNed
 * (one line each, with the path and the reason) and skipped; with CHORUS_PLUGIN_STRICT=1 the first
 * such failure makes this call fail with ncclInvalidUsage instead.
 * Returns ncclSuccess with *out = NULL when NCCL_NET_PLUGIN is "none"; ncclSystemError when no
 * candidate can be used (the last error lists what was tried and why); ncclInvalidUsage when a name
 * is wanted and no loaded plugin has it, or in strict mode. Free with chrNetClose. */
ncclResult_t chrNetOpen(uint64_t commHash, const char* netName, int trafficClass, struct chrNet** out);

/* Finalize the per-comm context and free net. Every comm made through net must be closed first.
 * NULL is accepted. The library stays loaded for the life of the process. */
ncclResult_t chrNetClose(struct chrNet* net);

/* Device level. dev must be in [0, ndev). */
ncclResult_t chrNetDevices(struct chrNet* net, int* ndev);
ncclResult_t chrNetGetProperties(struct chrNet* net, int dev, ncclNetProperties_v12_t* props);
/* ncclInvalidUsage when the plugin cannot fuse devices (no makeVDevice slot, or too many children
 * for its ABI version). */
ncclResult_t chrNetMakeVDevice(struct chrNet* net, int* d, ncclNetVDeviceProps_v12_t* props);
/* No-op when the plugin has no setNetAttr. */
ncclResult_t chrNetSetNetAttr(struct chrNet* net, ncclNetAttr_v12_t* attr);

/* Connection setup (see plugin/net_v12.h for the full contract). handle: NCCL_NET_HANDLE_MAXSIZE
 * bytes. connect/accept are non-blocking: success with a NULL comm means "call again". The devComm
 * arguments may be NULL. */
ncclResult_t chrNetListen(struct chrNet* net, int dev, void* handle, void** listenComm);
ncclResult_t chrNetConnect(struct chrNet* net, int dev, void* handle, void** sendComm,
                           ncclNetDeviceHandle_v12_t** sendDevComm);
ncclResult_t chrNetAccept(struct chrNet* net, void* listenComm, void** recvComm,
                          ncclNetDeviceHandle_v12_t** recvDevComm);

/* Memory registration on a send or recv comm. chrNetRegMrDmaBuf fails with ncclInternalError when
 * the plugin has no regMrDmaBuf slot. */
ncclResult_t chrNetRegMr(struct chrNet* net, void* comm, void* data, size_t size, int type, void** mhandle);
/* chrNetRegMr for a caller with a fallback: the plugin's refusal is the thread's last error, not a WARN. */
ncclResult_t chrNetTryRegMr(struct chrNet* net, void* comm, void* data, size_t size, int type, void** mhandle);
ncclResult_t chrNetRegMrDmaBuf(struct chrNet* net, void* comm, void* data, size_t size, int type,
                               uint64_t offset, int fd, void** mhandle);
ncclResult_t chrNetDeregMr(struct chrNet* net, void* comm, void* mhandle);

/* Data path. *request == NULL after success means "cannot start now, retry". For chrNetIrecv the
 * caller may preset *request = (void*)NCCL_NET_OPTIONAL_RECV_COMPLETION; n is 1..NCCL_NET_MAX_REQUESTS.
 * phandle(s) may be NULL. chrNetIflush on a plugin without iflush succeeds with *request = NULL. */
ncclResult_t chrNetIsend(struct chrNet* net, void* sendComm, void* data, size_t size, int tag, void* mhandle,
                         void* phandle, void** request);
ncclResult_t chrNetIrecv(struct chrNet* net, void* recvComm, int n, void** data, size_t* sizes, int* tags,
                         void** mhandles, void** phandles, void** request);
ncclResult_t chrNetIflush(struct chrNet* net, void* recvComm, int n, void** data, int* sizes, void** mhandles,
                          void** request);
/* sizes may be NULL; else it receives n entries (n of the request) once *done is 1. */
ncclResult_t chrNetTest(struct chrNet* net, void* request, int* done, int* sizes);

/* Offload helpers; both succeed without doing anything (dptr = NULL) when the slot is NULL. */
ncclResult_t chrNetGetDeviceMr(struct chrNet* net, void* comm, void* mhandle, void** dptrMhandle);
ncclResult_t chrNetIrecvConsumed(struct chrNet* net, void* recvComm, int n, void* request);

/* Teardown; NULL comms are accepted and ignored. */
ncclResult_t chrNetCloseSend(struct chrNet* net, void* sendComm);
ncclResult_t chrNetCloseRecv(struct chrNet* net, void* recvComm);
ncclResult_t chrNetCloseListen(struct chrNet* net, void* listenComm);

/* For chorus-info: one line per NCCL_NET_PLUGIN candidate (loads them, calls no init). Also
 * declared in plugin/plugin_info.h as chrPluginsDescribe, which prints this among other kinds. */
void chrNetDescribe(FILE* out);

#endif /* CHORUS_NET_PLUGIN_H_ */
