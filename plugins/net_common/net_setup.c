/* SPDX-License-Identifier: BSD-3-Clause */
/* net_setup.c: the init() steps every net plugin shares (net_setup.h). */
#include <stdlib.h>
#include "net_setup.h"

ncclResult_t chrNetSetupOnce(chrNetSetup* s, ncclDebugLogger_t logFunction) {
  ncclResult_t res = ncclSuccess;
  pthread_mutex_lock(&s->lock);
  if (logFunction != NULL && s->takeLogger != NULL) s->takeLogger(logFunction);
  if (!s->done) {
    res = s->discover();
    if (res == ncclSuccess) s->done = 1;
  }
  pthread_mutex_unlock(&s->lock);
  return res;
}

ncclResult_t chrNetCtxNew(void** ctx, uint64_t commId, const ncclNetCommConfig_v12_t* config,
                          ncclProfilerCallback_t prof) {
  chrNetCtx* c = calloc(1, sizeof(*c));
  *ctx = c;
  if (c == NULL) return ncclSystemError;
  c->prof = prof;
  c->commId = commId;
  c->trafficClass = config ? config->trafficClass : NCCL_NET_TRAFFIC_CLASS_UNDEF;
  return ncclSuccess;
}

ncclProfilerCallback_t chrNetCtxProfiler(void* ctx) { return ctx ? ((chrNetCtx*)ctx)->prof : NULL; }
