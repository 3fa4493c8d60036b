/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_setup.h: what every net plugin's init() does alike. Once per process: take the host's logger
 * and find the devices (a failed discovery is tried again by the next init). Per init() call: a
 * context for the connections made through it (the profiler callback, the communicator's id, its
 * traffic class).
 */
#ifndef CHORUS_NET_SETUP_H_
#define CHORUS_NET_SETUP_H_

#include <pthread.h>
#include "plugin/net_v12.h"

typedef struct chrNetSetup {
  pthread_mutex_t lock;
  int done;                                        /* discovery succeeded */
  void (*takeLogger)(ncclDebugLogger_t logFunction); /* the plugin keeps it (and hands it on) */
  ncclResult_t (*discover)(void);                  /* settings and devices */
} chrNetSetup;

#define CHR_NET_SETUP_INITIALIZER(takeLogger, discover) {PTHREAD_MUTEX_INITIALIZER, 0, (takeLogger), (discover)}

/* Under s->lock: a non-NULL logFunction goes to takeLogger, then discover runs unless it has
 * succeeded before. Returns discover's result (ncclSuccess once it has succeeded). */
ncclResult_t chrNetSetupOnce(chrNetSetup* s, ncclDebugLogger_t logFunction);

typedef struct chrNetCtx {
  ncclProfilerCallback_t prof;
  uint64_t commId;
  int trafficClass; /* NCCL_NET_TRAFFIC_CLASS_UNDEF without a config */
} chrNetCtx;

/* *ctx = a new context (ncclSystemError and *ctx = NULL when out of memory). */
ncclResult_t chrNetCtxNew(void** ctx, uint64_t commId, const ncclNetCommConfig_v12_t* config,
                          ncclProfilerCallback_t prof);
/* The profiler callback given to the init() of ctx (NULL for a NULL ctx). */
ncclProfilerCallback_t chrNetCtxProfiler(void* ctx);

#endif /* CHORUS_NET_SETUP_H_ */
