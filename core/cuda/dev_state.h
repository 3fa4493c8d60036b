/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_state.h: the device state of a communicator's rank (the GPU path).
 *
 * Two modes, chosen at init (commstate/comm.h):
 * - GROUP (comm->devLocal: every rank in this process on one GPU). All ranks share one chrDevGroup
 *   (hostdev/dev_api.h). A process-wide registry keyed by comm->commHash holds it; the first rank to
 *   use a device buffer creates it for all, each rank that uses it holds a reference, and the last
 *   rank to be destroyed or aborted frees it. Nothing goes over the bootstrap, so one thread may drive
 *   every rank (ncclCommInitAll).
 * - IPC (comm->devIpc: ranks in several processes, or on several GPUs; ranks on other hosts through
 *   the net proxy of dev_net.h when comm->devNet). Each rank makes
 *   its own chrDevRank in its own process at its first device-buffer call (attach) and sends its blob
 *   to every peer over the bootstrap; it connects a peer (receives that peer's blob) the first time a
 *   plan names it, so a rank waits only for peers it exchanges data with (cuda/dev_ipc.c).
 *
 * Per rank (struct chrDevRankState): the library's rank state, and two events: `last`, recorded
 * after this rank's latest launch outside graph capture (destroy and finalize wait for it, a launch
 * on another stream waits for it, so a rank's kernels never overlap, and the dead-peer watchdog asks
 * it whether work is in flight), and `join`, which ties the streams of one group together.
 */
#ifndef CHORUS_CUDA_DEV_STATE_H_
#define CHORUS_CUDA_DEV_STATE_H_

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

struct ncclComm;
struct chrDevLaunch;

/* The device state's shape, a function of the communicator alone (so every rank agrees). */
struct chrDevShape {
  int nChannels;       /* ring channels */
  size_t stepBytes;    /* SIMPLE ring slot: CHORUS_GPU_BUFFSIZE (NCCL_BUFFSIZE when set) / 8 in whole pages */
  int llLines;         /* LL slot: lines of 8 payload bytes */
  int p2pLanes;        /* point-to-point connection indices to every peer: a large send splits over
                          them, lane k sending on launch channel 2k and receiving on 2k + 1 */
  size_t p2pStepBytes; /* SIMPLE slot of a point-to-point lane */
  int copyEngine;      /* plans may send on the copy engine (CHORUS_GPU_CE_MIN_BYTES,
                          CHORUS_GPU_CE_BCAST_MIN_BYTES or CHORUS_GPU_CE_ALLREDUCE_MIN_BYTES above 0;
                          the broadcasts' floor is by default): the device library loads its kernel */
  int ceWaitUs;        /* CHORUS_GPU_CE_WAIT_US */
  int ceShareFd;       /* CHORUS_GPU_CE_SHARE_FD */
  int cePull;          /* CHORUS_GPU_CE_PULL */
};

struct chrDevShared;
struct chrDevIpc;
struct chrDevRank;

struct chrDevRankState {
  struct chrDevShape shape;
  struct chrDevShared* shared; /* group mode: the process's group of the comm; NULL in IPC mode */
  struct chrDevIpc* ipc;       /* IPC mode: connections and liveness (dev_ipc.c); NULL in group mode */
  struct chrDevRank* rank;     /* the library's state of this rank */
  void* last;                  /* event: this rank's latest uncaptured launch */
  void* join;                  /* event: joining a group's streams */
  cudaStream_t lastStream;
  _Atomic int lastRecorded;
};

/* The message for device buffers of a comm the GPU path cannot serve. */
#define CHR_DEV_NOT_LOCAL_MSG "device buffers need a GPU at every rank (some rank of this communicator has none)"

/* Whether a comm may send on the copy engines at all: not when it spans hosts (the engines' transfers
 * meet in mailboxes of one host's memory). The planner and the shape both ask this. */
int chrDevCommEngineAllowed(const struct ncclComm* comm);

/* The shape a comm's device state has (or will have). */
void chrDevCommShape(const struct ncclComm* comm, struct chrDevShape* shape);

/* Make this rank's device state if it has none (idempotent). IPC mode: also sends the rank's blob to
 * every peer (never waits for them), so attach every comm of a group before connecting any. */
ncclResult_t chrDevCommAttach(struct ncclComm* comm);

/* Whether a comm connects its peers as its works first name them (IPC mode), rather than all of
 * them at attach (group mode): the caller need not scan a launch's works for peers otherwise. */
int chrDevCommConnectsLazily(const struct ncclComm* comm);

/* Connect the peers with need[peer] != 0 that are not connected yet (IPC mode: waits for each one's
 * blob, i.e. for its attach); nothing to do in group mode. */
ncclResult_t chrDevCommConnect(struct ncclComm* comm, const unsigned char* need);

/* Queue one launch of this rank (hostdev/dev_api.h: chrDevRankLaunch). */
ncclResult_t chrDevCommLaunch(struct ncclComm* comm, const struct chrDevLaunch* launch, cudaStream_t stream);

/* Asynchronous state of an attached comm: a kernel error of this rank (ncclInternalError), another
 * rank aborted, timed out or died (ncclRemoteError) becomes the comm's async error, which is
 * returned; ncclSuccess otherwise (and for comms never attached). */
ncclResult_t chrDevCommPoll(struct ncclComm* comm);

/* Wait until this rank's launched work has finished (polling, abort-aware; CHORUS_TIMEOUT bounds it
 * when set, then the rank's kernels are aborted; IPC mode: a dead peer aborts them too). */
ncclResult_t chrDevCommWait(struct ncclComm* comm, const char* func);

/* ncclCommFinalize and ncclCommDestroy: chrDevCommWait, then, unless the comm was aborted, revoked or
 * has failed, until the net proxy has delivered what the kernels sent to other hosts. */
ncclResult_t chrDevCommFlush(struct ncclComm* comm, const char* func);

/* ncclCommAbort: raise the device abort word of this rank and of every rank of the comm in this
 * process (their kernels return within milliseconds) and mark them failed. Ranks in other processes
 * see this rank's bootstrap close when the comm is freed and abort through their watchdog. */
void chrDevCommAbort(struct ncclComm* comm);

/* At free, or at a suspend: wait for this rank's work (bounded once aborted), then release the state
 * (group mode: the last reference frees the group); comm->dev is NULL after, and a later GPU call
 * attaches again. */
void chrDevCommDetach(struct ncclComm* comm);
/* GPU memory the rank's device state holds (0 without one): ncclCommMemStats. */
uint64_t chrDevCommDeviceBytes(struct ncclComm* comm);

#endif /* CHORUS_CUDA_DEV_STATE_H_ */
