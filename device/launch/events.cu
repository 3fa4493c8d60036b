/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * events.cu: events and stream queries for the core (hostdev/dev_api.h). The core orders launches with them:
 * the streams of one group are joined before and after a communicator's kernels, and a communicator
 * that launches on a new stream first waits for its previous launch. Each call makes `cudaDev` current
 * for the call and restores the caller's device, since the runtime linked into this library keeps its
 * own current device per thread.
 */
#include "device/common/dev_error.h"
#include "device/common/dev_scope.h"
#include "hostdev/dev_api.h"

extern "C" ncclResult_t chrDevEventCreate(int cudaDev, void** event) {
  if (event == NULL) return chrDevFail(ncclInvalidArgument, "chrDevEventCreate: NULL event");
  *event = NULL;
  CHR_DEV_SCOPE(cudaDev);
  cudaEvent_t e = NULL;
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), res, fail);
  *event = (void*)e;
fail:
  return res;
}

extern "C" void chrDevEventDestroy(int cudaDev, void* event) {
  if (event == NULL) return;
  DeviceScope scope(cudaDev);
  cudaEventDestroy((cudaEvent_t)event);
}

extern "C" ncclResult_t chrDevEventRecord(int cudaDev, void* event, cudaStream_t stream) {
  CHR_DEV_SCOPE(cudaDev);
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaEventRecord((cudaEvent_t)event, stream), res, fail);
fail:
  return res;
}

extern "C" ncclResult_t chrDevStreamWaitEvent(int cudaDev, cudaStream_t stream, void* event) {
  CHR_DEV_SCOPE(cudaDev);
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaStreamWaitEvent(stream, (cudaEvent_t)event, 0), res, fail);
fail:
  return res;
}

extern "C" ncclResult_t chrDevEventQuery(int cudaDev, void* event) {
  CHR_DEV_SCOPE(cudaDev);
  cudaError_t e = cudaEventQuery((cudaEvent_t)event);
  if (e == cudaSuccess) return ncclSuccess;
  if (e == cudaErrorNotReady) return ncclInProgress;
  return chrDevFail(ncclUnhandledCudaError, "cudaEventQuery: %s (%s)", cudaGetErrorString(e), cudaGetErrorName(e));
}

extern "C" ncclResult_t chrDevStreamCapturing(int cudaDev, cudaStream_t stream, int* capturing) {
  if (capturing == NULL) return chrDevFail(ncclInvalidArgument, "chrDevStreamCapturing: NULL result");
  *capturing = 0;
  CHR_DEV_SCOPE(cudaDev);
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  ncclResult_t res = ncclSuccess;
  CHR_DEV_CUDA_GOTO(cudaStreamIsCapturing(stream, &status), res, fail);
  *capturing = status != cudaStreamCaptureStatusNone;
fail:
  return res;
}
