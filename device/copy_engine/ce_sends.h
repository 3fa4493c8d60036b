/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_sends.h: copy-engine sends between ranks (point-to-point works flagged CHR_WORK_ENGINE, which the
 * planner makes of large sends and receives outside graph capture; core/exec/dev_exec.c). Internal to
 * the device library; launch.cu calls it around a launch's kernels.
 *
 * Between processes a GPU that drives both directions at once moves about half the link each way
 * (docs/perf/gpu-2gpu.md), so each send runs on its SENDER's GPU, straight into the
 * receiver's buffer, beside the kernels. The two ends meet in a mailbox (hostdev/ce_mailbox.h,
 * sender-copies mode) per ordered pair of ranks and class, in a POSIX shared-memory segment both map
 * and register with their GPU; transfer k of a pair is the k-th engine send from A to B and the k-th
 * engine receive at B from A (both ends decide from the size alone).
 *
 *   before the kernels  each end's stream writes its ready word = k (its data, or its buffer, may now
 *                       be read or overwritten), for every engine work of the launch, before any wait;
 *   after the kernels   each end posts (the receiver: its buffer, as a pointer in one process or a CUDA
 *                       IPC handle and offset). The launch's kernel (ce_kernels.h), on the user's stream,
 *                       copies every send with the SMs once the sender's agent thread (woken by the
 *                       receiver's post through a futex in the segment), or the sender's call when the
 *                       receiver came first, has opened the receiver's buffer and published it; and it
 *                       waits for the done words of the launch's receives. One exception: the first
 *                       send of the launch whose receiver posted first runs on the copy engine, one
 *                       cudaMemcpyAsync on the sender's copy stream, queued after the kernel (the copy
 *                       stream waits for both ready words, copies, writes both done words; the kernel
 *                       waits for the sender's done word). And (CHORUS_GPU_CE_PULL: 1 between processes,
 *                       2, the default, also within one) the first receive of the launch whose sender
 *                       posted first, when the sender's post names a buffer this process reaches (CUDA
 *                       IPC, or its address in one process; senders describe their buffers for this),
 *                       is pulled by the receiver: its post says so instead of naming its buffer, one
 *                       cudaMemcpyAsync on the receiver's copy stream, queued after the kernel, waits
 *                       for both ready words, copies and writes both done words; the sender's agent
 *                       publishes CHR_CE_DST_PULLED, and the sender's kernel copies nothing and waits
 *                       for its done word. One engine copy per launch, pushed or pulled.
 * All GPU work of a call is queued from that call, and a wait for a peer outside the kernel comes
 * after it, one per launch: CUDA maps streams onto a few hardware queues (one with
 * CUDA_DEVICE_MAX_CONNECTIONS=1), so work an agent queued later, or a copy that waits for its receiver
 * ahead of another transfer of the launch, could sit before work the peer waits for (PyTorch's ops
 * hung so; tests/unit/test_ce_mailbox.c models hardware queues and hangs so).
 * No host waits for the peer, but for a free mailbox slot when one end is CHR_CE_SLOTS transfers ahead.
 * A copy that cannot run (a receive buffer CUDA IPC cannot share, sizes that differ, a failed CUDA
 * call) still ends the transfer, so no stream waits forever, and raises the rank's error word
 * (CHR_DEV_ERR_ENGINE), which the core reports as the comm's asynchronous error.
 */
#ifndef CHORUS_DEVICE_CE_SENDS_H_
#define CHORUS_DEVICE_CE_SENDS_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "nccl.h"
#include "hostdev/dev_api.h"
#include "hostdev/work.h"

struct chrDevRank;

/* 1 for a send or receive to another rank that the copy engine runs. */
static inline int chrCeIsEngineP2p(const struct chrWork* w) {
  return (w->pattern == CHR_PAT_P2P_SEND || w->pattern == CHR_PAT_P2P_RECV) && (w->flags & CHR_WORK_ENGINE);
}

/* Before the launch's kernels: numbers the n engine works (in order) and queues their ready words on
 * `stream`. The rank's device is current. */
ncclResult_t chrCeSignal(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream);

/* After the kernels: posts the same n works, issues the sends whose receivers have posted, queues the
 * first sends' copy kernels, then the waits for the done words. */
ncclResult_t chrCePost(struct chrDevRank* rk, const struct chrWork* works, int n, cudaStream_t stream);

/* The rank aborts: every wait of its streams and copy streams is released (no copy is issued any more). */
void chrCeAbort(struct chrDevRank* rk);

/* The rank's counts so far (hostdev/dev_api.h's chrDevRankCeStats). */
void chrCeStats(struct chrDevRank* rk, struct chrDevCeStats* out);

/* Device memory the rank's copy-engine state holds: staging buffers and the copy kernel's syncs. */
size_t chrCeDeviceBytes(const struct chrDevRank* rk);

/* Stops the agents, closes what was opened, unmaps the mailboxes. The rank's streams are done. */
void chrCeDestroy(struct chrDevRank* rk);

#endif /* CHORUS_DEVICE_CE_SENDS_H_ */
