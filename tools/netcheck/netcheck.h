/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * netcheck.h: chorus-netcheck, a conformance and stress checker for net plugins (README.md).
 *
 * Two ranks (two processes, forked on one host or one per host) load the plugin through Chorus's
 * own loader and adapters (core/plugin, any ABI v8..v12) and drive it the way a pipelining host
 * does: several comms per peer pair, many requests in flight, grouped receives, odd and zero sizes,
 * receives larger than sends, out-of-order test() polling, NULL-request retries, registration churn
 * and connection setup racing with data. Every byte and every rule of the ABI contract is checked;
 * each broken rule is named in the report.
 *
 * Files: main.c (options, processes, report), rank.c (one rank's phases), rules.c (the rules and
 * their tally), oob.c (the side channel between the ranks), schedule.c (message schedules and
 * payload patterns), traffic.c (the checked traffic), perf.c (bandwidth and latency table),
 * gpurules.c (the GPU-memory rules of --mem cuda and cuda-host), gpumem.c (that memory and the
 * copies to it), cuda_loader.c (the CUDA driver, opened at run time).
 */
#ifndef CHORUS_NETCHECK_H_
#define CHORUS_NETCHECK_H_

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "plugin/net_plugin.h"

#define NC_MAX_GROUP 8    /* most buffers per grouped irecv this checker posts */
#define NC_MAX_COMMS 8    /* comms per direction */
#define NC_MAX_DEPTH NCCL_NET_MAX_REQUESTS
#define NC_GUARD 64       /* guard bytes checked past every posted receive buffer */

/* Where the checked traffic's buffers live (--mem). */
typedef enum {
  NC_MEM_HOST,      /* host memory, registered as NCCL_PTR_HOST (the default) */
  NC_MEM_CUDA,      /* GPU memory (CUDA driver), registered as NCCL_PTR_CUDA or through dma-buf */
  NC_MEM_CUDA_HOST, /* host memory handed to the plugin as NCCL_PTR_CUDA: a plugin's CI without GPUs */
} ncMemKind;

/* ---- options (main.c) ---- */
typedef struct {
  const char* plugin; /* path (or name) of the net plugin library */
  int dev;            /* device both ranks use */
  int comms;          /* comms per direction in the checked traffic */
  int depth;          /* receive requests in flight per comm (comm 1 uses 32, comm 2 uses 1) */
  double scale;       /* multiplies the number of messages of the checked traffic */
  int perf;           /* 1: bandwidth/latency table */
  size_t perfBytes;   /* bytes moved per bandwidth cell */
  int perfReps;       /* measurements per cell; the best is shown */
  int baseline;       /* 1: raw TCP rows in the table */
  double timeoutSec;  /* no progress for this long = a hang */
  uint64_t seed;
  int abi;            /* bind at most this ABI version (0: the newest the library exports) */
  const char* tcpAddr; /* address the raw TCP baseline listens on (rank 1) */
  ncMemKind mem;      /* --mem */
  int gpu;            /* --gpu: the CUDA device of --mem cuda */
} ncOptions;
extern ncOptions ncOpt;

/* ---- rules (rules.c) ---- */
typedef enum {
  NC_R_LOAD,
  NC_R_PROPS_DEVICES,
  NC_R_PROPS_NAME,
  NC_R_PROPS_SPEED,
  NC_R_PROPS_LATENCY,
  NC_R_PROPS_MAXCOMMS,
  NC_R_PROPS_MAXRECVS,
  NC_R_PROPS_PTRSUPPORT,
  NC_R_PROPS_REGISGLOBAL,
  NC_R_PROPS_DEVTYPE,
  NC_R_PROPS_VPROPS,
  NC_R_CONN_LISTEN,
  NC_R_CONN_NONBLOCKING,
  NC_R_CONN_COMPLETE,
  NC_R_MR,
  NC_R_CALL_RC,
  NC_R_REQ_UNIQUE,
  NC_R_PROGRESS,
  NC_R_TEST_DONE,
  NC_R_TEST_SIZE,
  NC_R_DATA_ORDER,
  NC_R_DATA_BYTES,
  NC_R_DATA_BOUNDS,
  NC_R_DATA_SENDBUF,
  NC_R_GROUPED,
  NC_R_GPU_REG,
  NC_R_GPU_DMABUF,
  NC_R_GPU_FLUSH,
  NC_R_GPU_DATA,
  NC_R_GPU_DEREG,
  NC_R_CLOSE,
  NC_R_PEER,
  NC_R_COUNT
} ncRule;

/* One check of rule r: ok = 1 passes; ok = 0 fails with the detail (printf format). */
void ncCheck(ncRule r, int ok, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
void ncPass(ncRule r);
void ncFail(ncRule r, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/* The rule could not be checked with this plugin (e.g. grouped receives when maxRecvs = 1). */
void ncSkip(ncRule r, const char* why);
int ncFailures(void); /* failed checks so far in this process */
const char* ncRuleName(ncRule r);

/* Tally exchange: rank 1 ships its tally to rank 0, which merges and prints. */
size_t ncTallySize(void);
void ncTallyExport(void* buf);
int ncTallyMerge(const void* buf, size_t len, const char* fromWhat);
/* Print the pass/fail list; returns the number of broken rules. */
int ncTallyPrint(FILE* out);

/* ---- side channel between the two ranks (oob.c): a stream socket ---- */
int ncOobSend(int fd, const void* buf, size_t len);
int ncOobRecv(int fd, void* buf, size_t len, double timeoutSec);
int ncOobBarrier(int fd, double timeoutSec);

/* ---- schedules and payloads (schedule.c) ---- */

/* One receive request: n buffers; the sender sends n messages, the p-th of them with tag
 * tags[order[p]] and sizes[order[p]] bytes; buffer i is posted with sizes[i] + extra[i] bytes. */
typedef struct {
  int n;
  int tags[NC_MAX_GROUP];
  size_t sizes[NC_MAX_GROUP];
  size_t extra[NC_MAX_GROUP];
  int order[NC_MAX_GROUP];
  uint64_t firstMsg; /* sender's sequence number of the group's first message */
} ncGroup;

typedef struct {
  ncGroup* groups;
  int nGroups;
  uint64_t nMsgs;
  size_t maxPosted; /* largest posted buffer */
  uint64_t bytes;   /* total bytes sent */
} ncSchedule;

/* The schedule of one connection: the same on both ranks for the same arguments. maxGroup limits
 * grouped receives (1: none); senderTag is the tag of plain (n = 1) messages. */
int ncScheduleBuild(ncSchedule* s, uint64_t seed, int maxGroup, double scale, int senderTag);
void ncScheduleFree(ncSchedule* s);

uint64_t ncMsgKey(uint64_t seed, int fromRank, int comm, uint64_t msg);
void ncFill(void* buf, size_t n, uint64_t key);
/* Offset of the first byte that differs from the payload of `key`, or n when all match. */
size_t ncVerify(const void* buf, size_t n, uint64_t key);
uint8_t ncPatternByte(uint64_t key, size_t offset);
uint64_t ncRand(uint64_t* state); /* xorshift-style generator for choices */

/* ---- one rank (rank.c) ---- */

/* What a rank does with GPU memory (gpurules.c), and what it did. */
typedef struct {
  int on;         /* the checked traffic's buffers are GPU memory (or the cuda-host stand-in) */
  int viaCuda;    /* the device advertises NCCL_PTR_CUDA: regMr(NCCL_PTR_CUDA) */
  int viaDmaBuf;  /* it advertises NCCL_PTR_DMABUF and the driver gives fds: regMrDmaBuf */
  int hasFlush;   /* the plugin has an iflush */
  uint64_t nth;   /* registrations so far: with both ways, they alternate */
  uint64_t cudaRegs, dmabufRegs, flushes, flushNull, zeroRecvs;
} ncGpuState;

typedef struct {
  int rank;  /* 0 or 1 */
  int oob;   /* stream socket to the other rank */
  struct chrNet* net;
  ncclNetProperties_v12_t props;
  int maxGroup; /* n used for grouped receives: min(props.maxRecvs, NC_MAX_GROUP) */
  char peerIp[64]; /* numeric address of the other rank, for the raw TCP baseline */
  ncGpuState gpu;
} ncRank;

/* Run every phase as this rank. Rank 0 prints the report. Returns the exit status. */
int ncRunRank(int rank, int oobFd, const char* peerIp);

/* traffic.c: the checked traffic (connection race, data, close). */
void ncTraffic(ncRank* r);
/* perf.c: bandwidth and latency table (rank 0 prints). */
void ncPerf(ncRank* r, FILE* out);

double ncNow(void);

/* ---- how long a plugin call blocked (callclock.c) ---- */
/* A call's wall-clock seconds and the part of them the thread slept: neither on a CPU nor waiting
 * for one, so a busy machine does not make a call look blocking. */
typedef struct {
  double wall, blocked;    /* results, set by ncCallClockStop */
  double onCpu, waiting;   /* the thread's clocks at the start */
  int schedstat;           /* 1: the kernel's per-thread run and wait times are readable */
} ncCallClock;
void ncCallClockStart(ncCallClock* c);
void ncCallClockStop(ncCallClock* c);
/* The nonblocking rule for one call: it fails when the call slept NC_SLOW_CALL_SEC or more; the
 * slowest call of the run, asleep or not, is kept for the report (rules.c). */
#define NC_SLOW_CALL_SEC 1.0
void ncCheckCall(const char* who, const char* what, const ncCallClock* c);

/* ---- the GPU-memory rules (gpurules.c) ---- */
/* From the device's ptrSupport and the plugin's slots: which GPU rules apply (the others are
 * skipped, saying why), how GPU memory is registered; claims without the slots behind them fail. */
void ncGpuPlan(ncRank* r, FILE* out);
/* Register a GPU buffer on comm: 0, or -1 when the plugin refused it (the failure is recorded; the
 * caller goes on in host memory, as NCCL_NET_GDR_LEVEL=LOC would). who names the connection. */
int ncGpuReg(ncRank* r, void* comm, const char* who, void* data, size_t size, void** mh);
void ncGpuDereg(ncRank* r, void* comm, const char* who, void* mh);
/* After a receive into GPU memory completed: iflush when it carried bytes. 1: *req is a flush
 * request to test; 0: nothing to wait for (no bytes, a NULL request); -1: iflush failed (recorded). */
int ncGpuFlushStart(ncRank* r, void* comm, const char* who, int n, void** data, int* sizes, void** mh, void** req);
/* Test a flush request once: 1 done, 0 not yet, -1 failed (recorded). */
int ncGpuFlushTest(ncRank* r, const char* who, void* req);
/* One line of what the rank did with GPU memory. */
void ncGpuReport(const ncRank* r, FILE* out);

/* ---- GPU memory and netcheck's copies to it (gpumem.c) ---- */
const char* ncMemName(ncMemKind k);
/* --mem cuda before the ranks start: can GPU --gpu be used? Asked in a child process, so that the
 * process that forks the ranks never initialises CUDA. 0, or -1 with the reason in why. */
int ncGpuProbe(char* why, size_t len);
/* In a rank: the driver and GPU --gpu's primary context (--mem cuda; nothing otherwise). */
int ncGpuOpen(char* why, size_t len);
void ncGpuClose(void);
int ncGpuDriverVersion(void); /* 1000 * major + 10 * minor; 0 without a driver */
/* A buffer of at least `bytes` at a page boundary; *raw is what ncGpuFree takes. NULL on failure. */
char* ncGpuAlloc(size_t bytes, uintptr_t* raw);
void ncGpuFree(uintptr_t raw);
/* Copies and fills, done when they return; 0 or -1 (ncGpuError says why). */
int ncGpuWrite(void* gpu, const void* host, size_t n);
int ncGpuRead(void* host, const void* gpu, size_t n);
int ncGpuSet(void* gpu, int byte, size_t n);
/* A dma-buf fd for the pages around [gpu, gpu + n) and the offset of gpu in it; the caller closes it. */
int ncGpuDmaBuf(const void* gpu, size_t n, int* fd, uint64_t* offset);
/* 1 when ncGpuDmaBuf works here, else 0 with the reason in why. */
int ncGpuDmaBufUsable(char* why, size_t len);
const char* ncGpuError(void); /* this thread's last failure in gpumem.c */

/* Exchange listen handles: each side listens n times and gets the other's n handles. */
int ncExchangeHandles(ncRank* r, int n, void** listenComms, char (*myHandles)[NCCL_NET_HANDLE_MAXSIZE],
                      char (*peerHandles)[NCCL_NET_HANDLE_MAXSIZE]);
const char* ncLastError(void);

#endif /* CHORUS_NETCHECK_H_ */
