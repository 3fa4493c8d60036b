/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream_values.cu: stream_values.h.
 */
#include <cuda.h>
#include <pthread.h>
#include "device/common/dev_error.h"
#include "device/common/driver_entry.h"
#include "device/common/stream_values.h"

typedef CUresult (*valueFn)(CUstream, CUdeviceptr, cuuint64_t, unsigned int);
static valueFn waitValue64, writeValue64;
static pthread_once_t resolveOnce = PTHREAD_ONCE_INIT;

static void resolve(void) {
  waitValue64 = (valueFn)chrDevDriverEntry("cuStreamWaitValue64");
  writeValue64 = (valueFn)chrDevDriverEntry("cuStreamWriteValue64");
}

int chrDevStreamValuesSupported(void) {
  pthread_once(&resolveOnce, resolve);
  return waitValue64 != NULL && writeValue64 != NULL;
}

ncclResult_t chrDevStreamWaitGeq(cudaStream_t s, const void* word, uint64_t v, int rank, const char* what) {
  if (!chrDevStreamValuesSupported() ||
      waitValue64((CUstream)s, (CUdeviceptr)(uintptr_t)word, v, CU_STREAM_WAIT_VALUE_GEQ) != CUDA_SUCCESS)
    return chrDevFail(ncclUnhandledCudaError, "rank %d: cuStreamWaitValue64 on %s failed", rank, what);
  return ncclSuccess;
}

ncclResult_t chrDevStreamWrite(cudaStream_t s, void* word, uint64_t v, int rank, const char* what) {
  if (!chrDevStreamValuesSupported() ||
      writeValue64((CUstream)s, (CUdeviceptr)(uintptr_t)word, v, CU_STREAM_WRITE_VALUE_DEFAULT) != CUDA_SUCCESS)
    return chrDevFail(ncclUnhandledCudaError, "rank %d: cuStreamWriteValue64 on %s failed", rank, what);
  return ncclSuccess;
}
