/* links.c: see links.h. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include "comm/comm.h"
#include "log/check.h"
#include "log/log.h"
#include "transport/links.h"

struct chrLink* chrLinkFind(struct ncclComm* comm, int channel, int peer, int isSend) {
  if (channel < 0 || channel >= CHR_MAX_CHANNELS) return NULL;
  struct chrChannel* ch = &comm->channels[channel];
  if (isSend && peer == ch->ringNext) return ch->ringSend;
  if (!isSend && peer == ch->ringPrev) return ch->ringRecv;
  return NULL;
}

struct connectJob {
  struct ncclComm* comm;
  int nChannels; /* ring channels needed */
  ncclResult_t res;
  char error[1024];
  pthread_t thread;
};

static void* connectThread(void* arg) {
  struct connectJob* job = arg;
  job->res = chrTransportConnectRing(job->comm, job->nChannels);
  snprintf(job->error, sizeof(job->error), "%s", chrThreadLastError());
  return NULL;
}

/* What comm needs: ring links on channels [0, *nChannels); an error for links that are not ring links. */
static ncclResult_t needs(struct chrCollTask* list, struct ncclComm* comm, int* nChannels) {
  *nChannels = 0;
  for (struct chrCollTask* t = list; t; t = t->next) {
    if (t->comm != comm) continue;
    for (int c = 0; c < t->nChannels; c++) {
      struct chrLinkUse uses[CHR_TASK_MAX_LINKS];
      int n = t->algo->links(t, c, uses);
      for (int i = 0; i < n; i++) {
        const struct chrChannel* ch = &comm->channels[c];
        int ring = uses[i].isSend ? uses[i].peer == ch->ringNext : uses[i].peer == ch->ringPrev;
        if (!ring)
          return chrFail(ncclInvalidUsage, "%s needs a %s link %s rank %d: only ring links exist yet", t->algo->name,
                         uses[i].isSend ? "send" : "recv", uses[i].isSend ? "to" : "from", uses[i].peer);
        if (c + 1 > *nChannels) *nChannels = c + 1;
      }
    }
  }
  return ncclSuccess;
}

ncclResult_t chrLinksConnectForTasks(struct chrCollTask* list) {
  int nTasks = 0;
  for (struct chrCollTask* t = list; t; t = t->next) nTasks++;
  struct connectJob* jobs = calloc((size_t)(nTasks ? nTasks : 1), sizeof(*jobs));
  if (jobs == NULL) return chrFail(ncclSystemError, "out of memory connecting communicators");
  int nJobs = 0;
  ncclResult_t first = ncclSuccess;
  for (struct chrCollTask* t = list; t && first == ncclSuccess; t = t->next) {
    int seen = 0;
    for (int j = 0; j < nJobs; j++) seen |= jobs[j].comm == t->comm;
    for (struct chrCollTask* u = list; u != t; u = u->next) seen |= u->comm == t->comm;
    if (seen) continue;
    int nCh = 0;
    first = needs(list, t->comm, &nCh);
    if (first != ncclSuccess) break;
    int missing = 0;
    for (int c = 0; c < nCh; c++) missing |= !t->comm->channels[c].ringSend || !t->comm->channels[c].ringRecv;
    if (missing) { jobs[nJobs].comm = t->comm; jobs[nJobs].nChannels = nCh; nJobs++; }
  }
  if (first == ncclSuccess && nJobs == 1) {
    first = chrTransportConnectRing(jobs[0].comm, jobs[0].nChannels);
    if (first != ncclSuccess) chrCommSetAsyncError(jobs[0].comm, first);
  } else if (first == ncclSuccess && nJobs > 1) {
    int started = 0;
    for (; started < nJobs; started++)
      if (pthread_create(&jobs[started].thread, NULL, connectThread, &jobs[started]) != 0) break;
    if (started < nJobs) first = chrFail(ncclSystemError, "cannot start a thread to connect communicator %d", started);
    for (int j = 0; j < started; j++) {
      pthread_join(jobs[j].thread, NULL);
      if (jobs[j].res == ncclSuccess) continue;
      chrSetLastError("%s", jobs[j].error);
      chrCommSetAsyncError(jobs[j].comm, jobs[j].res);
      if (first == ncclSuccess) first = jobs[j].res;
    }
  }
  free(jobs);
  return first;
}
