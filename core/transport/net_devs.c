/* SPDX-License-Identifier: BSD-3-Clause */
/* net_devs.c: see net_devs.h. */
#include "transport/net_devs.h"

#include <stdio.h>
#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "plugin/net_plugin.h"
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

int chrNetDevFor(const struct chrNetDevs* devs, int channel, int p2p, int sendRank, int recvRank) {
  if (devs->n <= 0) return 0;
  unsigned k = (unsigned)channel + (p2p ? (unsigned)sendRank + (unsigned)recvRank : 0u);
  return devs->dev[k % (unsigned)devs->n];
}
