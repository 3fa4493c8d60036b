/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_split.c: ncclCommSplit through the public API, N ranks as processes.
 *   test_split basic N [H]   colors rank%2, rank%3, one color, keys reversed, NCCL_SPLIT_NOCOLOR, a split of a
 *                            child; all-reduces on the children and the parent, interleaved; a bad color;
 *                            children destroyed before the parent. H > 1: ranks act out H hosts.
 *   test_split nonblocking N a non-blocking config on the split (polled); a non-blocking parent and config
 *                            NULL (the child inherits non-blocking)
 *   test_split group N       two splits of the same parent in one group, blocking and non-blocking
 *   test_split errors N      bad arguments: color, newcomm NULL, config magic, a comm still initializing
 *   test_split commid N      NCCL_COMM_ID set (the multi-host launch): 4 splits by parity in a row; every
 *                            child bootstraps over its parent, never over the fixed address
 *   test_split onethread N   ncclCommInitAll(N) in one process, then ONE thread splits all N comms inside
 *                            one group (a NOCOLOR rank included), twice; children checked in one group
 *
 * Every child is checked by an all-reduce whose result says exactly who is in it and in which order:
 * each member writes (parent rank + 1) at its child rank's slot and 1 at its parent rank's slot.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include "launch.h"
#include "nccl.h"
#include "rank_data.h" /* EXPECT */

#define CHECK_OK(call) EXPECT((call) == ncclSuccess)

#define MAX_RANKS 64
#define TAIL 1001 /* extra elements, so the data path moves more than a few words */

typedef int (*colorFn)(int rank, int nranks);
typedef int (*keyFn)(int rank, int nranks);

/* Expected child, computed without the library: members of my color ordered by (key, parent rank). */
static int expectedMembers(int rank, int nranks, colorFn color, keyFn key, int* order) {
  int c = color(rank, nranks), n = 0;
  if (c == NCCL_SPLIT_NOCOLOR) return 0;
  for (int r = 0; r < nranks; r++)
    if (color(r, nranks) == c) order[n++] = r;
  for (int i = 0; i < n; i++) /* selection sort: clear, and n is small */
    for (int j = i + 1; j < n; j++) {
      int ki = key(order[i], nranks), kj = key(order[j], nranks);
      if (kj < ki || (kj == ki && order[j] < order[i])) {
        int t = order[i]; order[i] = order[j]; order[j] = t;
      }
    }
  return n;
}

/* comm must hold exactly `members` (parent ranks, in child-rank order); myParent is this rank's parent rank. */
static int checkMembers(ncclComm_t comm, int myParent, int nParent, const int* members, int nMembers) {
  int count = -1, me = -1;
  CHECK_OK(ncclCommCount(comm, &count));
  EXPECT(count == nMembers);
  CHECK_OK(ncclCommUserRank(comm, &me));
  EXPECT(me >= 0 && me < nMembers && members[me] == myParent);
  size_t len = (size_t)(2 * nParent + TAIL);
  int* buf = calloc(len, sizeof(int));
  buf[me] = myParent + 1;          /* slot of my child rank: who I am */
  buf[nParent + myParent] = 1;     /* slot of my parent rank: that I am in */
  for (int i = 0; i < TAIL; i++) buf[2 * nParent + i] = (myParent + 1) * (i % 7 + 1);
  CHECK_OK(ncclAllReduce(buf, buf, len, ncclInt32, ncclSum, comm, NULL));
  int sum = 0;
  for (int i = 0; i < nMembers; i++) sum += members[i] + 1;
  for (int i = 0; i < nParent; i++) {
    EXPECT(buf[i] == (i < nMembers ? members[i] + 1 : 0));
    int in = 0;
    for (int j = 0; j < nMembers; j++) in |= members[j] == i;
    EXPECT(buf[nParent + i] == in);
  }
  for (int i = 0; i < TAIL; i++) EXPECT(buf[2 * nParent + i] == sum * (i % 7 + 1));
  free(buf);
  return 0;
}

static int checkWhole(ncclComm_t comm, int rank, int nranks) {
  int all[MAX_RANKS];
  for (int r = 0; r < nranks; r++) all[r] = r;
  return checkMembers(comm, rank, nranks, all, nranks);
}

static int waitReady(ncclComm_t comm) {
  ncclResult_t state;
  do {
    CHECK_OK(ncclCommGetAsyncError(comm, &state));
    if (state == ncclInProgress) usleep(1000);
  } while (state == ncclInProgress);
  EXPECT(state == ncclSuccess);
  return 0;
}

static int byParity(int r, int n) { return r % 2; }
static int byThree(int r, int n) { return r % 3; }
static int oneColor(int r, int n) { return 7; }
static int lastOut(int r, int n) { return (n > 1 && r == n - 1) || r % 4 == 2 ? NCCL_SPLIT_NOCOLOR : 0; }
static int keyRank(int r, int n) { return r; }
static int keyReversed(int r, int n) { return -r; }
static int keyZero(int r, int n) { return 0; }
static int keyHalfTies(int r, int n) { return (n - 1 - r) / 2; } /* reversed pairs, ties inside a pair */

/* Split `parent` (this rank is `rank` of `nranks`) by color/key and check the child; *child stays
 * NULL for NCCL_SPLIT_NOCOLOR. members/nMembers get the expected child. */
static int splitAndCheck(ncclComm_t parent, int rank, int nranks, colorFn color, keyFn key, ncclComm_t* child,
                         int* members, int* nMembers) {
  *nMembers = expectedMembers(rank, nranks, color, key, members);
  *child = (ncclComm_t)(void*)0x1; /* must be overwritten */
  CHECK_OK(ncclCommSplit(parent, color(rank, nranks), key(rank, nranks), child, NULL));
  if (*nMembers == 0) {
    EXPECT(*child == NULL);
    return 0;
  }
  EXPECT(*child != NULL);
  return checkMembers(*child, rank, nranks, members, *nMembers);
}

static int basicRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t parent = NULL;
  CHECK_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  EXPECT(checkWhole(parent, rank, nranks) == 0);

  struct { colorFn color; keyFn key; } cases[] = {
      {byParity, keyRank}, {byThree, keyReversed}, {oneColor, keyZero}, {oneColor, keyReversed},
      {byParity, keyHalfTies}, {lastOut, keyRank}};
  enum { NCASES = sizeof(cases) / sizeof(cases[0]) };
  ncclComm_t child[NCASES];
  int members[NCASES][MAX_RANKS], nMembers[NCASES];
  for (int c = 0; c < NCASES; c++) {
    EXPECT(splitAndCheck(parent, rank, nranks, cases[c].color, cases[c].key, &child[c], members[c], &nMembers[c]) == 0);
    EXPECT(checkWhole(parent, rank, nranks) == 0); /* the parent still works between splits */
  }

  /* A child of a child: the parity child split by its own halves, keys reversed. */
  int myChildRank = -1, childN = 0;
  CHECK_OK(ncclCommUserRank(child[0], &myChildRank));
  CHECK_OK(ncclCommCount(child[0], &childN));
  ncclComm_t grand = NULL;
  int half = myChildRank < (childN + 1) / 2;
  CHECK_OK(ncclCommSplit(child[0], half, -myChildRank, &grand, NULL));
  EXPECT(grand != NULL);
  int gm[MAX_RANKS], ng = 0;
  for (int i = childN - 1; i >= 0; i--) /* members of my half of the parity child, reversed */
    if ((i < (childN + 1) / 2) == half) gm[ng++] = members[0][i];
  EXPECT(checkMembers(grand, rank, nranks, gm, ng) == 0);

  /* Interleaved: parent, children, grandchild, parent again; twice. */
  for (int round = 0; round < 2; round++) {
    EXPECT(checkWhole(parent, rank, nranks) == 0);
    for (int c = NCASES - 1; c >= 0; c--)
      if (child[c]) EXPECT(checkMembers(child[c], rank, nranks, members[c], nMembers[c]) == 0);
    EXPECT(checkMembers(grand, rank, nranks, gm, ng) == 0);
  }

  /* A bad color fails locally, on every rank, and leaves the parent usable. */
  ncclComm_t bad = (ncclComm_t)(void*)0x1;
  EXPECT(ncclCommSplit(parent, -2, 0, &bad, NULL) == ncclInvalidArgument);
  EXPECT(bad == NULL);
  EXPECT(strstr(ncclGetLastError(NULL), "color") != NULL);
  EXPECT(checkWhole(parent, rank, nranks) == 0);

  /* Children first (the grandchild before its parent), then the parent. */
  CHECK_OK(ncclCommDestroy(grand));
  for (int c = 0; c < NCASES; c++) CHECK_OK(ncclCommDestroy(child[c])); /* NULL ones: no-op */
  EXPECT(checkWhole(parent, rank, nranks) == 0);
  CHECK_OK(ncclCommDestroy(parent));
  return 0;
}

static int nonblockingRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  /* Blocking parent, non-blocking config given to the split. */
  ncclComm_t parent = NULL;
  CHECK_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  ncclConfig_t nb = NCCL_CONFIG_INITIALIZER;
  nb.blocking = 0;
  int members[MAX_RANKS];
  int n = expectedMembers(rank, nranks, byParity, keyReversed, members);
  ncclComm_t child = NULL;
  ncclResult_t res = ncclCommSplit(parent, byParity(rank, nranks), keyReversed(rank, nranks), &child, &nb);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  EXPECT(child != NULL);
  EXPECT(waitReady(child) == 0);
  EXPECT(checkMembers(child, rank, nranks, members, n) == 0);
  EXPECT(checkWhole(parent, rank, nranks) == 0);

  /* Non-blocking parent, config NULL: the child inherits non-blocking, so its init runs on a thread. */
  ncclComm_t nbParent = NULL;
  /* A second parent over the same ranks, made from the first one by a split with one color. */
  res = ncclCommSplit(parent, 0, 0, &nbParent, &nb);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  EXPECT(waitReady(nbParent) == 0);
  ncclComm_t inherited = NULL;
  res = ncclCommSplit(nbParent, byThree(rank, nranks), keyRank(rank, nranks), &inherited, NULL);
  EXPECT(res == ncclInProgress); /* inherited blocking = 0 */
  EXPECT(inherited != NULL);
  EXPECT(waitReady(inherited) == 0);
  n = expectedMembers(rank, nranks, byThree, keyRank, members);
  EXPECT(checkMembers(inherited, rank, nranks, members, n) == 0);

  /* ...and a blocking config given explicitly overrides the parent's non-blocking one. */
  ncclConfig_t blocking = NCCL_CONFIG_INITIALIZER;
  blocking.blocking = 1;
  ncclComm_t explicitBlocking = NULL;
  CHECK_OK(ncclCommSplit(nbParent, 0, rank, &explicitBlocking, &blocking));
  EXPECT(checkWhole(explicitBlocking, rank, nranks) == 0);

  /* NCCL_SPLIT_NOCOLOR on a non-blocking parent: no child, nothing to poll. */
  ncclComm_t none = (ncclComm_t)(void*)0x1;
  res = ncclCommSplit(nbParent, NCCL_SPLIT_NOCOLOR, 0, &none, NULL);
  EXPECT(res == ncclSuccess || res == ncclInProgress);
  EXPECT(none == NULL);

  CHECK_OK(ncclCommDestroy(explicitBlocking));
  CHECK_OK(ncclCommDestroy(inherited));
  CHECK_OK(ncclCommDestroy(child));
  CHECK_OK(ncclCommDestroy(nbParent));
  EXPECT(checkWhole(parent, rank, nranks) == 0);
  CHECK_OK(ncclCommDestroy(parent));
  return 0;
}

static int groupRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t parent = NULL;
  CHECK_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  /* Two splits of one parent in one group (as PyTorch batches them): both children exist at GroupEnd. */
  ncclComm_t a = NULL, b = NULL;
  CHECK_OK(ncclGroupStart());
  CHECK_OK(ncclCommSplit(parent, byParity(rank, nranks), rank, &a, NULL));
  CHECK_OK(ncclCommSplit(parent, oneColor(rank, nranks), -rank, &b, NULL));
  CHECK_OK(ncclGroupEnd());
  EXPECT(a != NULL && b != NULL);
  int ma[MAX_RANKS], mb[MAX_RANKS];
  int na = expectedMembers(rank, nranks, byParity, keyRank, ma);
  int nb = expectedMembers(rank, nranks, oneColor, keyReversed, mb);
  EXPECT(checkMembers(b, rank, nranks, mb, nb) == 0);
  EXPECT(checkMembers(a, rank, nranks, ma, na) == 0);
  EXPECT(checkWhole(parent, rank, nranks) == 0);

  /* The same with a non-blocking config: GroupEnd says in progress (or done); poll each child. */
  ncclConfig_t nbc = NCCL_CONFIG_INITIALIZER;
  nbc.blocking = 0;
  ncclComm_t c = NULL, d = NULL;
  CHECK_OK(ncclGroupStart());
  ncclResult_t res = ncclCommSplit(parent, byThree(rank, nranks), rank, &c, &nbc);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  res = ncclCommSplit(parent, lastOut(rank, nranks), rank, &d, &nbc);
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  res = ncclGroupEnd();
  EXPECT(res == ncclInProgress || res == ncclSuccess);
  EXPECT(c != NULL && waitReady(c) == 0);
  int mc[MAX_RANKS], md[MAX_RANKS];
  int nc = expectedMembers(rank, nranks, byThree, keyRank, mc);
  int nd = expectedMembers(rank, nranks, lastOut, keyRank, md);
  EXPECT(checkMembers(c, rank, nranks, mc, nc) == 0);
  if (nd == 0) {
    EXPECT(d == NULL);
  } else {
    EXPECT(d != NULL && waitReady(d) == 0);
    EXPECT(checkMembers(d, rank, nranks, md, nd) == 0);
  }
  CHECK_OK(ncclCommDestroy(a));
  CHECK_OK(ncclCommDestroy(b));
  CHECK_OK(ncclCommDestroy(c));
  CHECK_OK(ncclCommDestroy(d));
  CHECK_OK(ncclCommDestroy(parent));
  return 0;
}

static int commIdRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t parent = NULL;
  CHECK_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  for (int i = 0; i < 4; i++) {
    ncclComm_t child = NULL;
    int members[MAX_RANKS], nMembers = 0;
    EXPECT(splitAndCheck(parent, rank, nranks, byParity, i % 2 ? keyReversed : keyRank, &child, members, &nMembers) == 0);
    CHECK_OK(ncclCommDestroy(child));
  }
  EXPECT(checkWhole(parent, rank, nranks) == 0);
  CHECK_OK(ncclCommDestroy(parent));
  return 0;
}

static int oneThreadSplits(int n) {
  ncclComm_t comms[MAX_RANKS], kids[MAX_RANKS];
  int* bufs[MAX_RANKS];
  int members[MAX_RANKS][MAX_RANKS], nMembers[MAX_RANKS];
  size_t len = (size_t)(2 * n + TAIL);
  CHECK_OK(ncclCommInitAll(comms, n, NULL));
  for (int round = 0; round < 2; round++) {
    colorFn color = round == 0 ? lastOut : byParity;
    CHECK_OK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
      kids[r] = (ncclComm_t)(void*)0x1; /* must be overwritten */
      CHECK_OK(ncclCommSplit(comms[r], color(r, n), keyReversed(r, n), &kids[r], NULL));
    }
    CHECK_OK(ncclGroupEnd());
    /* Every child at once, from this one thread: the member list comes back in the sums. */
    CHECK_OK(ncclGroupStart());
    for (int r = 0; r < n; r++) {
      nMembers[r] = expectedMembers(r, n, color, keyReversed, members[r]);
      bufs[r] = calloc(len, sizeof(int));
      if (nMembers[r] == 0) {
        EXPECT(kids[r] == NULL);
        continue;
      }
      EXPECT(kids[r] != NULL);
      int me = -1, count = -1;
      CHECK_OK(ncclCommUserRank(kids[r], &me));
      CHECK_OK(ncclCommCount(kids[r], &count));
      EXPECT(count == nMembers[r] && me >= 0 && me < count && members[r][me] == r);
      bufs[r][me] = r + 1;
      bufs[r][n + r] = 1;
      for (int i = 0; i < TAIL; i++) bufs[r][2 * n + i] = (r + 1) * (i % 7 + 1);
      CHECK_OK(ncclAllReduce(bufs[r], bufs[r], len, ncclInt32, ncclSum, kids[r], NULL));
    }
    CHECK_OK(ncclGroupEnd());
    for (int r = 0; r < n; r++) {
      if (nMembers[r] > 0) {
        int sum = 0;
        for (int i = 0; i < nMembers[r]; i++) sum += members[r][i] + 1;
        for (int i = 0; i < n; i++) {
          EXPECT(bufs[r][i] == (i < nMembers[r] ? members[r][i] + 1 : 0));
          int in = 0;
          for (int j = 0; j < nMembers[r]; j++) in |= members[r][j] == i;
          EXPECT(bufs[r][n + i] == in);
        }
        for (int i = 0; i < TAIL; i++) EXPECT(bufs[r][2 * n + i] == sum * (i % 7 + 1));
        CHECK_OK(ncclCommDestroy(kids[r]));
      }
      free(bufs[r]);
    }
  }
  for (int r = 0; r < n; r++) CHECK_OK(ncclCommDestroy(comms[r]));
  return 0;
}

static int errorsRank(int rank, int nranks, const ncclUniqueId* id, void* arg) {
  ncclComm_t parent = NULL, child = NULL;
  CHECK_OK(ncclCommInitRank(&parent, nranks, *id, rank));
  EXPECT(ncclCommSplit(parent, 0, 0, NULL, NULL) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(NULL), "newcomm") != NULL);
  EXPECT(ncclCommSplit(NULL, 0, 0, &child, NULL) == ncclInvalidArgument);
  EXPECT(child == NULL);
  EXPECT(ncclCommSplit(parent, -3, 0, &child, NULL) == ncclInvalidArgument);
  EXPECT(strstr(ncclGetLastError(parent), "color = -3") != NULL);
  ncclConfig_t badConfig = NCCL_CONFIG_INITIALIZER;
  badConfig.magic = 0;
  EXPECT(ncclCommSplit(parent, 0, 0, &child, &badConfig) == ncclInvalidArgument);
  badConfig = (ncclConfig_t)NCCL_CONFIG_INITIALIZER;
  badConfig.blocking = 5;
  EXPECT(ncclCommSplit(parent, 0, 0, &child, &badConfig) == ncclInvalidArgument);
  EXPECT(child == NULL);
  /* None of the above took part in an exchange: a good split still lines up on every rank. */
  CHECK_OK(ncclCommSplit(parent, 0, 0, &child, NULL));
  EXPECT(checkWhole(child, rank, nranks) == 0);
  /* A finalized parent cannot be split. */
  CHECK_OK(ncclCommFinalize(parent));
  ncclComm_t late = NULL;
  EXPECT(ncclCommSplit(parent, 0, 0, &late, NULL) == ncclInvalidUsage);
  EXPECT(late == NULL);
  CHECK_OK(ncclCommDestroy(parent));
  /* The child outlives its parent. */
  EXPECT(checkWhole(child, rank, nranks) == 0);
  CHECK_OK(ncclCommDestroy(child));
  return 0;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: test_split basic|nonblocking|group|errors|commid|onethread N [hosts]\n");
    return 2;
  }
  int n = atoi(argv[2]);
  int hosts = argc > 3 ? atoi(argv[3]) : 1;
  if (n < 1 || n > MAX_RANKS || hosts < 1) {
    fprintf(stderr, "bad N %d or hosts %d\n", n, hosts);
    return 2;
  }
  if (strcmp(argv[1], "basic") == 0) return chrLaunchRanks(n, hosts, 80, basicRank, NULL);
  if (strcmp(argv[1], "nonblocking") == 0) return chrLaunchRanks(n, hosts, 80, nonblockingRank, NULL);
  if (strcmp(argv[1], "group") == 0) return chrLaunchRanks(n, hosts, 80, groupRank, NULL);
  if (strcmp(argv[1], "errors") == 0) return chrLaunchRanks(n, hosts, 80, errorsRank, NULL);
  if (strcmp(argv[1], "onethread") == 0) return oneThreadSplits(n);
  if (strcmp(argv[1], "commid") == 0) {
    int port = chrLaunchFreeLoopbackPort();
    EXPECT(port > 0);
    char commId[64];
    snprintf(commId, sizeof(commId), "127.0.0.1:%d", port);
    setenv("NCCL_COMM_ID", commId, 1); /* before any rank is forked or the library reads its config */
    return chrLaunchRanks(n, hosts, 80, commIdRank, NULL);
  }
  fprintf(stderr, "unknown scenario %s\n", argv[1]);
  return 2;
}
