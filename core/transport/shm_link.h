/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_link.h: links between processes of one host through POSIX shared memory (transport/shm_link.c).
 *
 * The RECEIVER of a link owns one segment (header and slots); the sender maps it and writes each
 * step straight into it. The segment is an unnamed file (O_TMPFILE) the sender opens through
 * /proc/<pid>/fd/<fd>, so nothing is left behind even when every process is killed; a random name
 * under /dev/shm exists only while a sender in another pid namespace opens it.
 *
 * Credits. Each slot has two halves, used alternately, and a send of use u is done once use u-1 of
 * the slot is consumed: a send that fits in the connection's buffer never waits for its receive
 * (exec.c: the eager limit). Per slot s, all counters monotonic 64-bit (never reset, so no ABA):
 *   sender post(s, n):   h = fill[s][use % 2]: h.bytes = n (data of <= CHR_SHM_INLINE bytes also in
 *                        h.inl); h.filled = use + 1 (release); use += 1
 *   receiver test(s):    done when fill[s][(posts-1) % 2].filled (acquire) >= my posts of s
 *   receiver release(s): consumed[s] = my posts of s (release: my reads happen before)
 *   sender test(s):      done when consumed[s] (acquire) + 1 >= my fills of s
 * The m-th use of slot s on one side matches the m-th use on the other: both executors walk the same
 * step sequence. The receiver writes only its cache lines, the sender only its own.
 *
 * Sleeping. A side may sleep (futex) on the counter it waits for after raising its sleeping flag;
 * the other side looks at the flag after each fill or release. Each side orders its store before its
 * load: the sleeper with a heavy fence, the frequent side with a light one (util/asym_fence.h).
 *
 * By reference (exec/direct.h): fill[s][half].ref != 0 posts the address of the sender's own memory; the
 * receiver copies it with process_vm_readv (at most the bytes its step expects, through the kernel's
 * permission checks), and that send is done only once consumed. Dead peers, the probe that tells
 * whether the receiver may read, and pages committed as steps first need them: docs/design.md,
 * "How one call flows" (shm).
 */
#ifndef CHORUS_SHM_LINK_H_
#define CHORUS_SHM_LINK_H_

#include <stdatomic.h>
#include <stdint.h>
#include "transport/transport.h"

#define CHR_SHM_MAGIC 0x31304d4853524843ull /* "CHRSHM01" little-endian */
#define CHR_SHM_VERSION 6
#define CHR_SHM_NAME_PREFIX "/chorus-shm-"
#define CHR_SHM_NAME_LEN 64
#define CHR_SHM_DATA_OFFSET 4096 /* slots start on their own page */
#define CHR_SHM_HALVES 2

/* The segment's header. The receiver fills the first block before sending the name; afterwards
 * each side writes only its own block. Blocks are 128 bytes apart (adjacent-line prefetch). */
/* What the sender writes for one half of a slot: one cache line holding the counter, the size, the
 * address (by reference) and, for steps of up to CHR_SHM_INLINE bytes, the data itself, so a
 * receiver learns a small step in one transfer. */
#define CHR_SHM_INLINE 40
struct chrShmHalf {
  _Alignas(64) _Atomic uint64_t filled; /* the use this half last carried, plus one */
  _Atomic uint64_t bytes;
  _Atomic uint64_t ref;                 /* 0: the data is in the slot (or inline); else its address there */
  unsigned char inl[CHR_SHM_INLINE];    /* the data of a step of at most CHR_SHM_INLINE bytes */
};
_Static_assert(sizeof(struct chrShmHalf) == 64, "a half's header is one cache line");

struct chrShmHeader {
  /* Written once by the receiver, before the name leaves the process. */
  uint64_t magic;
  uint32_t version;
  uint32_t nSteps;       /* CHR_STEPS */
  uint64_t stepSize;
  uint64_t segmentSize;  /* CHR_SHM_DATA_OFFSET + CHR_SHM_HALVES * nSteps * stepSize */
  uint64_t key;          /* random, also sent over the bootstrap: proves it is the segment meant */
  int32_t recvRank, sendRank;
  int32_t channel, pad0;
  int64_t recvPid;
  uint64_t recvStartTime; /* /proc/<pid>/stat start time, 0 if unknown: guards against pid reuse */

  /* Receiver-written. */
  _Alignas(128) _Atomic uint64_t consumed[CHR_STEPS];
  _Atomic uint32_t recvClosed;
  _Atomic uint32_t recvSleeping; /* the receiver sleeps on filled[]: a fill wakes it */
  _Atomic uint32_t peerReads;    /* CHR_SHM_READS_*: can the receiver read the sender's memory */

  /* Sender-written. sendPid/sendStartTime are set before the sender acknowledges. */
  _Alignas(128) struct chrShmHalf fill[CHR_STEPS][CHR_SHM_HALVES];
  _Alignas(128) uint64_t probeAddr;    /* the sender's word holding key ^ CHR_SHM_PROBE_MIX, set before it acknowledges */
  int64_t sendPid;
  uint64_t sendStartTime;
  _Atomic uint32_t sendClosed;
  _Atomic uint32_t sendSleeping; /* the sender sleeps on consumed[]: a release wakes it */
};

#define CHR_SHM_READS_UNKNOWN 0
#define CHR_SHM_READS_YES 1
#define CHR_SHM_READS_NO 2
#define CHR_SHM_PROBE_MIX 0x9e3779b97f4a7c15ull

/* What the receiver sends its peer over the bootstrap (fixed size, validated by the sender). The
 * segment is named by name when name[0] != 0, else by descriptor: /proc/<pid>/fd/<fd>. */
struct chrShmInfo {
  uint64_t magic;
  uint64_t segmentSize;
  uint64_t stepSize;
  uint64_t key;
  int64_t pid;
  int32_t fd;
  int32_t pad;
  char name[CHR_SHM_NAME_LEN]; /* NUL-terminated */
};

/* The sender's answer: status CHR_SHM_ACK_OK = mapped and checked (the receiver may close and unlink),
 * CHR_SHM_ACK_NEED_NAME = the descriptor could not be opened here (send a name), else it failed. */
#define CHR_SHM_ACK_OK 0
#define CHR_SHM_ACK_FAILED 1
#define CHR_SHM_ACK_NEED_NAME 2
struct chrShmAck {
  uint64_t magic;
  int32_t status;
  int32_t pad;
};

/* Link state (link->priv). */
struct chrShmLink {
  struct chrShmHeader* hdr;
  char* base;              /* the mapping, segmentSize bytes */
  size_t segmentSize;
  char name[CHR_SHM_NAME_LEN];
  int unlinked;            /* the name is gone from /dev/shm (or never existed) */
  int fd;                  /* receiver: the segment's file, open until the sender has mapped it; else -1 */
  uint64_t uses[CHR_STEPS];/* my posts (recv) or fills (send) of each slot */
  uint64_t consumedSeen[CHR_STEPS]; /* send side: the release counters as last read (shm_link.c, slotReady) */
  int64_t peerPid;         /* 0: unknown */
  uint64_t peerStartTime;  /* 0: unknown */
  int checkPid;            /* the peer's pid is visible from here (same pid namespace) */
  uint64_t lastDoneNs, lastCheckNs;
  /* Bytes at the start of each slot's halves backed by memory so far (send side: what it wrote;
   * recv side: what it read into by reference). The segment's pages are committed as steps first
   * need them (shmPrepare), so a link holds what it has carried, not what it could carry, and
   * running out is an error of the step that needed more. */
  size_t committed[CHR_STEPS][CHR_SHM_HALVES];
  /* By reference. Send side: the probe word, and whether each slot's last post was by reference.
   * Recv side: where each posted step goes (user memory, or NULL: the slot) and its exact size. */
  uint64_t probe;
  int byRef[CHR_STEPS];
  char* into[CHR_STEPS];
  size_t intoBytes[CHR_STEPS];
};

extern const struct chrTransportOps chrShmTransportOps;

struct chrTransportCtx; /* transport/transport_ctx.h */

/* Connect, over the comm's bootstrap, one send link to sendPeer and one recv link from recvPeer on
 * channel `channel` (either peer may be -1, and its out pointer NULL, to connect one direction only).
 * Collective with the peers: sendPeer must call it with us as recvPeer and vice versa. Both links
 * get CHR_STEPS slots of stepSize bytes. On failure nothing is left: no links, no mapping, no name. */
ncclResult_t chrShmConnectPair(const struct chrTransportCtx* ctx, int channel, int sendPeer, int recvPeer,
                               size_t stepSize, struct chrLink** send, struct chrLink** recv);

/* The steps of chrShmConnectPair, for tests and for callers with their own exchange:
 * RecvCreate makes the segment and the link and fills *info (to send to the sender), by descriptor;
 * SendAttach maps the segment that `info` names, checks it, and makes the link (the info is
 * untrusted: pid, fd, name, sizes, magic and key are validated). When a descriptor cannot be opened
 * from here it returns ncclSuccess with *send NULL and *needName = 1: then RecvPublishName gives the
 * segment a name, refills *info, and the sender attaches again. RecvAttached closes the descriptor and
 * unlinks any name once the sender acknowledged (also fine to call when it failed). */
ncclResult_t chrShmRecvCreate(int myRank, int peer, int channel, size_t stepSize, struct chrLink** recv,
                              struct chrShmInfo* info);
ncclResult_t chrShmSendAttach(int myRank, int peer, int channel, size_t stepSize, const struct chrShmInfo* info,
                              struct chrLink** send, int* needName);
ncclResult_t chrShmRecvPublishName(struct chrLink* recv, struct chrShmInfo* info);
void chrShmRecvAttached(struct chrLink* recv);

/* Start time of a process (field 22 of /proc/<pid>/stat), 0 if unknown; *zombie = exited, not reaped. */
uint64_t chrShmProcStartTime(int64_t pid, int* zombie);

#endif /* CHORUS_SHM_LINK_H_ */
