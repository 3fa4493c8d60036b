/* SPDX-License-Identifier: BSD-3-Clause */
/* links.c: see links.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "transport/connect.h"
#include "exec/links.h"

struct chrLink* chrLinkFind(struct ncclComm* comm, int channel, const struct chrWorkLink* use) {
  if (use->peer < 0 || use->peer >= comm->nRanks) return NULL;
  if (use->p2p) {
    if (use->conn >= CHR_P2P_CONNS) return NULL;
    return use->isSend ? comm->p2pSend[use->conn][use->peer] : comm->p2pRecv[use->conn][use->peer];
  }
  if (channel < 0 || channel >= CHR_MAX_CHANNELS) return NULL;
  struct chrChannel* ch = &comm->channels[channel];
  if (use->isSend && use->peer == ch->ringNext) return ch->ringSend;
  if (!use->isSend && use->peer == ch->ringPrev) return ch->ringRecv;
  return NULL;
}

/* What one comm needs connected for a list of tasks. */
struct commNeeds {
  struct ncclComm* comm;
  int ringChannels;     /* ring links on channels [0, ringChannels) */
  uint8_t* p2pSend;     /* CHR_P2P_CONNS x nRanks flags */
  uint8_t* p2pRecv;
  ncclResult_t res;
  char error[1024];
  pthread_t thread;
};

static ncclResult_t collectNeeds(struct chrCollTask* list, struct commNeeds* need) {
  struct ncclComm* comm = need->comm;
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm) continue;
    for (int c = 0; c < t->nChannels; c++) {
      const struct chrWork* w = &t->works[c];
      for (int i = 0; i < w->nLinks; i++) {
        const struct chrWorkLink* use = &w->links[i];
        if (use->p2p) {
          size_t idx = (size_t)use->conn * (size_t)comm->nRanks + (size_t)use->peer;
          if (chrLinkFind(comm, c, use) == NULL) (use->isSend ? need->p2pSend : need->p2pRecv)[idx] = 1;
          continue;
        }
        const struct chrChannel* ch = &comm->channels[c];
        int ring = use->isSend ? use->peer == ch->ringNext : use->peer == ch->ringPrev;
        if (!ring)
          return chrFail(ncclInternalError, "pattern %d needs a %s link %s rank %d on channel %d that is not a ring link",
                         (int)w->pattern, use->isSend ? "send" : "recv", use->isSend ? "to" : "from", use->peer, c);
        if (chrLinkFind(comm, c, use) == NULL && c + 1 > need->ringChannels) need->ringChannels = c + 1;
      }
    }
  }
  return ncclSuccess;
}

/* Point-to-point links connect in rounds: in round r this rank connects its send link to rank+r
 * and its receive link from rank-r. The peer rank+r is in the same round receiving from us, so every
 * pairwise exchange has both ends present and no cycle of waits can form. A rank skips a round only
 * when it needs neither link, and then (for matched calls) neither peer needs it either.
 *
 * Links to peers on this host (shm) go round by round. Net links go after them, the rounds of a
 * batch of NCCL_CONNECT_ROUND_MAX_PEERS (128) all at once (chrNetConnectLinks): a first all-to-all on
 * 1,024 ranks takes 8 connect calls instead of 1,023 one after another, and no more than a batch of
 * plugin connections is being set up at a time. Both ends of a pair are in the same round, so in the
 * same batch, at both ends. */
static ncclResult_t connectP2pNet(struct ncclComm* comm, int k, const uint8_t* wantS, const uint8_t* wantR, int first,
                                  int last, struct chrLinkEnd* ends, struct chrLink** links) {
  const int n = comm->nRanks;
  int m = 0;
  for (int r = first; r < last; r++) {
    const int sendPeer = (comm->rank + r) % n, recvPeer = (comm->rank - r + n) % n;
    const struct chrTransportOps* ops = NULL;
    if (wantS[sendPeer] && comm->p2pSend[k][sendPeer] == NULL) {
      CHECK(chrTransportPick(&comm->transport, sendPeer, &ops));
      if (ops == &chrNetTransportOps) ends[m++] = (struct chrLinkEnd){.peer = sendPeer, .isSend = 1};
    }
    if (wantR[recvPeer] && comm->p2pRecv[k][recvPeer] == NULL) {
      CHECK(chrTransportPick(&comm->transport, recvPeer, &ops));
      if (ops == &chrNetTransportOps) ends[m++] = (struct chrLinkEnd){.peer = recvPeer, .isSend = 0};
    }
  }
  if (m == 0) return ncclSuccess;
  CHECK(chrNetConnectLinks(&comm->transport, CHR_P2P_CHANNEL + k, ends, m, chrTransportStepSize(1), links));
  for (int i = 0; i < m; i++) {
    if (ends[i].isSend) comm->p2pSend[k][ends[i].peer] = links[i];
    else comm->p2pRecv[k][ends[i].peer] = links[i];
  }
  INFO(NCCL_INIT | NCCL_NET, "comm %p rank %d: %d point-to-point links of index %d (rounds %d..%d) via net", (void*)comm,
       comm->rank, m, k, first, last - 1);
  return ncclSuccess;
}

static ncclResult_t connectP2p(struct commNeeds* need) {
  struct ncclComm* comm = need->comm;
  int n = comm->nRanks;
  const int rounds = (int)chrParamInt(CHR_P_CONNECT_ROUND_MAX_PEERS);
  struct chrLinkEnd* ends = NULL;
  struct chrLink** links = NULL;
  ncclResult_t res = ncclSuccess;
  for (int k = 0; k < CHR_P2P_CONNS && res == ncclSuccess; k++) {
    const uint8_t* wantS = need->p2pSend + (size_t)k * (size_t)n;
    const uint8_t* wantR = need->p2pRecv + (size_t)k * (size_t)n;
    int anyNet = 0;
    for (int r = 0; r < n && res == ncclSuccess; r++) { /* shm, round by round */
      int sendPeer = (comm->rank + r) % n;
      int recvPeer = (comm->rank - r + n) % n;
      int wantSend = wantS[sendPeer] && comm->p2pSend[k][sendPeer] == NULL;
      int wantRecv = wantR[recvPeer] && comm->p2pRecv[k][recvPeer] == NULL;
      const struct chrTransportOps* ops = NULL;
      if (wantSend && (res = chrTransportPick(&comm->transport, sendPeer, &ops)) == ncclSuccess && ops == &chrNetTransportOps)
        wantSend = 0, anyNet = 1;
      if (res == ncclSuccess && wantRecv && (res = chrTransportPick(&comm->transport, recvPeer, &ops)) == ncclSuccess &&
          ops == &chrNetTransportOps)
        wantRecv = 0, anyNet = 1;
      if (res != ncclSuccess || (!wantSend && !wantRecv)) continue;
      res = chrTransportConnectPeers(&comm->transport, CHR_P2P_CHANNEL + k, wantSend ? sendPeer : -1,
                                     wantRecv ? recvPeer : -1, chrTransportStepSize(1),
                                     wantSend ? &comm->p2pSend[k][sendPeer] : NULL,
                                     wantRecv ? &comm->p2pRecv[k][recvPeer] : NULL);
    }
    if (res != ncclSuccess || !anyNet) continue;
    const int batch = n < rounds ? n : rounds;
    if (ends == NULL) {
      ends = malloc(sizeof(*ends) * 2 * (size_t)batch);
      links = malloc(sizeof(*links) * 2 * (size_t)batch);
      if (ends == NULL || links == NULL) res = chrFail(ncclSystemError, "out of memory connecting point-to-point links");
    }
    for (int first = 0; first < n && res == ncclSuccess; first += batch)
      res = connectP2pNet(comm, k, wantS, wantR, first, n - first > batch ? first + batch : n, ends, links);
  }
  free(ends);
  free(links);
  return res;
}

static ncclResult_t connectChannel(struct ncclComm* comm, struct chrChannel* ch) {
  return chrTransportConnectPeers(&comm->transport, ch->id, ch->ringNext, ch->ringPrev, chrTransportStepSize(0),
                                  &ch->ringSend, &ch->ringRecv);
}

/* The ring links (send to next, recv from prev) of channels [0, nChannels) that are not connected
 * yet. Collective: every rank of the comm calls it with the same nChannels. */
static ncclResult_t connectRing(struct ncclComm* comm, int nChannels) {
  if (comm->nRanks == 1) return ncclSuccess;
  for (int c = 0; c < nChannels; c++) {
    struct chrChannel* ch = &comm->channels[c];
    if (ch->ringSend && ch->ringRecv) continue;
    CHECK(connectChannel(comm, ch));
  }
  return ncclSuccess;
}

static ncclResult_t connectComm(struct commNeeds* need) {
  if (need->ringChannels > 0) CHECK(connectRing(need->comm, need->ringChannels));
  return connectP2p(need);
}

static void* connectThread(void* arg) {
  struct commNeeds* need = arg;
  need->res = connectComm(need);
  snprintf(need->error, sizeof(need->error), "%s", chrThreadLastError());
  return NULL;
}

static int hasWork(const struct commNeeds* need) {
  if (need->ringChannels > 0) return 1;
  for (int r = 0; r < CHR_P2P_CONNS * need->comm->nRanks; r++)
    if (need->p2pSend[r] || need->p2pRecv[r]) return 1;
  return 0;
}

/* The common case, every link already there, decided without allocating. */
static int allConnected(struct chrCollTask* list) {
  for (struct chrCollTask* t = list; t; t = t->next)
    for (int c = 0; c < t->nChannels; c++)
      for (int i = 0; i < t->works[c].nLinks; i++)
        if (chrLinkFind(t->comm, c, &t->works[c].links[i]) == NULL) return 0;
  return 1;
}

ncclResult_t chrLinksConnectForTasks(struct chrCollTask* list) {
  if (allConnected(list)) return ncclSuccess;
  int nTasks = 0;
  for (struct chrCollTask* t = list; t; t = t->next) nTasks++;
  struct commNeeds* needs = calloc((size_t)(nTasks ? nTasks : 1), sizeof(*needs));
  if (needs == NULL) return chrFail(ncclSystemError, "out of memory connecting communicators");
  int nComms = 0, nJobs = 0;
  ncclResult_t first = ncclSuccess;
  for (struct chrCollTask* t = list; t && first == ncclSuccess; t = t->next) {
    int seen = 0;
    for (int j = 0; j < nComms; j++) seen |= needs[j].comm == t->comm;
    if (seen) continue;
    struct commNeeds* need = &needs[nComms++];
    need->comm = t->comm;
    need->p2pSend = calloc((size_t)CHR_P2P_CONNS * (size_t)t->comm->nRanks, 1);
    need->p2pRecv = calloc((size_t)CHR_P2P_CONNS * (size_t)t->comm->nRanks, 1);
    if (!need->p2pSend || !need->p2pRecv) first = chrFail(ncclSystemError, "out of memory connecting communicators");
    else first = collectNeeds(list, need);
  }
  /* Move the comms that need connecting to the front. */
  for (int i = 0; i < nComms && first == ncclSuccess; i++)
    if (hasWork(&needs[i])) {
      struct commNeeds tmp = needs[nJobs];
      needs[nJobs++] = needs[i];
      needs[i] = tmp;
    }
  if (first == ncclSuccess && nJobs == 1) {
    first = connectComm(&needs[0]);
    if (first != ncclSuccess) chrCommSetAsyncError(needs[0].comm, first);
  } else if (first == ncclSuccess && nJobs > 1) {
    /* Connecting blocks on peers; one thread per comm, so a thread driving several comms of the same
     * job (ncclCommInitAll, nccl-tests -g) does not wait on itself. */
    int started = 0;
    for (; started < nJobs; started++)
      if (pthread_create(&needs[started].thread, NULL, connectThread, &needs[started]) != 0) break;
    if (started < nJobs) first = chrFail(ncclSystemError, "cannot start a thread to connect communicator %d", started);
    for (int j = 0; j < started; j++) {
      pthread_join(needs[j].thread, NULL);
      if (needs[j].res == ncclSuccess) continue;
      chrSetLastError("%s", needs[j].error);
      chrCommSetAsyncError(needs[j].comm, needs[j].res);
      if (first == ncclSuccess) first = needs[j].res;
    }
  }
  for (int i = 0; i < nComms; i++) {
    free(needs[i].p2pSend);
    free(needs[i].p2pRecv);
  }
  free(needs);
  return first;
}

void chrLinksRetire(struct ncclComm* comm, struct chrLink* link) {
  struct chrLink** slot = NULL;
  for (int k = 0; k < CHR_P2P_CONNS && slot == NULL; k++)
    for (int r = 0; r < comm->nRanks && slot == NULL; r++) {
      if (comm->p2pSend[k] && comm->p2pSend[k][r] == link) slot = &comm->p2pSend[k][r];
      if (comm->p2pRecv[k] && comm->p2pRecv[k][r] == link) slot = &comm->p2pRecv[k][r];
    }
  for (int c = 0; c < CHR_MAX_CHANNELS && slot == NULL; c++) {
    if (comm->channels[c].ringSend == link) slot = &comm->channels[c].ringSend;
    if (comm->channels[c].ringRecv == link) slot = &comm->channels[c].ringRecv;
  }
  if (slot == NULL) return; /* not the comm's (already retired) */
  *slot = NULL;
  link->ops->close(link);
}

void chrLinksCloseAll(struct ncclComm* comm) {
  for (int k = 0; k < CHR_P2P_CONNS; k++) {
    for (int r = 0; comm->p2pSend[k] && r < comm->nRanks; r++) {
      if (comm->p2pSend[k][r]) comm->p2pSend[k][r]->ops->close(comm->p2pSend[k][r]);
      comm->p2pSend[k][r] = NULL;
    }
    for (int r = 0; comm->p2pRecv[k] && r < comm->nRanks; r++) {
      if (comm->p2pRecv[k][r]) comm->p2pRecv[k][r]->ops->close(comm->p2pRecv[k][r]);
      comm->p2pRecv[k][r] = NULL;
    }
  }
  for (int c = 0; c < CHR_MAX_CHANNELS; c++) {
    struct chrChannel* ch = &comm->channels[c];
    if (ch->ringSend) ch->ringSend->ops->close(ch->ringSend);
    if (ch->ringRecv) ch->ringRecv->ops->close(ch->ringRecv);
    ch->ringSend = ch->ringRecv = NULL;
  }
}
