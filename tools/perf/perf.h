/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf.h: the pieces of chorus-perf, a benchmark with nccl-tests' sizes, formulas and output
 * columns. Only the public NCCL API is used, so the same
 * binary runs on Chorus and on NVIDIA's NCCL, switched by the library path.
 *
 *   options.c   command line
 *   colls.c     per-collective definitions: counts, in-place offsets, bus factor, launch, expected data
 *   data.c      buffers (host memory, or CUDA with CHORUS_PERF_CUDA), data patterns, result check
 *   iter_times.c -I 1: each timed iteration's time
 *   report.c    time/bandwidth formatting, the table, footer, JSON (-J) and CSV (-C) files
 *   calibrate.c --calibrate: runs this binary per transport and algorithm, fits the cost model
 *   ../chorus-perf.c   main: launching ranks, the loop over types, ops, sizes, in/out of place
 */
#ifndef CHORUS_TOOLS_PERF_H_
#define CHORUS_TOOLS_PERF_H_

#ifdef CHORUS_PERF_CUDA
#include <cuda_runtime.h>
#endif
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <time.h>
#include "nccl.h"
#include "numeric.h"

/* Reduction operators as the benchmark names them; "mulsum" is ncclRedOpCreatePreMulSum with scalar
 * 1 on even ranks and 2 on odd ranks (as nccl-tests does). */
typedef enum { PERF_SUM, PERF_PROD, PERF_MAX, PERF_MIN, PERF_AVG, PERF_MULSUM, PERF_NUM_OPS } chrPerfOp;
const char* chrPerfOpName(int op); /* sum prod max min avg mulsum; "none" for -1 */

typedef enum { PERF_MEM_HOST = 0, PERF_MEM_CUDA = 1 } chrPerfMem;

#define PERF_SCRATCH_BYTES (1u << 20) /* device scratch for the small allreduces of counts and timings */

typedef struct chrPerfColl chrPerfColl;

typedef struct {
  /* launching */
  int np;            /* -np N: fork N local ranks; 0: single rank, or ranks from the environment */
  int nhosts;        /* --hosts K: act out K hosts (NCCL_HOSTID) among the local ranks */
  int nthreads;      /* -t T: T ranks as threads of this process (0 or 1: not used) */
  int timeoutSec;    /* -T / --timeout: kill all local ranks after this long (0: never) */
  /* what to run */
  const chrPerfColl* coll;
  ncclDataType_t types[ncclNumTypes];
  int ntypes;
  int ops[PERF_NUM_OPS];
  int nops;
  int root;          /* -r */
  size_t minBytes, maxBytes, stepBytes;
  double stepFactor; /* > 1: multiply; otherwise add stepBytes */
  int iters, warmup, agg, check, blocking, average;
  chrPerfMem mem;    /* -M host|cuda (vmm: cuda) */
  int vmm;           /* -M vmm: device buffers made as PyTorch's expandable segments (cuMemCreate chunks;
                        one process per rank) */
  int graphLaunches; /* -G N: capture the timed iterations into one CUDA graph, time N launches of it (0: off) */
  int iterTimes;     /* -I 1: every rank prints each timed iteration's time (iter_times.c) */
  int registerMode;  /* -R: 0 none, 1 ncclCommRegister, 2 ncclCommWindowRegister (symmetric), as nccl-tests */
  int parallelInit;  /* accepted for nccl-tests compatibility, no effect */
  const char* jsonPath; /* -J */
  const char* csvPath;  /* -C */
  int quiet;         /* -q: no preamble (table only) */
  int skipRejected;  /* -d all / -o all: skip a (type, op) the library rejects as an invalid argument */
  /* set by main before any rank starts (the JSON file's start_time and duration_s) */
  time_t startTime;  /* wall clock, UTC */
  double startSec;   /* chrLaunchNowSec() at the same moment */
} chrPerfOptions;

/* Returns 0 on success, 1 on a usage error (message printed), 2 for --help (usage printed). */
int chrPerfParseOptions(int argc, char** argv, chrPerfOptions* opt);
void chrPerfUsage(FILE* f, const char* prog);

/* chorus-perf --calibrate (calibrate.c): measures the planner's cost model and writes it as an INI
 * section. Takes the whole command line; returns the exit status. */
int chrPerfCalibrate(int argc, char** argv);

/* ------------------------------------------------------------------------------------------------ */
/* Collectives */

/* Per rank and per size step: how many elements go where. Counts in elements. */
typedef struct {
  size_t count;          /* the count argument of the call = the "count" column */
  size_t sendElems;      /* elements read from the send buffer */
  size_t recvElems;      /* elements written to the receive buffer */
  size_t sendInplaceOff; /* in place: send = buf + sendInplaceOff, recv = buf + recvInplaceOff */
  size_t recvInplaceOff;
  size_t algBytes;       /* S of the algbw formula */
  size_t sizeBytes;      /* the "size" column: max(send, recv) bytes */
} chrPerfShape;

/* Where the expected value of one output element comes from. */
typedef enum { PERF_SRC_NONE = 0, PERF_SRC_COPY = 1, PERF_SRC_REDUCE = 2 } chrPerfSrcKind;

struct chrPerfColl {
  const char* name;      /* command line name: allreduce, allgather, ... */
  const char* testName;  /* nccl-tests program name: all_reduce_perf, ... (footer) */
  int usesOp;
  int usesRoot;
  void (*shape)(size_t elems, int eltSize, int nranks, int rank, int root, chrPerfShape* s);
  double (*busFactor)(int nranks);
  ncclResult_t (*launch)(const void* sendbuff, void* recvbuff, size_t count, ncclDataType_t type, ncclRedOp_t op,
                         int root, int rank, int nranks, ncclComm_t comm, cudaStream_t stream);
  /* Output element j on rank `rank`: COPY from element *srcIndex of rank *srcRank's send buffer,
   * REDUCE of element *srcIndex over every rank's send buffer, or NONE (not checked). */
  chrPerfSrcKind (*source)(const chrPerfShape* s, int rank, int nranks, int root, size_t j, int* srcRank,
                           size_t* srcIndex);
  const char* ncclFunction; /* for error messages: "ncclAllReduce" */
  int checkInPlace;         /* 0: the in-place half is timed but its data not checked (#wrong N/A) */
};

const chrPerfColl* chrPerfFindColl(const char* name);
void chrPerfListColls(FILE* f);

/* ------------------------------------------------------------------------------------------------ */
/* Buffers and data */

typedef struct {
  chrPerfMem mem;
  void* send;     /* out-of-place send buffer */
  void* recv;     /* out-of-place receive buffer; also the in-place buffer */
  size_t sendBytes, recvBytes;
  void* hostStage; /* host copy of device data for checking (CUDA only) */
  void* scratch;   /* device memory for the small allreduces of timings and counts (CUDA only) */
  size_t scratchBytes; /* PERF_SCRATCH_BYTES, allocated with the buffers */
  cudaStream_t stream;
  int vmm;                    /* send and recv are cuMemCreate chunks (-M vmm) */
  size_t sendSpan, recvSpan;  /* ... their reserved ranges */
  int registerMode;           /* -R as registered (register.c): send and recv's handles or windows */
  void* regHandles[2];
  ncclWindow_t windows[2];
} chrPerfBuffers;

/* vmm (with mem PERF_MEM_CUDA): the send and receive buffers as -M vmm makes them. */
int chrPerfBuffersAlloc(chrPerfBuffers* b, chrPerfMem mem, int vmm, size_t sendBytes, size_t recvBytes);
void chrPerfBuffersFree(chrPerfBuffers* b);
/* -R (register.c): register send and recv with comm (mode 1 ncclCommRegister, 2 a symmetric window,
 * collective over the ranks), and undo it before the buffers are freed. 0, or 1 after printing why. */
int chrPerfBuffersRegister(chrPerfBuffers* b, ncclComm_t comm, int mode, int rank);
int chrPerfBuffersDeregister(chrPerfBuffers* b, ncclComm_t comm, int rank);
/* Waits for everything launched on the buffers' stream (no-op for host memory). */
int chrPerfSync(chrPerfBuffers* b);

/* -I 1: each timed iteration's time (iter_times.c). Start before the first timed iteration, Mark
 * after iteration it (0 .. iters - 1), Report once the buffers' stream has drained (it prints one
 * "# iteration us:" line and frees; Free alone on an error path). 0 on success. */
typedef struct {
  int n, device;
  double* sec; /* iteration ends, from the start (sec[0]) */
#ifdef CHORUS_PERF_CUDA
  cudaEvent_t* events;
#endif
} chrPerfIterTimes;
int chrPerfIterStart(chrPerfIterTimes* t, const chrPerfBuffers* b, int iters);
int chrPerfIterMark(chrPerfIterTimes* t, const chrPerfBuffers* b, int it);
int chrPerfIterReport(chrPerfIterTimes* t, int rank, size_t bytes, int inPlace);
void chrPerfIterFree(chrPerfIterTimes* t);

/* The value pattern of one (type, op, nranks) combination: small integers chosen so that every
 * partial result of the reduction is exact in the type, whatever order the library reduces in. */
typedef struct {
  ncclDataType_t type;
  int op;        /* chrPerfOp, or -1 for data movement */
  int nranks;
  int amp;       /* values lie in [-amp, amp] ([0, amp] for unsigned) */
  int active;    /* per element, this many ranks hold values; the rest hold the op's neutral value */
  uint64_t seed;
} chrPerfPattern;

void chrPerfPatternInit(chrPerfPattern* p, ncclDataType_t type, int op, int nranks, uint64_t seed);
/* Value of element k of rank r's send buffer, as a small integer. */
int64_t chrPerfPatternValue(const chrPerfPattern* p, int rank, size_t k);
/* The PreMulSum scalar of a rank (1 on even, 2 on odd ranks). */
int chrPerfMulsumScalar(int rank);

/* Writes the inputs of one check run: send region (sendElems at `send`) gets the pattern of `rank`;
 * the receive region (recvElems at `recv`) is cleared to a sentinel first (for in place the
 * regions overlap, and the send data wins). */
int chrPerfFillInputs(chrPerfBuffers* b, const chrPerfShape* s, const chrPerfPattern* p, int rank, void* send,
                      void* recv);
/* Writes the inputs of a timed run, whose results nobody checks: every byte of the send region
 * 0x3C, a finite normal number in every float type (1.5 in e4m3, 1.0 in e5m2, about 1.06 in half),
 * written by the device itself for device buffers. Generating the check pattern on the host and
 * copying it over took minutes per sweep at gigabytes per rank. */
int chrPerfFillTimed(chrPerfBuffers* b, const chrPerfShape* s, int typeSize, void* send);
/* Counts output elements that differ from the expected values (tolerance 0, except avg on floats). */
int64_t chrPerfCheckOutputs(chrPerfBuffers* b, const chrPerfColl* c, const chrPerfShape* s, const chrPerfPattern* p,
                            int rank, int root, const void* recv);

/* ------------------------------------------------------------------------------------------------ */
/* Report (rank 0 only) */

typedef struct {
  size_t size, count;
  const char* type;
  const char* redop;
  int root;
  double timeUs[2], algBw[2], busBw[2]; /* [0] out of place, [1] in place */
  double hostUs[2];                     /* per operation, inside the library's calls (enqueue cost) */
  int64_t wrong[2];                     /* -1: not checked */
  char algo[16], proto[16];             /* the library's choice ("RING", "SIMPLE"), "" when it cannot say */
} chrPerfRow;

#define PERF_HOST_LEN 64 /* a host name as gethostname gives it, NUL included */

typedef struct {
  chrPerfRow* rows;
  int nrows, cap;
  char* hosts;         /* nranks names of PERF_HOST_LEN bytes, in rank order (NULL: not gathered) */
  int64_t outOfBounds; /* failed checks */
  double busBwSum;
  int busBwCount;
} chrPerfReport;

void chrPerfPrintHeader(FILE* f);
void chrPerfPrintRow(FILE* f, const chrPerfRow* row);
int chrPerfReportAdd(chrPerfReport* r, const chrPerfRow* row);
/* Prints the footer; returns non-zero if the run failed (wrong values, or NCCL_TESTS_MIN_BW missed). */
int chrPerfPrintFooter(FILE* f, const chrPerfReport* r, const chrPerfColl* c);
/* What the files say about the library: nccl.h's version code, ncclGetVersion's, a name
 * ("chorus 0.1.0 (NCCL API 2.27.3)", or "NCCL") and the file it was loaded from ("" if unknown). */
typedef struct {
  int headers, library;
  const char* name;
  const char* path;
} chrPerfLibrary;

/* -J: the rows as JSON, with the options, the library, the hosts, start time and duration. */
int chrPerfWriteJson(const char* path, const chrPerfReport* r, const chrPerfOptions* o, int nranks,
                     const chrPerfLibrary* lib);
/* -C: the rows as CSV, one line per row after a header line. */
int chrPerfWriteCsv(const char* path, const chrPerfReport* r, const chrPerfOptions* o, int nranks);
void chrPerfReportFree(chrPerfReport* r);

#endif /* CHORUS_TOOLS_PERF_H_ */
