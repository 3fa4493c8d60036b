/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * transport.h: a link is one direction of one connection to one peer on one channel.
 *
 * The executor sees every transport the same way: a ring of CHR_STEPS staging slots of stepSize
 * bytes. On the send side the executor writes a slot and posts it; on the receive side it posts a
 * slot, waits until the transport has filled it, and consumes it. Steps are numbered per link and
 * both ends walk the same sequence, so step k of a send link matches step k of the peer's recv link.
 * Links are created lazily, the first time a plan needs them (exec/links.c keeps the comm's links).
 *
 * A transport may move slots[i] to another buffer inside post() (send side) and inside a test()
 * that reports done (recv side): shm double-buffers each slot so that a sender is never blocked on
 * a receiver that has finished its task. So the executor reads slots[i] right before filling a send
 * slot and right after a receive completed, never earlier.
 */
#ifndef CHORUS_TRANSPORT_H_
#define CHORUS_TRANSPORT_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/dev_consts.h" /* CHR_STEPS */
#include "nccl.h"

struct chrLink;
struct chrFutexWord; /* util/futex.h */

struct chrTransportOps {
  const char* name;
  /* Send side: slot `slot` holds `bytes` bytes: start sending them.
   * Recv side: start receiving into slot `slot` (up to link->stepSize bytes). */
  ncclResult_t (*post)(struct chrLink* link, int slot, size_t bytes);
  /* Send side, may be NULL: the executor is about to write `bytes` bytes into slots[slot]; the
   * transport makes sure memory backs them, or fails naming why. */
  ncclResult_t (*prepare)(struct chrLink* link, int slot, size_t bytes);
  /* Non-blocking. Recv side: *done = 1 once the slot holds the peer's data; *bytes = bytes received.
   * Send side: *done = 1 once the slot may be written again (its data is on its way and the buffer it
   * goes to next is free), which must not wait for the receiver to post while the connection's
   * buffer has room: that is what lets small sends complete before the matching receive. */
  ncclResult_t (*test)(struct chrLink* link, int slot, int* done, size_t* bytes);
  /* Recv side, may be NULL: the executor has consumed the slot's data (the transport may hand the
   * buffer back to the sender). */
  ncclResult_t (*release)(struct chrLink* link, int slot);
  /* Release everything the link holds. Must work on a half-connected link and after an error. */
  void (*close)(struct chrLink* link);
  /* Optional, all three or none (NULL: the link moves its slots only). Direct steps: user memory
   * registered with the link (regUser; deregUser releases it) is sent from, or received into, in
   * place of a slot's buffer (postUser: a receive takes exactly `bytes`). The step keeps its slot
   * number, for test() and the credit count, but not its buffer. regUser may decline: ncclSuccess
   * with *handle NULL (this link cannot, nothing to report). */
  ncclResult_t (*regUser)(struct chrLink* link, void* data, size_t bytes, void** handle);
  void (*deregUser)(struct chrLink* link, void* handle);
  ncclResult_t (*postUser)(struct chrLink* link, int slot, void* data, size_t bytes, void* handle);
  /* Optional, both or none (NULL: the link can only be polled). The executor, idle, waits on slot
   * (recv: for its data; send: for its buffer to be free again): sleepArm tells the peer a sleeper
   * is there (its next write of that slot then wakes it) and gives the word that write changes;
   * 0 when the slot moved meanwhile (nothing to sleep for), 1 when *word is set, -1 when this link
   * cannot sleep now (the caller polls). sleepDisarm ends it. */
  int (*sleepArm)(struct chrLink* link, int slot, struct chrFutexWord* word);
  void (*sleepDisarm)(struct chrLink* link);
  /* Direct steps: the parameter (config/param.h) giving the smallest operation that uses them, and
   * whether a direct send is done only once the receiver has the data (then a lone send could not
   * complete before its receive: only collectives, where every rank is in the call, use them). */
  int directMinParam;
  int directSendWaits;
};

struct chrLink {
  const struct chrTransportOps* ops;
  int peer;      /* rank of the other end */
  int channel;
  int isSend;
  size_t stepSize;
  uint64_t seq;  /* steps this link has walked so far, on both ends the same (the executor keeps it) */
  char* slots[CHR_STEPS];
  void* phandle[CHR_STEPS]; /* per slot: the profiler's ProxyStep for a net plugin's events, or NULL */
  void* priv;    /* transport state */
  char via[48];  /* how it travels, for messages: "shm", "net device 1 (eth1)" */
};

/* The net transport (through the net plugin). */
extern const struct chrTransportOps chrNetTransportOps;

#endif /* CHORUS_TRANSPORT_H_ */
