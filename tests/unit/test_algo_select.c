/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_algo_select.c: NCCL_ALGO / NCCL_PROTO parsing (core/config/algo_select.c).
 *
 * Fixed cases from the documented syntax, error cases with their messages, random valid settings
 * built from an independent model (random case, whitespace, aliases, section order) checked against
 * the model's masks, random garbage and mutations (no crash, only success or ncclInvalidArgument),
 * and the cached parameter path, including readers racing a config reload.
 */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>

#include "config_test_util.h"
#include "log/log.h"
#include "config/algo_select.h"

#define BIT(x) (1u << (x))
#define A_TREE BIT(CHR_ALGO_TREE)
#define A_RING BIT(CHR_ALGO_RING)
#define A_CND BIT(CHR_ALGO_COLLNET_DIRECT)
#define A_CNC BIT(CHR_ALGO_COLLNET_CHAIN)
#define A_NVLS BIT(CHR_ALGO_NVLS)
#define A_NVLST BIT(CHR_ALGO_NVLS_TREE)
#define A_PAT BIT(CHR_ALGO_PAT)
#define A_ALL 0x7fu
#define P_LL BIT(CHR_PROTO_LL)
#define P_LL128 BIT(CHR_PROTO_LL128)
#define P_SIMPLE BIT(CHR_PROTO_SIMPLE)
#define P_ALL 0x7u

static const ncclFunc_t selectFuncs[5] = {ncclFuncBroadcast, ncclFuncReduce, ncclFuncAllGather,
                                          ncclFuncReduceScatter, ncclFuncAllReduce};

/* ---- names and numbering ---- */

static void checkNames(void) {
  EXPECT(CHR_NUM_ALGOS == 7 && CHR_NUM_PROTOS == 3, "counts");
  EXPECT(CHR_ALGO_TREE == 0 && CHR_ALGO_RING == 1 && CHR_ALGO_COLLNET_DIRECT == 2 && CHR_ALGO_COLLNET_CHAIN == 3 &&
             CHR_ALGO_NVLS == 4 && CHR_ALGO_NVLS_TREE == 5 && CHR_ALGO_PAT == 6,
         "algorithm numbering");
  EXPECT(CHR_PROTO_LL == 0 && CHR_PROTO_LL128 == 1 && CHR_PROTO_SIMPLE == 2, "protocol numbering");
  static const char* const algos[] = {"TREE", "RING", "COLLNET_DIRECT", "COLLNET_CHAIN", "NVLS", "NVLS_TREE", "PAT"};
  for (int i = 0; i < 7; i++) EXPECT_STR(chrAlgoName(i), algos[i]);
  EXPECT_STR(chrAlgoName(-1), "UNDEF");
  EXPECT_STR(chrAlgoName(7), "UNDEF");
  EXPECT_STR(chrAlgoName(1 << 30), "UNDEF");
  EXPECT_STR(chrProtoName(0), "LL");
  EXPECT_STR(chrProtoName(1), "LL128");
  EXPECT_STR(chrProtoName(2), "SIMPLE");
  EXPECT_STR(chrProtoName(-1), "UNDEF");
  EXPECT_STR(chrProtoName(3), "UNDEF");
}

/* ---- fixed valid cases ---- */

/* Expected mask per function Broadcast..AllReduce. */
struct validCase {
  int proto; /* 0: algorithm setting, 1: protocol setting */
  const char* setting;
  unsigned expect[5];
};

#define SAME5(m) {(m), (m), (m), (m), (m)}

static const struct validCase validCases[] = {
    {0, "", SAME5(A_ALL)},
    {0, "   \t ", SAME5(A_ALL)},
    {0, "ring", SAME5(A_RING)},
    {0, "RING", SAME5(A_RING)},
    {0, "Ring,Tree", SAME5(A_RING | A_TREE)},
    {0, " ring , tree ", SAME5(A_RING | A_TREE)},
    {0, "^tree", SAME5(A_ALL & ~A_TREE)},
    {0, " ^ tree ", SAME5(A_ALL & ~A_TREE)},
    {0, "^Tree,RING", SAME5(A_ALL & ~(A_TREE | A_RING))},
    {0, "ring,ring", SAME5(A_RING)},
    {0, "collnet_direct,CollNetChain", SAME5(A_CND | A_CNC)},
    {0, "collnet", SAME5(A_CND | A_CNC)},
    {0, "nvls,nvls_tree,NVLSTree,pat,CollnetDirect,collnet_chain", SAME5(A_NVLS | A_NVLST | A_PAT | A_CND | A_CNC)},
    /* per operation; unnamed operations get everything */
    {0, "allreduce:tree;allgather:ring", {A_ALL, A_ALL, A_RING, A_ALL, A_TREE}},
    {0, "AllReduce:tree; AllGather : ring ;", {A_ALL, A_ALL, A_RING, A_ALL, A_TREE}},
    /* a bare section applies to the operations no other section names, wherever it stands */
    {0, "allreduce:^ring;ring", {A_RING, A_RING, A_RING, A_RING, A_ALL & ~A_RING}},
    {0, "ring;allreduce:^ring", {A_RING, A_RING, A_RING, A_RING, A_ALL & ~A_RING}},
    {0, "broadcast:pat;reduce:nvls;allgather:nvls_tree;reducescatter:collnet_chain;allreduce:collnet_direct",
     {A_PAT, A_NVLS, A_NVLST, A_CNC, A_CND}},
    {0, ";;allreduce:tree;;", {A_ALL, A_ALL, A_ALL, A_ALL, A_TREE}},
    /* allowing nothing is not a parse error: mask 0 */
    {0, "^ring,tree,collnet_direct,collnet_chain,nvls,nvls_tree,pat", SAME5(0)},
    {0, "allreduce:^ring,tree,collnet,nvls,nvls_tree,pat;tree", {A_TREE, A_TREE, A_TREE, A_TREE, 0}},
    {1, "", SAME5(P_ALL)},
    {1, "^LL128", SAME5(P_LL | P_SIMPLE)},
    {1, "simple", SAME5(P_SIMPLE)},
    {1, "Simple,ll", SAME5(P_SIMPLE | P_LL)},
    {1, "allreduce:ll;^simple", {P_LL | P_LL128, P_LL | P_LL128, P_LL | P_LL128, P_LL | P_LL128, P_LL}},
    {1, "^ll,ll128,simple", SAME5(0)},
};

static ncclResult_t maskOf(int proto, const char* setting, ncclFunc_t func, unsigned* mask) {
  return proto ? chrProtoMask(setting, func, mask) : chrAlgoMask(setting, func, mask);
}

static void checkValidCases(void) {
  for (size_t c = 0; c < sizeof(validCases) / sizeof(validCases[0]); c++) {
    const struct validCase* vc = &validCases[c];
    for (int f = 0; f < 5; f++) {
      unsigned mask = 0xdeadu;
      ncclResult_t r = maskOf(vc->proto, vc->setting, selectFuncs[f], &mask);
      EXPECT(r == ncclSuccess && mask == vc->expect[f], "'%s' func %d: result %d mask 0x%x, expected 0x%x",
             vc->setting, f, r, mask, vc->expect[f]);
    }
    /* Operations outside algorithm selection get every bit, whatever the setting. */
    unsigned all = vc->proto ? P_ALL : A_ALL;
    ncclFunc_t others[] = {ncclFuncSendRecv, ncclFuncAlltoAll, ncclFuncWaitSignal, ncclNumFuncs, (ncclFunc_t)-1};
    for (size_t o = 0; o < sizeof(others) / sizeof(others[0]); o++) {
      unsigned mask = 0;
      ncclResult_t r = maskOf(vc->proto, vc->setting, others[o], &mask);
      EXPECT(r == ncclSuccess && mask == all, "'%s' func %d: result %d mask 0x%x", vc->setting, (int)others[o], r,
             mask);
    }
  }
  unsigned mask = 0;
  EXPECT(chrAlgoMask(NULL, ncclFuncAllReduce, &mask) == ncclSuccess && mask == A_ALL, "NULL setting = everything");
}

/* ---- errors ---- */

struct errorCase {
  int proto;
  const char* setting;
  const char* mustMention; /* the bad token (or section) as it appears in the last error */
};

static const struct errorCase errorCases[] = {
    {0, "rign", "unknown algorithm \"rign\""},
    {0, "ring,foo", "\"foo\""},
    {0, ",ring", "empty name"},
    {0, "ring,", "empty name"},
    {0, "ring,,tree", "empty name"},
    {0, "^", "empty list"},
    {0, "allreduce:", "empty list"},
    {0, "allreduce: ^ ", "empty list"},
    {0, "allreduc:ring", "unknown function \"allreduc\""},
    {0, ":ring", "unknown function \"\""},
    {0, "alltoall:ring", "unknown function \"alltoall\""},
    {0, "allreduce:ring;AllReduce:tree", "named twice"},
    {0, "ring;tree", "two sections without a function"},
    {0, "allreduce:ring:tree", "\"ring:tree\""},
    {0, "ring,^tree", "\"^tree\""},
    {0, "simple", "unknown algorithm \"simple\""},
    {0, "r ing", "\"r ing\""},
    {1, "ring", "unknown protocol \"ring\""},
    {1, "ll256", "\"ll256\""},
    {1, "allreduce:simple;allreduce:ll", "named twice"},
};

static void checkErrorCases(void) {
  for (size_t c = 0; c < sizeof(errorCases) / sizeof(errorCases[0]); c++) {
    const struct errorCase* ec = &errorCases[c];
    for (int f = 0; f < 5; f++) {
      chrClearLastError();
      unsigned mask = 0xdeadu;
      ncclResult_t r = maskOf(ec->proto, ec->setting, selectFuncs[f], &mask);
      const char* err = chrThreadLastError();
      EXPECT(r == ncclInvalidArgument && mask == 0xdeadu, "'%s': result %d mask 0x%x", ec->setting, r, mask);
      char quoted[300];
      snprintf(quoted, sizeof(quoted), "%s=\"%s\"", ec->proto ? "NCCL_PROTO" : "NCCL_ALGO", ec->setting);
      EXPECT(strstr(err, quoted) != NULL, "'%s': error does not quote the setting: %s", ec->setting, err);
      EXPECT(strstr(err, ec->mustMention) != NULL, "'%s': error lacks '%s': %s", ec->setting, ec->mustMention, err);
    }
  }
  /* A long setting is quoted shortened; control bytes are not copied into the message. */
  char longSetting[5000];
  memset(longSetting, 'r', sizeof(longSetting) - 1);
  longSetting[sizeof(longSetting) - 1] = '\0';
  longSetting[100] = '\x01';
  chrClearLastError();
  unsigned mask = 0;
  EXPECT(chrAlgoMask(longSetting, ncclFuncAllReduce, &mask) == ncclInvalidArgument, "long garbage must fail");
  const char* err = chrThreadLastError();
  EXPECT(strlen(err) < 600 && strstr(err, "...") != NULL && strchr(err, '\x01') == NULL, "long error: %s", err);
  EXPECT(chrAlgoMask("ring", ncclFuncAllReduce, NULL) == ncclInvalidArgument, "NULL mask pointer");
}

/* ---- random valid settings from a model ---- */

static uint64_t rngState = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void) { /* xorshift64*, seeded fixed: failures reproduce */
  rngState ^= rngState >> 12;
  rngState ^= rngState << 25;
  rngState ^= rngState >> 27;
  return (uint32_t)((rngState * 2685821657736338717ull) >> 32);
}
static uint32_t rndBelow(uint32_t n) { return rnd() % n; }

/* The test's own name table (all accepted spellings and what they stand for). */
struct modelName {
  const char* name;
  unsigned bits;
};
static const struct modelName modelAlgos[] = {
    {"tree", A_TREE},          {"ring", A_RING},          {"collnet_direct", A_CND}, {"collnetdirect", A_CND},
    {"collnet_chain", A_CNC},  {"collnetchain", A_CNC},   {"collnet", A_CND | A_CNC}, {"nvls", A_NVLS},
    {"nvls_tree", A_NVLST},    {"nvlstree", A_NVLST},     {"pat", A_PAT},
};
static const struct modelName modelProtos[] = {{"ll", P_LL}, {"ll128", P_LL128}, {"simple", P_SIMPLE}};
static const char* const modelFuncs[5] = {"broadcast", "reduce", "allgather", "reducescatter", "allreduce"};

struct buf {
  char s[8192];
  size_t n;
};
static void put(struct buf* b, const char* s) {
  size_t l = strlen(s);
  if (b->n + l < sizeof(b->s)) memcpy(b->s + b->n, s, l), b->n += l;
  b->s[b->n] = '\0';
}
static void putSpace(struct buf* b) {
  static const char* const spaces[] = {"", "", "", " ", "  ", "\t"};
  put(b, spaces[rndBelow(6)]);
}
static void putRandomCase(struct buf* b, const char* word) {
  char tmp[64];
  size_t i = 0;
  for (; word[i] && i < sizeof(tmp) - 1; i++) {
    char c = word[i];
    tmp[i] = (rndBelow(2) && c >= 'a' && c <= 'z') ? (char)(c - 'a' + 'A') : c;
  }
  tmp[i] = '\0';
  put(b, tmp);
}

/* Appends a random list; returns its mask. */
static unsigned putRandomList(struct buf* b, const struct modelName* names, int nNames, unsigned all) {
  unsigned named = 0;
  int exclude = (int)rndBelow(3) == 0;
  putSpace(b);
  if (exclude) put(b, "^"), putSpace(b);
  int count = 1 + (int)rndBelow(4);
  for (int i = 0; i < count; i++) {
    if (i) putSpace(b), put(b, ","), putSpace(b);
    const struct modelName* n = &names[rndBelow((uint32_t)nNames)];
    putRandomCase(b, n->name);
    named |= n->bits;
  }
  putSpace(b);
  return exclude ? (all & ~named) : named;
}

static void checkRandomValid(int proto, int rounds) {
  const struct modelName* names = proto ? modelProtos : modelAlgos;
  int nNames = proto ? 3 : (int)(sizeof(modelAlgos) / sizeof(modelAlgos[0]));
  unsigned all = proto ? P_ALL : A_ALL;
  for (int round = 0; round < rounds; round++) {
    /* Sections: -1 the bare one, 0..4 a function; shuffled. */
    int order[6], nSections = 0;
    if (rndBelow(2)) order[nSections++] = -1;
    for (int f = 0; f < 5; f++)
      if (rndBelow(5) < 2) order[nSections++] = f;
    for (int i = nSections - 1; i > 0; i--) {
      int j = (int)rndBelow((uint32_t)i + 1), t = order[i];
      order[i] = order[j], order[j] = t;
    }
    unsigned expect[5], defaultMask = all;
    int named[5] = {0};
    struct buf b = {.n = 0};
    b.s[0] = '\0';
    for (int i = 0; i < nSections; i++) {
      if (i) put(&b, ";");
      if (rndBelow(8) == 0) putSpace(&b), put(&b, ";"); /* an empty section */
      if (order[i] < 0) {
        defaultMask = putRandomList(&b, names, nNames, all);
      } else {
        putSpace(&b);
        putRandomCase(&b, modelFuncs[order[i]]);
        putSpace(&b);
        put(&b, ":");
        expect[order[i]] = putRandomList(&b, names, nNames, all);
        named[order[i]] = 1;
      }
    }
    if (rndBelow(6) == 0) put(&b, ";");
    for (int f = 0; f < 5; f++) {
      unsigned want = named[f] ? expect[f] : defaultMask, got = 0xdeadu;
      ncclResult_t r = maskOf(proto, b.s, selectFuncs[f], &got);
      EXPECT(r == ncclSuccess && got == want, "'%s' func %d: result %d mask 0x%x, expected 0x%x (%s)", b.s, f, r, got,
             want, chrThreadLastError());
    }
  }
}

/* ---- garbage: no crash, only success or ncclInvalidArgument with a message ---- */

static void checkOneGarbage(int proto, const char* s) {
  unsigned all = proto ? P_ALL : A_ALL;
  for (int f = 0; f < 6; f++) {
    ncclFunc_t func = f < 5 ? selectFuncs[f] : ncclFuncSend;
    unsigned mask = 0xdeadu;
    chrClearLastError();
    ncclResult_t r = maskOf(proto, s, func, &mask);
    if (r == ncclSuccess) {
      EXPECT((mask & ~all) == 0, "garbage gave mask 0x%x", mask);
    } else {
      EXPECT(r == ncclInvalidArgument && mask == 0xdeadu, "garbage: result %d", r);
      EXPECT(strncmp(chrThreadLastError(), proto ? "NCCL_PROTO=" : "NCCL_ALGO=", proto ? 11 : 10) == 0,
             "garbage error text: %s", chrThreadLastError());
    }
  }
}

static void checkGarbage(int rounds) {
  static const char* const pieces[] = {"ring", "tree", "ll", "ll128", "simple", "allreduce", "allgather", "nvls",
                                       "collnet", "pat", ",", ";", ":", "^", " ", "\t", "RING", "x"};
  int nPieces = (int)(sizeof(pieces) / sizeof(pieces[0]));
  char s[4200];
  for (int round = 0; round < rounds; round++) {
    size_t target = rndBelow(8) == 0 ? 4096 : rndBelow(200);
    size_t n = 0;
    int mode = (int)rndBelow(3);
    while (n < target) {
      if (mode == 0 || (mode == 2 && rndBelow(2))) { /* any byte but NUL */
        s[n++] = (char)(1 + rndBelow(255));
      } else {
        const char* p = pieces[rndBelow((uint32_t)nPieces)];
        size_t l = strlen(p);
        if (n + l > target) break;
        memcpy(s + n, p, l), n += l;
      }
    }
    s[n] = '\0';
    checkOneGarbage((int)(round & 1), s);
  }
  /* Mutations of valid settings: one byte replaced, inserted or removed at every position. */
  static const char* const bases[] = {"allreduce:^ring;ring", "allreduce:tree;allgather:ring", "^LL128"};
  static const char mutants[] = {',', ';', ':', '^', ' ', 'x', '\xff'};
  for (size_t bi = 0; bi < 3; bi++) {
    const char* base = bases[bi];
    size_t len = strlen(base);
    for (size_t pos = 0; pos <= len; pos++) {
      for (size_t m = 0; m < sizeof(mutants); m++) {
        char t[64];
        snprintf(t, sizeof(t), "%.*s%c%s", (int)pos, base, mutants[m], base + pos); /* insert */
        checkOneGarbage(bi == 2, t);
        if (pos < len) {
          snprintf(t, sizeof(t), "%s", base);
          t[pos] = mutants[m]; /* replace */
          checkOneGarbage(bi == 2, t);
        }
      }
      if (pos < len) {
        char t[64];
        snprintf(t, sizeof(t), "%.*s%s", (int)pos, base, base + pos + 1); /* remove */
        checkOneGarbage(bi == 2, t);
      }
    }
  }
}

/* ---- the cached parameter path ---- */

static void setAndReload(const char* algo, const char* proto) {
  if (algo) setenv("NCCL_ALGO", algo, 1);
  else unsetenv("NCCL_ALGO");
  if (proto) setenv("NCCL_PROTO", proto, 1);
  else unsetenv("NCCL_PROTO");
  chrConfigReload();
}

static void checkParams(void) {
  unsigned mask = 0;
  setAndReload(NULL, NULL);
  EXPECT(chrAllowedAlgos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == A_ALL, "default algos 0x%x", mask);
  EXPECT(chrAllowedProtos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == P_ALL, "default protos 0x%x", mask);

  setAndReload("allreduce:^ring;ring", "^LL128");
  for (int rep = 0; rep < 3; rep++) { /* second and third calls come from the cache */
    EXPECT(chrAllowedAlgos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == (A_ALL & ~A_RING), "0x%x", mask);
    EXPECT(chrAllowedAlgos(ncclFuncBroadcast, &mask) == ncclSuccess && mask == A_RING, "0x%x", mask);
    EXPECT(chrAllowedAlgos(ncclFuncSendRecv, &mask) == ncclSuccess && mask == A_ALL, "0x%x", mask);
    EXPECT(chrAllowedProtos(ncclFuncAllGather, &mask) == ncclSuccess && mask == (P_LL | P_SIMPLE), "0x%x", mask);
  }

  setAndReload("tree", "simple"); /* a reload with a new value is seen */
  EXPECT(chrAllowedAlgos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == A_TREE, "0x%x", mask);
  EXPECT(chrAllowedProtos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == P_SIMPLE, "0x%x", mask);

  /* Invalid settings never reach the planner: the config does not apply them, and communicator init
   * fails on them (chrConfigValidate; test_config_check). The planner sees the default. */
  setAndReload("bogus", "ll,,simple");
  EXPECT(chrConfigValidate() == ncclInvalidUsage && strstr(chrThreadLastError(), "\"bogus\"") &&
             strstr(chrThreadLastError(), "empty name"),
         "last error: %s", chrThreadLastError());
  EXPECT(chrAllowedAlgos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == A_ALL, "0x%x", mask);
  EXPECT(chrAllowedProtos(ncclFuncAllReduce, &mask) == ncclSuccess && mask == P_ALL, "0x%x", mask);
  /* The silent check says the same as the reporting parser, without touching the last error. */
  char why[400];
  chrClearLastError();
  EXPECT(chrAlgoSettingCheck("ring,bogus", why, sizeof(why)) == ncclInvalidArgument &&
             strstr(why, "unknown algorithm \"bogus\"") && strstr(why, "tree, ring"),
         "why: %s", why);
  EXPECT(chrProtoSettingCheck("^", why, sizeof(why)) == ncclInvalidArgument && strstr(why, "ll, ll128, simple"),
         "why: %s", why);
  EXPECT(chrAlgoSettingCheck("allreduce:tree;ring", why, sizeof(why)) == ncclSuccess, "valid setting refused");
  EXPECT_STR(chrThreadLastError(), "");

  setAndReload("tree", "simple"); /* back to a value cached before: still right */
  EXPECT(chrAllowedAlgos(ncclFuncReduce, &mask) == ncclSuccess && mask == A_TREE, "0x%x", mask);
}

static atomic_int stopReaders;
static atomic_int readerFailures;

static void* readerMain(void* arg) {
  (void)arg;
  for (int i = 0; i < 200000 && !atomic_load(&stopReaders); i++) {
    unsigned a = 0, p = 0;
    if (chrAllowedAlgos(ncclFuncAllReduce, &a) != ncclSuccess || (a != A_RING && a != A_TREE))
      atomic_fetch_add(&readerFailures, 1);
    if (chrAllowedProtos(ncclFuncAllGather, &p) != ncclSuccess || (p != P_LL && p != P_SIMPLE))
      atomic_fetch_add(&readerFailures, 1);
    if ((i & 255) == 0) sched_yield();
  }
  return NULL;
}

static void checkConcurrentReload(void) {
  setAndReload("ring", "ll");
  pthread_t threads[3];
  for (int t = 0; t < 3; t++) pthread_create(&threads[t], NULL, readerMain, NULL);
  for (int i = 0; i < 60; i++) {
    setAndReload(i & 1 ? "ring" : "tree", i & 1 ? "ll" : "simple");
    usleep(500);
  }
  atomic_store(&stopReaders, 1);
  for (int t = 0; t < 3; t++) pthread_join(threads[t], NULL);
  EXPECT(atomic_load(&readerFailures) == 0, "%d reads saw a wrong mask", atomic_load(&readerFailures));
}

int main(void) {
  isolateConfig();
  checkNames();
  checkValidCases();
  checkErrorCases();
  checkRandomValid(0, 3000);
  checkRandomValid(1, 1000);
  checkGarbage(4000);
  checkParams();
  checkConcurrentReload();
  setAndReload(NULL, NULL);
  return finishTest();
}
