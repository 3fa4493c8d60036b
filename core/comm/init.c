/*
 * init.c: creating a communicator.
 *
 * Steps: read the config; tell the others who we are (bootstrap allgather of chrPeerInfo); find hosts
 * and rings; open the net plugin for this comm. Transports connect later, when a plan first needs
 * them. With config.blocking = 0 the steps run on a thread and the caller polls
 * ncclCommGetAsyncError until it stops saying ncclInProgress.
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "comm/comm.h"
#include "comm/topo.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"

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
  me.busId = -1;
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

static ncclResult_t initSteps(struct ncclComm* comm, const ncclUniqueId* id) {
  CHECK(chrConfigValidate());
  CHECK(exchangePeerInfo(comm, id));
  CHECK(chrTopoCompute(comm));
  CHECK(chooseChannels(comm));
  if (comm->nRanks > 1) {
    CHECK(chrNetOpen(comm->commHash, comm->config.netName, comm->config.trafficClass, &comm->net));
    if (comm->net == NULL)
      return chrFail(ncclInvalidUsage, "NCCL_NET_PLUGIN=none leaves no transport between the %d ranks", comm->nRanks);
    comm->netDev = 0;
  }
  INFO(NCCL_INIT, "comm %p rank %d nranks %d cudaDev %d commHash 0x%llx - Init COMPLETE", (void*)comm, comm->rank,
       comm->nRanks, comm->cudaDev, (unsigned long long)comm->commHash);
  return ncclSuccess;
}

static void* initThreadMain(void* arg) {
  struct initJob* job = arg;
  ncclResult_t res = initSteps(job->comm, &job->id);
  if (res != ncclSuccess) {
    chrCommSetAsyncError(job->comm, res);
  } else {
    atomic_store(&job->comm->asyncError, ncclSuccess);
  }
  free(job);
  return NULL;
}

static ncclResult_t commAlloc(struct ncclComm** out, int nranks, const ncclUniqueId* id, int rank,
                              const ncclConfig_t* config) {
  struct ncclComm* comm = calloc(1, sizeof(*comm));
  if (comm == NULL) return chrFail(ncclSystemError, "out of memory allocating a communicator");
  ncclResult_t res = chrConfigFromUser(config, &comm->config);
  if (res != ncclSuccess) { free(comm); return res; }
  if (comm->config.commName) {
    strncpy(comm->commName, comm->config.commName, sizeof(comm->commName) - 1);
    comm->config.commName = comm->commName;
  }
  comm->magic = CHR_COMM_MAGIC;
  comm->rank = rank;
  comm->nRanks = nranks;
  comm->cudaDev = -1;
  comm->commHash = chrHash64(id->internal, sizeof(id->internal));
  pthread_mutex_init(&comm->lock, NULL);
  atomic_store(&comm->asyncError, ncclInProgress);
  *out = comm;
  return ncclSuccess;
}

ncclResult_t chrCommInitStart(ncclComm_t* out, int nranks, const ncclUniqueId* id, int rank, const ncclConfig_t* config,
                              int inThread) {
  struct ncclComm* comm = NULL;
  CHECK(commAlloc(&comm, nranks, id, rank, config));
  *out = comm;
  if (!inThread && comm->config.blocking) {
    ncclResult_t res = initSteps(comm, id);
    if (res != ncclSuccess) {
      chrCommNoteError(comm);
      chrCommFree(comm);
      *out = NULL;
      return res;
    }
    atomic_store(&comm->asyncError, ncclSuccess);
    return ncclSuccess;
  }
  struct initJob* job = malloc(sizeof(*job));
  if (job == NULL) {
    chrCommFree(comm);
    *out = NULL;
    return chrFail(ncclSystemError, "out of memory starting communicator init");
  }
  job->comm = comm;
  job->id = *id;
  if (pthread_create(&comm->initThread, NULL, initThreadMain, job) != 0) {
    free(job);
    chrCommFree(comm);
    *out = NULL;
    return chrFail(ncclSystemError, "cannot start the communicator init thread");
  }
  comm->initThreadStarted = 1;
  return ncclInProgress;
}

ncclResult_t chrCommInitWait(struct ncclComm* comm) {
  if (comm->initThreadStarted) {
    pthread_join(comm->initThread, NULL);
    comm->initThreadStarted = 0;
  }
  int state = atomic_load(&comm->asyncError);
  if (state != ncclSuccess) {
    /* The thread's last error is on the init thread: the comm has the copy. */
    chrSetLastError("%s", comm->lastError);
  }
  return (ncclResult_t)state;
}
