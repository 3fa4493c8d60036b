/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * algo_ids.h: algorithm and protocol ids, as the planner writes them into tasks and works and the
 * kernels read them. Numbering is NCCL's (the tuner plugin ABI and the profiler depend on it). A mask
 * has bit i set when algorithm (or protocol) i is allowed; config/algo_select.h parses NCCL_ALGO and
 * NCCL_PROTO into such masks.
 */
#ifndef CHORUS_HOSTDEV_ALGO_IDS_H_
#define CHORUS_HOSTDEV_ALGO_IDS_H_

#define CHR_ALGO_UNDEF (-1)
#define CHR_ALGO_TREE 0
#define CHR_ALGO_RING 1
#define CHR_ALGO_COLLNET_DIRECT 2
#define CHR_ALGO_COLLNET_CHAIN 3
#define CHR_ALGO_NVLS 4
#define CHR_ALGO_NVLS_TREE 5
#define CHR_ALGO_PAT 6
#define CHR_NUM_ALGOS 7

#define CHR_PROTO_UNDEF (-1)
#define CHR_PROTO_LL 0
#define CHR_PROTO_LL128 1
#define CHR_PROTO_SIMPLE 2
#define CHR_NUM_PROTOS 3

#define CHR_ALL_ALGOS ((1u << CHR_NUM_ALGOS) - 1)
#define CHR_ALL_PROTOS ((1u << CHR_NUM_PROTOS) - 1)

#endif /* CHORUS_HOSTDEV_ALGO_IDS_H_ */
