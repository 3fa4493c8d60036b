/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost_model.h: the planner's cost model of the host path, and its shape, which
 * `chorus-perf --calibrate` (tools/perf/calibrate.c) inverts to measure the constants.
 *
 * Per link kind (shm within a host, net across hosts) and algorithm (ring, tree) of the one host
 * protocol (SIMPLE), two constants: the latency of one hop in microseconds, and a bus bandwidth in GB/s
 * in nccl-tests' sense (algorithm bandwidth x the collective's bus factor). A collective on n ranks
 * then costs
 *     time_us = hops(algorithm, n) x latency + busFactor(collective, n) x bytes / (bandwidth x 1e3)
 * with ring hops 2(n-1) for all-reduce and n-1 for the others, tree hops 2 ceil(log2 n), and bus
 * factors 2(n-1)/n (all-reduce), (n-1)/n (all-gather, reduce-scatter) or 1 (broadcast, reduce). So at
 * large sizes the model's bus bandwidth is what chorus-perf's busbw column shows, and a fit of one
 * size sweep at one n gives both constants. Only plain C here: the tool includes this header too.
 */
#ifndef CHORUS_PLAN_COST_MODEL_H_
#define CHORUS_PLAN_COST_MODEL_H_

#include <math.h>
#include <stddef.h>
#include "config/cost_consts.h" /* the constants: struct chrCostModel */
#include "nccl.h"

/* Hops an all-reduce of `algo` waits for on n >= 2 ranks. */
static inline int chrCostAllReduceHops(int algo, int n) {
  return algo == CHR_COST_TREE ? 2 * (int)ceil(log2((double)n)) : 2 * (n - 1);
}
/* The all-reduce's bus factor (nccl-tests): bus bandwidth = algorithm bandwidth x this. */
static inline double chrCostAllReduceBusFactor(int n) { return 2.0 * (n - 1) / n; }

/* Names as they appear in parameter names (CHORUS_COST_<T>_<A>_SIMPLE_...): "SHM", "NET"; "RING", "TREE". */
static inline const char* chrCostTransportName(int t) { return t == CHR_COST_NET ? "NET" : "SHM"; }
static inline const char* chrCostAlgoName(int a) { return a == CHR_COST_TREE ? "TREE" : "RING"; }

/* Reads the model from the CHORUS_COST_* parameters (each was checked when the configuration loaded;
 * a value that is not above 0 here is an internal error). */
ncclResult_t chrCostModelRead(struct chrCostModel* model);

/* Estimated microseconds of collective `func` (ncclFunc_t: Broadcast, Reduce, AllGather,
 * ReduceScatter, AllReduce) with `algo` on n ranks over link kind `transport`, for `bytes` (the whole
 * buffer: for all-gather and reduce-scatter, n x the count); -1 when that algorithm does not run it. */
float chrCostEstimate(const struct chrCostModel* model, int transport, int algo, int func, int n, size_t bytes);

/* One transfer of `bytes` over one link (send/receive): one hop at the ring's constants. */
float chrCostTransfer(const struct chrCostModel* model, int transport, size_t bytes);

#endif /* CHORUS_PLAN_COST_MODEL_H_ */
