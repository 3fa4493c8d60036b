/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * gpu_bw.c (chorus-gpu-bw): a bandwidth probe, not a test. Ring all-reduce of floats between 2 ranks
 * sharing one GPU, sizes from --min to --max (x2), SIMPLE and LL side by side (LL up to --llmax).
 * Prints per size the time per all-reduce and the bus bandwidth (NCCL's busbw: bytes * 2(n-1)/n
 * over time; for 2 ranks the algorithm bandwidth), and checks the result of the last run (inputs
 * are small integers, so float sums are exact).
 *
 * Both ranks' FIFOs and buffers are in one GPU's memory, so this measures the kernels (copy
 * efficiency, step latency), not a link: every byte that would cross NVLink is a write and a read
 * of local HBM here.
 *
 * Usage: chorus-gpu-bw [--min BYTES] [--max BYTES] [--llmax BYTES] [--channels C] [--step BYTES]
 *                      [--ms TARGET_MS_PER_SIZE]
 */
#include <math.h>
#include <stdint.h>
#include <string.h>
#include "gpu_dev.h"
#include "gpu_plan.h"
#include "config/algo_select.h"

#define LL_LINES 4096 /* 32 KiB of payload per LL step */

struct probe {
  struct chrDevGroup* group;
  cudaStream_t s[2];
  float* in[2];
  float* out[2];
  int ringOrder[2];
  int channels;
  size_t stepBytes;
};

static size_t parseSize(const char* s) {
  char* end;
  double v = strtod(s, &end);
  if (*end == 'K' || *end == 'k') v *= 1024;
  if (*end == 'M' || *end == 'm') v *= 1024 * 1024;
  if (*end == 'G' || *end == 'g') v *= 1024.0 * 1024 * 1024;
  return (size_t)v;
}

static void launchAll(struct probe* P, uint64_t count, int proto) {
  for (int r = 0; r < 2; r++) {
    struct chrTestPlan plan;
    memset(&plan, 0, sizeof plan);
    struct chrTestCall call;
    memset(&call, 0, sizeof call);
    call.func = CT_AR_RING;
    call.type = ncclFloat32;
    call.typeSize = 4;
    call.proto = proto;
    call.nChannels = P->channels;
    call.count = count;
    call.chunkElems = (proto == CHR_PROTO_LL ? LL_LINES * 8 : P->stepBytes) / 4;
    chrTestAddCall(&plan, &call, 2, P->ringOrder, r, (uint64_t)(uintptr_t)P->in[r], (uint64_t)(uintptr_t)P->out[r]);
    struct chrWork flat[CT_MAX_CHANNELS * CT_MAX_WORKS];
    int nWorks[CT_MAX_CHANNELS];
    chrTestFlatten(&plan, flat, nWorks);
    CT_DEV(chrDevLaunch(P->group, r, flat, nWorks, plan.nChannels, P->s[r]));
  }
}

static void waitAll(struct probe* P) {
  int res = chrTestWaitStreams(P->s, 2, 60000);
  if (res == 2) exit(1); /* a CUDA error, printed */
  if (res) {
    fprintf(stderr, "chorus-gpu-bw: no completion after 60 s; aborting\n");
    chrDevSetAbort(P->group, -1, 1);
    chrTestWaitStreams(P->s, 2, 5000);
    exit(1);
  }
}

/* Microseconds per all-reduce, or -1 if the result was wrong. */
static double timeSize(struct probe* P, uint64_t count, int proto, double targetMs) {
  CT_CUDA(cudaMemset(P->out[0], 0, count * 4));
  CT_CUDA(cudaMemset(P->out[1], 0, count * 4));
  for (int i = 0; i < 3; i++) launchAll(P, count, proto); /* warm-up */
  waitAll(P);
  int iters = 1;
  double t = 0;
  for (;;) {
    const double t0 = chrTestNow();
    for (int i = 0; i < iters; i++) launchAll(P, count, proto);
    waitAll(P);
    t = chrTestNow() - t0;
    if (t * 1e3 >= targetMs || iters >= (1 << 16)) break;
    iters *= t * 1e3 < targetMs / 16 ? 8 : 2;
  }
  /* in[r][i] = (i % 251) + r: the sum is 2 * (i % 251) + 1, exact in float. */
  float* host = (float*)malloc(count * 4 + 4);
  int ok = 1;
  for (int r = 0; r < 2 && ok; r++) {
    CT_CUDA(cudaMemcpy(host, P->out[r], count * 4, cudaMemcpyDeviceToHost));
    for (uint64_t i = 0; i < count && ok; i++) ok = host[i] == (float)(2 * (i % 251) + 1);
  }
  free(host);
  return ok ? 1e6 * t / iters : -1.0;
}

int main(int argc, char** argv) {
  size_t minBytes = 8, maxBytes = 256u << 20, llMax = 4u << 20;
  struct probe P;
  memset(&P, 0, sizeof P);
  P.channels = 8;
  P.stepBytes = 512u << 10;
  double targetMs = 100;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--min")) minBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "--max")) maxBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "--llmax")) llMax = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "--channels")) P.channels = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--step")) P.stepBytes = parseSize(argv[i + 1]);
    else if (!strcmp(argv[i], "--ms")) targetMs = atof(argv[i + 1]);
    else {
      fprintf(stderr, "unknown argument %s\n", argv[i]);
      return 2;
    }
  }
  chrTestRequireGpu("chorus-gpu-bw");
  if (P.channels < 1 || P.channels > CT_MAX_CHANNELS) {
    fprintf(stderr, "--channels 1..%d\n", CT_MAX_CHANNELS);
    return 2;
  }
  P.ringOrder[0] = 0;
  P.ringOrder[1] = 1;
  struct chrDevGroupConfig cfg = {2, P.channels, 0, P.stepBytes, LL_LINES, P.ringOrder, 0};
  CT_DEV(chrDevGroupCreate(&cfg, &P.group));
  const uint64_t maxCount = (maxBytes + 3) / 4;
  float* host = (float*)malloc(maxCount * 4 + 4);
  for (int r = 0; r < 2; r++) {
    CT_CUDA(cudaStreamCreateWithFlags(&P.s[r], cudaStreamNonBlocking));
    CT_CUDA(cudaMalloc((void**)&P.in[r], maxCount * 4 + 16));
    CT_CUDA(cudaMalloc((void**)&P.out[r], maxCount * 4 + 16));
    for (uint64_t i = 0; i < maxCount; i++) host[i] = (float)(i % 251 + (uint64_t)r);
    CT_CUDA(cudaMemcpy(P.in[r], host, maxCount * 4, cudaMemcpyHostToDevice));
  }
  free(host);
  printf("# ring all-reduce, float sum, 2 ranks on one GPU, %d channels, SIMPLE slots %zu KiB, LL slots %d KiB\n",
         P.channels, P.stepBytes >> 10, LL_LINES * 8 / 1024);
  printf("%12s %12s | %10s %9s | %10s %9s\n", "bytes", "count", "SIMPLE us", "GB/s", "LL us", "GB/s");
  int bad = 0;
  for (size_t bytes = minBytes; bytes <= maxBytes; bytes *= 2) {
    const uint64_t count = bytes / 4 ? bytes / 4 : 1;
    const double simple = timeSize(&P, count, CHR_PROTO_SIMPLE, targetMs);
    const double ll = bytes <= llMax ? timeSize(&P, count, CHR_PROTO_LL, targetMs) : NAN;
    char llText[64];
    if (isnan(ll)) snprintf(llText, sizeof llText, "%10s %9s", "-", "-");
    else snprintf(llText, sizeof llText, "%10.2f %9.2f", ll, ll > 0 ? (double)count * 4 / ll / 1e3 : 0.0);
    printf("%12zu %12llu | %10.2f %9.2f | %s%s\n", (size_t)count * 4, (unsigned long long)count, simple,
           simple > 0 ? (double)count * 4 / simple / 1e3 : 0.0, llText, simple < 0 || ll < 0 ? "  WRONG RESULT" : "");
    bad |= simple < 0 || ll < 0;
    fflush(stdout);
  }
  for (int r = 0; r < 2; r++) {
    cudaFree(P.in[r]);
    cudaFree(P.out[r]);
    cudaStreamDestroy(P.s[r]);
  }
  CT_DEV(chrDevGroupDestroy(P.group));
  return bad ? 1 : 0;
}
