/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_adapter.h: private to core/plugin. One loaded net plugin library, and the adapters that make
 * an older ABI version look like v12.
 *
 * The v12 table has no "self" argument in init/getProperties/makeVDevice, so those three go through
 * functions that take the library explicitly. Every other slot has the v12 signature; an adapter
 * finds its library again through the objects it hands out: its ctx (struct chrNetAdaptCtx) and, for
 * v8..v10, its listen/send/recv comms (struct chrNetAdaptComm wrapping the plugin's own pointer).
 * Requests are the plugin's own (test has the same signature in every version and is copied into
 * the per-library table), so the data path allocates nothing.
 *
 * v8..v10 share one set of forwarders (net_adapt.c): the slots whose signature is the same in every
 * version are copied from the plugin's table into lib->common, and the few that differ are supplied
 * by the version's file as lib->ops (struct chrNetAdaptOps).
 */
#ifndef CHORUS_NET_ADAPTER_H_
#define CHORUS_NET_ADAPTER_H_

#include <pthread.h>
#include <string.h>
#include "plugin/net.h"
#include "util/plugin_open.h"

/* Limits the core assumes for v8 plugins (int sizes): 2^30 bytes per p2p transfer, 2^29 per collnet op. */
#define CHR_NET_V8_MAX_P2P_BYTES (1ULL << 30)
#define CHR_NET_V8_MAX_COLL_BYTES (1ULL << 29)

struct chrNetLib;
struct chrNetAdaptCtx;

/* The plugin's own slots whose signature is the same in v8, v9 and v10 (all but listen also in v12);
 * they take the plugin's own, unwrapped comms. A v8..v10 adapter copies them from its table with
 * CHR_NET_COPY_COMMON_SLOTS (field names matched per version); optional ones may be NULL. */
struct chrNetCommonSlots {
  ncclResult_t (*devices)(int* ndev);
  ncclResult_t (*listen)(int dev, void* handle, void** listenComm); /* v11 added ctx */
  ncclResult_t (*regMr)(void* comm, void* data, size_t size, int type, void** mhandle);
  ncclResult_t (*regMrDmaBuf)(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                              void** mhandle); /* optional */
  ncclResult_t (*deregMr)(void* comm, void* mhandle);
  ncclResult_t (*iflush)(void* recvComm, int n, void** data, int* sizes, void** mhandles,
                         void** request); /* optional */
  ncclResult_t (*test)(void* request, int* done, int* sizes);
  ncclResult_t (*closeSend)(void* sendComm);
  ncclResult_t (*closeRecv)(void* recvComm);
  ncclResult_t (*closeListen)(void* listenComm);
  ncclResult_t (*getDeviceMr)(void* comm, void* mhandle, void** dptr_mhandle); /* optional */
  ncclResult_t (*irecvConsumed)(void* recvComm, int n, void* request);          /* optional */
};

#define CHR_NET_COPY_COMMON_SLOTS(dst, t)       \
  do {                                          \
    (dst)->devices = (t)->devices;              \
    (dst)->listen = (t)->listen;                \
    (dst)->regMr = (t)->regMr;                  \
    (dst)->regMrDmaBuf = (t)->regMrDmaBuf;      \
    (dst)->deregMr = (t)->deregMr;              \
    (dst)->iflush = (t)->iflush;                \
    (dst)->test = (t)->test;                    \
    (dst)->closeSend = (t)->closeSend;          \
    (dst)->closeRecv = (t)->closeRecv;          \
    (dst)->closeListen = (t)->closeListen;      \
    (dst)->getDeviceMr = (t)->getDeviceMr;      \
    (dst)->irecvConsumed = (t)->irecvConsumed;  \
  } while (0)

/* What really differs between v8, v9 and v10, supplied by each version's file. connect and accept
 * work on the plugin's own comms (the shared code unwraps and wraps); isend and irecv are v12 table
 * slots on wrapped comms. */
struct chrNetAdaptOps {
  /* The old once-per-process init. */
  ncclResult_t (*initOld)(struct chrNetLib* lib, ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*connect)(struct chrNetLib* lib, const struct chrNetAdaptCtx* ctx, int dev, void* handle,
                          void** sendComm, ncclNetDeviceHandle_v12_t** sendDevComm);
  ncclResult_t (*accept)(struct chrNetLib* lib, void* listenComm, void** recvComm,
                         ncclNetDeviceHandle_v12_t** recvDevComm);
  ncclResult_t (*isend)(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                        void** request);
  ncclResult_t (*irecv)(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                        void** phandles, void** request);
  ncclResult_t (*getProperties)(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*makeVDevice)(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props); /* may be NULL */
};

struct chrNetLib {
  char candidate[CHR_PLUGIN_PATH_MAX]; /* the NCCL_NET_PLUGIN entry this came from, as given */
  int fallback;                 /* 1: not listed; Chorus's socket plugin, tried after the list */
  chrPluginLib dl;              /* handle, path opened, names tried, dlerror texts */
  int usable;                   /* 1: a table was found and bound */
  char failReason[CHR_PLUGIN_REASON_MAX + 64]; /* why not usable (load or probe), for WARN and describe */
  int version;                  /* 8..12 */
  const char* name;             /* the table's name */
  const void* native;           /* the plugin's own ncclNet_vN_t */

  ncclNet_v12_t table;          /* what the wrappers call (see the header comment) */
  ncclResult_t (*init)(struct chrNetLib* lib, void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config,
                       ncclDebugLogger_t logFunction, ncclProfilerCallback_t profFunction);
  ncclResult_t (*getProperties)(struct chrNetLib* lib, int dev, ncclNetProperties_v12_t* props);
  ncclResult_t (*makeVDevice)(struct chrNetLib* lib, int* d, ncclNetVDeviceProps_v12_t* props); /* may be NULL */

  /* Before v11 the plugin's init runs once per process: the first comm calls it, later ones only
   * count. The result is kept, so a failed init is not retried. */
  pthread_mutex_t initLock;
  int initDone;
  ncclResult_t initResult;
  int initRefs;

  char lastWarn[CHR_PLUGIN_REASON_MAX + 64]; /* last failure WARNed, so repeats stay quiet */

  /* v8..v10 only, set by chrNetAdaptBind: what the shared forwarders of net_adapt.c call. */
  struct chrNetCommonSlots common;
  struct chrNetAdaptOps ops;
};

/* The ctx an adapter hands out from init (v8..v10: a dummy per comm; v11 keeps the plugin's own). */
struct chrNetAdaptCtx {
  struct chrNetLib* lib;
  ncclNetCommConfig_v12_t config;
};

/* A listen/send/recv comm of a v8..v10 plugin, remembering its library. */
struct chrNetAdaptComm {
  struct chrNetLib* lib;
  void* comm;
};

/* Bind the plugin's table into lib (fills table, init, getProperties, makeVDevice, version, name).
 * Return ncclSuccess, or an error after writing the reason into lib->failReason. */
ncclResult_t chrNetBindV12(struct chrNetLib* lib, const ncclNet_v12_t* t);
ncclResult_t chrNetAdaptV11(struct chrNetLib* lib, const ncclNet_v11_t* t);
ncclResult_t chrNetAdaptV10(struct chrNetLib* lib, const ncclNet_v10_t* t);
ncclResult_t chrNetAdaptV9(struct chrNetLib* lib, const ncclNet_v9_t* t);
ncclResult_t chrNetAdaptV8(struct chrNetLib* lib, const ncclNet_v8_t* t);

/* Shared by the v8..v10 adapters, after CHR_NET_COPY_COMMON_SLOTS(&lib->common, t): keep ops and
 * native, and fill lib's v12 table, init, getProperties and makeVDevice with the shared forwarders
 * (once-per-process init with a user count and a dummy ctx per comm, wrapped comms, no finalize
 * beyond the count, no setNetAttr). */
void chrNetAdaptBind(struct chrNetLib* lib, const void* native, const char* name, const struct chrNetAdaptOps* ops);

/* Check that a v12 vNIC request fits an older one of maxDevs entries and copy it to (ndevs, devs[maxDevs]),
 * zeroing the unused entries. Refusals are reported (chrNetAdaptFail). */
ncclResult_t chrNetAdaptNarrowVDevice(const struct chrNetLib* lib, const ncclNetVDeviceProps_v12_t* props, int maxDevs,
                                      int* ndevs, int* devs);

/* An adapter that rejects a call itself (before reaching the plugin) reports through this, so the
 * wrapper knows the error is already logged and does not log it a second time. */
ncclResult_t chrNetAdaptFailAt(ncclResult_t res, const char* file, int line, const char* fmt, ...)
    __attribute__((format(printf, 4, 5)));
#define chrNetAdaptFail(res, ...) chrNetAdaptFailAt((res), __FILE__, __LINE__, __VA_ARGS__)
/* 1 if the last failure on this thread was already reported by an adapter; clears the mark. */
int chrNetAdaptTakeReported(void);

/* Copy the base properties every version has (the v8 set) from an older struct into a v12 one; the
 * caller fills the rest. Fields are matched by name, so the differing layouts stay out of the way. */
#define CHR_NET_COPY_BASE_PROPS(dst, src)     \
  do {                                        \
    (dst)->name = (src)->name;                \
    (dst)->pciPath = (src)->pciPath;          \
    (dst)->guid = (src)->guid;                \
    (dst)->ptrSupport = (src)->ptrSupport;    \
    (dst)->regIsGlobal = (src)->regIsGlobal;  \
    (dst)->speed = (src)->speed;              \
    (dst)->port = (src)->port;                \
    (dst)->latency = (src)->latency;          \
    (dst)->maxComms = (src)->maxComms;        \
    (dst)->maxRecvs = (src)->maxRecvs;        \
    (dst)->netDeviceType = (src)->netDeviceType; \
    (dst)->netDeviceVersion = (src)->netDeviceVersion; \
  } while (0)

/* A whole v12 struct from a v9..v11 one: the base set, the fields v9 added (forceFlush, vProps of at
 * most maxDevs, maxP2pBytes, maxCollBytes), and the defaults for what came later (maxMultiRequestSize
 * 1, railId = planeId = -1). A v11 caller then takes maxMultiRequestSize from the plugin. */
#define CHR_NET_PROPS_FROM_V9(dst, src, maxDevs)                                                    \
  do {                                                                                             \
    memset((dst), 0, sizeof(*(dst)));                                                              \
    CHR_NET_COPY_BASE_PROPS(dst, src);                                                             \
    (dst)->forceFlush = (src)->forceFlush;                                                         \
    (dst)->vProps.ndevs = (src)->vProps.ndevs;                                                     \
    for (int i_ = 0; i_ < (src)->vProps.ndevs && i_ < (maxDevs); i_++)                             \
      (dst)->vProps.devs[i_] = (src)->vProps.devs[i_];                                             \
    (dst)->maxP2pBytes = (src)->maxP2pBytes;                                                       \
    (dst)->maxCollBytes = (src)->maxCollBytes;                                                     \
    (dst)->maxMultiRequestSize = 1;                                                                \
    (dst)->railId = -1;                                                                            \
    (dst)->planeId = -1;                                                                           \
  } while (0)

/* Every version must fill these slots; a NULL one makes the library unusable (reason in failReason).
 * Used by each bind function on the plugin's own table, so the field names are checked per version. */
ncclResult_t chrNetMissingSlot(struct chrNetLib* lib, const char* slotName);
#define CHR_NET_REQUIRE_SLOTS(lib, t)                                                                   \
  do {                                                                                                  \
    if ((t)->name == NULL) return chrNetMissingSlot((lib), "name");                                     \
    if ((t)->init == NULL) return chrNetMissingSlot((lib), "init");                                     \
    if ((t)->devices == NULL) return chrNetMissingSlot((lib), "devices");                               \
    if ((t)->getProperties == NULL) return chrNetMissingSlot((lib), "getProperties");                   \
    if ((t)->listen == NULL) return chrNetMissingSlot((lib), "listen");                                 \
    if ((t)->connect == NULL) return chrNetMissingSlot((lib), "connect");                               \
    if ((t)->accept == NULL) return chrNetMissingSlot((lib), "accept");                                 \
    if ((t)->regMr == NULL) return chrNetMissingSlot((lib), "regMr");                                   \
    if ((t)->deregMr == NULL) return chrNetMissingSlot((lib), "deregMr");                               \
    if ((t)->isend == NULL) return chrNetMissingSlot((lib), "isend");                                   \
    if ((t)->irecv == NULL) return chrNetMissingSlot((lib), "irecv");                                   \
    if ((t)->test == NULL) return chrNetMissingSlot((lib), "test");                                     \
    if ((t)->closeSend == NULL) return chrNetMissingSlot((lib), "closeSend");                           \
    if ((t)->closeRecv == NULL) return chrNetMissingSlot((lib), "closeRecv");                           \
    if ((t)->closeListen == NULL) return chrNetMissingSlot((lib), "closeListen");                       \
  } while (0)

#endif /* CHORUS_NET_ADAPTER_H_ */
