/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_model.c: from the XML tree to nodes and links (topo_model.h).
 *
 * One walk down the tree makes the CPU, PCI, GPU, NIC and NET nodes and the PCIe links to each
 * node's parent; a second pass adds what names other devices (nvlink, c2c, pcilink), so a target may
 * come later in the file; then every pair of CPUs gets its SYS links. As in NCCL, a <pci> is judged by
 * its class: 0x03... is a GPU (only with a <gpu> child), 0x02... a NIC (only with a <nic> child),
 * 0x068000 / 0x068001 (NVSwitch, CPU as a PCI function) are not nodes, anything else (a switch, a
 * bridge, no class at all) is a PCI node. The walk recurses once per <pci> level, which the reader
 * bounds (CHR_XML_MAX_DEPTH).
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "log/check.h"
#include "log/log.h"
#include "topo/topo_model.h"
#include "topo/topo_paths.h"

static const char* const kPathNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C",
                                         "PXN", "PHB", "SYS", "NET", "DIS"};

const char* chrTopoPathName(int type) {
  return type >= 0 && type <= CHR_PATH_DIS ? kPathNames[type] : "?";
}

int chrTopoPathLookup(const char* name) {
  for (int i = 0; i <= CHR_PATH_DIS; i++)
    if (strcmp(kPathNames[i], name) == 0) return i;
  return -1;
}

/* ---- numbers and bandwidths ----------------------------------------------------------------- */

/* Per-lane PCIe rate in units of 100 Mbit/s. NCCL matches by prefix, first hit wins: "32 GT/s
 * PCIe/s" reads as Gen5, while the bare "16.0 GT/s" matches nothing and falls back to Gen3's 60. */
static const struct {
  const char* prefix;
  int rate;
} kLinkSpeeds[] = {{"2.5 GT/s", 15},       {"5 GT/s", 30},  {"5.0 GT/s PCIe", 30},  {"8 GT/s", 60},
                   {"8.0 GT/s PCIe", 60},  {"16 GT/s", 120}, {"16.0 GT/s PCIe", 120}, {"32 GT/s", 240},
                   {"32.0 GT/s PCIe", 240}, {"64.0 GT/s PCIe", 480}};

static int parseInt64(const char* s, int64_t* out) {
  if (!s || !*s) return -1;
  char* end;
  long long v = strtoll(s, &end, 0);
  if (*end != '\0') return -1;
  *out = v;
  return 0;
}

float chrTopoPciBw(const char* linkSpeed, const char* linkWidth) {
  int rate = 60;
  for (size_t i = 0; linkSpeed && i < sizeof(kLinkSpeeds) / sizeof(kLinkSpeeds[0]); i++)
    if (strncmp(linkSpeed, kLinkSpeeds[i].prefix, strlen(kLinkSpeeds[i].prefix)) == 0) {
      rate = kLinkSpeeds[i].rate;
      break;
    }
  int64_t width = 0;
  if (parseInt64(linkWidth, &width) != 0 || width <= 0 || width > 64) width = 16; /* 0 or unknown: x16 */
  return (float)width * (float)rate / 80.0f;
}

float chrTopoNvlinkBw(int sm) {
  if (sm >= 100) return 40.1f;
  if (sm >= 90) return 20.6f;
  if (sm == 86) return 12.0f;
  if (sm >= 70) return 20.0f;
  return 18.0f;
}

/* Bandwidth between two sockets, by the CPU's kind (NCCL's table; 5000 when it is not known). */
static float cpuSysBw(const char* arch, const char* vendor, int64_t family, int64_t model) {
  if (arch && strcmp(arch, "ppc64") == 0) return 32.0f;
  if (arch && strcmp(arch, "arm64") == 0) return 6.0f;
  if (!vendor) return CHR_TOPO_LOC_BW;
  if (strcmp(vendor, "GenuineIntel") == 0) {
    if (family == 6 && model >= 0xCF) return 40.0f;
    if (family == 6 && model >= 0x8F) return 22.0f;
    if (family == 6 && model >= 0x55) return 10.0f;
    return 6.0f;
  }
  if (strcmp(vendor, "AuthenticAMD") == 0) return 16.0f;
  if (strcmp(vendor, "CentaurHauls") == 0 || strcmp(vendor, "  Shanghai  ") == 0) return 6.0f;
  return CHR_TOPO_LOC_BW;
}

int chrTopoParseBusId(const char* s, int64_t* out) {
  /* dddd:bb:dd.f, the domain 4 to 8 hex digits, the bus and device 2, the function 1. */
  static const int kGroups[] = {-4, 2, 2, 1};
  static const char kSeps[] = {':', ':', '.', '\0'};
  int64_t v = 0;
  const char* p = s;
  for (int g = 0; g < 4; g++) {
    int n = 0;
    while ((*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'f') || (*p >= 'A' && *p <= 'F')) {
      int d = *p <= '9' ? *p - '0' : (*p | 0x20) - 'a' + 10;
      v = v * 16 + d;
      p++;
      n++;
    }
    if (kGroups[g] < 0 ? (n < 4 || n > 8) : n != kGroups[g]) return -1;
    if (*p != kSeps[g]) return -1;
    if (kSeps[g]) p++;
  }
  *out = v;
  return 0;
}

void chrTopoBusIdText(int64_t id, char* out, size_t cap) {
  const unsigned long long u = (unsigned long long)id;
  snprintf(out, cap, "%04llx:%02llx:%02llx.%llx", u >> 20, (u >> 12) & 0xff, (u >> 4) & 0xff, u & 0xf);
}

/* ---- the build ------------------------------------------------------------------------------- */

struct builder {
  struct chrTopoSystem* sys;
  struct chrXml* xml;
};

static ncclResult_t failAt(const struct builder* b, int elem, const char* fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ncclResult_t failAt(const struct builder* b, int elem, const char* fmt, ...) {
  char why[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, sizeof(why), fmt, ap);
  va_end(ap);
  return chrFail(ncclInvalidUsage, "%s:%d: <%s> %s", b->xml->path, b->xml->nodes[elem].line,
                 b->xml->nodes[elem].name, why);
}

static ncclResult_t needInt(const struct builder* b, int elem, const char* key, int64_t min, int64_t max,
                            int required, int64_t dflt, int64_t* out) {
  const char* v = chrXmlAttr(b->xml, elem, key);
  if (!v) {
    if (required) return failAt(b, elem, "needs a %s attribute", key);
    *out = dflt;
    return ncclSuccess;
  }
  if (parseInt64(v, out) != 0 || *out < min || *out > max)
    return failAt(b, elem, "%s=\"%s\" is not an integer from %lld to %lld", key, v, (long long)min, (long long)max);
  return ncclSuccess;
}

static ncclResult_t newNode(struct builder* b, int type, int elem, int cpu, int64_t id, int* index) {
  struct chrTopoSystem* sys = b->sys;
  if (sys->nNodes == CHR_TOPO_MAX_NODES) return failAt(b, elem, "makes more than %d nodes", CHR_TOPO_MAX_NODES);
  int i = sys->nNodes++;
  struct chrTopoNode* n = &sys->nodes[i];
  memset(n, 0, sizeof(*n));
  n->type = type;
  n->elem = elem;
  n->cpu = cpu;
  n->id = id;
  n->rank = -1;
  sys->list[type][sys->count[type]++] = i;
  *index = i;
  return ncclSuccess;
}

/* Adds bandwidth to the link from -> to of this type, making it when there is none. */
static ncclResult_t addLink(struct builder* b, int from, int to, int type, float bw) {
  struct chrTopoNode* n = &b->sys->nodes[from];
  for (int l = 0; l < n->nLinks; l++)
    if (n->links[l].remote == to && n->links[l].type == type) {
      n->links[l].bw += bw;
      return ncclSuccess;
    }
  if (n->nLinks == CHR_TOPO_MAX_LINKS)
    return failAt(b, n->elem >= 0 ? n->elem : 0, "has more than %d links", CHR_TOPO_MAX_LINKS);
  n->links[n->nLinks++] = (struct chrTopoLink){.type = type, .bw = bw, .remote = to};
  return ncclSuccess;
}

static ncclResult_t addBoth(struct builder* b, int x, int y, int type, float bw) {
  CHECK(addLink(b, x, y, type, bw));
  return addLink(b, y, x, type, bw);
}

static int findNode(const struct chrTopoSystem* sys, int type, int64_t id) {
  for (int i = 0; i < sys->count[type]; i++)
    if (sys->nodes[sys->list[type][i]].id == id) return sys->list[type][i];
  return -1;
}

static int childNamed(const struct chrXml* xml, int elem, const char* name) {
  for (int c = xml->nodes[elem].firstChild; c >= 0; c = xml->nodes[c].next)
    if (strcmp(xml->nodes[c].name, name) == 0) return c;
  return -1;
}

static ncclResult_t addNic(struct builder* b, int nicElem, int cpu, int parentNode, int64_t busid, float bw) {
  int nic;
  CHECK(newNode(b, CHR_TOPO_NIC, nicElem, cpu, busid, &nic));
  CHECK(addBoth(b, nic, parentNode, CHR_LINK_PCI, bw));
  for (int c = b->xml->nodes[nicElem].firstChild; c >= 0; c = b->xml->nodes[c].next) {
    if (!chrXmlAttr(b->xml, c, "dev")) {
      INFO(NCCL_GRAPH, "%s:%d: <net> without dev skipped, as NCCL does", b->xml->path, b->xml->nodes[c].line);
      continue;
    }
    int64_t dev, speed, gdr;
    CHECK(needInt(b, c, "dev", 0, 1 << 20, 1, 0, &dev));
    CHECK(needInt(b, c, "speed", INT64_MIN, INT64_MAX, 0, 0, &speed));
    CHECK(needInt(b, c, "gdr", 0, 1, 0, 1, &gdr));
    if (findNode(b->sys, CHR_TOPO_NET, dev) >= 0) return failAt(b, c, "dev=\"%lld\" is used twice", (long long)dev);
    if (speed <= 0) speed = 10000; /* NCCL's figure for a device that reports no speed */
    int net;
    CHECK(newNode(b, CHR_TOPO_NET, c, cpu, dev, &net));
    b->sys->nodes[net].dev = (int)dev;
    b->sys->nodes[net].gdr = (int)gdr;
    b->sys->nodes[net].speed = speed;
    CHECK(addBoth(b, net, nic, CHR_LINK_NET, (float)speed / 8000.0f));
  }
  return ncclSuccess;
}

static ncclResult_t addGpu(struct builder* b, int gpuElem, int cpu, int parentNode, int64_t busid, float bw) {
  int64_t dev, sm, rank, gdr;
  CHECK(needInt(b, gpuElem, "dev", 0, 1 << 20, 1, 0, &dev));
  CHECK(needInt(b, gpuElem, "sm", 10, 1000, 1, 0, &sm));
  CHECK(needInt(b, gpuElem, "rank", 0, INT32_MAX, 0, -1, &rank));
  CHECK(needInt(b, gpuElem, "gdr", 0, 1, 0, 1, &gdr));
  for (int i = 0; i < b->sys->count[CHR_TOPO_GPU]; i++)
    if (b->sys->nodes[b->sys->list[CHR_TOPO_GPU][i]].dev == dev)
      return failAt(b, gpuElem, "dev=\"%lld\" is used twice", (long long)dev);
  int gpu;
  CHECK(newNode(b, CHR_TOPO_GPU, gpuElem, cpu, busid, &gpu));
  struct chrTopoNode* n = &b->sys->nodes[gpu];
  n->dev = (int)dev;
  n->sm = (int)sm;
  n->rank = (int)rank;
  n->gdr = (int)gdr;
  return addBoth(b, gpu, parentNode, CHR_LINK_PCI, bw);
}

static ncclResult_t addPci(struct builder* b, int elem, int cpu, int parentNode, int depth) {
  const char* text = chrXmlAttr(b->xml, elem, "busid");
  int64_t busid;
  if (!text) return failAt(b, elem, "needs a busid attribute");
  if (chrTopoParseBusId(text, &busid) != 0) return failAt(b, elem, "busid=\"%s\" is not dddd:bb:dd.f", text);
  for (int t = 0; t < CHR_TOPO_NODE_TYPES; t++)
    if (t != CHR_TOPO_NET && t != CHR_TOPO_CPU && findNode(b->sys, t, busid) >= 0)
      return failAt(b, elem, "busid=\"%s\" is used twice", text);
  const char* cls = chrXmlAttr(b->xml, elem, "class");
  float bw = chrTopoPciBw(chrXmlAttr(b->xml, elem, "link_speed"), chrXmlAttr(b->xml, elem, "link_width"));
  if (cls && strncasecmp(cls, "0x03", 4) == 0) {
    int g = childNamed(b->xml, elem, "gpu");
    return g < 0 ? ncclSuccess : addGpu(b, g, cpu, parentNode, busid, bw);
  }
  if (cls && strncasecmp(cls, "0x02", 4) == 0) {
    int nic = childNamed(b->xml, elem, "nic");
    return nic < 0 ? ncclSuccess : addNic(b, nic, cpu, parentNode, busid, bw);
  }
  if (cls && (strncasecmp(cls, "0x068000", 8) == 0 || strncasecmp(cls, "0x068001", 8) == 0)) return ncclSuccess;
  if (depth >= CHR_XML_MAX_DEPTH) return failAt(b, elem, "nests deeper than %d", CHR_XML_MAX_DEPTH);
  int pci;
  CHECK(newNode(b, CHR_TOPO_PCI, elem, cpu, busid, &pci));
  CHECK(addBoth(b, pci, parentNode, CHR_LINK_PCI, bw));
  for (int c = b->xml->nodes[elem].firstChild; c >= 0; c = b->xml->nodes[c].next)
    if (strcmp(b->xml->nodes[c].name, "pci") == 0) CHECK(addPci(b, c, cpu, pci, depth + 1));
  return ncclSuccess;
}

static ncclResult_t addCpu(struct builder* b, int elem) {
  int64_t numa, family, model;
  CHECK(needInt(b, elem, "numaid", -1, 1 << 20, 1, 0, &numa));
  CHECK(needInt(b, elem, "familyid", 0, INT32_MAX, 0, 0, &family));
  CHECK(needInt(b, elem, "modelid", 0, INT32_MAX, 0, 0, &model));
  if (findNode(b->sys, CHR_TOPO_CPU, numa) >= 0) return failAt(b, elem, "numaid=\"%lld\" is used twice", (long long)numa);
  int cpu;
  CHECK(newNode(b, CHR_TOPO_CPU, elem, -1, numa, &cpu));
  b->sys->nodes[cpu].cpu = cpu;
  b->sys->nodes[cpu].sysBw =
      cpuSysBw(chrXmlAttr(b->xml, elem, "arch"), chrXmlAttr(b->xml, elem, "vendor"), family, model);
  for (int c = b->xml->nodes[elem].firstChild; c >= 0; c = b->xml->nodes[c].next) {
    if (strcmp(b->xml->nodes[c].name, "pci") == 0) CHECK(addPci(b, c, cpu, cpu, 1));
    else if (strcmp(b->xml->nodes[c].name, "nic") == 0) CHECK(addNic(b, c, cpu, cpu, -1, CHR_TOPO_LOC_BW));
  }
  return ncclSuccess;
}

/* The <pci> element whose busid is `target`, or -1. */
static int pciElemByBusId(const struct chrXml* xml, int64_t target) {
  for (int i = 0; i < xml->nNodes; i++) {
    int64_t id;
    const char* t = strcmp(xml->nodes[i].name, "pci") == 0 ? chrXmlAttr(xml, i, "busid") : NULL;
    if (t && chrTopoParseBusId(t, &id) == 0 && id == target) return i;
  }
  return -1;
}

static ncclResult_t addNvlink(struct builder* b, int gpu, int elem) {
  struct chrTopoSystem* sys = b->sys;
  const char* target = chrXmlAttr(b->xml, elem, "target");
  const char* tclass = chrXmlAttr(b->xml, elem, "tclass");
  int64_t count, id = -1;
  if (!target) return failAt(b, elem, "needs a target attribute");
  CHECK(needInt(b, elem, "count", 1, 1024, 1, 0, &count));
  int known = chrTopoParseBusId(target, &id) == 0;
  if (!tclass && known && pciElemByBusId(b->xml, id) >= 0) tclass = chrXmlAttr(b->xml, pciElemByBusId(b->xml, id), "class");
  if (!tclass) {
    /* NCCL fills a missing tclass from the target's sysfs class (discovery does too, topo_discover.c)
     * and, when that cannot be read (a VM hides the target), assumes an NVSwitch. */
    INFO(NCCL_GRAPH, "%s:%d: <nvlink target=\"%s\"> has no tclass and its class is not known: an NVSwitch, as NCCL "
         "assumes", b->xml->path, b->xml->nodes[elem].line, target);
    tclass = "0x068000";
  }
  float bw = (float)count * chrTopoNvlinkBw(sys->nodes[gpu].sm);
  if (strncasecmp(tclass, "0x03", 4) == 0) {
    int peer = known ? findNode(sys, CHR_TOPO_GPU, id) : -1;
    if (peer < 0) return failAt(b, elem, "target=\"%s\" names no GPU of this file", target);
    return addLink(b, gpu, peer, CHR_LINK_NVL, bw);
  }
  if (strncasecmp(tclass, "0x068000", 8) == 0) {
    if (sys->count[CHR_TOPO_NVS] == 0) {
      int nvs;
      CHECK(newNode(b, CHR_TOPO_NVS, -1, -1, 0, &nvs));
    }
    return addBoth(b, gpu, sys->list[CHR_TOPO_NVS][0], CHR_LINK_NVL, bw);
  }
  if (strncasecmp(tclass, "0x068001", 8) == 0) return addBoth(b, gpu, sys->nodes[gpu].cpu, CHR_LINK_NVL, bw);
  INFO(NCCL_GRAPH, "%s:%d: nvlink to a device of class %s ignored", b->xml->path, b->xml->nodes[elem].line, tclass);
  return ncclSuccess;
}

/* What names other devices: NVLinks and C2C of each GPU, pcilinks between switches. */
static ncclResult_t addCrossLinks(struct builder* b) {
  struct chrTopoSystem* sys = b->sys;
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
    int gpu = sys->list[CHR_TOPO_GPU][i];
    for (int c = b->xml->nodes[sys->nodes[gpu].elem].firstChild; c >= 0; c = b->xml->nodes[c].next) {
      if (strcmp(b->xml->nodes[c].name, "nvlink") == 0) CHECK(addNvlink(b, gpu, c));
      if (strcmp(b->xml->nodes[c].name, "c2c") == 0) {
        int64_t bw, count;
        CHECK(needInt(b, c, "bw", 0, INT32_MAX, 1, 0, &bw));
        CHECK(needInt(b, c, "count", 0, 1024, 1, 0, &count));
        CHECK(addBoth(b, gpu, sys->nodes[gpu].cpu, CHR_LINK_C2C, (float)bw * (float)count / 1000.0f));
      }
    }
  }
  for (int i = 0; i < sys->count[CHR_TOPO_PCI]; i++) {
    int pci = sys->list[CHR_TOPO_PCI][i];
    for (int c = b->xml->nodes[sys->nodes[pci].elem].firstChild; c >= 0; c = b->xml->nodes[c].next) {
      if (strcmp(b->xml->nodes[c].name, "pcilink") != 0) continue;
      const char* target = chrXmlAttr(b->xml, c, "target");
      int64_t id;
      int peer = target && chrTopoParseBusId(target, &id) == 0 ? findNode(sys, CHR_TOPO_PCI, id) : -1;
      if (peer < 0) return failAt(b, c, "target=\"%s\" names no PCI switch of this file", target ? target : "");
      CHECK(addBoth(b, pci, peer, CHR_LINK_LOC, CHR_TOPO_LOC_BW));
    }
  }
  for (int i = 0; i < sys->count[CHR_TOPO_CPU]; i++)
    for (int j = 0; j < sys->count[CHR_TOPO_CPU]; j++)
      if (i != j) {
        int from = sys->list[CHR_TOPO_CPU][i];
        CHECK(addLink(b, from, sys->list[CHR_TOPO_CPU][j], CHR_LINK_SYS, sys->nodes[from].sysBw));
      }
  return ncclSuccess;
}

ncclResult_t chrTopoBuild(struct chrXml* xml, const struct chrTopoSettings* settings, struct chrTopoSystem** out) {
  struct chrTopoSystem* sys = calloc(1, sizeof(*sys));
  if (!sys) {
    chrXmlFree(xml);
    return chrFail(ncclSystemError, "topology: out of memory");
  }
  sys->xml = xml;
  struct builder b = {.sys = sys, .xml = xml};
  ncclResult_t res = ncclSuccess;
  if (settings) sys->settings = *settings;
  else res = chrTopoSettingsRead(&sys->settings);
  const char* version = chrXmlAttr(xml, 0, "version");
  if (res == ncclSuccess && !version) res = failAt(&b, 0, "needs version=\"1\"");
  if (res == ncclSuccess && strcmp(version, "1") != 0)
    res = failAt(&b, 0, "version=\"%s\": only version 1 is known", version);
  for (int c = xml->nodes[0].firstChild; res == ncclSuccess && c >= 0; c = xml->nodes[c].next) res = addCpu(&b, c);
  if (res == ncclSuccess) res = addCrossLinks(&b);
  if (res == ncclSuccess) res = chrTopoComputePaths(sys);
  if (res != ncclSuccess) {
    chrTopoFree(sys);
    return res;
  }
  *out = sys;
  return ncclSuccess;
}

void chrTopoFree(struct chrTopoSystem* sys) {
  if (!sys) return;
  chrXmlFree(sys->xml);
  free(sys->paths);
  free(sys);
}

const char* chrTopoNodeAttr(const struct chrTopoSystem* sys, int node, const char* key) {
  int elem = sys->nodes[node].elem;
  return elem < 0 ? NULL : chrXmlAttr(sys->xml, elem, key);
}

const char* chrTopoNodeBusId(const struct chrTopoSystem* sys, int node) {
  int elem = sys->nodes[node].elem;
  /* GPU <gpu> and NIC <nic> sit in their <pci>; a NET <net> in its <nic>. */
  for (int up = 0; elem >= 0 && up < 3; up++, elem = sys->xml->nodes[elem].parent)
    if (strcmp(sys->xml->nodes[elem].name, "pci") == 0) return chrXmlAttr(sys->xml, elem, "busid");
  return "";
}
