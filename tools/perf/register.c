/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * register.c: chorus-perf -R, nccl-tests' local registration of the send and receive buffers.
 * 1: ncclCommRegister (a local handle per buffer); 2: ncclCommWindowRegister with
 * NCCL_WIN_COLL_SYMMETRIC (collective: every rank registers buffers of the same size, in the same
 * order). NVIDIA's NCCL wants cuMem memory in a symmetric window: pair -R 2 with -M vmm there.
 */
#include <stdio.h>
#include "perf.h"

static int failed(int rank, const char* call, ncclResult_t res) {
  fprintf(stderr, "chorus-perf: rank %d: %s: %s (%s)\n", rank, call, ncclGetErrorString(res), ncclGetLastError(NULL));
  return 1;
}

int chrPerfBuffersRegister(chrPerfBuffers* b, ncclComm_t comm, int mode, int rank) {
  void* bufs[2] = {b->send, b->recv};
  const size_t sizes[2] = {b->sendBytes, b->recvBytes};
  b->registerMode = mode;
  for (int k = 0; k < 2 && mode != 0; k++) {
    ncclResult_t res = mode == 1 ? ncclCommRegister(comm, bufs[k], sizes[k], &b->regHandles[k])
                                 : ncclCommWindowRegister(comm, bufs[k], sizes[k], &b->windows[k], NCCL_WIN_COLL_SYMMETRIC);
    if (res != ncclSuccess) return failed(rank, mode == 1 ? "ncclCommRegister" : "ncclCommWindowRegister", res);
  }
  return 0;
}

int chrPerfBuffersDeregister(chrPerfBuffers* b, ncclComm_t comm, int rank) {
  int rc = 0;
  for (int k = 0; k < 2; k++) {
    ncclResult_t res = ncclSuccess;
    if (b->regHandles[k]) res = ncclCommDeregister(comm, b->regHandles[k]);
    if (res != ncclSuccess) rc = failed(rank, "ncclCommDeregister", res);
    res = ncclSuccess;
    if (b->windows[k]) res = ncclCommWindowDeregister(comm, b->windows[k]);
    if (res != ncclSuccess) rc = failed(rank, "ncclCommWindowDeregister", res);
    b->regHandles[k] = NULL;
    b->windows[k] = NULL;
  }
  return rc;
}
