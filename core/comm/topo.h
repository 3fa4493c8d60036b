/* SPDX-License-Identifier: BSD-3-Clause */
/* topo.h: host identity, nodes and rings (comm/topo.c). */
#ifndef CHORUS_TOPO_H_
#define CHORUS_TOPO_H_

#include <stddef.h>
#include <stdint.h>
#include "nccl.h"

struct ncclComm;
uint64_t chrHash64(const void* data, size_t len);
void chrHostIdentity(char* out, size_t len);
/* From comm->peers: nodes (by host hash), ring order, each channel's ring neighbours. */
ncclResult_t chrTopoCompute(struct ncclComm* comm);

#endif
