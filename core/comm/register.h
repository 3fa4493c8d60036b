/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * register.h: the buffers a communicator's rank registered (ncclCommRegister). Host buffers need no
 * registration for the host executor, so a handle only records the range; the comm keeps its handles
 * in a list (comm->regs, under comm->lock), so a deregister can tell a handle it gave from any other
 * pointer before it reads one, and those left registered are freed with the comm.
 */
#ifndef CHORUS_COMM_REGISTER_H_
#define CHORUS_COMM_REGISTER_H_

#include <stddef.h>
#include "nccl.h"

struct ncclComm;

struct chrRegHandle {
  struct chrRegHandle* next;
  void* buff;
  size_t size;
};

/* Record buff..buff+size for comm; *handle is what ncclCommRegister hands out. */
ncclResult_t chrRegAdd(struct ncclComm* comm, void* buff, size_t size, void** handle);
/* Forget and free handle when comm gave it and still holds it; else ncclInvalidArgument, naming why. */
ncclResult_t chrRegRemove(struct ncclComm* comm, void* handle);
/* Free every handle comm still holds (comm/destroy.c). */
void chrRegFreeAll(struct ncclComm* comm);

#endif /* CHORUS_COMM_REGISTER_H_ */
