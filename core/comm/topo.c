/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo.c: who shares a host with whom, and the ring order.
 *
 * Host identity: NCCL_HOSTID when set (tests act out several hosts on one machine with it), else the
 * host name plus the kernel boot id, so two containers with the same name on different machines
 * still differ.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "comm/topo.h"
#include "commstate/comm.h"
#include "config/param.h"
#include "log/log.h"

uint64_t chrHash64(const void* data, size_t len) {
  /* FNV-1a, then a final mix so similar strings spread. Not cryptographic. */
  const unsigned char* p = data;
  uint64_t h = 0xcbf29ce484222325ull;
  for (size_t i = 0; i < len; i++) { h ^= p[i]; h *= 0x100000001b3ull; }
  h ^= h >> 33; h *= 0xff51afd7ed558ccdull; h ^= h >> 33;
  return h;
}

void chrHostIdentity(char* out, size_t len) {
  const char* forced = chrParamStr(CHR_P_HOSTID);
  if (forced[0]) { snprintf(out, len, "%s", forced); return; }
  char host[256] = "unknown";
  gethostname(host, sizeof(host) - 1);
  char boot[64] = "";
  FILE* f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f) {
    if (fgets(boot, sizeof(boot), f) == NULL) boot[0] = '\0';
    fclose(f);
    boot[strcspn(boot, "\n")] = '\0';
  }
  snprintf(out, len, "%s%s%s", host, boot[0] ? "|" : "", boot);
}

/* 1 when no two ranks of this host may run on one CPU (util/cpu_mask.h). */
static int ownCores(const struct ncclComm* comm) {
  const int me = comm->rank, node = comm->nodeOfRank[me];
  for (int a = 0; a < comm->nRanks; a++) {
    if (comm->nodeOfRank[a] != node) continue;
    if (!comm->peers[a].cpus.known) return 0;
    for (int b = a + 1; b < comm->nRanks; b++)
      if (comm->nodeOfRank[b] == node && !chrCpuMasksDisjoint(&comm->peers[a].cpus, &comm->peers[b].cpus)) return 0;
  }
  return 1;
}

ncclResult_t chrTopoCompute(struct ncclComm* comm) {
  int n = comm->nRanks;
  comm->nodeOfRank = calloc((size_t)n, sizeof(int));
  comm->ringOrder = calloc((size_t)n, sizeof(int));
  int linksOk = 1;
  for (int k = 0; k < CHR_P2P_CONNS; k++) {
    comm->p2pSend[k] = calloc((size_t)n, sizeof(struct chrLink*));
    comm->p2pRecv[k] = calloc((size_t)n, sizeof(struct chrLink*));
    linksOk &= comm->p2pSend[k] != NULL && comm->p2pRecv[k] != NULL;
  }
  uint64_t* nodeHash = calloc((size_t)n, sizeof(uint64_t));
  if (!comm->nodeOfRank || !comm->ringOrder || !linksOk || !nodeHash) {
    free(nodeHash);
    return chrFail(ncclSystemError, "out of memory computing topology for %d ranks", n);
  }
  int nNodes = 0;
  for (int r = 0; r < n; r++) {
    int node = -1;
    for (int k = 0; k < nNodes; k++)
      if (nodeHash[k] == comm->peers[r].hostHash) { node = k; break; }
    if (node < 0) { node = nNodes++; nodeHash[node] = comm->peers[r].hostHash; }
    comm->nodeOfRank[r] = node;
  }
  comm->nNodes = nNodes;
  free(nodeHash);
  comm->ownCoreSpinNs = ownCores(comm) ? (uint64_t)chrParamInt(CHR_P_OWN_CORE_SPIN_US) * 1000ull : 0;
  /* Ring: ranks grouped by node (node order of first appearance, rank order inside a node), so a
   * ring crosses between hosts only nNodes times. */
  int pos = 0;
  for (int node = 0; node < nNodes; node++)
    for (int r = 0; r < n; r++)
      if (comm->nodeOfRank[r] == node) comm->ringOrder[pos++] = r;
  int myPos = 0;
  for (int i = 0; i < n; i++)
    if (comm->ringOrder[i] == comm->rank) myPos = i;
  for (int c = 0; c < CHR_MAX_CHANNELS; c++) {
    struct chrChannel* ch = &comm->channels[c];
    ch->id = c;
    ch->ringPrev = comm->ringOrder[(myPos + n - 1) % n];
    ch->ringNext = comm->ringOrder[(myPos + 1) % n];
  }
  INFO(NCCL_INIT | NCCL_GRAPH, "comm %p rank %d nRanks %d nNodes %d ring prev %d next %d; %s", (void*)comm,
       comm->rank, n, nNodes, comm->channels[0].ringPrev, comm->channels[0].ringNext,
       comm->ownCoreSpinNs ? "local ranks on their own CPUs: idle polls without yielding" : "local ranks may share CPUs");
  return ncclSuccess;
}
