/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c: creating a communicator.
 *
 * Steps: read the config; tell the others who we are (bootstrap allgather of chrPeerInfo); find hosts
 * and rings; open the net plugin for this comm when some link needs it, then the tuner plugin.
 * Transports connect later, when a plan first needs them. With config.blocking = 0 the steps run on
 * a thread and the caller polls ncclCommGetAsyncError until it stops saying ncclInProgress.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "chorus.h"
#include "comm/lifecycle.h"
#include "comm/topo.h"
#include "comm/topo_file.h"
#include "bootstrap/peer_info.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/cuda_driver.h"
#include "log/check.h"
#include "log/log.h"
#include "plan/cost_model.h"
#include "plan/plan.h"
#include "profile/profile.h"
#include "plugin/net_plugin.h"
#include "transport/connect.h"
#include "transport/net_devs.h"

#define CHR_PEER_MAGIC 0x50454552u /* "PEER" */

struct initJob {
  struct ncclComm* comm;
  ncclUniqueId id;
};

static ncclResult_t exchangePeerInfo(struct ncclComm* comm, const ncclUniqueId* id) {
  struct chrPeerInfo me;
  memset(&me, 0, sizeof(me));
  me.magic = CHR_PEER_MAGIC;
  me.rank = comm->rank;
  chrHostIdentity(me.hostId, sizeof(me.hostId));
  me.hostHash = chrHash64(me.hostId, strlen(me.hostId));
  me.pid = getpid();
  me.cudaDev = comm->cudaDev;
  me.sms = comm->cudaDev >= 0 ? chrCudaDeviceSMs(comm->cudaDev) : 0;
  me.busId = comm->cudaDev >= 0 ? chrCudaDeviceBusId(comm->cudaDev) : -1;
  chrCpuMaskOfThread(&me.cpus);
  comm->peers = calloc((size_t)comm->nRanks, sizeof(struct chrPeerInfo));
  if (comm->peers == NULL) return chrFail(ncclSystemError, "out of memory for %d peer infos", comm->nRanks);
  CHECK(chrBootstrapInit(id, comm->rank, comm->nRanks, &me, sizeof(me), comm->peers, &comm->abortFlag,
                         &comm->bootstrap));
  for (int r = 0; r < comm->nRanks; r++) {
    struct chrPeerInfo* p = &comm->peers[r];
    if (p->magic != CHR_PEER_MAGIC || p->rank != r)
      return chrFail(ncclRemoteError, "bootstrap: peer info of rank %d is malformed (magic 0x%x, rank %d)", r,
                     p->magic, p->rank);
    p->hostId[CHR_HOSTID_LEN - 1] = '\0';
  }
  return ncclSuccess;
}

/* Two ranks on one GPU: a choice (CHORUS_SHARED_GPU=1), refused by default as NCCL refuses it, since
 * a program that forgot to pick a device per rank would otherwise run many times slower, silently.
 * Every rank names the same pair (the lowest), so all of them fail alike. */
static ncclResult_t checkSharedGpu(const struct ncclComm* comm) {
  if (chrParamInt(CHR_P_SHARED_GPU) != 0) return ncclSuccess;
  struct chrGpuShare share;
  if (chrPeersGpuShare(comm->peers, comm->nRanks, 1, &share) != 0)
    return chrFail(ncclSystemError, "out of memory checking %d ranks for a shared GPU", comm->nRanks);
  if (share.first < 0) return ncclSuccess;
  const struct chrPeerInfo* p = &comm->peers[share.first];
  return chrFail(ncclInvalidUsage,
                 "ranks %d and %d are both on GPU %04llx:%02llx:%02llx.0 of host %s (duplicate GPU, as NCCL "
                 "calls it: give each rank its own device, e.g. torch.cuda.set_device(local_rank)); set "
                 "CHORUS_SHARED_GPU=1 to let ranks share a GPU",
                 share.first, share.second, (unsigned long long)(p->busId >> 20),
                 (unsigned long long)((p->busId >> 12) & 0xff), (unsigned long long)((p->busId >> 4) & 0x1f), p->hostId);
}

static ncclResult_t chooseChannels(struct ncclComm* comm) {
  int64_t maxCh = chrParamInt(CHR_P_MAX_NCHANNELS);
  int64_t minCh = chrParamInt(CHR_P_MIN_NCHANNELS);
  if (maxCh < 1) maxCh = 1;
  if (maxCh > comm->config.maxCTAs) maxCh = comm->config.maxCTAs;
  if (maxCh > CHR_MAX_CHANNELS) maxCh = CHR_MAX_CHANNELS;
  if (minCh < 1) minCh = 1;
  if (minCh > maxCh) minCh = maxCh;
  comm->nChannels = (int)maxCh;
  comm->minChannels = (int)minCh;
  return ncclSuccess;
}

/* NCCL_DEBUG=VERSION (and up): the library identifies itself once per process, at its first
 * communicator, on the line NCCL uses ("NCCL version ..."), so that logs and scripts that look for
 * that line also tell which library a program bound. */
static void showVersionOnce(void) {
  static atomic_flag shown = ATOMIC_FLAG_INIT;
  if (atomic_flag_test_and_set(&shown)) return;
  chrLog(NCCL_LOG_VERSION, NCCL_INIT, __FILE__, __LINE__, "NCCL version %d.%d.%d (Chorus %d.%d.%d, NCCL's API and ABI)",
         NCCL_MAJOR, NCCL_MINOR, NCCL_PATCH, CHORUS_VERSION_MAJOR, CHORUS_VERSION_MINOR, CHORUS_VERSION_PATCH);
}

/* What the transports see of the comm (transport/transport_ctx.h). Filled again after each step that
 * makes a part it copies (the bootstrap and peers, the hosts, the net plugin); the parts that change
 * later are pointers into the comm. */
static void fillTransportCtx(struct ncclComm* comm) {
  comm->transport = (struct chrTransportCtx){.owner = comm,
                                             .rank = comm->rank,
                                             .nRanks = comm->nRanks,
                                             .bootstrap = comm->bootstrap,
                                             .peers = comm->peers,
                                             .nodeOfRank = comm->nodeOfRank,
                                             .net = comm->net,
                                             .netDevs = &comm->netDevs,
                                             .netRails = &comm->netRails,
                                             .abortFlag = &comm->abortFlag,
                                             .devGeneration = &comm->devGeneration};
}

static ncclResult_t initSteps(struct ncclComm* comm, const ncclUniqueId* id) {
  CHECK(chrConfigValidate());
  showVersionOnce();
  CHECK(chrCostModelRead(&comm->costModel));
  CHECK(exchangePeerInfo(comm, id));
  CHECK(checkSharedGpu(comm));
  CHECK(chrTopoCompute(comm));
  CHECK(chooseChannels(comm));
  /* Device buffers: one group when every rank lives in this process on this comm's GPU. */
  const struct chrPeerInfo* me = &comm->peers[comm->rank];
  comm->devLocal = comm->cudaDev >= 0;
  for (int r = 0; r < comm->nRanks; r++)
    if (comm->peers[r].hostHash != me->hostHash || comm->peers[r].pid != me->pid || comm->peers[r].cudaDev != comm->cudaDev)
      comm->devLocal = 0;
  /* Otherwise ranks each with a GPU connect their GPU memory per rank: through CUDA IPC / peer access
   * on one host (whether the GPUs can reach each other is found out when they connect), through the
   * net plugin and a proxy thread across hosts (devNet). */
  comm->devIpc = !comm->devLocal && comm->cudaDev >= 0;
  comm->devNet = 0;
  for (int r = 0; r < comm->nRanks && comm->devIpc; r++) {
    if (comm->peers[r].cudaDev < 0) comm->devIpc = 0;
    if (comm->peers[r].hostHash != me->hostHash) comm->devNet = 1;
  }
  comm->devNet = comm->devNet && comm->devIpc;
  /* The net plugin is opened only when a link will go through it: ranks of one host talk over shm,
   * and must not fail because a plugin is missing, broken or has no device. */
  int needNet = 0;
  fillTransportCtx(comm); /* peers, bootstrap and hosts are known */
  CHECK(chrTransportNeedsNet(&comm->transport, &needNet));
  if (needNet) {
    CHECK(chrNetOpen(comm->commHash, comm->config.netName, comm->config.trafficClass, &comm->net));
    fillTransportCtx(comm); /* and the net plugin */
    if (comm->net == NULL)
      return chrFail(ncclInvalidUsage, "NCCL_NET_PLUGIN=none, but ranks of this communicator need the network "
                     "(ranks on other hosts, NCCL_SHM_DISABLE=1 or CHORUS_TRANSPORT=net)");
    CHECK(chrNetDevsChoose(comm->net, comm->rank, &comm->netDevs));
  }
  CHECK(chrCommTopoFile(comm));    /* after the net plugin: its NICs are in the topology, which orders them */
  CHECK(chrPlanTunerAttach(comm)); /* after the net plugin: its library may carry the tuner */
  CHECK(chrProfAttach(comm));      /* likewise the profiler */
  INFO(NCCL_INIT, "comm %p rank %d nranks %d cudaDev %d commHash 0x%llx - Init COMPLETE", (void*)comm, comm->rank,
       comm->nRanks, comm->cudaDev, (unsigned long long)comm->commHash);
  return ncclSuccess;
}

static void* initThreadMain(void* arg) {
  struct initJob* job = arg;
  ncclResult_t res = initSteps(job->comm, &job->id);
  if (res != ncclSuccess) {
    chrBootstrapAbandon(&job->id, job->comm->rank, chrThreadLastError());
    chrCommSetAsyncError(job->comm, res);
  } else {
    atomic_store(&job->comm->asyncError, ncclSuccess);
  }
  free(job);
  return NULL;
}

ncclResult_t chrCommAllocPending(const ncclConfig_t* config, struct ncclComm** out) {
  struct ncclComm* comm = calloc(1, sizeof(*comm));
  if (comm == NULL) return chrFail(ncclSystemError, "out of memory allocating a communicator");
  ncclResult_t res = chrConfigFromUser(config, &comm->config);
  if (res != ncclSuccess) { free(comm); return res; }
  /* The strings the config points to are copied: the caller may free or reuse them after the call,
   * and the init thread reads them later. */
  if (comm->config.commName) {
    strncpy(comm->commName, comm->config.commName, sizeof(comm->commName) - 1);
    comm->config.commName = comm->commName;
  }
  if (comm->config.netName) {
    strncpy(comm->netName, comm->config.netName, sizeof(comm->netName) - 1);
    comm->config.netName = comm->netName;
  }
  comm->magic = CHR_COMM_MAGIC;
  comm->rank = -1;
  /* The calling thread's device (cudaGetDevice's answer; -1 without a CUDA driver). Read here, in the
   * caller's thread: the init may run on a thread of its own, which has no current device. */
  comm->cudaDev = chrCudaCurrentDevice();
  pthread_mutex_init(&comm->lock, NULL);
  pthread_mutex_init(&comm->initLock, NULL);
  atomic_store(&comm->refs, 1);
  comm->destroy = chrCommFree;
  atomic_store(&comm->asyncError, ncclInProgress);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t chrCommInitLaunch(struct ncclComm* comm, int nranks, const ncclUniqueId* id, int rank, int inThread) {
  comm->rank = rank;
  comm->nRanks = nranks;
  comm->commHash = chrHash64(id->internal, sizeof(id->internal));
  if (!inThread && comm->config.blocking) {
    ncclResult_t res = initSteps(comm, id);
    if (res != ncclSuccess) {
      chrBootstrapAbandon(id, rank, chrThreadLastError());
      chrCommSetAsyncError(comm, res);
      return res;
    }
    atomic_store(&comm->asyncError, ncclSuccess);
    return ncclSuccess;
  }
  struct initJob* job = malloc(sizeof(*job));
  if (job == NULL) {
    ncclResult_t res = chrFail(ncclSystemError, "out of memory starting communicator init");
    chrCommSetAsyncError(comm, res);
    return res;
  }
  job->comm = comm;
  job->id = *id;
  if (pthread_create(&comm->initThread, NULL, initThreadMain, job) != 0) {
    free(job);
    ncclResult_t res = chrFail(ncclSystemError, "cannot start the communicator init thread");
    chrCommSetAsyncError(comm, res);
    return res;
  }
  comm->initThreadStarted = 1;
  return ncclInProgress;
}

ncclResult_t chrCommInitStart(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank, const ncclConfig_t* config,
                              int inThread) {
  return chrCommInitStartOn(out, nranks, id, rank, config, inThread, CHR_COMM_CALLER_DEVICE);
}

ncclResult_t chrCommInitStartOn(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank,
                                const ncclConfig_t* config, int inThread, int cudaDev) {
  struct ncclComm* comm = NULL;
  CHECK(chrCommAllocPending(config, &comm));
  if (cudaDev != CHR_COMM_CALLER_DEVICE) comm->cudaDev = cudaDev; /* before the ranks tell each other */
  *out = comm;
  ncclResult_t res = chrCommInitLaunch(comm, nranks, id, rank, inThread);
  if (CHR_IS_ERROR(res)) {
    chrCommFree(comm);
    *out = NULL;
  }
  return res;
}

ncclResult_t chrCommInitWait(struct ncclComm* comm) {
  chrCommReapInitThread(comm, 1);
  int state = atomic_load(&comm->asyncError);
  if (state != ncclSuccess) {
    /* The thread's last error is on the init thread: the comm has the copy. */
    pthread_mutex_lock(&comm->lock);
    chrSetLastError("%s", comm->lastError);
    pthread_mutex_unlock(&comm->lock);
  }
  return (ncclResult_t)state;
}

void chrCommReapInitThread(struct ncclComm* comm, int wait) {
  /* initLock makes exactly one caller join (a program and its watchdog may both poll); the init
   * thread itself never takes it, so joining under it cannot deadlock. */
  pthread_mutex_lock(&comm->initLock);
  if (comm->initThreadStarted && (wait || atomic_load(&comm->asyncError) != ncclInProgress)) {
    pthread_join(comm->initThread, NULL);
    comm->initThreadStarted = 0;
  }
  pthread_mutex_unlock(&comm->initLock);
}
