/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules.c: the reference tuner's rules, read from the environment (TUNER_RULE_1 .. TUNER_RULE_64,
 * tried in numeric order, gaps allowed; Chorus exports them from the [tuner.chorus] section of its
 * INI file before init).
 *
 *   <collectives> [<min>-<max>] [ranks=<a>[-<b>]] [nodes=<a>[-<b>]] -> <algo> [<proto>] [<channels>] [chunk=<bytes>]
 *
 * collectives  comma list of broadcast, reduce, allgather, reducescatter, allreduce; or * (any)
 * min-max      nBytes range, both ends included; K, M, G suffixes (powers of 1024); "<min>-" has no
 *              upper end; "*" or nothing means any size
 * ranks, nodes the communicator's size and node count, one value or an inclusive range
 * algo         tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, pat, or * (keep the core's)
 * proto        ll, ll128, simple, or * (the default: the cheapest one that can run)
 * channels     a number of channels (0 or absent: keep the core's)
 * chunk=       v6 only: the step size in bytes (K/M/G suffixes)
 * Names are case-insensitive. Everything here is plain parsing: no state, no logging.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tuner_chorus.h"

static const char* const collNames[] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};
static const char* const algoNames[] = {"tree", "ring", "collnet_direct", "collnet_chain", "nvls", "nvls_tree", "pat"};
static const char* const protoNames[] = {"ll", "ll128", "simple"};
static const char* const algoLogNames[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
static const char* const protoLogNames[] = {"LL", "LL128", "SIMPLE"};
static const char* const collLogNames[] = {"Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce"};

const char* tcAlgoName(int algo) { return algo >= 0 && algo < NCCL_NUM_ALGORITHMS ? algoLogNames[algo] : "*"; }
const char* tcProtoName(int proto) { return proto >= 0 && proto < NCCL_NUM_PROTOCOLS ? protoLogNames[proto] : "*"; }
const char* tcCollName(int coll) { return coll >= 0 && coll < NCCL_NUM_FUNCTIONS ? collLogNames[coll] : "?"; }

int tcAlgoServes(int algo, int coll) {
  int ar = coll == ncclFuncAllReduce, agrs = coll == ncclFuncAllGather || coll == ncclFuncReduceScatter;
  switch (algo) {
    case NCCL_ALGO_RING: return coll >= 0 && coll < NCCL_NUM_FUNCTIONS;
    case NCCL_ALGO_TREE: return ar;
    case NCCL_ALGO_COLLNET_DIRECT: return ar || agrs;
    case NCCL_ALGO_COLLNET_CHAIN: return ar;
    case NCCL_ALGO_NVLS: return ar || agrs;
    case NCCL_ALGO_NVLS_TREE: return ar;
    case NCCL_ALGO_PAT: return agrs;
    default: return 0;
  }
}

static int lookup(const char* word, const char* const* names, int n) {
  for (int i = 0; i < n; i++)
    if (strcasecmp(word, names[i]) == 0) return i;
  return -2;
}

static int isAny(const char* word) { return strcmp(word, "*") == 0 || strcasecmp(word, "any") == 0; }

/* An unsigned number with an optional K/M/G suffix (powers of 1024). */
static int parseBytes(const char* s, uint64_t* out) {
  if (!isdigit((unsigned char)*s)) return -1;
  errno = 0;
  char* end;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno != 0) return -1;
  unsigned shift = 0;
  if (*end == 'k' || *end == 'K') shift = 10, end++;
  else if (*end == 'm' || *end == 'M') shift = 20, end++;
  else if (*end == 'g' || *end == 'G') shift = 30, end++;
  if (*end != '\0') return -1;
  if (shift && v > (~0ULL >> shift)) return -1;
  *out = (uint64_t)v << shift;
  return 0;
}

/* "a", "a-b", "a-" (no upper end) or "*". */
static int parseRange(const char* s, uint64_t* lo, uint64_t* hi, int allowSuffix) {
  if (isAny(s)) {
    *lo = 0;
    *hi = UINT64_MAX;
    return 0;
  }
  char buf[64];
  if (strlen(s) >= sizeof(buf)) return -1;
  strcpy(buf, s);
  char* dash = strchr(buf, '-');
  if (dash) *dash = '\0';
  if (!allowSuffix)
    for (const char* c = buf; *c; c++)
      if (!isdigit((unsigned char)*c)) return -1;
  if (parseBytes(buf, lo) != 0) return -1;
  if (dash == NULL) {
    *hi = *lo;
  } else if (dash[1] == '\0') {
    *hi = UINT64_MAX;
  } else {
    if (!allowSuffix)
      for (const char* c = dash + 1; *c; c++)
        if (!isdigit((unsigned char)*c)) return -1;
    if (parseBytes(dash + 1, hi) != 0) return -1;
  }
  return *lo <= *hi ? 0 : -1;
}

static int parseColls(char* word, struct tcRule* r, char* err, size_t cap) {
  if (isAny(word)) {
    r->anyColl = 1;
    r->collMask = (1u << NCCL_NUM_FUNCTIONS) - 1;
    return 0;
  }
  for (char* save = NULL, *tok = strtok_r(word, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    int f = lookup(tok, collNames, NCCL_NUM_FUNCTIONS);
    if (f < 0) {
      snprintf(err, cap, "unknown collective '%s' (known: broadcast, reduce, allgather, reducescatter, allreduce, *)",
               tok);
      return -1;
    }
    r->collMask |= 1u << f;
  }
  if (r->collMask == 0) {
    snprintf(err, cap, "no collective before '->'");
    return -1;
  }
  return 0;
}

/* Split text into whitespace-separated words (in place). */
static int splitWords(char* text, char** words, int max) {
  int n = 0;
  for (char* save = NULL, *tok = strtok_r(text, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
    if (n == max) return -1;
    words[n++] = tok;
  }
  return n;
}

static int parseLeft(char* text, struct tcRule* r, char* err, size_t cap) {
  char* w[8];
  int n = splitWords(text, w, 8);
  if (n <= 0) {
    snprintf(err, cap, n < 0 ? "too many words before '->'" : "no collective before '->'");
    return -1;
  }
  if (parseColls(w[0], r, err, cap) != 0) return -1;
  int sawSize = 0;
  for (int i = 1; i < n; i++) {
    uint64_t lo, hi;
    if (strncasecmp(w[i], "ranks=", 6) == 0 || strncasecmp(w[i], "nodes=", 6) == 0) {
      int ranks = tolower((unsigned char)w[i][0]) == 'r';
      if (parseRange(w[i] + 6, &lo, &hi, 0) != 0 || (hi != UINT64_MAX && hi > (uint64_t)1 << 40)) {
        snprintf(err, cap, "bad %s range '%s' (a number, a-b, a- or *)", ranks ? "ranks" : "nodes", w[i] + 6);
        return -1;
      }
      long long l = (long long)lo, h = hi == UINT64_MAX ? -1 : (long long)hi;
      if (ranks) r->minRanks = l, r->maxRanks = h;
      else r->minNodes = l, r->maxNodes = h;
    } else if (!sawSize && parseRange(w[i], &lo, &hi, 1) == 0) {
      r->minBytes = lo;
      r->maxBytes = hi;
      sawSize = 1;
    } else {
      snprintf(err, cap, "'%s' is neither a size range (min-max, K/M/G suffixes) nor ranks=/nodes=", w[i]);
      return -1;
    }
  }
  return 0;
}

static int parseRight(char* text, struct tcRule* r, char* err, size_t cap) {
  char* w[8];
  int n = splitWords(text, w, 8);
  if (n <= 0) {
    snprintf(err, cap, n < 0 ? "too many words after '->'" : "no algorithm after '->'");
    return -1;
  }
  if (isAny(w[0])) {
    r->algo = TC_ANY;
  } else if ((r->algo = lookup(w[0], algoNames, NCCL_NUM_ALGORITHMS)) < 0) {
    snprintf(err, cap, "unknown algorithm '%s' (known: tree, ring, collnet_direct, collnet_chain, nvls, nvls_tree, "
             "pat, *)", w[0]);
    return -1;
  }
  for (int i = 1; i < n; i++) {
    uint64_t v;
    int p;
    if (i == 1 && isAny(w[i])) {
      r->proto = TC_ANY;
    } else if (i == 1 && (p = lookup(w[i], protoNames, NCCL_NUM_PROTOCOLS)) >= 0) {
      r->proto = p;
    } else if (strncasecmp(w[i], "chunk=", 6) == 0) {
      if (parseBytes(w[i] + 6, &v) != 0 || v == 0) {
        snprintf(err, cap, "bad chunk size '%s' (bytes > 0, K/M/G suffixes)", w[i] + 6);
        return -1;
      }
      r->chunk = v;
    } else if (parseBytes(w[i], &v) == 0 && strspn(w[i], "0123456789") == strlen(w[i])) {
      if (v > 1024) {
        snprintf(err, cap, "channel count %s is too large", w[i]);
        return -1;
      }
      r->channels = (int)v;
    } else {
      snprintf(err, cap, "'%s' is not a protocol (ll, ll128, simple, *), a channel count or chunk=<bytes>", w[i]);
      return -1;
    }
  }
  return 0;
}

int tcParseRule(const char* text, int number, struct tcRule* r, char* err, size_t cap) {
  memset(r, 0, sizeof(*r));
  r->number = number;
  snprintf(r->text, sizeof(r->text), "%s", text);
  r->maxBytes = UINT64_MAX;
  r->maxRanks = r->maxNodes = -1;
  r->algo = r->proto = TC_ANY;
  const char* arrow = strstr(text, "->");
  if (arrow == NULL) {
    snprintf(err, cap, "no '->' between the match and the choice");
    return -1;
  }
  if (strstr(arrow + 2, "->") != NULL) {
    snprintf(err, cap, "more than one '->'");
    return -1;
  }
  size_t leftLen = (size_t)(arrow - text);
  char* left = strndup(text, leftLen);
  char* right = strdup(arrow + 2);
  int rc = -1;
  if (left && right && parseLeft(left, r, err, cap) == 0 && parseRight(right, r, err, cap) == 0) rc = 0;
  if (!left || !right) snprintf(err, cap, "out of memory");
  free(left);
  free(right);
  return rc;
}

int tcParseRules(struct tcRule* rules, int* nRules, char* err, size_t cap) {
  *nRules = 0;
  for (int n = 1; n <= TC_MAX_RULES; n++) {
    char name[32];
    snprintf(name, sizeof(name), "TUNER_RULE_%d", n);
    const char* text = getenv(name);
    if (text == NULL || text[0] == '\0') continue;
    char why[512];
    if (tcParseRule(text, n, &rules[*nRules], why, sizeof(why)) != 0) {
      snprintf(err, cap, "%s = \"%s\": %s", name, text, why);
      return -1;
    }
    (*nRules)++;
  }
  return 0;
}

const struct tcRule* tcMatch(const struct tcContext* ctx, ncclFunc_t collType, size_t nBytes) {
  if ((int)collType < 0 || (int)collType >= NCCL_NUM_FUNCTIONS) return NULL;
  for (int i = 0; i < ctx->nRules; i++) {
    const struct tcRule* r = &ctx->rules[i];
    if ((r->collMask & (1u << collType)) && nBytes >= r->minBytes && nBytes <= r->maxBytes) return r;
  }
  return NULL;
}
