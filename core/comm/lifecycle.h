/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lifecycle.h: a communicator's life: init, free, split, shrink, suspend and resume, and the calls a
 * group defers to its end (comm_jobs.c).
 *
 * The object itself (struct ncclComm, its checks and references) is commstate/comm.h, at the bottom
 * of the core; this half calls every layer (bootstrap, transports, cuda, planner, profiler), so only
 * the group and the API above it include this header.
 */
#ifndef CHORUS_COMM_LIFECYCLE_H_
#define CHORUS_COMM_LIFECYCLE_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

struct ncclComm;

/* Init and free (comm/init.c, comm/destroy.c).
 * chrCommInitStart allocates the comm and runs init: inline when the config is blocking and
 * inThread == 0 (returns the result), else on a thread (returns ncclInProgress; *out is valid and
 * its asyncError says ncclInProgress until done). chrCommInitWait joins that thread. */
ncclResult_t chrCommInitStart(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank, const ncclConfig_t* config,
                              int inThread);
/* The same for a comm on device cudaDev whatever the calling thread's device is (a split's or a
 * grow's child stays on its parent's device); CHR_COMM_CALLER_DEVICE: the caller's, as above. */
#define CHR_COMM_CALLER_DEVICE (-2)
ncclResult_t chrCommInitStartOn(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank,
                                const ncclConfig_t* config, int inThread, int cudaDev);
ncclResult_t chrCommInitWait(struct ncclComm* comm);
/* The two halves of chrCommInitStart, for a comm whose members are known only later (a split inside a
 * group): AllocPending makes the handle (asyncError = ncclInProgress, rank -1); InitLaunch then runs
 * init as chrCommInitStart would. On an InitLaunch failure the comm is left allocated, in error. */
ncclResult_t chrCommAllocPending(const ncclConfig_t* config, struct ncclComm** out);
ncclResult_t chrCommInitLaunch(struct ncclComm* comm, int nranks, const ncclUniqueId* id, int rank, int inThread);
/* Join the init thread if there is one and (wait, or it has finished). Thread-safe. */
void chrCommReapInitThread(struct ncclComm* comm, int wait);
/* Free everything, without talking to peers. Safe on a half-initialised comm. chrCommAllocPending
 * makes it the comm's destroy function, which the last chrCommRelease calls. */
ncclResult_t chrCommFree(struct ncclComm* comm);

/* Config reading (comm/config.c): caller's struct, per-version reset, range checks, env overrides. */
ncclResult_t chrConfigFromUser(const ncclConfig_t* user, ncclConfig_t* out);

/* ncclCommSplit (comm/split.c).
 * chrSplitConfig: the child's config: the parent's effective config when user is NULL, else the
 * user's struct read with chrConfigFromUser. The result can be passed to chrCommInitStart as is.
 * chrSplitExchange: the collective part, over the parent's bootstrap; every parent rank must call it,
 * NCCL_SPLIT_NOCOLOR ones included, with the same seq (the parent's split count at the call). On return *nranks is the child's size (0 for NCCL_SPLIT_NOCOLOR),
 * *rank this rank's place in it (by key, ties by parent rank) and *id the child's unique id, made by
 * the member with the lowest parent rank. */
ncclResult_t chrSplitConfig(const struct ncclComm* parent, const ncclConfig_t* user, ncclConfig_t* out);
ncclResult_t chrSplitExchange(struct ncclComm* parent, int color, int key, uint32_t seq, int* nranks, int* rank,
                              ncclUniqueId* id);

/* ncclCommShrink (comm/shrink.c): the exchange among the ranks that stay, over the parent's bootstrap
 * (the excluded ranks take no part: they may be gone). exclude holds `count` distinct parent ranks,
 * not this one (the caller checks). The ranks that stay keep their parent order; the lowest of them
 * makes the child's unique id and sends it to the others with the shrink's seq and a digest of the
 * exclude list, which each checks against its own. On return *nranks, *rank and *id as for a split. */
ncclResult_t chrShrinkExchange(struct ncclComm* parent, const int* exclude, int count, uint32_t seq, int* nranks,
                               int* rank, ncclUniqueId* id);
/* NCCL_SHRINK_ABORT, before the exchange: the parent's GPU work stops (its kernels return within
 * milliseconds) and the parent is marked failed (ncclRemoteError); its bootstrap stays usable. */
void chrShrinkAbortParent(struct ncclComm* parent);

/* ncclCommSuspend / ncclCommResume (comm/suspend.c), the collective part. Every rank checks over an
 * allgather that all are at the same call (seq, suspend or resume), so a rank that skipped one fails
 * them all. Suspend with NCCL_SUSPEND_MEM waits for this rank's GPU work, then (after the exchange:
 * every rank's work is done) frees its device state; the next GPU call after the resume makes a new
 * one, as the first GPU call did. */
ncclResult_t chrCommSuspendExchange(struct ncclComm* comm, int flags, uint32_t seq);
ncclResult_t chrCommResumeExchange(struct ncclComm* comm, uint32_t seq);

/* A split, shrink, window registration, suspend or resume made inside a group (comm/comm_jobs.c):
 * recorded at the call (seq = the parent's split, shrink, window or suspend number then), run at the
 * outermost ncclGroupEnd by chrCommRunJobs: the exchanges of each parent in call order on a thread of
 * their own (one thread may drive several parents, whose exchanges wait for each other), then each
 * child's init starts on its own thread. child is NULL for NCCL_SPLIT_NOCOLOR and for the kinds that
 * make none; otherwise it was made by chrCommAllocPending and handed to the caller. Returns the first
 * failure (children that failed are in error state). */
enum chrCommJobKind { CHR_JOB_SPLIT = 0, CHR_JOB_SHRINK = 1, CHR_JOB_WINDOW, CHR_JOB_SUSPEND, CHR_JOB_RESUME };
struct chrCommJob {
  struct ncclComm* parent;
  int color, key;
  uint32_t seq;
  struct ncclComm* child;
  /* flags: the call's (a shrink's, a window's, a suspend's). CHR_JOB_SHRINK (ncclCommShrink in a
   * group): the excluded ranks (the job owns the copy; the group frees it); seq is then the parent's
   * shrink number. */
  int kind, nExclude, flags;
  int* exclude;
  /* CHR_JOB_WINDOW (ncclCommWindowRegister in a group, comm/window.h): *winOut is written when it
   * runs; seq is the parent's window number. CHR_JOB_SUSPEND / _RESUME (comm/suspend.c): seq is the
   * parent's suspend-or-resume number. */
  void* winBuff;
  size_t winSize;
  ncclWindow_t* winOut;
};
ncclResult_t chrCommRunJobs(struct chrCommJob* jobs, int n);

#endif /* CHORUS_COMM_LIFECYCLE_H_ */
