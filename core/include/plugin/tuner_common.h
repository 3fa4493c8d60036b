/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * plugin/tuner_common.h: numbering and constants shared by every tuner plugin ABI version (v2 .. v6).
 *
 * Frozen. Each versioned header (tuner_v2.h .. tuner_v6.h) includes this file, so any number of them
 * can be included into one translation unit (a tuner that exports several versions does that).
 *
 * The cost table a tuner edits is a float[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS]: row = algorithm,
 * column = protocol, both numbered as below. These numbers are part of the ABI: the profiler and the
 * net attributes use the same ones.
 */
#ifndef CHORUS_PLUGIN_TUNER_COMMON_H_
#define CHORUS_PLUGIN_TUNER_COMMON_H_

#include "plugin/common.h"

/* Algorithms (rows of the cost table). */
#define NCCL_ALGO_UNDEF (-1)
#define NCCL_ALGO_TREE 0
#define NCCL_ALGO_RING 1
#define NCCL_ALGO_COLLNET_DIRECT 2
#define NCCL_ALGO_COLLNET_CHAIN 3
#define NCCL_ALGO_NVLS 4
#define NCCL_ALGO_NVLS_TREE 5
#define NCCL_ALGO_PAT 6
#define NCCL_NUM_ALGORITHMS 7

/* Protocols (columns of the cost table). */
#define NCCL_PROTO_UNDEF (-1)
#define NCCL_PROTO_LL 0
#define NCCL_PROTO_LL128 1
#define NCCL_PROTO_SIMPLE 2
#define NCCL_NUM_PROTOCOLS 3

/* A cost-table entry holding this value cannot be used for the call (not supported by the core, or
 * removed by NCCL_ALGO / NCCL_PROTO). A tuner may write it to forbid an entry; it must never turn such
 * an entry into a non-negative one. */
#define NCCL_TUNING_IGNORE (-1.0)
#define NCCL_ALGO_PROTO_IGNORE NCCL_TUNING_IGNORE

/* Collectives that go through algorithm selection: collType of getCollInfo is one of
 * ncclFuncBroadcast .. ncclFuncAllReduce (0 .. 4). */
#define NCCL_NUM_FUNCTIONS 5

/* First index of ncclTunerConstants_v5_t.hwLatencies: the kind of link. */
#define NCCL_HW_NVLINK 0
#define NCCL_HW_PCI 1
#define NCCL_HW_NET 2
#define NCCL_NUM_HW_LINKS 3

/* First index of the bandwidth tables: GPU generation. */
#define NCCL_VOLTA_COMPCAP_IDX 0
#define NCCL_AMPERE_COMPCAP_IDX 1
#define NCCL_HOPPER_COMPCAP_IDX 2
#define NCCL_BLACKWELL_COMPCAP_IDX 3
#define NCCL_NUM_COMPCAPS 4

/* Second index of the bandwidth tables: how many nodes the communicator spans. */
#define NCCL_TUNING_SCALE_1NODE 0
#define NCCL_TUNING_SCALE_2NODES 1
#define NCCL_TUNING_SCALE_4NODES 2
#define NCCL_NUM_TUNING_SCALES 3

#endif /* CHORUS_PLUGIN_TUNER_COMMON_H_ */
