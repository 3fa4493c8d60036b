/* SPDX-License-Identifier: BSD-3-Clause */
/* net_devs.c: see net_devs.h. */
#include "transport/net_devs.h"

#include <stdio.h>
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "topo/topo_model.h"
#include "topo/topo_nic.h"

ncclResult_t chrNetDevsChoose(struct chrNet* net, int rank, struct chrNetDevs* out) {
  int ndev = 0, policy = 0, max = 0;
  out->n = 0;
  CHECK(chrTopoParseNetDevsPolicy(chrParamStr(CHR_P_NETDEVS_POLICY), &policy, &max));
  CHECK(chrNetDevices(net, &ndev));
  if (ndev <= 0) return chrFail(ncclSystemError, "net plugin: no device");
  int n = ndev < CHR_NET_MAX_DEVS ? ndev : CHR_NET_MAX_DEVS;
  if (policy == CHR_NETDEVS_MAX && max < n) n = max;
  char names[256] = "";
  size_t used = 0;
  for (int d = 0; d < n; d++) {
    out->dev[d] = d;
    ncclNetProperties_v12_t props;
    const char* name = chrNetGetProperties(net, d, &props) == ncclSuccess && props.name ? props.name : "?";
    int w = snprintf(names + used, sizeof(names) - used, "%s%d:%s", d ? " " : "", d, name);
    if (w > 0 && (size_t)w < sizeof(names) - used) used += (size_t)w;
  }
  out->n = n;
  INFO(NCCL_INIT | NCCL_NET, "rank %d uses %d of the net plugin's %d devices (NCCL_NETDEVS_POLICY=%s): %s", rank, n,
       ndev, chrParamStr(CHR_P_NETDEVS_POLICY), names);
  return ncclSuccess;
}

int chrNetDevsFromTopo(const struct chrTopoSystem* sys, int64_t gpuBusId, int nPluginDevs, struct chrNetDevs* out) {
  char bus[32];
  chrTopoBusIdText(gpuBusId, bus, sizeof(bus));
  int gpu = -1;
  for (int i = 0; i < sys->count[CHR_TOPO_GPU] && gpu < 0; i++)
    if (sys->nodes[sys->list[CHR_TOPO_GPU][i]].id == gpuBusId) gpu = sys->list[CHR_TOPO_GPU][i];
  if (gpu < 0) {
    INFO(NCCL_INIT | NCCL_NET, "GPU %s: not in the topology; net devices keep the plugin's order", bus);
    return 0;
  }
  /* chrTopoNetForChannel cycles with period netsPerGpu over distinct NETs: the list ends where the
   * cycle comes back to channel 0's NET. */
  int nets[CHR_NET_MAX_DEVS], n = 0;
  for (int c = 0; c < CHR_NET_MAX_DEVS; c++) {
    int net = chrTopoNetForChannel(sys, gpu, c);
    if (net < 0) {
      INFO(NCCL_INIT | NCCL_NET, "GPU %s: reaches no NET in the topology; net devices keep the plugin's order", bus);
      return 0;
    }
    if (c > 0 && net == nets[0]) break;
    nets[n++] = net;
  }
  struct chrNetDevs devs = {.n = n};
  char names[512] = "";
  size_t used = 0;
  for (int c = 0; c < n; c++) {
    devs.dev[c] = sys->nodes[nets[c]].dev;
    devs.gdr[c] = (unsigned char)((chrTopoCheckGdr(sys, gpu, nets[c], 0) ? CHR_NET_GDR_WRITE : 0) |
                                  (chrTopoCheckGdr(sys, gpu, nets[c], 1) ? CHR_NET_GDR_READ : 0));
    if (devs.dev[c] < 0 || devs.dev[c] >= nPluginDevs) {
      INFO(NCCL_INIT | NCCL_NET, "GPU %s: channel %d's NET has dev %d, not one of the net plugin's %d devices; "
           "net devices keep the plugin's order", bus, c, devs.dev[c], nPluginDevs);
      return 0;
    }
    const char* name = chrTopoNodeAttr(sys, nets[c], "name");
    int w = snprintf(names + used, sizeof(names) - used, "%s%d:%d(%s%s%s)", c ? " " : "", c, devs.dev[c],
                     name ? name : "?", devs.gdr[c] & CHR_NET_GDR_WRITE ? ", gdr write" : "",
                     devs.gdr[c] & CHR_NET_GDR_READ ? ", gdr read" : "");
    if (w > 0 && (size_t)w < sizeof(names) - used) used += (size_t)w;
  }
  *out = devs;
  INFO(NCCL_INIT | NCCL_NET, "GPU %s: net device per channel from the topology (channel:dev(name)): %s", bus, names);
  return 1;
}

unsigned chrNetDevGdr(const struct chrNetDevs* devs, int dev) {
  for (int i = 0; i < devs->n; i++)
    if (devs->dev[i] == dev) return devs->gdr[i];
  return 0;
}

int chrNetDevFor(const struct chrNetDevs* devs, int channel, int p2p, int sendRank, int recvRank) {
  if (devs->n <= 0) return 0;
  unsigned k = (unsigned)channel + (p2p ? (unsigned)sendRank + (unsigned)recvRank : 0u);
  return devs->dev[k % (unsigned)devs->n];
}
