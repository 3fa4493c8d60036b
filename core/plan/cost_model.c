/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * cost_model.c: the planner's cost model (the formulas are in cost_model.h): reading its constants
 * from the CHORUS_COST_* parameters, and the estimate of one collective.
 */
#include "plan/cost_model.h"

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/common.h"

/* The parameter of each constant: [transport][algorithm][0 latency, 1 bandwidth]. */
static const chrParamId costParams[CHR_COST_TRANSPORTS][CHR_COST_ALGOS][2] = {
    [CHR_COST_SHM][CHR_COST_RING] = {CHR_P_COST_SHM_RING_SIMPLE_LATENCY_US, CHR_P_COST_SHM_RING_SIMPLE_BANDWIDTH_GBS},
    [CHR_COST_SHM][CHR_COST_TREE] = {CHR_P_COST_SHM_TREE_SIMPLE_LATENCY_US, CHR_P_COST_SHM_TREE_SIMPLE_BANDWIDTH_GBS},
    [CHR_COST_NET][CHR_COST_RING] = {CHR_P_COST_NET_RING_SIMPLE_LATENCY_US, CHR_P_COST_NET_RING_SIMPLE_BANDWIDTH_GBS},
    [CHR_COST_NET][CHR_COST_TREE] = {CHR_P_COST_NET_TREE_SIMPLE_LATENCY_US, CHR_P_COST_NET_TREE_SIMPLE_BANDWIDTH_GBS},
};

ncclResult_t chrCostModelRead(struct chrCostModel* model) {
  if (model == NULL) return chrFail(ncclInternalError, "chrCostModelRead: model is NULL");
  for (int t = 0; t < CHR_COST_TRANSPORTS; t++)
    for (int a = 0; a < CHR_COST_ALGOS; a++) {
      double lat = chrParamNumber(costParams[t][a][0]);
      double bw = chrParamNumber(costParams[t][a][1]);
      /* config_check.c refused anything else when it loaded them, so this is a bug, not a setting. */
      if (!(lat > 0) || !(bw > 0))
        return chrFail(ncclInternalError, "cost model: %s='%s' / %s='%s' passed the config check but are not above 0",
                       chrParamName(costParams[t][a][0]), chrParamStr(costParams[t][a][0]),
                       chrParamName(costParams[t][a][1]), chrParamStr(costParams[t][a][1]));
      model->e[t][a].latencyUs = (float)lat;
      model->e[t][a].busGBs = (float)bw;
    }
  return ncclSuccess;
}

float chrCostEstimate(const struct chrCostModel* model, int transport, int algo, int func, int n, size_t bytes) {
  if (!model || transport < 0 || transport >= CHR_COST_TRANSPORTS || algo < 0 || algo >= CHR_COST_ALGOS || n < 2)
    return -1.0f;
  const struct chrCostEntry* c = &model->e[transport][algo];
  if (!(c->busGBs > 0)) return -1.0f; /* a model never read (init reads it): nothing to estimate with */
  double b = (double)bytes / (c->busGBs * 1e3); /* microseconds for the whole buffer at the bus bandwidth */
  if (algo == CHR_COST_TREE) {
    if (func != ncclFuncAllReduce) return -1.0f;
    return (float)(chrCostAllReduceHops(CHR_COST_TREE, n) * c->latencyUs + chrCostAllReduceBusFactor(n) * b);
  }
  switch (func) {
    case ncclFuncAllReduce:
      return (float)(chrCostAllReduceHops(CHR_COST_RING, n) * c->latencyUs + chrCostAllReduceBusFactor(n) * b);
    case ncclFuncAllGather:
    case ncclFuncReduceScatter: return (float)((n - 1) * c->latencyUs + (double)(n - 1) / n * b);
    case ncclFuncBroadcast:
    case ncclFuncReduce: return (float)((n - 1) * c->latencyUs + b);
    default: return -1.0f;
  }
}

float chrCostTransfer(const struct chrCostModel* model, int transport, size_t bytes) {
  if (!model || transport < 0 || transport >= CHR_COST_TRANSPORTS) return -1.0f;
  const struct chrCostEntry* c = &model->e[transport][CHR_COST_RING];
  if (!(c->busGBs > 0)) return -1.0f;
  return (float)(c->latencyUs + (double)bytes / (c->busGBs * 1e3));
}
