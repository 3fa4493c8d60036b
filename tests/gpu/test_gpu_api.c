/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gpu_api.c (gpu.api): the launcher refuses what it cannot run, with a message, before anything
 * reaches the GPU. Group configurations are checked first (no GPU needed); plans need a group, so
 * the work checks run only with a GPU (otherwise the test reports SKIP after the first part).
 */
#include <string.h>
#include "gpu_dev.h"
#include "gpu_plan.h"
#include "config/algo_select.h"

static int failures = 0;

static void expectFail(const char* what, ncclResult_t res) {
  if (res == ncclSuccess) {
    fprintf(stderr, "FAIL %s: accepted\n", what);
    failures++;
  } else if (chrDevLastError()[0] == '\0') {
    fprintf(stderr, "FAIL %s: refused without a message\n", what);
    failures++;
  }
}

static void checkConfigs(void) {
  const int order[4] = {0, 1, 2, 3}, dup[4] = {0, 1, 1, 3};
  struct chrDevGroup* g = NULL;
  struct chrDevGroupConfig base = {4, 2, 1, 4096, 64, order, 0}, c;
  c = base, c.nRanks = 0;
  expectFail("0 ranks", chrDevGroupCreate(&c, &g));
  c = base, c.nChannels = 0;
  expectFail("0 channels", chrDevGroupCreate(&c, &g));
  c = base, c.nChannels = CHR_DEV_MAX_CHANNELS + 1;
  expectFail("too many channels", chrDevGroupCreate(&c, &g));
  c = base, c.p2pConns = CHR_DEV_P2P_CONNS + 1;
  expectFail("too many p2p indices", chrDevGroupCreate(&c, &g));
  c = base, c.p2pStepBytes = 1000;
  expectFail("p2p slot not a multiple of 16", chrDevGroupCreate(&c, &g));
  c = base, c.stepBytes = 1000;
  expectFail("slot not a multiple of 16", chrDevGroupCreate(&c, &g));
  c = base, c.llLines = -1;
  expectFail("negative LL lines", chrDevGroupCreate(&c, &g));
  c = base, c.ringOrder = dup;
  expectFail("ring order not a permutation", chrDevGroupCreate(&c, &g));
  c = base, c.ringOrder = NULL;
  expectFail("no ring order", chrDevGroupCreate(&c, &g));
  expectFail("NULL config", chrDevGroupCreate(NULL, &g));
  if (g != NULL) {
    fprintf(stderr, "FAIL: a refused group was returned\n");
    failures++;
  }
  if (chrDevApiVersion() != CHR_DEV_API_VERSION) {
    fprintf(stderr, "FAIL: API version %d\n", chrDevApiVersion());
    failures++;
  }
}

static struct chrWork ringWork(const struct chrTestCall* call, int rank, const int* order) {
  struct chrTestPlan plan;
  memset(&plan, 0, sizeof plan);
  chrTestAddCall(&plan, call, 4, order, rank, 0x100000, 0x200000);
  return plan.works[0][0];
}

static void checkWorks(void) {
  const int order[4] = {0, 2, 1, 3}; /* rank 0's ring successor is rank 2 */
  struct chrDevGroup* g = NULL;
  struct chrDevGroupConfig cfg = {4, 2, 1, 4096, 64, order, 0};
  CT_DEV(chrDevGroupCreate(&cfg, &g));
  cudaStream_t s;
  CT_CUDA(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  struct chrTestCall call;
  memset(&call, 0, sizeof call);
  call.func = CT_AR_RING;
  call.type = ncclFloat32;
  call.typeSize = 4;
  call.proto = CHR_PROTO_SIMPLE;
  call.nChannels = 1;
  call.count = 1000;
  call.chunkElems = 1024;
  const struct chrWork good = ringWork(&call, 0, order);
  int one[1] = {1}, two[2] = {1, 1};
  struct chrWork w;
  w = good, w.links[CHR_RING_SEND].peer = 1;
  expectFail("ring send link to a rank that is not the successor", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.ringPos = 1;
  expectFail("wrong ring position", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.chunkElems = 1025;
  expectFail("steps larger than a slot", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.proto = CHR_PROTO_LL, w.chunkElems = 200;
  expectFail("LL steps larger than an LL slot", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.proto = CHR_PROTO_LL128;
  expectFail("LL128", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.op = 5; /* SumPostDiv */
  expectFail("SumPostDiv on float", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.op = 9;
  expectFail("unknown op", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.typeSize = 2;
  expectFail("type size mismatch", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.nLinks = 3;
  expectFail("ring pattern with 3 links", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.nRanks = 3;
  expectFail("work for another rank count", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.pattern = 99;
  expectFail("unknown pattern", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good, w.op = 4, w.flags = CHR_WORK_SCALAR_PTR, w.opArg = 0;
  expectFail("NULL PreMulSum scalar pointer", chrDevLaunch(g, 0, &w, one, 1, s));
  w = good;
  expectFail("ring work on a channel the group lacks", chrDevLaunch(g, 0, (struct chrWork[]){good, good, good}, (int[]){1, 1, 1}, 3, s));
  struct chrTestCall a2a = call;
  a2a.func = CT_ALLTOALL;
  struct chrTestPlan plan;
  memset(&plan, 0, sizeof plan);
  chrTestAddCall(&plan, &a2a, 4, order, 0, 0x100000, 0x200000);
  struct chrWork sends[2] = {plan.works[0][0], plan.works[0][0]}; /* one p2p end from channels 0 and 1 */
  expectFail("a p2p end used from two channels", chrDevLaunch(g, 0, sends, two, 2, s));
  w = plan.works[0][0], w.links[0].conn = 1;
  expectFail("p2p index the group lacks", chrDevLaunch(g, 0, &w, one, 1, s));
  expectFail("rank out of range", chrDevLaunch(g, 4, &good, one, 1, s));
  expectFail("no channels", chrDevLaunch(g, 0, &good, one, 0, s));
  CT_CUDA(cudaStreamSynchronize(s));
  cudaStreamDestroy(s);
  CT_DEV(chrDevGroupDestroy(g));
}

int main(void) {
  chrTestUseManyQueues();
  checkConfigs();
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
    if (failures) return 1;
    printf("test_gpu_api: configuration checks passed; SKIP: no CUDA device for the plan checks\n");
    return CT_SKIP;
  }
  checkWorks();
  if (failures) fprintf(stderr, "%d failures\n", failures);
  return failures ? 1 : 0;
}
