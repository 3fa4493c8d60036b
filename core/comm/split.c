/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * split.c: the collective part of ncclCommSplit, over the parent's bootstrap.
 *
 *   1. every parent rank contributes (color, key) to an allgather, NCCL_SPLIT_NOCOLOR ones too;
 *   2. each color's members are ordered by key, ties by parent rank: that order gives the child ranks;
 *   3. the member with the lowest parent rank makes the child's unique id (its bootstrap root runs in
 *      that process) and sends it to the other members.
 * The caller then creates the child with chrCommInitStart (api/split_api.c). Host identity is per
 * process (NCCL_HOSTID), so the child sees the same hosts as the parent.
 *
 * Everything received is checked: magic, sender, the split's sequence number on the parent (so two
 * ranks that disagree on how many splits they made fail instead of mixing their exchanges), colors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "commstate/comm.h"
#include "log/check.h"
#include "log/log.h"

/* Bootstrap tag of the id message. Other users of the parent's bootstrap: transport/connect.c
 * (0x10000 + channel), transport/shm_link.c (0x20000 + channel, 0x21000 + channel); the bootstrap's
 * own collectives use tags < 0. */
#define TAG_SPLIT_ID 0x40000

#define SPLIT_ENTRY_MAGIC 0x53504c54u /* "SPLT" */
#define SPLIT_ID_MAGIC 0x53504944u    /* "SPID" */

struct splitEntry { /* allgathered, one per parent rank */
  uint32_t magic;
  uint32_t seq;
  int32_t parentRank;
  int32_t color;
  int32_t key;
  int32_t pad;
};

struct splitIdMsg { /* leader -> each other member of its color */
  uint32_t magic;
  uint32_t seq;
  int32_t color;
  int32_t nranks;
  ncclUniqueId id;
};

ncclResult_t chrSplitConfig(const struct ncclComm* parent, const ncclConfig_t* user, ncclConfig_t* out) {
  if (user != NULL) return chrConfigFromUser(user, out);
  /* The parent's effective config: already checked and complete. Stamp it with our own size and
   * version so that reading it again (chrCommInitStart) keeps every field. */
  *out = parent->config;
  out->size = sizeof(ncclConfig_t);
  out->magic = NCCL_API_MAGIC;
  out->version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

static ncclResult_t checkEntries(const struct splitEntry* all, int n, uint32_t seq) {
  for (int r = 0; r < n; r++) {
    const struct splitEntry* e = &all[r];
    if (e->magic != SPLIT_ENTRY_MAGIC || e->parentRank != r)
      return chrFail(ncclRemoteError, "ncclCommSplit: parent rank %d sent a malformed entry (magic 0x%x, rank %d)", r,
                     e->magic, e->parentRank);
    if (e->seq != seq)
      return chrFail(ncclInvalidUsage,
                     "ncclCommSplit: parent rank %d is in its split #%u of this communicator, this rank in #%u "
                     "(every rank must call ncclCommSplit the same number of times)",
                     r, e->seq, seq);
    if (e->color < 0 && e->color != NCCL_SPLIT_NOCOLOR)
      return chrFail(ncclRemoteError, "ncclCommSplit: parent rank %d sent invalid color %d", r, e->color);
  }
  return ncclSuccess;
}

/* Members of `color`, in child-rank order: by key, ties by parent rank. Insertion sort: n is the
 * parent's size, and this runs once per split. */
static int orderMembers(const struct splitEntry* all, int n, int color, int* members) {
  int count = 0;
  for (int r = 0; r < n; r++) {
    if (all[r].color != color) continue;
    int pos = count++;
    while (pos > 0 && all[members[pos - 1]].key > all[r].key) {
      members[pos] = members[pos - 1];
      pos--;
    }
    members[pos] = r; /* r is larger than every parent rank already placed: ties stay in rank order */
  }
  return count;
}

static ncclResult_t shareId(struct ncclComm* parent, const int* members, int count, int color, uint32_t seq,
                            ncclUniqueId* id) {
  int leader = members[0];
  for (int i = 1; i < count; i++)
    if (members[i] < leader) leader = members[i];
  struct splitIdMsg msg;
  if (parent->rank == leader) {
    CHECK(chrBootstrapNewUniqueId(id)); /* never NCCL_COMM_ID's fixed address */
    memset(&msg, 0, sizeof(msg));
    msg.magic = SPLIT_ID_MAGIC;
    msg.seq = seq;
    msg.color = color;
    msg.nranks = count;
    msg.id = *id;
    for (int i = 0; i < count; i++) {
      if (members[i] == leader) continue;
      CHECK(chrBootstrapSend(parent->bootstrap, members[i], TAG_SPLIT_ID, &msg, sizeof(msg)));
    }
    return ncclSuccess;
  }
  CHECK(chrBootstrapRecv(parent->bootstrap, leader, TAG_SPLIT_ID, &msg, sizeof(msg)));
  if (msg.magic != SPLIT_ID_MAGIC || msg.seq != seq || msg.color != color || msg.nranks != count)
    return chrFail(ncclRemoteError,
                   "ncclCommSplit: parent rank %d sent a bad child id message (magic 0x%x, split #%u color %d nranks "
                   "%d; expected split #%u color %d nranks %d)",
                   leader, msg.magic, msg.seq, msg.color, msg.nranks, seq, color, count);
  *id = msg.id;
  return ncclSuccess;
}

ncclResult_t chrSplitExchange(struct ncclComm* parent, int color, int key, uint32_t seq, int* nranks, int* rank,
                              ncclUniqueId* id) {
  int n = parent->nRanks;
  *nranks = 0;
  *rank = -1;
  struct splitEntry* all = calloc((size_t)n, sizeof(*all));
  int* members = calloc((size_t)n, sizeof(*members));
  ncclResult_t res = ncclSuccess;
  if (all == NULL || members == NULL) {
    res = chrFail(ncclSystemError, "ncclCommSplit: out of memory for %d split entries", n);
    goto free_tables;
  }
  struct splitEntry* mine = &all[parent->rank];
  mine->magic = SPLIT_ENTRY_MAGIC;
  mine->seq = seq;
  mine->parentRank = parent->rank;
  mine->color = color;
  mine->key = key;
  CHECK_GOTO(chrBootstrapAllGather(parent->bootstrap, all, sizeof(*all)), res, free_tables);
  CHECK_GOTO(checkEntries(all, n, seq), res, free_tables);
  if (color == NCCL_SPLIT_NOCOLOR) goto free_tables; /* took part in the exchange; no child */

  int count = orderMembers(all, n, color, members);
  int myPos = -1;
  for (int i = 0; i < count; i++)
    if (members[i] == parent->rank) myPos = i;
  if (myPos < 0) {
    res = chrFail(ncclInternalError, "ncclCommSplit: rank %d is missing from its own color %d", parent->rank, color);
    goto free_tables;
  }
  CHECK_GOTO(shareId(parent, members, count, color, seq, id), res, free_tables);
  *nranks = count;
  *rank = myPos;
  INFO(NCCL_INIT, "comm %p rank %d split #%u: color %d key %d -> rank %d of %d", (void*)parent, parent->rank, seq,
       color, key, myPos, count);
free_tables:
  free(members);
  free(all);
  return res;
}
