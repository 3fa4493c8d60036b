/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_tuner_abi.c: the frozen tuner plugin ABI headers (plugin/tuner_v2.h .. tuner_v6.h) have the
 * sizes, slot offsets and numbering of NCCL's, so tuners built for NCCL load unchanged. Also includes
 * every version into one translation unit, which is what a multi-version tuner does, and checks that
 * the planner's numbering (hostdev/algo_ids.h) is the ABI's.
 */
#include <stddef.h>
#include <stdio.h>

#include "config/algo_select.h"
#include "plugin/tuner.h"

static int failures;

#define EXPECT_EQ(what, got, want)                                                          \
  do {                                                                                      \
    long long g_ = (long long)(got), w_ = (long long)(want);                                \
    if (g_ != w_) {                                                                         \
      fprintf(stderr, "FAIL %s: %lld, expected %lld\n", what, g_, w_);                      \
      failures++;                                                                           \
    }                                                                                       \
  } while (0)
#define SIZE(T, want) EXPECT_EQ("sizeof(" #T ")", sizeof(T), want)
#define OFF(T, f, want) EXPECT_EQ("offsetof(" #T ", " #f ")", offsetof(T, f), want)
/* Table slots are pointers: slot k sits at 8*k. */
#define SLOT(T, f, k) EXPECT_EQ("slot " #T "." #f, offsetof(T, f), (k) * sizeof(void*))

static void numbering(void) {
  EXPECT_EQ("NCCL_ALGO_UNDEF", NCCL_ALGO_UNDEF, -1);
  EXPECT_EQ("NCCL_ALGO_TREE", NCCL_ALGO_TREE, 0);
  EXPECT_EQ("NCCL_ALGO_RING", NCCL_ALGO_RING, 1);
  EXPECT_EQ("NCCL_ALGO_COLLNET_DIRECT", NCCL_ALGO_COLLNET_DIRECT, 2);
  EXPECT_EQ("NCCL_ALGO_COLLNET_CHAIN", NCCL_ALGO_COLLNET_CHAIN, 3);
  EXPECT_EQ("NCCL_ALGO_NVLS", NCCL_ALGO_NVLS, 4);
  EXPECT_EQ("NCCL_ALGO_NVLS_TREE", NCCL_ALGO_NVLS_TREE, 5);
  EXPECT_EQ("NCCL_ALGO_PAT", NCCL_ALGO_PAT, 6);
  EXPECT_EQ("NCCL_NUM_ALGORITHMS", NCCL_NUM_ALGORITHMS, 7);
  EXPECT_EQ("NCCL_PROTO_UNDEF", NCCL_PROTO_UNDEF, -1);
  EXPECT_EQ("NCCL_PROTO_LL", NCCL_PROTO_LL, 0);
  EXPECT_EQ("NCCL_PROTO_LL128", NCCL_PROTO_LL128, 1);
  EXPECT_EQ("NCCL_PROTO_SIMPLE", NCCL_PROTO_SIMPLE, 2);
  EXPECT_EQ("NCCL_NUM_PROTOCOLS", NCCL_NUM_PROTOCOLS, 3);
  EXPECT_EQ("NCCL_ALGO_PROTO_IGNORE", NCCL_ALGO_PROTO_IGNORE, -1);
  EXPECT_EQ("NCCL_NUM_FUNCTIONS", NCCL_NUM_FUNCTIONS, 5);
  EXPECT_EQ("NCCL_HW_NVLINK", NCCL_HW_NVLINK, 0);
  EXPECT_EQ("NCCL_HW_PCI", NCCL_HW_PCI, 1);
  EXPECT_EQ("NCCL_HW_NET", NCCL_HW_NET, 2);
  EXPECT_EQ("NCCL_NUM_HW_LINKS", NCCL_NUM_HW_LINKS, 3);
  EXPECT_EQ("NCCL_VOLTA_COMPCAP_IDX", NCCL_VOLTA_COMPCAP_IDX, 0);
  EXPECT_EQ("NCCL_AMPERE_COMPCAP_IDX", NCCL_AMPERE_COMPCAP_IDX, 1);
  EXPECT_EQ("NCCL_HOPPER_COMPCAP_IDX", NCCL_HOPPER_COMPCAP_IDX, 2);
  EXPECT_EQ("NCCL_BLACKWELL_COMPCAP_IDX", NCCL_BLACKWELL_COMPCAP_IDX, 3);
  EXPECT_EQ("NCCL_NUM_COMPCAPS", NCCL_NUM_COMPCAPS, 4);
  EXPECT_EQ("NCCL_TUNING_SCALE_1NODE", NCCL_TUNING_SCALE_1NODE, 0);
  EXPECT_EQ("NCCL_TUNING_SCALE_2NODES", NCCL_TUNING_SCALE_2NODES, 1);
  EXPECT_EQ("NCCL_TUNING_SCALE_4NODES", NCCL_TUNING_SCALE_4NODES, 2);
  EXPECT_EQ("NCCL_NUM_TUNING_SCALES", NCCL_NUM_TUNING_SCALES, 3);
  /* The planner fills the table with its own names: they must be the ABI's numbers. */
  EXPECT_EQ("CHR_ALGO_TREE", CHR_ALGO_TREE, NCCL_ALGO_TREE);
  EXPECT_EQ("CHR_ALGO_RING", CHR_ALGO_RING, NCCL_ALGO_RING);
  EXPECT_EQ("CHR_ALGO_NVLS_TREE", CHR_ALGO_NVLS_TREE, NCCL_ALGO_NVLS_TREE);
  EXPECT_EQ("CHR_ALGO_PAT", CHR_ALGO_PAT, NCCL_ALGO_PAT);
  EXPECT_EQ("CHR_NUM_ALGOS", CHR_NUM_ALGOS, NCCL_NUM_ALGORITHMS);
  EXPECT_EQ("CHR_PROTO_SIMPLE", CHR_PROTO_SIMPLE, NCCL_PROTO_SIMPLE);
  EXPECT_EQ("CHR_NUM_PROTOS", CHR_NUM_PROTOS, NCCL_NUM_PROTOCOLS);
  EXPECT_EQ("ncclFuncAllReduce", ncclFuncAllReduce, 4);
}

static void structs(void) {
  SIZE(ncclNvlDomainInfo_v5_t, 12);
  OFF(ncclNvlDomainInfo_v5_t, nNvlDomains, 0);
  OFF(ncclNvlDomainInfo_v5_t, minRanksPerNvlDomain, 4);
  OFF(ncclNvlDomainInfo_v5_t, maxRanksPerNvlDomain, 8);
  SIZE(ncclNvlDomainInfo_v6_t, 12);
  SIZE(ncclTunerConstants_v5_t, 1152);
  OFF(ncclTunerConstants_v5_t, baseLatencies, 0);
  OFF(ncclTunerConstants_v5_t, hwLatencies, 168);
  OFF(ncclTunerConstants_v5_t, llMaxBws, 672);
  OFF(ncclTunerConstants_v5_t, perChMaxRingLL128Bws, 768);
  OFF(ncclTunerConstants_v5_t, perChMaxTreeLL128Bws, 864);
  OFF(ncclTunerConstants_v5_t, perChMaxTreeBws, 960);
  OFF(ncclTunerConstants_v5_t, perChMaxNVLSTreeBws, 1056);
  SIZE(ncclTunerConstants_v6_t, 1152);
  ncclTunerConstants_v6_t k;
  EXPECT_EQ("hwLatencies[1][0][0]", (char*)&k.hwLatencies[1][0][0] - (char*)&k, 168 + 21 * 8);
  EXPECT_EQ("perChMaxTreeBws[2][1]", (char*)&k.perChMaxTreeBws[2][1] - (char*)&k, 960 + 7 * 8);
}

static void tables(void) {
  SIZE(ncclTuner_v6_t, 40);
  SLOT(ncclTuner_v6_t, name, 0);
  SLOT(ncclTuner_v6_t, init, 1);
  SLOT(ncclTuner_v6_t, getCollInfo, 2);
  SLOT(ncclTuner_v6_t, finalize, 3);
  SLOT(ncclTuner_v6_t, getChunkSize, 4);
  SIZE(ncclTuner_v5_t, 32);
  SLOT(ncclTuner_v5_t, name, 0);
  SLOT(ncclTuner_v5_t, init, 1);
  SLOT(ncclTuner_v5_t, getCollInfo, 2);
  SLOT(ncclTuner_v5_t, finalize, 3);
  SIZE(ncclTuner_v4_t, 32);
  SLOT(ncclTuner_v4_t, init, 1);
  SLOT(ncclTuner_v4_t, getCollInfo, 2);
  SLOT(ncclTuner_v4_t, destroy, 3);
  SIZE(ncclTuner_v3_t, 32);
  SLOT(ncclTuner_v3_t, getCollInfo, 2);
  SLOT(ncclTuner_v3_t, destroy, 3);
  SIZE(ncclTuner_v2_t, 32);
  SLOT(ncclTuner_v2_t, getCollInfo, 2);
  SLOT(ncclTuner_v2_t, destroy, 3);
  SIZE(ncclTuner_t, sizeof(ncclTuner_v6_t));
}

int main(void) {
  numbering();
  structs();
  tables();
  return failures ? 1 : 0;
}
