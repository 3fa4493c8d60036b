/* SPDX-License-Identifier: BSD-3-Clause */
/* direct.c: see direct.h. */
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "exec/direct.h"
#include "log/log.h"

/* sendWaits (shm by reference): not send/recv, whose send must complete before its receive is
 * called; not the ring all-reduce, whose reduce half then reads into a slot to add it, and which
 * measured slower than through the slots (docs/perf/host.md). */
static int patternQualifies(int pattern, int sendWaits) {
  switch (pattern) {
    case CHR_PAT_P2P_SEND:
    case CHR_PAT_P2P_RECV:
    case CHR_PAT_RING_ALLREDUCE: return !sendWaits;
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_RING_ALLGATHER: return 1;
    default: return 0;
  }
}

void chrDirectStart(struct chrDirectLink* d, struct chrLink* link, const struct chrCollTask* t) {
  if (link->ops->postUser == NULL || t->nChannels < 1 ||
      !patternQualifies(t->works[0].pattern, link->ops->directSendWaits))
    return;
  const int64_t minBytes = chrParamInt(link->ops->directMinParam);
  if (minBytes <= 0 || t->count * t->typeSize < (uint64_t)minBytes) return;
  const size_t len[2] = {t->sendElems * t->typeSize, t->recvElems * t->typeSize};
  const char* base[2] = {(const char*)t->sendbuff, (const char*)t->recvbuff};
  for (int i = 0; i < 2; i++) {
    if (len[i] == 0 || base[i] == NULL) continue;
    d->mh[i] = NULL;
    const ncclResult_t res = link->ops->regUser(link, (void*)base[i], len[i], &d->mh[i]);
    if (res == ncclSuccess && d->mh[i] == NULL) { /* the link declines */
      chrDirectStop(d, link);
      return;
    }
    if (res != ncclSuccess) {
      INFO(NCCL_NET, "comm %p rank %d: registering a user buffer of %zu bytes with its link to rank %d failed (%s): "
           "this call's steps on that link go through the staging slots", (void*)t->comm, t->comm->rank, len[i],
           link->peer, chrThreadLastError());
      d->mh[i] = NULL;
      chrDirectStop(d, link);
      return;
    }
    d->base[i] = base[i];
    d->len[i] = len[i];
  }
  d->on = d->mh[0] != NULL || d->mh[1] != NULL;
}

void chrDirectStop(struct chrDirectLink* d, struct chrLink* link) {
  for (int i = 0; i < 2; i++)
    if (d->mh[i]) {
      link->ops->deregUser(link, d->mh[i]);
      d->mh[i] = NULL;
    }
  d->on = 0;
}

/* The registration that holds [p, p + bytes), or NULL. */
static void* handleFor(const struct chrDirectLink* d, const char* p, size_t bytes) {
  for (int i = 0; i < 2; i++)
    if (d->mh[i] && p >= d->base[i] && bytes <= d->len[i] && (size_t)(p - d->base[i]) <= d->len[i] - bytes)
      return d->mh[i];
  return NULL;
}

static int receivesOn(const struct chrStep* st, int linkIndex) {
  for (int i = 0; i < st->nRecv; i++)
    if (st->recv[i] == linkIndex) return 1;
  return 0;
}

char* chrDirectRecvInto(struct chrDirectLink* d, const struct chrCollTask* t, int c, int linkIndex, uint64_t nSteps,
                        size_t* bytes, void** mh) {
  if (!d->on) return NULL;
  struct chrStep st;
  while (d->scan < nSteps) { /* the step of this receive: the link's next receiving step */
    chrWorkStep(&t->works[c], t->comm->ringOrder, d->scan, &st);
    if (receivesOn(&st, linkIndex)) break;
    d->scan++;
  }
  if (d->scan >= nSteps) return NULL;
  d->scan++;
  if (st.nRecv != 1 || st.localOff >= 0 || st.outOff < 0 || st.count == 0 ||
      (st.final && t->op.kind == chrRedSumPostDiv))
    return NULL;
  char* out = (char*)t->recvbuff + (size_t)st.outOff * t->typeSize;
  *bytes = st.count * t->typeSize;
  *mh = handleFor(d, out, *bytes);
  return *mh ? out : NULL;
}

int chrStepCopiesInput(const struct chrCollTask* t, const struct chrStep* st) {
  return st->nRecv == 0 && st->localOff >= 0 && t->op.kind != chrRedPreMulSum &&
         !(st->final && t->op.kind == chrRedSumPostDiv);
}

const char* chrDirectSendFrom(const struct chrDirectLink* d, const struct chrCollTask* t, const struct chrStep* st,
                              void** mh) {
  if (!d->on || st->count == 0) return NULL;
  const size_t bytes = st->count * t->typeSize;
  const char* from = NULL;
  if (chrStepCopiesInput(t, st))
    from = (const char*)t->sendbuff + (size_t)st->localOff * t->typeSize;
  else if (st->outOff >= 0)
    from = (const char*)t->recvbuff + (size_t)st->outOff * t->typeSize;
  if (from == NULL) return NULL;
  *mh = handleFor(d, from, bytes);
  return *mh ? from : NULL;
}
