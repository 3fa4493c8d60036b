/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_file.h: NCCL_TOPO_FILE and NCCL_TOPO_DUMP_FILE at communicator init.
 *
 * Chorus does not discover the topology yet (docs/design.md, "Topology"): a topology file given with
 * NCCL_TOPO_FILE is read and checked at every init, so a file that does not parse, or names devices
 * that do not exist, fails init with its file:line as NCCL's does, and rank NCCL_TOPO_DUMP_FILE_RANK
 * writes it back to NCCL_TOPO_DUMP_FILE. Nothing at run time uses the model yet.
 */
#ifndef CHORUS_COMM_TOPO_FILE_H_
#define CHORUS_COMM_TOPO_FILE_H_

#include "comm/comm.h"

ncclResult_t chrCommTopoFile(struct ncclComm* comm);

#endif /* CHORUS_COMM_TOPO_FILE_H_ */
