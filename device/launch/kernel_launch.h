/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * kernel_launch.h: launching a kernel with only the used bytes of its argument block.
 *
 * cudaLaunchKernel copies a kernel's whole declared parameter (32 KiB for chrDevKernel) into every
 * launch. The driver's cuLaunchKernel takes the parameters as one buffer of a given size, so a launch
 * of one work carries a few hundred bytes instead. The driver entry is looked up once through the
 * runtime (no link against libcuda); where it or the kernel's handle is missing, the launch goes
 * through cudaLaunchKernel with the whole block, and a driver that refuses a short buffer gets the
 * whole block from then on.
 */
#ifndef CHORUS_DEVICE_KERNEL_LAUNCH_H_
#define CHORUS_DEVICE_KERNEL_LAUNCH_H_

#include <cuda_runtime.h>
#include <stddef.h>
#include "nccl.h"

/* The context-independent handle of a kernel (cudaGetKernel), or NULL where there is none. */
cudaKernel_t chrDevKernelHandle(const void* fn);

/* Launch fn (handle: its chrDevKernelHandle) on `grid` CTAs of `block` threads with the argument
 * block `args` of `full` bytes, of which the first `used` matter. */
ncclResult_t chrDevLaunchArgs(const void* fn, cudaKernel_t handle, unsigned grid, unsigned block, cudaStream_t stream,
                              void* args, size_t used, size_t full);

#endif /* CHORUS_DEVICE_KERNEL_LAUNCH_H_ */
