/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_fuzz_net_socket.c: garbage never crashes or hangs the TCP net plugin (libnccl-net-socket.so).
 *
 *   test_fuzz_net_socket <path/to/libnccl-net-socket.so>
 *
 * Driven through the plugin's exported ncclNetPlugin_v12 table, as a core would:
 *  1. listen port: while a thread keeps calling accept(), this thread connects to the address in the
 *     listen handle and sends random bytes, truncated hellos, hellos with one field wrong (magic,
 *     nonce, socket index, socket count), bit-flipped hellos, and hellos that stall. Each refused
 *     hello must be closed by the plugin within 10 s; none may ever turn into a comm.
 *  2. control socket: a fake sender that knows the handle (so its handshake is right) sends one
 *     corrupt message header (random, wrong magic / sequence / eager flag, bigger than the posted
 *     buffer, truncated, bit-flipped) or cuts the message short; the posted receive must fail (or, for
 *     a mutation that is a valid empty message, complete) within 10 s.
 *  3. handles: connect() with mutated handles (the handle comes from the network) fails at once.
 *  4. then a real connect / accept / isend / irecv on the fuzzed listen comm moves data intact, and
 *     no fd is left open.
 * Seed: CHORUS_FUZZ_SEED (printed on failure). Settings (NCCL_SOCKET_NTHREADS, ...) come from ctest.
 */
#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz_util.h"
#include "socket_plugin.h"

#define LISTEN_MIN_MESSAGES 30000 /* with the bootstrap's fuzz tests: >= 10^5 in all */
#define CTRL_MIN_ROUNDS 3000
#define HANDLE_ROUNDS 20000
#define REACT_TIMEOUT_MS 10000
#define LISTEN_STALL 8
#define LISTEN_HOLD (2 * (NS_MAX_SOCKS + 1) + 10) /* idle connections, more than the listener keeps */
#define FD_SLACK 2

static const ncclNet_v12_t* net;
static void* ctx;
static atomic_int warns;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  (void)flags;
  if (level == NCCL_LOG_WARN) atomic_fetch_add(&warns, 1);
  if (getenv("CHORUS_FUZZ_VERBOSE") == NULL) return;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "[plugin %d %s:%d] ", (int)level, file, line);
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

/* The socket utilities' address helpers, without linking them (the plugin keeps its copy hidden). */
static int addrPort(const chrSockAddr* a) {
  if (a->sa.sa_family == AF_INET) return ntohs(a->sin.sin_port);
  if (a->sa.sa_family == AF_INET6) return ntohs(a->sin6.sin6_port);
  return -1;
}
static socklen_t addrLen(const chrSockAddr* a) {
  if (a->sa.sa_family == AF_INET) return sizeof(struct sockaddr_in);
  if (a->sa.sa_family == AF_INET6) return sizeof(struct sockaddr_in6);
  return 0;
}

#define OK(call)                                                            \
  do {                                                                      \
    ncclResult_t r_ = (call);                                               \
    if (r_ != ncclSuccess) FUZZ_FAIL("%s returned %d", #call, (int)r_);     \
  } while (0)

static void loadPlugin(const char* path) {
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) FUZZ_FAIL("dlopen %s: %s", path, dlerror());
  net = dlsym(lib, "ncclNetPlugin_v12");
  if (net == NULL) FUZZ_FAIL("ncclNetPlugin_v12 not exported");
  ncclNetCommConfig_v12_t cfg = {NCCL_NET_TRAFFIC_CLASS_UNDEF};
  OK(net->init(&ctx, 0x5eed, &cfg, logger, NULL));
  int ndev = 0;
  OK(net->devices(&ndev));
  if (ndev < 1) FUZZ_FAIL("no devices");
}

/* ------------------------------------------------------------------------ 1: the listen port */

/* Keeps calling accept() on a listen comm, as a core's proxy would, until it yields a comm. */
typedef struct {
  void* lc;
  atomic_int stop;
  _Atomic(void*) rc; /* the comm accept produced */
  double at;
} acceptor;

static void* acceptorMain(void* arg) {
  acceptor* a = arg;
  while (!atomic_load(&a->stop)) {
    void* rc = NULL;
    OK(net->accept(a->lc, &rc, NULL));
    if (rc != NULL) {
      a->rc = rc;
      a->at = fuzzNow();
      return NULL;
    }
    usleep(200);
  }
  return NULL;
}

typedef struct {
  fuzzRng rng;
  fuzzStats st;
  nsHandle h;
  int stall[LISTEN_STALL];
  int nStall;
} listenFuzz;

/* Would the listener take this hello into a slot? */
static int helloAccepted(const listenFuzz* f, const nsHello* h) {
  return h->magic == NS_HELLO_MAGIC && h->nonce == f->h.nonce && h->nSocks == f->h.nSocks && h->index <= f->h.nSocks;
}

static const char* const helloKinds[] = {"random", "truncated", "one-field", "bit-flipped", "stalling"};

static void listenOne(listenFuzz* f) {
  fuzzRng* g = &f->rng;
  const size_t H = sizeof(nsHello);
  enum { K_RANDOM, K_TRUNC, K_FIELD, K_FLIP, K_STALL };
  uint64_t pick = fuzzBelow(g, 100);
  int kind = pick < 20 ? K_RANDOM : pick < 35 ? K_TRUNC : pick < 65 ? K_FIELD : pick < 95 ? K_FLIP : K_STALL;
  unsigned char buf[2048];
  size_t len;
  int mustReact;
  nsHello h = {.magic = NS_HELLO_MAGIC, .nonce = f->h.nonce, .index = (uint32_t)fuzzBelow(g, f->h.nSocks + 1),
               .nSocks = f->h.nSocks};
  if (kind == K_RANDOM) {
    len = fuzzChance(g, 80) ? 1 + fuzzBelow(g, 3 * H) : 1 + fuzzBelow(g, sizeof(buf));
    fuzzFill(g, buf, len);
    if (len >= H) {
      nsHello r;
      memcpy(&r, buf, H);
      if (r.magic == NS_HELLO_MAGIC) r.magic ^= 1; /* never by chance, but make sure */
      memcpy(buf, &r, H);
    }
    mustReact = len >= H;
  } else {
    if (kind == K_FIELD) {
      switch (fuzzBelow(g, 5)) {
        case 0:
          do h.magic = fuzzNext(g);
          while (h.magic == NS_HELLO_MAGIC);
          break;
        case 1: h.magic = NS_HANDLE_MAGIC; break; /* the handle's magic, not the hello's */
        case 2: h.nonce ^= fuzzNext(g) | 1; break;
        case 3:
          h.index = fuzzChance(g, 50) ? f->h.nSocks + 1 + (uint32_t)fuzzBelow(g, 100) : (uint32_t)fuzzNext(g);
          if (h.index <= f->h.nSocks) h.index = UINT32_MAX;
          break;
        default:
          do h.nSocks = fuzzChance(g, 50) ? (uint32_t)fuzzBelow(g, NS_MAX_SOCKS + 2) : (uint32_t)fuzzNext(g);
          while (h.nSocks == f->h.nSocks);
          break;
      }
    }
    if (kind == K_FLIP) fuzzFlipBits(g, &h, H, 1 + (int)fuzzBelow(g, 6));
    memcpy(buf, &h, H);
    if (kind == K_TRUNC || helloAccepted(f, &h)) {
      /* A hello the listener would take into a slot is never completed: with the right nonce it is
       * a connector, not garbage. */
      len = 1 + fuzzBelow(g, H - 1);
      mustReact = 0;
    } else {
      len = H;
      if (fuzzChance(g, 30)) { /* junk after it */
        size_t extra = fuzzBelow(g, sizeof(buf) - H + 1);
        fuzzFill(g, buf + H, extra);
        len += extra;
      }
      mustReact = 1;
    }
  }
  int fd = fuzzConnect(&f->h.addr.sa, addrLen(&f->h.addr), REACT_TIMEOUT_MS);
  if (fd < 0) FUZZ_FAIL("cannot connect to the listen port: %s", strerror(errno));
  f->st.connections++;
  f->st.messages++;
  int r = fuzzSendAll(fd, buf, len, REACT_TIMEOUT_MS);
  if (r < 0) FUZZ_FAIL("the listener does not read a %s hello of %zu bytes", helloKinds[kind], len);
  if (r == 1) {
    f->st.throttled++;
    fuzzAbortClose(fd);
    return;
  }
  if (!mustReact) {
    f->st.waited++;
    if (kind == K_STALL || fuzzChance(g, 2)) {
      if (f->nStall == LISTEN_STALL) {
        fuzzAbortClose(f->stall[0]);
        memmove(f->stall, f->stall + 1, sizeof(int) * (LISTEN_STALL - 1));
        f->nStall--;
      }
      f->stall[f->nStall++] = fd;
      f->st.stalled++;
    } else {
      fuzzAbortClose(fd);
    }
    return;
  }
  if (!fuzzAwaitReaction(fd, REACT_TIMEOUT_MS))
    FUZZ_FAIL("the listener kept a %s hello (magic 0x%llx index %u nSocks %u) for %d ms", helloKinds[kind],
              (unsigned long long)h.magic, h.index, h.nSocks, REACT_TIMEOUT_MS);
  char sink[16];
  if (fuzzReadNow(fd, sink, sizeof(sink)) > 0) FUZZ_FAIL("the listener answered a hello");
  f->st.reacted++;
  fuzzAbortClose(fd);
}

/* ------------------------------------------------------------------------ 2: the control socket */

typedef struct {
  fuzzRng rng;
  fuzzStats st;
  uint64_t failed, completed;
} ctrlFuzz;

/* Open every socket of a connection to `handle` by hand, with correct hellos. */
static void fakeConnect(const nsHandle* h, int* fds) {
  for (uint32_t i = 0; i <= h->nSocks; i++) {
    fds[i] = fuzzConnect(&h->addr.sa, addrLen(&h->addr), REACT_TIMEOUT_MS);
    if (fds[i] < 0) FUZZ_FAIL("fake connect: %s", strerror(errno));
    nsHello hello = {.magic = NS_HELLO_MAGIC, .nonce = h->nonce, .index = i, .nSocks = h->nSocks};
    if (fuzzSendAll(fds[i], &hello, sizeof(hello), REACT_TIMEOUT_MS) != 0) FUZZ_FAIL("fake connect: hello not taken");
  }
}

static void* acceptNow(void* lc) {
  void* rc = NULL;
  double end = fuzzNow() + 10;
  while (rc == NULL) {
    OK(net->accept(lc, &rc, NULL));
    if (rc == NULL && fuzzNow() > end) FUZZ_FAIL("accept did not finish within 10 s");
    if (rc == NULL) usleep(50);
  }
  return rc;
}

static void ctrlOne(ctrlFuzz* f) {
  fuzzRng* g = &f->rng;
  char hbuf[NCCL_NET_HANDLE_MAXSIZE];
  void* lc = NULL;
  OK(net->listen(ctx, 0, hbuf, &lc));
  nsHandle h;
  memcpy(&h, hbuf, sizeof(h));
  int fds[NS_MAX_SOCKS + 1];
  fakeConnect(&h, fds);
  void* rc = acceptNow(lc);
  size_t cap = 1 + (size_t)fuzzBelow(g, 65536);
  unsigned char* rbuf = malloc(cap);
  void* req = NULL;
  void* data = rbuf;
  int tag = 0;
  OK(net->irecv(rc, 1, &data, &cap, &tag, NULL, NULL, &req));
  if (req == NULL) FUZZ_FAIL("irecv refused on a fresh comm");

  /* One message on the control socket: a corrupt header, or a good one cut short. */
  const size_t H = sizeof(nsMsgHdr);
  size_t eagerMax = 16384 < cap ? 16384 : cap;
  nsMsgHdr m = {.magic = NS_MSG_MAGIC, .eager = 1, .seq = 0, .size = 1 + fuzzBelow(g, eagerMax)};
  unsigned char buf[4096 + sizeof(nsMsgHdr)];
  size_t len = H;
  enum { K_RANDOM, K_MAGIC, K_SEQ, K_EAGER, K_SIZE, K_TRUNC_HDR, K_TRUNC_EAGER, K_NO_DATA, K_FLIP };
  int kind = (int)fuzzBelow(g, 9);
  switch (kind) {
    case K_RANDOM:
      len = H + fuzzBelow(g, 200);
      fuzzFill(g, buf, len);
      memcpy(&m, buf, H);
      if (m.magic == NS_MSG_MAGIC) m.magic ^= 1; /* never by chance, but make sure */
      memcpy(buf, &m, H);
      break;
    case K_MAGIC:
      do m.magic = (uint32_t)fuzzNext(g);
      while (m.magic == NS_MSG_MAGIC);
      break;
    case K_SEQ: m.seq = fuzzChance(g, 50) ? 1 + fuzzBelow(g, 64) : fuzzNext(g) | 1; break;
    case K_EAGER: m.eager = 2 + (uint32_t)fuzzBelow(g, UINT32_MAX - 2); break;
    case K_SIZE: {
      uint64_t bad[] = {cap + 1, UINT64_MAX, (uint64_t)1 << 63, cap + 1 + fuzzBelow(g, (uint64_t)1 << 40)};
      m.size = bad[fuzzBelow(g, 4)];
      m.eager = (uint32_t)fuzzBelow(g, 2);
      break;
    }
    case K_TRUNC_HDR: len = 1 + fuzzBelow(g, H - 1); break;
    case K_TRUNC_EAGER: len = H + fuzzBelow(g, m.size < 4096 ? m.size : 4096); break;
    case K_NO_DATA: m.eager = 0; m.size = 1 + fuzzBelow(g, cap); break;
    default: fuzzFlipBits(g, &m, H, 1 + (int)fuzzBelow(g, 4)); break;
  }
  if (kind != K_RANDOM) {
    memcpy(buf, &m, H);
    if (len > H) fuzzFill(g, buf + H, len - H);
  }
  /* Then every socket is reset, so no piece or payload the header promises ever comes: only a
   * valid empty message may complete the receive; everything else must fail it. (No case sends
   * a complete non-empty eager payload.) */
  int mayComplete = m.magic == NS_MSG_MAGIC && m.seq == 0 && m.eager <= 1 && m.size == 0 && len >= H;
  f->st.messages++;
  if (fuzzSendAll(fds[0], buf, len, REACT_TIMEOUT_MS) < 0) FUZZ_FAIL("the receiver does not read its control socket");
  for (uint32_t i = 0; i <= h.nSocks; i++) fuzzAbortClose(fds[i]);
  int done = 0;
  ncclResult_t res = ncclSuccess;
  double end = fuzzNow() + REACT_TIMEOUT_MS / 1000.0;
  while (res == ncclSuccess && !done) {
    int size = -1;
    res = net->test(req, &done, &size);
    if (res == ncclSuccess && !done) {
      if (fuzzNow() > end)
        FUZZ_FAIL("a receive fed a corrupt message (kind %d: magic 0x%x eager %u seq %llu size %llu, %zu bytes sent) "
                  "neither failed nor completed in %d ms",
                  kind, m.magic, m.eager, (unsigned long long)m.seq, (unsigned long long)m.size, len, REACT_TIMEOUT_MS);
      usleep(50);
    }
    if (done && size != 0) FUZZ_FAIL("a corrupt message completed a receive with %d bytes", size);
  }
  if (done && !mayComplete)
    FUZZ_FAIL("a corrupt message (kind %d: magic 0x%x eager %u seq %llu size %llu) completed a receive", kind, m.magic,
              m.eager, (unsigned long long)m.seq, (unsigned long long)m.size);
  if (done) f->completed++;
  else f->failed++;
  if (res != ncclSuccess && res != ncclSystemError && res != ncclRemoteError)
    FUZZ_FAIL("test() on a corrupt message returned %d, not a system or remote error", (int)res);
  /* Later calls keep failing, never crash. */
  if (!done) {
    void* again = NULL;
    if (net->irecv(rc, 1, &data, &cap, &tag, NULL, NULL, &again) == ncclSuccess && again != NULL)
      FUZZ_FAIL("irecv accepted on a failed comm");
  }
  OK(net->closeRecv(rc));
  OK(net->closeListen(lc));
  free(rbuf);
}

/* ------------------------------------------------------------------------ 3: handles */

static int handleValid(const nsHandle* h) {
  int fam = h->addr.sa.sa_family;
  return h->magic == NS_HANDLE_MAGIC && (fam == AF_INET || fam == AF_INET6) && addrPort(&h->addr) > 0 &&
         h->nSocks >= 1 && h->nSocks <= NS_MAX_SOCKS && h->nThreads <= NS_MAX_THREADS &&
         (h->nThreads == 0 || h->nSocks % h->nThreads == 0);
}


static uint64_t handleFuzz(fuzzRng* g, const char* good) {
  uint64_t tried = 0;
  for (int i = 0; i < HANDLE_ROUNDS; i++) {
    char hb[NCCL_NET_HANDLE_MAXSIZE];
    memcpy(hb, good, sizeof(hb));
    nsHandle h;
    memcpy(&h, hb, sizeof(h));
    switch (fuzzBelow(g, 6)) {
      case 0: fuzzFill(g, hb, sizeof(hb)); memcpy(&h, hb, sizeof(h)); break;
      case 1: h.magic ^= fuzzNext(g) | 1; break;
      case 2: h.addr.sa.sa_family = (sa_family_t)fuzzNext(g); break;
      case 3: h.nSocks = fuzzChance(g, 50) ? 0 : NS_MAX_SOCKS + 1 + (uint32_t)fuzzBelow(g, UINT32_MAX - NS_MAX_SOCKS - 1); break;
      case 4: h.nThreads = NS_MAX_THREADS + 1 + (uint32_t)fuzzBelow(g, 1000); break;
      default: fuzzFlipBits(g, &h, sizeof(h), 1 + (int)fuzzBelow(g, 8)); break;
    }
    if (handleValid(&h)) continue; /* a usable handle would really connect somewhere */
    memcpy(hb, &h, sizeof(h));
    void* sc = (void*)0x1;
    ncclResult_t r = net->connect(ctx, 0, hb, &sc, NULL);
    if (r == ncclSuccess) FUZZ_FAIL("connect accepted a broken handle (magic 0x%llx family %d nSocks %u nThreads %u)",
                                    (unsigned long long)h.magic, h.addr.sa.sa_family, h.nSocks, h.nThreads);
    if (sc != NULL) FUZZ_FAIL("connect failed but left a comm");
    tried++;
  }
  return tried;
}

/* ------------------------------------------------------------------------ 4: real traffic */

static void fillData(unsigned char* p, size_t n, uint64_t seed) {
  fuzzRng r;
  fuzzRngSeed(&r, seed);
  fuzzFill(&r, p, n);
}

typedef struct {
  void* sc;
  const size_t* sizes;
  int n;
} sender;

static void* senderMain(void* arg) {
  sender* s = arg;
  for (int i = 0; i < s->n; i++) {
    size_t sz = s->sizes[i];
    unsigned char* b = malloc(sz + 1);
    fillData(b, sz, 77 + (uint64_t)i);
    void* req = NULL;
    double end = fuzzNow() + 20;
    while (req == NULL) {
      OK(net->isend(s->sc, b, sz, 0, NULL, NULL, &req));
      if (req == NULL && fuzzNow() > end) FUZZ_FAIL("isend never accepted");
    }
    int done = 0;
    while (!done) {
      OK(net->test(req, &done, NULL));
      if (!done && fuzzNow() > end) FUZZ_FAIL("send %d not done in 20 s", i);
    }
    free(b);
  }
  return NULL;
}

static void realTraffic(acceptor* a, const char* handle) {
  void* sc = NULL;
  char hb[NCCL_NET_HANDLE_MAXSIZE];
  memcpy(hb, handle, sizeof(hb));
  double end = fuzzNow() + 20;
  while (sc == NULL) {
    OK(net->connect(ctx, 0, hb, &sc, NULL));
    if (sc == NULL && fuzzNow() > end) FUZZ_FAIL("real connect did not finish after the fuzzing");
    if (sc == NULL) usleep(100);
  }
  while (a->rc == NULL) {
    if (fuzzNow() > end) FUZZ_FAIL("real accept did not finish after the fuzzing");
    usleep(1000);
  }
  static const size_t sizes[] = {0, 1, 4093, 70000, 1 << 20, 3 << 20};
  const int n = sizeof(sizes) / sizeof(sizes[0]);
  sender s = {sc, sizes, n};
  pthread_t t;
  pthread_create(&t, NULL, senderMain, &s);
  for (int i = 0; i < n; i++) {
    size_t sz = sizes[i];
    unsigned char* b = malloc(sz + 16);
    unsigned char* want = malloc(sz + 1);
    memset(b, 0xab, sz + 16);
    fillData(want, sz, 77 + (uint64_t)i);
    size_t cap = sz + 16;
    void* data = b;
    int tag = 0;
    void* req = NULL;
    while (req == NULL) OK(net->irecv(a->rc, 1, &data, &cap, &tag, NULL, NULL, &req));
    int done = 0, got = -1;
    double rend = fuzzNow() + 20;
    while (!done) {
      OK(net->test(req, &done, &got));
      if (!done && fuzzNow() > rend) FUZZ_FAIL("receive %d not done in 20 s", i);
    }
    if ((size_t)got != sz || memcmp(b, want, sz) != 0) FUZZ_FAIL("message %d (%zu bytes) arrived wrong (%d bytes)", i, sz, got);
    for (size_t k = sz; k < sz + 16; k++)
      if (b[k] != 0xab) FUZZ_FAIL("message %d: byte %zu past its end was written", i, k);
    free(b);
    free(want);
  }
  pthread_join(t, NULL);
  OK(net->closeSend(sc));
  OK(net->closeRecv(a->rc));
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <libnccl-net-socket.so>\n", argv[0]);
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  fuzzSeed = fuzzSeedFromEnv();
  /* First, so that even a run ctest kills at its timeout says how to repeat it. */
  printf("fuzz net_socket: seed 0x%llx (CHORUS_FUZZ_SEED repeats it)\n", (unsigned long long)fuzzSeed);
  fflush(stdout);
  double t0 = fuzzNow();
  loadPlugin(argv[1]);
  int fds0 = fuzzCountFds();

  /* 1 */
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  acceptor a;
  memset(&a, 0, sizeof(a));
  OK(net->listen(ctx, 0, handle, &a.lc));
  listenFuzz lf;
  memset(&lf, 0, sizeof(lf));
  fuzzRngSeed(&lf.rng, fuzzSeed);
  memcpy(&lf.h, handle, sizeof(lf.h));
  if (lf.h.magic != NS_HANDLE_MAGIC || addrLen(&lf.h.addr) == 0) FUZZ_FAIL("the listen handle is not as expected");
  pthread_t at;
  pthread_create(&at, NULL, acceptorMain, &a);
  double tl = fuzzNow();
  while (lf.st.messages < LISTEN_MIN_MESSAGES && fuzzNow() - tl < 35) listenOne(&lf);
  double listenSec = fuzzNow() - tl;
  for (int i = 0; i < lf.nStall; i++) fuzzAbortClose(lf.stall[i]);
  if (a.rc != NULL) FUZZ_FAIL("garbage on the listen port produced a comm");

  /* 2, 3: other listen comms; the fuzzed one keeps being accepted on meanwhile. */
  ctrlFuzz cf;
  memset(&cf, 0, sizeof(cf));
  fuzzRngSeed(&cf.rng, fuzzSeed ^ 0xc0ffee);
  double tc = fuzzNow();
  while (cf.st.messages < CTRL_MIN_ROUNDS && fuzzNow() - tc < 10) ctrlOne(&cf);
  double ctrlSec = fuzzNow() - tc;
  fuzzRng hr;
  fuzzRngSeed(&hr, fuzzSeed ^ 0xbad);
  uint64_t handles = handleFuzz(&hr, handle);
  if (a.rc != NULL) FUZZ_FAIL("garbage on the listen port produced a comm");

  /* 4: with more idle connections on it than the listener keeps waiting for a hello, the fuzzed
   * listen comm still connects, and data arrives intact. */
  int held[LISTEN_HOLD];
  for (int i = 0; i < LISTEN_HOLD; i++) {
    held[i] = fuzzConnect(&lf.h.addr.sa, addrLen(&lf.h.addr), REACT_TIMEOUT_MS);
    if (held[i] < 0) FUZZ_FAIL("idle connection %d: %s", i, strerror(errno));
    nsHello any = {.magic = NS_HELLO_MAGIC, .nonce = lf.h.nonce, .index = 0, .nSocks = lf.h.nSocks};
    if (fuzzChance(&lf.rng, 50)) fuzzSendAll(held[i], &any, 1 + fuzzBelow(&lf.rng, sizeof(any) - 1), 1000);
  }
  fuzzSleepMs(50); /* let the acceptor take them */
  realTraffic(&a, handle);
  for (int i = 0; i < LISTEN_HOLD; i++) fuzzAbortClose(held[i]);
  pthread_join(at, NULL);
  OK(net->closeListen(a.lc));
  OK(net->finalize(ctx));
  int fds1 = fuzzCountFds();
  if (fds1 > fds0 + FD_SLACK) FUZZ_FAIL("%d fds open before, %d after", fds0, fds1);

  if (lf.st.messages < LISTEN_MIN_MESSAGES)
    FUZZ_FAIL("only %llu messages reached the listen port in %.0f s (at least %d wanted)",
              (unsigned long long)lf.st.messages, listenSec, LISTEN_MIN_MESSAGES);
  if (cf.st.messages < CTRL_MIN_ROUNDS)
    FUZZ_FAIL("only %llu corrupt control messages in %.0f s (at least %d wanted)", (unsigned long long)cf.st.messages,
              ctrlSec, CTRL_MIN_ROUNDS);
  printf("fuzz net_socket: seed 0x%llx, %llu messages on the listen port (%llu closed as they must, %llu left "
         "incomplete, %llu stalled, %llu refused early) in %.1f s; %llu corrupt control messages (%llu failed the "
         "receive, %llu valid empty ones completed it) in %.1f s; %llu broken handles refused; %.1f s in all\n",
         (unsigned long long)fuzzSeed, (unsigned long long)lf.st.messages, (unsigned long long)lf.st.reacted,
         (unsigned long long)lf.st.waited, (unsigned long long)lf.st.stalled, (unsigned long long)lf.st.throttled,
         listenSec, (unsigned long long)cf.st.messages, (unsigned long long)cf.failed,
         (unsigned long long)cf.completed, ctrlSec, (unsigned long long)handles, fuzzNow() - t0);
  return 0;
}
