/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * register.c: the list of a communicator's registrations (comm/register.h).
 */
#include <pthread.h>
#include <stdlib.h>
#include "comm/register.h"
#include "commstate/comm.h"
#include "log/check.h"
#include "log/log.h"

ncclResult_t chrRegAdd(struct ncclComm* comm, void* buff, size_t size, void** handle) {
  struct chrRegHandle* h = malloc(sizeof(*h));
  if (h == NULL) return chrFail(ncclSystemError, "ncclCommRegister: out of memory");
  h->buff = buff;
  h->size = size;
  pthread_mutex_lock(&comm->lock);
  h->next = comm->regs;
  comm->regs = h;
  pthread_mutex_unlock(&comm->lock);
  *handle = h;
  return ncclSuccess;
}

ncclResult_t chrRegRemove(struct ncclComm* comm, void* handle) {
  struct chrRegHandle* found = NULL;
  pthread_mutex_lock(&comm->lock);
  for (struct chrRegHandle** link = &comm->regs; *link != NULL; link = &(*link)->next)
    if (*link == handle) {
      found = *link;
      *link = found->next;
      break;
    }
  pthread_mutex_unlock(&comm->lock);
  if (found == NULL)
    return chrFail(ncclInvalidArgument,
                   "ncclCommDeregister: handle %p is not a registration of this communicator (never given by its "
                   "ncclCommRegister, already deregistered, or another communicator's)",
                   handle);
  free(found);
  return ncclSuccess;
}

void chrRegFreeAll(struct ncclComm* comm) {
  struct chrRegHandle* h = comm->regs;
  comm->regs = NULL;
  while (h != NULL) {
    struct chrRegHandle* next = h->next;
    free(h);
    h = next;
  }
}
