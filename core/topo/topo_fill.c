/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_fill.c: offline completion of a topology file (chrTopoFill, topo_model.h).
 *
 * NCCL merges NCCL_TOPO_FILE with what it detects: most published files (AWS, Azure) name bus ids and
 * classes only, and the <gpu> and <nic><net> elements come from NVML and the net plugin. Without the
 * machine, chorus-info --topo adds them with stand-in values, in this order:
 *   1. leafClass: a leaf <pci> without class gets it (p5's NICs are bus ids only);
 *   2. gpuPerSwitch: a <pci> holding NIC-class children and no GPU-class child gets a GPU-class child
 *      first, bus id fffe:NN:00.0 (NN counts such switches in file order), with the first NIC's link;
 *   3. a GPU-class <pci> without <gpu> gets <gpu dev sm gdr="1">: dev numbers after the file's own,
 *      in bus id order (NVML's order);
 *   4. a NIC-class <pci> without <nic> gets <nic><net name=busid dev speed gdr="1"/></nic>: dev
 *      numbers after the file's own, in bus id order (the verbs and socket plugins' usual order).
 * gdr="1" says the plugin and driver would allow GPUDirect; the file can say otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log/check.h"
#include "log/log.h"
#include "topo/topo_model.h"

static int isPci(const struct chrXml* xml, int i) { return strcmp(xml->nodes[i].name, "pci") == 0; }

static int hasClass(const struct chrXml* xml, int i, const char* prefix) {
  const char* cls = chrXmlAttr(xml, i, "class");
  return cls && strncasecmp(cls, prefix, strlen(prefix)) == 0;
}

static int hasChild(const struct chrXml* xml, int i, const char* name) {
  for (int c = xml->nodes[i].firstChild; c >= 0; c = xml->nodes[c].next)
    if (strcmp(xml->nodes[c].name, name) == 0) return 1;
  return 0;
}

static int64_t busIdOf(const struct chrXml* xml, int i) {
  int64_t id = -1;
  const char* t = chrXmlAttr(xml, i, "busid");
  if (!t || chrTopoParseBusId(t, &id) != 0) id = -1;
  return id;
}

/* Sorts element indices by bus id (insertion sort: at most a few hundred). */
static void sortByBusId(const struct chrXml* xml, int* elems, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && busIdOf(xml, elems[j - 1]) > busIdOf(xml, elems[j]); j--) {
      int t = elems[j];
      elems[j] = elems[j - 1];
      elems[j - 1] = t;
    }
}

/* The largest dev of the elements named `name`; -1 when none. */
static int maxDev(const struct chrXml* xml, const char* name) {
  int max = -1;
  for (int i = 0; i < xml->nNodes; i++) {
    const char* d = strcmp(xml->nodes[i].name, name) == 0 ? chrXmlAttr(xml, i, "dev") : NULL;
    if (d && atoi(d) > max) max = atoi(d);
  }
  return max;
}

static ncclResult_t addGpuBesideNics(struct chrXml* xml, int sw, int number) {
  int nic = -1, gpuPci;
  for (int c = xml->nodes[sw].firstChild; c >= 0 && nic < 0; c = xml->nodes[c].next)
    if (isPci(xml, c) && hasClass(xml, c, "0x02")) nic = c;
  char busid[32];
  snprintf(busid, sizeof(busid), "fffe:%02x:00.0", number & 0xff);
  CHECK(chrXmlAddFirstChild(xml, sw, "pci", &gpuPci));
  CHECK(chrXmlSetAttr(xml, gpuPci, "busid", busid));
  CHECK(chrXmlSetAttr(xml, gpuPci, "class", "0x030200"));
  const char* speed = chrXmlAttr(xml, nic, "link_speed");
  const char* width = chrXmlAttr(xml, nic, "link_width");
  if (speed) CHECK(chrXmlSetAttr(xml, gpuPci, "link_speed", speed));
  if (width) CHECK(chrXmlSetAttr(xml, gpuPci, "link_width", width));
  return ncclSuccess;
}

ncclResult_t chrTopoFill(struct chrXml* xml, const struct chrTopoFillOptions* opt) {
  int n = xml->nNodes; /* elements added below are not visited again */
  for (int i = 0; opt->leafClass && i < n; i++)
    if (isPci(xml, i) && xml->nodes[i].firstChild < 0 && !chrXmlAttr(xml, i, "class"))
      CHECK(chrXmlSetAttr(xml, i, "class", opt->leafClass));
  for (int i = 0, number = 0; opt->gpuPerSwitch && i < n; i++) {
    if (!isPci(xml, i)) continue;
    int nics = 0, gpus = 0;
    for (int c = xml->nodes[i].firstChild; c >= 0; c = xml->nodes[c].next) {
      nics += isPci(xml, c) && hasClass(xml, c, "0x02");
      gpus += isPci(xml, c) && hasClass(xml, c, "0x03");
    }
    if (nics > 0 && gpus == 0) CHECK(addGpuBesideNics(xml, i, number++));
  }
  int elems[CHR_XML_MAX_NODES], count = 0;
  for (int i = 0; i < xml->nNodes; i++)
    if (isPci(xml, i) && hasClass(xml, i, "0x03") && !hasChild(xml, i, "gpu") && busIdOf(xml, i) >= 0) elems[count++] = i;
  sortByBusId(xml, elems, count);
  char text[32];
  for (int k = 0, dev = maxDev(xml, "gpu") + 1; k < count; k++, dev++) {
    int gpu;
    CHECK(chrXmlAddChild(xml, elems[k], "gpu", &gpu));
    snprintf(text, sizeof(text), "%d", dev);
    CHECK(chrXmlSetAttr(xml, gpu, "dev", text));
    snprintf(text, sizeof(text), "%d", opt->sm);
    CHECK(chrXmlSetAttr(xml, gpu, "sm", text));
    CHECK(chrXmlSetAttr(xml, gpu, "gdr", "1"));
  }
  count = 0;
  for (int i = 0; i < xml->nNodes; i++)
    if (isPci(xml, i) && hasClass(xml, i, "0x02") && !hasChild(xml, i, "nic") && busIdOf(xml, i) >= 0) elems[count++] = i;
  sortByBusId(xml, elems, count);
  for (int k = 0, dev = maxDev(xml, "net") + 1; k < count; k++, dev++) {
    int nic, net;
    CHECK(chrXmlAddChild(xml, elems[k], "nic", &nic));
    CHECK(chrXmlAddChild(xml, nic, "net", &net));
    CHECK(chrXmlSetAttr(xml, net, "name", chrXmlAttr(xml, elems[k], "busid")));
    snprintf(text, sizeof(text), "%d", dev);
    CHECK(chrXmlSetAttr(xml, net, "dev", text));
    snprintf(text, sizeof(text), "%lld", (long long)opt->netSpeed);
    CHECK(chrXmlSetAttr(xml, net, "speed", text));
    CHECK(chrXmlSetAttr(xml, net, "gdr", "1"));
  }
  return ncclSuccess;
}
