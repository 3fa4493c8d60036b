/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_net_ib_logic.c: the IB plugin's plain-C parts, on any machine (no RDMA device needed):
 *   test_net_ib_logic <case>   cases: hca gid handle info fifo reqpool env peermem
 * Expected results are written out here; the wire and FIFO cases also throw random bytes at the
 * decoders and check that nothing malformed is ever accepted.
 */
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ib_logic.h"
#include "plugin_support.h"

static int failures;
#define EXPECT(cond)                                                      \
  do {                                                                    \
    if (!(cond)) {                                                        \
      fprintf(stderr, "%s:%d: FAILED: %s\n", __FILE__, __LINE__, #cond); \
      failures++;                                                         \
    }                                                                     \
  } while (0)

static uint64_t rngState = 0x9e3779b97f4a7c15ULL;
static uint64_t rnd(void) {
  rngState ^= rngState << 13;
  rngState ^= rngState >> 7;
  rngState ^= rngState << 17;
  return rngState;
}

/* ---------------------------------------------------------------- NCCL_IB_HCA */
static int takes(const char* spec, const char* name, int port) {
  ibHcaFilter f;
  char err[256];
  if (ibHcaParse(spec, &f, err, sizeof(err)) != 0) {
    fprintf(stderr, "unexpected parse failure: %s\n", err);
    failures++;
    return -1;
  }
  return ibHcaMatch(&f, name, port);
}
static int refused(const char* spec) {
  ibHcaFilter f;
  char err[256] = "";
  int r = ibHcaParse(spec, &f, err, sizeof(err));
  return r == -1 && strstr(err, "NCCL_IB_HCA") != NULL;
}

static void caseHca(void) {
  EXPECT(takes(NULL, "mlx5_0", 1) == 1);
  EXPECT(takes("", "mlx5_0", 1) == 1);
  /* prefixes */
  EXPECT(takes("mlx5", "mlx5_0", 1) == 1 && takes("mlx5", "mlx5_12", 2) == 1);
  EXPECT(takes("mlx5", "mlx4_0", 1) == 0);
  EXPECT(takes("mlx5_1", "mlx5_10", 1) == 1); /* a prefix, as in NCCL */
  /* exact */
  EXPECT(takes("=mlx5_1", "mlx5_10", 1) == 0 && takes("=mlx5_1", "mlx5_1", 1) == 1);
  /* ports */
  EXPECT(takes("mlx5_0:1,mlx5_1:2", "mlx5_0", 1) == 1 && takes("mlx5_0:1,mlx5_1:2", "mlx5_0", 2) == 0);
  EXPECT(takes("mlx5_0:1,mlx5_1:2", "mlx5_1", 2) == 1 && takes("mlx5_0:1,mlx5_1:2", "mlx5_2", 1) == 0);
  /* exclusion */
  EXPECT(takes("^mlx5_3", "mlx5_3", 1) == 0 && takes("^mlx5_3", "mlx5_2", 1) == 1);
  EXPECT(takes("^mlx5", "mlx5_3", 1) == 0 && takes("^mlx5", "bnxt_re0", 1) == 1);
  EXPECT(takes("^=mlx5_3:1", "mlx5_3", 1) == 0 && takes("^=mlx5_3:1", "mlx5_3", 2) == 1);
  EXPECT(takes("^=mlx5_3:1", "mlx5_30", 1) == 1);
  EXPECT(takes("=^mlx5_3", "mlx5_3", 1) == 0 && takes("=^mlx5_3", "mlx5_30", 1) == 1);
  EXPECT(takes(" mlx5_0 , mlx5_1 ", "mlx5_1", 1) == 1);
  /* malformed values are refused with a reason, never half-taken */
  EXPECT(refused("^") && refused("=") && refused("mlx5_0,") && refused(",mlx5_0") && refused("mlx5_0,,mlx5_1"));
  EXPECT(refused("mlx5_0:") && refused("mlx5_0:x") && refused("mlx5_0:0") && refused("mlx5_0:256") && refused(":1"));
  EXPECT(refused("mlx5_0:1:2"));
  char longName[200];
  memset(longName, 'a', sizeof(longName) - 1);
  longName[sizeof(longName) - 1] = '\0';
  EXPECT(refused(longName));
  char many[2048] = "";
  for (int i = 0; i < IB_HCA_MAX_ENTRIES + 1; i++) strcat(many, i ? ",d" : "d");
  EXPECT(refused(many));
  /* random strings: parse either refuses or gives entries that are non-empty with ports in range */
  const char alphabet[] = "mlx5_0123:,^= ab";
  for (int t = 0; t < 20000; t++) {
    char s[24];
    int len = (int)(rnd() % 20);
    for (int i = 0; i < len; i++) s[i] = alphabet[rnd() % (sizeof(alphabet) - 1)];
    s[len] = '\0';
    ibHcaFilter f;
    if (ibHcaParse(s, &f, NULL, 0) == 0) {
      for (int i = 0; i < f.nEntries; i++) {
        EXPECT(f.entries[i].name[0] != '\0' && strchr(f.entries[i].name, ',') == NULL);
        EXPECT(f.entries[i].port == -1 || (f.entries[i].port >= 1 && f.entries[i].port <= 255));
      }
    }
  }
}

/* ---------------------------------------------------------------- GIDs */
static ibGidEntry gid(int index, int type, const char* v6) {
  ibGidEntry g;
  memset(&g, 0, sizeof(g));
  g.index = index;
  g.type = type;
  if (v6) inet_pton(AF_INET6, v6, g.raw);
  return g;
}

static void caseGid(void) {
  char err[256];
  ibGidEntry t[6] = {
      gid(0, IB_GID_TYPE_ROCE_V1, "fe80::1"),       gid(1, IB_GID_TYPE_ROCE_V2, "fe80::1"),
      gid(2, IB_GID_TYPE_ROCE_V1, "::ffff:10.0.0.5"), gid(3, IB_GID_TYPE_ROCE_V2, "::ffff:10.0.0.5"),
      gid(4, IB_GID_TYPE_ROCE_V2, "2001:db8::5"),   gid(5, IB_GID_TYPE_ROCE_V2, NULL),
  };
  EXPECT(ibGidIsV4Mapped(t[3].raw) && !ibGidIsV4Mapped(t[4].raw) && ibGidIsLinkLocal(t[1].raw) && ibGidIsZero(t[5].raw));
  EXPECT(ibGidChoose(t, 6, -1, AF_UNSPEC, err, sizeof(err)) == 3);
  EXPECT(ibGidChoose(t, 6, -1, AF_INET, err, sizeof(err)) == 3);
  EXPECT(ibGidChoose(t, 6, -1, AF_INET6, err, sizeof(err)) == 4);
  /* without IPv4: v2 global IPv6, then v2 link-local, then v1 */
  EXPECT(ibGidChoose(t + 4, 2, -1, AF_INET, err, sizeof(err)) == 0);
  EXPECT(ibGidChoose(t, 2, -1, AF_UNSPEC, err, sizeof(err)) == 1);
  EXPECT(ibGidChoose(t, 1, -1, AF_UNSPEC, err, sizeof(err)) == 0);
  /* requested index: taken as is, or refused when empty or absent */
  EXPECT(ibGidChoose(t, 6, 2, AF_UNSPEC, err, sizeof(err)) == 2);
  EXPECT(ibGidChoose(t, 6, 5, AF_UNSPEC, err, sizeof(err)) == -1 && strstr(err, "empty") != NULL);
  EXPECT(ibGidChoose(t, 6, 9, AF_UNSPEC, err, sizeof(err)) == -1 && strstr(err, "outside") != NULL);
  /* nothing usable */
  EXPECT(ibGidChoose(t + 5, 1, -1, AF_UNSPEC, err, sizeof(err)) == -1 && strstr(err, "no usable") != NULL);
  EXPECT(ibGidChoose(t, 0, -1, AF_UNSPEC, err, sizeof(err)) == -1);
}

/* ---------------------------------------------------------------- wire formats */
static void caseHandle(void) {
  char err[256];
  ibHandle h, back;
  uint8_t buf[IB_HANDLE_BYTES];
  memset(&h, 0, sizeof(h));
  EXPECT(chrSockAddrParse("10.1.2.3:4567", AF_INET, &h.addr, NULL) == ncclSuccess);
  h.nonce = 0x0123456789abcdefULL;
  ibHandleEncode(&h, buf);
  EXPECT(ibHandleDecode(buf, &back, err, sizeof(err)) == 0);
  EXPECT(chrSockAddrEqual(&h.addr, &back.addr) && back.nonce == h.nonce);
  EXPECT(IB_HANDLE_BYTES <= 128);
  memset(&h, 0, sizeof(h));
  EXPECT(chrSockAddrParse("[2001:db8::7]:9", AF_INET6, &h.addr, NULL) == ncclSuccess);
  ibHandleEncode(&h, buf);
  EXPECT(ibHandleDecode(buf, &back, err, sizeof(err)) == 0 && chrSockAddrEqual(&h.addr, &back.addr));
  /* each corruption is refused */
  uint8_t bad[IB_HANDLE_BYTES];
  memcpy(bad, buf, sizeof(bad));
  bad[0] ^= 1;
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "magic"));
  memcpy(bad, buf, sizeof(bad));
  bad[8] = 9;
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "version"));
  memcpy(bad, buf, sizeof(bad));
  bad[12] = 77;
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "family"));
  memcpy(bad, buf, sizeof(bad));
  bad[16] = bad[17] = 0;
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "port 0"));
  memcpy(bad, buf, sizeof(bad));
  bad[60] = 1;
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "garbage"));
  memcpy(bad, buf, sizeof(bad));
  memset(bad + 24, 0, 16);
  EXPECT(ibHandleDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "wildcard"));
  /* random bytes never decode; random bytes behind a valid magic/version decode only into sane values */
  for (int t = 0; t < 50000; t++) {
    for (int i = 0; i < IB_HANDLE_BYTES; i++) bad[i] = (uint8_t)rnd();
    EXPECT(ibHandleDecode(bad, &back, NULL, 0) == -1);
    memcpy(bad, buf, 12);
    if (ibHandleDecode(bad, &back, NULL, 0) == 0) {
      int fam = back.addr.sa.sa_family;
      EXPECT((fam == AF_INET || fam == AF_INET6) && chrSockAddrPort(&back.addr) > 0);
    }
  }
}

static ibConnInfo sampleInfo(void) {
  ibConnInfo c;
  memset(&c, 0, sizeof(c));
  c.nonce = 42;
  c.nQps = 3;
  c.linkLayer = IB_LINK_ETHERNET;
  c.lid = 0;
  c.mtu = 5;
  c.gidIndex = 3;
  inet_pton(AF_INET6, "::ffff:10.0.0.5", c.gid);
  for (int i = 0; i < 3; i++) {
    c.qpn[i] = 0x100 + (uint32_t)i;
    c.psn[i] = 0xabcde + (uint32_t)i;
  }
  c.fifoAddr = 0x7f0012345000ULL;
  c.fifoRkey = 0xdeadbeef;
  c.fifoDepth = IB_FIFO_DEPTH;
  return c;
}

static void caseInfo(void) {
  char err[256];
  ibConnInfo c = sampleInfo(), back;
  uint8_t buf[IB_INFO_BYTES], bad[IB_INFO_BYTES];
  ibInfoEncode(&c, buf);
  EXPECT(ibInfoDecode(buf, &back, err, sizeof(err)) == 0);
  EXPECT(memcmp(&c, &back, sizeof(c)) == 0);
  /* IB: a LID is required */
  c.linkLayer = IB_LINK_IB;
  c.lid = 0;
  ibInfoEncode(&c, bad);
  EXPECT(ibInfoDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "LID"));
  c.lid = 7;
  ibInfoEncode(&c, bad);
  EXPECT(ibInfoDecode(bad, &back, err, sizeof(err)) == 0 && back.lid == 7);
  struct {
    int off;
    uint32_t val;
    const char* word;
  } breaks[] = {
      {8, 2, "version"},        {12, 0, "QP count"},   {12, 17, "QP count"},   {16, 3, "link layer"},
      {20, 0x10000, "LID"},      {24, 0, "MTU"},        {24, 6, "MTU"},         {48, 0, "QP number"},
      {48, 0x1000000, "QP number"}, {112, 0x1000000, "PSN"}, {48 + 4 * 3, 5, "beyond"}, {188, 16, "FIFO depth"},
  };
  for (size_t i = 0; i < sizeof(breaks) / sizeof(breaks[0]); i++) {
    memcpy(bad, buf, sizeof(bad));
    for (int b = 0; b < 4; b++) bad[breaks[i].off + b] = (uint8_t)(breaks[i].val >> (8 * b));
    int r = ibInfoDecode(bad, &back, err, sizeof(err));
    EXPECT(r == -1 && strstr(err, breaks[i].word) != NULL);
    if (r != -1 || !strstr(err, breaks[i].word)) fprintf(stderr, "  break %zu: %s\n", i, err);
  }
  memcpy(bad, buf, sizeof(bad));
  memset(bad + 32, 0, 16);
  EXPECT(ibInfoDecode(bad, &back, err, sizeof(err)) == -1 && strstr(err, "zero GID"));
  for (int t = 0; t < 50000; t++) {
    for (int i = 0; i < IB_INFO_BYTES; i++) bad[i] = (uint8_t)rnd();
    EXPECT(ibInfoDecode(bad, &back, NULL, 0) == -1);
    memcpy(bad, buf, 12); /* valid magic and version, random rest */
    if (ibInfoDecode(bad, &back, NULL, 0) == 0) {
      EXPECT(back.nQps >= 1 && back.nQps <= IB_MAX_QPS && back.mtu >= 1 && back.mtu <= 5);
      for (uint32_t q = 0; q < back.nQps; q++) EXPECT(back.qpn[q] > 0 && back.qpn[q] <= 0xffffff);
    }
  }
}

/* ---------------------------------------------------------------- flow-control FIFO */
/* A receiver and a sender over one FIFO array: the receiver's "RDMA write" is a memcpy with seq
 * written last, as the NIC places it. Random interleavings of posts and sends: every send takes the
 * entry of its own receive, in order, and never one that was not posted. */
static void caseFifo(void) {
  static ibFifoEntry fifo[IB_FIFO_DEPTH];
  memset(fifo, 0, sizeof(fifo));
  uint64_t recvSeq = 0, sendSeq = 0, completed = 0;
  uint64_t postedAddr[4096];
  int64_t outstanding = 0;
  ibFifoEntry got;
  EXPECT(ibFifoCheck(fifo, 0, 8, 1, &got) == IB_FIFO_NOT_YET);
  for (int step = 0; step < 200000 && sendSeq < 4000; step++) {
    int doPost = (rnd() % 2) && recvSeq < 4096 && outstanding < IB_FIFO_DEPTH;
    if (doPost) {
      ibFifoEntry e;
      int slot;
      uint64_t addr = 0x1000 + recvSeq * 0x100;
      ibFifoMake(recvSeq, addr, 4096, 0x55, 3, &e, &slot);
      EXPECT(slot == (int)(recvSeq % IB_FIFO_DEPTH) && e.seq == recvSeq + 1);
      /* the slot must be free: the send that used it released it */
      EXPECT(fifo[slot].seq == 0);
      memcpy(&fifo[slot], &e, offsetof(ibFifoEntry, seq));
      __atomic_store_n(&fifo[slot].seq, e.seq, __ATOMIC_RELEASE);
      postedAddr[recvSeq] = addr;
      recvSeq++;
      outstanding++;
    } else {
      size_t size = rnd() % 5000;
      int r = ibFifoCheck(fifo, sendSeq, size, 3, &got);
      if (sendSeq >= recvSeq) {
        EXPECT(r == IB_FIFO_NOT_YET); /* never a send without its receive */
      } else if (size > 4096) {
        EXPECT(r == IB_FIFO_TOO_SMALL);
      } else {
        EXPECT(r == IB_FIFO_READY && got.addr == postedAddr[sendSeq] && got.rkey == 0x55);
        if (r == IB_FIFO_READY) {
          ibFifoRelease(fifo, sendSeq);
          sendSeq++;
          completed++;
          outstanding--; /* the receive completes once the data lands */
        }
      }
    }
  }
  EXPECT(completed > 1000);
  /* wrong tag, a sequence number from the future, a slot left over from the last round */
  memset(fifo, 0, sizeof(fifo));
  ibFifoEntry e;
  int slot;
  ibFifoMake(5, 0x9000, 64, 1, 2, &e, &slot);
  fifo[slot] = e;
  EXPECT(ibFifoCheck(fifo, 5, 64, 7, &got) == IB_FIFO_BAD_TAG);
  EXPECT(ibFifoCheck(fifo, 5, 64, 2, &got) == IB_FIFO_READY);
  EXPECT(ibFifoCheck(fifo, 5 + IB_FIFO_DEPTH, 64, 2, &got) == IB_FIFO_NOT_YET); /* older round */
  fifo[slot].seq = 5 + 2 * IB_FIFO_DEPTH + 1;
  EXPECT(ibFifoCheck(fifo, 5 + IB_FIFO_DEPTH, 64, 2, &got) == IB_FIFO_CORRUPT);
  /* random slot contents never read as READY unless seq, tag and size fit */
  for (int t = 0; t < 100000; t++) {
    uint64_t s = rnd() % 1000;
    ibFifoEntry* f = &fifo[s % IB_FIFO_DEPTH];
    f->addr = rnd();
    f->size = rnd() % 100;
    f->rkey = (uint32_t)rnd();
    f->tag = (int32_t)(rnd() % 4);
    f->seq = (rnd() % 3 == 0) ? s + 1 : rnd() % 2000;
    size_t size = rnd() % 100;
    int r = ibFifoCheck(fifo, s, size, 1, &got);
    if (r == IB_FIFO_READY) EXPECT(f->seq == s + 1 && f->tag == 1 && f->size >= size);
    if (f->seq == s + 1 && f->tag == 1 && f->size >= size) EXPECT(r == IB_FIFO_READY);
  }
}

/* ---------------------------------------------------------------- request pool */
static void caseReqpool(void) {
  ibReqPool p = {0};
  int seen[IB_MAX_REQUESTS] = {0};
  for (int i = 0; i < IB_MAX_REQUESTS; i++) {
    int r = ibReqAlloc(&p);
    EXPECT(r >= 0 && r < IB_MAX_REQUESTS && !seen[r]);
    if (r >= 0 && r < IB_MAX_REQUESTS) seen[r] = 1;
  }
  EXPECT(ibReqAlloc(&p) == -1 && ibReqInUse(&p) == IB_MAX_REQUESTS);
  EXPECT(ibReqFree(&p, 7) == 0 && ibReqFree(&p, 7) == -1 && ibReqFree(&p, -1) == -1 && ibReqFree(&p, 32) == -1);
  EXPECT(ibReqAlloc(&p) == 7);
  /* random alloc/free against a model */
  int model[IB_MAX_REQUESTS];
  memset(&p, 0, sizeof(p));
  memset(model, 0, sizeof(model));
  for (int t = 0; t < 100000; t++) {
    if (rnd() % 2) {
      int r = ibReqAlloc(&p);
      int expect = -1;
      for (int i = 0; i < IB_MAX_REQUESTS; i++)
        if (!model[i]) {
          expect = i;
          break;
        }
      EXPECT(r == expect);
      if (r >= 0) model[r] = 1;
    } else {
      int i = (int)(rnd() % IB_MAX_REQUESTS);
      EXPECT(ibReqFree(&p, i) == (model[i] ? 0 : -1));
      model[i] = 0;
    }
  }
}

/* ---------------------------------------------------------------- settings */
static void caseEnv(void) {
  long v;
  char err[256];
  unsetenv("CHR_IB_TEST_X");
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == 0 && v == 4);
  setenv("CHR_IB_TEST_X", "12", 1);
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == 0 && v == 12);
  setenv("CHR_IB_TEST_X", "17", 1);
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == -1 && v == 4 && strstr(err, "1..16"));
  setenv("CHR_IB_TEST_X", "3x", 1);
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == -1);
  setenv("CHR_IB_TEST_X", "", 1);
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == 0 && v == 4);
  setenv("CHR_IB_TEST_X", " 0x10 ", 1); /* blanks around, base 0 */
  EXPECT(chrPluginEnvLong("CHR_IB_TEST_X", 1, 16, 4, &v, err, sizeof(err)) == 0 && v == 16);
  /* the string and nonce helpers of plugins/support, which the IB plugin shares with the others */
  char s[4];
  setenv("CHR_IB_TEST_X", "abc", 1);
  EXPECT(chrPluginEnvStr("CHR_IB_TEST_X", s, sizeof(s)) == 0 && strcmp(s, "abc") == 0);
  setenv("CHR_IB_TEST_X", "abcd", 1);
  EXPECT(chrPluginEnvStr("CHR_IB_TEST_X", s, sizeof(s)) == -1 && s[0] == '\0');
  unsetenv("CHR_IB_TEST_X");
  EXPECT(chrPluginEnvStr("CHR_IB_TEST_X", s, sizeof(s)) == 0 && s[0] == '\0');
  uint64_t a[4] = {0}, b[4] = {0};
  chrPluginRandom(a, sizeof(a));
  chrPluginRandom(b, sizeof(b));
  EXPECT(memcmp(a, b, sizeof(a)) != 0 && (a[0] | a[1] | a[2] | a[3]) != 0);
}

/* ---------------------------------------------------------------- peer memory */

/* Each of NCCL's three files alone says "loaded"; none, a sibling name, or a root that makes the path
 * too long says "not loaded". The tree is made and removed here. */
static void casePeermem(void) {
  char root[] = "/tmp/chorus_ib_peermem_XXXXXX";
  if (mkdtemp(root) == NULL) {
    EXPECT(!"mkdtemp");
    return;
  }
  const char* files[] = {"/sys/kernel/mm/memory_peers/nv_mem/version", "/sys/kernel/mm/memory_peers/nv_mem_nc/version",
                         "/sys/module/nvidia_peermem/version"};
  const char* dirs[] = {"/sys", "/sys/kernel", "/sys/kernel/mm", "/sys/kernel/mm/memory_peers",
                        "/sys/kernel/mm/memory_peers/nv_mem", "/sys/kernel/mm/memory_peers/nv_mem_nc",
                        "/sys/module", "/sys/module/nvidia_peermem", "/sys/module/nvidia"};
  char path[512], which[512];
  for (int i = 0; i < 9; i++) {
    snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
    EXPECT(mkdir(path, 0700) == 0);
  }
  EXPECT(ibPeerMemFind(root, which, sizeof(which)) == 0 && which[0] == '\0'); /* folders, no version file */
  snprintf(path, sizeof(path), "%s/sys/module/nvidia/version", root);         /* the GPU driver is not peer memory */
  FILE* f = fopen(path, "w");
  EXPECT(f != NULL);
  if (f) fclose(f);
  EXPECT(ibPeerMemFind(root, NULL, 0) == 0);
  for (int i = 0; i < 3; i++) {
    snprintf(path, sizeof(path), "%s%s", root, files[i]);
    f = fopen(path, "w");
    EXPECT(f != NULL);
    if (f) fclose(f);
    EXPECT(ibPeerMemFind(root, which, sizeof(which)) == 1 && strcmp(which, path) == 0);
    char small[8];
    EXPECT(ibPeerMemFind(root, small, sizeof(small)) == 1 && strlen(small) == 7); /* truncated, terminated */
    EXPECT(ibPeerMemFind(root, NULL, 0) == 1);
    EXPECT(remove(path) == 0);
    EXPECT(ibPeerMemFind(root, NULL, 0) == 0);
  }
  char longRoot[5000];
  memset(longRoot, 'a', sizeof(longRoot) - 1);
  longRoot[0] = '/';
  longRoot[sizeof(longRoot) - 1] = '\0';
  EXPECT(ibPeerMemFind(longRoot, which, sizeof(which)) == 0);
  snprintf(path, sizeof(path), "%s/sys/module/nvidia/version", root);
  remove(path);
  for (int i = 8; i >= 0; i--) {
    snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
    EXPECT(rmdir(path) == 0);
  }
  EXPECT(rmdir(root) == 0);
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s hca|gid|handle|info|fifo|reqpool|env\n", argv[0]);
    return 2;
  }
  const char* c = argv[1];
  if (!strcmp(c, "hca")) caseHca();
  else if (!strcmp(c, "gid")) caseGid();
  else if (!strcmp(c, "handle")) caseHandle();
  else if (!strcmp(c, "info")) caseInfo();
  else if (!strcmp(c, "fifo")) caseFifo();
  else if (!strcmp(c, "reqpool")) caseReqpool();
  else if (!strcmp(c, "env")) caseEnv();
  else if (!strcmp(c, "peermem")) casePeermem();
  else {
    fprintf(stderr, "unknown case %s\n", c);
    return 2;
  }
  return failures ? 1 : 0;
}
