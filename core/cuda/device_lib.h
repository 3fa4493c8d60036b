/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * device_lib.h: the device library (libchorus-device.so, hostdev/dev_api.h), loaded at run time.
 *
 * The core never links CUDA: the kernels, their launcher and the CUDA runtime live in the device
 * library, opened with dlopen the first time a device buffer needs it. It is looked for next to
 * libchorus (the folder of the library or program this code is in, util/own_dir.h), then through
 * the normal search path, and must report chrDevApiVersion() == CHR_DEV_API_VERSION. No library, an
 * old one, or no CUDA driver with the context queries the GPU path needs: no GPU path, and device
 * buffers are refused as before. cudaStream_t values pass through as opaque pointers.
 */
#ifndef CHORUS_CUDA_DEVICE_LIB_H_
#define CHORUS_CUDA_DEVICE_LIB_H_

#include "hostdev/dev_api.h" /* struct chrDevLib */

/* The loaded library, or NULL when there is no GPU path (loaded once per process, thread-safe; the
 * reason is logged once at INFO). Needs the CUDA driver too: without one, NULL without looking. */
const struct chrDevLib* chrDevLibGet(void);

/* Opens the file, checks its API version and that it has every function the core binds, and closes
 * it; needs no GPU or driver (a CPU test checks the built library this way). 1, or 0 with the reason
 * in why. */
int chrDevLibCheckFile(const char* path, char* why, size_t whyLen);

#endif /* CHORUS_CUDA_DEVICE_LIB_H_ */
