/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_segment.h: the shared-memory page of one copy-engine mailbox (a pair of ranks and a class,
 * device/copy_engine/ce_sends.cu), mapped and registered with CUDA once per process whatever ranks use it.
 * Both ends create or open it by name (an all-zero page is a fresh mailbox), and the second end to
 * map it removes the name, so nothing is left in /dev/shm once both have it.
 */
#ifndef CHORUS_DEVICE_CE_SEGMENT_H_
#define CHORUS_DEVICE_CE_SEGMENT_H_

#include <stdint.h>
#include "hostdev/ce_mailbox.h"
#include "nccl.h"

#define CHR_CE_SEGMENT_BYTES 4096

struct chrCeSegment {
  struct chrCeMailbox box;
  uint32_t bell;   /* the sender's agent sleeps on it (a futex both processes map) */
  uint32_t ends;   /* ends that have mapped the segment: the second removes its name */
};

struct chrCeMap {
  struct chrCeMap* next;
  char name[96];
  struct chrCeSegment* seg;
  char* dev;          /* its device address (registered, portable) */
  int refs;
};

/* Maps (or takes another reference to) the segment `name`; *out is NULL on failure. */
ncclResult_t chrCeMapSegment(const char* name, struct chrCeMap** out);

/* Drops a reference; the last unmaps it (and removes the name if the other end never mapped it). */
void chrCeUnmapSegment(struct chrCeMap* m);

#endif /* CHORUS_DEVICE_CE_SEGMENT_H_ */
