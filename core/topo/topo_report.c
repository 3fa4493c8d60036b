/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_report.c: chorus-info --topo (topo_report.h). Printing only: every decision comes from
 * topo_paths.c and topo_nic.c, so what is printed is what the library would decide.
 */
#include <stdio.h>
#include <string.h>

#include "log/check.h"
#include "log/log.h"
#include "topo/topo_nic.h"
#include "topo/topo_paths.h"
#include "topo/topo_report.h"

/* Node indices of `type` sorted by dev (GPUs, NETs). */
static int byDev(const struct chrTopoSystem* sys, int type, int* out) {
  int n = sys->count[type];
  memcpy(out, sys->list[type], sizeof(int) * (size_t)n);
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && sys->nodes[out[j - 1]].dev > sys->nodes[out[j]].dev; j--) {
      int t = out[j];
      out[j] = out[j - 1];
      out[j - 1] = t;
    }
  return n;
}

/* A value from the file as one word: blanks and control bytes become '_'. */
static const char* word(const char* s, char* buf, size_t cap) {
  if (!s || !*s) return "-";
  size_t i = 0;
  for (; s[i] && i + 1 < cap; i++) buf[i] = (s[i] <= ' ' || s[i] == 0x7f) ? '_' : s[i];
  buf[i] = '\0';
  return buf;
}

void chrTopoReport(const struct chrTopoSystem* sys, const char* name, int channels, FILE* out) {
  char w1[512], w2[64];
  int gpus[CHR_TOPO_MAX_NODES], nets[CHR_TOPO_MAX_NODES];
  int nGpus = byDev(sys, CHR_TOPO_GPU, gpus), nNets = byDev(sys, CHR_TOPO_NET, nets);
  fprintf(out, "topology %s cpus %d switches %d gpus %d nics %d nets %d nvswitches %d\n", word(name, w1, sizeof(w1)),
          sys->count[CHR_TOPO_CPU], sys->count[CHR_TOPO_PCI], nGpus, sys->count[CHR_TOPO_NIC], nNets,
          sys->count[CHR_TOPO_NVS]);
  int discovered = strcmp(sys->xml->path, "discovered") == 0;
  if (nGpus == 0)
    fprintf(out, discovered ? "note no GPUs: the CUDA driver lists none\n"
                            : "note no GPUs: the file names none (chorus-info --help: --gpu-per-switch)\n");
  if (nNets == 0)
    fprintf(out, discovered ? "note no NETs: no net plugin is open, or it lists none\n"
                            : "note no NETs: the file names none (chorus-info --help: --leaf-class)\n");
  for (int i = 0; i < nGpus; i++) {
    const struct chrTopoNode* g = &sys->nodes[gpus[i]];
    char rank[16] = "-";
    if (g->rank >= 0) snprintf(rank, sizeof(rank), "%d", g->rank);
    fprintf(out, "gpu %d rank %s busid %s sm %d gdr %d numa %lld\n", g->dev, rank,
            word(chrTopoNodeBusId(sys, gpus[i]), w1, sizeof(w1)), g->sm, g->gdr, (long long)sys->nodes[g->cpu].id);
    fprintf(out, "gpu %d channels", g->dev);
    for (int c = 0; c < channels; c++) {
      int net = chrTopoNetForChannel(sys, gpus[i], c);
      if (net < 0) fprintf(out, " -");
      else fprintf(out, " %d", sys->nodes[net].dev);
    }
    fprintf(out, "\n");
    for (int j = 0; j < nNets; j++) {
      const struct chrTopoPath* p = chrTopoPathOf(sys, gpus[i], nets[j]);
      fprintf(out, "gpu %d net %d name %s busid %s path %s bw %.2f gdr_read %d gdr_write %d", g->dev,
              sys->nodes[nets[j]].dev, word(chrTopoNodeAttr(sys, nets[j], "name"), w1, sizeof(w1)),
              word(chrTopoNodeBusId(sys, nets[j]), w2, sizeof(w2)), chrTopoPathName(p->type), p->bw,
              chrTopoCheckGdr(sys, gpus[i], nets[j], 1), chrTopoCheckGdr(sys, gpus[i], nets[j], 0));
      if (p->via >= 0) fprintf(out, " via %d", sys->nodes[p->via].dev);
      fprintf(out, "\n");
    }
    for (int j = 0; j < nGpus; j++) {
      if (j == i) continue;
      const struct chrTopoPath* p = chrTopoPathOf(sys, gpus[i], gpus[j]);
      fprintf(out, "gpu %d gpu %d path %s bw %.2f\n", g->dev, sys->nodes[gpus[j]].dev, chrTopoPathName(p->type), p->bw);
    }
  }
}

ncclResult_t chrTopoInfoXml(const struct chrTopoInfoRequest* req, struct chrXml* xml, const char* name, FILE* out) {
  struct chrTopoSystem* sys = NULL;
  CHECK(chrTopoBuild(xml, NULL, &sys)); /* owns xml from here, also on failure */
  ncclResult_t res = req->dumpPath ? chrXmlWriteFile(sys->xml, req->dumpPath) : ncclSuccess;
  if (res == ncclSuccess) chrTopoReport(sys, name, req->channels, out);
  chrTopoFree(sys);
  return res;
}

ncclResult_t chrTopoInfo(const struct chrTopoInfoRequest* req, FILE* out) {
  struct chrXml* xml = NULL;
  CHECK(chrXmlLoad(req->path, &xml));
  ncclResult_t res = ncclSuccess;
  if (req->fill) res = chrTopoFill(xml, &req->fillOptions);
  if (res != ncclSuccess) {
    chrXmlFree(xml);
    return res;
  }
  return chrTopoInfoXml(req, xml, req->path, out);
}
