/*
 * local_copy.h: a copy within one GPU queued on a stream (a rank's copy of its own buffer beside a
 * launch: a 2-rank broadcast's root out of place, an all-to-all's own block).
 */
#ifndef CHORUS_DEVICE_LOCAL_COPY_H_
#define CHORUS_DEVICE_LOCAL_COPY_H_

#include <cuda_runtime.h>
#include <stddef.h>

/* CHR_DEV_SELF_COPY_CTAS (a build define): 0 (the default) queues cudaMemcpyAsync, which the
 * driver runs on a copy engine; N > 0 a copy kernel of N CTAs (512 threads each) instead. n9 (2 x
 * H100, docs/perf/gpu-2gpu.md, Next 00af) timed both beside the transfers they run with: a
 * broadcast root's copy out of place and an all-to-all's own block went 4-6% and 15-22% faster with
 * 32 CTAs than on the engine (16 were too slow to hide behind the transfer; 66 no faster than 32).
 * n10 then hung gpu.engine.nccl.graph.n2 with it: the kernel was loaded lazily at its first launch,
 * which waits for the kernels running (dev_group.h, chrDevLoadKernels). chrDevLoadLocalCopy loads
 * it with the others now; not yet run on a GPU, so the default stays 0 until it has. */
#ifndef CHR_DEV_SELF_COPY_CTAS
#define CHR_DEV_SELF_COPY_CTAS 0
#endif

cudaError_t chrDevLocalCopy(void* dst, const void* src, size_t bytes, cudaStream_t stream);

/* Loads the copy kernel on the current device when the build uses it (chrDevLoadKernels calls it:
 * a lazy load at the first launch would wait for the kernels running). */
cudaError_t chrDevLoadLocalCopy(void);

#endif
