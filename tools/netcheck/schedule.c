/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * schedule.c: what chorus-netcheck sends on one connection, and the payload of every message.
 *
 * A schedule is a list of receive groups (one irecv each) built from a seed, so both ranks build the
 * same one without talking. Its segments aim at the places plugins break:
 *   - odd sizes: 0, 1, 3, 4095, 16385, 65537, ... (not multiples of anything), receives posted
 *     larger than the send;
 *   - long runs of tiny and zero-byte messages followed by large ones (a plugin that spreads large
 *     messages over several sockets or threads must keep every socket in step through the runs);
 *   - runs of equal sizes (a host's fixed-size pipeline steps);
 *   - large messages of odd sizes (1 MiB + 1, 2 MiB - 1, ...), which no socket count divides;
 *   - grouped receives (n > 1, when the plugin allows them), sent in shuffled tag order;
 *   - a random mix of all of the above.
 * Payload byte j of a message is byte j%8 of mix(key + j/8), where the key names (seed, sending
 * rank, comm, message number): a misplaced message is recognised by whose bytes it holds.
 */
#include <stdlib.h>
#include <string.h>

#include "netcheck.h"

static uint64_t mix64(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

uint64_t ncRand(uint64_t* state) {
  *state += 0x9e3779b97f4a7c15ULL;
  return mix64(*state);
}

uint64_t ncMsgKey(uint64_t seed, int fromRank, int comm, uint64_t msg) {
  return mix64(seed ^ ((uint64_t)(fromRank + 1) << 56) ^ ((uint64_t)(comm + 1) << 48)) + msg * 0x100000001b3ULL;
}

static inline uint64_t word(uint64_t key, size_t i) { return mix64(key + i); }

void ncFill(void* buf, size_t n, uint64_t key) {
  unsigned char* p = buf;
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w = word(key, i);
    memcpy(p + i * 8, &w, 8);
  }
  if (n % 8) {
    uint64_t w = word(key, words);
    memcpy(p + words * 8, &w, n % 8);
  }
}

uint8_t ncPatternByte(uint64_t key, size_t offset) {
  uint64_t w = word(key, offset / 8);
  uint8_t b[8];
  memcpy(b, &w, 8);
  return b[offset % 8];
}

size_t ncVerify(const void* buf, size_t n, uint64_t key) {
  const unsigned char* p = buf;
  size_t words = n / 8;
  for (size_t i = 0; i < words; i++) {
    uint64_t w = word(key, i), got;
    memcpy(&got, p + i * 8, 8);
    if (got != w) {
      for (size_t b = 0; b < 8; b++)
        if (p[i * 8 + b] != ncPatternByte(key, i * 8 + b)) return i * 8 + b;
    }
  }
  for (size_t j = words * 8; j < n; j++)
    if (p[j] != ncPatternByte(key, j)) return j;
  return n;
}

/* ---------------------------------------------------------------- building */

typedef struct {
  ncSchedule* s;
  int cap;
  uint64_t rng;
  int maxGroup;
  int senderTag;
} builder;

static int grow(builder* b) {
  if (b->s->nGroups < b->cap) return 0;
  int cap = b->cap ? b->cap * 2 : 256;
  ncGroup* g = realloc(b->s->groups, (size_t)cap * sizeof(*g));
  if (g == NULL) return -1;
  b->s->groups = g;
  b->cap = cap;
  return 0;
}

/* Posted size beyond the send: often none, sometimes a little, sometimes a lot. */
static size_t pickExtra(builder* b) {
  static const size_t extras[] = {0, 0, 0, 1, 7, 4096, 65539};
  return extras[ncRand(&b->rng) % (sizeof(extras) / sizeof(extras[0]))];
}

static int addOne(builder* b, size_t size) {
  if (grow(b) != 0) return -1;
  ncGroup* g = &b->s->groups[b->s->nGroups++];
  memset(g, 0, sizeof(*g));
  g->n = 1;
  g->tags[0] = b->senderTag;
  g->sizes[0] = size;
  g->extra[0] = pickExtra(b);
  g->order[0] = 0;
  return 0;
}

/* A grouped receive of n buffers with distinct tags, sent in a shuffled order. */
static int addGroup(builder* b, int n, size_t maxSize) {
  if (n < 2) return addOne(b, (size_t)(ncRand(&b->rng) % (maxSize + 1)));
  if (grow(b) != 0) return -1;
  ncGroup* g = &b->s->groups[b->s->nGroups++];
  memset(g, 0, sizeof(*g));
  g->n = n;
  int base = b->senderTag * 64 + (int)(ncRand(&b->rng) % 8);
  for (int i = 0; i < n; i++) {
    g->tags[i] = base + i * 3;
    uint64_t r = ncRand(&b->rng);
    g->sizes[i] = (r & 3) == 0 ? (size_t)(r >> 8) % 64 : (size_t)(r >> 8) % (maxSize + 1);
    g->extra[i] = pickExtra(b);
    g->order[i] = i;
  }
  for (int i = n - 1; i > 0; i--) { /* Fisher-Yates: the order the sender sends the buffers in */
    int j = (int)(ncRand(&b->rng) % (uint64_t)(i + 1));
    int t = g->order[i];
    g->order[i] = g->order[j];
    g->order[j] = t;
  }
  return 0;
}

static int groupSize(builder* b) { return b->maxGroup < 2 ? 1 : 2 + (int)(ncRand(&b->rng) % (uint64_t)(b->maxGroup - 1)); }

/* Tiny messages (none needs a data socket), then large ones that need every socket. */
static int runThenBig(builder* b, int tiny, int zeros, int nBig, size_t bigBase, size_t bigSpread) {
  int rc = 0;
  for (int i = 0; i < tiny; i++) rc |= addOne(b, (size_t)(ncRand(&b->rng) % 2049));
  for (int i = 0; i < zeros; i++) rc |= addOne(b, 0);
  for (int i = 0; i < nBig; i++) rc |= addOne(b, (bigBase + (size_t)(ncRand(&b->rng) % bigSpread)) | 1);
  return rc;
}

int ncScheduleBuild(ncSchedule* s, uint64_t seed, int maxGroup, double scale, int senderTag) {
  memset(s, 0, sizeof(*s));
  builder b = {.s = s, .rng = seed, .maxGroup = maxGroup > NC_MAX_GROUP ? NC_MAX_GROUP : maxGroup, .senderTag = senderTag};
  if (scale <= 0) scale = 1;
  int rc = 0;

  static const size_t odd[] = {0,     1,     2,     3,     5,      7,      8,      9,      15,      17,
                               63,    65,    255,   257,   1023,   4093,   4095,   4097,   8191,    16383,
                               16384, 16385, 16389, 32769, 65535,  65536,  65537,  131071, 196613,  262147,
                               524291, 1048573, 1052675};
  for (size_t i = 0; i < sizeof(odd) / sizeof(odd[0]); i++) rc |= addOne(&b, odd[i]);

  rc |= runThenBig(&b, 48, 0, 8, 524288, 9999);
  rc |= runThenBig(&b, 0, 48, 4, 1048576, 2 * 1048576);

  /* Runs of one size, as a pipelining host sends its fixed-size steps. */
  for (int i = 0; i < 16; i++) rc |= addOne(&b, 8);
  for (int i = 0; i < 24; i++) rc |= addOne(&b, 131075);
  for (int i = 0; i < 12; i++) rc |= addOne(&b, 524288);

  static const size_t big[] = {1048577, 2097151, 3145733, 2097165, 786433, 1572869};
  for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++) rc |= addOne(&b, big[i]);

  int nGrouped = b.maxGroup >= 2 ? (int)(32 * scale) : 0;
  for (int i = 0; i < nGrouped; i++) rc |= addGroup(&b, groupSize(&b), 300000);

  int nMix = (int)(150 * scale);
  for (int i = 0; i < nMix; i++) {
    uint64_t r = ncRand(&b.rng) % 100;
    if (b.maxGroup >= 2 && r < 10) rc |= addGroup(&b, groupSize(&b), 200000);
    else if (r < 40) rc |= addOne(&b, (size_t)(ncRand(&b.rng) % 16385));
    else if (r < 70) rc |= addOne(&b, 16385 + (size_t)(ncRand(&b.rng) % 600000));
    else if (r < 85) rc |= addOne(&b, 600000 + (size_t)(ncRand(&b.rng) % 2500000));
    else rc |= addOne(&b, (size_t)(ncRand(&b.rng) % 65));
  }

  rc |= runThenBig(&b, 40, 40, 6, 262144, 1048576);
  if (rc != 0) {
    ncScheduleFree(s);
    return -1;
  }

  uint64_t msg = 0;
  for (int i = 0; i < s->nGroups; i++) {
    ncGroup* g = &s->groups[i];
    g->firstMsg = msg;
    msg += (uint64_t)g->n;
    for (int k = 0; k < g->n; k++) {
      s->bytes += g->sizes[k];
      if (g->sizes[k] + g->extra[k] > s->maxPosted) s->maxPosted = g->sizes[k] + g->extra[k];
    }
  }
  s->nMsgs = msg;
  return 0;
}

void ncScheduleFree(ncSchedule* s) {
  free(s->groups);
  memset(s, 0, sizeof(*s));
}
