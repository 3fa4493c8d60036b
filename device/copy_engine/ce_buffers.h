/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_buffers.h: the buffers of copy-engine sends (ce_sends.cu). A receiver posts its buffer as the
 * sender's process will reach it: an address within one process, else its allocation's CUDA IPC
 * handle and offset; for memory CUDA IPC cannot share (cuMemCreate, e.g. PyTorch's expandable
 * segments), its chunks shared by file descriptor (ce_vmm.h) when they were made shareable and the
 * setting allows, else a region of a staging buffer that its stream copies out after the transfer.
 * A sender keeps the receivers' buffers it opened or mapped, up to CHR_CE_MAX_OPENED per peer.
 */
#ifndef CHORUS_DEVICE_CE_BUFFERS_H_
#define CHORUS_DEVICE_CE_BUFFERS_H_

#include <cuda_runtime.h>
#include <stdint.h>
#include "device/copy_engine/ce_vmm.h"
#include "hostdev/ce_mailbox.h"

#define CHR_CE_MAX_OPENED 64

/* How a posted buffer reaches the other end; CHR_CE_PULLED: a receiver's post that names no buffer,
 * since it copies the transfer itself from the sender's (ce_sends.h). */
enum chrCeBufferWay { CHR_CE_BY_PTR = 0, CHR_CE_BY_IPC = 1, CHR_CE_BY_FD = 2, CHR_CE_PULLED = 3 };

/* What the receiver posts (and, for a receiver that may pull, the sender: its send buffer). */
struct chrCePostData {
  uint32_t ok;        /* 0: the buffer cannot be shared (the sender ends the transfer and reports it) */
  uint32_t way;       /* chrCeBufferWay: ptr (the sender's own process), handle + offset, vmm + offset */
  uint64_t bytes;
  uint64_t ptr;
  uint64_t offset;
  union {
    cudaIpcMemHandle_t handle;
    struct chrCeVmmRef vmm;
  } u;
};
static_assert(sizeof(struct chrCePostData) <= CHR_CE_POST_BYTES, "a post outgrew chrCePost");

/* A receiver's staging buffer for one peer: regions handed out per launch (used), grown as needed;
 * an outgrown buffer is kept until the end (the sender may hold it open, this launch may use it). */
struct chrCeStaging {
  char* base;
  size_t bytes, used;
  char** retired;
  int nRetired;
  size_t held; /* device bytes of base and the retired buffers together */
};

/* A sender's opened (CHR_CE_BY_IPC) or mapped (CHR_CE_BY_FD) receiver buffers for one peer. */
struct chrCeOpened {
  uint32_t way;
  cudaIpcMemHandle_t handle; /* CHR_CE_BY_IPC */
  uint64_t serial, span;     /* CHR_CE_BY_FD */
  char* base;
  uint64_t lastKernelK; /* the last transfer the launch kernel copies into it (0: none) */
};
struct chrCeOpenedSet {
  struct chrCeOpened e[CHR_CE_MAX_OPENED];
  int n;
  uint64_t opens, openNs; /* buffers opened or mapped so far, and the host time that took */
};

/* 1 when the driver has what describing a buffer needs (cuMemGetAddressRange). */
int chrCeBuffersSupported(void);

/* The allocation holding [ptr, ptr + bytes) as CUDA IPC shares it: 1 with its handle and the offset;
 * 0 for memory CUDA IPC refuses (cuMemCreate's, a stream-ordered pool's). Only where
 * chrCeBuffersSupported() said 1. */
int chrCeExportRange(uint64_t ptr, uint64_t bytes, cudaIpcMemHandle_t* handle, uint64_t* offset);

/* The post for a receive of `bytes` at ptr; sameProcess: the sender is in this process, else
 * senderPid its process; x: the exports to that sender (NULL: never by file descriptor). *staged:
 * the staging region that stands in for the buffer, or NULL. d->ok = 0 when none can be had. */
void chrCeDescribeBuffer(uint64_t ptr, uint64_t bytes, int sameProcess, pid_t senderPid, struct chrCeExports* x,
                         struct chrCeStaging* st, struct chrCePostData* d, char** staged);

/* The post describing a send buffer of `bytes` at ptr for a receiver that may pull it: an address in
 * one process, else its allocation's CUDA IPC handle and offset; d->ok = 0 when CUDA IPC cannot share
 * it (the sender's kernel then copies, as when the receiver does not pull). */
void chrCeDescribeSource(uint64_t ptr, uint64_t bytes, int sameProcess, struct chrCePostData* d);

/* Frees a staging buffer and those it outgrew (the streams are done with them). */
void chrCeStagingFree(struct chrCeStaging* st);

/* Called before an opened allocation is closed: returns 1 once every copy that may write into it is
 * over (lastKernelK: its last kernel transfer), 0 when that cannot be known (an abort). */
typedef int (*chrCeQuiesceFn)(void* arg, uint64_t lastKernelK);

/* The posted buffer in this process: its address, its allocation opened by CUDA IPC, or its chunks
 * mapped for GPU dev from the process whose token is peerToken (kept; beyond CHR_CE_MAX_OPENED the
 * oldest is closed once q says so). kernelK: the transfer the launch kernel will copy into it, 0
 * for the copy engine. NULL when it cannot be opened. */
char* chrCePeerBuffer(struct chrCeOpenedSet* s, const struct chrCePostData* d, uint64_t peerToken, int dev,
                      uint64_t kernelK, chrCeQuiesceFn q, void* arg);

/* Closes every opened allocation and unmaps every mapped one. */
void chrCeCloseAll(struct chrCeOpenedSet* s);

#endif /* CHORUS_DEVICE_CE_BUFFERS_H_ */
