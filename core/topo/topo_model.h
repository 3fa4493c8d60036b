/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_model.h: one host's devices and the links between them, built from a topology XML tree.
 *
 * Nodes are NCCL's (GPU, PCI switch, NVSwitch, CPU = NUMA domain, NIC = PCI card, NET = one plugin
 * device); a GPU here is the physical device (NCCL's DEV and GPU in one: Chorus has one rank per
 * GPU). Links are directional, in GB/s, and adding a link that exists (same remote, same type) adds
 * bandwidth, as NCCL does. Bandwidths follow NCCL's rules: PCIe width x per-lane rate / 80 (the rate
 * found by prefix match of link_speed, unknown 60 = Gen3), NVLink count x per-link rate by sm,
 * CPU-CPU per vendor and model, NET speed (Mbps) / 8000, C2C bw x count / 1000, LOC 5000.
 * A built model never changes; paths (topo_paths.h) are computed once over it.
 */
#ifndef CHORUS_TOPO_MODEL_H_
#define CHORUS_TOPO_MODEL_H_

#include <stdint.h>
#include "nccl.h"
#include "config/net_settings.h"
#include "topo/topo_xml.h"

enum chrTopoNodeType { CHR_TOPO_GPU, CHR_TOPO_PCI, CHR_TOPO_NVS, CHR_TOPO_CPU, CHR_TOPO_NIC, CHR_TOPO_NET,
                       CHR_TOPO_NODE_TYPES };

/* Link types carry the number of the path type they start (NCCL's convention). */
enum chrTopoLinkType { CHR_LINK_LOC = 0, CHR_LINK_NVL = 1, CHR_LINK_C2C = 3, CHR_LINK_PCI = 4, CHR_LINK_SYS = 9,
                       CHR_LINK_NET = 10 };

/* Path types, smaller is closer (NCCL's order and names). */
enum chrTopoPathType { CHR_PATH_LOC, CHR_PATH_NVL, CHR_PATH_NVB, CHR_PATH_C2C, CHR_PATH_PIX, CHR_PATH_PXB,
                       CHR_PATH_P2C, CHR_PATH_PXN, CHR_PATH_PHB, CHR_PATH_SYS, CHR_PATH_NET, CHR_PATH_DIS };

#define CHR_TOPO_MAX_NODES (CHR_XML_MAX_NODES + 1) /* an element at most makes one node; + the NVSwitch */
#define CHR_TOPO_MAX_LINKS 128
#define CHR_TOPO_LOC_BW 5000.0f

struct chrTopoLink {
  int type;   /* enum chrTopoLinkType */
  float bw;   /* GB/s */
  int remote; /* node index */
};

struct chrTopoNode {
  int type;   /* enum chrTopoNodeType */
  int elem;   /* its XML element (the <gpu>, <pci>, <cpu>, <nic> or <net>); -1 for the NVSwitch */
  int cpu;    /* the CPU node it hangs under; -1 for the NVSwitch */
  int64_t id; /* bus id as a number (GPU, PCI, NIC; -1 for a NIC under a CPU), numaid (CPU), dev (NET) */
  int nLinks;
  struct chrTopoLink links[CHR_TOPO_MAX_LINKS];
  /* GPU: dev = NVML index, rank (-1: none), sm, gdr. NET: dev = plugin index, gdr, speed (Mbps). */
  int dev, rank, sm, gdr;
  int64_t speed;
  float sysBw; /* CPU: bandwidth of its links to the other CPUs */
};

struct chrTopoPath {
  int type;  /* enum chrTopoPathType; CHR_PATH_DIS when unreachable */
  float bw;  /* the narrowest link on the way */
  int hops;
  int via;   /* PXN: the GPU whose NIC path this one borrows; else -1 */
};

/* The parameters that steer paths, NIC choice and GPUDirect (params.def; topo_nic.c reads them;
 * config/net_settings.h has the syntax of the two that have one, and enum chrNetDevsPolicy). */
struct chrTopoSettings {
  int gdrLevel;   /* NCCL_NET_GDR_LEVEL as a path type; -1: the default (P2C with gdrC2c, else PXB) */
  int gdrRead;    /* NCCL_NET_GDR_READ: 0 no, 1 yes, < 0 by sm (yes from sm 80) */
  int gdrC2c;     /* NCCL_NET_GDR_C2C */
  int forceFlush; /* NCCL_NET_FORCE_FLUSH */
  int policy;     /* NCCL_NETDEVS_POLICY: enum chrNetDevsPolicy */
  int policyMax;  /* N of MAX:N */
  int pxnDisable; /* NCCL_PXN_DISABLE */
  int pxnC2c;     /* NCCL_PXN_C2C */
  int nvbDisable; /* NCCL_NVB_DISABLE */
};

struct chrTopoSystem {
  struct chrTopoSettings settings; /* those the paths were computed with */
  struct chrXml* xml; /* owned: the tree the model was built from, written back by chrXmlWrite */
  int nNodes;
  struct chrTopoNode nodes[CHR_TOPO_MAX_NODES];
  int count[CHR_TOPO_NODE_TYPES];
  int list[CHR_TOPO_NODE_TYPES][CHR_TOPO_MAX_NODES]; /* node indices of each type, in file order */
  struct chrTopoPath* paths; /* nNodes x nNodes, [from * nNodes + to]; topo_paths.c fills it */
};

/* Builds the model from `xml`, which it takes over (freed with the system, also on failure). Fails
 * with ncclInvalidUsage and "file:line: why" on a version other than 1, a missing required attribute
 * or one that is not a number, a bus id used twice or malformed, two GPUs or NETs with one dev, an
 * nvlink or pcilink naming a device that is not in the file. Paths are computed too (topo_paths.h),
 * with `settings`, or the configuration's when NULL. */
ncclResult_t chrTopoBuild(struct chrXml* xml, const struct chrTopoSettings* settings, struct chrTopoSystem** out);
/* The settings of the current configuration; ncclInvalidUsage on a value that does not parse. */
ncclResult_t chrTopoSettingsRead(struct chrTopoSettings* out);
void chrTopoFree(struct chrTopoSystem* sys);

/* Offline completion (chorus-info --topo): what detection would add on the machine, with stand-in
 * values, since most published files name only bus ids and classes. See topo_fill.c. */
struct chrTopoFillOptions {
  int sm;               /* sm of the GPUs added */
  int64_t netSpeed;     /* Mbps of the NETs added */
  const char* leafClass;/* class given to leaf <pci> elements that have none; NULL: none */
  int gpuPerSwitch;     /* 1: one GPU beside the NICs of each switch that has NICs and no GPU */
};
ncclResult_t chrTopoFill(struct chrXml* xml, const struct chrTopoFillOptions* opt);

/* Helpers shared by the topo files. */
const char* chrTopoPathName(int type);          /* "PIX"; "?" out of range */
int chrTopoPathLookup(const char* name);        /* the type of "PIX", -1 when none */
const char* chrTopoNodeBusId(const struct chrTopoSystem* sys, int node); /* the pci's busid, or "" */
const char* chrTopoNodeAttr(const struct chrTopoSystem* sys, int node, const char* key); /* NULL if none */
float chrTopoPciBw(const char* linkSpeed, const char* linkWidth); /* GB/s of a PCIe link */
float chrTopoNvlinkBw(int sm);                  /* GB/s of one NVLink */
int chrTopoParseBusId(const char* text, int64_t* out); /* 0 when it is dddd:bb:dd.f (hex) */
void chrTopoBusIdText(int64_t id, char* out, size_t cap); /* the reverse: dddd:bb:dd.f, lower case */

#endif /* CHORUS_TOPO_MODEL_H_ */
