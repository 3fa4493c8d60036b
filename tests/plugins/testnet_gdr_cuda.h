/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_gdr_cuda.h: what the gdrtest NIC (testnet_gdr.c) asks of the CUDA driver, which
 * testnet_gdr_cuda.c opens with dlopen at the first use (no CUDA header, no link to libcuda), and the
 * NIC's log, shared by the two files.
 */
#ifndef CHORUS_TESTNET_GDR_CUDA_H_
#define CHORUS_TESTNET_GDR_CUDA_H_

#include <stddef.h>

#include "plugin/net.h"

/* The host's logger, or stderr for warnings before the first init (testnet_gdr.c). */
void gdrLog(ncclDebugLogLevel level, int line, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
#define GDR_WARN(...) gdrLog(NCCL_LOG_WARN, __LINE__, __VA_ARGS__)
#define GDR_INFO(...) gdrLog(NCCL_LOG_INFO, __LINE__, __VA_ARGS__)

/* 1 once the driver is loaded and initialised; else 0 with *why saying what is missing. */
int gdrCudaUsable(const char** why);

/* [data, data + size) is device memory inside one allocation; *context is the context it belongs to
 * (for memory of no context, such as cuMemMap'd memory, the caller's current one). */
ncclResult_t gdrCudaDeviceRegion(void* data, size_t size, void** context);

/* A context in use by CUDA registrations, with a non-blocking stream of its own: acquired per
 * registration, the last release destroys the stream. */
struct gdrCtx;
ncclResult_t gdrCtxAcquire(void* context, struct gdrCtx** out);
void gdrCtxRelease(struct gdrCtx* c);

/* Pinned host memory (a registration's mirror) in the context's scope, and its release. */
ncclResult_t gdrCudaHostAlloc(struct gdrCtx* c, size_t bytes, void** out);
void gdrCudaHostFree(struct gdrCtx* c, void* p);

/* Copies between a region's device memory and its mirror and waits for the copy (alone on the
 * context's stream, so the wait is for these bytes only). c NULL (TESTNET_GDR_HOST_AS_CUDA): the
 * "device" memory is host memory, a memcpy. */
ncclResult_t gdrCopyAndWait(struct gdrCtx* c, int toDevice, void* device, void* host, size_t bytes);

#endif /* CHORUS_TESTNET_GDR_CUDA_H_ */
