/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_file.c: the topology at communicator init and for chorus-info (topo_file.h).
 *
 * This file gathers what the topology layer cannot reach itself (it sits below the CUDA driver and
 * the net plugin): the GPUs of the CUDA driver's device list and the NETs of the open net plugin.
 * Init pays for discovery when something asks for the topology (NCCL_TOPO_FILE, or a dump on this
 * rank) or when a rank with a GPU has opened the net plugin: its net devices are then ordered by the
 * topology (transport/net_devs.h, chrNetDevsFromTopo). A rank without a GPU or a plugin reads no
 * sysfs. A file is read and checked on every rank (each rank's init must fail on a bad file, not only
 * the dumping one's); a topology wanted only for the NICs never fails init. The model is freed at
 * the end of init.
 */
#include <stdlib.h>
#include <string.h>

#include "comm/topo_file.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "cuda/cuda_driver.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "topo/topo_discover.h"
#include "topo/topo_model.h"
#include "topo/topo_report.h"
#include "transport/net_devs.h"

#define CHR_TOPO_MAX_GPUS 64 /* CUDA devices looked at */
#define CHR_TOPO_MAX_NETS 64 /* plugin devices looked at */

/* The CUDA driver's devices; 0 without a driver. */
static int gatherGpus(int rank, int cudaDev, struct chrTopoGpuInput* gpus) {
  const struct chrCudaDriver* cu = chrCudaDriverGet();
  if (!cu || !cu->cuDeviceGet || !cu->cuDeviceGetAttribute) return 0;
  int n = 0;
  for (int dev = 0; dev < CHR_TOPO_MAX_GPUS; dev++) {
    chrCuDevice device;
    if (cu->cuDeviceGet(&device, dev) != CHR_CUDA_SUCCESS) break; /* past the last ordinal */
    int64_t busId = chrCudaDeviceBusId(dev);
    int major = 0, minor = 0, gdr = 0;
    if (busId < 0 || cu->cuDeviceGetAttribute(&major, CHR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device) != 0 ||
        cu->cuDeviceGetAttribute(&minor, CHR_CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device) != 0) {
      INFO(NCCL_GRAPH, "topology: CUDA device %d: no bus id or compute capability; left out", dev);
      continue;
    }
    if (cu->cuDeviceGetAttribute(&gdr, CHR_CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_SUPPORTED, device) != 0) gdr = 0;
    gpus[n++] = (struct chrTopoGpuInput){.busId = busId, .dev = dev, .sm = major * 10 + minor,
                                         .rank = dev == cudaDev ? rank : -1, .gdr = gdr != 0};
  }
  return n;
}

/* The open plugin's devices (props hold the strings the inputs point to); 0 without a plugin. */
static int gatherNets(struct chrNet* net, ncclNetProperties_v12_t* props, struct chrTopoNetInput* nets) {
  int ndev = 0, n = 0;
  if (!net || chrNetDevices(net, &ndev) != ncclSuccess) return 0;
  for (int dev = 0; dev < ndev && dev < CHR_TOPO_MAX_NETS; dev++) {
    memset(&props[n], 0, sizeof(props[n]));
    if (chrNetGetProperties(net, dev, &props[n]) != ncclSuccess) {
      INFO(NCCL_GRAPH, "topology: net device %d: getProperties failed; left out", dev);
      continue;
    }
    nets[n] = (struct chrTopoNetInput){
        .name = props[n].name, .pciPath = props[n].pciPath, .dev = dev, .speed = props[n].speed,
        .port = props[n].port, .gdr = (props[n].ptrSupport & (NCCL_PTR_CUDA | NCCL_PTR_DMABUF)) != 0,
        .guid = props[n].guid, .maxComms = props[n].maxComms};
    n++;
  }
  return n;
}

ncclResult_t chrCommTopoDiscover(struct chrNet* net, int rank, int cudaDev, struct chrXml** xml) {
  struct chrTopoGpuInput gpus[CHR_TOPO_MAX_GPUS];
  struct chrTopoNetInput nets[CHR_TOPO_MAX_NETS];
  ncclNetProperties_v12_t* props = calloc(CHR_TOPO_MAX_NETS, sizeof(*props));
  if (!props) return chrFail(ncclSystemError, "topology: out of memory");
  struct chrTopoDiscoverInput in = {.nGpus = gatherGpus(rank, cudaDev, gpus), .gpus = gpus,
                                    .nNets = gatherNets(net, props, nets), .nets = nets};
  ncclResult_t res = chrTopoDiscover(&in, xml);
  free(props);
  return res;
}

/* A GPU rank with the net plugin open takes its NICs from the topology (transport/net_devs.h);
 * whatever is missing keeps the plugin's order. */
static void orderNetDevs(struct ncclComm* comm, const struct chrTopoSystem* sys) {
  int ndev = 0;
  if (chrNetDevices(comm->net, &ndev) != ncclSuccess || ndev <= 0) {
    INFO(NCCL_INIT | NCCL_NET, "rank %d: the net plugin gives no device count; net devices keep the plugin's order",
         comm->rank);
    return;
  }
  if (chrNetDevsFromTopo(sys, comm->peers[comm->rank].busId, ndev, &comm->netDevs))
    INFO(NCCL_INIT | NCCL_NET, "rank %d uses %d net devices, in the topology's order", comm->rank, comm->netDevs.n);
  if (chrParamInt(CHR_P_CROSS_NIC) == 0 &&
      chrNetRailsFromTopo(sys, comm->peers[comm->rank].busId, ndev, &comm->netRails) == 0)
    INFO(NCCL_INIT | NCCL_NET, "rank %d: NCCL_CROSS_NIC=0, but its GPU is not in the topology: links send through its "
         "own NICs", comm->rank);
}

ncclResult_t chrCommTopoFile(struct ncclComm* comm) {
  const char* path = chrParamStr(CHR_P_TOPO_FILE);
  const char* dump = chrParamStr(CHR_P_TOPO_DUMP_FILE);
  int dumper = dump[0] && comm->rank == chrParamInt(CHR_P_TOPO_DUMP_FILE_RANK);
  int nics = comm->cudaDev >= 0 && comm->net != NULL && comm->peers[comm->rank].busId >= 0;
  if (!path[0] && !dumper && !nics) return ncclSuccess;
  /* Asked for (a file, a dump), the topology fails init when it cannot be had; wanted only for the
   * NICs, it never does. */
  int asked = path[0] || dumper;
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  if (path[0]) CHECK(chrXmlLoad(path, &xml));
  ncclResult_t res = chrCommTopoDiscover(comm->net, comm->rank, comm->cudaDev, &xml);
  if (res == ncclSuccess) res = chrTopoBuild(xml, NULL, &sys); /* owns xml from here, also on failure */
  else chrXmlFree(xml);
  if (res != ncclSuccess) {
    if (asked) return res;
    INFO(NCCL_INIT | NCCL_NET, "rank %d: no topology (%s); net devices keep the plugin's order", comm->rank,
         chrThreadLastError());
    chrClearLastError(); /* init goes on: the text is not its error */
    return ncclSuccess;
  }
  INFO(NCCL_INIT | NCCL_GRAPH, "topology %s: %d CPUs, %d GPUs, %d NETs", path[0] ? path : "discovered",
       sys->count[CHR_TOPO_CPU], sys->count[CHR_TOPO_GPU], sys->count[CHR_TOPO_NET]);
  if (nics) orderNetDevs(comm, sys);
  res = dumper ? chrXmlWriteFile(sys->xml, dump) : ncclSuccess;
  if (dumper && res == ncclSuccess) INFO(NCCL_INIT | NCCL_GRAPH, "topology written to %s", dump);
  chrTopoFree(sys);
  return res;
}

ncclResult_t chrCommTopoInfoLocal(const struct chrTopoInfoRequest* req, FILE* out) {
  struct chrNet* net = NULL;
  if (chrNetOpen(0, NULL, -1, &net) != ncclSuccess) {
    INFO(NCCL_GRAPH, "topology: no net plugin opens (%s): no NETs", chrThreadLastError());
    net = NULL;
  }
  struct chrXml* xml = NULL;
  ncclResult_t res = chrCommTopoDiscover(net, -1, -1, &xml);
  if (net) chrNetClose(net);
  if (res != ncclSuccess) return res;
  return chrTopoInfoXml(req, xml, "discovered", out);
}
