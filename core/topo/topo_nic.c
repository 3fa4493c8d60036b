/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_nic.c: NIC per channel, the GPUDirect decision, and the settings that steer both (topo_nic.h).
 *
 * "Local" is NCCL's: among the paths from a node to every node of a kind, those of the highest
 * bandwidth and, among them, the best type. Everything here reads the paths computed at build, so a
 * decision is a pure function of the model and its settings.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "topo/topo_nic.h"
#include "topo/topo_paths.h"

#define CHR_TOPO_MAX_CHANNELS 64 /* how far NCCL looks for the channel on which a GPU uses a NET */

/* The nodes of `type` local to `from`, in file order; their count. */
static int locals(const struct chrTopoSystem* sys, int from, int type, int* out) {
  float maxBw = 0;
  int minType = CHR_PATH_DIS, count = 0;
  for (int i = 0; i < sys->count[type]; i++) {
    const struct chrTopoPath* p = chrTopoPathOf(sys, from, sys->list[type][i]);
    if (p->type == CHR_PATH_DIS) continue;
    if (p->bw > maxBw || (p->bw == maxBw && p->type < minType)) {
      maxBw = p->bw;
      minType = p->type;
      count = 0;
    }
    if (p->bw == maxBw && p->type == minType) out[count++] = sys->list[type][i];
  }
  return count;
}

/* The low log2(pow2) bits of val, mirrored (NCCL spreads GPUs over a power-of-two NIC count so). */
static int mirrorBits(int val, int pow2) {
  int mirror = 0;
  for (int b = 1, mb = pow2 >> 1; b < pow2; b <<= 1, mb >>= 1)
    if (val & b) mirror |= mb;
  return mirror;
}

int chrTopoNetForChannel(const struct chrTopoSystem* sys, int gpu, int channel) {
  int nets[CHR_TOPO_MAX_NODES], gpus[CHR_TOPO_MAX_NODES];
  int netCount = locals(sys, gpu, CHR_TOPO_NET, nets);
  if (netCount == 0) return -1;
  int gpuCount = locals(sys, nets[0], CHR_TOPO_GPU, gpus);
  if (gpuCount == 0) gpuCount = 1;
  int perGpu = (netCount + gpuCount - 1) / gpuCount;
  if (sys->settings.policy == CHR_NETDEVS_ALL) perGpu = netCount;
  if (sys->settings.policy == CHR_NETDEVS_MAX)
    perGpu = sys->settings.policyMax < netCount ? sys->settings.policyMax : netCount;
  int index = sys->nodes[gpu].dev % gpuCount;
  if ((netCount & (netCount - 1)) == 0) index = mirrorBits(index, netCount);
  index += channel % perGpu;
  return nets[index % netCount];
}

int chrTopoLocalGpuOfNet(const struct chrTopoSystem* sys, int net) {
  int gpus[CHR_TOPO_MAX_NODES];
  int gpuCount = locals(sys, net, CHR_TOPO_GPU, gpus);
  for (int c = 0; c < CHR_TOPO_MAX_CHANNELS; c++)
    for (int g = 0; g < gpuCount; g++)
      if (chrTopoNetForChannel(sys, gpus[g], c) == net) return gpus[g];
  return -1;
}

static int hasNvlinkPeer(const struct chrTopoSystem* sys, int gpu) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
    int g = sys->list[CHR_TOPO_GPU][i];
    if (g != gpu && chrTopoPathOf(sys, gpu, g)->type <= CHR_PATH_NVL) return 1;
  }
  return 0;
}

int chrTopoCheckGdr(const struct chrTopoSystem* sys, int gpu, int net, int read) {
  const struct chrTopoNode *g = &sys->nodes[gpu], *n = &sys->nodes[net];
  if (!g->gdr || !n->gdr) return 0;
  if (read) {
    if (sys->settings.gdrRead == 0) return 0;
    if (sys->settings.gdrRead < 0 && g->sm < 80 && !hasNvlinkPeer(sys, gpu) && sys->count[CHR_TOPO_GPU] > 1)
      return 0;
  }
  int level = sys->settings.gdrLevel;
  if (level < 0) level = sys->settings.gdrC2c ? CHR_PATH_P2C : CHR_PATH_PXB;
  const struct chrTopoPath* p = chrTopoPathOf(sys, gpu, net);
  int distance = p->type;
  if (p->type == CHR_PATH_PXN && p->via >= 0) distance = chrTopoPathOf(sys, p->via, net)->type;
  return distance <= level;
}

int chrTopoNeedFlush(const struct chrTopoSystem* sys, int gpu, int net) {
  if (sys->settings.forceFlush || sys->nodes[gpu].sm < 90) return 1;
  /* From sm 90 the GPU orders the NIC's PCIe writes before its own later reads, unless its CPU link
   * is C2C and the NIC is close (PXB or nearer): data over PCIe, control over C2C, unordered. */
  if (chrTopoPathOf(sys, gpu, net)->type > CHR_PATH_PXB) return 0;
  for (int i = 0; i < sys->count[CHR_TOPO_CPU]; i++)
    if (chrTopoPathOf(sys, gpu, sys->list[CHR_TOPO_CPU][i])->type == CHR_PATH_C2C) return 1;
  return 0;
}

/* ---- settings -------------------------------------------------------------------------------- */

/* The syntax is config's (net_settings.h), checked when the configuration is loaded; these wrap it
 * for the callers that take a text of their own. */
_Static_assert((int)CHR_PATH_LOC == (int)CHR_GDR_LOC && (int)CHR_PATH_NVL == (int)CHR_GDR_NVL &&
                   (int)CHR_PATH_NVB == (int)CHR_GDR_NVB && (int)CHR_PATH_C2C == (int)CHR_GDR_C2C &&
                   (int)CHR_PATH_PIX == (int)CHR_GDR_PIX && (int)CHR_PATH_PXB == (int)CHR_GDR_PXB &&
                   (int)CHR_PATH_P2C == (int)CHR_GDR_P2C && (int)CHR_PATH_PXN == (int)CHR_GDR_PXN &&
                   (int)CHR_PATH_PHB == (int)CHR_GDR_PHB && (int)CHR_PATH_SYS == (int)CHR_GDR_SYS,
               "NCCL_NET_GDR_LEVEL's numbers are the path types");

ncclResult_t chrTopoParseGdrLevel(const char* text, int* level) {
  char why[256];
  if (chrConfigParseGdrLevel(text, level, why, sizeof(why)) == 0) return ncclSuccess;
  return chrFail(ncclInvalidUsage, "NCCL_NET_GDR_LEVEL=\"%s\" (%s) %s", text, chrParamSource(CHR_P_NET_GDR_LEVEL), why);
}

ncclResult_t chrTopoParseNetDevsPolicy(const char* text, int* policy, int* max) {
  char why[256];
  if (chrConfigParseNetDevsPolicy(text, policy, max, why, sizeof(why)) == 0) return ncclSuccess;
  return chrFail(ncclInvalidUsage, "NCCL_NETDEVS_POLICY=\"%s\" (%s) %s", text, chrParamSource(CHR_P_NETDEVS_POLICY),
                 why);
}

ncclResult_t chrTopoSettingsRead(struct chrTopoSettings* out) {
  struct chrTopoSettings s = {0};
  CHECK(chrTopoParseGdrLevel(chrParamStr(CHR_P_NET_GDR_LEVEL), &s.gdrLevel));
  CHECK(chrTopoParseNetDevsPolicy(chrParamStr(CHR_P_NETDEVS_POLICY), &s.policy, &s.policyMax));
  s.gdrRead = (int)chrParamInt(CHR_P_NET_GDR_READ);
  s.gdrC2c = (int)chrParamInt(CHR_P_NET_GDR_C2C);
  s.forceFlush = (int)chrParamInt(CHR_P_NET_FORCE_FLUSH);
  s.pxnDisable = (int)chrParamInt(CHR_P_PXN_DISABLE);
  s.pxnC2c = (int)chrParamInt(CHR_P_PXN_C2C);
  s.nvbDisable = (int)chrParamInt(CHR_P_NVB_DISABLE);
  *out = s;
  return ncclSuccess;
}
