/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * net_test_harness.h: what the net plugins' own test programs (test_net_socket, test_net_ofi) share.
 * A test program loads one exported table (ncclNetPlugin_v8 .. _v12) and drives it as a core would,
 * through the version-independent wrappers below; its plugin-specific cases stay in its own file.
 *
 * Failures print one line "FAIL file:line: what" and exit 1; a case that cannot run here exits 77.
 */
#ifndef CHORUS_NET_TEST_HARNESS_H_
#define CHORUS_NET_TEST_HARNESS_H_

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include "plugin/net.h"

#define NT_SKIP_CODE 77

#define FAIL(...)                                              \
  do {                                                         \
    fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);       \
    fprintf(stderr, __VA_ARGS__);                              \
    fprintf(stderr, "\n");                                     \
    exit(1);                                                   \
  } while (0)
#define OK(call)                                                        \
  do {                                                                  \
    ncclResult_t r_ = (call);                                           \
    if (r_ != ncclSuccess) FAIL("%s returned %d", #call, (int)r_);      \
  } while (0)

/* ---------------------------------------------------------------- the table under test */

extern int gVer; /* the ABI version loaded (8..12) */
extern const ncclNet_v12_t* n12;
extern const ncclNet_v11_t* n11;
extern const ncclNet_v10_t* n10;
extern const ncclNet_v9_t* n9;
extern const ncclNet_v8_t* n8;
extern void* gCtx;              /* the v11/v12 init context */
extern atomic_int gWarns;       /* WARN lines the plugin logged */
extern char gLastWarn[512];     /* the text of the last one */
extern int gProfToken;          /* the profiler parent handle passed with v10+ isend/irecv */
/* Register every buffer before a shared case moves it (a provider that needs registration); when 0
 * the shared cases pass NULL handles, as a core may to a plugin that does not need them. */
extern int gRegisterBuffers;

/* Properties of device 0 in the layout of the loaded version (props.v8 .. props.v12). */
typedef union {
  ncclNetProperties_v8_t v8;
  ncclNetProperties_v9_t v9;
  ncclNetProperties_v10_t v10;
  ncclNetProperties_v11_t v11;
  ncclNetProperties_v12_t v12;
} ntProps;

typedef struct {
  const char* internalSym;              /* a plugin-internal name that must not be exported */
  ncclProfilerCallback_t profCb;        /* passed to init of v10+; may be NULL */
  /* Told init's (then devices()') result before anything else looks at it: may exit 77. NULL: any
   * failure fails the test. */
  void (*onInit)(ncclResult_t res, int ndev);
  void (*checkProps)(int ver, const ntProps* props); /* FAILs on properties this plugin must not have */
} ntLoadSpec;

/* dlopen the plugin, bind ncclNetPlugin_v<ver>, init it, check devices() >= 1 and device 0's properties. */
void ntLoad(const char* path, int ver, const ntLoadSpec* spec);
/* The start of a test program's main: `prog <plugin.so> <case> [version]` (version 12 by default);
 * ignores SIGPIPE, loads the plugin (ntLoad), sets *ver and returns the case name. Usage errors exit 2. */
const char* ntStart(int argc, char** argv, const ntLoadSpec* spec, int* ver);
/* finalize (v11, v12; older versions have none). */
void ntFinalize(void);

/* ---------------------------------------------------------------- version-independent wrappers */

ncclResult_t xListen(void* handle, void** lc);
ncclResult_t xConnect(void* handle, void** sc);
ncclResult_t xAccept(void* lc, void** rc);
ncclResult_t xIsend(void* sc, void* data, size_t size, void* mh, void** req);
/* One buffer, tag 0; *req starts as NCCL_NET_OPTIONAL_RECV_COMPLETION, the hint a core may leave. */
ncclResult_t xIrecv(void* rc, void* data, size_t size, void* mh, void** req);
/* n buffers with tags (mh: n handles, or NULL for none); v8 takes int sizes, v9 no profiler handles. */
ncclResult_t xIrecvN(void* rc, int n, void** data, size_t* sizes, int* tags, void** mh, void** req);
ncclResult_t xIsendTag(void* sc, void* data, size_t size, int tag, void* mh, void** req);
ncclResult_t xTest(void* req, int* done, int* size);
ncclResult_t xRegMr(void* comm, void* data, size_t size, void** mh);
ncclResult_t xDeregMr(void* comm, void* mh);
enum { NT_CLOSE_SEND = 0, NT_CLOSE_RECV = 1, NT_CLOSE_LISTEN = 2 };
ncclResult_t xClose(int which, void* comm);

/* xRegMr when gRegisterBuffers, else NULL; ntDereg undoes it (nothing for NULL). */
void* ntReg(void* comm, void* data, size_t size);
ncclResult_t ntDereg(void* comm, void* mh);

/* ---------------------------------------------------------------- waiting, data */

double nowSec(void);
/* Poll until done; returns the first error of test() (FAILs after timeoutSec). */
ncclResult_t waitReq(void* req, int* size, double timeoutSec);
/* Poll until test() fails, completes or sec pass; returns test()'s last result. */
ncclResult_t waitError(void* req, int* done, double sec);
void fillRandom(unsigned char* buf, size_t n, uint64_t seed);
/* FAILs, naming `what` and the first differing byte, unless got holds fillRandom(n, seed). */
void checkData(const unsigned char* got, size_t n, uint64_t seed, const char* what);

/* ---------------------------------------------------------------- connection setup */

typedef struct {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* sendComm;
} connArg;
void* connectLoop(void* arg); /* connArg*: connects until sendComm is set (20 s at most) */
void* acceptLoop(void* lc);   /* returns the recv comm (20 s at most) */
/* A connected pair of this process: connect in a second thread while this one accepts. */
void connectPair(void** sc, void** rc);

/* ---------------------------------------------------------------- shared cases */

typedef struct {
  void* comm;
  const size_t* sizes;
  int n;
  uint64_t seed;
} xferArg;
/* Sends sizes[i] bytes of fillRandom(seed + i), one at a time (a thread function: xferArg*). */
void* sendSeries(void* arg);
/* Called on each completed receive before its bytes are looked at (e.g. to flush it); may be NULL. */
typedef void (*ntAfterRecv)(void* comm, void* buf, size_t size, int got, void* mh);
/* Receives into buffers `extra` bytes larger than each message: checks size, bytes, guard bytes. */
void recvSeries(void* comm, const size_t* sizes, int n, uint64_t seed, size_t extra, ntAfterRecv after);

extern const size_t kSizes[];
extern const int NSIZES;

void caseSizes(size_t extra, const size_t* sizes, int n, ntAfterRecv after);
void caseFork(void);
void caseInflight(void);
/* Four connections at once, each end on a thread of its own, every byte checked. */
void caseThreads(void);
/* Grouped receives of groupN[g] buffers each (at most 8): every send lands in the buffer posted with
 * its tag, whatever the order of the sends; test() reports one size per buffer. */
void caseGroupedRecv(const int* groupN, int ng);
/* A message longer than the posted receive (bigSize, then 10 bytes) fails the receive with
 * ncclSystemError and a WARN (containing warnText when not NULL); the comm stays failed. */
void caseOverflow(size_t bigSize, const char* warnText);

typedef struct {
  size_t bytes;       /* per message */
  double killAfter;   /* seconds of traffic before the SIGKILL */
  double giveUp;      /* FAIL when test() still succeeds this long after it */
  double maxError;    /* FAIL when the error took longer than this */
  int childListens;   /* a receiving child listens itself (and pipes the handle to the parent) */
} ntKillSpec;
/* One process of a pair killed mid-transfer: the survivor's test() must fail with a system or
 * remote error. */
void caseKill(int killSender, const ntKillSpec* spec);

/* After strays were sent to lc: `polls` accepts (1 ms apart) produce nothing, then a real peer is
 * accepted and carries data. Closes that pair; lc stays open. */
void ntAcceptOnlyRealPeer(void* lc, const char* handle, int polls, const char* strays);

/* Runs the case named c if it is one every plugin shares with the same arguments (sizes, bigrecv,
 * fork, inflight, version); returns 0 when c is none of them. */
int ntRunSharedCase(const char* c);

/* Not a test: prints GB/s of back-to-back 64 MiB messages, with `settings` in the line. */
void caseBandwidth(const char* settings);

#endif /* CHORUS_NET_TEST_HARNESS_H_ */
