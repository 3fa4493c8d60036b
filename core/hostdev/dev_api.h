/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_api.h: the device library's host API (C linkage), what the core calls to run plans on GPUs,
 * and the table of it that the core binds (struct chrDevLib, filled by core/cuda/device_lib.c).
 *
 * The library (libchorus-device.so) carries the kernels and the CUDA runtime, linked statically;
 * the core dlopens it and calls these functions, so the core itself never links CUDA.
 *
 * A RANK (struct chrDevRank) is one rank's device state, made in the rank's own process: an arena
 * (one cudaMalloc) holding what the rank owns of its connections in write mode (the FIFOs and tail
 * words of the connections it receives on, the head words of those it sends on), the rank's device
 * comm (device/kernels/dev_comm.h), its own host-mapped abort and error words, and a host-mapped area for plans too
 * large for kernel arguments. A rank exports itself as a blob of plain bytes (its arena's CUDA IPC
 * handle and address, its process, its configuration); the core sends the blob to the peers
 * (bootstrap) and each peer connects with it: a rank of another process opens the handle
 * (cudaIpcOpenMemHandle, peer access enabled lazily), a rank of the same process uses the address as
 * it is (with peer access when the GPUs differ). Connecting is per peer and may happen at any time,
 * also while the rank's kernels run (only ends that lead to the new peer are written, and no kernel
 * can have used them); a plan may only name connected peers.
 *
 * A GROUP is N ranks of ONE process made and connected at once (tests, and the core for
 * communicators whose ranks all live in one process on one GPU): a thin layer over the rank API.
 *
 * A launch runs one rank's plan (per channel, a list of struct chrWork, hostdev/work.h) on a stream:
 * one CTA per channel. Ranks exchange data while their kernels run, so every rank's kernel must be
 * able to run at the same time: ranks of one process each on its own stream, with few enough
 * channels that all CTAs fit on the GPU (CHR_DEV_MAX_CHANNELS per rank at most), with at least as
 * many hardware queues as streams (CUDA_DEVICE_MAX_CONNECTIONS, default 8: a kernel queued behind
 * another rank's waiting kernel would never start), and never with CUDA_LAUNCH_BLOCKING. Ranks of
 * several processes on one GPU are time-sliced by the driver (slow, but they progress). A plan is
 * one kernel launch unless its collectives need different reduction kernels (different type or op):
 * then it is launched as several kernels on the stream, in order, cut where the reduction changes,
 * with every point-to-point work in the last one (device/launch/launch.cu says why).
 *
 * Errors return an ncclResult_t and leave a message in chrDevLastError() (per thread).
 */
#ifndef CHORUS_HOSTDEV_DEV_API_H_
#define CHORUS_HOSTDEV_DEV_API_H_

#include <stddef.h>
#include <stdint.h>
#include "hostdev/dev_consts.h"
#include "hostdev/work.h"
#include "nccl.h"

#ifdef __cplusplus
extern "C" {
#endif

/* 3: per-rank states (chrDevRank*) with CUDA IPC, for ranks in several processes. 4: point-to-point
 * lanes (p2pStepBytes in the configurations), chrDevMemAlloc / chrDevMemFree. 5: works carry their call's
 * index (chrWork.call), by which the launcher cuts a plan into launches. 6: up to 64 channels
 * (CHR_DEV_MAX_CHANNELS). 7: sends and receives to other ranks flagged CHR_WORK_ENGINE (copy-engine sends, ce_sends.h), the
 * configurations' copyEngine. 8: their ceWaitUs. 9: their ceShareFd. 10: chrDevRankCeStats. 11: the
 * configurations' cePull, the counts' recvsPulled. 12: chrDevRankDeviceBytes. 13: one-sided
 * signals (the arena's signal words, chrDevRankPutSignal, chrDevRankWaitSignal) and shared ranges. 14: net
 * ends to peers on other hosts (chrDevRankNetConnect; chrDevConn.sizes). 16: chrDevRankLaunch takes a
 * struct chrDevLaunch, planned whole by the core. */
#define CHR_DEV_API_VERSION 16

/* The library is built with hidden visibility; these are its exports. */
#define CHR_DEV_API __attribute__((visibility("default")))

struct chrDevGroup;
struct chrDevRank;

/* ---- one rank ---- */

struct chrDevRankConfig {
  int rank, nRanks;
  int nChannels;        /* ring channels, 1 .. CHR_DEV_MAX_CHANNELS */
  int p2pConns;         /* point-to-point connection indices, 0 .. CHR_DEV_P2P_CONNS (one connection per
                           index to every peer, this rank included) */
  size_t stepBytes;     /* SIMPLE slot: a positive multiple of 16 */
  int llLines;          /* LL slot: lines of 8 payload bytes (0: no LL buffers) */
  const int* ringOrder; /* nRanks entries: the user rank at each ring position (a permutation) */
  int cudaDev;          /* this rank's GPU */
  size_t p2pStepBytes;  /* SIMPLE slot of the point-to-point connections (a positive multiple of 16;
                           0: stepBytes). A large send runs over several connection indices at once,
                           so each needs less in flight than a ring channel's */
  int copyEngine;       /* 1: plans may hold copy-engine sends (device/copy_engine/ce_sends.h); their kernel is
                           loaded with the others at create */
  int ceWaitUs;         /* a copy-engine send whose receiver has not posted waits this long in the
                           sender's call for it (device/copy_engine/ce_sends.h) */
  int ceShareFd;        /* 1: a copy-engine receive into memory CUDA IPC cannot share is shared by
                           file descriptor when it can be (device/copy_engine/ce_vmm.h), 0: always staged */
  int cePull;           /* 1: a copy-engine receive whose sender called first is copied by this
                           rank's copy engine from the sender's buffer when it can be shared
                           (device/copy_engine/ce_sends.h), between processes, and this rank describes its sends so that
                           its receivers can; 2: also between ranks of one process */
};

/* What a rank tells its peers: plain bytes (no pointers to follow), checked by chrDevRankConnect. */
#define CHR_DEV_BLOB_BYTES 256
struct chrDevRankBlob {
  unsigned char bytes[CHR_DEV_BLOB_BYTES];
};

/* Allocates the rank's state (nothing connected yet); nothing is left allocated on failure. */
CHR_DEV_API ncclResult_t chrDevRankCreate(const struct chrDevRankConfig* cfg, struct chrDevRank** out);

/* The blob the peers connect with (the same every time). */
CHR_DEV_API ncclResult_t chrDevRankExport(struct chrDevRank* rk, struct chrDevRankBlob* blob);

/* Connects peers[i] with blobs[i] (the blob peers[i]'s rank exported; a rank connects to itself too
 * for point-to-point works to itself). Every field is checked: the peer's rank, configuration and
 * ring order must match this rank's. Peers already connected are refused. On failure no peer of the
 * call is connected. */
CHR_DEV_API ncclResult_t chrDevRankConnect(struct chrDevRank* rk, int nPeers, const int* peers,
                                           const struct chrDevRankBlob* blobs);

/* One connection end to a peer on another host, as the core's proxy drives it (device/launch/net_ends.cu): host
 * addresses in memory the kernels reach too. */
struct chrDevNetEnd {
  int32_t isSend;     /* 1: this rank sends on it */
  int32_t key;        /* ring channel c, or nChannels + point-to-point index q: the same at both ends */
  char* slots;        /* CHR_DEV_STEPS slots of slotBytes, from a page boundary */
  uint64_t slotBytes;
  uint64_t* tail;     /* steps published (send: by the kernel; receive: by the proxy) */
  uint64_t* head;     /* steps freed (send: by the proxy; receive: by the kernel) */
  uint64_t* sizes;    /* CHR_DEV_STEPS words: the bytes of the step in each slot */
  uint64_t* need;     /* receive: the steps the kernel's current work will have taken (device/kernels/dev_comm.h) */
  int32_t gpuSlots;   /* 1: slots is GPU memory (GPUDirect RDMA: registered as NCCL_PTR_CUDA, never touched by the
                         host); 0: host-mapped */
};

/* The most ends chrDevRankNetConnect makes for one peer. */
CHR_DEV_API int chrDevRankNetEndsMax(const struct chrDevRank* rk);

/* Connects `peer`, a rank on another host, through host-mapped ends that a proxy carries over the
 * network: fills ends[0 .. *nEnds) (maxEnds >= chrDevRankNetEndsMax). gdrByKey (NULL: none), indexed
 * by an end's key: bit 0 puts the receive end's slots in GPU memory, bit 1 the send end's (GPUDirect
 * RDMA). The proxy must be driving them before a kernel uses them; they stay until chrDevRankDestroy. */
CHR_DEV_API ncclResult_t chrDevRankNetConnect(struct chrDevRank* rk, int peer, const uint8_t* gdrByKey,
                                              struct chrDevNetEnd* ends, int maxEnds, int* nEnds);

/* 1 when `peer` is connected. */
CHR_DEV_API int chrDevRankConnected(const struct chrDevRank* rk, int peer);

/* One launch of a rank as the core planned it (core/exec/dev_launch.c), in the order it runs: the
 * launcher checks it and queues it, and reorders or reclassifies nothing.
 *   works, nWorks[c], nChannels: the kernels' works, channel after channel (one CTA per channel).
 *     Channel c's first nCut[c] works (collectives, and a rank's copies to itself) run in the kernel
 *     of their call's reduction: the launch is cut into several kernels between calls where the
 *     reduction changes (chrDevLaunchNext); the rest of the channel's works, sends and receives to
 *     other ranks, ride in the last kernel.
 *   copies: a rank's copies to itself by the copy engine (CHR_PAT_LOCAL, CHR_WORK_ENGINE), on a side
 *     stream that forks from the launch stream before the kernels and joins it after them.
 *   ceSends: sends and receives to other ranks by the copy engine (P2P works flagged
 *     CHR_WORK_ENGINE, device/copy_engine/ce_sends.h), in the order both ends number them.
 *   capturing: the launch stream is being captured into a CUDA graph (the caller asked once); no
 *     ceSends then, and works past the kernel arguments go to graph-owned memory. */
struct chrDevLaunch {
  const struct chrWork* works;
  int nWorks[CHR_DEV_MAX_CHANNELS];
  int nCut[CHR_DEV_MAX_CHANNELS];
  int nChannels;
  const struct chrWork* copies;
  int nCopies;
  const struct chrWork* ceSends;
  int nCeSends;
  int capturing;
};

/* Runs one launch on `stream`. Every work is checked (patterns, links to connected peers, types,
 * ops, slot sizes, each list holding only its kind) before anything is queued. Returns once the
 * kernels and copies are queued. */
CHR_DEV_API ncclResult_t chrDevRankLaunch(struct chrDevRank* rk, const struct chrDevLaunch* launch, cudaStream_t stream);

/* Sets (value != 0) or clears the rank's abort word: its running kernels leave every wait loop and
 * return; its connections are then out of step and the communicator must be destroyed. */
CHR_DEV_API void chrDevRankSetAbort(struct chrDevRank* rk, uint32_t value);

/* The error a kernel of the rank reported (CHR_DEV_ERR_*, hostdev/dev_consts.h); 0 when none. */
CHR_DEV_API uint32_t chrDevRankKernelError(const struct chrDevRank* rk);

/* Closes the peers' arenas this rank opened, frees its own. No kernel of the rank may be running
 * (synchronize or abort first). A peer process that still uses this rank's arena must not be running
 * kernels on it either (CUDA IPC: the exporter frees, the importer's mapping becomes invalid). */
CHR_DEV_API ncclResult_t chrDevRankDestroy(struct chrDevRank* rk);

/* What a rank's copy-engine transfers (device/copy_engine/ce_sends.h) did so far, counted from its creation: for the
 * core's log when the communicator ends, so that a user can see which way large transfers went. */
struct chrDevCeStats {
  uint64_t sendsByEngine; /* sends to other ranks copied by the copy engine (their receiver posted first) */
  uint64_t sendsByKernel; /* copied by the launch's kernel (the sender called first) */
  uint64_t recvsDirect;   /* receives posted as an address (one process) or a CUDA IPC handle */
  uint64_t recvsByFd;     /* receives into memory shared by file descriptor (device/copy_engine/ce_vmm.h) */
  uint64_t recvsStaged;   /* receives through a staging buffer */
  uint64_t recvsPulled;   /* receives this rank's copy engine pulled from the sender's buffer (cePull) */
  uint64_t opened;        /* peers' buffers this rank opened or mapped (receivers' as a sender, senders' to pull) */
  uint64_t openNs;        /* host time those opens and mappings took */
  uint64_t exported;      /* buffers this rank exported by file descriptor as a receiver */
  uint64_t exportNs;      /* host time those exports took */
};

/* The counts so far (all 0 for a rank that made no copy-engine transfer); not while another thread
 * launches on the rank (its agents may run). */
CHR_DEV_API void chrDevRankCeStats(struct chrDevRank* rk, struct chrDevCeStats* out);

/* Device memory the rank holds (its arena, its device comm, its copy-engine buffers); the same
 * threading rule as chrDevRankCeStats. What ncclCommMemStats reports. */
CHR_DEV_API uint64_t chrDevRankDeviceBytes(const struct chrDevRank* rk);

/* ---- one-sided transfers (device/memory/signals.cu) ---- */

/* On `stream`: copies `bytes` from src to dst (a peer's window as this process addresses it; nothing
 * when bytes is 0), then writes `count` (the running number of this rank's signals to the peer) into
 * this rank's signal word in the peer's arena. The peer must be connected. */
CHR_DEV_API ncclResult_t chrDevRankPutSignal(struct chrDevRank* rk, int peer, void* dst, const void* src, size_t bytes,
                                             uint64_t count, cudaStream_t stream);
/* On `stream`: waits until `peer`'s signal word in this rank's arena reaches `count`. */
CHR_DEV_API ncclResult_t chrDevRankWaitSignal(struct chrDevRank* rk, int peer, uint64_t count, cudaStream_t stream);

/* A device range as another process opens it (CUDA IPC): ok 0 for memory CUDA IPC cannot share. */
struct chrDevRange {
  unsigned char handle[64];
  uint64_t offset; /* of the range in its allocation */
  uint32_t ok;
  uint32_t pad;
};
CHR_DEV_API ncclResult_t chrDevExportRange(int cudaDev, const void* ptr, size_t bytes, struct chrDevRange* out);
/* Opens another process's range on cudaDev: *base is its allocation's address here (add offset). */
CHR_DEV_API ncclResult_t chrDevOpenRange(int cudaDev, const struct chrDevRange* range, void** base);
CHR_DEV_API void chrDevCloseRange(int cudaDev, void* base);

/* ---- a group: N ranks of one process ---- */

struct chrDevGroupConfig {
  int nRanks;
  int nChannels;        /* ring channels per rank, 1 .. CHR_DEV_MAX_CHANNELS */
  int p2pConns;         /* point-to-point connection indices, 0 .. CHR_DEV_P2P_CONNS (every ordered
                           pair of ranks, a rank with itself included, gets one per index) */
  size_t stepBytes;     /* SIMPLE slot: a positive multiple of 16 */
  int llLines;          /* LL slot: lines of 8 payload bytes (0: no LL buffers) */
  const int* ringOrder; /* nRanks entries: the user rank at each ring position (a permutation) */
  int cudaDev;          /* the GPU every rank uses */
  size_t p2pStepBytes;  /* SIMPLE slot of the point-to-point connections (0: stepBytes) */
  int copyEngine;       /* as chrDevRankConfig's */
  int ceWaitUs;         /* as chrDevRankConfig's */
  int ceShareFd;        /* as chrDevRankConfig's */
  int cePull;           /* as chrDevRankConfig's */
};

/* Rank r of a group (owned by the group), for the rank API's launches, aborts and errors. */
CHR_DEV_API struct chrDevRank* chrDevGroupRank(struct chrDevGroup* group, int rank);

/* The library's API version (CHR_DEV_API_VERSION), for the core's dlopen check. */
CHR_DEV_API int chrDevApiVersion(void);

/* Creates every rank and connects each to all (raw pointers: one process); nothing is left allocated on failure. */
CHR_DEV_API ncclResult_t chrDevGroupCreate(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out);

/* Frees the group and its ranks. No kernel of the group may be running (synchronize or abort first). */
CHR_DEV_API ncclResult_t chrDevGroupDestroy(struct chrDevGroup* group);

/* Runs rank `rank`'s plan on `stream`: nWorks[c] works for channel c, laid out channel after channel
 * in `works` (channels with no work may be given 0), each channel's sends and receives after its
 * other works; no copy-engine work. A thin layer over chrDevRankLaunch for tests: checked the same
 * way. Returns once the kernels are queued. */
CHR_DEV_API ncclResult_t chrDevLaunch(struct chrDevGroup* group, int rank, const struct chrWork* works, const int* nWorks,
                          int nChannels, cudaStream_t stream);

/* Sets (value != 0) or clears the abort word of one rank (rank < 0: every rank). Running kernels of
 * an aborted rank leave every wait loop and return; the group's connections are then out of step
 * and the group must be destroyed. */
CHR_DEV_API void chrDevSetAbort(struct chrDevGroup* group, int rank, uint32_t value);

/* The error a kernel of `rank` reported (CHR_DEV_ERR_*, hostdev/dev_consts.h); 0 when none. */
CHR_DEV_API uint32_t chrDevKernelError(struct chrDevGroup* group, int rank);

/* Most works one kernel launch can take outside graph capture (kernel arguments or a slot of the
 * host-mapped area). Under capture the slots, which later launches reuse, are not used: works past
 * the kernel arguments go to memory the graph owns (device/launch/graph_works.h). */
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

/* GPU memory for ncclMemAlloc / ncclMemFree: `size` bytes on device `cudaDev` (cudaMalloc), and
 * its release (the pointer's own device is made current for the call). */
CHR_DEV_API ncclResult_t chrDevMemAlloc(int cudaDev, void** ptr, size_t size);
CHR_DEV_API ncclResult_t chrDevMemFree(void* ptr);

#ifdef __cplusplus
}
#endif

/* ---- the table the core binds (core/cuda/device_lib.c), the functions the core calls ---- */

#define CHR_DEVICE_LIB_NAME "libchorus-device.so"

struct chrDevLib {
  char path[512]; /* the file that was loaded */
  int (*apiVersion)(void);
  ncclResult_t (*groupCreate)(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out);
  ncclResult_t (*groupDestroy)(struct chrDevGroup* group);
  struct chrDevRank* (*groupRank)(struct chrDevGroup* group, int rank);
  void (*setAbort)(struct chrDevGroup* group, int rank, uint32_t value);
  ncclResult_t (*rankCreate)(const struct chrDevRankConfig* cfg, struct chrDevRank** out);
  ncclResult_t (*rankExport)(struct chrDevRank* rk, struct chrDevRankBlob* blob);
  ncclResult_t (*rankConnect)(struct chrDevRank* rk, int nPeers, const int* peers, const struct chrDevRankBlob* blobs);
  ncclResult_t (*rankLaunch)(struct chrDevRank* rk, const struct chrDevLaunch* launch, cudaStream_t stream);
  void (*rankSetAbort)(struct chrDevRank* rk, uint32_t value);
  uint32_t (*rankKernelError)(const struct chrDevRank* rk);
  ncclResult_t (*rankDestroy)(struct chrDevRank* rk);
  void (*rankCeStats)(struct chrDevRank* rk, struct chrDevCeStats* out);
  uint64_t (*rankDeviceBytes)(const struct chrDevRank* rk);
  int (*rankNetEndsMax)(const struct chrDevRank* rk);
  ncclResult_t (*rankNetConnect)(struct chrDevRank* rk, int peer, const uint8_t* gdrByKey, struct chrDevNetEnd* ends,
                                 int maxEnds, int* nEnds);
  ncclResult_t (*rankPutSignal)(struct chrDevRank* rk, int peer, void* dst, const void* src, size_t bytes,
                                uint64_t count, cudaStream_t stream);
  ncclResult_t (*rankWaitSignal)(struct chrDevRank* rk, int peer, uint64_t count, cudaStream_t stream);
  ncclResult_t (*exportRange)(int cudaDev, const void* ptr, size_t bytes, struct chrDevRange* out);
  ncclResult_t (*openRange)(int cudaDev, const struct chrDevRange* range, void** base);
  void (*closeRange)(int cudaDev, void* base);
  int (*maxWorks)(void);
  const char* (*lastError)(void);
  ncclResult_t (*eventCreate)(int cudaDev, void** event);
  void (*eventDestroy)(int cudaDev, void* event);
  ncclResult_t (*eventRecord)(int cudaDev, void* event, cudaStream_t stream);
  ncclResult_t (*streamWaitEvent)(int cudaDev, cudaStream_t stream, void* event);
  ncclResult_t (*eventQuery)(int cudaDev, void* event);
  ncclResult_t (*streamCapturing)(int cudaDev, cudaStream_t stream, int* capturing);
  ncclResult_t (*memAlloc)(int cudaDev, void** ptr, size_t size);
  ncclResult_t (*memFree)(void* ptr);
};

#endif /* CHORUS_HOSTDEV_DEV_API_H_ */
