/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * shm_link.c: links through POSIX shared memory between processes of one host. The protocol and the
 * reason each slot has two halves are described in shm_link.h.
 *
 * Setup (chrShmConnectPair), per link: the receiver creates an unnamed segment and sends
 * {pid, fd, size, step size, key} to the sender over the bootstrap; the sender validates that (it is
 * untrusted input), opens /proc/<pid>/fd/<fd>, maps it, checks the header and acknowledges; then the
 * receiver closes its descriptor. If the sender cannot open the descriptor, it asks for a name, and a
 * second round does the same through a random name under /dev/shm, which both sides unlink once
 * mapped. Every rank always sends each of its messages, with a failure marker when its own part
 * failed, so that a failure on one side is reported on the other at once and not after a timeout.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>
#include "bootstrap/bootstrap.h"
#include "config/param.h"
#include "util/asym_fence.h"
#include "util/futex.h"
#include "util/idle.h"
#include "log/check.h"
#include "log/log.h"
#include "transport/shm_link.h"
#include "transport/transport_ctx.h"

#define TAG_SHM_INFO 0x20000 /* + channel; net uses 0x10000 + channel */
#define TAG_SHM_ACK 0x21000
#define TAG_SHM_NAME 0x22000 /* the second round, by name */
#define TAG_SHM_NAME_ACK 0x23000
#define CHECK_PEER_NS 100000000ull /* look at the peer after 100 ms without progress, then every 100 ms */

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2 && ATOMIC_INT_LOCK_FREE == 2,
               "shared-memory counters need lock-free atomics (they are shared between processes)");
_Static_assert(sizeof(struct chrShmHeader) <= CHR_SHM_DATA_OFFSET, "the header must fit before the slots");

#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 /* Linux 5.14 */
#endif
#define PAGE 4096u

/* Whether this kernel populates on request (MADV_POPULATE_WRITE): 1 yes, 0 no (commit everything at
 * setup), -1 not known yet. Probed on the first segment's header page, which setup writes anyway. */
static _Atomic int lazyCommit = -1;

static int probeLazyCommit(void* page) {
  int known = atomic_load(&lazyCommit);
  if (known >= 0) return known;
  int ok = madvise(page, PAGE, MADV_POPULATE_WRITE) == 0 || errno != EINVAL;
  atomic_store(&lazyCommit, ok);
  return ok;
}

static char* slotData(const struct chrShmLink* sl, size_t stepSize, int slot, uint64_t half) {
  return sl->base + CHR_SHM_DATA_OFFSET + ((size_t)half * CHR_STEPS + (size_t)slot) * stepSize;
}

static ncclResult_t segmentSizeFor(size_t stepSize, size_t* out) {
  if (stepSize == 0 || stepSize % 64 != 0 || stepSize > ((size_t)1 << 40) / (CHR_SHM_HALVES * CHR_STEPS))
    return chrFail(ncclInvalidArgument, "shm link: step size %zu is not a positive multiple of 64 below 2^40/%d",
                   stepSize, CHR_SHM_HALVES * CHR_STEPS);
  *out = CHR_SHM_DATA_OFFSET + (size_t)CHR_SHM_HALVES * CHR_STEPS * stepSize;
  return ncclSuccess;
}

uint64_t chrShmProcStartTime(int64_t pid, int* zombie) {
  char path[64], buf[1024];
  if (zombie) *zombie = 0;
  snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)pid);
  FILE* f = fopen(path, "r");
  if (f == NULL) return 0;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  char* p = strrchr(buf, ')'); /* the command name may hold spaces and parentheses */
  if (p == NULL || p[1] != ' ' || p[2] == '\0') return 0;
  p += 2; /* field 3: state */
  if (zombie) *zombie = (*p == 'Z' || *p == 'X' || *p == 'x');
  for (int field = 3; field < 22; field++) { /* move to field 22: starttime */
    p = strchr(p, ' ');
    if (p == NULL) return 0;
    p++;
  }
  return strtoull(p, NULL, 10);
}

/* Whether the pid the peer wrote is a process we can see (it may live in another pid namespace). */
static int pidVisible(int64_t pid, uint64_t startTime) {
  if (pid <= 0) return 0;
  if (kill((pid_t)pid, 0) != 0 && errno != EPERM) return 0;
  uint64_t st = chrShmProcStartTime(pid, NULL);
  return startTime == 0 || st == 0 || st == startTime;
}

static int peerAlive(const struct chrShmLink* sl) {
  if (kill((pid_t)sl->peerPid, 0) != 0 && errno == ESRCH) return 0;
  int zombie = 0;
  uint64_t st = chrShmProcStartTime(sl->peerPid, &zombie);
  if (zombie) return 0; /* exited; its parent has not reaped it yet */
  if (st != 0 && sl->peerStartTime != 0 && st != sl->peerStartTime) return 0; /* pid reused */
  return 1;
}

static ncclResult_t randomU64(uint64_t* out) {
  if (getrandom(out, sizeof(*out), 0) == (ssize_t)sizeof(*out)) return ncclSuccess;
  int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
  ssize_t n = fd >= 0 ? read(fd, out, sizeof(*out)) : -1;
  if (fd >= 0) close(fd);
  if (n != (ssize_t)sizeof(*out)) return chrFail(ncclSystemError, "shm link: no random numbers: %s", strerror(errno));
  return ncclSuccess;
}

/* A name is "/chorus-shm-" followed by letters, digits, '-' and '_': nothing that walks directories. */
static int validName(const char* name) {
  size_t len = strnlen(name, CHR_SHM_NAME_LEN);
  size_t prefix = strlen(CHR_SHM_NAME_PREFIX);
  if (len == CHR_SHM_NAME_LEN || len <= prefix || strncmp(name, CHR_SHM_NAME_PREFIX, prefix) != 0) return 0;
  for (size_t i = 1; i < len; i++) {
    char c = name[i];
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
      return 0;
  }
  return 1;
}

static void unlinkName(struct chrShmLink* sl) {
  if (sl->unlinked || sl->name[0] == '\0') return;
  shm_unlink(sl->name); /* ENOENT: the other side was first */
  sl->unlinked = 1;
}

/* ---- data path ---- */

/* Post `slot`: send side, `bytes` of data in the slot (ref 0) or at address ref of this process (user
 * memory, by reference); recv side, a receive into the slot (into NULL) or into user memory. */
static ncclResult_t postStep(struct chrLink* link, int slot, size_t bytes, const void* ref, void* into) {
  struct chrShmLink* sl = link->priv;
  if (slot < 0 || slot >= CHR_STEPS) return chrFail(ncclInternalError, "shm link: slot %d out of range", slot);
  if (bytes > link->stepSize)
    return chrFail(ncclInternalError, "shm link %s rank %d: post of %zu bytes into a %zu-byte slot",
                   link->isSend ? "to" : "from", link->peer, bytes, link->stepSize);
  struct chrShmHeader* hdr = sl->hdr;
  if (link->isSend) {
    uint64_t use = sl->uses[slot];
    struct chrShmHalf* h = &hdr->fill[slot][use % CHR_SHM_HALVES];
    if (ref == NULL && bytes <= CHR_SHM_INLINE) memcpy(h->inl, link->slots[slot], bytes);
    atomic_store_explicit(&h->bytes, (uint64_t)bytes, memory_order_relaxed);
    atomic_store_explicit(&h->ref, (uint64_t)(uintptr_t)ref, memory_order_relaxed);
    atomic_store_explicit(&h->filled, use + 1, memory_order_release); /* data and size before this */
    chrFenceLight(); /* the fill before the look at the sleeper's flag (util/asym_fence.h) */
    if (atomic_load_explicit(&hdr->recvSleeping, memory_order_relaxed))
      chrFutexWakeAll((const volatile uint32_t*)&h->filled, 1);
    sl->uses[slot] = use + 1;
    sl->byRef[slot] = ref != NULL;
    link->slots[slot] = slotData(sl, link->stepSize, slot, (use + 1) % CHR_SHM_HALVES); /* the next write */
  } else {
    sl->into[slot] = into;
    sl->intoBytes[slot] = bytes;
    sl->uses[slot]++;
  }
  return ncclSuccess;
}

static ncclResult_t shmPost(struct chrLink* link, int slot, size_t bytes) {
  return postStep(link, slot, bytes, NULL, NULL);
}

static ncclResult_t shmPostUser(struct chrLink* link, int slot, void* data, size_t bytes, void* handle) {
  (void)handle;
  if (data == NULL) return chrFail(ncclInternalError, "shm link: direct post without user memory");
  return link->isSend ? postStep(link, slot, bytes, data, NULL) : postStep(link, slot, bytes, NULL, data);
}

/* Direct steps need the receiver to read the sender's memory (shm_link.h, "By reference"). */
static ncclResult_t shmRegUser(struct chrLink* link, void* data, size_t bytes, void** handle) {
  struct chrShmLink* sl = link->priv;
  (void)bytes;
  *handle = atomic_load_explicit(&sl->hdr->peerReads, memory_order_acquire) == CHR_SHM_READS_YES ? data : NULL;
  return ncclSuccess;
}

static void shmDeregUser(struct chrLink* link, void* handle) {
  (void)link;
  (void)handle;
}

/* Commit the first `bytes` of `half` of `slot` (see shm_link.h). */
static ncclResult_t commitHalf(struct chrLink* link, struct chrShmLink* sl, int slot, uint64_t half, size_t bytes) {
  if (bytes <= sl->committed[slot][half]) return ncclSuccess;
  size_t len = (bytes + PAGE - 1) / PAGE * PAGE;
  if (len > link->stepSize) len = link->stepSize;
  char* at = slotData(sl, link->stepSize, slot, half);
  while (madvise(at, len, MADV_POPULATE_WRITE) != 0) {
    if (errno == EINTR) continue;
    const int e = errno;
    return chrFail(ncclSystemError,
                   "shm link to rank %d on channel %d: no shared memory for a %zu-byte step (%s): /dev/shm is full "
                   "or a memory limit is reached (a link holds up to %zu bytes, 2 x NCCL_BUFFSIZE)",
                   link->peer, link->channel, bytes,
                   e == EFAULT ? "the shared-memory mount is full" : e == ENOMEM ? "out of memory" : strerror(e),
                   sl->segmentSize);
  }
  sl->committed[slot][half] = len;
  return ncclSuccess;
}

/* The half of `slot` that the next write goes to. */
static ncclResult_t shmPrepare(struct chrLink* link, int slot, size_t bytes) {
  struct chrShmLink* sl = link->priv;
  return commitHalf(link, sl, slot, sl->uses[slot] % CHR_SHM_HALVES, bytes);
}

/* Copy n bytes at the sender's address `from` to `to`: a step posted by reference. */
static ncclResult_t readPeer(struct chrLink* link, struct chrShmLink* sl, uint64_t from, char* to, size_t n) {
  size_t done = 0;
  while (done < n) {
    struct iovec local = {to + done, n - done}, remote = {(void*)(uintptr_t)(from + done), n - done};
    ssize_t got = process_vm_readv((pid_t)sl->peerPid, &local, 1, &remote, 1, 0);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0)
      return chrFail(ncclRemoteError, "shm link from rank %d on channel %d: reading %zu bytes of its memory (pid %lld, "
                     "address 0x%llx) failed: %s", link->peer, link->channel, n, (long long)sl->peerPid,
                     (unsigned long long)from, got < 0 ? strerror(errno) : "nothing read");
    done += (size_t)got;
  }
  return ncclSuccess;
}

/* A send is done when the slot's previous use is consumed (the next write goes to its half), or, by
 * reference, when this use is (the receiver has read the user's memory). */
static int sendDone(const struct chrShmLink* sl, int slot, uint64_t consumed) {
  return consumed + (sl->byRef[slot] ? 0 : 1) >= sl->uses[slot];
}

/* The sender reads the receiver's release counters (one cache line) only when the values it saw last
 * do not already free the slot: usually they do (a slot's previous use is CHR_STEPS steps back), so
 * the line stays with the receiver and its releases do not wait for it to come back. */
static int slotReady(const struct chrLink* link, struct chrShmLink* sl, int slot) {
  const struct chrShmHeader* hdr = sl->hdr;
  if (link->isSend) {
    if (sendDone(sl, slot, sl->consumedSeen[slot])) return 1;
    for (int i = 0; i < CHR_STEPS; i++) sl->consumedSeen[i] = atomic_load_explicit(&hdr->consumed[i], memory_order_acquire);
    return sendDone(sl, slot, sl->consumedSeen[slot]);
  }
  return atomic_load_explicit(&hdr->fill[slot][(sl->uses[slot] - 1) % CHR_SHM_HALVES].filled, memory_order_acquire) >=
         sl->uses[slot];
}

static ncclResult_t complete(struct chrLink* link, struct chrShmLink* sl, int slot, int* done, size_t* bytes) {
  if (!link->isSend) {
    uint64_t half = (sl->uses[slot] - 1) % CHR_SHM_HALVES;
    struct chrShmHalf* h = &sl->hdr->fill[slot][half];
    uint64_t n = atomic_load_explicit(&h->bytes, memory_order_relaxed);
    const uint64_t ref = atomic_load_explicit(&h->ref, memory_order_relaxed);
    if (n > link->stepSize)
      return chrFail(ncclRemoteError, "shm link from rank %d on channel %d: peer wrote a size of %llu bytes into a %zu-byte slot",
                     link->peer, link->channel, (unsigned long long)n, link->stepSize);
    char* data = ref == 0 && n <= CHR_SHM_INLINE ? (char*)h->inl : slotData(sl, link->stepSize, slot, half);
    link->slots[slot] = data;
    if (sl->into[slot] != NULL && n != sl->intoBytes[slot])
      return chrFail(ncclRemoteError, "shm link from rank %d on channel %d: peer sent %llu bytes, this step takes %zu "
                     "(ranks disagree on the call?)", link->peer, link->channel, (unsigned long long)n,
                     sl->intoBytes[slot]);
    if (ref != 0 && atomic_load_explicit(&sl->hdr->peerReads, memory_order_relaxed) != CHR_SHM_READS_YES)
      return chrFail(ncclRemoteError, "shm link from rank %d on channel %d: peer posted its memory though this rank "
                     "cannot read it", link->peer, link->channel);
    if (ref != 0) {
      if (sl->into[slot] == NULL) CHECK(commitHalf(link, sl, slot, half, (size_t)n));
      CHECK(readPeer(link, sl, ref, sl->into[slot] ? sl->into[slot] : data, (size_t)n));
    } else if (sl->into[slot] != NULL) {
      memcpy(sl->into[slot], data, (size_t)n);
    }
    if (bytes) *bytes = (size_t)n;
  } else if (bytes) {
    uint64_t half = (sl->uses[slot] - 1) % CHR_SHM_HALVES;
    *bytes = (size_t)atomic_load_explicit(&sl->hdr->fill[slot][half].bytes, memory_order_relaxed);
  }
  sl->lastDoneNs = 0;
  *done = 1;
  return ncclSuccess;
}

/* Nothing moved for a while: is the peer still there? Returns an error only when it will never move. */
static ncclResult_t checkPeer(struct chrLink* link, struct chrShmLink* sl, int slot, int* done, size_t* bytes) {
  const char* dir = link->isSend ? "to" : "from";
  int closed = link->isSend ? (int)atomic_load_explicit(&sl->hdr->recvClosed, memory_order_acquire)
                            : (int)atomic_load_explicit(&sl->hdr->sendClosed, memory_order_acquire);
  int dead = !closed && sl->checkPid && !peerAlive(sl);
  if (!closed && !dead) return ncclSuccess;
  /* It may have made its last move just before going: look once more. */
  if (slotReady(link, sl, slot)) return complete(link, sl, slot, done, bytes);
  if (closed)
    return chrFail(ncclRemoteError, "shm link %s rank %d (pid %lld) on channel %d: the peer closed its end (communicator destroyed or aborted)",
                   dir, link->peer, (long long)sl->peerPid, link->channel);
  return chrFail(ncclRemoteError, "shm link %s rank %d on channel %d: rank %d (pid %lld) exited", dir, link->peer,
                 link->channel, link->peer, (long long)sl->peerPid);
}

static ncclResult_t shmTest(struct chrLink* link, int slot, int* done, size_t* bytes) {
  struct chrShmLink* sl = link->priv;
  *done = 0;
  if (slot < 0 || slot >= CHR_STEPS) return chrFail(ncclInternalError, "shm link: slot %d out of range", slot);
  if (sl->uses[slot] == 0) return chrFail(ncclInternalError, "shm link: test of slot %d before any post", slot);
  if (slotReady(link, sl, slot)) return complete(link, sl, slot, done, bytes);
  uint64_t now = chrNowNs();
  if (sl->lastDoneNs == 0) sl->lastDoneNs = now;
  if (now - sl->lastDoneNs < CHECK_PEER_NS || now - sl->lastCheckNs < CHECK_PEER_NS) return ncclSuccess;
  sl->lastCheckNs = now;
  return checkPeer(link, sl, slot, done, bytes);
}

static ncclResult_t shmRelease(struct chrLink* link, int slot) {
  struct chrShmLink* sl = link->priv;
  if (slot < 0 || slot >= CHR_STEPS || link->isSend)
    return chrFail(ncclInternalError, "shm link: release of slot %d on a %s link", slot, link->isSend ? "send" : "recv");
  /* Our reads of the slot happen before this store, so before the sender writes its half again. */
  atomic_store_explicit(&sl->hdr->consumed[slot], sl->uses[slot], memory_order_release);
  chrFenceLight(); /* the release before the look at the sleeper's flag */
  if (atomic_load_explicit(&sl->hdr->sendSleeping, memory_order_relaxed))
    chrFutexWakeAll((const volatile uint32_t*)&sl->hdr->consumed[slot], 1);
  return ncclSuccess;
}

/* The low half of a counter is its futex word (little-endian: the same address). */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "futex words are the low halves of 64-bit counters");

static int shmSleepArm(struct chrLink* link, int slot, struct chrFutexWord* word) {
  struct chrShmLink* sl = link->priv;
  struct chrShmHeader* hdr = sl->hdr;
  _Atomic uint32_t* flag = link->isSend ? &hdr->sendSleeping : &hdr->recvSleeping;
  _Atomic uint64_t* counter = link->isSend ? &hdr->consumed[slot]
                                            : &hdr->fill[slot][(sl->uses[slot] - 1) % CHR_SHM_HALVES].filled;
  atomic_store_explicit(flag, 1, memory_order_relaxed);
  if (chrFenceHeavy() != 0) { /* the flag before the last look at the counter, in the waker too */
    atomic_store_explicit(flag, 0, memory_order_relaxed);
    return -1;
  }
  const uint64_t v = atomic_load_explicit(counter, memory_order_relaxed);
  const int ready = link->isSend ? sendDone(sl, slot, v) : v >= sl->uses[slot];
  if (ready) {
    atomic_store_explicit(flag, 0, memory_order_relaxed);
    return 0;
  }
  word->addr = (const volatile uint32_t*)counter;
  word->expected = (uint32_t)v;
  word->shared = 1;
  return 1;
}

static void shmSleepDisarm(struct chrLink* link) {
  struct chrShmLink* sl = link->priv;
  atomic_store_explicit(link->isSend ? &sl->hdr->sendSleeping : &sl->hdr->recvSleeping, 0, memory_order_relaxed);
}

static void shmClose(struct chrLink* link) {
  if (link == NULL) return;
  struct chrShmLink* sl = link->priv;
  if (sl != NULL) {
    if (sl->hdr != NULL) {
      if (link->isSend) atomic_store_explicit(&sl->hdr->sendClosed, 1, memory_order_release);
      else atomic_store_explicit(&sl->hdr->recvClosed, 1, memory_order_release);
      /* A peer asleep on one of our counters learns of the close now, not at its timeout. */
      for (int i = 0; i < CHR_STEPS; i++)
        for (int h = 0; h < (link->isSend ? CHR_SHM_HALVES : 1); h++)
          chrFutexWakeAll((const volatile uint32_t*)(link->isSend ? &sl->hdr->fill[i][h].filled : &sl->hdr->consumed[i]), 1);
    }
    if (sl->base != NULL) munmap(sl->base, sl->segmentSize);
    if (sl->fd >= 0) close(sl->fd);
    unlinkName(sl);
    free(sl);
  }
  free(link);
}

const struct chrTransportOps chrShmTransportOps = {
    .name = "shm",
    .post = shmPost,
    .prepare = shmPrepare,
    .test = shmTest,
    .release = shmRelease,
    .close = shmClose,
    .regUser = shmRegUser,
    .deregUser = shmDeregUser,
    .postUser = shmPostUser,
    .sleepArm = shmSleepArm,
    .sleepDisarm = shmSleepDisarm,
    .directMinParam = CHR_P_SHM_DIRECT_MIN_BYTES,
    .directSendWaits = 1,
};

/* ---- setup ---- */

static ncclResult_t newLink(int peer, int channel, int isSend, size_t stepSize, struct chrLink** out) {
  struct chrLink* link = calloc(1, sizeof(*link));
  struct chrShmLink* sl = calloc(1, sizeof(*sl));
  if (link == NULL || sl == NULL) {
    free(link);
    free(sl);
    return chrFail(ncclSystemError, "out of memory for an shm link");
  }
  sl->unlinked = 1; /* until there is a name */
  sl->fd = -1;
  link->ops = &chrShmTransportOps;
  snprintf(link->via, sizeof(link->via), "shm");
  link->peer = peer;
  link->channel = channel;
  link->isSend = isSend;
  link->stepSize = stepSize;
  link->priv = sl;
  *out = link;
  return ncclSuccess;
}

/* An unnamed file in the shm mount (O_TMPFILE), or, where the mount cannot make one, a named segment
 * (shm_open) whose name the caller publishes at once. */
static ncclResult_t createSegmentFile(struct chrShmLink* sl, int peer, int* named) {
  *named = 0;
  sl->fd = open("/dev/shm", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  if (sl->fd >= 0) return ncclSuccess;
  INFO(NCCL_SHM, "shm link from rank %d: no unnamed file in /dev/shm (%s); using a named segment", peer,
       strerror(errno));
  *named = 1;
  for (int attempt = 0; sl->fd < 0; attempt++) {
    uint64_t r;
    CHECK(randomU64(&r));
    snprintf(sl->name, sizeof(sl->name), "%s%d-%016llx", CHR_SHM_NAME_PREFIX, (int)getpid(), (unsigned long long)r);
    sl->fd = shm_open(sl->name, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (sl->fd < 0 && (errno != EEXIST || attempt >= 8)) {
      ncclResult_t res = chrFail(ncclSystemError, "shm link from rank %d: shm_open(%s): %s", peer, sl->name, strerror(errno));
      sl->name[0] = '\0';
      return res;
    }
  }
  sl->unlinked = 0; /* from here on, close() removes the name */
  return ncclSuccess;
}

ncclResult_t chrShmRecvCreate(int myRank, int peer, int channel, size_t stepSize, struct chrLink** recv,
                              struct chrShmInfo* info) {
  size_t size = 0;
  ncclResult_t res;
  struct chrLink* link = NULL;
  chrFenceInit(); /* before this process's first post or release */
  *recv = NULL;
  CHECK(segmentSizeFor(stepSize, &size));
  CHECK(newLink(peer, channel, 0, stepSize, &link));
  struct chrShmLink* sl = link->priv;
  uint64_t key;
  int named = 0;
  CHECK_GOTO(randomU64(&key), res, fail_close_link);
  CHECK_GOTO(createSegmentFile(sl, peer, &named), res, fail_close_link);
  if (ftruncate(sl->fd, (off_t)size) != 0) {
    res = chrFail(ncclSystemError, "shm link from rank %d: ftruncate of a %zu-byte segment: %s", peer, size, strerror(errno));
    goto fail_close_link;
  }
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, sl->fd, 0);
  if (base == MAP_FAILED) {
    res = chrFail(ncclSystemError, "shm link from rank %d: mmap of a %zu-byte segment: %s", peer, size, strerror(errno));
    goto fail_close_link;
  }
  if (madvise(base, PAGE, MADV_POPULATE_WRITE) != 0 && errno != EINVAL) { /* the header, written next */
    res = chrFail(ncclSystemError, "shm link from rank %d: no memory for the segment's header in /dev/shm: %s", peer,
                  strerror(errno));
    munmap(base, size);
    goto fail_close_link;
  }
  if (!probeLazyCommit(base)) {
    /* No populate on request: reserve every page now, so a full /dev/shm fails here, not as SIGBUS. */
    int err = posix_fallocate(sl->fd, 0, (off_t)size);
    if (err != 0 && err != EOPNOTSUPP && err != EINVAL && err != ENOSYS) {
      res = chrFail(ncclSystemError, "shm link from rank %d: cannot reserve %zu bytes in /dev/shm: %s", peer, size,
                    strerror(err));
      munmap(base, size);
      goto fail_close_link;
    }
  }
  sl->base = base;
  sl->segmentSize = size;
  sl->hdr = base;
  struct chrShmHeader* hdr = sl->hdr;
  memset(hdr, 0, sizeof(*hdr));
  hdr->magic = CHR_SHM_MAGIC;
  hdr->version = CHR_SHM_VERSION;
  hdr->nSteps = CHR_STEPS;
  hdr->stepSize = stepSize;
  hdr->segmentSize = size;
  hdr->key = key;
  hdr->recvRank = myRank;
  hdr->sendRank = peer;
  hdr->channel = channel;
  hdr->recvPid = getpid();
  hdr->recvStartTime = chrShmProcStartTime(getpid(), NULL);
  for (int i = 0; i < CHR_STEPS; i++) link->slots[i] = slotData(sl, stepSize, i, 0);

  memset(info, 0, sizeof(*info));
  info->magic = CHR_SHM_MAGIC;
  info->segmentSize = size;
  info->stepSize = stepSize;
  info->key = key;
  info->pid = getpid();
  info->fd = sl->fd;
  if (named) snprintf(info->name, sizeof(info->name), "%s", sl->name);
  *recv = link;
  return ncclSuccess;

fail_close_link:
  shmClose(link); /* closes the file and unlinks the name when there is one */
  return res;
}

ncclResult_t chrShmRecvPublishName(struct chrLink* recv, struct chrShmInfo* info) {
  struct chrShmLink* sl = recv->priv;
  if (sl->fd < 0) return chrFail(ncclInternalError, "shm link from rank %d: no segment file to name", recv->peer);
  if (sl->name[0] != '\0') {
    snprintf(info->name, sizeof(info->name), "%s", sl->name);
    return ncclSuccess;
  }
  char self[64], path[CHR_SHM_NAME_LEN + 16];
  snprintf(self, sizeof(self), "/proc/self/fd/%d", sl->fd);
  for (int attempt = 0;; attempt++) {
    uint64_t r;
    CHECK(randomU64(&r));
    snprintf(sl->name, sizeof(sl->name), "%s%d-%016llx", CHR_SHM_NAME_PREFIX, (int)getpid(), (unsigned long long)r);
    snprintf(path, sizeof(path), "/dev/shm%s", sl->name);
    if (linkat(AT_FDCWD, self, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0) break;
    if (errno != EEXIST || attempt >= 8) {
      ncclResult_t res = chrFail(ncclSystemError, "shm link from rank %d: cannot name its segment %s: %s", recv->peer,
                                 path, strerror(errno));
      sl->name[0] = '\0';
      return res;
    }
  }
  sl->unlinked = 0;
  INFO(NCCL_SHM, "shm link from rank %d: the peer cannot open our descriptor; segment named %s until it has mapped it",
       recv->peer, sl->name);
  snprintf(info->name, sizeof(info->name), "%s", sl->name);
  return ncclSuccess;
}

/* Open the segment `info` names: by name, or by the receiver's descriptor. *fd = -1 and *needName = 1
 * when the descriptor cannot be reached from here (no error: the receiver then sends a name). */
static ncclResult_t openSegment(int peer, int channel, const struct chrShmInfo* info, struct chrShmLink* sl, int* fd,
                                int* needName) {
  *fd = -1;
  *needName = 0;
  if (info->name[0] != '\0') {
    if (!validName(info->name))
      return chrFail(ncclRemoteError, "shm link to rank %d on channel %d: bad segment name in its setup message", peer,
                     channel);
    snprintf(sl->name, sizeof(sl->name), "%s", info->name);
    *fd = shm_open(sl->name, O_RDWR | O_CLOEXEC, 0);
    if (*fd < 0)
      return chrFail(ncclSystemError, "shm link to rank %d on channel %d: shm_open(%s): %s (is the peer on another host, or in another /dev/shm?)",
                     peer, channel, sl->name, strerror(errno));
    return ncclSuccess;
  }
  if (info->pid <= 0 || info->pid > INT32_MAX || info->fd < 0)
    return chrFail(ncclRemoteError, "shm link to rank %d on channel %d: bad segment descriptor in its setup message (pid %lld, fd %d)",
                   peer, channel, (long long)info->pid, (int)info->fd);
  char path[64];
  snprintf(path, sizeof(path), "/proc/%lld/fd/%d", (long long)info->pid, (int)info->fd);
  *fd = open(path, O_RDWR | O_CLOEXEC);
  if (*fd < 0) {
    INFO(NCCL_SHM, "shm link to rank %d on channel %d: cannot open %s (%s); asking for a name", peer, channel, path,
         strerror(errno));
    *needName = 1;
  }
  return ncclSuccess;
}

ncclResult_t chrShmSendAttach(int myRank, int peer, int channel, size_t stepSize, const struct chrShmInfo* info,
                              struct chrLink** send, int* needName) {
  size_t size = 0;
  ncclResult_t res;
  int fd = -1;
  chrFenceInit(); /* before this process's first post or release */
  *send = NULL;
  *needName = 0;
  CHECK(segmentSizeFor(stepSize, &size));
  if (info->magic != CHR_SHM_MAGIC)
    return chrFail(ncclRemoteError, "shm link to rank %d on channel %d: bad setup message (magic 0x%llx)", peer, channel,
                   (unsigned long long)info->magic);
  if (info->stepSize != stepSize || info->segmentSize != size)
    return chrFail(ncclInvalidUsage, "shm link to rank %d on channel %d: its slots are %llu bytes (segment %llu), ours %zu (segment %zu): is NCCL_BUFFSIZE the same on every rank?",
                   peer, channel, (unsigned long long)info->stepSize, (unsigned long long)info->segmentSize, stepSize, size);
  if (strnlen(info->name, sizeof(info->name)) == sizeof(info->name))
    return chrFail(ncclRemoteError, "shm link to rank %d on channel %d: bad segment name in its setup message", peer, channel);

  struct chrLink* link = NULL;
  CHECK(newLink(peer, channel, 1, stepSize, &link));
  struct chrShmLink* sl = link->priv;
  CHECK_GOTO(openSegment(peer, channel, info, sl, &fd, needName), res, fail_close_link);
  if (*needName) {
    shmClose(link);
    return ncclSuccess;
  }
  /* A name stays until the header is checked: a failed check must not remove someone else's segment. */
  struct stat st;
  if (fstat(fd, &st) != 0) {
    res = chrFail(ncclSystemError, "shm link to rank %d: fstat of its segment: %s", peer, strerror(errno));
    goto fail_close_fd;
  }
  if ((uint64_t)st.st_size != size) {
    res = chrFail(ncclRemoteError, "shm link to rank %d on channel %d: its segment is %lld bytes, expected %zu", peer,
                  channel, (long long)st.st_size, size);
    goto fail_close_fd;
  }
  void* base = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (base == MAP_FAILED) {
    res = chrFail(ncclSystemError, "shm link to rank %d: mmap of %zu bytes of its segment: %s", peer, size, strerror(errno));
    goto fail_close_fd;
  }
  close(fd);
  sl->base = base;
  sl->segmentSize = size;
  struct chrShmHeader* hdr = base;
  if (hdr->magic != CHR_SHM_MAGIC || hdr->version != CHR_SHM_VERSION || hdr->nSteps != CHR_STEPS ||
      hdr->stepSize != stepSize || hdr->segmentSize != size || hdr->key != info->key || hdr->recvRank != peer ||
      hdr->sendRank != myRank || hdr->channel != channel) {
    res = chrFail(ncclRemoteError, "shm link to rank %d on channel %d: the segment's header does not match its setup message",
                  peer, channel);
    goto fail_close_link; /* sl->hdr stays NULL: we write nothing into a segment that is not ours */
  }
  sl->hdr = hdr;
  if (sl->name[0] != '\0') {
    sl->unlinked = 0;
    unlinkName(sl); /* mapped and checked: the name has served its purpose */
  }
  hdr->sendPid = getpid();
  hdr->sendStartTime = chrShmProcStartTime(getpid(), NULL);
  sl->probe = hdr->key ^ CHR_SHM_PROBE_MIX;
  hdr->probeAddr = (uint64_t)(uintptr_t)&sl->probe;
  sl->peerPid = hdr->recvPid;
  sl->peerStartTime = hdr->recvStartTime;
  sl->checkPid = pidVisible(sl->peerPid, sl->peerStartTime);
  if (!sl->checkPid)
    INFO(NCCL_SHM, "shm link to rank %d: its pid %lld is not visible here (other pid namespace?); relying on CHORUS_TIMEOUT",
         peer, (long long)sl->peerPid);
  for (int i = 0; i < CHR_STEPS; i++) link->slots[i] = slotData(sl, stepSize, i, 0);
  if (!probeLazyCommit(base)) /* the receiver reserved every page: nothing to commit later */
    for (int i = 0; i < CHR_STEPS; i++)
      for (int h = 0; h < CHR_SHM_HALVES; h++) sl->committed[i][h] = stepSize;
  *send = link;
  return ncclSuccess;

fail_close_fd:
  close(fd);
fail_close_link:
  shmClose(link);
  return res;
}

void chrShmRecvAttached(struct chrLink* recv) {
  struct chrShmLink* sl = recv->priv;
  if (sl->fd >= 0) close(sl->fd); /* the mappings hold the memory from here on */
  sl->fd = -1;
  unlinkName(sl);
  sl->peerPid = sl->hdr->sendPid;
  sl->peerStartTime = sl->hdr->sendStartTime;
  sl->checkPid = pidVisible(sl->peerPid, sl->peerStartTime);
  /* Can we read the sender's memory? Its probe word holds what only the two of us know. */
  uint64_t probe = 0;
  struct iovec local = {&probe, sizeof(probe)}, remote = {(void*)(uintptr_t)sl->hdr->probeAddr, sizeof(probe)};
  const int reads = sl->checkPid && sl->hdr->probeAddr != 0 &&
                    process_vm_readv((pid_t)sl->peerPid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(probe) &&
                    probe == (sl->hdr->key ^ CHR_SHM_PROBE_MIX);
  if (!reads)
    INFO(NCCL_SHM, "shm link from rank %d: cannot read its memory (%s): large collectives go through the slots",
         recv->peer, sl->checkPid ? strerror(errno) : "its pid is not visible here");
  atomic_store_explicit(&sl->hdr->peerReads, reads ? CHR_SHM_READS_YES : CHR_SHM_READS_NO, memory_order_release);
}

/* ---- connection over the bootstrap ---- */

static ncclResult_t sendAck(const struct chrTransportCtx* ctx, int peer, int tag, int status) {
  struct chrShmAck ack;
  memset(&ack, 0, sizeof(ack));
  ack.magic = CHR_SHM_MAGIC;
  ack.status = status;
  return chrBootstrapSend(ctx->bootstrap, peer, tag, &ack, sizeof(ack));
}

/* Sender side of one round: receive the info, attach, answer. *res gets this side's own failure. */
static ncclResult_t sendRound(const struct chrTransportCtx* ctx, int channel, int sendPeer, size_t stepSize,
                              int infoTag, int ackTag, struct chrLink** s, int* needName, ncclResult_t* res) {
  struct chrShmInfo peerInfo;
  ncclResult_t mine;
  *needName = 0;
  CHECK(chrBootstrapRecv(ctx->bootstrap, sendPeer, infoTag, &peerInfo, sizeof(peerInfo)));
  if (peerInfo.magic == CHR_SHM_MAGIC && peerInfo.name[0] == '\0' && peerInfo.fd < 0)
    mine = chrFail(ncclRemoteError, "shm link to rank %d on channel %d: that rank could not create its segment (see its log)",
                   sendPeer, channel);
  else
    mine = chrShmSendAttach(ctx->rank, sendPeer, channel, stepSize, &peerInfo, s, needName);
  if (*res == ncclSuccess) *res = mine;
  int status = mine != ncclSuccess ? CHR_SHM_ACK_FAILED : *needName ? CHR_SHM_ACK_NEED_NAME : CHR_SHM_ACK_OK;
  return sendAck(ctx, sendPeer, ackTag, status);
}

/* Receiver side of one round's end: the sender's answer. */
static ncclResult_t recvAck(const struct chrTransportCtx* ctx, int channel, int recvPeer, int ackTag, int* status) {
  struct chrShmAck ack;
  CHECK(chrBootstrapRecv(ctx->bootstrap, recvPeer, ackTag, &ack, sizeof(ack)));
  *status = ack.magic == CHR_SHM_MAGIC ? ack.status : CHR_SHM_ACK_FAILED;
  return ncclSuccess;
}

/* A failed info: a valid message with neither name nor descriptor, so the sender fails at once. */
static void failedInfo(struct chrShmInfo* info) {
  memset(info, 0, sizeof(*info));
  info->magic = CHR_SHM_MAGIC;
  info->fd = -1;
}

/* Phases, each rank sending before it waits in every one, so that no wait can close a cycle:
 *   1. recv side: create, send INFO          2. send side: get INFO, attach, send ACK
 *   3. recv side: get ACK; if the sender asked for a name, name the segment and send it
 *   4. send side, if it asked: get the name, attach, send ACK      5. recv side, if asked: get ACK */
ncclResult_t chrShmConnectPair(const struct chrTransportCtx* ctx, int channel, int sendPeer, int recvPeer,
                               size_t stepSize, struct chrLink** send, struct chrLink** recv) {
  struct chrLink* s = NULL;
  struct chrLink* r = NULL;
  struct chrShmInfo info;
  ncclResult_t res = ncclSuccess, res2;
  int senderNeedsName = 0, status = CHR_SHM_ACK_OK;
  if ((sendPeer >= 0 && send == NULL) || (recvPeer >= 0 && recv == NULL))
    return chrFail(ncclInternalError, "chrShmConnectPair: missing output for a link");

  if (recvPeer >= 0) {
    res = chrShmRecvCreate(ctx->rank, recvPeer, channel, stepSize, &r, &info);
    if (res != ncclSuccess) failedInfo(&info);
    CHECK_GOTO(chrBootstrapSend(ctx->bootstrap, recvPeer, TAG_SHM_INFO + channel, &info, sizeof(info)), res2, fail);
  }
  if (sendPeer >= 0)
    CHECK_GOTO(sendRound(ctx, channel, sendPeer, stepSize, TAG_SHM_INFO + channel, TAG_SHM_ACK + channel, &s,
                         &senderNeedsName, &res), res2, fail);
  if (recvPeer >= 0) {
    CHECK_GOTO(recvAck(ctx, channel, recvPeer, TAG_SHM_ACK + channel, &status), res2, fail);
    if (status == CHR_SHM_ACK_NEED_NAME) {
      ncclResult_t named = r != NULL ? chrShmRecvPublishName(r, &info) : ncclSuccess;
      if (named != ncclSuccess || r == NULL) {
        if (res == ncclSuccess) res = named;
        failedInfo(&info);
      }
      CHECK_GOTO(chrBootstrapSend(ctx->bootstrap, recvPeer, TAG_SHM_NAME + channel, &info, sizeof(info)), res2, fail);
    }
  }
  if (sendPeer >= 0 && senderNeedsName) {
    int again = 0;
    CHECK_GOTO(sendRound(ctx, channel, sendPeer, stepSize, TAG_SHM_NAME + channel, TAG_SHM_NAME_ACK + channel, &s,
                         &again, &res), res2, fail);
    if (again && res == ncclSuccess)
      res = chrFail(ncclSystemError, "shm link to rank %d on channel %d: its named segment could not be opened either",
                    sendPeer, channel);
  }
  if (recvPeer >= 0 && status == CHR_SHM_ACK_NEED_NAME)
    CHECK_GOTO(recvAck(ctx, channel, recvPeer, TAG_SHM_NAME_ACK + channel, &status), res2, fail);
  if (r != NULL) {
    chrShmRecvAttached(r);
    if (status != CHR_SHM_ACK_OK && res == ncclSuccess)
      res = chrFail(ncclRemoteError, "shm link from rank %d on channel %d: that rank could not map our segment (see its log)",
                    recvPeer, channel);
  }
  if (res != ncclSuccess) goto fail_links;
  if (s) INFO(NCCL_SHM, "channel %02d: shm send link %d -> %d (%d slots x %d halves x %zu B)", channel, ctx->rank,
              sendPeer, CHR_STEPS, CHR_SHM_HALVES, stepSize);
  if (r) {
    struct chrShmLink* sl = r->priv;
    INFO(NCCL_SHM, "channel %02d: shm recv link %d <- %d (peer pid %lld%s)", channel, ctx->rank, recvPeer,
         (long long)sl->peerPid, sl->checkPid ? "" : ", not visible");
  }
  if (send) *send = s;
  if (recv) *recv = r;
  return ncclSuccess;

fail:
  if (res == ncclSuccess) res = res2;
fail_links:
  if (s) shmClose(s);
  if (r) shmClose(r);
  return res;
}
