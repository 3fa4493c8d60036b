/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * direct.h: direct steps of the host executor. Over a link that can move user memory (the net
 * transport, and shm where the receiver may read the sender's memory: transport.h regUser/postUser),
 * a step that only moves bytes skips its staging slot: a send goes straight from the user's buffer,
 * a receive lands straight in the output. On loopback, where TCP itself is two CPU copies, the
 * slots' two extra copies (into the send slot, out of the receive slot) cost as much again
 * (docs/perf/net.md); over shm the one copy left is the receiver's, so it needs no sender running.
 *
 * Which steps. A task qualifies when it moves at least the link's threshold (CHORUS_NET_DIRECT_MIN_BYTES,
 * CHORUS_SHM_DIRECT_MIN_BYTES) and its pattern writes each output element once and never reads it
 * afterwards: send/recv, broadcast, all-gather and the ring all-reduce (whose all-gather half
 * forwards final blocks; hostdev/work.h); over shm only broadcast and all-gather (direct.c). Then:
 *   - a receive whose step only receives into the output (one receive, no local term, an output,
 *     no post step) is posted straight into that output, before the step runs (receives are posted
 *     up to CHR_STEPS ahead, so the step is found by walking the link's steps in order);
 *   - a send whose step's value is its local input unchanged (no receive, no pre or post step)
 *     sends that input, posted before the step copies it to the output, so the peer reads while
 *     this rank copies; any other send whose step writes an output sends that output once the step
 *     has written it (it is what the slot would hold).
 * In place is safe for the same reason the patterns are: an output block is written once, after
 * every read of the input block it replaces (a receive cannot land before the peer had this rank's
 * contribution to that block).
 *
 * Registrations. The task's send and receive buffers are registered with each qualifying link at
 * the task's start and released at its end. A registration that fails only turns the link's direct
 * steps off. A task that fails with direct requests outstanding must retire their links (the
 * plugin could still write into user memory after the call returned): exec.c does.
 */
#ifndef CHORUS_EXEC_DIRECT_H_
#define CHORUS_EXEC_DIRECT_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/task.h"
#include "transport/transport.h"

struct chrDirectLink {
  int on;                /* this task's steps on the link may move user memory */
  void* mh[2];           /* registrations of the send buffer [0] and the receive buffer [1] */
  const char* base[2];
  size_t len[2];
  uint64_t scan;         /* receive link: the channel step after the one the last receive was posted for */
  char* into[CHR_STEPS]; /* receive link, per slot: the user memory its receive went into (NULL: the slot) */
};

/* At the task's start (d zeroed): turns direct steps on when the task and the link allow them. */
void chrDirectStart(struct chrDirectLink* d, struct chrLink* link, const struct chrCollTask* t);

/* Releases the registrations (idempotent). */
void chrDirectStop(struct chrDirectLink* d, struct chrLink* link);

/* Receive link `linkIndex` of channel c, about to post its next receive: the output it should land
 * in (exactly *bytes, registered as *mh) when its step is direct, else NULL (the slot). */
char* chrDirectRecvInto(struct chrDirectLink* d, const struct chrCollTask* t, int c, int linkIndex, uint64_t nSteps,
                        size_t* bytes, void** mh);

/* Whether step st's value is its local input unchanged (no receive, no pre or post operation): the
 * step is a copy (exec.c), and its direct sends may go from the input itself, before it runs. */
int chrStepCopiesInput(const struct chrCollTask* t, const struct chrStep* st);

/* The user memory step st's send can go from (registered as *mh), or NULL (its slot). */
const char* chrDirectSendFrom(const struct chrDirectLink* d, const struct chrCollTask* t, const struct chrStep* st,
                              void** mh);

#endif /* CHORUS_EXEC_DIRECT_H_ */
