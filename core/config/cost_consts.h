/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost_consts.h: the constants of the planner's cost model (plan/cost_model.h), as the CHORUS_COST_*
 * parameters give them: a latency per hop and a bus bandwidth per link kind and algorithm.
 *
 * Plain data, here below the communicator so that struct ncclComm (commstate/comm.h) holds a copy
 * without including the planner. Reading and using them stays in plan/cost_model.c.
 */
#ifndef CHORUS_CONFIG_COST_CONSTS_H_
#define CHORUS_CONFIG_COST_CONSTS_H_

enum { CHR_COST_SHM = 0, CHR_COST_NET = 1, CHR_COST_TRANSPORTS = 2 };
enum { CHR_COST_RING = 0, CHR_COST_TREE = 1, CHR_COST_ALGOS = 2 };

struct chrCostEntry {
  float latencyUs; /* per hop */
  float busGBs;    /* bus bandwidth */
};

struct chrCostModel {
  struct chrCostEntry e[CHR_COST_TRANSPORTS][CHR_COST_ALGOS];
};

#endif /* CHORUS_CONFIG_COST_CONSTS_H_ */
