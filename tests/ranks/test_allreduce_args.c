/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_allreduce_args: argument checks of ncclAllReduce (and of the PreMulSum op calls it depends
 * on) on a 1-rank communicator. Each bad call must return ncclInvalidArgument and leave a non-empty
 * ncclGetLastError text; a correct call afterwards must still work.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "launch.h"

static int failures;

static void expectInvalid(ncclComm_t comm, const char* what, ncclResult_t res) {
  const char* last = ncclGetLastError(comm);
  if (res != ncclInvalidArgument) {
    fprintf(stderr, "%s: returned %d (%s), expected ncclInvalidArgument\n", what, (int)res, ncclGetErrorString(res));
    failures++;
  } else if (last == NULL || last[0] == '\0') {
    fprintf(stderr, "%s: ncclInvalidArgument but ncclGetLastError is empty\n", what);
    failures++;
  }
}

static void expectSuccess(ncclComm_t comm, const char* what, ncclResult_t res) {
  if (res != ncclSuccess) {
    const char* last = ncclGetLastError(comm);
    fprintf(stderr, "%s: returned %d (%s): %s\n", what, (int)res, ncclGetErrorString(res), last ? last : "");
    failures++;
  }
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t comm = NULL;
  ncclResult_t res = ncclCommInitRank(&comm, nranks, *id, rank);
  if (res != ncclSuccess) {
    fprintf(stderr, "ncclCommInitRank: %s: %s\n", ncclGetErrorString(res), ncclGetLastError(NULL));
    return 1;
  }
  float send[8] = {1, 2, 3, 4, 5, 6, 7, 8}, recv[8];

  expectInvalid(NULL, "NULL comm", ncclAllReduce(send, recv, 8, ncclFloat32, ncclSum, NULL, NULL));
  expectInvalid(comm, "datatype ncclNumTypes",
                ncclAllReduce(send, recv, 8, (ncclDataType_t)ncclNumTypes, ncclSum, comm, NULL));
  expectInvalid(comm, "datatype -1", ncclAllReduce(send, recv, 8, (ncclDataType_t)-1, ncclSum, comm, NULL));
  expectInvalid(comm, "op ncclNumOps (no dynamic op created)",
                ncclAllReduce(send, recv, 8, ncclFloat32, (ncclRedOp_t)ncclNumOps, comm, NULL));
  expectInvalid(comm, "op 1000", ncclAllReduce(send, recv, 8, ncclFloat32, (ncclRedOp_t)1000, comm, NULL));
  expectInvalid(comm, "op -1", ncclAllReduce(send, recv, 8, ncclFloat32, (ncclRedOp_t)-1, comm, NULL));
  /* count * sizeof(float) does not fit in size_t */
  expectInvalid(comm, "count overflowing size_t bytes",
                ncclAllReduce(send, recv, SIZE_MAX / 2, ncclFloat32, ncclSum, comm, NULL));
  expectInvalid(comm, "NULL sendbuff", ncclAllReduce(NULL, recv, 8, ncclFloat32, ncclSum, comm, NULL));
  expectInvalid(comm, "NULL recvbuff", ncclAllReduce(send, NULL, 8, ncclFloat32, ncclSum, comm, NULL));

  /* PreMulSum: a NULL scalar, a bad type; destroying a built-in op or a destroyed op. */
  ncclRedOp_t op;
  float two = 2;
  expectInvalid(comm, "PreMulSum NULL scalar",
                ncclRedOpCreatePreMulSum(&op, NULL, ncclFloat32, ncclScalarHostImmediate, comm));
  expectInvalid(comm, "PreMulSum bad datatype",
                ncclRedOpCreatePreMulSum(&op, &two, (ncclDataType_t)ncclNumTypes, ncclScalarHostImmediate, comm));
  expectInvalid(comm, "ncclRedOpDestroy(ncclSum)", ncclRedOpDestroy(ncclSum, comm));
  res = ncclRedOpCreatePreMulSum(&op, &two, ncclFloat32, ncclScalarHostImmediate, comm);
  expectSuccess(comm, "PreMulSum create", res);
  if (res == ncclSuccess) {
    /* An op made for float used with another type is a bad argument too. */
    int32_t isend[8] = {0}, irecv[8];
    expectInvalid(comm, "PreMulSum op used with another datatype",
                  ncclAllReduce(isend, irecv, 8, ncclInt32, op, comm, NULL));
    expectSuccess(comm, "PreMulSum allreduce", ncclAllReduce(send, recv, 8, ncclFloat32, op, comm, NULL));
    if (recv[0] != 2 || recv[7] != 16) {
      fprintf(stderr, "PreMulSum x2 on one rank: got %g..%g, expected 2..16\n", recv[0], recv[7]);
      failures++;
    }
    expectSuccess(comm, "ncclRedOpDestroy", ncclRedOpDestroy(op, comm));
    expectInvalid(comm, "ncclRedOpDestroy twice", ncclRedOpDestroy(op, comm));
  }

  /* Count 0 is valid, with or without buffers; the comm still works after all the errors above. */
  expectSuccess(comm, "count 0", ncclAllReduce(send, recv, 0, ncclFloat32, ncclSum, comm, NULL));
  expectSuccess(comm, "count 0, NULL buffers", ncclAllReduce(NULL, NULL, 0, ncclFloat32, ncclSum, comm, NULL));
  memset(recv, 0, sizeof(recv));
  expectSuccess(comm, "good call", ncclAllReduce(send, recv, 8, ncclFloat32, ncclSum, comm, NULL));
  if (memcmp(send, recv, sizeof(send)) != 0) {
    fprintf(stderr, "good call on one rank: result differs from the input\n");
    failures++;
  }
  if (strstr(ncclGetErrorString(ncclInvalidArgument), "invalid argument") == NULL) {
    fprintf(stderr, "ncclGetErrorString(ncclInvalidArgument) = \"%s\"\n", ncclGetErrorString(ncclInvalidArgument));
    failures++;
  }
  expectSuccess(comm, "ncclCommDestroy", ncclCommDestroy(comm));
  return failures ? 1 : 0;
}

int main(void) { return chrLaunchRanks(1, 1, 60, rankMain, NULL); }
