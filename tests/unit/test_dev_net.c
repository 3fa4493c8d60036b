/*
 * test_dev_net.c: the GPU path's net proxy (core/cuda/dev_net.c) between real processes, each its own
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
 * The receiving threads announce their steps in works of 37 (need), as the kernel does per work; in
 * "data" the ranks that finish first close their comms, which must be no error for the others.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "comm/comm.h"
#include "cuda/dev_net.h"
#include "launch.h"
#include "log/log.h"
#include "util/idle.h"

#define KEYS 2
#define STEPS 400
#define SLOT 16384
#define KILL_AFTER 40

#define FAIL(...)                                                              \
  do {                                                                         \
    fprintf(stderr, "[pid %d] %s:%d: ", (int)getpid(), __FILE__, __LINE__);    \
    fprintf(stderr, __VA_ARGS__);                                              \
    fprintf(stderr, " (last error: %s)\n", chrThreadLastError());              \
    return 1;                                                                  \
  } while (0)

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

/* The size of step s from src to dst on key: both ends compute it (as both kernels walk one program). */
static uint64_t stepBytes(int src, int dst, int key, uint64_t s) {
  uint64_t h = mix(((uint64_t)src << 48) ^ ((uint64_t)dst << 32) ^ ((uint64_t)key << 24) ^ s);
  switch (h % 8) {
  case 0: return 0;
  case 1: return SLOT;
  default: return (h >> 8) % (SLOT + 1);
  }
}
static unsigned char byteAt(int src, int dst, int key, uint64_t s, uint64_t i) {
  return (unsigned char)mix(((uint64_t)src << 56) ^ ((uint64_t)dst << 48) ^ ((uint64_t)key << 40) ^ (s << 20) ^ i);
}

struct rankState {
  int rank, nranks, kill;
  _Atomic int failed; /* onFail ran */
  struct chrDevNet* net;
};

struct kernel {
  struct rankState* rs;
  struct chrDevNetEnd end;
  int peer;
  int result; /* 0 ok, 1 bad data, 2 gave up after the failure */
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
  for (uint64_t s = 0; s < STEPS; s++) {
    if (k->rs->kill && me == k->rs->nranks - 1 && s == KILL_AFTER) _exit(0); /* sockets close, no goodbye */
    if (s == STEPS / 2) { /* everyone pauses: the proxy dozes off, then is kicked awake */
      usleep(150000);
      chrDevNetKick(k->rs->net);
    }
    if (!k->end.isSend && s % WORK == 0)
      __atomic_store_n(k->end.need, s + WORK < STEPS ? s + WORK : STEPS, __ATOMIC_RELEASE);
    const int slot = (int)(s % 8);
    char* data = k->end.slots + (size_t)slot * k->end.slotBytes;
    if (k->end.isSend) {
      if ((k->result = waitWord(k, k->end.head, s + 1 > 8 ? s + 1 - 8 : 0)) != 0) return;
      const uint64_t n = stepBytes(me, k->peer, key, s);
      for (uint64_t i = 0; i < n; i++) data[i] = (char)byteAt(me, k->peer, key, s, i);
      k->end.sizes[slot] = n;
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
      if (rand_r(&seed) % 16 == 0) usleep(rand_r(&seed) % 2000); /* a slow consumer now and then */
      __atomic_store_n(k->end.head, s + 1, __ATOMIC_RELEASE);
    }
  }
}

/* One end as device/net_ends.cu lays it out: a control page, then 8 slots. */
static char* makeEnd(struct chrDevNetEnd* e, int isSend, int key) {
  char* block = NULL;
  if (posix_memalign((void**)&block, 4096, 4096 + 8 * SLOT) != 0) return NULL;
  memset(block, 0, 4096 + 8 * SLOT);
  *e = (struct chrDevNetEnd){isSend, key, block + 4096, SLOT, (uint64_t*)block, (uint64_t*)(block + 64),
                             (uint64_t*)(block + 128), (uint64_t*)(block + 192)};
  return block;
}

static int rankMain(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  struct rankState rs = {rank, nranks, *(int*)arg, 0, NULL};
  ncclComm_t comm = NULL;
  if (ncclCommInitRank(&comm, nranks, *id, rank) != ncclSuccess) FAIL("init");
  if (comm->net == NULL) FAIL("no net plugin opened for a comm of %d hosts", nranks);
  if (chrDevNetCreate(comm, onFail, &rs, &rs.net) != ncclSuccess) FAIL("create");
  const int per = 2 * KEYS, nPeers = nranks - 1;
  struct chrDevNetEnd* ends = calloc((size_t)nPeers * per, sizeof(*ends));
  struct chrDevNetEnd** lists = calloc((size_t)nPeers, sizeof(*lists));
  char** blocks = calloc((size_t)nPeers * per, sizeof(*blocks));
  struct kernel* ks = calloc((size_t)nPeers * per, sizeof(*ks));
  int* peers = calloc((size_t)nPeers, sizeof(int));
  int* nEnds = calloc((size_t)nPeers, sizeof(int));
  if (!ends || !lists || !blocks || !ks || !peers || !nEnds) FAIL("out of memory");
  for (int i = 0, p = 0; p < nranks; p++) {
    if (p == rank) continue;
    peers[i] = p;
    nEnds[i] = per;
    lists[i] = ends + (size_t)i * per;
    for (int j = 0; j < per; j++) {
      blocks[i * per + j] = makeEnd(&lists[i][j], j % 2 == 0, j / 2);
      if (blocks[i * per + j] == NULL) FAIL("out of memory");
    }
    i++;
  }
  if (chrDevNetAdd(rs.net, nPeers, peers, lists, nEnds) != ncclSuccess) FAIL("connecting %d peers", nPeers);
  pthread_t* th = calloc((size_t)nPeers * per, sizeof(pthread_t));
  const double t0 = chrLaunchNowSec();
  for (int i = 0; i < nPeers * per; i++) {
    ks[i] = (struct kernel){&rs, ends[i], peers[i / per], 0};
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
  if (rs.kill) {
    /* The dead rank's peers must all have failed (its links are gone) and none may hang. */
    if (!atomic_load(&rs.failed) || !chrDevNetFailed(rs.net)) FAIL("the proxy never reported the dead rank");
    if (took > 10.0) FAIL("the failure took %.1f s to reach the kernels", took);
    printf("rank %d: the proxy reported the dead rank; %d of %d ends gave up, after %.2f s\n", rank, gaveUp,
           nPeers * per, took);
  } else {
    if (gaveUp || atomic_load(&rs.failed)) FAIL("the proxy failed: %d ends gave up", gaveUp);
    printf("rank %d: %d ends x %d steps through the proxy, every byte right (%.2f s)\n", rank, nPeers * per, STEPS, took);
  }
  chrDevNetDestroy(rs.net);
  ncclCommAbort(comm); /* a killed peer leaves nothing to finalize with */
  for (int i = 0; i < nPeers * per; i++) free(blocks[i]);
  free(ends), free(lists), free(blocks), free(ks), free(peers), free(nEnds), free(th);
  return 0;
}

int main(int argc, char** argv) {
  if (argc != 3 || (strcmp(argv[1], "data") != 0 && strcmp(argv[1], "kill") != 0)) {
    fprintf(stderr, "usage: %s data|kill <nranks>\n", argv[0]);
    return 2;
  }
  int kill = strcmp(argv[1], "kill") == 0, n = atoi(argv[2]);
  if (n < 2 || n > 8) return 2;
  return chrLaunchRanks(n, n, 90, rankMain, &kill);
}
