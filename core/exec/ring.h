/*
 * ring.h: what the ring algorithms share. Every ring algorithm uses two links per channel: index
 * CHR_RING_SEND (to the next rank in the ring) and CHR_RING_RECV (from the previous one).
 */
#ifndef CHORUS_RING_H_
#define CHORUS_RING_H_

#include "exec/task.h"

#define DIVUP(a, b) (((a) + (b) - 1) / (b))
#define CHR_RING_SEND 0
#define CHR_RING_RECV 1

int chrRingLinks(const struct chrCollTask* task, int channel, struct chrLinkUse* uses);
/* Channel c's share [*start, *start + *count) of `total` elements split over nChannels. */
void chrChannelRange(size_t total, int nChannels, int channel, size_t* start, size_t* count);
/* A step that receives from the ring (recv != 0) and/or sends to it (send != 0), nothing else yet. */
void chrStepInit(struct chrStep* st, int recv, int send);

#endif
