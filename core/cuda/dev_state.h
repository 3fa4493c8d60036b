/*
 * dev_state.h: the device state of communicators whose ranks live in ONE process on ONE GPU.
 *
 * All ranks of such a communicator share one chrDevGroup (device/launch.h): the connections between
 * them, each rank's device comm, and the abort and error words. A process-wide registry keyed by
 * comm->commHash holds it; the first rank to use a device buffer creates it for all (with the ring
 * order, channel count and slot sizes below, which every rank's planner then uses), each rank that
 * uses it holds a reference, and the last rank to be destroyed or aborted frees it.
 *
 * Per rank (struct chrDevRankState): the shared entry, and two events: `last`, recorded after this
 * rank's latest launch outside graph capture (destroy and finalize wait for it, and a launch on
 * another stream waits for it, so a rank's kernels never overlap), and `join`, which ties the
 * streams of one group together.
 */
#ifndef CHORUS_CUDA_DEV_STATE_H_
#define CHORUS_CUDA_DEV_STATE_H_

#include <stddef.h>
#include "nccl.h"

struct ncclComm;

/* The device group's shape, a function of the communicator alone (so every rank agrees). */
struct chrDevShape {
  int nChannels;    /* ring channels; sends use channel 0 and receives channel 1 whatever this is */
  size_t stepBytes; /* SIMPLE slot: NCCL_BUFFSIZE / 8 in whole pages (the host's slot size) */
  int llLines;      /* LL slot: lines of 8 payload bytes */
};

struct chrDevShared;

struct chrDevRankState {
  struct chrDevShared* shared;
  void* last;             /* event: this rank's latest uncaptured launch */
  void* join;             /* event: joining a group's streams */
  cudaStream_t lastStream;
  int lastRecorded;
};

/* The message for device buffers of a comm the GPU path cannot serve (ranks in several processes or
 * on several GPUs). */
#define CHR_DEV_NOT_LOCAL_MSG "device buffers across processes/GPUs need CUDA IPC / peer access (not built yet)"

/* The shape a comm's device group has (or will have). */
void chrDevCommShape(const struct ncclComm* comm, struct chrDevShape* shape);

/* Attach the comm to its device group, creating the group if this is the first rank (idempotent). */
ncclResult_t chrDevCommAttach(struct ncclComm* comm);

/* The device group of an attached comm (NULL when not attached). */
struct chrDevGroup* chrDevCommGroup(const struct ncclComm* comm);

/* Asynchronous state of an attached comm: a kernel error of this rank (ncclInternalError) or a rank
 * of the group aborted or timed out (ncclRemoteError) becomes the comm's async error, which is
 * returned; ncclSuccess otherwise (and for comms never attached). */
ncclResult_t chrDevCommPoll(struct ncclComm* comm);

/* Wait until this rank's launched work has finished (polling, abort-aware; CHORUS_TIMEOUT bounds it
 * when set, then the group is aborted). */
ncclResult_t chrDevCommWait(struct ncclComm* comm, const char* func);

/* ncclCommAbort: raise the device abort word of every rank of the group (their kernels return within
 * milliseconds) and mark the group broken, so the other ranks fail instead of waiting forever. */
void chrDevCommAbort(struct ncclComm* comm);

/* At free: wait for this rank's work (bounded once aborted), drop the reference; the last one frees
 * the group. */
void chrDevCommDetach(struct ncclComm* comm);

#endif /* CHORUS_CUDA_DEV_STATE_H_ */
