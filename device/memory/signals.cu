/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * signals.cu: one-sided transfers (hostdev/dev_api.h): a copy into a peer's window, then a signal word written
 * into the peer's arena; a stream wait on this rank's word of a peer; and the CUDA IPC export and
 * opening of window ranges.
 *
 * The signal words sit at the end of every rank's arena (sigOff, the same offset on every rank: the
 * arena's shape is the communicator's), one per peer, and only that peer writes it, with the running
 * count of its signals (kept by its host side): a plain stream write then does what an atomic add
 * would, and a waiter's ">= count" cannot miss one. The write follows the copy on the same stream and
 * comes after a memory fence (stream_values.h), so the data is in the window before the count is seen.
 */
#include <string.h>
#include "device/copy_engine/ce_buffers.h"
#include "device/common/dev_error.h"
#include "device/launch/dev_group.h"
#include "device/common/dev_scope.h"
#include "device/common/stream_values.h"
#include "hostdev/dev_api.h"

static_assert(sizeof(cudaIpcMemHandle_t) == sizeof(((struct chrDevRange*)0)->handle), "an IPC handle is 64 bytes");

extern "C" ncclResult_t chrDevRankPutSignal(struct chrDevRank* rk, int peer, void* dst, const void* src, size_t bytes,
                                            uint64_t count, cudaStream_t stream) {
  if (rk == NULL || peer < 0 || peer >= rk->cfg.nRanks)
    return chrDevFail(ncclInvalidArgument, "chrDevRankPutSignal: no rank or peer %d out of range", peer);
  if (rk->peerBase[peer] == NULL)
    return chrDevFail(ncclInternalError, "rank %d: a signal to rank %d, which is not connected", rk->cfg.rank, peer);
  if (bytes > 0 && (dst == NULL || src == NULL))
    return chrDevFail(ncclInvalidArgument, "rank %d: a put of %zu bytes to rank %d without addresses", rk->cfg.rank,
                      bytes, peer);
  CHR_DEV_SCOPE(rk->cfg.cudaDev);
  if (bytes > 0) {
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream);
    if (e != cudaSuccess)
      return chrDevFail(ncclUnhandledCudaError, "rank %d: the put of %zu bytes to rank %d: %s", rk->cfg.rank, bytes,
                        peer, cudaGetErrorString(e));
  }
  char* word = rk->peerBase[peer] + rk->sigOff + (size_t)rk->cfg.rank * sizeof(uint64_t);
  return chrDevStreamWrite(stream, word, count, rk->cfg.rank, "a peer's signal word");
}

extern "C" ncclResult_t chrDevRankWaitSignal(struct chrDevRank* rk, int peer, uint64_t count, cudaStream_t stream) {
  if (rk == NULL || peer < 0 || peer >= rk->cfg.nRanks)
    return chrDevFail(ncclInvalidArgument, "chrDevRankWaitSignal: no rank or peer %d out of range", peer);
  CHR_DEV_SCOPE(rk->cfg.cudaDev);
  const char* word = rk->arena + rk->sigOff + (size_t)peer * sizeof(uint64_t);
  return chrDevStreamWaitGeq(stream, word, count, rk->cfg.rank, "a signal word");
}

extern "C" ncclResult_t chrDevExportRange(int cudaDev, const void* ptr, size_t bytes, struct chrDevRange* out) {
  if (out == NULL) return chrDevFail(ncclInvalidArgument, "chrDevExportRange: out is NULL");
  memset(out, 0, sizeof(*out));
  CHR_DEV_SCOPE(cudaDev);
  cudaIpcMemHandle_t h;
  if (chrCeBuffersSupported() && chrCeExportRange((uint64_t)(uintptr_t)ptr, bytes, &h, &out->offset)) {
    memcpy(out->handle, &h, sizeof(h));
    out->ok = 1;
  }
  return ncclSuccess;
}

extern "C" ncclResult_t chrDevOpenRange(int cudaDev, const struct chrDevRange* range, void** base) {
  if (range == NULL || base == NULL || !range->ok) return chrDevFail(ncclInvalidArgument, "chrDevOpenRange: no range");
  CHR_DEV_SCOPE(cudaDev);
  cudaIpcMemHandle_t h;
  memcpy(&h, range->handle, sizeof(h));
  cudaError_t e = cudaIpcOpenMemHandle(base, h, cudaIpcMemLazyEnablePeerAccess);
  if (e != cudaSuccess) {
    cudaGetLastError();
    return chrDevFail(ncclUnhandledCudaError, "opening a peer's window (CUDA IPC): %s", cudaGetErrorString(e));
  }
  return ncclSuccess;
}

extern "C" void chrDevCloseRange(int cudaDev, void* base) {
  DeviceScope scope(cudaDev);
  if (scope.err == cudaSuccess && base != NULL) cudaIpcCloseMemHandle(base);
  cudaGetLastError();
}
