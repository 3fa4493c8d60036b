/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * coll_api.c: the collective entry points. Every argument is checked here, before anything is
 * queued; a bad one gets ncclInvalidArgument and a last-error text that names the call and the value.
 */
#include <stdint.h>
#include <stdlib.h>
#include "api/api.h"
#include "commstate/comm.h"
#include "cuda/cuda_driver.h"
#include "cuda/dev_state.h"
#include "cuda/device_lib.h"
#include "exec/reduce.h"
#include "group/group.h"
#include "group/task_pool.h"
#include "hostdev/task.h"
#include "log/check.h"
#include "log/log.h"
#include "profile/profile.h"

struct collArgs {
  const char* name;
  ncclFunc_t func;
  const void* sendbuff;
  void* recvbuff;
  size_t count;
  ncclDataType_t type;
  ncclRedOp_t op;
  int hasOp;
  int root;
  int hasRoot;
  size_t sendElems; /* elements read from sendbuff, for overflow checks */
  size_t recvElems; /* elements written to recvbuff */
  ncclComm_t comm;
  cudaStream_t stream;
  /* A send or receive of all-to-all, gather or scatter: that call's function, and whether this task
   * is its first (0 for calls of their own). */
  ncclFunc_t partOf;
  int firstPart;
};

static ncclResult_t checkOp(const struct collArgs* a) {
  int op = (int)a->op;
  if (op >= 0 && op < ncclNumOps) return ncclSuccess;
  int idx = op - ncclNumOps;
  if (op < 0 || idx >= CHR_MAX_USER_REDOPS || !a->comm->userOps[idx].inUse)
    return chrFail(ncclInvalidArgument, "%s: op %d is not a valid reduction op on this communicator", a->name, op);
  if (a->comm->userOps[idx].type != a->type)
    return chrFail(ncclInvalidArgument, "%s: op %d was created for datatype %d, used with datatype %d", a->name, op,
                   (int)a->comm->userOps[idx].type, (int)a->type);
  return ncclSuccess;
}

/* Host buffers run on the host executor; GPU device buffers run as kernels (the device library)
 * when every rank of the comm is on this host with a GPU (cuda/dev_state.h). Without the GPU path a device buffer is
 * refused: the host executor would read it with memcpy and crash. Without a CUDA driver this costs
 * one branch per buffer (cuda/cuda_driver.h). */
static ncclResult_t classifyBuffers(const struct collArgs* a, int* onDevice) {
  static const char* const hostOnly =
      "is GPU device memory; this build of Chorus runs collectives on host buffers only (GPU path not built yet)";
  *onDevice = 0;
  int sendIsDevice = a->sendElems > 0 && chrCudaPtrIsDevice(a->sendbuff);
  /* In place: the same buffer was just asked about. */
  int sameAsSend = a->sendElems > 0 && (const void*)a->recvbuff == a->sendbuff;
  int recvIsDevice = a->recvElems > 0 && (sameAsSend ? sendIsDevice : chrCudaPtrIsDevice(a->recvbuff));
  if (!sendIsDevice && !recvIsDevice) return ncclSuccess;
  const char* which = sendIsDevice ? "sendbuff" : "recvbuff";
  const void* p = sendIsDevice ? a->sendbuff : (const void*)a->recvbuff;
  if (chrDevLibGet() == NULL) return chrFail(ncclInvalidUsage, "%s: %s %p %s", a->name, which, p, hostOnly);
  if (!a->comm->devLocal && !a->comm->devIpc)
    return chrFail(ncclInvalidUsage, "%s: %s %p is GPU device memory: %s", a->name, which, p, CHR_DEV_NOT_LOCAL_MSG);
  if (a->sendElems > 0 && a->recvElems > 0 && sendIsDevice != recvIsDevice)
    return chrFail(ncclInvalidUsage, "%s: sendbuff %p is %s memory but recvbuff %p is %s memory (both must be GPU "
                   "device memory, or both host memory)", a->name, a->sendbuff, sendIsDevice ? "GPU device" : "host",
                   (void*)a->recvbuff, recvIsDevice ? "GPU device" : "host");
  *onDevice = 1;
  return ncclSuccess;
}

static ncclResult_t checkArgs(const struct collArgs* a, size_t* typeSize, int* onDevice) {
  CHECK(chrCommCheckReady(a->comm, a->name));
  if ((int)a->type < 0 || (int)a->type >= ncclNumTypes)
    return chrFail(ncclInvalidArgument, "%s: datatype %d is invalid (valid: 0..%d)", a->name, (int)a->type, ncclNumTypes - 1);
  *typeSize = chrTypeSize(a->type);
  if (a->hasOp) CHECK(checkOp(a));
  if (a->hasRoot && (a->root < 0 || a->root >= a->comm->nRanks))
    return chrFail(ncclInvalidArgument, "%s: %s %d is out of range [0, %d)", a->name,
                   a->func == ncclFuncSend || a->func == ncclFuncRecv ? "peer" : "root", a->root, a->comm->nRanks);
  size_t maxElems = a->sendElems > a->recvElems ? a->sendElems : a->recvElems;
  if (a->count > SIZE_MAX / (size_t)a->comm->nRanks || maxElems > SIZE_MAX / *typeSize)
    return chrFail(ncclInvalidArgument, "%s: count %zu overflows the addressable size", a->name, a->count);
  if (a->sendElems > 0 && a->sendbuff == NULL)
    return chrFail(ncclInvalidArgument, "%s: sendbuff is NULL with count %zu", a->name, a->count);
  if (a->recvElems > 0 && a->recvbuff == NULL)
    return chrFail(ncclInvalidArgument, "%s: recvbuff is NULL with count %zu", a->name, a->count);
  CHECK(classifyBuffers(a, onDevice));
  return ncclSuccess;
}

static ncclResult_t enqueueColl(const struct collArgs* a) {
  size_t typeSize = 0;
  int onDevice = 0;
  ncclResult_t res = checkArgs(a, &typeSize, &onDevice);
  if (res != ncclSuccess) goto fail;
  struct chrCollTask* t = chrTaskNew();
  if (t == NULL) { res = chrFail(ncclSystemError, "%s: out of memory queueing the call", a->name); goto fail; }
  t->comm = a->comm;
  t->func = a->func;
  t->sendbuff = a->sendbuff;
  t->recvbuff = a->recvbuff;
  t->count = a->count;
  t->sendElems = a->sendElems;
  t->recvElems = a->recvElems;
  t->type = a->type;
  t->typeSize = typeSize;
  t->userOp = a->hasOp ? a->op : ncclSum;
  t->root = a->hasRoot ? a->root : -1;
  t->onDevice = onDevice;
  t->stream = a->stream;
  t->apiFunc = a->partOf ? a->partOf : a->func;
  t->callStart = a->partOf ? a->firstPart : 1;
  if (chrProfOn(CHR_PROF_NEED_API)) chrProfApiStart(t, chrGroupDepth());
  return chrGroupEnqueue(t); /* planned with the rest of its group, at the group's end */
fail:
  if (a->comm && a->comm->magic == CHR_COMM_MAGIC) chrCommNoteError(a->comm);
  chrGroupNoteError(res);
  return res;
}

NCCL_API(ncclResult_t, ncclAllReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclAllReduce", ncclFuncAllReduce, sendbuff, recvbuff, count, datatype, op, 1, 0, 0,
                       count, count, comm, stream};
  return enqueueColl(&a);
}

NCCL_API(ncclResult_t, ncclBroadcast, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         int root, ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclBroadcast", ncclFuncBroadcast, sendbuff, recvbuff, count, datatype, ncclSum, 0, root, 1,
                       0, count, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && comm->rank == root) a.sendElems = count;
  return enqueueColl(&a);
}

NCCL_API(ncclResult_t, ncclBcast, void* buff, size_t count, ncclDataType_t datatype, int root, ncclComm_t comm,
         cudaStream_t stream) {
  return pncclBroadcast(buff, buff, count, datatype, root, comm, stream);
}

NCCL_API(ncclResult_t, ncclReduce, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclReduce", ncclFuncReduce, sendbuff, recvbuff, count, datatype, op, 1, root, 1,
                       count, 0, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && comm->rank == root) a.recvElems = count;
  return enqueueColl(&a);
}

NCCL_API(ncclResult_t, ncclAllGather, const void* sendbuff, void* recvbuff, size_t sendcount, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclAllGather", ncclFuncAllGather, sendbuff, recvbuff, sendcount, datatype, ncclSum, 0, 0, 0,
                       sendcount, 0, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && sendcount <= SIZE_MAX / (size_t)comm->nRanks)
    a.recvElems = sendcount * (size_t)comm->nRanks;
  return enqueueColl(&a);
}

NCCL_API(ncclResult_t, ncclReduceScatter, const void* sendbuff, void* recvbuff, size_t recvcount,
         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclReduceScatter", ncclFuncReduceScatter, sendbuff, recvbuff, recvcount, datatype, op, 1, 0, 0,
                       0, recvcount, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && recvcount <= SIZE_MAX / (size_t)comm->nRanks)
    a.sendElems = recvcount * (size_t)comm->nRanks;
  return enqueueColl(&a);
}

/* All-to-all, gather and scatter are groups of sends and receives (self included), checked as one
 * call first so that a bad argument names the collective. */
static ncclResult_t checkComposite(const struct collArgs* a) {
  size_t typeSize;
  int onDevice;
  ncclResult_t res = checkArgs(a, &typeSize, &onDevice);
  if (res != ncclSuccess) {
    if (a->comm && a->comm->magic == CHR_COMM_MAGIC) chrCommNoteError(a->comm);
    chrGroupNoteError(res);
  }
  return res;
}

/* partOf: the all-to-all, gather or scatter this send or receive belongs to (0: a call of its own);
 * first: it is that call's first task. */
static ncclResult_t p2pPart(const char* name, ncclFunc_t func, const void* buff, size_t count, ncclDataType_t type,
                            int peer, ncclComm_t comm, cudaStream_t stream, ncclFunc_t partOf, int first) {
  struct collArgs a = {name, func, func == ncclFuncSend ? buff : NULL, func == ncclFuncRecv ? (void*)buff : NULL,
                       count, type, ncclSum, 0, peer, 1, func == ncclFuncSend ? count : 0,
                       func == ncclFuncRecv ? count : 0, comm, stream, partOf, first};
  return enqueueColl(&a);
}

static ncclResult_t p2pTask(const char* name, ncclFunc_t func, const void* buff, size_t count, ncclDataType_t type,
                            int peer, ncclComm_t comm, cudaStream_t stream) {
  return p2pPart(name, func, buff, count, type, peer, comm, stream, (ncclFunc_t)0, 0);
}

NCCL_API(ncclResult_t, ncclAlltoAll, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype,
         ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclAlltoAll", ncclFuncAlltoAll, sendbuff, recvbuff, count, datatype, ncclSum, 0, 0, 0, 0, 0, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && count <= SIZE_MAX / (size_t)comm->nRanks)
    a.sendElems = a.recvElems = count * (size_t)comm->nRanks;
  CHECK(checkComposite(&a));
  size_t bytes = count * chrTypeSize(datatype);
  ncclResult_t res = pncclGroupStart();
  for (int r = 0; r < comm->nRanks && res == ncclSuccess; r++) {
    res = p2pPart("ncclAlltoAll", ncclFuncSend, (const char*)sendbuff + (size_t)r * bytes, count, datatype, r, comm,
                  stream, ncclFuncAlltoAll, r == 0);
    if (res == ncclSuccess)
      res = p2pPart("ncclAlltoAll", ncclFuncRecv, (char*)recvbuff + (size_t)r * bytes, count, datatype, r, comm,
                    stream, ncclFuncAlltoAll, 0);
  }
  ncclResult_t endRes = pncclGroupEnd();
  return res != ncclSuccess ? res : endRes;
}

NCCL_API(ncclResult_t, ncclGather, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclGather", ncclFuncGather, sendbuff, recvbuff, count, datatype, ncclSum, 0, root, 1,
                       count, 0, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && comm->rank == root && count <= SIZE_MAX / (size_t)comm->nRanks)
    a.recvElems = count * (size_t)comm->nRanks;
  CHECK(checkComposite(&a));
  size_t bytes = count * chrTypeSize(datatype);
  ncclResult_t res = pncclGroupStart();
  if (res == ncclSuccess)
    res = p2pPart("ncclGather", ncclFuncSend, sendbuff, count, datatype, root, comm, stream, ncclFuncGather, 1);
  for (int r = 0; comm->rank == root && r < comm->nRanks && res == ncclSuccess; r++)
    res = p2pPart("ncclGather", ncclFuncRecv, (char*)recvbuff + (size_t)r * bytes, count, datatype, r, comm, stream,
                  ncclFuncGather, 0);
  ncclResult_t endRes = pncclGroupEnd();
  return res != ncclSuccess ? res : endRes;
}

NCCL_API(ncclResult_t, ncclScatter, const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t datatype, int root,
         ncclComm_t comm, cudaStream_t stream) {
  struct collArgs a = {"ncclScatter", ncclFuncScatter, sendbuff, recvbuff, count, datatype, ncclSum, 0, root, 1,
                       0, count, comm, stream};
  if (comm && comm->magic == CHR_COMM_MAGIC && comm->rank == root && count <= SIZE_MAX / (size_t)comm->nRanks)
    a.sendElems = count * (size_t)comm->nRanks;
  CHECK(checkComposite(&a));
  size_t bytes = count * chrTypeSize(datatype);
  ncclResult_t res = pncclGroupStart();
  for (int r = 0; comm->rank == root && r < comm->nRanks && res == ncclSuccess; r++)
    res = p2pPart("ncclScatter", ncclFuncSend, (const char*)sendbuff + (size_t)r * bytes, count, datatype, r, comm,
                  stream, ncclFuncScatter, r == 0);
  if (res == ncclSuccess)
    res = p2pPart("ncclScatter", ncclFuncRecv, recvbuff, count, datatype, root, comm, stream, ncclFuncScatter,
                  comm->rank != root);
  ncclResult_t endRes = pncclGroupEnd();
  return res != ncclSuccess ? res : endRes;
}

NCCL_API(ncclResult_t, ncclSend, const void* sendbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return p2pTask("ncclSend", ncclFuncSend, sendbuff, count, datatype, peer, comm, stream);
}

NCCL_API(ncclResult_t, ncclRecv, void* recvbuff, size_t count, ncclDataType_t datatype, int peer, ncclComm_t comm,
         cudaStream_t stream) {
  return p2pTask("ncclRecv", ncclFuncRecv, recvbuff, count, datatype, peer, comm, stream);
}
