/*
 * ce_sends.h: copy-engine sends between ranks (point-to-point works flagged CHR_WORK_ENGINE, which the
 * planner makes of large sends and receives outside graph capture; core/exec/dev_exec.c). Internal to
 * the device library; launch.cu calls it around a launch's kernels.
 *
 * Each send runs as one cudaMemcpyAsync on the SENDER's GPU, straight into the receiver's buffer,
 * beside the kernels. Between processes a GPU that drives both directions at once moves about half the
 * link each way (docs/perf/gpu-2gpu.md, fourth session), so the sender always issues. The two ends
 * meet in a mailbox (core/cuda/ce_mailbox.h, sender-issued mode) per ordered pair of ranks, in a POSIX
 * shared-memory segment both map and register with their GPU; transfer k of a pair is the k-th engine
 * send from A to B and the k-th engine receive at B from A (both ends decide from the size alone).
 *
 *   before the kernels  each end's stream writes its ready word = k (its data, or its buffer, may now
 *                       be read or overwritten), for every engine work of the launch, before any wait;
 *   after the kernels   each end posts (the receiver: its buffer, as a pointer in one process or a CUDA
 *                       IPC handle and offset) and its stream waits until its done word reaches k (a
 *                       one-thread kernel that polls it, not a stream memory wait: ce_sends.cu). The
 *                       sender issues the copy, in transfer order per pair, from its own call when the
 *                       receiver has posted, else from the pair's agent thread, which the receiver's
 *                       post (coming second) wakes through a futex in the segment. The copy stream
 *                       waits for both ready words, copies, and writes both done words.
 * No host waits for the peer, but for a free mailbox slot when one end is CHR_CE_SLOTS transfers ahead.
 * A copy that cannot run (a receive buffer CUDA IPC cannot share, sizes that differ, a failed CUDA
 * call) still writes both done words, so no stream waits forever, and raises the rank's error word
 * (CHR_DEV_ERR_ENGINE), which the core reports as the comm's asynchronous error.
 */
#ifndef CHORUS_DEVICE_CE_SENDS_H_
#define CHORUS_DEVICE_CE_SENDS_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "nccl.h"
#include "plan/work.h"

struct chrDevRank;

/* 1 for a send or receive to another rank that the copy engine runs. */
static inline int chrCeIsEngineP2p(const struct chrWork* w) {
  return (w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV) && (w->flags & CHR_WORK_ENGINE);
}

/* Before the launch's kernels: numbers the n engine works (in order) and queues their ready words on
 * `stream`. The rank's device is current. */
ncclResult_t chrCeSignal(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream);

/* After the kernels: posts the same n works, queues the waits for their done words, issues the sends
 * whose receivers have posted. */
ncclResult_t chrCePost(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream);

/* The rank aborts: every wait of its streams and copy streams is released (no copy is issued any more). */
void chrCeAbort(struct chrDevRank* rk);

/* Loads the wait kernel on the current device (with the others, before any kernel of a rank runs:
 * a lazy load waits for the kernels already running). */
ncclResult_t chrCeLoadKernel(void);

/* Stops the agents, closes what was opened, unmaps the mailboxes. */
void chrCeDestroy(struct chrDevRank* rk);

#endif /* CHORUS_DEVICE_CE_SENDS_H_ */
