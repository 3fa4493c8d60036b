/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * stream_values.h: the driver's stream memory operations (cuStreamWaitValue64, cuStreamWriteValue64),
 * looked up once: a stream that waits for a 64-bit word to reach a value, and a stream that writes one
 * (after a memory fence, so what the stream wrote before is visible first). Used by the copy-engine
 * sends (their mailboxes) and the one-sided signals (signals.cu).
 */
#ifndef CHORUS_DEVICE_STREAM_VALUES_H_
#define CHORUS_DEVICE_STREAM_VALUES_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "nccl.h"

/* 1 when the driver has both operations. */
int chrDevStreamValuesSupported(void);
/* The stream waits until the word at device address `word` is >= v; `what` names it in the error. */
ncclResult_t chrDevStreamWaitGeq(cudaStream_t s, const void* word, uint64_t v, int rank, const char* what);
/* The stream writes v to the word at device address `word`. */
ncclResult_t chrDevStreamWrite(cudaStream_t s, void* word, uint64_t v, int rank, const char* what);

#endif /* CHORUS_DEVICE_STREAM_VALUES_H_ */
