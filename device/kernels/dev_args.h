/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_args.h: the argument block of one kernel launch, up to CHR_DEV_ARGS_BYTES (CUDA 12.1 and later
 * accept kernel parameters up to 32764 bytes on Volta and newer). A plan of up to
 * CHR_DEV_INLINE_WORKS works (253: one call on 128 channels, or an all-to-all's sends and receives to
 * 2 ranks on 32 lanes each, 128 works, which with 16 KiB (126 works) went through host memory) travels
 * with the launch itself: no copy, no allocation, nothing to free, and a captured launch keeps them.
 * The launcher passes only the bytes in use (the header and the works it filled), so a small launch
 * costs what a small argument block costs. A plan with more works passes them in host-mapped memory
 * instead (workBuf); the kernel reads each work once into shared memory.
 *
 * CTA c runs channel c: works [first[c], first[c + 1]) of inl[] (or of workBuf), in order.
 */
#ifndef CHORUS_DEVICE_DEV_ARGS_H_
#define CHORUS_DEVICE_DEV_ARGS_H_

#include <stdint.h>
#include "device/kernels/dev_comm.h"
#include "hostdev/work.h"

/* Threads per CTA (one CTA per channel). 1024 rather than 512: more bytes in flight per SM made
 * large sends and all-to-alls and LL all-reduces faster, where deeper packs per thread
 * (CHR_DEV_UNROLL_PACKS=16) gave nothing (docs/perf/gpu-2gpu.md). A build may override it
 * (-DCHR_DEV_THREADS=512). */
#ifndef CHR_DEV_THREADS
#define CHR_DEV_THREADS 1024
#endif
#define CHR_DEV_ARGS_BYTES 32760 /* CUDA's bound (32764) in whole 8-byte words */
#define CHR_DEV_ARGS_HEADER (8 + 8 + 8 + 2 * (CHR_DEV_MAX_CHANNELS + 1) + 6)
#define CHR_DEV_INLINE_WORKS ((CHR_DEV_ARGS_BYTES - CHR_DEV_ARGS_HEADER) / sizeof(struct chrWork))

struct chrDevKernelArgs {
  const struct chrDevComm* comm;   /* device memory */
  const struct chrWork* workBuf;   /* NULL: the works are in inl[] */
  uint32_t nChannels;
  uint32_t pad;
  uint16_t first[CHR_DEV_MAX_CHANNELS + 1];
  uint16_t pad2[3];
  struct chrWork inl[CHR_DEV_INLINE_WORKS];
};

#endif /* CHORUS_DEVICE_DEV_ARGS_H_ */
