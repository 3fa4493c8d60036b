/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_dev_net.c: the GPU path's net proxy (core/transport/dev_net.c) between real processes, each its own
 * acted-out host, with threads in place of the kernels: they drive the ends' words exactly as the
 * kernel does (dev_comm.h: the sender fills a slot, writes its size, then tail; the receiver waits
 * for tail, checks the size and the bytes, then writes head), so nothing here needs a GPU.
 *
 * usage: test_dev_net <scenario> <nranks>
 *   data   every rank connects to every other through 2 keys each way (the proxy's three-phase
 *          connect with all peers at once) and streams 400 steps per end of random sizes (0 and a
 *          full slot included) with a randomly slow consumer; a 150 ms pause midway lets the proxy
 *          doze, and a kick wakes it. Every byte is checked against (source, destination, key, step).
 *   kill   the same, but the last rank exits abruptly after 40 steps: every other rank's proxy must
 *          report the failure (onFail) within 10 s, and its waiting "kernels" then give up.
 *   drain  rank 0 only sends (8 steps of up to 4 MiB per end, more than the sockets buffer), the others
 *          only receive, starting 300 ms late; rank 0's "kernels" end with every step still in its
 *          slots, as a kernel does, and rank 0 then drains and destroys its proxy at once: every byte
 *          must still arrive (a destroy that stopped the proxy first lost them).
 *   gdr    "data" through the gdrtest NIC (tests/plugins/testnet_gdr.c, NCCL_NET_PLUGIN) standing in for a
 *          GPUDirect one, every end's slots marked as GPU memory (host memory here, which the plugin
 *          takes as such with TESTNET_GDR_HOST_AS_CUDA=1): the proxy must register every end's slots
 *          as NCCL_PTR_CUDA and flush every received step that carried bytes before publishing it.
 *   noflush  "gdr" where the topology says the GPU orders the NIC's writes itself (sm 90, no C2C:
 *          CHR_NET_GDR_NOFLUSH on every device): every end registered as GPU memory, no flush.
 *   rate   a benchmark, not a test: 8-byte steps as fast as the proxy moves them (no pause, no slow
 *          consumer, CHORUS_TEST_RATE_STEPS of them, 20000 by default), bytes still checked; prints
 *          the steps per second of an end and of a proxy thread (CHORUS_GPU_NET_PROXY_THREADS).
 *   stage  "gdr" with a gdrtest NIC that refuses GPU memory (TESTNET_GDR_FAULT=refuse-cuda) while it
 *          advertises it: every end must fall back to host slots of its link, the proxy copying each
 *          step with bytes between them and the "GPU" slots (the test's copier, a counting memcpy):
 *          no CUDA registration, no flush, every byte right.
 * The receiving threads announce their steps in works of 37 (need), as the kernel does per work; in
 * "data" the ranks that finish first close their comms, which must be no error for the others.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "commstate/comm.h"
#include "config/param.h"
#include "transport/dev_net.h"
#include "launch.h"
#include "log/log.h"
#include "util/idle.h"
#include "../test_mix.h"
#include "../plugins/testnet_gdr_stats.h"

#define KEYS 2
#define RING_KEYS 1 /* key 0 a ring channel, key 1 a point-to-point lane (its NIC and thread by peer) */
#define KILL_AFTER 40
#define DRAIN_LATE_US 300000

enum { MODE_DATA, MODE_KILL, MODE_DRAIN, MODE_GDR, MODE_STAGE, MODE_NOFLUSH, MODE_RATE };
static int gMode;
static uint64_t gSteps = 400, gSlot = 16384; /* drain: 8 steps of 4 MiB slots */

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "[pid %d] %s:%d: ", (int)getpid(), __FILE__, __LINE__);    \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, " (last error: %s)\n", chrThreadLastError());              \
    return 1;                                                                  \
  } while (0)


/* The size of step s from src to dst on key: both ends compute it (as both kernels walk one program). */
static uint64_t stepBytes(int src, int dst, int key, uint64_t s) {
  uint64_t h = chrTestFinalMix(((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ ((uint64_t)key << 24) ^ s);
  if (gMode == MODE_RATE) return 8;
  switch (h % 8) {
  case 0: return 0;
  case 1: return gSlot;
  default: return (h >> 8) % (gSlot + 1);
  }
}
static unsigned char byteAt(int src, int dst, int key, uint64_t s, uint64_t i) {
  return (unsigned char)chrTestFinalMix(((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ ((uint64_t)key << 40) ^ (s << 20) ^ i);
}

struct rankState {
  int rank, nranks;
  _Atomic int failed; /* onFail ran */
  struct chrDevNet* net;
};

struct kernel {
  struct rankState* rs;
  struct chrDevNetEnd end;
  int peer;
  int result;        /* 0 ok, 1 bad data, 2 gave up after the failure */
  uint64_t nonEmpty; /* steps that carried bytes */
};

static void onFail(void* arg) { atomic_store(&((struct rankState*)arg)->failed, 1); }


/* Waits until *word >= want; 0, or 2 once the proxy reported a failure (the kernel's abort). */
static int waitWord(struct kernel* k, const uint64_t* word, uint64_t want) {
  uint64_t start = chrNowNs();
  while (__atomic_load_n(word, __ATOMIC_ACQUIRE) < want) {
    if (atomic_load(&k->rs->failed)) return 2;
    chrIdleWait(chrNowNs() - start);
  }
  return 0;
}

static void kernelBody(struct kernel* k);
static void* kernelMain(void* arg) {
  kernelBody(arg);
  return NULL;
}

/* Works of WORK steps: a receiving "kernel" announces each work's steps (need) at its start. */
#define WORK 37

static void kernelBody(struct kernel* k) {
  const int me = k->rs->rank, key = k->end.key;
  unsigned seed = (unsigned)(me * 131 + k->peer * 7 + key + (k->end.isSend ? 1000 : 0));
  for (uint64_t s = 0; s < gSteps; s++) {
    if (gMode == MODE_KILL && me == k->rs->nranks - 1 && s == KILL_AFTER) _exit(0); /* sockets close, no goodbye */
    if (gMode != MODE_DRAIN && gMode != MODE_RATE && s == gSteps / 2) { /* everyone pauses: the proxy dozes off, then is kicked awake */
      usleep(150000);
      chrDevNetKick(k->rs->net);
    }
    if (gMode == MODE_DRAIN && !k->end.isSend && s == 0) usleep(DRAIN_LATE_US); /* the receiver starts late */
    if (!k->end.isSend && s % WORK == 0)
      __atomic_store_n(k->end.need, s + WORK < gSteps ? s + WORK : gSteps, __ATOMIC_RELEASE);
    const int slot = (int)(s % 8);
    char* data = k->end.slots + (size_t)slot * k->end.slotBytes;
    if (k->end.isSend) {
      if ((k->result = waitWord(k, k->end.head, s + 1 > 8 ? s + 1 - 8 : 0)) != 0) return;
      const uint64_t n = stepBytes(me, k->peer, key, s);
      for (uint64_t i = 0; i < n; i++) data[i] = (char)byteAt(me, k->peer, key, s, i);
      k->end.sizes[slot] = n;
      k->nonEmpty += n > 0;
      __atomic_store_n(k->end.tail, s + 1, __ATOMIC_RELEASE);
    } else {
      if ((k->result = waitWord(k, k->end.tail, s + 1)) != 0) return;
      const uint64_t n = stepBytes(k->peer, me, key, s);
      if (k->end.sizes[slot] != n) {
        fprintf(stderr, "rank %d: step %llu from rank %d key %d: %llu bytes, expected %llu\n", me,
                (unsigned long long)s, k->peer, key, (unsigned long long)k->end.sizes[slot], (unsigned long long)n);
        k->result = 1;
        return;
      }
      for (uint64_t i = 0; i < n; i++)
        if ((unsigned char)data[i] != byteAt(k->peer, me, key, s, i)) {
          fprintf(stderr, "rank %d: step %llu from rank %d key %d: byte %llu wrong\n", me, (unsigned long long)s,
                  k->peer, key, (unsigned long long)i);
          k->result = 1;
          return;
        }
      k->nonEmpty += n > 0;
      if (gMode != MODE_RATE && rand_r(&seed) % 16 == 0) usleep(rand_r(&seed) % 2000); /* a slow consumer now and then */
      __atomic_store_n(k->end.head, s + 1, __ATOMIC_RELEASE);
    }
  }
}

/* One end as device/launch/net_ends.cu lays it out: a control page, then 8 slots. */
static char* makeEnd(struct chrDevNetEnd* e, int isSend, int key) {
  char* block = NULL;
  if (posix_memalign((void**)&block, 4096, 4096 + 8 * gSlot) != 0) return NULL;
  memset(block, 0, 4096 + 8 * gSlot);
  *e = (struct chrDevNetEnd){isSend, key, block + 4096, gSlot, (uint64_t*)block, (uint64_t*)(block + 64),
                             (uint64_t*)(block + 128), (uint64_t*)(block + 192),
                             gMode == MODE_GDR || gMode == MODE_STAGE || gMode == MODE_NOFLUSH};
  return block;
}

/* The ends of this rank with peer p, as `per` entries (0: none): in data and kill a send and a
 * receive end per key; in drain rank 0 sends to everyone and the others receive from rank 0. */
static int endsWith(int rank, int p, int j, int* isSend) {
  if (gMode != MODE_DRAIN) {
    *isSend = j % 2 == 0;
    return 1;
  }
  if (rank != 0 && p != 0) return 0;
  *isSend = rank == 0;
  return 1;
}

/* GPUDirect through the gdrtest NIC: every end registered as GPU memory, every received step with
 * bytes flushed, no buffer outside its registration (the plugin's counters, in this process). */
/* The gdrtest plugin's counters in this process (NCCL_NET_PLUGIN names it); 0, or 1 when it is not
 * loaded. */
static int gdrStats(struct testNetGdrStats* st) {
  const char* path = getenv("NCCL_NET_PLUGIN");
  void* lib = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
  testNetGdrStatsFn statsOf = lib ? (testNetGdrStatsFn)dlsym(lib, "testNetGdrStats") : NULL;
  if (statsOf == NULL) FAIL("the gdrtest plugin (NCCL_NET_PLUGIN=%s) is not loaded", path ? path : "(unset)");
  *st = statsOf();
  dlclose(lib);
  return 0;
}

static int checkGdr(int rank, const struct kernel* ks, int n) {
  struct testNetGdrStats st;
  if (gdrStats(&st) != 0) return 1;
  uint64_t received = 0;
  for (int i = 0; i < n; i++) received += ks[i].end.isSend ? 0 : ks[i].nonEmpty;
  const uint64_t flushes = gMode == MODE_NOFLUSH ? 0 : received; /* every received step with bytes, or none */
  if (st.regCuda != n || st.regionErrors != 0 || st.flushes != (long long)flushes)
    FAIL("gdrtest counted %lld CUDA registrations (want %d), %lld flushes (want %llu), %lld region errors", st.regCuda,
         n, st.flushes, (unsigned long long)flushes, st.regionErrors);
  printf("rank %d: %d ends registered as GPU memory, %lld flushes, %lld bytes received into them\n", rank, n,
         st.flushes, st.recvCudaBytes);
  return 0;
}

/* The staging copier of "stage": a memcpy ("GPU" slots are host memory here) that counts each
 * proxy thread's copies. */
static _Atomic long long gCopies, gCopyBytes;
static ncclResult_t countingCopy(void* arg, int thread, void* dst, const void* src, size_t bytes) {
  (void)arg;
  if (thread < 0 || thread >= CHR_DEV_NET_MAX_THREADS || bytes == 0 || bytes > gSlot) return ncclInternalError;
  memcpy(dst, src, bytes);
  atomic_fetch_add(&gCopies, 1);
  atomic_fetch_add(&gCopyBytes, (long long)bytes);
  return ncclSuccess;
}

/* Staged: every end fell back to host slots, nothing registered as GPU memory nor flushed, and
 * one copy per step that carried bytes, sent or received. */
static int checkStaged(int rank, const struct kernel* ks, int n) {
  struct testNetGdrStats st;
  if (gdrStats(&st) != 0) return 1;
  uint64_t steps = 0;
  for (int i = 0; i < n; i++) steps += ks[i].nonEmpty;
  if (st.regCuda != 0 || st.regRefused != n || st.flushes != 0 || st.regionErrors != 0)
    FAIL("gdrtest counted %lld CUDA registrations (want 0), %lld refused (want %d), %lld flushes (want 0), %lld region "
         "errors", st.regCuda, st.regRefused, n, st.flushes, st.regionErrors);
  if (atomic_load(&gCopies) != (long long)steps)
    FAIL("the proxy made %lld staging copies, want %llu (the steps with bytes)", atomic_load(&gCopies),
         (unsigned long long)steps);
  printf("rank %d: %d ends refused as GPU memory and staged: %lld copies, %lld bytes\n", rank, n,
         atomic_load(&gCopies), atomic_load(&gCopyBytes));
  return 0;
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  (void)arg;
  struct rankState rs = {rank, nranks, 0, NULL};
  ncclComm_t comm = NULL;
  if (ncclCommInitRank(&comm, nranks, *id, rank) != ncclSuccess) FAIL("init");
  if (comm->net == NULL) FAIL("no net plugin opened for a comm of %d hosts", nranks);
  if (gMode == MODE_NOFLUSH) { /* what a topology of an sm 90 GPU beside its NICs gives */
    if (comm->netDevs.n == 0) comm->netDevs = (struct chrNetDevs){.dev = {0}, .n = 1};
    for (int i = 0; i < comm->netDevs.n; i++) comm->netDevs.gdr[i] |= CHR_NET_GDR_WRITE | CHR_NET_GDR_NOFLUSH;
  }
  const struct chrDevNetCopier copier = {countingCopy, NULL, NULL};
  if (chrDevNetCreate(&comm->transport, onFail, &rs, gMode == MODE_STAGE ? &copier : NULL, &rs.net) != ncclSuccess) FAIL("create");
  const int per = gMode == MODE_DRAIN ? KEYS : 2 * KEYS, maxPeers = nranks - 1;
  struct chrDevNetEnd* ends = calloc((size_t)maxPeers * per, sizeof(*ends));
  struct chrDevNetEnd** lists = calloc((size_t)maxPeers, sizeof(*lists));
  char** blocks = calloc((size_t)maxPeers * per, sizeof(*blocks));
  struct kernel* ks = calloc((size_t)maxPeers * per, sizeof(*ks));
  int* peers = calloc((size_t)maxPeers, sizeof(int));
  int* nEnds = calloc((size_t)maxPeers, sizeof(int));
  if (!ends || !lists || !blocks || !ks || !peers || !nEnds) FAIL("out of memory");
  int nPeers = 0;
  for (int p = 0; p < nranks; p++) {
    int isSend = 0;
    if (p == rank || !endsWith(rank, p, 0, &isSend)) continue;
    peers[nPeers] = p;
    nEnds[nPeers] = per;
    lists[nPeers] = ends + (size_t)nPeers * per;
    for (int j = 0; j < per; j++) {
      endsWith(rank, p, j, &isSend);
      const int key = gMode == MODE_DRAIN ? j : j / 2;
      blocks[nPeers * per + j] = makeEnd(&lists[nPeers][j], isSend, key);
      if (blocks[nPeers * per + j] == NULL) FAIL("out of memory");
    }
    nPeers++;
  }
  if (chrDevNetAdd(rs.net, RING_KEYS, nPeers, peers, lists, nEnds) != ncclSuccess) FAIL("connecting %d peers", nPeers);
  pthread_t* th = calloc((size_t)nPeers * per, sizeof(pthread_t));
  const double t0 = chrLaunchNowSec();
  for (int i = 0; i < nPeers * per; i++) {
    ks[i] = (struct kernel){&rs, ends[i], peers[i / per], 0, 0};
    if (pthread_create(&th[i], NULL, kernelMain, &ks[i]) != 0) FAIL("thread");
  }
  int bad = 0, gaveUp = 0;
  for (int i = 0; i < nPeers * per; i++) {
    pthread_join(th[i], NULL);
    bad += ks[i].result == 1;
    gaveUp += ks[i].result == 2;
  }
  const double took = chrLaunchNowSec() - t0;
  if (bad) FAIL("%d ends saw wrong data", bad);
  if ((gMode == MODE_GDR || gMode == MODE_NOFLUSH) && checkGdr(rank, ks, nPeers * per) != 0) return 1;
  if (gMode == MODE_STAGE && checkStaged(rank, ks, nPeers * per) != 0) return 1;
  if (gMode == MODE_KILL) {
    /* The dead rank's peers must all have failed (its links are gone) and none may hang. */
    if (!atomic_load(&rs.failed) || !chrDevNetFailed(rs.net)) FAIL("the proxy never reported the dead rank");
    if (took > 10.0) FAIL("the failure took %.1f s to reach the kernels", took);
    printf("rank %d: the proxy reported the dead rank; %d of %d ends gave up, after %.2f s\n", rank, gaveUp,
           nPeers * per, took);
  } else {
    if (gaveUp || atomic_load(&rs.failed)) FAIL("the proxy failed: %d ends gave up", gaveUp);
    if (gMode == MODE_DRAIN && rank == 0) { /* the "kernels" are done, their last steps still in the slots */
      const double d0 = chrLaunchNowSec();
      if (chrDevNetDrain(rs.net, "test") != ncclSuccess) FAIL("drain");
      printf("rank 0: the drain took %.2f s (the receivers start %.2f s late)\n", chrLaunchNowSec() - d0,
             DRAIN_LATE_US / 1e6);
    }
    printf("rank %d: %d ends x %llu steps through the proxy, every byte right (%.2f s)\n", rank, nPeers * per,
           (unsigned long long)gSteps, took);
    if (gMode == MODE_RATE) {
      const int set = (int)chrParamInt(CHR_P_GPU_NET_PROXY_THREADS);
      const double steps = (double)gSteps * nPeers * per;
      printf("rank %d: %.0f steps/s per end, %.0f steps/s in all, %d proxy threads\n", rank, (double)gSteps / took,
             steps / took, set > 0 ? set : 2 /* one per NIC, at least 2: the loopback NIC is one */);
    }
  }
  chrDevNetDestroy(rs.net);
  ncclCommAbort(comm); /* a killed peer leaves nothing to finalize with */
  for (int i = 0; i < nPeers * per; i++) free(blocks[i]);
  free(ends), free(lists), free(blocks), free(ks), free(peers), free(nEnds), free(th);
  return 0;
}

int main(int argc, char** argv) {
  const char* modes[] = {"data", "kill", "drain", "gdr", "stage", "noflush", "rate"};
  gMode = -1;
  for (int m = 0; argc == 3 && m < 7; m++)
    if (strcmp(argv[1], modes[m]) == 0) gMode = m;
  const int n = argc == 3 ? atoi(argv[2]) : 0;
  if (gMode < 0 || n < 2 || n > 8) {
    fprintf(stderr, "usage: %s data|kill|drain|gdr|stage|noflush|rate <nranks 2..8>\n", argv[0]);
    return 2;
  }
  if (gMode == MODE_DRAIN) {
    gSteps = 8;
    gSlot = 4u << 20;
  }
  if (gMode == MODE_RATE) {
    const char* v = getenv("CHORUS_TEST_RATE_STEPS");
    gSteps = v && atoll(v) > 0 ? (uint64_t)atoll(v) : 20000;
  }
  return chrLaunchRanks(n, n, 90, rankMain, NULL);
}
