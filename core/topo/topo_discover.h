/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_discover.h: the topology of the machine this process runs on, as NCCL detects it, in NCCL's
 * XML (topo_xml.h), optionally fused with a topology file.
 *
 * What is read: the PCI tree from sysfs (each device's realpath under bus/pci/devices, its class,
 * vendor/device ids, link speed and width, NUMA node; parents two path components at a time, so a
 * switch stands as its upstream port and root ports are skipped), the NUMA nodes
 * (devices/system/node/node<N>/cpumap) and the CPU (arch, CPUID vendor, family and model). What is
 * given: the GPUs and NETs, which this layer cannot ask for itself (the CUDA driver and the net
 * plugin sit above it; comm/topo_file.c gathers them). All sysfs paths go through one root
 * (CHORUS_SYSFS_ROOT, default /sys) so tests can feed a fake tree.
 *
 * Fusion follows NCCL: devices are matched by bus id (NETs by name); an element the file has keeps
 * its place and its attributes, and discovery only adds the attributes it lacks; what the file
 * lacks is added where sysfs puts it. A GPU or NET whose dev the file gives to another device is not
 * added (the file wins). Every byte read is untrusted: reads are bounded, a value that does not look
 * like what it should is skipped with an INFO, and nothing read from sysfs fails discovery; only
 * running out of the 256 elements NCCL's format allows does.
 */
#ifndef CHORUS_TOPO_DISCOVER_H_
#define CHORUS_TOPO_DISCOVER_H_

#include <stdint.h>
#include "nccl.h"
#include "topo/topo_xml.h"

struct chrTopoGpuInput {
  int64_t busId; /* (domain << 16 | bus << 8 | device) << 4 | function, as chrCudaDeviceBusId gives it */
  int dev;       /* CUDA device index (NCCL's NVML index) */
  int sm;        /* major * 10 + minor */
  int rank;      /* the rank on it, -1 for none */
  int gdr;       /* 1 when the GPU supports GPUDirect RDMA */
};

struct chrTopoNetInput {
  const char* name;    /* the plugin's device name (NETs are matched by it) */
  const char* pciPath; /* sysfs path of the device; NULL or not ending in a PCI address: a NIC on the CPU */
  int dev;             /* plugin device index */
  int64_t speed;       /* Mbps */
  int port;
  int gdr;             /* 1 when the plugin takes GPU memory (NCCL_PTR_CUDA or NCCL_PTR_DMABUF) */
  uint64_t guid;
  int maxComms;
};

struct chrTopoDiscoverInput {
  const char* sysfsRoot; /* NULL: CHORUS_SYSFS_ROOT */
  int nGpus;
  const struct chrTopoGpuInput* gpus;
  int nNets;
  const struct chrTopoNetInput* nets;
};

/* Completes *xml with what discovery finds, or makes a new tree (<system version="1">, named
 * "discovered") when *xml is NULL. On failure *xml is unchanged when it was given (the caller frees
 * it), and NULL when it was not. */
ncclResult_t chrTopoDiscover(const struct chrTopoDiscoverInput* in, struct chrXml** xml);

#endif /* CHORUS_TOPO_DISCOVER_H_ */
