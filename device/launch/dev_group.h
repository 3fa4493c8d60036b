/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_group.h: the host-side state of one rank (hostdev/dev_api.h: chrDevRank) and of a group of ranks of one
 * process, shared by rank.cu (create, export, connect, destroy), group.cu (groups over ranks),
 * launch.cu (launches) and work_check.cu (plan checks).
 *
 * A rank's arena (one cudaMalloc, exported with CUDA IPC) holds what the rank owns in the write-mode
 * layout: the head word of every connection it SENDS on, then, for every connection it RECEIVES on,
 * a 256-byte control block (the tail word first) followed by the SIMPLE slots and the LL slots. Both
 * ends of a connection index it the same way (connection index, rank.cu), so a peer needs only the
 * arena's base address in its own address space to find everything.
 */
#ifndef CHORUS_DEVICE_DEV_GROUP_H_
#define CHORUS_DEVICE_DEV_GROUP_H_

#include <cuda_runtime.h>
#include "device/kernels/dev_comm.h"
#include "hostdev/dev_api.h"

/* Plans larger than the kernel arguments go through host-mapped slots, each reused only once the
 * launch that read it has finished (its event). */
#define CHR_DEV_WORK_SLOTS 4
#define CHR_DEV_WORK_SLOT_BYTES (64 << 10)

#define CHR_DEV_CTRL_BYTES 256   /* a received connection's control block (tail at +0) */
#define CHR_DEV_HEAD_BYTES 128   /* a sent connection's head word, on a line of its own */
#define CHR_DEV_ALIGN(x) (((x) + 255) & ~(size_t)255)

/* A connected peer, as its blob names it: what names the copy-engine mailboxes of the pair. */
struct chrDevPeerId {
  uint64_t token, serial; /* its process's random token, its rank's serial in that process */
  uint64_t pid;           /* its process id, as it sees it */
  int same;               /* in this process */
  int known;              /* connected */
};

struct chrCeRank;

struct chrDevRank {
  struct chrDevRankConfig cfg;    /* cfg.ringOrder points at ringOrder below */
  uint64_t serial;                /* this rank's number among the ranks its process made */
  struct chrDevPeerId* peerId;    /* nRanks */
  struct chrCeRank* ce;           /* copy-engine sends (ce_sends.h); NULL until the first */
  int* ringOrder;                 /* host copy */
  int* ringPos;                   /* rank -> ring position */
  int next, prev;                 /* ring neighbours */
  uint64_t ringHash;              /* of the ring order, so peers can check they agree */
  int nConns;                     /* connection indices: nChannels ring + p2pConns * nRanks point-to-point */
  size_t ringConnBytes;           /* one received ring connection: control block, SIMPLE and LL slots */
  size_t p2pConnBytes;            /* one received point-to-point connection (cfg.p2pStepBytes slots) */
  size_t recvBase;                /* arena offset of the first received connection */
  size_t sigOff;                  /* arena offset of the one-sided signal words, one per peer (signals.cu) */
  size_t arenaBytes;
  char* arena;                    /* device, zeroed: heads of sent, FIFOs and tails of received connections */
  volatile uint32_t* flags;       /* host-mapped page of this rank: abort at [0], error at [1] */
  uint32_t* flagsDev;
  char** peerBase;                /* nRanks: the peer's arena in this process (NULL: not connected) */
  char** netBlock;                /* nRanks: host-mapped ends to a peer on another host (net_ends.cu), or NULL */
  char** netGpuBlock;             /* nRanks: the slots of those ends that live in GPU memory (GPUDirect), or NULL */
  unsigned char* peerOpened;      /* nRanks: peerBase came from cudaIpcOpenMemHandle (closed at destroy) */
  /* The device comm: [chrDevComm][channels][p2p ends][ringOrder], built in img (host) and copied to
   * meta (device); connecting a peer rewrites only the ends that lead to it. */
  char* img;
  void* meta;
  size_t metaBytes, offChannels, offP2p, offOrder;
  struct chrDevComm* comm;        /* device address of the chrDevComm in meta */
  cudaStream_t copies;            /* private: initial and connect copies, never ordered with user streams */
  /* Engine copies of a launch (CHR_WORK_ENGINE works, local_copy.h): on `side`, forked from the launch's stream
   * before its kernels (fork) and joined back after them (join), so they run beside the kernels. */
  cudaStream_t side;
  cudaEvent_t fork, join;
  struct chrWork* workArea;       /* host-mapped, CHR_DEV_WORK_SLOTS slots */
  struct chrWork* workAreaDev;    /* the same, as the device addresses it */
  cudaEvent_t slotDone[CHR_DEV_WORK_SLOTS];
  int slotUsed[CHR_DEV_WORK_SLOTS];
  int nextSlot;
  /* Launch-path scratch, sized once so a launch allocates nothing: the channel that uses each
   * point-to-point end in the plan being checked (p2pConns * nRanks * 2). */
  signed char* p2pOwner;
};

/* The device comm's image (host) parts. */
static inline struct chrDevChannel* chrDevImgChannels(struct chrDevRank* rk) {
  return (struct chrDevChannel*)(rk->img + rk->offChannels);
}
static inline struct chrDevConn* chrDevImgP2p(struct chrDevRank* rk) { return (struct chrDevConn*)(rk->img + rk->offP2p); }

/* Whether works may name `peer`: connected through its arena or through the net (net_ends.cu). */
static inline int chrDevPeerReachable(const struct chrDevRank* rk, int peer) {
  return rk->peerBase[peer] != NULL || rk->netBlock[peer] != NULL;
}

/* Writes the image's bytes [off, off + bytes) into the device comm (on rk->copies). */
ncclResult_t chrDevPushImage(struct chrDevRank* rk, const size_t* offs, int n);

/* Frees the rank's net ends (net_ends.cu); no kernel may be using them. */
void chrDevNetEndsFree(struct chrDevRank* rk);

struct chrDevGroup {
  struct chrDevGroupConfig cfg;
  struct chrDevRank** ranks;      /* cfg.nRanks, each connected to every rank (itself included) */
};

/* This process's random token (rank.cu), as the blobs carry it. */
uint64_t chrDevProcToken(void);

/* Checks a rank configuration; no CUDA call (the group's checks run without a GPU). */
ncclResult_t chrDevCheckRankConfig(const struct chrDevRankConfig* cfg);

/* Loads every kernel on the current device, once per device (launch.cu). Under CUDA's lazy module
 * loading (the default) the first launch of a kernel loads it, and loading waits for the kernels
 * already running on the device: a rank's first launch of another kernel, queued while its earlier
 * kernel waits for a peer whose launch this same thread has not issued yet, would never return. */
ncclResult_t chrDevLoadKernels(void);

#endif /* CHORUS_DEVICE_DEV_GROUP_H_ */
