/* SPDX-License-Identifier: BSD-3-Clause */
/* net_devs.c: see net_devs.h. */
#include "transport/net_devs.h"

#include <stdio.h>
#include "bootstrap/peer_info.h"
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
#include "topo/topo_model.h"
#include "topo/topo_nic.h"
#include "transport/transport_ctx.h"

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

static int gpuNode(const struct chrTopoSystem* sys, int64_t busId) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++)
    if (sys->nodes[sys->list[CHR_TOPO_GPU][i]].id == busId) return sys->list[CHR_TOPO_GPU][i];
  return -1;
}

/* GPU node `gpu`'s devices per channel, with the GPUDirect bits of GPU node `gdrGpu` toward them,
 * into *out (names: their text for the log); 0 with *why set when the topology does not say. */
static int listFor(const struct chrTopoSystem* sys, int gpu, int gdrGpu, int nPluginDevs, struct chrNetDevs* out,
                   char* names, size_t size, char* why, size_t whySize) {
  /* chrTopoNetForChannel cycles with period netsPerGpu over distinct NETs: the list ends where the
   * cycle comes back to channel 0's NET. */
  int nets[CHR_NET_MAX_DEVS], n = 0;
  for (int c = 0; c < CHR_NET_MAX_DEVS; c++) {
    int net = chrTopoNetForChannel(sys, gpu, c);
    if (net < 0) {
      snprintf(why, whySize, "reaches no NET in the topology");
      return 0;
    }
    if (c > 0 && net == nets[0]) break;
    nets[n++] = net;
  }
  struct chrNetDevs devs = {.n = n};
  size_t used = 0;
  names[0] = '\0';
  for (int c = 0; c < n; c++) {
    devs.dev[c] = sys->nodes[nets[c]].dev;
    const int write = chrTopoCheckGdr(sys, gdrGpu, nets[c], 0);
    devs.gdr[c] = (unsigned char)((write ? CHR_NET_GDR_WRITE : 0) |
                                  (chrTopoCheckGdr(sys, gdrGpu, nets[c], 1) ? CHR_NET_GDR_READ : 0) |
                                  (write && !chrTopoNeedFlush(sys, gdrGpu, nets[c]) ? CHR_NET_GDR_NOFLUSH : 0));
    if (devs.dev[c] < 0 || devs.dev[c] >= nPluginDevs) {
      snprintf(why, whySize, "channel %d's NET has dev %d, not one of the net plugin's %d devices", c, devs.dev[c],
               nPluginDevs);
      return 0;
    }
    const char* name = chrTopoNodeAttr(sys, nets[c], "name");
    int w = snprintf(names + used, size - used, "%s%d:%d(%s%s%s%s)", c ? " " : "", c, devs.dev[c],
                     name ? name : "?", devs.gdr[c] & CHR_NET_GDR_WRITE ? ", gdr write" : "",
                     devs.gdr[c] & CHR_NET_GDR_READ ? ", gdr read" : "",
                     devs.gdr[c] & CHR_NET_GDR_NOFLUSH ? ", no flush" : "");
    if (w > 0 && (size_t)w < size - used) used += (size_t)w;
  }
  *out = devs;
  return 1;
}

int chrNetDevsFromTopo(const struct chrTopoSystem* sys, int64_t gpuBusId, int nPluginDevs, struct chrNetDevs* out) {
  char bus[32], names[512], why[160];
  chrTopoBusIdText(gpuBusId, bus, sizeof(bus));
  const int gpu = gpuNode(sys, gpuBusId);
  if (gpu < 0) {
    INFO(NCCL_INIT | NCCL_NET, "GPU %s: not in the topology; net devices keep the plugin's order", bus);
    return 0;
  }
  if (!listFor(sys, gpu, gpu, nPluginDevs, out, names, sizeof(names), why, sizeof(why))) {
    INFO(NCCL_INIT | NCCL_NET, "GPU %s: %s; net devices keep the plugin's order", bus, why);
    return 0;
  }
  INFO(NCCL_INIT | NCCL_NET, "GPU %s: net device per channel from the topology (channel:dev(name)): %s", bus, names);
  return 1;
}

int chrNetRailsFromTopo(const struct chrTopoSystem* sys, int64_t gpuBusId, int nPluginDevs, struct chrNetRails* out) {
  char bus[32], names[512], why[160];
  out->n = 0;
  const int own = gpuNode(sys, gpuBusId);
  if (own < 0) return 0;
  for (int i = 0; i < sys->count[CHR_TOPO_GPU] && out->n < CHR_NET_MAX_RAILS; i++) {
    const int gpu = sys->list[CHR_TOPO_GPU][i];
    chrTopoBusIdText(sys->nodes[gpu].id, bus, sizeof(bus));
    if (!listFor(sys, gpu, own, nPluginDevs, &out->devs[out->n], names, sizeof(names), why, sizeof(why))) {
      INFO(NCCL_INIT | NCCL_NET, "NCCL_CROSS_NIC=0: GPU %s %s; links to peers at its address use this GPU's NICs",
           bus, why);
      continue;
    }
    out->busId[out->n++] = sys->nodes[gpu].id;
    INFO(NCCL_INIT | NCCL_NET, "NCCL_CROSS_NIC=0: to a peer GPU at %s, sends go through (channel:dev(name)): %s", bus,
         names);
  }
  return out->n;
}

const struct chrNetDevs* chrNetDevsToward(const struct chrNetDevs* own, const struct chrNetRails* rails,
                                          int64_t peerBusId) {
  for (int i = 0; i < rails->n; i++)
    if (rails->busId[i] == peerBusId) return &rails->devs[i];
  return own;
}

unsigned chrNetDevGdr(const struct chrNetDevs* devs, int dev) {
  for (int i = 0; i < devs->n; i++)
    if (devs->dev[i] == dev) return devs->gdr[i];
  return 0;
}

const struct chrNetDevs* chrNetDevsOfLink(const struct chrTransportCtx* ctx, int sendRank, int recvRank) {
  return sendRank == ctx->rank ? chrNetDevsToward(ctx->netDevs, ctx->netRails, ctx->peers[recvRank].busId)
                               : ctx->netDevs;
}

int chrNetDevFor(const struct chrNetDevs* devs, int channel, int p2p, int sendRank, int recvRank) {
  if (devs->n <= 0) return 0;
  unsigned k = (unsigned)channel + (p2p ? (unsigned)sendRank + (unsigned)recvRank : 0u);
  return devs->dev[k % (unsigned)devs->n];
}
