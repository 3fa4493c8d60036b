/* SPDX-License-Identifier: BSD-3-Clause */
/* consumer.c: a program built against an installed Chorus (tests/install/test_install.sh), as any
 * NCCL program is: nccl.h and -lnccl. One rank, host buffers: an all-reduce must return its input. */
#include <stdio.h>
#include "nccl.h"

int main(void) {
  int version = 0;
  if (ncclGetVersion(&version) != ncclSuccess || version != NCCL_VERSION_CODE) {
    fprintf(stderr, "consumer: ncclGetVersion gave %d, the header says %d\n", version, NCCL_VERSION_CODE);
    return 1;
  }
  ncclComm_t comm;
  if (ncclCommInitAll(&comm, 1, NULL) != ncclSuccess) {
    fprintf(stderr, "consumer: ncclCommInitAll: %s\n", ncclGetLastError(NULL));
    return 1;
  }
  float in[4] = {1, 2, 3, 4}, out[4] = {0};
  ncclResult_t res = ncclAllReduce(in, out, 4, ncclFloat, ncclSum, comm, NULL);
  ncclCommDestroy(comm);
  for (int i = 0; i < 4; i++)
    if (res != ncclSuccess || out[i] != in[i]) {
      fprintf(stderr, "consumer: all-reduce gave %d, out[%d] = %g\n", (int)res, i, out[i]);
      return 1;
    }
  printf("consumer: NCCL %d, all-reduce ok\n", version);
  return 0;
}
