/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_bootstrap_bad.c: the bootstrap root and ranks against bad clients at init, with real
 * processes on loopback: a wrong secret, garbage, a client that exits during init, bad and
 * out-of-range ranks, a missing rank, a bad id. usage: test_bootstrap_bad <scenario>; the harness,
 * the environment and the timing rules are test_bootstrap.c's (bootstrap_kids.c).
 */
#include "bootstrap_kids.h"

/* ---- bad clients at init ---- */

struct badArg {
  ncclUniqueId id;
  int nranks;
  int kind[MAX_CHILDREN]; /* what child i does */
  int rankOf[MAX_CHILDREN];
  const char* expect[MAX_CHILDREN]; /* expected error text for failing kinds */
  int nranksOf[MAX_CHILDREN];       /* nranks this child claims (0: nranks) */
  double waitMaxSec;                /* how long K_WAIT_FAIL may take to fail */
};

enum {
  K_GOOD,          /* a normal rank that must succeed */
  K_REJECTED,      /* init must fail quickly with expect[] in the text */
  K_WRONG_SECRET,  /* uses the id with one secret byte flipped; must be rejected */
  K_GARBAGE,       /* raw socket: sends garbage bytes */
  K_EARLY_CLOSE,   /* raw socket: connects and closes at once */
  K_PARTIAL,       /* raw socket: half a hello, then holds the connection a while */
  K_HUGE_INFO,     /* raw socket: valid magic and secret, info size 1 GiB: rejected */
  K_WAIT_FAIL,     /* a rank that must fail with expect[] (root's timeout or abort), timed */
  K_EXIT_IN_INIT,  /* starts init, _exit()s 0.5 s later while waiting */
  K_GOOD_OR_TAKEN  /* duplicate rank: either succeeds or is rejected as taken */
};

static int rawConnect(const ncclUniqueId* id) {
  struct chrBsId bid;
  memcpy(&bid, id->internal, sizeof(bid));
  int fd = -1;
  if (chrSockConnect(&bid.root, testDeadline(3), NULL, &fd, NULL) != ncclSuccess) CFAIL(E_OTHER, "raw connect");
  return fd;
}

/* A hello a real rank would send (magic, version, the id's secret and root address). */
static struct chrBsHello wellFormedHello(const ncclUniqueId* id, int rank, int nranks, uint32_t infoSize) {
  struct chrBsId bid;
  memcpy(&bid, id->internal, sizeof(bid));
  struct chrBsHello h;
  memset(&h, 0, sizeof(h));
  h.magic = CHR_BS_HELLO_MAGIC;
  h.version = CHR_BS_WIRE_VERSION;
  h.secret = bid.secret;
  h.rank = rank;
  h.nranks = nranks;
  h.infoSize = infoSize;
  h.listenAddr = bid.root;
  return h;
}

static void* exitLater(void* p) {
  usleep((useconds_t)scaled(500000)); /* the other ranks are in by then */
  _exit(OK);
  return NULL;
}

static void expectInitFails(const ncclUniqueId* id, int rank, int nranks, const char* text, double maxSec) {
  struct chrBootstrap* bs = NULL;
  char info[INFO_SIZE], *all = malloc((size_t)(nranks > 0 ? nranks : 1) * INFO_SIZE);
  memset(info, 0, sizeof(info));
  double t0 = nowSec();
  int fds0 = countFds();
  ncclResult_t r = chrBootstrapInit(id, rank, nranks, info, INFO_SIZE, all, NULL, &bs);
  double dt = nowSec() - t0;
  free(all);
  if (r == ncclSuccess) CFAIL(E_INIT, "rank %d: init succeeded, expected failure '%s'", rank, text);
  if (bs != NULL) CFAIL(E_OTHER, "failed init left *out set");
  if (!strstr(chrThreadLastError(), text)) CFAIL(E_TEXT, "rank %d: error text lacks '%s'", rank, text);
  if (dt > maxSec) CFAIL(E_TIME, "rank %d: failure took %.1f s (max %.1f)", rank, dt, maxSec);
  if (countFds() != fds0) CFAIL(E_FD, "failed init leaked fds: %d -> %d", fds0, countFds());
}

static void badChild(int idx, void* p) {
  struct badArg* a = p;
  int rank = a->rankOf[idx];
  int nranks = a->nranksOf[idx] ? a->nranksOf[idx] : a->nranks;
  childEnv(NULL, NULL);
  switch (a->kind[idx]) {
    case K_GOOD:
      normalRank(rank, a->nranks, &a->id);
      return;
    case K_REJECTED:
      expectInitFails(&a->id, rank, nranks, a->expect[idx], scaled(2.0));
      return;
    case K_WRONG_SECRET: {
      ncclUniqueId bad = a->id;
      ((struct chrBsId*)bad.internal)->secret ^= 0x10;
      expectInitFails(&bad, rank, a->nranks, a->expect[idx], scaled(2.0));
      return;
    }
    case K_WAIT_FAIL:
      expectInitFails(&a->id, rank, a->nranks, a->expect[idx], a->waitMaxSec);
      return;
    case K_EXIT_IN_INIT: {
      pthread_t t;
      pthread_create(&t, NULL, exitLater, NULL);
      char info[INFO_SIZE], *all = malloc((size_t)a->nranks * INFO_SIZE);
      struct chrBootstrap* bs = NULL;
      memset(info, 0, sizeof(info));
      chrBootstrapInit(&a->id, rank, a->nranks, info, INFO_SIZE, all, NULL, &bs);
      CFAIL(E_OTHER, "init returned before the exit");
    }
    case K_GOOD_OR_TAKEN: {
      struct chrBootstrap* bs = NULL;
      char info[INFO_SIZE], *all = malloc((size_t)a->nranks * INFO_SIZE);
      fillPattern(info, INFO_SIZE, (uint64_t)rank + 1);
      int fds0 = countFds();
      ncclResult_t r = chrBootstrapInit(&a->id, rank, a->nranks, info, INFO_SIZE, all, NULL, &bs);
      if (r == ncclSuccess) {
        afterInit(bs, rank, a->nranks, all, fds0);
        _exit(OK);
      }
      free(all);
      if (!strstr(chrThreadLastError(), "rank 2 is already taken")) CFAIL(E_TEXT, "duplicate text");
      _exit(1); /* "rejected", counted by the parent */
    }
    case K_GARBAGE: {
      int fd = rawConnect(&a->id);
      char junk[300];
      fillPattern(junk, sizeof(junk), 42);
      chrSockSendAll(fd, junk, sizeof(junk), testDeadline(2), NULL, NULL);
      usleep(300000);
      chrSockClose(&fd);
      return;
    }
    case K_EARLY_CLOSE: {
      int fd = rawConnect(&a->id);
      chrSockClose(&fd);
      return;
    }
    case K_PARTIAL: {
      int fd = rawConnect(&a->id);
      struct chrBsHello h;
      memset(&h, 0, sizeof(h));
      h.magic = CHR_BS_HELLO_MAGIC;
      chrSockSendAll(fd, &h, sizeof(h) / 2, testDeadline(2), NULL, NULL);
      usleep(1500000);
      chrSockClose(&fd);
      return;
    }
    case K_HUGE_INFO: {
      int fd = rawConnect(&a->id);
      struct chrBsHello h = wellFormedHello(&a->id, 0, a->nranks, 1u << 30);
      chrSockSendAll(fd, &h, sizeof(h), testDeadline(2), NULL, NULL);
      struct chrBsReply rep;
      if (chrSockRecvAll(fd, &rep, sizeof(rep), testDeadline(3), NULL, NULL) != ncclSuccess ||
          rep.magic != CHR_BS_REPLY_MAGIC || rep.type != CHR_BS_REPLY_REJECT || rep.payloadSize > 1024)
        CFAIL(E_OTHER, "huge info: no reject");
      char text[1025];
      chrSockRecvAll(fd, text, (size_t)rep.payloadSize, testDeadline(3), NULL, NULL);
      text[rep.payloadSize] = '\0';
      if (!strstr(text, "info size")) CFAIL(E_TEXT, "huge info reject text: %s", text);
      chrSockClose(&fd);
      return;
    }
  }
}

/* Fork nkids children of badChild, waiting to be started with the id. */
static void spawnBad(struct kids* k, struct badArg* a, int nkids) {
  for (int i = 0; i < nkids; i++) spawn(k, badChild, a, &a->id);
}

static void expectAll(const char* name, struct kids* k, const int* want) {
  for (int i = 0; i < k->n; i++) expectStatus(name, k, i, want[i]);
}

static int newId(ncclUniqueId* id) {
  if (chrBootstrapGetUniqueId(id) != ncclSuccess) {
    fprintf(stderr, "GetUniqueId: %s\n", chrThreadLastError());
    failures++;
    return 0;
  }
  return 1;
}

/* A process with a flipped secret byte is told why; the genuine ranks go on and succeed. */
static void scenarioWrongSecret(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  int kinds[] = {K_WRONG_SECRET, K_GOOD, K_GOOD, K_GOOD};
  int ranks[] = {1, 0, 1, 2};
  for (int i = 0; i < 4; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: root rejected rank 1: wrong secret (a unique id from another ncclGetUniqueId";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 4);
  if (newId(&a.id)) {
    /* Rank 2 only once the wrong one has its answer: the root is still waiting when it comes. */
    for (int i = 0; i < 3; i++) startKid(&k, i, &a.id);
    waitKidExit(&k, 0, -1);
    startKid(&k, 3, &a.id);
  }
  reap(&k);
  int want[] = {OK, OK, OK, OK};
  expectAll("wrong_secret", &k, want);
}

/* Garbage, early close, half a hello, an oversized hello: dropped or rejected; the ranks succeed. */
static void scenarioGarbage(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 3;
  int kinds[] = {K_GARBAGE, K_EARLY_CLOSE, K_PARTIAL, K_HUGE_INFO, K_GOOD, K_GOOD, K_GOOD};
  int ranks[] = {0, 0, 0, 0, 0, 1, 2};
  for (int i = 0; i < 7; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 7);
  if (newId(&a.id)) {
    /* Rank 2 once the garbage, the early close and the oversized hello are through (the half hello
     * is still pending then): the root has dealt with them while it waited. */
    for (int i = 0; i < 6; i++) startKid(&k, i, &a.id);
    waitKidExit(&k, 0, -1);
    waitKidExit(&k, 1, -1);
    waitKidExit(&k, 3, -1);
    startKid(&k, 6, &a.id);
  }
  reap(&k);
  int want[7] = {0};
  expectAll("garbage", &k, want);
}

/* A rank that exits while init waits: the others hear about it at once, not at the timeout. */
static void scenarioExitDuringInit(void) {
  setenv("CHORUS_BOOTSTRAP_TIMEOUT", "20", 1); /* the root (in this process) reads it at GetUniqueId */
  chrConfigReload();
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 4; /* rank 2 never comes, so init is still waiting when rank 3 exits */
  a.waitMaxSec = scaled(5.0);
  int kinds[] = {K_WAIT_FAIL, K_WAIT_FAIL, K_EXIT_IN_INIT};
  int ranks[] = {0, 1, 3};
  for (int i = 0; i < 3; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: rank 3 closed its bootstrap connection during init";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 3);
  if (newId(&a.id)) startAll(&k, &a.id);
  reap(&k);
  int want[] = {OK, OK, OK};
  expectAll("exit_during_init", &k, want);
}

/* Rank out of range, rank given twice, nranks that differs: rejected with the reason; others succeed. */
static void scenarioBadRank(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 4;
  /* Rank 2 twice; and rank 4 claiming nranks 5, after the others set nranks 4. Rank 3 comes last so
   * that the root still waits when the bad ones arrive. */
  int kinds[] = {K_GOOD, K_GOOD, K_GOOD_OR_TAKEN, K_GOOD_OR_TAKEN, K_GOOD, K_REJECTED};
  int ranks[] = {0, 1, 2, 2, 3, 4};
  for (int i = 0; i < 6; i++) {
    a.kind[i] = kinds[i];
    a.rankOf[i] = ranks[i];
    a.expect[i] = "bootstrap: root rejected rank 4: nranks 5 differs from nranks 4";
  }
  a.nranksOf[5] = 5;
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 6);
  if (newId(&a.id)) {
    for (int i = 0; i < 4; i++) startKid(&k, i, &a.id);
    /* One rank 2 was refused as taken, so the other one is in and nranks is 4: now rank 4 with
     * nranks 5; once it is refused, rank 3 completes the set. */
    waitKidExit(&k, 2, 3);
    startKid(&k, 5, &a.id);
    waitKidExit(&k, 5, -1);
    startKid(&k, 4, &a.id);
  }
  reap(&k);
  expectStatus("bad_rank", &k, 0, OK);
  expectStatus("bad_rank", &k, 1, OK);
  expectStatus("bad_rank", &k, 4, OK);
  expectStatus("bad_rank", &k, 5, OK);
  int ok2 = (k.status[2] == OK) + (k.status[3] == OK), rej2 = (k.status[2] == 1) + (k.status[3] == 1);
  if (ok2 != 1 || rej2 != 1) {
    fprintf(stderr, "bad_rank: duplicate rank 2: statuses %d and %d, expected one 0 and one 1\n", k.status[2],
            k.status[3]);
    failures++;
  }
}

/* The root itself refuses a rank out of range (a hello sent by hand: the API refuses it earlier). */
static void outOfRangeChild(int idx, void* p) {
  struct badArg* a = p;
  childEnv(NULL, NULL);
  if (idx < 2) {
    normalRank(idx, 2, &a->id);
    return;
  }
  /* The API checks first. */
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&a->id, 5, 2, NULL, 0, NULL, NULL, &bs) != ncclInvalidArgument) CFAIL(E_INIT, "api range");
  int fd = rawConnect(&a->id);
  struct chrBsHello h = wellFormedHello(&a->id, 5, 2, INFO_SIZE);
  chrSockSendAll(fd, &h, sizeof(h), testDeadline(2), NULL, NULL);
  struct chrBsReply rep;
  if (chrSockRecvAll(fd, &rep, sizeof(rep), testDeadline(3), NULL, NULL) != ncclSuccess ||
      rep.type != CHR_BS_REPLY_REJECT || rep.payloadSize > 1024)
    CFAIL(E_OTHER, "out of range: no reject");
  char text[1025];
  chrSockRecvAll(fd, text, (size_t)rep.payloadSize, testDeadline(3), NULL, NULL);
  text[rep.payloadSize] = '\0';
  if (!strstr(text, "rank 5 out of range (nranks 2)")) CFAIL(E_TEXT, "out-of-range text: %s", text);
  chrSockClose(&fd);
}

static void scenarioOutOfRange(void) {
  struct badArg a;
  memset(&a, 0, sizeof(a));
  struct kids k = {.n = 0};
  for (int i = 0; i < 3; i++) spawn(&k, outOfRangeChild, &a, &a.id);
  if (newId(&a.id)) {
    /* Rank 1 once the bad hello was refused: the root is still waiting when it comes. */
    startKid(&k, 0, &a.id);
    startKid(&k, 2, &a.id);
    waitKidExit(&k, 2, -1);
    startKid(&k, 1, &a.id);
  }
  reap(&k);
  for (int i = 0; i < 3; i++) expectStatus("out_of_range", &k, i, OK);
}

/* Ranks 2 and 5 of 8 never come (5 is there but with a wrong secret): everyone else fails at the
 * timeout with the list of missing ranks. */
static void scenarioMissing(void) {
  int timeoutSec = (int)chrParamInt(CHR_P_BOOTSTRAP_TIMEOUT);
  char timedOut[128];
  snprintf(timedOut, sizeof(timedOut), "bootstrap: timed out after %d s waiting for ranks 2,5 (of 8)", timeoutSec);
  struct badArg a;
  memset(&a, 0, sizeof(a));
  a.nranks = 8;
  a.waitMaxSec = timeoutSec + scaled(2.0);
  int ranks[] = {0, 1, 3, 4, 6, 7, 5};
  for (int i = 0; i < 7; i++) {
    a.kind[i] = i < 6 ? K_WAIT_FAIL : K_WRONG_SECRET;
    a.rankOf[i] = ranks[i];
    a.expect[i] = i < 6 ? timedOut : "bootstrap: root rejected rank 5: wrong secret";
  }
  struct kids k = {.n = 0};
  spawnBad(&k, &a, 7);
  double t0 = nowSec();
  if (newId(&a.id)) startAll(&k, &a.id);
  reap(&k);
  int want[7] = {0};
  expectAll("missing", &k, want);
  if (nowSec() - t0 < timeoutSec - 0.5) {
    fprintf(stderr, "missing: ranks failed before the timeout\n");
    failures++;
  }
}

/* An id that is not one: refused with a clear text. */
static void scenarioBadId(void) {
  ncclUniqueId id;
  memset(&id, 0x41, sizeof(id));
  struct chrBootstrap* bs = NULL;
  if (chrBootstrapInit(&id, 0, 1, NULL, 0, NULL, NULL, &bs) != ncclInvalidArgument ||
      !strstr(chrThreadLastError(), "not one made by ncclGetUniqueId")) {
    fprintf(stderr, "bad_id: %s\n", chrThreadLastError());
    failures++;
  }
}

int main(int argc, char** argv) {
  const char* s = argc > 1 ? argv[1] : "garbage";
  const char* scale = getenv("CHORUS_TEST_TIME_SCALE");
  if (scale != NULL && atoi(scale) > 1) gScale = atoi(scale);
  gBaseThreads = threadCount();
  if (!strcmp(s, "wrong_secret")) scenarioWrongSecret();
  else if (!strcmp(s, "garbage")) scenarioGarbage();
  else if (!strcmp(s, "exit_during_init")) scenarioExitDuringInit();
  else if (!strcmp(s, "bad_rank")) scenarioBadRank();
  else if (!strcmp(s, "out_of_range")) scenarioOutOfRange();
  else if (!strcmp(s, "missing")) scenarioMissing();
  else if (!strcmp(s, "bad_id")) scenarioBadId();
  else {
    fprintf(stderr, "unknown scenario %s\n", s);
    return 2;
  }
  if (failures) fprintf(stderr, "test_bootstrap_bad %s: %d failures\n", s, failures);
  return failures ? 1 : 0;
}
