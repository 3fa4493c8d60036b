/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fuzz_bootstrap.c: garbage on the bootstrap's ports never crashes or hangs a rank.
 *
 *   test_fuzz_bootstrap root   the root's port while 3 ranks rendezvous (ncclCommInitRank)
 *   test_fuzz_bootstrap p2p    every rank's p2p listening port after init
 *
 * The ranks are child processes (forked before this process calls into the library, as the
 * launcher does); this process makes the unique id (so it runs the root) and is the fuzzer. It
 * knows the id's secret and the wire formats (bootstrap_internal.h), so besides random bytes it
 * sends well-aimed mutations: every field of a valid hello / message header changed on its own,
 * random bit flips, truncated headers and bodies, huge sizes, connections that stall mid-message.
 * For each message it predicts, from the checks the listener must make, whether the listener has to
 * react (reject or close: a message that must be refused and gets no reaction within 10 s is a
 * hang and fails the test), keep waiting (the message is incomplete; the fuzzer resets the
 * connection), or keep the connection (the mutation happens to be well-formed: the fuzzer goes on
 * sending on that connection). A mutation that would be a real rank's hello or a message on a
 * tag that real traffic uses is never completed: with the right secret that is not garbage but an
 * impostor, which no receiver can tell from a rank.
 *
 * Afterwards every rank must still work: init completes (root), a probe message sent on a fresh
 * connection arrives (p2p), a bootstrap allgather and an ncclAllReduce on host buffers give exact
 * results, no fds are leaked (counted in /proc/self/fd), and neither the ranks nor the root crashed.
 * The fuzzer counts its messages and asserts the minimum. Seed: CHORUS_FUZZ_SEED, printed on failure.
 */
#include "bs_fuzz_ranks.h"

/* ------------------------------------------------------------------------ the fuzzer's side */

enum { OUT_REACT, OUT_WAIT, OUT_KEPT };

typedef struct {
  fuzzRng rng;
  fuzzStats st;
  chrSockAddr addr;
  uint64_t secret;
  int stall[ROOT_STALL > P2P_STALL ? ROOT_STALL : P2P_STALL];
  int nStall, maxStall;
} target;

static int connectTo(target* t) {
  int fd = fuzzConnect(&t->addr.sa, chrSockAddrLen(&t->addr), CONNECT_TIMEOUT_MS);
  if (fd >= 0) t->st.connections++;
  return fd;
}

/* An incomplete message: reset now, or (always when `stall`, else now and then) hold it open,
 * replacing the oldest held. */
static void endWaiting(target* t, int fd, int stall) {
  t->st.waited++;
  if (t->maxStall > 0 && (stall || fuzzChance(&t->rng, 5))) {
    if (t->nStall == t->maxStall) {
      fuzzAbortClose(t->stall[0]);
      memmove(t->stall, t->stall + 1, sizeof(int) * (size_t)(t->nStall - 1));
      t->nStall--;
    }
    t->stall[t->nStall++] = fd;
    t->st.stalled++;
    return;
  }
  fuzzAbortClose(fd);
}

static void releaseStalled(target* t) {
  for (int i = 0; i < t->nStall; i++) fuzzAbortClose(t->stall[i]);
  t->nStall = 0;
}

/* Open n connections that send nothing or the first bytes of `header`, and keep them: more than the
 * listener keeps at once, so it has to make room for the real peers that come next. */
static void holdIdle(target* t, int* fds, int n, const void* header, size_t headerLen) {
  for (int i = 0; i < n; i++) {
    fds[i] = connectTo(t);
    if (fds[i] < 0) FUZZ_FAIL("cannot open idle connection %d of %d: %s", i, n, strerror(errno));
    if (fuzzChance(&t->rng, 50) && fuzzSendAll(fds[i], header, 1 + fuzzBelow(&t->rng, headerLen - 1), 1000) < 0)
      FUZZ_FAIL("idle connection %d: the first bytes were not taken", i);
  }
}

static void releaseIdle(int* fds, int n) {
  for (int i = 0; i < n; i++) fuzzAbortClose(fds[i]);
}

/* 1 when the listener has closed (or reset) fd. */
static int closedByPeer(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLRDHUP};
  return poll(&p, 1, 0) > 0 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* ---- root ---- */

typedef struct {
  target t;
  int phase;         /* 1: no rank in yet; 2: rank 0 registered; 3: the other ranks are joining */
  uint32_t infoSize; /* what the real ranks send: sizeof(struct chrPeerInfo) */
  int rootGone;      /* phase 3: the root finished and closed its port */
  uint64_t replies;  /* rejects read and checked */
} rootFuzz;

enum { V_DROP, V_REJECT, V_ACCEPT, V_MAYBE };

/* What the root must do with a complete hello header (its checks, in terms of what we know). */
static int rootVerdict(const rootFuzz* f, const struct chrBsHello* h) {
  if (h->magic != CHR_BS_HELLO_MAGIC) return V_DROP;
  if (h->version != CHR_BS_WIRE_VERSION || h->secret != f->t.secret) return V_REJECT;
  if (h->nranks <= 0 || h->nranks > CHR_BOOTSTRAP_MAX_RANKS || h->rank < 0 || h->rank >= h->nranks) return V_REJECT;
  if (h->infoSize > CHR_BOOTSTRAP_MAX_INFO) return V_REJECT;
  if (chrSockAddrLen(&h->listenAddr) == 0 || chrSockAddrPort(&h->listenAddr) <= 0) return V_REJECT;
  if (f->phase >= 2 && (h->nranks != NRANKS || h->infoSize != f->infoSize || h->rank == 0)) return V_REJECT;
  /* Would register (or, in phase 3, be refused if that rank got in meanwhile): never complete it. */
  return f->phase == 3 ? V_MAYBE : V_ACCEPT;
}

static struct chrBsHello validHello(rootFuzz* f, int rank) {
  struct chrBsHello h;
  memset(&h, 0, sizeof(h));
  h.magic = CHR_BS_HELLO_MAGIC;
  h.version = CHR_BS_WIRE_VERSION;
  h.secret = f->t.secret;
  h.rank = rank;
  h.nranks = NRANKS;
  h.infoSize = f->infoSize;
  chrSockAddrParse("127.0.0.1:0", AF_INET, &h.listenAddr, NULL);
  chrSockAddrSetPort(&h.listenAddr, 1024 + (int)fuzzBelow(&f->t.rng, 60000));
  return h;
}

/* One field of a valid hello made wrong. */
static void breakHelloField(rootFuzz* f, struct chrBsHello* h) {
  fuzzRng* g = &f->t.rng;
  int nField = f->phase >= 2 ? 10 : 7;
  switch (fuzzBelow(g, (uint64_t)nField)) {
    case 0:
      do h->magic = (uint32_t)fuzzNext(g);
      while (h->magic == CHR_BS_HELLO_MAGIC);
      break;
    case 1:
      do h->version = fuzzChance(g, 50) ? (uint32_t)fuzzBelow(g, 8) : (uint32_t)fuzzNext(g);
      while (h->version == CHR_BS_WIRE_VERSION);
      break;
    case 2: h->secret ^= (fuzzNext(g) | 1); break;
    case 3: {
      static const int32_t bad[] = {0, -1, INT32_MIN, CHR_BOOTSTRAP_MAX_RANKS + 1, INT32_MAX};
      h->nranks = fuzzChance(g, 70) ? bad[fuzzBelow(g, 5)] : -(int32_t)(1 + fuzzBelow(g, INT32_MAX));
      break;
    }
    case 4: {
      int32_t bad[] = {-1, INT32_MIN, h->nranks, INT32_MAX, h->nranks + 1 + (int32_t)fuzzBelow(g, 1000)};
      h->rank = bad[fuzzBelow(g, 5)];
      break;
    }
    case 5:
      h->infoSize = fuzzChance(g, 50) ? UINT32_MAX
                                       : CHR_BOOTSTRAP_MAX_INFO + 1 + (uint32_t)fuzzBelow(g, UINT32_MAX - CHR_BOOTSTRAP_MAX_INFO);
      break;
    case 6:
      if (fuzzChance(g, 50)) {
        chrSockAddrSetPort(&h->listenAddr, 0);
      } else {
        sa_family_t fam;
        do fam = (sa_family_t)fuzzNext(g);
        while (fam == AF_INET || fam == AF_INET6);
        h->listenAddr.sa.sa_family = fam;
      }
      break;
    /* Wrong only next to the ranks already in. */
    case 7: h->nranks = NRANKS + 1 + (int32_t)fuzzBelow(g, 100); break;
    case 8:
      do h->infoSize = (uint32_t)fuzzBelow(g, CHR_BOOTSTRAP_MAX_INFO + 1);
      while (h->infoSize == f->infoSize);
      break;
    default: h->rank = 0; break; /* taken */
  }
}

/* Check what the root sent back, if anything, for a message it had to refuse. */
static void checkRootAnswer(rootFuzz* f, int fd, int verdict, const char* kind) {
  unsigned char buf[sizeof(struct chrBsReply)];
  size_t got = fuzzReadNow(fd, buf, sizeof(buf));
  if (got == 0) {
    if (verdict == V_REJECT) f->t.st.throttled++; /* closed without a reason: allowed */
    return;
  }
  if (verdict == V_DROP) FUZZ_FAIL("root answered a %s message that is not a hello (%zu bytes)", kind, got);
  if (got < sizeof(buf)) return; /* the rest is still in flight; nothing more to check */
  struct chrBsReply rep;
  memcpy(&rep, buf, sizeof(rep));
  if (rep.magic != CHR_BS_REPLY_MAGIC || rep.type != CHR_BS_REPLY_REJECT || rep.result != ncclInvalidUsage ||
      rep.payloadSize == 0 || rep.payloadSize > CHR_BS_MAX_TEXT)
    FUZZ_FAIL("root's answer to a %s hello is not a proper reject (magic 0x%x type %u result %d, %llu bytes)", kind,
              rep.magic, rep.type, rep.result, (unsigned long long)rep.payloadSize);
  f->replies++;
}

static const char* const rootKinds[] = {"random", "truncated", "one-field", "bit-flipped", "stalling"};

/* One connection, one message. Returns 0, or 1 when the root has gone (phase 3 only). */
static int rootOne(rootFuzz* f) {
  fuzzRng* g = &f->t.rng;
  enum { K_RANDOM, K_TRUNC, K_FIELD, K_FLIP, K_STALL };
  uint64_t pick = fuzzBelow(g, 100);
  int kind = pick < 20 ? K_RANDOM : pick < 35 ? K_TRUNC : pick < 70 ? K_FIELD : pick < 95 ? K_FLIP : K_STALL;
  const size_t H = sizeof(struct chrBsHello);
  unsigned char buf[H + 4096];
  size_t len = 0;
  int verdict = V_DROP, headerComplete = 1;
  struct chrBsHello h = validHello(f, (int)fuzzBelow(g, NRANKS));

  if (kind == K_RANDOM) {
    len = fuzzChance(g, 80) ? 1 + fuzzBelow(g, 2 * H) : 1 + fuzzBelow(g, sizeof(buf));
    fuzzFill(g, buf, len);
    if (len >= H) {
      memcpy(&h, buf, H);
      if (h.magic == CHR_BS_HELLO_MAGIC) h.magic ^= 1; /* never by chance, but make sure */
      memcpy(buf, &h, H);
      verdict = rootVerdict(f, &h);
    } else {
      headerComplete = 0;
    }
  } else {
    if (kind == K_FIELD) breakHelloField(f, &h);
    if (kind == K_FLIP) fuzzFlipBits(g, &h, H, 1 + (int)fuzzBelow(g, 8));
    verdict = rootVerdict(f, &h);
    memcpy(buf, &h, H);
    len = H;
    if (kind == K_TRUNC) {
      len = 1 + fuzzBelow(g, H - 1);
      headerComplete = 0;
    } else if (verdict == V_ACCEPT || verdict == V_MAYBE) {
      /* Would become a rank: stop before its info is complete (an empty info completes at once). */
      if (h.infoSize == 0) {
        len = 1 + fuzzBelow(g, H - 1);
        headerComplete = 0;
      } else {
        size_t maxInfo = h.infoSize - 1 < 4096 ? h.infoSize - 1 : 4096;
        size_t info = fuzzBelow(g, maxInfo + 1);
        fuzzFill(g, buf + H, info);
        len = H + info;
      }
    } else if (fuzzChance(g, 30)) {
      /* A refused hello followed by more: its info, or junk. */
      size_t extra = fuzzBelow(g, 4096 + 1);
      fuzzFill(g, buf + H, extra);
      len = H + extra;
    }
  }

  int fd = connectTo(&f->t);
  if (fd < 0) {
    if (f->phase == 3 && errno == ECONNREFUSED) return 1;
    FUZZ_FAIL("cannot connect to the root (phase %d): %s", f->phase, strerror(errno));
  }
  f->t.st.messages++;
  int sent = fuzzSendAll(fd, buf, len, REACT_TIMEOUT_MS);
  if (sent < 0) FUZZ_FAIL("root does not read a %s hello of %zu bytes (phase %d)", rootKinds[kind], len, f->phase);
  int mustReact = headerComplete && (verdict == V_DROP || verdict == V_REJECT);
  if (verdict == V_ACCEPT || verdict == V_MAYBE) f->t.st.accepted += headerComplete;
  if (sent == 1) { /* the root closed it while we were still sending: refused early */
    f->t.st.throttled++;
    fuzzAbortClose(fd);
    return 0;
  }
  if (!mustReact) {
    endWaiting(&f->t, fd, kind == K_STALL);
    return 0;
  }
  if (!fuzzAwaitReaction(fd, REACT_TIMEOUT_MS))
    FUZZ_FAIL("root neither refused nor closed a %s hello (verdict %d, phase %d) within %d ms", rootKinds[kind], verdict,
              f->phase, REACT_TIMEOUT_MS);
  f->t.st.reacted++;
  checkRootAnswer(f, fd, verdict, rootKinds[kind]);
  fuzzAbortClose(fd);
  return 0;
}

/* Rank 0's hello is in once a header-only probe for rank 0 is refused as taken. The probe never
 * completes, so it cannot register itself. */
static void waitRank0Registered(rootFuzz* f) {
  double end = fuzzNow() + 20;
  while (fuzzNow() < end) {
    struct chrBsHello h = validHello(f, 0);
    int fd = connectTo(&f->t);
    if (fd < 0) FUZZ_FAIL("cannot connect to the root: %s", strerror(errno));
    if (fuzzSendAll(fd, &h, sizeof(h), 1000) == 0 && fuzzAwaitReaction(fd, 100)) {
      struct chrBsReply rep;
      if (fuzzReadNow(fd, &rep, sizeof(rep)) == sizeof(rep) && rep.magic == CHR_BS_REPLY_MAGIC &&
          rep.type == CHR_BS_REPLY_REJECT) {
        fuzzAbortClose(fd);
        return;
      }
    }
    fuzzAbortClose(fd);
    fuzzSleepMs(20);
  }
  FUZZ_FAIL("rank 0 did not get into the root within 20 s");
}

/* Raise the soft fd limit for the idle connections (the root, in this process, holds as many). */
static int fdBudget(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  if (rl.rlim_cur < 4096 && rl.rlim_max >= 4096) {
    rl.rlim_cur = 4096;
    if (setrlimit(RLIMIT_NOFILE, &rl) != 0 || getrlimit(RLIMIT_NOFILE, &rl) != 0) return 0;
  }
  return rl.rlim_cur > 1 << 20 ? 1 << 20 : (int)rl.rlim_cur;
}

static void scenarioRoot(void) {
  double t0 = fuzzNow();
  int fdsBefore = fuzzCountFds();
  spawnRanks(rootRankMain);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) FUZZ_FAIL("ncclGetUniqueId: %s", ncclGetLastError(NULL));
  struct chrBsId bid;
  if (chrBsIdDecode(&id, &bid) != ncclSuccess) FUZZ_FAIL("cannot decode our own id");

  rootFuzz f;
  memset(&f, 0, sizeof(f));
  fuzzRngSeed(&f.t.rng, fuzzSeed);
  f.t.addr = bid.root;
  f.t.secret = bid.secret;
  f.t.maxStall = ROOT_STALL;
  f.infoSize = sizeof(struct chrPeerInfo);

  /* 1: nobody in yet. 2: rank 0 waits for the others; the root's deadline runs
   * (CHORUS_BOOTSTRAP_TIMEOUT, 30 s here), so this phase is capped well below it. */
  f.phase = 1;
  double end = fuzzNow() + 12;
  while (f.t.st.messages < ROOT_MIN_MESSAGES * 2 / 5 && fuzzNow() < end) rootOne(&f);
  sendIdTo(0, &id);
  waitRank0Registered(&f);
  f.phase = 2;
  end = fuzzNow() + 12;
  while (f.t.st.messages < ROOT_MIN_MESSAGES && fuzzNow() < end) rootOne(&f);
  /* 3: more idle connections than the root keeps pending, then the others join while the garbage
   * goes on, until the root is done and closes its port. */
  int nHold = fdBudget() >= 4096 ? ROOT_HOLD : 0;
  int* held = calloc(ROOT_HOLD, sizeof(int));
  struct chrBsHello any = validHello(&f, 1);
  holdIdle(&f.t, held, nHold, &any, sizeof(any));
  f.phase = 3;
  for (int r = 1; r < NRANKS; r++) {
    sendIdTo(r, &id);
    /* Garbage while this rank joins; after the last one, until the root is done. */
    int last = (r == NRANKS - 1);
    uint64_t upTo = f.t.st.messages + 2000;
    end = fuzzNow() + (last ? 15 : 5);
    while (!f.rootGone && (last || f.t.st.messages < upTo) && fuzzNow() < end) f.rootGone = rootOne(&f);
  }
  releaseStalled(&f.t);
  releaseIdle(held, nHold);
  free(held);
  if (!f.rootGone) FUZZ_FAIL("the root still listens 15 s after every rank was started");
  reapRanks(fuzzNow() + PARENT_DEADLINE_SEC);

  /* The root's thread is gone and closed everything it opened. */
  int fdsAfter = fuzzCountFds();
  for (int t = 0; t < 3000 && fdsAfter > fdsBefore + FD_SLACK; t += 20) {
    fuzzSleepMs(20);
    fdsAfter = fuzzCountFds();
  }
  if (fdsAfter > fdsBefore + FD_SLACK) FUZZ_FAIL("root process: %d fds before, %d after", fdsBefore, fdsAfter);
  if (f.t.st.messages < ROOT_MIN_MESSAGES)
    FUZZ_FAIL("only %llu messages reached the root (at least %d wanted)", (unsigned long long)f.t.st.messages,
              ROOT_MIN_MESSAGES);
  if (f.replies == 0) FUZZ_FAIL("no reject was ever read back");
  printf("fuzz root: seed 0x%llx, %llu messages on %llu connections (%llu refused as they must, %llu rejects read, "
         "%llu left incomplete, %llu stalled, %llu refused early; %d idle connections held while ranks joined) in %.1f s\n",
         (unsigned long long)fuzzSeed, (unsigned long long)f.t.st.messages, (unsigned long long)f.t.st.connections,
         (unsigned long long)f.t.st.reacted, (unsigned long long)f.replies, (unsigned long long)f.t.st.waited,
         (unsigned long long)f.t.st.stalled, (unsigned long long)f.t.st.throttled, nHold, fuzzNow() - t0);
}

/* ---- p2p ---- */

typedef struct {
  target t;
  int rank; /* the rank listening there */
} p2pTarget;

/* Would the rank take this header on a connection that so far named `connSrc` (-1: none)? */
static int p2pAccepts(const p2pTarget* p, const struct chrBsMsgHdr* h, int connSrc) {
  return h->magic == CHR_BS_MSG_MAGIC && h->secret == p->t.secret && h->src >= 0 && h->src < NRANKS &&
         h->src != p->rank && (connSrc < 0 || h->src == connSrc) && h->size <= CHR_BOOTSTRAP_MAX_MSG;
}

static int otherRank(fuzzRng* g, int not1, int not2) {
  for (;;) {
    int r = (int)fuzzBelow(g, NRANKS);
    if (r != not1 && r != not2) return r;
  }
}

static int32_t fuzzTag(fuzzRng* g) {
  int32_t t = (int32_t)(REAL_TAG_LIMIT + fuzzBelow(g, (uint64_t)INT32_MAX - REAL_TAG_LIMIT));
  return fuzzChance(g, 50) ? t : -t;
}

static struct chrBsMsgHdr validHdr(p2pTarget* p, int src, uint64_t size) {
  struct chrBsMsgHdr h;
  memset(&h, 0, sizeof(h));
  h.magic = CHR_BS_MSG_MAGIC;
  h.src = src;
  h.secret = p->t.secret;
  h.tag = fuzzTag(&p->t.rng);
  h.size = size;
  return h;
}

static void breakHdrField(p2pTarget* p, struct chrBsMsgHdr* h, int connSrc) {
  fuzzRng* g = &p->t.rng;
  switch (fuzzBelow(g, connSrc >= 0 ? 5 : 4)) {
    case 0:
      do h->magic = (uint32_t)fuzzNext(g);
      while (h->magic == CHR_BS_MSG_MAGIC);
      break;
    case 1: h->secret ^= (fuzzNext(g) | 1); break;
    case 2: {
      int32_t bad[] = {-1, INT32_MIN, NRANKS, INT32_MAX, p->rank, NRANKS + (int32_t)fuzzBelow(g, 1 << 20)};
      h->src = bad[fuzzBelow(g, 6)];
      break;
    }
    case 3: {
      uint64_t bad[] = {CHR_BOOTSTRAP_MAX_MSG + 1, UINT64_MAX, CHR_BOOTSTRAP_MAX_MSG << 1,
                        CHR_BOOTSTRAP_MAX_MSG + 1 + fuzzBelow(g, UINT64_MAX - CHR_BOOTSTRAP_MAX_MSG - 1)};
      h->size = bad[fuzzBelow(g, 4)];
      break;
    }
    default: h->src = otherRank(g, p->rank, connSrc); break; /* another rank on the same connection */
  }
}

/* Valid messages on a fuzz connection (fuzz tags: nobody receives them; they stay queued). */
static int sendFillers(p2pTarget* p, int fd, int* connSrc) {
  fuzzRng* g = &p->t.rng;
  int n = 1 + (int)fuzzBelow(g, 4);
  for (int i = 0; i < n; i++) {
    if (*connSrc < 0) *connSrc = otherRank(g, p->rank, -1);
    unsigned char buf[sizeof(struct chrBsMsgHdr) + 256];
    struct chrBsMsgHdr h = validHdr(p, *connSrc, fuzzBelow(g, 257));
    memcpy(buf, &h, sizeof(h));
    fuzzFill(g, buf + sizeof(h), (size_t)h.size);
    int r = fuzzSendAll(fd, buf, sizeof(h) + (size_t)h.size, REACT_TIMEOUT_MS);
    if (r != 0) return r;
    p->t.st.valid++;
  }
  return 0;
}

static const char* const p2pKinds[] = {"random", "truncated-header", "one-field", "bit-flipped", "truncated-body",
                                       "one-legal-field"};

/* One connection: garbage, or a few messages the rank keeps and then garbage. */
static void p2pOne(p2pTarget* p) {
  fuzzRng* g = &p->t.rng;
  const size_t H = sizeof(struct chrBsMsgHdr);
  int fd = connectTo(&p->t);
  if (fd < 0) FUZZ_FAIL("cannot connect to rank %d: %s", p->rank, strerror(errno));
  int connSrc = -1;
  int units = fuzzChance(g, 15) ? 2 + (int)fuzzBelow(g, 8) : 1;
  for (int u = 0; u < units; u++) {
    if (fuzzChance(g, 10)) {
      int r = sendFillers(p, fd, &connSrc);
      if (r == 1) { /* refused (too many connections) */
        p->t.st.throttled++;
        fuzzAbortClose(fd);
        return;
      }
      if (r < 0) FUZZ_FAIL("rank %d does not read valid messages", p->rank);
    }
    enum { K_RANDOM, K_TRUNC_HDR, K_FIELD, K_FLIP, K_TRUNC_BODY, K_LEGAL };
    uint64_t pick = fuzzBelow(g, 100);
    int kind = pick < 20 ? K_RANDOM : pick < 32 ? K_TRUNC_HDR : pick < 60 ? K_FIELD : pick < 85 ? K_FLIP
             : pick < 92 ? K_TRUNC_BODY : K_LEGAL;
    unsigned char buf[sizeof(struct chrBsMsgHdr) + 4096];
    size_t len;
    int out;
    int src = connSrc >= 0 ? connSrc : otherRank(g, p->rank, -1);
    struct chrBsMsgHdr h = validHdr(p, src, (kind == K_TRUNC_BODY ? 1 : 0) + fuzzBelow(g, 513));
    if (kind == K_RANDOM) {
      len = fuzzChance(g, 80) ? 1 + fuzzBelow(g, 4 * H) : 1 + fuzzBelow(g, sizeof(buf));
      fuzzFill(g, buf, len);
      if (len >= H) {
        memcpy(&h, buf, H);
        if (h.magic == CHR_BS_MSG_MAGIC) h.magic ^= 1; /* never by chance, but make sure */
        memcpy(buf, &h, H);
      }
      out = len >= H ? OUT_REACT : OUT_WAIT;
    } else if (kind == K_TRUNC_HDR) {
      len = 1 + fuzzBelow(g, H - 1);
      memcpy(buf, &h, len);
      out = OUT_WAIT;
    } else {
      if (kind == K_FIELD) breakHdrField(p, &h, connSrc);
      if (kind == K_FLIP) fuzzFlipBits(g, &h, H, 1 + (int)fuzzBelow(g, 6));
      if (kind == K_LEGAL) {
        if (fuzzChance(g, 50)) h.reserved = (uint32_t)fuzzNext(g);
        else h.tag = (int32_t)fuzzNext(g);
      }
      if (!p2pAccepts(p, &h, connSrc)) {
        out = OUT_REACT;
        len = H;
        if (fuzzChance(g, 30)) { /* and junk after it */
          size_t extra = fuzzBelow(g, 4096 + 1);
          fuzzFill(g, buf + H, extra);
          len += extra;
        }
      } else {
        /* Well-formed after all: keep it off the tags real traffic uses. */
        if (h.tag > -REAL_TAG_LIMIT && h.tag < REAL_TAG_LIMIT) h.tag ^= 0x40000000;
        /* The rank allocates the whole size up front (up to 4 GiB): keep most such sizes smaller, or
         * a sanitizer build spends its time mapping shadow memory. */
        if (h.size > ((uint64_t)1 << 24) && !fuzzChance(g, 10)) h.size &= ((uint64_t)1 << 24) - 1;
        if (kind != K_TRUNC_BODY && h.size <= 4096) {
          out = OUT_KEPT;
          len = H + (size_t)h.size;
        } else {
          out = OUT_WAIT; /* the rank allocates what the header says and waits for the rest */
          uint64_t most = h.size < 4096 ? h.size : 4096;
          len = H + (size_t)fuzzBelow(g, most); /* strictly less than the body */
        }
        fuzzFill(g, buf + H, len - H);
      }
      memcpy(buf, &h, H);
    }
    p->t.st.messages++;
    int r = fuzzSendAll(fd, buf, len, REACT_TIMEOUT_MS);
    if (r < 0) FUZZ_FAIL("rank %d does not read a %s message of %zu bytes", p->rank, p2pKinds[kind], len);
    if (r == 1) {
      p->t.st.throttled++;
      fuzzAbortClose(fd);
      return;
    }
    if (out == OUT_KEPT) {
      p->t.st.accepted++;
      connSrc = h.src;
      continue;
    }
    if (out == OUT_WAIT) {
      endWaiting(&p->t, fd, 0);
      return;
    }
    if (!fuzzAwaitReaction(fd, REACT_TIMEOUT_MS))
      FUZZ_FAIL("rank %d neither refused nor closed a %s message (header magic 0x%x src %d size %llu) within %d ms",
                p->rank, p2pKinds[kind], h.magic, h.src, (unsigned long long)h.size, REACT_TIMEOUT_MS);
    char sink[64];
    if (fuzzReadNow(fd, sink, sizeof(sink)) > 0) FUZZ_FAIL("rank %d answered on a p2p connection", p->rank);
    p->t.st.reacted++;
    fuzzAbortClose(fd);
    return;
  }
  fuzzAbortClose(fd); /* all kept: reset between messages */
}

static void readAddr(int r, chrSockAddr* a) {
  size_t got = 0;
  double end = fuzzNow() + 30;
  while (got < sizeof(*a)) {
    struct pollfd p = {.fd = kids[r].fromChild, .events = POLLIN};
    int left = (int)((end - fuzzNow()) * 1000);
    if (left <= 0) FUZZ_FAIL("rank %d did not report its address within 30 s", r);
    if (poll(&p, 1, left) <= 0) continue;
    ssize_t n = read(kids[r].fromChild, (char*)a + got, sizeof(*a) - got);
    if (n <= 0) {
      reapRanks(fuzzNow() + 5);
      FUZZ_FAIL("rank %d ended before reporting its address", r);
    }
    got += (size_t)n;
  }
}

static void scenarioP2p(void) {
  double t0 = fuzzNow();
  int fdsBefore = fuzzCountFds();
  spawnRanks(p2pRankMain);
  ncclUniqueId id;
  if (ncclGetUniqueId(&id) != ncclSuccess) FUZZ_FAIL("ncclGetUniqueId: %s", ncclGetLastError(NULL));
  struct chrBsId bid;
  if (chrBsIdDecode(&id, &bid) != ncclSuccess) FUZZ_FAIL("cannot decode our own id");
  for (int r = 0; r < NRANKS; r++) sendIdTo(r, &id);

  p2pTarget tg[NRANKS];
  memset(tg, 0, sizeof(tg));
  for (int r = 0; r < NRANKS; r++) {
    readAddr(r, &tg[r].t.addr);
    fuzzRngSeed(&tg[r].t.rng, fuzzSeed + 0x1000 * (uint64_t)(r + 1));
    tg[r].t.secret = bid.secret;
    tg[r].t.maxStall = P2P_STALL;
    tg[r].rank = r;
  }
  double tFuzz = fuzzNow();
  fuzzStats all;
  uint64_t i = 0;
  for (;; i++) {
    memset(&all, 0, sizeof(all));
    for (int r = 0; r < NRANKS; r++) fuzzStatsAdd(&all, &tg[r].t.st);
    if (all.messages >= P2P_MIN_MESSAGES || fuzzNow() - tFuzz > 35) break;
    p2pOne(&tg[i % NRANKS]);
  }
  double fuzzSec = fuzzNow() - tFuzz;
  for (int r = 0; r < NRANKS; r++) releaseStalled(&tg[r].t);

  /* More idle connections than a rank keeps; then a valid message from "the next rank" on a fresh
   * connection must still get in. Then the ranks stop. */
  int held[NRANKS][P2P_HOLD];
  for (int r = 0; r < NRANKS; r++) {
    struct chrBsMsgHdr any = validHdr(&tg[r], (r + 1) % NRANKS, 8);
    holdIdle(&tg[r].t, held[r], P2P_HOLD, &any, sizeof(any));
  }
  int probeFd[NRANKS];
  for (int r = 0; r < NRANKS; r++) {
    unsigned char buf[sizeof(struct chrBsMsgHdr) + PROBE_SIZE];
    struct chrBsMsgHdr h = validHdr(&tg[r], (r + 1) % NRANKS, PROBE_SIZE);
    h.tag = TAG_PROBE;
    memcpy(buf, &h, sizeof(h));
    fillPattern(buf + sizeof(h), PROBE_SIZE, 7000 + (uint64_t)r);
    probeFd[r] = connectTo(&tg[r].t);
    if (probeFd[r] < 0 || fuzzSendAll(probeFd[r], buf, sizeof(buf), 5000) != 0)
      FUZZ_FAIL("rank %d: cannot send the probe after the fuzzing", r);
  }
  fuzzSleepMs(300);
  for (int r = 0; r < NRANKS; r++)
    if (closedByPeer(probeFd[r])) FUZZ_FAIL("rank %d closed a real peer's connection while idle ones held its slots", r);
  for (int r = 0; r < NRANKS; r++) releaseIdle(held[r], P2P_HOLD);
  fuzzSleepMs(500); /* the ranks see the last resets while they still tick */
  for (int r = 0; r < NRANKS; r++)
    if (write(kids[r].toChild, "S", 1) != 1) FUZZ_FAIL("cannot tell rank %d to stop", r);
  reapRanks(fuzzNow() + PARENT_DEADLINE_SEC);
  for (int r = 0; r < NRANKS; r++) fuzzAbortClose(probeFd[r]);

  int fdsAfter = fuzzCountFds();
  for (int t = 0; t < 3000 && fdsAfter > fdsBefore + FD_SLACK; t += 20) {
    fuzzSleepMs(20);
    fdsAfter = fuzzCountFds();
  }
  if (fdsAfter > fdsBefore + FD_SLACK) FUZZ_FAIL("root process: %d fds before, %d after", fdsBefore, fdsAfter);
  if (all.messages < P2P_MIN_MESSAGES)
    FUZZ_FAIL("only %llu messages reached the ranks in %.0f s (at least %d wanted)", (unsigned long long)all.messages,
              fuzzSec, P2P_MIN_MESSAGES);
  printf("fuzz p2p: seed 0x%llx, %llu messages to %d ranks on %llu connections (%llu refused as they must, %llu "
         "well-formed mutations kept, %llu left incomplete, %llu stalled, %llu refused early; %llu valid fillers) in "
         "%.1f s (fuzzing %.1f s)\n",
         (unsigned long long)fuzzSeed, (unsigned long long)all.messages, NRANKS, (unsigned long long)all.connections,
         (unsigned long long)all.reacted, (unsigned long long)all.accepted, (unsigned long long)all.waited,
         (unsigned long long)all.stalled, (unsigned long long)all.throttled, (unsigned long long)all.valid,
         fuzzNow() - t0, fuzzSec);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s root|p2p\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  fuzzSeed = fuzzSeedFromEnv();
  /* First, so that even a run ctest kills at its timeout says how to repeat it. */
  printf("fuzz %s: seed 0x%llx (CHORUS_FUZZ_SEED repeats it)\n", argv[1], (unsigned long long)fuzzSeed);
  fflush(stdout);
  if (strcmp(argv[1], "root") == 0)
    scenarioRoot();
  else if (strcmp(argv[1], "p2p") == 0)
    scenarioP2p();
  else {
    fprintf(stderr, "unknown scenario %s\n", argv[1]);
    return 2;
  }
  return 0;
}
