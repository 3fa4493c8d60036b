/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_ipc.h: the IPC mode of a rank's device state (dev_state.h), for ranks in several processes (or
 * on several GPUs) of one host. Internal to core/cuda.
 *
 * Attach: the rank makes its chrDevRank (its arena, hostdev/dev_api.h), connects itself (point-to-point
 * works to itself), and sends its blob to every other rank of its host (bootstrap tag CHR_DEV_TAG_BLOB; a send
 * never waits for the receiver). Connect: the first time a plan names a peer, its blob is received
 * (waiting for the peer's attach, as a collective waits for its peers) and handed to the library,
 * which checks every byte and opens the peer's memory (CUDA IPC for another process, the address
 * itself within this one). Ranks on other hosts connect through the net proxy instead (dev_net.h).
 *
 * Liveness: a process-wide watchdog thread (running while any IPC-mode comm is attached) looks every
 * 100 ms at each comm whose latest launch has not finished and probes its peers in other processes
 * (chrBootstrapCheckPeer: a closed connection or a listening socket that is gone). A peer seen gone
 * while the work is still running 1 s later aborts the rank's kernels (its host-mapped abort word)
 * and fails the comm with ncclRemoteError, so the stream drains and the next call or
 * ncclCommGetAsyncError reports the error. A rank that calls ncclCommAbort (or is destroyed, or
 * exits) closes its bootstrap, which its peers' watchdogs see the same way; ranks of the same
 * process are aborted directly.
 */
#ifndef CHORUS_CUDA_DEV_IPC_H_
#define CHORUS_CUDA_DEV_IPC_H_

#include "cuda/dev_state.h"
#include "cuda/device_lib.h"

/* + the comm's devGeneration (low 16 bits): a blob a peer sent before a suspend and this rank never
 * received stays behind under its old tag, never mistaken for the new state's. */
#define CHR_DEV_TAG_BLOB 0x50000

struct ncclComm;

/* Makes st->rank and st->ipc (st->shape is set); sends the blob. Nothing is left on failure. */
ncclResult_t chrDevIpcAttach(struct ncclComm* comm, struct chrDevRankState* st, const struct chrDevLib* lib);

/* After comm->dev is set: the watchdog starts watching the comm. */
void chrDevIpcWatch(struct ncclComm* comm);

/* Connects the peers with need[peer] != 0 that are not connected yet. */
ncclResult_t chrDevIpcConnect(struct ncclComm* comm, const unsigned char* need);

/* 1 once another rank of this process aborted, or a peer died during this rank's GPU work. */
int chrDevIpcFailed(const struct chrDevIpc* ipc);

/* A launch was queued: the net proxy, if any, polls at once. */
void chrDevIpcKick(struct chrDevIpc* ipc);

/* Raises the abort word of every attached rank of this comm in this process (this rank included) and
 * marks them failed. */
void chrDevIpcAbort(struct ncclComm* comm, const struct chrDevLib* lib);

/* Waits until the net proxy, if any, has delivered every step the rank's kernels sent to other hosts
 * (chrDevNetDrain). */
ncclResult_t chrDevIpcDrain(struct ncclComm* comm, const char* func);

/* Stops watching the comm and frees st->ipc (not the library's rank). */
void chrDevIpcDetach(struct ncclComm* comm);

#endif /* CHORUS_CUDA_DEV_IPC_H_ */
