/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * local_copy.h: a copy within one GPU queued on a stream (a rank's copy of its own buffer beside a
 * launch: a 2-rank broadcast's root out of place, an all-to-all's own block).
 */
#ifndef CHORUS_DEVICE_LOCAL_COPY_H_
#define CHORUS_DEVICE_LOCAL_COPY_H_

#include <cuda_runtime.h>
#include <stddef.h>

/* CHR_DEV_SELF_COPY_CTAS (a build define): N > 0 (32 by default) runs the copy as a kernel of N CTAs
 * (512 threads each); 0 queues cudaMemcpyAsync, which the driver runs on a copy engine. The kernel is
 * the default because the engine's copy shares the link's engines with the transfer beside it
 * (docs/perf/gpu-2gpu.md has the timings). The kernel is loaded with the others at rank creation
 * (chrDevLoadLocalCopy): loaded lazily at its first launch, it would wait for the kernels running and
 * hang a captured graph. Buffers not both 16-byte aligned still go to the engine: a byte-wise kernel
 * would be slower. */
#ifndef CHR_DEV_SELF_COPY_CTAS
#define CHR_DEV_SELF_COPY_CTAS 32
#endif

cudaError_t chrDevLocalCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

/* Loads the copy kernel on the current device when the build uses it (chrDevLoadKernels calls it:
 * a lazy load at the first launch would wait for the kernels running). */
cudaError_t chrDevLoadLocalCopy(void);

#endif
