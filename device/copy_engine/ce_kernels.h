/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_kernels.h: the kernel of copy-engine sends (ce_sends.cu), one per launch, queued on the user's
 * stream from the API call it belongs to, never later (ce_sends.h says why). It carries every
 * transfer of the launch that waits for a peer, all progressing together, so that none waits behind
 * another on a stream (or on a hardware queue that streams share):
 *   - up to CHR_CE_GROUP_JOBS copies of sends that run on the SMs: a share of the CTAs per copy
 *     waits until the agent has published the receiver's buffer and the receiver is ready, copies
 *     its part, and the last CTA of the copy sets the receiver's done word; or, when the receiver
 *     pulls the transfer (CHR_CE_DST_PULLED, hostdev/ce_mailbox.h), one CTA waits until the
 *     pull's done word says the send buffer was read;
 *   - up to CHR_CE_GROUP_WAITS done words (receives, and sends the copy engine runs), which one more
 *     CTA polls until each reaches its transfer number (host memory both ends map; not
 *     cuStreamWaitValue64, which stops the hardware queue it is on).
 * It leaves at once when the rank aborts.
 */
#ifndef CHORUS_DEVICE_CE_KERNELS_H_
#define CHORUS_DEVICE_CE_KERNELS_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "nccl.h"

/* CHR_CE_TIMING=1 in CUDA_DEFINES: the timing build (device/copy_engine/ce_timing.cuh for the kernel's stamps,
 * ce_sends.cu for the host's posts and publishes); 0: no timing code at all. */
#ifndef CHR_CE_TIMING
#define CHR_CE_TIMING 0
#endif

#define CHR_CE_GROUP_JOBS 16
#define CHR_CE_GROUP_WAITS 64

/* Per mailbox slot, in device memory, zero at first: how the CTAs of the slot's copy share the one
 * read of its publish (ce_kernels.cu, copyShare) and count themselves done. */
struct chrCeCopySync {
  unsigned long long seenK; /* the first CTA has read transfer seenK's publish: */
  unsigned long long dst;   /* the buffer, CHR_CE_DST_PULLED or 0 */
  unsigned int quit;        /* or the rank aborted */
  unsigned int finished;    /* CTAs finished with the copy (0 between copies) */
};

/* One copy; the pointers are device addresses of mapped host memory but src and sync. */
struct chrCeCopyJob {
  const char* src;
  unsigned long long bytes, k;
  const volatile unsigned long long* dstK;   /* the agent's publish: >= k when dstPtr is transfer k's */
  const volatile unsigned long long* dstPtr; /* the receiver's buffer as this process reaches it; 0: none */
  const volatile unsigned long long* ready;  /* the receiver's ready word (its buffer may be written) */
  unsigned long long* done;                  /* the receiver's done word of this transfer */
  const volatile unsigned long long* senderDone; /* this end's done word: a pull of the transfer sets it */
  struct chrCeCopySync* sync;                /* its slot's */
};

struct chrCeGroupArgs {
  struct chrCeCopyJob job[CHR_CE_GROUP_JOBS];
  const volatile unsigned long long* word[CHR_CE_GROUP_WAITS];
  unsigned long long k[CHR_CE_GROUP_WAITS];
  const volatile unsigned int* abortFlag;
  int nJobs, ctasPerJob, nWaits;
};

/* Loads the kernel on the current device (at rank create: a lazy load waits for running kernels). */
ncclResult_t chrCeLoadKernels(void);

/* With CHR_CE_TIMING=1 (a build switch, device/copy_engine/ce_timing.cuh): prints where the kernel copies' time
 * went on the current device (over its ranks so far). Otherwise nothing. */
void chrCeTimingPrint(int rank);

/* Queues the kernel for a's jobs (a->ctasPerJob CTAs each) and waits on `stream`; nothing when it
 * has neither. */
cudaError_t chrCeLaunchGroup(const struct chrCeGroupArgs* a, cudaStream_t stream);

#endif /* CHORUS_DEVICE_CE_KERNELS_H_ */
