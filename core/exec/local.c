/*
 * local.c: every collective on a one-rank communicator: out = post(pre(in)) (a copy for the
 * functions that do not reduce), one step on channel 0, no links.
 */
#include "comm/comm.h"
#include "exec/ring.h"

static int noLinks(const struct chrCollTask* t, int channel, struct chrLinkUse* uses) { return 0; }

static void counts(const struct chrCollTask* t, int channel, uint64_t* nSteps, uint64_t* nRecvs) {
  *nSteps = (channel == 0 && t->count > 0) ? 1 : 0;
}

static void step(const struct chrCollTask* t, int channel, uint64_t index, struct chrStep* st) {
  chrStepInit(st, 0, 0);
  st->count = t->count;
  st->local = t->sendbuff;
  st->out = t->recvbuff;
  st->final = 1;
}

const struct chrAlgo chrLocalAlgo = {"LOCAL", noLinks, counts, step};
