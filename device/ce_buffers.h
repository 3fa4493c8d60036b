/*
 * ce_buffers.h: the buffers of copy-engine sends (ce_sends.cu). A receiver posts its buffer as the
 * sender's process will reach it: an address within one process, else its allocation's CUDA IPC
 * handle and offset, or, for memory CUDA IPC cannot share (cuMemCreate, e.g. PyTorch's expandable
 * segments), a region of a staging buffer that its stream copies out after the transfer. A sender
 * keeps the receivers' allocations it opened, up to CHR_CE_MAX_OPENED per peer.
 */
#ifndef CHORUS_DEVICE_CE_BUFFERS_H_
#define CHORUS_DEVICE_CE_BUFFERS_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "cuda/ce_mailbox.h"

#define CHR_CE_MAX_OPENED 64

/* What the receiver posts. */
struct chrCePostData {
  uint32_t ok;        /* 0: the buffer cannot be shared (the sender ends the transfer and reports it) */
  uint32_t viaIpc;    /* 1: handle + offset; 0: ptr, in the sender's own process */
  uint64_t bytes;
  uint64_t ptr;
  uint64_t offset;
  cudaIpcMemHandle_t handle;
};
static_assert(sizeof(struct chrCePostData) <= CHR_CE_POST_BYTES, "a post outgrew chrCePost");

/* A receiver's staging buffer for one peer: regions handed out per launch (used), grown as needed;
 * an outgrown buffer is kept until the end (the sender may hold it open, this launch may use it). */
struct chrCeStaging {
  char* base;
  size_t bytes, used;
  char** retired;
  int nRetired;
};

/* A sender's opened receiver allocations for one peer. */
struct chrCeOpened {
  cudaIpcMemHandle_t handle;
  char* base;
  uint64_t lastKernelK; /* the last transfer the launch kernel copies into it (0: none) */
};
struct chrCeOpenedSet {
  struct chrCeOpened e[CHR_CE_MAX_OPENED];
  int n;
};

/* 1 when the driver has what describing a buffer needs (cuMemGetAddressRange). */
int chrCeBuffersSupported(void);

/* The post for a receive of `bytes` at ptr; sameProcess: the sender is in this process. *staged: the
 * staging region that stands in for the buffer, or NULL. d->ok = 0 when neither can be had. */
void chrCeDescribeBuffer(uint64_t ptr, uint64_t bytes, int sameProcess, struct chrCeStaging* st,
                         struct chrCePostData* d, char** staged);

/* Frees a staging buffer and those it outgrew (the streams are done with them). */
void chrCeStagingFree(struct chrCeStaging* st);

/* Called before an opened allocation is closed: returns 1 once every copy that may write into it is
 * over (lastKernelK: its last kernel transfer), 0 when that cannot be known (an abort). */
typedef int (*chrCeQuiesceFn)(void* arg, uint64_t lastKernelK);

/* The posted buffer in this process: its address, or its allocation opened by CUDA IPC (kept open;
 * beyond CHR_CE_MAX_OPENED the oldest is closed once q says so). kernelK: the transfer the launch
 * kernel will copy into it, 0 for the copy engine. NULL when it cannot be opened. */
char* chrCePeerBuffer(struct chrCeOpenedSet* s, const struct chrCePostData* d, uint64_t kernelK, chrCeQuiesceFn q,
                      void* arg);

/* Closes every opened allocation. */
void chrCeCloseAll(struct chrCeOpenedSet* s);

#endif /* CHORUS_DEVICE_CE_BUFFERS_H_ */
