/* ring.c: helpers shared by the ring algorithms (see ring.h). */
#include <string.h>
#include "comm/comm.h"
#include "exec/ring.h"

int chrRingRank(const struct ncclComm* comm, int pos) {
  int n = comm->nRanks;
  return comm->ringOrder[((pos % n) + n) % n];
}

int chrRingLinks(const struct chrCollTask* t, int channel, struct chrLinkUse* uses) {
  const struct chrChannel* ch = &t->comm->channels[channel];
  memset(uses, 0, 2 * sizeof(*uses));
  uses[CHR_RING_SEND].peer = ch->ringNext;
  uses[CHR_RING_SEND].isSend = 1;
  uses[CHR_RING_RECV].peer = ch->ringPrev;
  uses[CHR_RING_RECV].isSend = 0;
  return 2;
}

void chrChannelRange(size_t total, int nChannels, int channel, size_t* start, size_t* count) {
  size_t per = DIVUP(total, (size_t)nChannels);
  size_t s = per * (size_t)channel;
  if (s > total) s = total;
  size_t e = s + per;
  if (e > total) e = total;
  *start = s;
  *count = e - s;
}

void chrStepInit(struct chrStep* st, int recv, int send) {
  memset(st, 0, sizeof(*st));
  if (recv) { st->nRecv = 1; st->recv[0] = CHR_RING_RECV; }
  if (send) { st->nSend = 1; st->send[0] = CHR_RING_SEND; }
}
