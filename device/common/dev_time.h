/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_time.h: the monotonic clock in nanoseconds, for the device library's bounded host waits, and
 * the wall clock, for logs set beside the GPU's %globaltimer (device/copy_engine/ce_timing.cuh).
 */
#ifndef CHORUS_DEVICE_DEV_TIME_H_
#define CHORUS_DEVICE_DEV_TIME_H_

#include <stdint.h>
#include <time.h>

static inline uint64_t chrDevNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static inline uint64_t chrDevRealNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif /* CHORUS_DEVICE_DEV_TIME_H_ */
