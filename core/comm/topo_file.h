/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_file.h: the topology at communicator init (NCCL_TOPO_FILE, NCCL_TOPO_DUMP_FILE), and the
 * discovered topology of this machine for chorus-info --topo without a file.
 *
 * Discovery (topo/topo_discover.h) reads sysfs; the GPUs come from the CUDA driver's device list
 * (none without a driver) and the NICs from the net plugin's getProperties when one is open. With
 * NCCL_TOPO_FILE the file's elements win and discovery fills what they lack, as NCCL fuses them; a
 * file that does not parse or names devices that do not exist fails init with its file:line. Rank
 * NCCL_TOPO_DUMP_FILE_RANK writes the fused (or, without a file, the discovered) topology to
 * NCCL_TOPO_DUMP_FILE. A rank with a GPU and the net plugin open also orders its net devices by the
 * topology (the file fused with discovery, or discovery alone), NCCL's NIC per channel first; when
 * that cannot be done the plugin's order stays, with an INFO line. Nothing else uses the model yet
 * (docs/design.md, "Topology").
 */
#ifndef CHORUS_COMM_TOPO_FILE_H_
#define CHORUS_COMM_TOPO_FILE_H_

#include <stdio.h>
#include "nccl.h"

struct ncclComm;
struct chrNet;
struct chrXml;
struct chrTopoInfoRequest;

/* At init, after the net plugin is opened (when it is) and its devices chosen: nothing unless
 * NCCL_TOPO_FILE or a dump for this rank is asked for, or the rank has a GPU and the plugin is open;
 * then load, discover, fuse, check, order the net devices, dump. */
ncclResult_t chrCommTopoFile(struct ncclComm* comm);

/* Completes *xml (a file's tree, or NULL for a new one) with this machine: sysfs, the CUDA driver's
 * GPUs (the one of CUDA device `cudaDev` carries `rank`; -1: none), the NICs of `net` (NULL: none). */
ncclResult_t chrCommTopoDiscover(struct chrNet* net, int rank, int cudaDev, struct chrXml** xml);

/* chorus-info --topo without a file: this machine's topology, its NICs from the net plugin
 * NCCL_NET_PLUGIN opens (none when none opens), printed as chrTopoInfo prints a file's. */
ncclResult_t chrCommTopoInfoLocal(const struct chrTopoInfoRequest* req, FILE* out);

#endif /* CHORUS_COMM_TOPO_FILE_H_ */
