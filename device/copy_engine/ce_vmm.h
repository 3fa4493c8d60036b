/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ce_vmm.h: receive buffers of copy-engine sends that CUDA IPC cannot share, shared by file
 * descriptor instead of received through a staging buffer (ce_buffers.h).
 *
 * Such buffers are cuMemCreate memory, which PyTorch's expandable segments are made of: one reserved
 * address range with physical chunks (20 MiB for large tensors) mapped side by side, each chunk its
 * own allocation, made with the POSIX file descriptor handle type (PyTorch 2.11 on a host without
 * fabric handles; tests/gpu/torch_vmm_handles.py prints what it answers). A buffer may span chunks.
 *
 * The receiver (the process that owns the memory) walks the buffer's chunks (cuMemGetAddressRange:
 * the chunk's mapping; CU_POINTER_ATTRIBUTE_BUFFER_ID: which allocation, unique in the process for
 * its life, where handle values are reused), exports each chunk's allocation to a descriptor
 * (cuMemExportToShareableHandle) and offers it, with its size, on this process's descriptor server
 * (fd_pass.h) under a key made of an export serial and the chunk's index, to the sender's process
 * only. The post carries the serial. The sender fetches the descriptors, imports each chunk and maps
 * them side by side in a range of its own (cuMemImportFromShareableHandle, cuMemMap,
 * cuMemSetAccess), and keeps the mapping by the serial (ce_buffers.h's opened set).
 *
 * A buffer whose chunks are a run inside an earlier export's (a smaller tensor of the same segment)
 * reuses that export at its offset, and the sender its mapping: no new export, fetch or mapping.
 *
 * Why a cached mapping is never stale: the receiver looks its exports up by the chunks' buffer ids,
 * so a buffer whose chunks were freed and remapped (an allocator's reuse of the address) gets a new
 * serial, never an old one; and the sender's import holds its own reference to the old chunks, so
 * their memory is not reused while the sender still maps it (the price: a freed chunk stays
 * allocated until the sender drops the mapping, at most CHR_CE_MAX_OPENED per peer, as a cudaMalloc
 * allocation the sender opened through CUDA IPC does).
 *
 * A sender's process that this process positively cannot reach (gone, or in another network or PID
 * namespace: chrFdPeerReachable) gets the buffer staged instead, as memory without the handle type
 * does; CHORUS_GPU_CE_SHARE_FD=0 stages every such buffer.
 *
 * Why a posted export is still offered when its sender fetches it: the receiver keeps its last
 * CHR_CE_MAX_EXPORTED exports offered (older ones are withdrawn), more than the mailbox's slots, and
 * a receiver can post at most CHR_CE_SLOTS transfers to a pair that its sender has not yet
 * published or issued (which it does after fetching).
 */
#ifndef CHORUS_DEVICE_CE_VMM_H_
#define CHORUS_DEVICE_CE_VMM_H_

#include <stdint.h>
#include <sys/types.h>
#include "hostdev/ce_mailbox.h"

#define CHR_CE_MAX_EXPORTED 32
#define CHR_CE_VMM_MAX_CHUNKS 65535 /* a chunk's index takes 16 bits of its key */
static_assert(CHR_CE_MAX_EXPORTED > CHR_CE_SLOTS, "a posted export could be withdrawn before its sender fetched it");

/* What the post carries. */
struct chrCeVmmRef {
  uint64_t serial; /* the export's number in the receiver's process */
  uint64_t span;   /* bytes of its chunks together */
  uint32_t nChunks;
  uint32_t pad;
};

struct chrCeVmmChunk {
  uint64_t base, size, bufferId;
};

struct chrCeVmmExport {
  uint64_t serial, lastUse;
  struct chrCeVmmChunk* chunks;
  uint32_t nChunks;
};

/* A receiver's exports to one peer. */
struct chrCeExports {
  struct chrCeVmmExport e[CHR_CE_MAX_EXPORTED];
  int n;
  uint64_t clock;
  int serverHeld; /* this set holds a reference on the process's descriptor server */
  uint64_t made, madeNs; /* exports made so far, and the host time that took */
};

/* The buffer [ptr, ptr + bytes) shared with process peerPid: 1, *ref and *offset (ptr's offset in the
 * first chunk), or 0 when it cannot be (not cuMemCreate memory, chunks made without the POSIX
 * descriptor handle type, a driver or server failure: the caller stages it). */
int chrCeVmmExport(struct chrCeExports* x, uint64_t ptr, uint64_t bytes, pid_t peerPid, struct chrCeVmmRef* ref,
                   uint64_t* offset);

/* Withdraws every export of x and lets go of the server (the last set to stops it). */
void chrCeExportsFree(struct chrCeExports* x);

/* The sender's side: maps the export ref of the process whose token is peerToken, readable and
 * writable by GPU dev. 0 and *base, or an error text (static) saying which step failed. */
const char* chrCeVmmImport(uint64_t peerToken, const struct chrCeVmmRef* ref, int dev, char** base);

/* Unmaps what chrCeVmmImport mapped (span bytes at base). */
void chrCeVmmUnmap(char* base, uint64_t span);

#endif /* CHORUS_DEVICE_CE_VMM_H_ */
