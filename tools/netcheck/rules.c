/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rules.c: the rules chorus-netcheck checks, and their tally.
 *
 * Each rule is one sentence of the net plugin contract. A check either passes or fails with a
 * detail saying exactly what was seen; the report lists every rule once with its number of checks
 * and its first failures. Rank 1 ships its tally to rank 0 (a plain struct array: both ranks run
 * the same binary), which merges the two and prints the list.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "netcheck.h"

#define NC_DETAILS 3
#define NC_DETAIL_LEN 300

static const struct {
  const char* name;
  const char* text;
} ruleInfo[NC_R_COUNT] = {
    [NC_R_LOAD] = {"load", "the library loads through Chorus's loader and init succeeds"},
    [NC_R_PROPS_DEVICES] = {"props.devices", "devices() succeeds with at least one device"},
    [NC_R_PROPS_NAME] = {"props.name", "every device has a printable, non-empty name"},
    [NC_R_PROPS_SPEED] = {"props.speed", "speed is a positive number of Mbps"},
    [NC_R_PROPS_LATENCY] = {"props.latency", "latency is a finite number of microseconds >= 0"},
    [NC_R_PROPS_MAXCOMMS] = {"props.maxComms", "maxComms >= 1 and covers the comms this check opens"},
    [NC_R_PROPS_MAXRECVS] = {"props.maxRecvs", "maxRecvs is 1..NCCL_NET_MAX_REQUESTS (32)"},
    [NC_R_PROPS_PTRSUPPORT] = {"props.ptrSupport", "ptrSupport has NCCL_PTR_HOST and no unknown bits"},
    [NC_R_PROPS_REGISGLOBAL] = {"props.regIsGlobal", "regIsGlobal is 0 or 1"},
    [NC_R_PROPS_DEVTYPE] = {"props.netDeviceType", "netDeviceType/Version is HOST/0 or UNPACK/7"},
    [NC_R_PROPS_VPROPS] = {"props.vProps", "vProps lists 1..8 existing devices; byte limits within 1..2^40"},
    [NC_R_CONN_LISTEN] = {"conn.listen", "listen succeeds with a listen comm and writes <= 128 handle bytes"},
    [NC_R_CONN_NONBLOCKING] = {"nonblocking", "listen/connect/accept/regMr/isend/irecv/iflush/test never sleep >= 1 s (time on a CPU or waiting for one is not sleep)"},
    [NC_R_CONN_COMPLETE] = {"conn.complete", "connect and accept complete, all comms both ways at once, with data flowing"},
    [NC_R_MR] = {"mr.reg", "regMr/deregMr of host memory succeed (per-message churn, sub-ranges)"},
    [NC_R_CALL_RC] = {"call.rc", "isend/irecv/test return ncclSuccess on healthy connections"},
    [NC_R_REQ_UNIQUE] = {"req.unique", "requests in flight are distinct pointers"},
    [NC_R_PROGRESS] = {"progress", "every request completes; NULL requests are retried and accepted (no hang)"},
    [NC_R_TEST_DONE] = {"test.done", "test() sets done to 0 or 1"},
    [NC_R_TEST_SIZE] = {"test.size", "test() reports the bytes the sender sent (not the posted size)"},
    [NC_R_DATA_ORDER] = {"data.order", "messages of a connection fill receives in FIFO order"},
    [NC_R_DATA_BYTES] = {"data.bytes", "every byte arrives intact"},
    [NC_R_DATA_BOUNDS] = {"data.bounds", "nothing is written past the bytes sent into a receive buffer"},
    [NC_R_DATA_SENDBUF] = {"data.sendbuf", "send buffers are left unchanged"},
    [NC_R_GROUPED] = {"recv.grouped", "a grouped irecv (n > 1) puts each send into the buffer of its tag"},
    [NC_R_GPU_REG] = {"gpu.reg", "with NCCL_PTR_CUDA advertised, regMr(NCCL_PTR_CUDA) takes GPU memory (slots, per-message buffers, sub-ranges)"},
    [NC_R_GPU_DMABUF] = {"gpu.dmabuf", "with NCCL_PTR_DMABUF advertised, regMrDmaBuf takes a dma-buf fd of GPU memory (closed once it returns)"},
    [NC_R_GPU_FLUSH] = {"gpu.flush", "iflush after a GPU receive with bytes succeeds; its request (NULL: nothing to flush) completes under test()"},
    [NC_R_GPU_DATA] = {"gpu.data", "every byte of a GPU receive is in GPU memory once its iflush completed"},
    [NC_R_GPU_DEREG] = {"gpu.dereg", "deregMr of GPU registrations succeeds"},
    [NC_R_CLOSE] = {"close", "closeSend/closeRecv/closeListen/finalize succeed"},
    [NC_R_PEER] = {"peer", "the other rank finishes and reports (no crash, no hang)"},
};

typedef struct {
  uint64_t checks;
  uint64_t fails;
  int skipped;
  char skipWhy[120];
  char details[NC_DETAILS][NC_DETAIL_LEN];
} ncTally;

/* The slowest plugin call by the wall clock: a figure of the report, not a rule, since a busy
 * machine stretches calls that never sleep. */
typedef struct {
  double wall, blocked;
  char call[NC_DETAIL_LEN];
} ncSlowest;

static ncTally tally[NC_R_COUNT];
static ncSlowest slowest;
static pthread_mutex_t tallyLock = PTHREAD_MUTEX_INITIALIZER;

const char* ncRuleName(ncRule r) { return ruleInfo[r].name; }

static void recordV(ncRule r, int ok, const char* fmt, va_list ap) {
  pthread_mutex_lock(&tallyLock);
  ncTally* t = &tally[r];
  t->checks++;
  if (!ok) {
    if (t->fails < NC_DETAILS) vsnprintf(t->details[t->fails], NC_DETAIL_LEN, fmt, ap);
    t->fails++;
  }
  pthread_mutex_unlock(&tallyLock);
}

void ncCheck(ncRule r, int ok, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  recordV(r, ok, fmt, ap);
  va_end(ap);
}

void ncPass(ncRule r) {
  pthread_mutex_lock(&tallyLock);
  tally[r].checks++;
  pthread_mutex_unlock(&tallyLock);
}

void ncFail(ncRule r, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  recordV(r, 0, fmt, ap);
  va_end(ap);
}

void ncCheckCall(const char* who, const char* what, const ncCallClock* c) {
  if (c->blocked >= NC_SLOW_CALL_SEC)
    ncFail(NC_R_CONN_NONBLOCKING, "%s: %s slept %.2f s (%.2f s in all)", who, what, c->blocked, c->wall);
  else ncPass(NC_R_CONN_NONBLOCKING);
  pthread_mutex_lock(&tallyLock);
  if (c->wall > slowest.wall) {
    slowest.wall = c->wall;
    slowest.blocked = c->blocked;
    snprintf(slowest.call, sizeof(slowest.call), "%s: %s", who, what);
  }
  pthread_mutex_unlock(&tallyLock);
}

void ncSkip(ncRule r, const char* why) {
  pthread_mutex_lock(&tallyLock);
  tally[r].skipped = 1;
  snprintf(tally[r].skipWhy, sizeof(tally[r].skipWhy), "%s", why);
  pthread_mutex_unlock(&tallyLock);
}

int ncFailures(void) {
  uint64_t n = 0;
  pthread_mutex_lock(&tallyLock);
  for (int i = 0; i < NC_R_COUNT; i++) n += tally[i].fails;
  pthread_mutex_unlock(&tallyLock);
  return n > 0x7fffffff ? 0x7fffffff : (int)n;
}

#define NC_TALLY_MAGIC 0x4e43544133ULL /* "NCTA3": the GPU rules came in */

size_t ncTallySize(void) { return sizeof(uint64_t) + sizeof(tally) + sizeof(slowest); }

void ncTallyExport(void* buf) {
  uint64_t magic = NC_TALLY_MAGIC;
  pthread_mutex_lock(&tallyLock);
  memcpy(buf, &magic, sizeof(magic));
  memcpy((char*)buf + sizeof(magic), tally, sizeof(tally));
  memcpy((char*)buf + sizeof(magic) + sizeof(tally), &slowest, sizeof(slowest));
  pthread_mutex_unlock(&tallyLock);
}

int ncTallyMerge(const void* buf, size_t len, const char* fromWhat) {
  uint64_t magic;
  if (len != ncTallySize()) return -1;
  memcpy(&magic, buf, sizeof(magic));
  if (magic != NC_TALLY_MAGIC) return -1;
  static ncTally other[NC_R_COUNT];
  memcpy(other, (const char*)buf + sizeof(magic), sizeof(other));
  ncSlowest otherSlowest;
  memcpy(&otherSlowest, (const char*)buf + sizeof(magic) + sizeof(other), sizeof(otherSlowest));
  otherSlowest.call[sizeof(otherSlowest.call) - 1] = '\0';
  pthread_mutex_lock(&tallyLock);
  if (otherSlowest.wall > slowest.wall) slowest = otherSlowest;
  for (int r = 0; r < NC_R_COUNT; r++) {
    ncTally* t = &tally[r];
    ncTally* o = &other[r];
    for (uint64_t k = 0; k < o->fails && k < NC_DETAILS; k++) {
      if (t->fails + k >= NC_DETAILS) break;
      o->details[k][NC_DETAIL_LEN - 1] = '\0'; /* bytes from the other process: terminate them */
      /* Details name their rank already; fromWhat only marks lines that do not. */
      if (strncmp(o->details[k], "rank ", 5) == 0) memcpy(t->details[t->fails + k], o->details[k], NC_DETAIL_LEN);
      else snprintf(t->details[t->fails + k], NC_DETAIL_LEN, "%s: %.*s", fromWhat, NC_DETAIL_LEN - 32, o->details[k]);
    }
    t->checks += o->checks;
    t->fails += o->fails;
    if (o->skipped && !t->skipped) {
      t->skipped = 1;
      memcpy(t->skipWhy, o->skipWhy, sizeof(t->skipWhy));
      t->skipWhy[sizeof(t->skipWhy) - 1] = '\0';
    }
  }
  pthread_mutex_unlock(&tallyLock);
  return 0;
}

int ncTallyPrint(FILE* out) {
  int broken = 0;
  pthread_mutex_lock(&tallyLock);
  fprintf(out, "rules:\n");
  for (int r = 0; r < NC_R_COUNT; r++) {
    const ncTally* t = &tally[r];
    if (t->fails > 0) {
      broken++;
      fprintf(out, "  FAIL  %-20s %s: %llu of %llu checks failed\n", ruleInfo[r].name, ruleInfo[r].text,
              (unsigned long long)t->fails, (unsigned long long)t->checks);
      for (uint64_t k = 0; k < t->fails && k < NC_DETAILS; k++)
        fprintf(out, "        %-20s %s\n", ruleInfo[r].name, t->details[k]);
    } else if (t->checks == 0 && t->skipped) {
      fprintf(out, "  SKIP  %-20s %s: %s\n", ruleInfo[r].name, ruleInfo[r].text, t->skipWhy);
    } else if (t->checks == 0) {
      fprintf(out, "  ----  %-20s %s: not reached\n", ruleInfo[r].name, ruleInfo[r].text);
    } else {
      fprintf(out, "  PASS  %-20s %s (%llu checks)\n", ruleInfo[r].name, ruleInfo[r].text,
              (unsigned long long)t->checks);
    }
  }
  if (slowest.wall > 0)
    fprintf(out, "slowest call: %s, %.3f s, of which %.3f s asleep (the rest on a CPU or waiting for one)\n",
            slowest.call, slowest.wall, slowest.blocked);
  pthread_mutex_unlock(&tallyLock);
  return broken;
}
