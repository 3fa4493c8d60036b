/*
 * dev_args.h: the argument block of one kernel launch. It stays within CHR_DEV_ARGS_BYTES (4 KiB,
 * what every CUDA version accepts as kernel parameters) so a typical plan travels with the launch
 * itself: no copy, no allocation, nothing to free. A plan with more works than fit passes them in
 * host-mapped memory instead (workBuf); the kernel reads each work once into shared memory.
 *
 * CTA c runs channel c: works [first[c], first[c + 1]) of inl[] (or of workBuf), in order.
 */
#ifndef CHORUS_DEVICE_DEV_ARGS_H_
#define CHORUS_DEVICE_DEV_ARGS_H_

#include <stdint.h>
#include "device/dev_comm.h"
#include "plan/work.h"

#define CHR_DEV_THREADS 512 /* per CTA (one CTA per channel) */
#define CHR_DEV_ARGS_BYTES 4096
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
