/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_abort.c (gpu.abort): a kernel waiting on a peer that never comes leaves when the abort
 * flag is set. Two ranks on one GPU; rank 1 never launches. Rank 0 waits for data (SIMPLE tail, LL
 * flags), for credit (a send of more steps than the connection has slots) and in a ring all-reduce.
 * Each wait must still be running after 300 ms (it really waits) and must end within 5 s of the
 * abort. First, a plain exchange between both ranks checks the same setup moves data at all.
 * Exits 77 without a GPU.
 */
#include <stdint.h>
#include <string.h>
#include <unistd.h>
#include "gpu_dev.h"
#include "gpu_plan.h"
#include "config/algo_select.h"
#include "plugin/common.h"

#define STEP_BYTES 4096
#define LL_LINES 64

static int failures = 0;

static struct chrDevGroup* newGroup(const int* ringOrder) {
  struct chrDevGroupConfig cfg = {2, 1, 1, STEP_BYTES, LL_LINES, ringOrder, 0};
  struct chrDevGroup* g = NULL;
  CT_DEV(chrDevGroupCreate(&cfg, &g));
  return g;
}

static struct chrWork p2pWork(int pattern, int peer, int proto, uint64_t count, uint64_t buf) {
  struct chrWork w;
  memset(&w, 0, sizeof w);
  w.pattern = (uint8_t)pattern;
  w.func = pattern == CHR_PAT_P2P_SEND ? ncclFuncSend : ncclFuncRecv;
  w.proto = (uint8_t)proto;
  w.type = ncclFloat32;
  w.typeSize = 4;
  w.nLinks = 1;
  w.nRanks = 2;
  w.count = w.len = count;
  w.chunkElems = (proto == CHR_PROTO_LL ? LL_LINES * 8 : STEP_BYTES) / 4;
  if (pattern == CHR_PAT_P2P_SEND) w.sendbuff = buf;
  else w.recvbuff = buf;
  w.links[0].peer = peer;
  w.links[0].isSend = pattern == CHR_PAT_P2P_SEND;
  w.links[0].p2p = 1;
  return w;
}

/* Rank 0 runs `w` alone; it must wait, then leave on abort. */
static void expectAbort(const char* what, const struct chrWork* w, int nChannels, const int* nWorks, cudaStream_t s) {
  const int ringOrder[2] = {0, 1};
  struct chrDevGroup* g = newGroup(ringOrder);
  CT_DEV(chrDevLaunch(g, 0, w, nWorks, nChannels, s));
  usleep(300 * 1000);
  if (cudaStreamQuery(s) != cudaErrorNotReady) {
    fprintf(stderr, "FAIL %s: the kernel did not wait for its peer\n", what);
    failures++;
  }
  const double t0 = chrTestNow();
  chrDevSetAbort(g, 0, 1);
  if (chrTestWaitStreams(&s, 1, 5000)) {
    fprintf(stderr, "FAIL %s: the kernel is still running 5 s after the abort (or faulted)\n", what);
    failures++;
    exit(1); /* cannot free the group under a running kernel */
  }
  printf("%s: left %.1f ms after the abort\n", what, 1e3 * (chrTestNow() - t0));
  CT_DEV(chrDevGroupDestroy(g));
}

int main(void) {
  chrTestRequireGpu("test_gpu_abort");
  cudaStream_t s[2];
  for (int r = 0; r < 2; r++) CT_CUDA(cudaStreamCreateWithFlags(&s[r], cudaStreamNonBlocking));
  const uint64_t count = 40 * STEP_BYTES / 4; /* 40 steps: more than the slots of a connection */
  float* buf[2];
  for (int r = 0; r < 2; r++) CT_CUDA(cudaMalloc((void**)&buf[r], count * 4));

  /* The exchange that works: rank 0 sends, rank 1 receives, then the check. */
  {
    const int ringOrder[2] = {0, 1};
    struct chrDevGroup* g = newGroup(ringOrder);
    float* host = (float*)malloc(count * 4);
    for (uint64_t i = 0; i < count; i++) host[i] = (float)i;
    CT_CUDA(cudaMemcpy(buf[0], host, count * 4, cudaMemcpyHostToDevice));
    CT_CUDA(cudaMemset(buf[1], 0, count * 4));
    int one[1] = {1};
    struct chrWork send = p2pWork(CHR_PAT_P2P_SEND, 1, CHR_PROTO_SIMPLE, count, (uint64_t)(uintptr_t)buf[0]);
    struct chrWork recv = p2pWork(CHR_PAT_P2P_RECV, 0, CHR_PROTO_SIMPLE, count, (uint64_t)(uintptr_t)buf[1]);
    CT_DEV(chrDevLaunch(g, 0, &send, one, 1, s[0]));
    CT_DEV(chrDevLaunch(g, 1, &recv, one, 1, s[1]));
    if (chrTestWaitStreams(s, 2, 10000)) {
      fprintf(stderr, "FAIL: a plain send/recv does not complete\n");
      chrDevSetAbort(g, -1, 1);
      chrTestWaitStreams(s, 2, 5000);
      return 1;
    }
    float* back = (float*)malloc(count * 4);
    CT_CUDA(cudaMemcpy(back, buf[1], count * 4, cudaMemcpyDeviceToHost));
    if (memcmp(back, host, count * 4) != 0) {
      fprintf(stderr, "FAIL: send/recv moved the wrong data\n");
      failures++;
    }
    free(back);
    free(host);
    CT_DEV(chrDevGroupDestroy(g));
  }

  int one[1] = {1};
  struct chrWork w = p2pWork(CHR_PAT_P2P_RECV, 1, CHR_PROTO_SIMPLE, count, (uint64_t)(uintptr_t)buf[0]);
  expectAbort("SIMPLE receive (waits on tail)", &w, 1, one, s[0]);
  w = p2pWork(CHR_PAT_P2P_RECV, 1, CHR_PROTO_LL, 1000, (uint64_t)(uintptr_t)buf[0]);
  expectAbort("LL receive (waits on line flags)", &w, 1, one, s[0]);
  w = p2pWork(CHR_PAT_P2P_SEND, 1, CHR_PROTO_SIMPLE, count, (uint64_t)(uintptr_t)buf[0]);
  expectAbort("SIMPLE send of 40 steps (waits on head)", &w, 1, one, s[0]);
  w = p2pWork(CHR_PAT_P2P_SEND, 1, CHR_PROTO_LL, 40 * LL_LINES * 2, (uint64_t)(uintptr_t)buf[0]);
  expectAbort("LL send of 40 steps (waits on head)", &w, 1, one, s[0]);

  /* A ring all-reduce whose peer never runs. */
  struct chrTestPlan plan;
  memset(&plan, 0, sizeof plan);
  struct chrTestCall call;
  memset(&call, 0, sizeof call);
  call.func = CT_AR_RING;
  call.type = ncclFloat32;
  call.typeSize = 4;
  call.proto = CHR_PROTO_SIMPLE;
  call.nChannels = 1;
  call.count = count;
  call.chunkElems = STEP_BYTES / 4;
  const int ringOrder[2] = {0, 1};
  chrTestAddCall(&plan, &call, 2, ringOrder, 0, (uint64_t)(uintptr_t)buf[0], (uint64_t)(uintptr_t)buf[0]);
  struct chrWork flat[CT_MAX_CHANNELS * CT_MAX_WORKS];
  int nWorks[CT_MAX_CHANNELS];
  chrTestFlatten(&plan, flat, nWorks);
  expectAbort("ring all-reduce without its peer", flat, plan.nChannels, nWorks, s[0]);

  for (int r = 0; r < 2; r++) {
    cudaFree(buf[r]);
    cudaStreamDestroy(s[r]);
  }
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
