/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * destroy.c: releasing a communicator. Never talks to peers, so it works when they are dead.
 */
#include <stdlib.h>
#include "bootstrap/bootstrap.h"
#include "comm/lifecycle.h"
#include "comm/register.h"
#include "comm/window.h"
#include "commstate/comm.h"
#include "cuda/dev_state.h"
#include "exec/links.h"
#include "log/log.h"
#include "plan/plan.h"
#include "plugin/net_plugin.h"
#include "profile/profile.h"

ncclResult_t chrCommFree(struct ncclComm* comm) {
  if (comm == NULL) return ncclSuccess;
  if (comm->initThreadStarted) comm->abortFlag = 1; /* makes a bootstrap still waiting give up quickly */
  chrCommReapInitThread(comm, 1);
  chrDevCommDetach(comm); /* waits for this rank's GPU work first */
  if (comm->directSteps)
    INFO(NCCL_NET, "comm %p rank %d: %llu steps moved straight from or into user buffers", (void*)comm,
         comm->rank, (unsigned long long)comm->directSteps);
  chrLinksCloseAll(comm);
  chrProfDetach(comm);      /* finalize; before the net plugin, whose library may carry it */
  chrPlanTunerDetach(comm); /* before the net plugin: the tuner may live in its library */
  if (comm->net) chrNetClose(comm->net);
  if (comm->bootstrap) chrBootstrapClose(comm->bootstrap);
  chrWindowFreeAll(comm); /* the windows the program left registered */
  chrRegFreeAll(comm);    /* and the buffers */
  free(comm->sigSent);
  free(comm->sigAwaited);
  free(comm->peers);
  free(comm->nodeOfRank);
  free(comm->ringOrder);
  for (int k = 0; k < CHR_P2P_CONNS; k++) {
    free(comm->p2pSend[k]);
    free(comm->p2pRecv[k]);
  }
  pthread_mutex_destroy(&comm->lock);
  pthread_mutex_destroy(&comm->initLock);
  comm->magic = CHR_COMM_DEAD_MAGIC;
  INFO(NCCL_INIT | NCCL_DESTROY, "comm %p rank %d freed", (void*)comm, comm->rank);
  free(comm);
  return ncclSuccess;
}
