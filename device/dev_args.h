/*
 * dev_args.h: the argument block of one kernel launch, up to CHR_DEV_ARGS_BYTES (16 KiB: CUDA 12.1
 * and later accept kernel parameters up to 32 KiB on Volta and newer). A plan of up to
 * CHR_DEV_INLINE_WORKS works (126: one call on 64 channels, or a group of several on 32) travels
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
#include "device/dev_comm.h"
#include "plan/work.h"

#define CHR_DEV_THREADS 512 /* per CTA (one CTA per channel) */
#define CHR_DEV_ARGS_BYTES 16384
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
