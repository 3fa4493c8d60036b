/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bootstrap.h: how the ranks of a communicator find each other, over TCP.
 *
 * 1. chrBootstrapGetUniqueId: the id holds the root's address and a secret. Without NCCL_COMM_ID a
 *    root starts now, in a detached thread of this process, with a random secret; with
 *    NCCL_COMM_ID=host:port every process computes the same id and rank 0 starts the root inside
 *    chrBootstrapInit (the secret is then only an integrity check). Each id has a root of its own.
 * 2. chrBootstrapInit: each rank sends the root a hello (rank, nranks, its listen address, an info
 *    blob); once all are in and checked, the root sends everyone every address and blob. Slow ranks
 *    are waited for as NCCL does (CHORUS_BOOTSTRAP_TIMEOUT bounds it); a refused connection to an
 *    id's own root, or a rank that closes during init, fails at once.
 * 3. Point-to-point messages (chrBootstrapSend/Recv) and AllGather/Barrier on them: they wait as long
 *    as a live peer takes (CHORUS_TIMEOUT bounds it), end on the abort flag, and fail at once with
 *    ncclRemoteError when the peer's process is gone.
 *
 * Results: ncclInvalidArgument (bad arguments or a malformed unique id), ncclInvalidUsage (the root
 * rejected this rank: wrong secret, rank taken or out of range, inconsistent nranks/infoSize),
 * ncclTimeout (a deadline passed), ncclRemoteError (a peer closed/reset its connection or sent a bad
 * message), ncclSystemError (an OS call failed), ncclInternalError (*abortFlag was set); the first
 * code to see an error logs it and sets the thread's last-error text. All ranks must have the same
 * byte order, as with NCCL. docs/design.md, "Communicator init and bootstrap", has the rest.
 */
#ifndef CHORUS_BOOTSTRAP_H_
#define CHORUS_BOOTSTRAP_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

struct chrBootstrap;

/* Largest info blob one rank may contribute at init. */
#define CHR_BOOTSTRAP_MAX_INFO (64 * 1024)
/* Largest nranks a root accepts. */
#define CHR_BOOTSTRAP_MAX_RANKS (1 << 20)
/* Largest single p2p message (a bigger header is treated as corrupt). */
#define CHR_BOOTSTRAP_MAX_MSG ((uint64_t)1 << 32)
/* Tags < 0 are reserved for the bootstrap's own collectives; callers use tags >= 0. */

/* Make a unique id (see 1. above). Thread-safe. A root started here waits for its first rank for as
 * long as it takes (ids may travel slowly, e.g. through a job launcher); from the first hello on it
 * waits for the rest as long as CHORUS_BOOTSTRAP_TIMEOUT says (read when the id is made; 0: without
 * limit), then its thread ends. An id that is never used keeps its root thread and listening socket until the process ends. */
ncclResult_t chrBootstrapGetUniqueId(ncclUniqueId* id);

/* The same, but always a fresh root in this process with a random secret, whatever NCCL_COMM_ID says:
 * for communicators made from another one (split, ncclCommInitAll), whose members learn the id from
 * their parent or their process. A fixed address would make every such child race for one root. */
ncclResult_t chrBootstrapNewUniqueId(ncclUniqueId* id);

/* This process's rank `rank` of the id's communicator will not join after all (its init failed or
 * was aborted). When the id's root runs in this process and is still gathering ranks, it tells every
 * rank that is in why (within a second) and ends, so later ones are refused, which for an id from
 * ncclGetUniqueId is an error at once: nobody waits for a rank that will never come. */
void chrBootstrapAbandon(const ncclUniqueId* id, int rank, const char* why);

/* Rendezvous (see 2. above). myInfo: infoSize bytes (infoSize <= CHR_BOOTSTRAP_MAX_INFO, may be 0);
 * allInfo: room for nranks * infoSize bytes, filled with rank r's blob at r * infoSize (this rank's
 * own included). abortFlag (may be NULL): when it becomes nonzero, every wait of this bootstrap,
 * now and later, returns ncclInternalError within ~100 ms. It must stay valid until Close.
 * On success *out is the handle; on failure *out is NULL and everything is freed. */
ncclResult_t chrBootstrapInit(const ncclUniqueId* id, int rank, int nranks, const void* myInfo,
                              size_t infoSize, void* allInfo, volatile uint32_t* abortFlag,
                              struct chrBootstrap** out);

/* Point to point. A message is matched by (peer, tag); messages from one peer with one tag arrive in
 * the order they were sent; messages for another (peer, tag) are queued until asked for. The size
 * given to Recv must equal the size sent (otherwise ncclInvalidUsage). size 0 is allowed (data may
 * be NULL). peer == own rank is allowed (the message is queued locally).
 * Send returns once the data is handed to the kernel (or queued locally); it does not wait for Recv,
 * and while it waits for buffer space it keeps draining incoming messages, so two ranks sending big
 * messages to each other before receiving do not deadlock.
 * Threads: any threads may call these; sends are serialized with each other and receives with each
 * other, but a send and a receive can run at the same time (one thread sending, another receiving).
 * AllGather/Barrier use Send and Recv, so they must not run concurrently with other Recv calls
 * on the same peers with reserved tags (they only use tags < 0, never user tags). */
ncclResult_t chrBootstrapSend(struct chrBootstrap* bs, int peer, int tag, const void* data, size_t size);
ncclResult_t chrBootstrapRecv(struct chrBootstrap* bs, int peer, int tag, void* data, size_t size);

/* ncclRemoteError (with a message) when `peer`'s process is known to be gone: its connection closed, or
 * nobody listens on its address any more. Cheap (one poll, or one connect the first time); for wait
 * loops that do not go through Recv (connecting links through a plugin). Never blocks on other threads. */
ncclResult_t chrBootstrapCheckPeer(struct chrBootstrap* bs, int peer);

/* Ring allgather: allData holds nranks * size bytes; this rank's slice (at rank * size) is sent, the
 * others are filled. Every rank must call it with the same size. */
ncclResult_t chrBootstrapAllGather(struct chrBootstrap* bs, void* allData, size_t size);

/* Returns once every rank has entered the barrier. */
ncclResult_t chrBootstrapBarrier(struct chrBootstrap* bs);

/* This rank, the number of ranks. */
int chrBootstrapRank(const struct chrBootstrap* bs);
int chrBootstrapNranks(const struct chrBootstrap* bs);

/* Close every socket and free everything. NULL is a no-op. Peers blocked in a Recv from this rank see
 * the connection close and fail promptly with ncclRemoteError. */
ncclResult_t chrBootstrapClose(struct chrBootstrap* bs);

#endif /* CHORUS_BOOTSTRAP_H_ */
