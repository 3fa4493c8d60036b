/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * colls.c: one definition per collective: element counts per size step and the in-place layout,
 * the bus-bandwidth factor, the call itself, and where each output element's expected value comes
 * from (nccl-tests' definitions, NCCL's in-place layouts).
 */
#include <string.h>

#include "perf.h"

/* Per-rank count b = floor(N / n), rounded down to a multiple of 16 bytes' worth of elements. */
static size_t perRankCount(size_t elems, int eltSize, int nranks) {
  size_t b = elems / (size_t)nranks;
  size_t align = eltSize >= 16 ? 1 : (size_t)(16 / eltSize);
  return b - b % align;
}

static double factorOne(int n) { (void)n; return 1.0; }
static double factorAllReduce(int n) { return 2.0 * (n - 1) / n; }
static double factorNm1OverN(int n) { return (double)(n - 1) / n; }

/* --- shapes ------------------------------------------------------------------------------------- */

/* count = N elements; send and receive N each (allreduce, broadcast, reduce, sendrecv). */
static void shapeFull(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  memset(s, 0, sizeof(*s));
  s->count = s->sendElems = s->recvElems = elems;
  s->algBytes = s->sizeBytes = elems * (size_t)eltSize;
}

static void shapeAllGather(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  size_t b = perRankCount(elems, eltSize, nranks);
  memset(s, 0, sizeof(*s));
  s->count = b;
  s->sendElems = b;
  s->recvElems = b * (size_t)nranks;
  s->sendInplaceOff = (size_t)rank * b; /* in place: send == recv + rank*sendcount */
  s->algBytes = s->sizeBytes = b * (size_t)nranks * (size_t)eltSize;
}

static void shapeReduceScatter(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  size_t b = perRankCount(elems, eltSize, nranks);
  memset(s, 0, sizeof(*s));
  s->count = b;
  s->sendElems = b * (size_t)nranks;
  s->recvElems = b;
  s->recvInplaceOff = (size_t)rank * b; /* in place: recv == send + rank*recvcount */
  s->algBytes = s->sizeBytes = b * (size_t)nranks * (size_t)eltSize;
}

static void shapeAlltoAll(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  size_t b = perRankCount(elems, eltSize, nranks);
  memset(s, 0, sizeof(*s));
  s->count = b;
  s->sendElems = s->recvElems = b * (size_t)nranks;
  s->algBytes = s->sizeBytes = b * (size_t)nranks * (size_t)eltSize;
}

static void shapeGather(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  size_t b = perRankCount(elems, eltSize, nranks);
  memset(s, 0, sizeof(*s));
  s->count = b;
  s->sendElems = b;
  s->recvElems = b * (size_t)nranks; /* used on the root only */
  s->sendInplaceOff = (size_t)rank * b; /* on the root: send == recv + root*count */
  s->algBytes = s->sizeBytes = b * (size_t)nranks * (size_t)eltSize;
}

static void shapeScatter(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s) {
  size_t b = perRankCount(elems, eltSize, nranks);
  memset(s, 0, sizeof(*s));
  s->count = b;
  s->sendElems = b * (size_t)nranks; /* read on the root only */
  s->recvElems = b;
  s->recvInplaceOff = (size_t)rank * b; /* on the root: recv == send + root*count */
  s->algBytes = s->sizeBytes = b * (size_t)nranks * (size_t)eltSize;
}

/* --- calls -------------------------------------------------------------------------------------- */

static ncclResult_t runAllReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                 int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclAllReduce(s, r, count, t, op, comm, st);
}
static ncclResult_t runAllGather(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                 int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclAllGather(s, r, count, t, comm, st);
}
static ncclResult_t runReduceScatter(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                                     int root, int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclReduceScatter(s, r, count, t, op, comm, st);
}
static ncclResult_t runBroadcast(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                 int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclBroadcast(s, r, count, t, root, comm, st);
}
static ncclResult_t runReduce(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                              int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclReduce(s, r, count, t, op, root, comm, st);
}
static ncclResult_t runAlltoAll(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclAlltoAll(s, r, count, t, comm, st);
}
static ncclResult_t runGather(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                              int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclGather(s, r, count, t, root, comm, st);
}
static ncclResult_t runScatter(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                               int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  return ncclScatter(s, r, count, t, root, comm, st);
}
/* Ring shift: send to the next rank, receive from the previous one, both inside one group. */
static ncclResult_t runSendRecv(const void* s, void* r, size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
                                int rank, int nranks, ncclComm_t comm, cudaStream_t st) {
  ncclResult_t res = ncclGroupStart();
  if (res != ncclSuccess) return res;
  ncclResult_t sres = ncclSend(s, count, t, (rank + 1) % nranks, comm, st);
  ncclResult_t rres = ncclRecv(r, count, t, (rank - 1 + nranks) % nranks, comm, st);
  res = ncclGroupEnd();
  if (sres != ncclSuccess) return sres;
  if (rres != ncclSuccess) return rres;
  return res;
}

/* --- expected data ------------------------------------------------------------------------------ */

static chrPerfSrcKind srcReduceSame(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *si = j;
  return PERF_SRC_REDUCE;
}
static chrPerfSrcKind srcAllGather(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *sr = (int)(j / s->count);
  *si = j % s->count;
  return PERF_SRC_COPY;
}
static chrPerfSrcKind srcReduceScatter(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr,
                                       size_t* si) {
  *si = (size_t)rank * s->count + j;
  return PERF_SRC_REDUCE;
}
static chrPerfSrcKind srcBroadcast(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *sr = root;
  *si = j;
  return PERF_SRC_COPY;
}
static chrPerfSrcKind srcReduce(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *si = j;
  return rank == root ? PERF_SRC_REDUCE : PERF_SRC_NONE;
}
static chrPerfSrcKind srcAlltoAll(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *sr = (int)(j / s->count);
  *si = (size_t)rank * s->count + j % s->count;
  return PERF_SRC_COPY;
}
static chrPerfSrcKind srcGather(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  if (rank != root) return PERF_SRC_NONE;
  *sr = (int)(j / s->count);
  *si = j % s->count;
  return PERF_SRC_COPY;
}
static chrPerfSrcKind srcScatter(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *sr = root;
  *si = (size_t)rank * s->count + j;
  return PERF_SRC_COPY;
}
static chrPerfSrcKind srcSendRecv(const chrPerfShape* s, int rank, int n, int root, size_t j, int* sr, size_t* si) {
  *sr = (rank - 1 + n) % n;
  *si = j;
  return PERF_SRC_COPY;
}

/* alltoall and sendrecv have no in-place form in NCCL's API (NCCL defines none): with send == recv a
 * rank's buffer is overwritten by one peer while another still reads it. NVIDIA's NCCL 2.28.3 on two
 * H200s gives wrong in-place data for both, so their in-place half is timed but not checked. */
static const chrPerfColl colls[] = {
    {"allreduce", "all_reduce_perf", 1, 0, shapeFull, factorAllReduce, runAllReduce, srcReduceSame, "ncclAllReduce", 1},
    {"allgather", "all_gather_perf", 0, 0, shapeAllGather, factorNm1OverN, runAllGather, srcAllGather, "ncclAllGather",
     1},
    {"reducescatter", "reduce_scatter_perf", 1, 0, shapeReduceScatter, factorNm1OverN, runReduceScatter,
     srcReduceScatter, "ncclReduceScatter", 1},
    {"broadcast", "broadcast_perf", 0, 1, shapeFull, factorOne, runBroadcast, srcBroadcast, "ncclBroadcast", 1},
    {"reduce", "reduce_perf", 1, 1, shapeFull, factorOne, runReduce, srcReduce, "ncclReduce", 1},
    {"alltoall", "alltoall_perf", 0, 0, shapeAlltoAll, factorNm1OverN, runAlltoAll, srcAlltoAll, "ncclAlltoAll", 0},
    {"gather", "gather_perf", 0, 1, shapeGather, factorNm1OverN, runGather, srcGather, "ncclGather", 1},
    {"scatter", "scatter_perf", 0, 1, shapeScatter, factorNm1OverN, runScatter, srcScatter, "ncclScatter", 1},
    {"sendrecv", "sendrecv_perf", 0, 0, shapeFull, factorOne, runSendRecv, srcSendRecv, "ncclSend/ncclRecv", 0},
};

const chrPerfColl* chrPerfFindColl(const char* name) {
  static const struct {
    const char* alias;
    const char* name;
  } aliases[] = {
      {"all_reduce", "allreduce"},         {"all_gather", "allgather"}, {"reduce_scatter", "reducescatter"},
      {"bcast", "broadcast"},              {"all_to_all", "alltoall"},  {"send_recv", "sendrecv"},
  };
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++)
    if (strcmp(name, aliases[i].alias) == 0) name = aliases[i].name;
  for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++) {
    if (strcmp(name, colls[i].name) == 0 || strcmp(name, colls[i].testName) == 0) return &colls[i];
  }
  return NULL;
}

void chrPerfListColls(FILE* f) {
  for (size_t i = 0; i < sizeof(colls) / sizeof(colls[0]); i++)
    fprintf(f, "%s%s", i ? " " : "", colls[i].name);
}
