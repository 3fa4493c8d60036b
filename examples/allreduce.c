/* SPDX-License-Identifier: BSD-3-Clause */
/* allreduce.c: the smallest NCCL program, built against Chorus as against NCCL (nccl.h, -lnccl; the
 * README's first recipe, tests/install/test_install.sh). One rank, host buffers: the all-reduce
 * must return its input. */
#include <stdio.h>
#include "nccl.h"

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) {
    fprintf(stderr, "allreduce: ncclGetVersion gave %d, the header says %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  ncclComm_t comm;
  if (ncclCommInitAll(&comm, 1, NULL) != ncclSuccess) {
    fprintf(stderr, "allreduce: ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  ncclResult_t res = ncclAllReduce(in, out, 4, ncclFloat, ncclSum, comm, NULL);
  ncclCommDestroy(comm);
  for (int i = 0; i < 4; i++)
    if (res != ncclSuccess || out[i] != in[i]) {
      fprintf(stderr, "allreduce: all-reduce gave %d, out[%d] = %g\n", (int)res, i, out[i]);
      return 1;
    }
  printf("allreduce: NCCL %d, all-reduce ok\n", version);
  return 0;
}
