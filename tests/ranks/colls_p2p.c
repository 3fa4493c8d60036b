/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls_p2p.c: the send/recv scenarios of test_colls: a ring shift for every type and size, all pairs
 * in one group (with and without self), a send to self alone, two messages to one peer, a ping-pong
 * outside any group, collectives and send/recv mixed in one group, and a large ring shift.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "colls_check.h"

/* --- send/recv ---------------------------------------------------------------------------------- */

/* A message from rank src to rank dst: element i is chrTestCopyBits(seed, src, dst * 2^32 + i), so
 * every (sender, receiver) pair carries its own data. Counts differ per pair (both ends compute them). */
static size_t msgOffset(int dst) { return (size_t)dst << 32; }
static size_t pairCount(size_t base, int src, int dst) { return base ? base + (size_t)((src * 5 + dst * 3) % 7) : 0; }

/* Each rank sends to rank+1 and receives from rank-1, in one group. */
static int ringShift(chrTestRank* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr;
  int bad = 0;
  chrTestBuf send, recv;
  chrTestSetCase(st, "sendrecv ring shift %s count %zu", t->name, n);
  ALLOC_OK(chrTestBufInit(&send, n, ts) || chrTestBufInit(&recv, n, ts));
  chrTestFillCopy(send.p, n, (int)ts, seed, me, msgOffset(next));
  ALLOC_OK(chrTestSnapshot(&send));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(send.p, n, type, next, st->comm, NULL));
  NCCL_OK(ncclRecv(recv.p, n, type, prev, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad += chrTestCheckUnchanged(st, "sendbuff", &send);
  bad += chrTestCheckCopy(st, "received", recv.p, n, (int)ts, seed, prev, msgOffset(me)) +
         chrTestCheckGuards(st, "recvbuff", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

/* Every rank sends to and receives from every other rank (and itself with withSelf) in ONE group.
 * The receives are posted first, in descending peer order, then the sends: a library that ran the
 * operations one by one in call order would deadlock here. */
static int allPairs(chrTestRank* st, ncclDataType_t type, size_t base, int withSelf, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank, nr = st->nranks;
  int bad = 0;
  chrTestBuf send[64], recv[64];
  memset(send, 0, sizeof(send));
  memset(recv, 0, sizeof(recv));
  chrTestSetCase(st, "sendrecv all pairs%s %s base count %zu", withSelf ? " with self" : "", t->name, base);
  for (int p = 0; p < nr; p++) {
    if (p == me && !withSelf) continue;
    ALLOC_OK(chrTestBufInit(&send[p], pairCount(base, me, p), ts) ||
             chrTestBufInit(&recv[p], pairCount(base, p, me), ts));
    chrTestFillCopy(send[p].p, send[p].elems, (int)ts, seed, me, msgOffset(p));
    ALLOC_OK(chrTestSnapshot(&send[p]));
  }
  NCCL_OK(ncclGroupStart());
  for (int p = nr - 1; p >= 0; p--)
    if (p != me || withSelf) NCCL_OK(ncclRecv(recv[p].p, recv[p].elems, type, p, st->comm, NULL));
  for (int p = 0; p < nr; p++)
    if (p != me || withSelf) NCCL_OK(ncclSend(send[p].p, send[p].elems, type, p, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  for (int p = 0; p < nr; p++) {
    if (p == me && !withSelf) continue;
    char what[64];
    snprintf(what, sizeof(what), "from rank %d: received", p);
    bad += chrTestCheckCopy(st, what, recv[p].p, recv[p].elems, (int)ts, seed, p, msgOffset(me));
    snprintf(what, sizeof(what), "from rank %d: recvbuff", p);
    bad += chrTestCheckGuards(st, what, &recv[p]);
    snprintf(what, sizeof(what), "to rank %d: sendbuff", p);
    bad += chrTestCheckUnchanged(st, what, &send[p]);
    chrTestBufFree(&send[p]);
    chrTestBufFree(&recv[p]);
  }
  chrTestEndCase(st, bad);
  return 0;
}

/* A group whose only peer is this rank: the receive posted before the send. */
static int sendToSelf(chrTestRank* st, ncclDataType_t type, size_t n, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  const size_t ts = (size_t)t->size;
  const int me = st->rank;
  int bad = 0;
  chrTestBuf send, recv;
  chrTestSetCase(st, "sendrecv to self %s count %zu", t->name, n);
  ALLOC_OK(chrTestBufInit(&send, n, ts) || chrTestBufInit(&recv, n, ts));
  chrTestFillCopy(send.p, n, (int)ts, seed, me, msgOffset(me));
  ALLOC_OK(chrTestSnapshot(&send));
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclRecv(recv.p, n, type, me, st->comm, NULL));
  NCCL_OK(ncclSend(send.p, n, type, me, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad += chrTestCheckUnchanged(st, "sendbuff", &send);
  bad += chrTestCheckCopy(st, "received", recv.p, n, (int)ts, seed, me, msgOffset(me)) +
         chrTestCheckGuards(st, "recvbuff", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

/* Two messages to the same peer in one group arrive in the order they were posted. */
static int twoToSamePeer(chrTestRank* st, uint64_t seed) {
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr;
  const size_t n1 = 100, n2 = 3001;
  int bad = 0;
  chrTestBuf s1, s2, r1, r2;
  chrTestSetCase(st, "sendrecv two messages to the same peer (float counts %zu, %zu)", n1, n2);
  ALLOC_OK(chrTestBufInit(&s1, n1, 4) || chrTestBufInit(&s2, n2, 4) || chrTestBufInit(&r1, n1, 4) ||
           chrTestBufInit(&r2, n2, 4));
  chrTestFillCopy(s1.p, n1, 4, seed, me, 0);
  chrTestFillCopy(s2.p, n2, 4, seed, me, 1u << 20);
  NCCL_OK(ncclGroupStart());
  NCCL_OK(ncclSend(s1.p, n1, ncclFloat32, next, st->comm, NULL));
  NCCL_OK(ncclRecv(r1.p, n1, ncclFloat32, prev, st->comm, NULL));
  NCCL_OK(ncclSend(s2.p, n2, ncclFloat32, next, st->comm, NULL));
  NCCL_OK(ncclRecv(r2.p, n2, ncclFloat32, prev, st->comm, NULL));
  NCCL_OK(ncclGroupEnd());
  bad +=
      chrTestCheckCopy(st, "first message", r1.p, n1, 4, seed, prev, 0) + chrTestCheckGuards(st, "first recvbuff", &r1);
  bad += chrTestCheckCopy(st, "second message", r2.p, n2, 4, seed, prev, 1u << 20) +
         chrTestCheckGuards(st, "second recvbuff", &r2);
  chrTestEndCase(st, bad);
  chrTestBufFree(&s1);
  chrTestBufFree(&s2);
  chrTestBufFree(&r1);
  chrTestBufFree(&r2);
  return 0;
}

/* Outside any group: rank 0 sends then receives, the last rank receives then sends. */
static int pingPong(chrTestRank* st, size_t n, uint64_t seed) {
  const int me = st->rank, last = st->nranks - 1;
  if (last == 0 || (me != 0 && me != last)) return 0;
  const int peer = me == 0 ? last : 0;
  int bad = 0;
  chrTestBuf send, recv;
  chrTestSetCase(st, "sendrecv ping-pong without a group, int64 count %zu", n);
  ALLOC_OK(chrTestBufInit(&send, n, 8) || chrTestBufInit(&recv, n, 8));
  chrTestFillCopy(send.p, n, 8, seed, me, 0);
  if (me == 0) {
    NCCL_OK(ncclSend(send.p, n, ncclInt64, peer, st->comm, NULL));
    NCCL_OK(ncclRecv(recv.p, n, ncclInt64, peer, st->comm, NULL));
  } else {
    NCCL_OK(ncclRecv(recv.p, n, ncclInt64, peer, st->comm, NULL));
    NCCL_OK(ncclSend(send.p, n, ncclInt64, peer, st->comm, NULL));
  }
  bad += chrTestCheckCopy(st, "received", recv.p, n, 8, seed, peer, 0) + chrTestCheckGuards(st, "recvbuff", &recv);
  chrTestEndCase(st, bad);
  chrTestBufFree(&send);
  chrTestBufFree(&recv);
  return 0;
}

/* One group holding an all-reduce, a broadcast, an all-gather, a reduce and a send/recv ring shift
 * (p2p first or last), every result checked. */
static int mixedGroup(chrTestRank* st, int p2pFirst, uint64_t seed) {
  const int me = st->rank, nr = st->nranks, next = (me + 1) % nr, prev = (me + nr - 1) % nr, broot = nr - 1;
  const size_t n = 1031, np2p = 4099;
  int bad = 0;
  chrTestBuf ar, bs, br, ags, agr, rs, rr, ps, pr;
  chrTestSetCase(st, "mixed group (p2p %s)", p2pFirst ? "first" : "last");
  ALLOC_OK(chrTestBufInit(&ar, n, 4) || chrTestBufInit(&bs, n, 4) || chrTestBufInit(&br, n, 4) ||
           chrTestBufInit(&ags, n, 1) || chrTestBufInit(&agr, n * (size_t)nr, 1) || chrTestBufInit(&rs, n, 8) ||
           chrTestBufInit(&rr, n, 8) || chrTestBufInit(&ps, np2p, 8) || chrTestBufInit(&pr, np2p, 8));
  for (size_t i = 0; i < n; i++) {
    ((uint32_t*)ar.p)[i] = (uint32_t)i * (uint32_t)(me + 1);
    ((int64_t*)rs.p)[i] = (int64_t)i + me;
  }
  if (me == broot) chrTestFillCopy(bs.p, n, 4, seed, broot, 0);
  chrTestFillCopy(ags.p, n, 1, seed, me, 0);
  chrTestFillCopy(ps.p, np2p, 8, seed, me, msgOffset(next));
  ALLOC_OK(chrTestSnapshot(&rr));
  NCCL_OK(ncclGroupStart());
  for (int pass = 0; pass < 2; pass++) {
    if (pass == (p2pFirst ? 0 : 1)) {
      NCCL_OK(ncclSend(ps.p, np2p, ncclFloat64, next, st->comm, NULL));
      NCCL_OK(ncclRecv(pr.p, np2p, ncclFloat64, prev, st->comm, NULL));
    } else {
      NCCL_OK(ncclAllReduce(ar.p, ar.p, n, ncclUint32, ncclSum, st->comm, NULL));
      NCCL_OK(ncclBroadcast(bs.p, br.p, n, ncclFloat32, broot, st->comm, NULL));
      NCCL_OK(ncclAllGather(ags.p, agr.p, n, ncclInt8, st->comm, NULL));
      NCCL_OK(ncclReduce(rs.p, rr.p, n, ncclInt64, ncclSum, 0, st->comm, NULL));
    }
  }
  NCCL_OK(ncclGroupEnd());
  const uint32_t tri = (uint32_t)(nr * (nr + 1) / 2);
  for (size_t i = 0; i < n; i++) {
    uint32_t got = ((uint32_t*)ar.p)[i];
    if (got != (uint32_t)i * tri) {
      chrTestReport(st, "all-reduce (uint32 sum)", (long long)i, got, (uint32_t)i * tri);
      bad = 1;
    }
    int64_t want = (int64_t)nr * (int64_t)i + (int64_t)nr * (nr - 1) / 2;
    if (me == 0 && ((int64_t*)rr.p)[i] != want) {
      chrTestReport(st, "reduce (int64 sum, root 0)", (long long)i, (uint64_t)((int64_t*)rr.p)[i], (uint64_t)want);
      bad = 1;
    }
  }
  if (me != 0) bad += chrTestCheckUnchanged(st, "reduce: non-root recvbuff", &rr);
  bad += chrTestCheckCopy(st, "broadcast (float, root n-1)", br.p, n, 4, seed, broot, 0);
  for (int r = 0; r < nr; r++)
    bad += chrTestCheckCopy(st, "all-gather (int8)", agr.p + (size_t)r * n, n, 1, seed, r, 0);
  bad += chrTestCheckCopy(st, "send/recv (float64)", pr.p, np2p, 8, seed, prev, msgOffset(me));
  bad += chrTestCheckGuards(st, "all-reduce", &ar) + chrTestCheckGuards(st, "broadcast", &br) +
         chrTestCheckGuards(st, "all-gather", &agr) + chrTestCheckGuards(st, "reduce", &rr) +
         chrTestCheckGuards(st, "recv", &pr);
  chrTestEndCase(st, bad);
  chrTestBuf* all[] = {&ar, &bs, &br, &ags, &agr, &rs, &rr, &ps, &pr};
  for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) chrTestBufFree(all[i]);
  return 0;
}

int chrTestRunSendRecv(chrTestRank* st) {
  const chrTestArgs* a = st->a;
  const int nr = st->nranks;
  for (int s = 0; s < NUM_SIZES; s++)
    for (int type = 0; type < ncclNumTypes; type++) {
      size_t n = chrTestCountOf(a, s, (size_t)chrNumTypeInfo((ncclDataType_t)type)->size, 1);
      if (ringShift(st, (ncclDataType_t)type, n, chrTestSeedOf(8, s, type, 0))) return 1;
    }
  for (int type = 0; type < ncclNumTypes; type++)
    if (allPairs(st, (ncclDataType_t)type, 1031, 0, chrTestSeedOf(8, 5, type, 0))) return 1;
  if (allPairs(st, ncclInt8, 0, 0, chrTestSeedOf(8, 6, 0, 0)) ||
      allPairs(st, ncclFloat32, a->medium / 4 / (size_t)nr, 0, chrTestSeedOf(8, 6, 1, 0)) ||
      allPairs(st, ncclFloat64, 1031, 1, chrTestSeedOf(8, 6, 2, 0)) ||
      allPairs(st, ncclFloat32, a->medium / 4 / (size_t)nr, 1, chrTestSeedOf(8, 6, 3, 0)))
    return 1;
  if (sendToSelf(st, ncclInt32, 1031, chrTestSeedOf(8, 7, 0, 0)) ||
      sendToSelf(st, ncclUint8, a->medium, chrTestSeedOf(8, 7, 6, 0)))
    return 1;
  if (twoToSamePeer(st, chrTestSeedOf(8, 7, 1, 0)) || pingPong(st, 1031, chrTestSeedOf(8, 7, 2, 0)) ||
      pingPong(st, a->medium / 8, chrTestSeedOf(8, 7, 3, 0)) || mixedGroup(st, 1, chrTestSeedOf(8, 7, 4, 0)) ||
      mixedGroup(st, 0, chrTestSeedOf(8, 7, 5, 0)))
    return 1;
  if (a->big && ringShift(st, ncclFloat32, a->big / 4, chrTestSeedOf(8, 9, 0, 0))) return 1;
  return 0;
}
