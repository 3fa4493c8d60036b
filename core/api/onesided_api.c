/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * onesided_api.c: ncclPutSignal, ncclSignal, ncclWaitSignal: one-sided transfers into the windows of
 * other ranks (comm/window.h), on GPU memory.
 *
 * A put copies into the peer's window on the caller's stream (a peer in this process: its address; in
 * another: its range opened through CUDA IPC once), then raises the caller's signal count at the peer;
 * the peer's ncclWaitSignal makes its stream wait until the count from each named rank has grown by
 * opCnt since its last wait (device/memory/signals.cu has the words). The peer takes no part in a put, so a
 * put never waits for its receiver. Signal 0 of context 0 only, no flags, as NCCL 2.28/2.30 accept.
 * Not under CUDA graph capture (the counts are the host's: a replay would repeat old ones). The
 * streams must be synchronized before the comm is suspended or destroyed: these copies and waits are
 * the caller's, not the comm's kernels that those calls wait for.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include "api/api.h"
#include "comm/window.h"
#include "commstate/comm.h"
#include "cuda/cuda_driver.h"
#include "cuda/dev_state.h"
#include "cuda/device_lib.h"
#include "exec/reduce.h"
#include "log/check.h"
#include "log/log.h"

/* What every one-sided call needs once the comm was found ready: GPU state, a stream not being
 * captured, and the running counts of signals sent and awaited per peer. */
static ncclResult_t prepare(ncclComm_t comm, const char* func, cudaStream_t stream, const struct chrDevLib** libOut) {
  const struct chrDevLib* lib = chrDevLibGet();
  if (lib == NULL || (!comm->devLocal && !comm->devIpc) || comm->devNet)
    return chrFail(ncclInvalidUsage, "%s: one-sided calls need the GPU path and every rank on this host (%s)", func,
                   lib == NULL ? "no GPU path here"
                   : comm->devNet ? "this communicator spans hosts; one-sided calls across hosts are not supported yet"
                                  : CHR_DEV_NOT_LOCAL_MSG);
  int capturing = 0;
  if (lib->streamCapturing(comm->cudaDev, stream, &capturing) != ncclSuccess)
    return chrFail(ncclUnhandledCudaError, "%s: %s", func, lib->lastError());
  if (capturing)
    return chrFail(ncclInvalidUsage, "%s: not supported under CUDA graph capture (a replay would reuse the signal "
                   "counts of the capture)", func);
  if (comm->sigSent == NULL) {
    comm->sigSent = calloc((size_t)comm->nRanks, sizeof(uint64_t));
    comm->sigAwaited = calloc((size_t)comm->nRanks, sizeof(uint64_t));
    if (comm->sigSent == NULL || comm->sigAwaited == NULL)
      return chrFail(ncclSystemError, "%s: out of memory for the signal counts of %d ranks", func, comm->nRanks);
  }
  CHECK(chrDevCommAttach(comm));
  *libOut = lib;
  return ncclSuccess;
}

static ncclResult_t checkSignalArgs(ncclComm_t comm, const char* func, int peer, int sigIdx, int ctx, unsigned flags) {
  if (peer < 0 || peer >= comm->nRanks)
    return chrFail(ncclInvalidArgument, "%s: peer %d is out of range [0, %d)", func, peer, comm->nRanks);
  if (sigIdx != 0 || ctx != 0)
    return chrFail(ncclInvalidArgument, "%s: signal %d of context %d: only signal 0 of context 0 is supported", func,
                   sigIdx, ctx);
  if (flags != 0) return chrFail(ncclInvalidArgument, "%s: flags 0x%x, must be 0", func, flags);
  return ncclSuccess;
}

/* The put (bytes > 0) or the bare signal, once every argument is checked. */
static ncclResult_t putSignal(ncclComm_t comm, const char* func, const void* src, size_t bytes, int peer,
                              struct ncclWindow_vidmem* win, size_t offset, cudaStream_t stream) {
  const struct chrDevLib* lib = NULL;
  CHECK(prepare(comm, func, stream, &lib));
  ncclResult_t res = ncclSuccess;
  if (chrDevCommConnectsLazily(comm)) { /* the peer's arena, where its word is (a group has them all) */
    unsigned char* need = calloc((size_t)comm->nRanks, 1);
    if (need == NULL) return chrFail(ncclSystemError, "%s: out of memory", func);
    need[peer] = 1;
    res = chrDevCommConnect(comm, need);
    free(need);
    if (res != ncclSuccess) return res;
  }
  void* dst = NULL;
  if (bytes > 0) CHECK(chrWindowPeerAddress(comm, win, peer, offset, &dst));
  const uint64_t count = comm->sigSent[peer] + 1;
  res = lib->rankPutSignal(comm->dev->rank, peer, dst, src, bytes, count, stream);
  if (res != ncclSuccess) return chrFail(res, "%s to rank %d: %s", func, peer, lib->lastError());
  comm->sigSent[peer] = count;
  return ncclSuccess;
}

/* A refusal after the comm was found valid: kept as its last error too. */
static ncclResult_t refused(ncclComm_t comm, ncclResult_t res) {
  chrCommNoteError(comm);
  return res;
}

NCCL_API(ncclResult_t, ncclPutSignal, const void* localbuff, size_t count, ncclDataType_t datatype, int peer,
         ncclWindow_t peerWin, size_t peerWinOffset, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  const char* func = "ncclPutSignal";
  CHECK(chrCommCheckReady(comm, func));
  ncclResult_t res = checkSignalArgs(comm, func, peer, sigIdx, ctx, flags);
  if (res == ncclSuccess && ((int)datatype < 0 || (int)datatype >= ncclNumTypes))
    res = chrFail(ncclInvalidArgument, "%s: datatype %d is invalid", func, (int)datatype);
  struct ncclWindow_vidmem* win = peerWin ? chrWindowFind(comm, peerWin) : NULL;
  if (res == ncclSuccess && win == NULL)
    res = chrFail(ncclInvalidArgument, "%s: %p is not a window registered on communicator %p", func, (void*)peerWin,
                  (void*)comm);
  const size_t typeSize = res == ncclSuccess ? chrTypeSize(datatype) : 1;
  if (res == ncclSuccess && count > SIZE_MAX / typeSize)
    res = chrFail(ncclInvalidArgument, "%s: count %zu overflows", func, count);
  const size_t bytes = count * typeSize;
  if (res == ncclSuccess &&
      (peerWinOffset > win->ranges[peer].size || bytes > win->ranges[peer].size - peerWinOffset))
    res = chrFail(ncclInvalidArgument, "%s: %zu bytes at offset %zu do not fit rank %d's window of %llu bytes", func,
                  bytes, peerWinOffset, peer, (unsigned long long)win->ranges[peer].size);
  if (res == ncclSuccess && bytes > 0 && !chrCudaPtrIsDevice(localbuff))
    res = chrFail(ncclInvalidUsage, "%s: localbuff %p is not GPU device memory", func, localbuff);
  if (res == ncclSuccess) res = putSignal(comm, func, localbuff, bytes, peer, win, peerWinOffset, stream);
  return res == ncclSuccess ? res : refused(comm, res);
}

NCCL_API(ncclResult_t, ncclSignal, int peer, int sigIdx, int ctx, unsigned int flags, ncclComm_t comm,
         cudaStream_t stream) {
  CHECK(chrCommCheckReady(comm, "ncclSignal"));
  ncclResult_t res = checkSignalArgs(comm, "ncclSignal", peer, sigIdx, ctx, flags);
  if (res == ncclSuccess) res = putSignal(comm, "ncclSignal", NULL, 0, peer, NULL, 0, stream);
  return res == ncclSuccess ? res : refused(comm, res);
}

NCCL_API(ncclResult_t, ncclWaitSignal, int nDesc, ncclWaitSignalDesc_t* signalDescs, ncclComm_t comm,
         cudaStream_t stream) {
  const char* func = "ncclWaitSignal";
  CHECK(chrCommCheckReady(comm, func));
  ncclResult_t res = ncclSuccess;
  if (nDesc < 0 || (nDesc > 0 && signalDescs == NULL))
    res = chrFail(ncclInvalidArgument, "%s: %d descriptors at %p", func, nDesc, (void*)signalDescs);
  for (int i = 0; i < nDesc && res == ncclSuccess; i++) {
    res = checkSignalArgs(comm, func, signalDescs[i].peer, signalDescs[i].sigIdx, signalDescs[i].ctx, 0);
    if (res == ncclSuccess && signalDescs[i].opCnt < 0)
      res = chrFail(ncclInvalidArgument, "%s: descriptor %d: opCnt %d is negative", func, i, signalDescs[i].opCnt);
  }
  const struct chrDevLib* lib = NULL;
  if (res == ncclSuccess && nDesc > 0) res = prepare(comm, func, stream, &lib);
  for (int i = 0; i < nDesc && res == ncclSuccess; i++) {
    const int peer = signalDescs[i].peer;
    const uint64_t target = comm->sigAwaited[peer] + (uint64_t)signalDescs[i].opCnt;
    res = lib->rankWaitSignal(comm->dev->rank, peer, target, stream);
    if (res != ncclSuccess) res = chrFail(res, "%s on rank %d: %s", func, peer, lib->lastError());
    else comm->sigAwaited[peer] = target;
  }
  return res == ncclSuccess ? res : refused(comm, res);
}
