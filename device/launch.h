/*
 * launch.h: the device library's host API (C linkage), what the core calls to run plans on GPUs.
 *
 * The library (libchorus-device.so) carries the kernels and the CUDA runtime, linked statically;
 * the core will dlopen it and call these functions, so the core itself never links CUDA.
 *
 * A group is the device state of N ranks that live in ONE process on one GPU: their connections
 * (FIFOs and control words in device memory, cudaMalloc; ranks of one process need no IPC), each
 * rank's device comm (dev_comm.h), a host-mapped abort and error word per rank, and a host-mapped
 * area for plans too large for kernel arguments.
 *
 * A launch runs one rank's plan (per channel, a list of struct chrWork, plan/work.h) on a stream:
 * one CTA per channel. The ranks of a group exchange data while their kernels run, so every rank's
 * kernel must be resident at the same time: launch each rank on its own stream, with few enough
 * channels that all CTAs fit on the GPU (CHR_DEV_MAX_CHANNELS per rank at most), with at least as
 * many hardware queues as streams (CUDA_DEVICE_MAX_CONNECTIONS, default 8: a kernel queued behind
 * another rank's waiting kernel would never start), and never with CUDA_LAUNCH_BLOCKING. A plan whose works need different reduction kernels (different type or op)
 * is launched as several kernels on the stream, in order.
 *
 * Errors return an ncclResult_t and leave a message in chrDevLastError() (per thread).
 */
#ifndef CHORUS_DEVICE_LAUNCH_H_
#define CHORUS_DEVICE_LAUNCH_H_

#include <stddef.h>
#include <stdint.h>
#include "device/dev_comm.h"
#include "nccl.h"
#include "plan/work.h"

#ifdef __cplusplus
extern "C" {
#endif

#define CHR_DEV_API_VERSION 2

/* The library is built with hidden visibility; these are its exports. */
#define CHR_DEV_API __attribute__((visibility("default")))

struct chrDevGroup;

struct chrDevGroupConfig {
  int nRanks;
  int nChannels;        /* ring channels per rank, 1 .. CHR_DEV_MAX_CHANNELS */
  int p2pConns;         /* point-to-point connection indices, 0 .. CHR_DEV_P2P_CONNS (every ordered
                           pair of ranks, a rank with itself included, gets one per index) */
  size_t stepBytes;     /* SIMPLE slot: a positive multiple of 16 */
  int llLines;          /* LL slot: lines of 8 payload bytes (0: no LL buffers) */
  const int* ringOrder; /* nRanks entries: the user rank at each ring position (a permutation) */
  int cudaDev;          /* the GPU every rank uses */
};

/* The library's API version (CHR_DEV_API_VERSION), for the core's dlopen check. */
CHR_DEV_API int chrDevApiVersion(void);

/* Allocates and connects everything; nothing is left allocated on failure. */
CHR_DEV_API ncclResult_t chrDevGroupCreate(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out);

/* Frees the group. No kernel of the group may be running (synchronize or abort first). */
CHR_DEV_API ncclResult_t chrDevGroupDestroy(struct chrDevGroup* group);

/* Runs rank `rank`'s plan on `stream`: nWorks[c] works for channel c, laid out channel after channel
 * in `works` (channels with no work may be given 0). Works are checked against the group (patterns,
 * links, types, ops, slot sizes) before anything is launched. Returns once the kernels are queued. */
CHR_DEV_API ncclResult_t chrDevLaunch(struct chrDevGroup* group, int rank, const struct chrWork* works, const int* nWorks,
                          int nChannels, cudaStream_t stream);

/* Sets (value != 0) or clears the abort word of one rank (rank < 0: every rank). Running kernels of
 * an aborted rank leave every wait loop and return; the group's connections are then out of step
 * and the group must be destroyed. */
CHR_DEV_API void chrDevSetAbort(struct chrDevGroup* group, int rank, uint32_t value);

/* The error a kernel of `rank` reported (CHR_DEV_ERR_*, dev_comm.h); 0 when none. */
CHR_DEV_API uint32_t chrDevKernelError(struct chrDevGroup* group, int rank);

/* Most works one launch can take (kernel arguments or the host-mapped area). While the stream is
 * being captured into a CUDA graph, a launch's works must fit in the kernel arguments (the
 * host-mapped slots are reused, so a graph replayed later would read other works): larger plans are
 * refused with ncclInvalidUsage. */
CHR_DEV_API int chrDevMaxWorks(void);

/* The calling thread's last error message ("" when none). */
CHR_DEV_API const char* chrDevLastError(void);

/* Events and streams, for the core's ordering of launches (it never links CUDA itself). Events are
 * opaque handles (cudaEvent_t, created without timing) on device `cudaDev`.
 * chrDevEventQuery: ncclSuccess when the event has completed (or was never recorded), ncclInProgress
 * while work before it is pending, an error (with chrDevLastError) when CUDA reports one.
 * chrDevStreamCapturing: *capturing = 1 while the stream is being captured into a CUDA graph. */
CHR_DEV_API ncclResult_t chrDevEventCreate(int cudaDev, void** event);
CHR_DEV_API void chrDevEventDestroy(int cudaDev, void* event);
CHR_DEV_API ncclResult_t chrDevEventRecord(int cudaDev, void* event, cudaStream_t stream);
CHR_DEV_API ncclResult_t chrDevStreamWaitEvent(int cudaDev, cudaStream_t stream, void* event);
CHR_DEV_API ncclResult_t chrDevEventQuery(int cudaDev, void* event);
CHR_DEV_API ncclResult_t chrDevStreamCapturing(int cudaDev, cudaStream_t stream, int* capturing);

#ifdef __cplusplus
}
#endif

#endif /* CHORUS_DEVICE_LAUNCH_H_ */
