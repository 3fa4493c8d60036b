/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * comm.h: the communicator object: struct ncclComm, its handle checks, references and error record.
 *
 * Every layer above this one uses the object; its lifecycle (init, destroy, split, shrink, suspend,
 * the calls a group defers) is at the top, in comm/lifecycle.h. So this header includes only lower
 * folders: the parts defined above (links, device state, plugins' contexts) are pointers to
 * incomplete types, and the plain data it holds by value lives below (config/cost_consts.h,
 * plugin/net_dev_list.h, bootstrap/peer_info.h, transport/transport_ctx.h: what the transports see
 * of it). The last chrCommRelease calls comm->destroy, which the lifecycle set.
 */
#ifndef CHORUS_COMMSTATE_COMM_H_
#define CHORUS_COMMSTATE_COMM_H_

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>
#include "bootstrap/peer_info.h"
#include "config/cost_consts.h"
#include "nccl.h"
#include "plugin/common.h"
#include "plugin/net_dev_list.h"
#include "transport/transport_ctx.h" /* struct chrTransportCtx, CHR_MAX_CHANNELS */

/* Defined elsewhere; the comm holds pointers only. */
struct chrBootstrap;    /* bootstrap/bootstrap.h */
struct chrNet;          /* plugin/net_plugin.h */
struct chrTuner;        /* plugin/tuner_plugin.h */
struct chrProfiler;     /* plugin/profiler_plugin.h */
struct chrLink;         /* transport/transport.h */
struct chrDevRankState; /* cuda/dev_state.h */
struct chrRegHandle;    /* comm/register.h */

#define CHR_COMM_MAGIC 0x43484f52u      /* "CHOR": a live communicator */
#define CHR_COMM_DEAD_MAGIC 0xdeadc0deu /* set on destroy, to catch use after free */
#define CHR_MAX_USER_REDOPS 64
#define CHR_P2P_CONNS 2
/* Room for the first cause of a communicator's failure. Less than the 1 KiB last-error text, so a
 * later call's message ("<call>: communicator has failed (<code>): <cause>") always holds it whole. */
#define CHR_COMM_FAIL_CAUSE_MAX 768

struct chrChannel {
  int id;
  int ringPrev, ringNext;     /* ranks */
  struct chrLink* ringSend;   /* to ringNext, NULL until connected */
  struct chrLink* ringRecv;   /* from ringPrev */
};

/* A user-defined reduction op (ncclRedOpCreatePreMulSum). */
struct chrUserRedOp {
  int inUse;
  ncclDataType_t type;
  ncclScalarResidence_t residence;
  const void* scalarPtr;       /* ncclScalarDevice: read when the collective runs */
  uint8_t scalar[8];           /* ncclScalarHostImmediate: copied at create */
};

struct ncclComm {
  uint32_t magic;
  int rank, nRanks;
  int cudaDev;
  uint64_t commHash;
  ncclConfig_t config;         /* effective configuration (defaults filled in) */
  char commName[128];
  char netName[128];           /* copy of config.netName (the caller's string may not outlive the call) */

  struct chrBootstrap* bootstrap;
  struct chrPeerInfo* peers;   /* nRanks entries */
  int nNodes;
  int* nodeOfRank;             /* node index per rank */
  uint64_t ownCoreSpinNs;      /* no other local rank can run on this rank's CPUs: poll this long without
                                * yielding before sleeping (util/idle.h); 0: they may share cores */

  struct chrNet* net;          /* the net plugin chosen for this comm (chrNetOpen) */
  struct chrNetDevs netDevs;   /* the plugin devices this rank's links use */
  struct chrNetRails netRails; /* NCCL_CROSS_NIC=0: the devices to send through, by the peer's GPU */
  /* What the transports see of this comm: copies and addresses of its own fields, filled by the init
   * (comm/init.c). The transports take &comm->transport, never the comm. */
  struct chrTransportCtx transport;

  /* The planner's cost model (plan/cost_model.h), read from the configuration at init so that one
   * comm plans with one model for its whole life. */
  struct chrCostModel costModel;

  int nChannels;               /* most channels a plan may use (rings computed), links connect lazily */
  int minChannels;
  struct chrChannel channels[CHR_MAX_CHANNELS];
  int* ringOrder;              /* ranks in ring order */
  /* Point-to-point links, nRanks entries per connection index, made on demand. Index 0 serves
   * send/recv; trees use one index per tree, so two trees can use the same peer at once. */
  struct chrLink** p2pSend[CHR_P2P_CONNS];
  struct chrLink** p2pRecv[CHR_P2P_CONNS];
  uint64_t directSteps;        /* steps the executor moved straight from or into user buffers (exec/direct.h),
                                  logged at destroy */

  struct chrUserRedOp userOps[CHR_MAX_USER_REDOPS];

  /* GPU path (cuda/dev_state.h). devLocal: every rank is in this process and on this comm's CUDA
   * device (cudaDev): one device group for all of them. devIpc: otherwise, every rank has a GPU:
   * per-rank device state, connected through CUDA IPC / peer access on this host and, when devNet
   * (some rank is on another host), through the net plugin's proxy (transport/dev_net.h) across hosts.
   * dev: this rank's device state, made at the first device-buffer call. */
  int devLocal;
  int devIpc;
  int devNet;
  struct chrDevRankState* dev;

  /* Tuner plugin (plan/tuner_hook.c sets these when one is loaded). tunerHook may rewrite the cost
   * table (float[numAlgo][numProto], microseconds, -1 = cannot run; NCCL's tuner ABI layout) and set
   * *nChannels (0 = keep); tunerChunkHook, after the choice, may rewrite the step size in bytes (the
   * planner clamps it). Both refuse answers the planner cannot run. */
  struct chrTuner* tuner;
  ncclResult_t (*tunerHook)(struct ncclComm* comm, ncclFunc_t func, size_t bytes, float* table, int numAlgo,
                            int numProto, int* nChannels);
  ncclResult_t (*tunerChunkHook)(struct ncclComm* comm, ncclFunc_t func, size_t bytes, int algo, int proto,
                                 int nChannels, size_t* chunkBytes);
  struct chrProfiler* profiler; /* profiler plugin context (profile/profile.h), NULL without one */
  const char* lastAlgo;        /* the planner's last choice, for chorus-perf and logs */
  const char* lastProto;

  /* State. asyncError: ncclInProgress while a non-blocking init runs, then its result, or the first
   * asynchronous failure (peer death, abort). */
  _Atomic int asyncError;
  volatile uint32_t abortFlag;
  _Atomic int busy;            /* calls running on this comm (abort waits for them) */
  _Atomic uintptr_t runner;    /* the thread running calls on this comm, 0: none (group/group.c) */
  _Atomic int refs;            /* 1 for the user's handle + 1 per task or split queued in an open group */
  /* Frees the comm when the last reference goes (chrCommRelease): the lifecycle's teardown, set when
   * the comm is allocated, so that releasing a reference never calls up into the lifecycle. */
  ncclResult_t (*destroy)(struct ncclComm* comm);
  int finalized;               /* ncclCommFinalize was called (set with an atomic exchange) */
  _Atomic int revoked;         /* ncclCommRevoke was called: no new operation, a parent still */
  /* The text of the failure that put asyncError in error, written once, by the thread that did so,
   * under lock. Later calls quote it instead of the last error, so messages never nest. */
  char failCause[CHR_COMM_FAIL_CAUSE_MAX];
  _Atomic int failWarned;      /* a call was refused with a WARN already: later refusals log at INFO */
  pthread_t initThread;
  int initThreadStarted;       /* guarded by initLock */
  pthread_mutex_t initLock;    /* exactly one caller joins initThread (chrCommReapInitThread) */
  pthread_mutex_t lock;        /* guards lastError, failCause and lazy connection setup */
  char lastError[1024];
  uint64_t lastErrorSeq;       /* chrThreadLastErrorSeq() of the text in lastError */
  uint64_t collCount;          /* collectives executed, for logs */
  uint64_t checkedCalls;       /* collective calls compared so far (CHORUS_CHECK_CALLS, group/check_calls.c) */
  uint32_t splitCount;         /* ncclCommSplit calls on this comm, to match the ranks' exchanges (comm/split.c) */
  uint32_t shrinkCount;        /* ncclCommShrink calls on this comm (comm/shrink.c): the remaining ranks count alike */
  uint32_t windowCount;        /* ncclCommWindowRegister calls on this comm (comm/window.c) */
  uint32_t suspendSeq;         /* ncclCommSuspend and ncclCommResume calls on this comm (comm/suspend.c) */
  uint32_t devGeneration;      /* device states made and released so far: suspends that freed GPU memory */
  _Atomic int suspended;       /* between ncclCommSuspend and ncclCommResume: no operation */
  struct ncclWindow_vidmem* windows; /* its registered windows, under lock; freed with the comm */
  struct chrRegHandle* regs;   /* its ncclCommRegister handles, under lock; freed with the comm */
  uint64_t* sigSent;           /* nRanks: one-sided signals this rank sent to each (api/onesided_api.c) */
  uint64_t* sigAwaited;        /* nRanks: signals from each that this rank's waits have counted */
};

/* Validate a comm handle given by the user: NULL, destroyed and garbage handles are rejected. */
ncclResult_t chrCommCheck(const struct ncclComm* comm, const char* func);
/* Like chrCommCheck, and also: init finished successfully, not aborted, not revoked, no async error. */
ncclResult_t chrCommCheckReady(struct ncclComm* comm, const char* func);
/* chrCommCheckReady for a communicator that new ones are made from (split, grow): a revoked one is
 * accepted, with whatever error the calls its revoke interrupted left (its bootstrap still works). */
ncclResult_t chrCommCheckParent(struct ncclComm* comm, const char* func);
/* The refusal of `func` on a comm whose asyncError is an error: returns that error with the last-error
 * text "<func>: communicator has failed (<code name>): <first cause>". */
ncclResult_t chrCommFailedError(struct ncclComm* comm, const char* func);
/* Copy the thread's last-error text into the comm (called by the API layer when a call fails). */
void chrCommNoteError(struct ncclComm* comm);
/* References (comm->refs): chrCommRelease calls comm->destroy when the last one goes. */
void chrCommRetain(struct ncclComm* comm);
void chrCommRelease(struct ncclComm* comm);
/* Raise the abort flag and wake a call of this comm that sleeps on its peers (exec.c). */
void chrCommRaiseAbort(struct ncclComm* comm);
/* Record an asynchronous failure. The first one wins: it sets asyncError and keeps the thread's
 * last-error text (the caller's chrFail) as the comm's failCause; later ones only update lastError. */
void chrCommSetAsyncError(struct ncclComm* comm, ncclResult_t res);

#endif /* CHORUS_COMMSTATE_COMM_H_ */
