/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_paths.h: the best path between every two nodes of a model, as NCCL types it.
 *
 * A path's type is the worst of its hops (PIX one PCIe switch, PXB several, PHB through a CPU's root
 * complex, SYS across CPUs, NVL NVLink, NVB NVLink through a GPU, ...) and its bandwidth the narrowest
 * link. Then, as NCCL does after its search: P2C where a GPU reaches its CPU by C2C and the NIC hangs
 * off that CPU; PXN where a GPU does better through an NVLink peer's NIC; and GPU<->NIC paths better
 * than PHB that GPUDirect may not use are routed through the GPU's CPU.
 */
#ifndef CHORUS_TOPO_PATHS_H_
#define CHORUS_TOPO_PATHS_H_

#include "topo/topo_model.h"

/* Fills sys->paths (chrTopoBuild calls it). */
ncclResult_t chrTopoComputePaths(struct chrTopoSystem* sys);

/* The path from one node to another. */
static inline const struct chrTopoPath* chrTopoPathOf(const struct chrTopoSystem* sys, int from, int to) {
  return &sys->paths[from * sys->nNodes + to];
}

#endif /* CHORUS_TOPO_PATHS_H_ */
