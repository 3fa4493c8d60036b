/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * work_check.cu: a plan is checked on the host before any kernel sees it, so a kernel can trust its
 * works (the kernel still refuses a link it has no connection for, as a last guard). Checked: the
 * pattern and its link layout (hostdev/work.h), types and ops the kernels have, slot capacity for a
 * step, ring positions, and that a point-to-point end is used from one channel only within a launch
 * (two CTAs would race on its position). An engine send or receive (a P2P work flagged
 * CHR_WORK_ENGINE, core/exec/dev_launch.c) is one cudaMemcpyAsync between the two ranks' buffers: it
 * names its peer, direction and transfer class (links[0].conn: 0 a point-to-point call, 1 a
 * collective's transfer) and uses no connection end and no slot.
 */
#include <string.h>
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/kernels/dev_work.h"
#include "device/launch/work_check.h"
#include "hostdev/algo_ids.h"
#include "plugin/common.h" /* ncclFuncSend */

static const int typeSizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

static int isIntType(int type) { return type <= ncclUint64; }

/* A send to another rank or a receive from one that the launcher runs on the copy engine. */
static int isEngineP2p(const struct chrWork* w) {
  return (w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV) && (w->flags & CHR_WORK_ENGINE);
}

/* Its one link names a connected peer other than the rank (a copy to itself is a local work) and a
 * transfer class, and its buffer is the whole one: the copy moves [0, count) in one piece. */
static ncclResult_t checkEngineP2p(const struct chrDevRank* rk, int rank, int channel, const struct chrWork* w) {
  const int n = rk->cfg.nRanks, isSend = w->pattern == CHR_PAT_P2P_SEND;
  const struct chrWorkLink* L = &w->links[0];
  if (w->nLinks != 1 || !L->p2p || L->isSend != isSend)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: engine %s with %d links (one p2p %s link expected)", rank,
                      channel, isSend ? "send" : "receive", w->nLinks, isSend ? "send" : "recv");
  if (L->peer < 0 || L->peer >= n || L->peer == rank)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: engine %s with rank %d of %d", rank, channel,
                      isSend ? "send" : "receive", L->peer, n);
  if (rk->peerBase[L->peer] == NULL)
    return chrDevFail(ncclInvalidUsage, "rank %d channel %d: engine %s with rank %d, which is not connected to this rank",
                      rank, channel, isSend ? "send" : "receive", L->peer);
  if (L->conn >= CHR_WORK_CLASSES)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: engine %s with rank %d of transfer class %d (0 "
                      "point-to-point or 1 collective expected)", rank, channel, isSend ? "send" : "receive", L->peer,
                      L->conn);
  if (w->len != w->count || w->start != 0)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: engine %s of elements [%llu, +%llu) of %llu (the whole "
                      "buffer expected)", rank, channel, isSend ? "send" : "receive", (unsigned long long)w->start,
                      (unsigned long long)w->len, (unsigned long long)w->count);
  if (w->len > 0 && (isSend ? w->sendbuff : w->recvbuff) == 0)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: engine %s of %llu elements at NULL", rank, channel,
                      isSend ? "send" : "receive", (unsigned long long)w->len);
  return ncclSuccess;
}

/* Direction each link must have for the pattern (1 send, 0 recv), and whether it is point-to-point. */
static ncclResult_t checkLinks(const struct chrDevRank* rk, int rank, int channel, const struct chrWork* w) {
  const int n = rk->cfg.nRanks;
  int expectSend[CHR_WORK_MAX_LINKS];
  int p2p = 1, nLinks = -1;
  switch (w->pattern) {
    case CHR_PAT_LOCAL: nLinks = 0; break;
    case CHR_PAT_PAIR_ALLREDUCE:
      if (n != 2) break;
      [[fallthrough]]; /* the ring's two links */
    case CHR_PAT_RING_ALLREDUCE:
    case CHR_PAT_RING_REDUCESCATTER:
    case CHR_PAT_RING_ALLGATHER:
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_RING_REDUCE:
      nLinks = 2;
      p2p = 0;
      expectSend[CHR_RING_SEND] = 1;
      expectSend[CHR_RING_RECV] = 0;
      break;
    case CHR_PAT_TREE_ROOT:
      if (w->nLinks != 2 && w->nLinks != 4) break;
      nLinks = w->nLinks;
      for (int i = 0; i < nLinks; i++) expectSend[i] = i >= nLinks / 2;
      break;
    case CHR_PAT_TREE_UP:
    case CHR_PAT_TREE_DOWN:
      if (w->nLinks < 1 || w->nLinks > 3) break;
      nLinks = w->nLinks;
      for (int i = 0; i < nLinks; i++) expectSend[i] = (i == nLinks - 1) == (w->pattern == CHR_PAT_TREE_UP);
      break;
    case CHR_PAT_P2P_SEND:
    case CHR_PAT_P2P_RECV:
      nLinks = 1;
      expectSend[0] = w->pattern == CHR_PAT_P2P_SEND;
      break;
    default: return chrDevFail(ncclInvalidArgument, "rank %d channel %d: unknown work pattern %d", rank, channel, w->pattern);
  }
  if (nLinks < 0 || w->nLinks != nLinks)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: pattern %d with %d links", rank, channel, w->pattern, w->nLinks);
  const int next = rk->next, prev = rk->prev;
  for (int i = 0; i < nLinks; i++) {
    const struct chrWorkLink* L = &w->links[i];
    if (L->isSend != expectSend[i] || L->p2p != p2p)
      return chrDevFail(ncclInvalidArgument, "rank %d channel %d: pattern %d link %d is a %s %s link, expected %s %s", rank,
                        channel, w->pattern, i, L->p2p ? "p2p" : "ring", L->isSend ? "send" : "recv", p2p ? "p2p" : "ring",
                        expectSend[i] ? "send" : "recv");
    if (L->peer < 0 || L->peer >= n)
      return chrDevFail(ncclInvalidArgument, "rank %d channel %d: link %d to rank %d of %d", rank, channel, i, L->peer, n);
    if (!chrDevPeerReachable(rk, L->peer))
      return chrDevFail(ncclInvalidUsage, "rank %d channel %d: link %d to rank %d, which is not connected to this rank",
                        rank, channel, i, L->peer);
    if (rk->netBlock[L->peer] != NULL && w->proto == CHR_PROTO_LL)
      return chrDevFail(ncclInvalidUsage, "rank %d channel %d: an LL work with rank %d, which is on another host (the "
                        "net carries SIMPLE steps only)", rank, channel, L->peer);
    if (p2p) {
      if (L->conn >= rk->cfg.p2pConns)
        return chrDevFail(ncclInvalidArgument, "rank %d channel %d: p2p connection index %d, the group has %d", rank, channel,
                          L->conn, rk->cfg.p2pConns);
      for (int j = 0; j < i; j++)
        if (w->links[j].peer == L->peer && w->links[j].conn == L->conn && w->links[j].isSend == L->isSend)
          return chrDevFail(ncclInvalidArgument, "rank %d channel %d: links %d and %d are the same connection", rank, channel, j, i);
    } else {
      if (channel >= rk->cfg.nChannels)
        return chrDevFail(ncclInvalidArgument, "rank %d: ring work on channel %d, the group has %d", rank, channel,
                          rk->cfg.nChannels);
      if (L->peer != (L->isSend ? next : prev))
        return chrDevFail(ncclInvalidArgument, "rank %d channel %d: ring %s link to rank %d, the ring says %d", rank, channel,
                          L->isSend ? "send" : "recv", L->peer, L->isSend ? next : prev);
    }
  }
  return ncclSuccess;
}

ncclResult_t chrDevCheckWork(const struct chrDevRank* rk, int channel, const struct chrWork* w) {
  const int n = rk->cfg.nRanks, rank = rk->cfg.rank;
  if (w->type >= ncclNumTypes || w->typeSize != typeSizes[w->type])
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: type %d of size %d", rank, channel, w->type, w->typeSize);
  if (w->op >= CHR_DEV_NUM_OPS) return chrDevFail(ncclInvalidArgument, "rank %d channel %d: op %d", rank, channel, w->op);
  if (chrDevWorkIsCopy(w) && w->pattern != CHR_PAT_LOCAL && w->op != CHR_DEV_SUM)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: pattern %d only copies but has op %d (Sum expected)", rank,
                      channel, w->pattern, w->op);
  if (w->op == CHR_DEV_SUMPOSTDIV && !isIntType(w->type))
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: SumPostDiv on type %d (integers only)", rank, channel, w->type);
  if (w->op == CHR_DEV_PREMULSUM && (w->flags & CHR_WORK_SCALAR_PTR) && w->opArg == 0)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: PreMulSum scalar pointer is NULL", rank, channel);
  if (w->proto != CHR_PROTO_SIMPLE && w->proto != CHR_PROTO_LL)
    return chrDevFail(ncclInvalidArgument, "rank %d channel %d: protocol %d (SIMPLE and LL only)", rank, channel, w->proto);
  if (w->nRanks != n) return chrDevFail(ncclInvalidArgument, "rank %d: work for %d ranks, group of %d", rank, w->nRanks, n);
  if (w->nLinks > CHR_WORK_MAX_LINKS) return chrDevFail(ncclInvalidArgument, "rank %d: %d links", rank, w->nLinks);
  if (isEngineP2p(w)) return checkEngineP2p(rk, rank, channel, w); /* no connection, no slot */
  ncclResult_t res = checkLinks(rk, rank, channel, w);
  if (res != ncclSuccess) return res;
  switch (w->pattern) {
    case CHR_PAT_RING_ALLREDUCE:
    case CHR_PAT_PAIR_ALLREDUCE:
    case CHR_PAT_RING_REDUCESCATTER:
    case CHR_PAT_RING_ALLGATHER:
      if (w->ringPos != rk->ringPos[rank])
        return chrDevFail(ncclInvalidArgument, "rank %d: ring position %d, the ring says %d", rank, w->ringPos, rk->ringPos[rank]);
      break;
    case CHR_PAT_RING_BROADCAST:
    case CHR_PAT_RING_REDUCE:
      if (w->dist < 0 || w->dist >= n) return chrDevFail(ncclInvalidArgument, "rank %d: ring distance %d", rank, w->dist);
      break;
    case CHR_PAT_LOCAL: /* on several ranks only a rank's copy to itself (a send paired with its receive) */
      if (n != 1 && w->len > 0 && (w->func != ncclFuncSend || !chrDevWorkIsCopy(w)))
        return chrDevFail(ncclInvalidArgument, "rank %d: local work of function %d on %d ranks", rank, w->func, n);
      break;
    default: break;
  }
  if (w->len > 0 && w->nLinks > 0) {
    /* checkLinks made every link of a work p2p or every one ring; p2p slots have their own size */
    const uint64_t simple = w->links[0].p2p ? rk->cfg.p2pStepBytes : rk->cfg.stepBytes;
    const uint64_t cap = w->proto == CHR_PROTO_LL ? (uint64_t)rk->cfg.llLines * CHR_DEV_LL_LINE_DATA : simple;
    if (w->chunkElems == 0 || w->chunkElems > cap / (uint64_t)w->typeSize)
      return chrDevFail(ncclInvalidArgument, "rank %d channel %d: steps of %llu elements of %d bytes, %s slots hold %llu bytes",
                        rank, channel, (unsigned long long)w->chunkElems, w->typeSize,
                        w->proto == CHR_PROTO_LL ? "LL" : "SIMPLE", (unsigned long long)cap);
  }
  return ncclSuccess;
}

static int isTransfer(const struct chrWork* w) {
  return w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV;
}

/* The kernels' works: each valid, none for the copy engine, channel c's sends and receives after its
 * first nCut[c] works and nothing else there (they ride the last kernel, whatever its reduction), and
 * no point-to-point end used from two channels. */
static ncclResult_t checkKernelWorks(struct chrDevRank* rk, const struct chrDevLaunch* l) {
  const int n = rk->cfg.nRanks, rank = rk->cfg.rank;
  static_assert(CHR_DEV_MAX_CHANNELS <= 128, "p2pOwner holds a channel in a signed char");
  signed char* owner = rk->p2pOwner; /* the channel using each p2p end */
  memset(owner, -1, (size_t)rk->cfg.p2pConns * (size_t)n * 2);
  int k = 0;
  for (int c = 0; c < l->nChannels; c++) {
    for (int i = 0; i < l->nWorks[c]; i++, k++) {
      const struct chrWork* w = &l->works[k];
      if (w->flags & CHR_WORK_ENGINE)
        return chrDevFail(ncclInvalidArgument, "rank %d channel %d: a copy-engine work among the kernels' works (it "
                          "belongs in the launch's copies or ceSends)", rank, c);
      if ((i < l->nCut[c]) == isTransfer(w))
        return chrDevFail(ncclInvalidArgument, "rank %d channel %d: work %d (pattern %d) %s the channel's sends and "
                          "receives, which follow its %d other works", rank, c, i, w->pattern,
                          isTransfer(w) ? "is a transfer before" : "is not one of", l->nCut[c]);
      ncclResult_t res = chrDevCheckWork(rk, c, w);
      if (res != ncclSuccess) return res;
      for (int j = 0; j < w->nLinks; j++) {
        const struct chrWorkLink* L = &w->links[j];
        if (!L->p2p) continue;
        const int e = CHR_DEV_P2P_INDEX(n, L->conn, L->peer, L->isSend);
        if (owner[e] >= 0 && owner[e] != c)
          return chrDevFail(ncclInvalidUsage, "rank %d: the p2p %s link to rank %d (index %d) is used from channels %d and %d "
                            "of one launch", rank, L->isSend ? "send" : "recv", L->peer, L->conn, owner[e], c);
        owner[e] = (signed char)c;
      }
    }
  }
  return ncclSuccess;
}

/* A list of copy-engine works: n of them at works, each of its kind (a copy to itself, or a transfer
 * to another rank) and valid. */
static ncclResult_t checkEngineList(const struct chrDevRank* rk, const struct chrWork* works, int n, int transfers) {
  const char* what = transfers ? "copy-engine send or receive" : "copy-engine copy";
  if (n < 0 || (n > 0 && works == NULL))
    return chrDevFail(ncclInvalidArgument, "rank %d: %d works of kind %s at %p", rk->cfg.rank, n, what, (const void*)works);
  for (int i = 0; i < n; i++) {
    const struct chrWork* w = &works[i];
    const int kind = transfers ? isEngineP2p(w) : w->pattern == CHR_PAT_LOCAL && (w->flags & CHR_WORK_ENGINE);
    if (!kind)
      return chrDevFail(ncclInvalidArgument, "rank %d: entry %d of the launch's %s list has pattern %d, flags %d", rk->cfg.rank,
                        i, what, w->pattern, w->flags);
    ncclResult_t res = chrDevCheckWork(rk, 0, w);
    if (res != ncclSuccess) return res;
  }
  return ncclSuccess;
}

ncclResult_t chrDevCheckLaunch(struct chrDevRank* rk, const struct chrDevLaunch* l) {
  const int rank = rk->cfg.rank;
  if (l->nChannels < 0 || l->nChannels > CHR_DEV_MAX_CHANNELS)
    return chrDevFail(ncclInvalidArgument, "rank %d: a launch on %d channels (0..%d)", rank, l->nChannels,
                      CHR_DEV_MAX_CHANNELS);
  int total = 0;
  for (int c = 0; c < l->nChannels; c++) {
    if (l->nWorks[c] < 0 || l->nCut[c] < 0 || l->nCut[c] > l->nWorks[c])
      return chrDevFail(ncclInvalidArgument, "rank %d: channel %d with %d works, %d of them cut by call", rank, c,
                        l->nWorks[c], l->nCut[c]);
    total += l->nWorks[c];
  }
  if (total > 0 && l->works == NULL) return chrDevFail(ncclInvalidArgument, "rank %d: %d works at NULL", rank, total);
  if (l->capturing && l->nCeSends > 0)
    return chrDevFail(ncclInvalidUsage, "rank %d: copy-engine sends cannot be captured into a CUDA graph", rank);
  ncclResult_t res = checkKernelWorks(rk, l);
  if (res == ncclSuccess) res = checkEngineList(rk, l->copies, l->nCopies, 0);
  if (res == ncclSuccess) res = checkEngineList(rk, l->ceSends, l->nCeSends, 1);
  return res;
}
