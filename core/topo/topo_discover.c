/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * topo_discover.c: discovery of this machine's topology into NCCL's XML (topo_discover.h).
 *
 * Order: the NUMA nodes become <cpu> elements (those the file lacks), then each GPU and each NET
 * finds or makes its <pci> element and the chain of switches above it, then the <gpu> and
 * <nic><net> elements. A sysfs read is one bounded read of a small file; a value is used only when it
 * has the expected shape (hex ids, a decimal NUMA node, printable text), else it is left out with an
 * INFO. The parent walk is bounded (CHR_XML_MAX_DEPTH steps) and works on path strings, so a link
 * loop or a deep fake tree cannot make it run long.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include "config/param.h"
#include "log/check.h"
#include "log/log.h"
#include "topo/topo_discover.h"
#include "topo/topo_model.h"

#define SYS_VALUE_MAX 256 /* bytes read from one sysfs file; cpumap of 8192 CPUs would need 2300 */
#define MAX_NUMA 64       /* NUMA nodes looked at */

struct disc {
  struct chrXml* xml;
  char root[PATH_MAX];
  int cpus[MAX_NUMA + 1]; /* <cpu> elements by position; numa ids in numas */
  int numas[MAX_NUMA + 1];
  int nCpus;
  int systemNumaNodes; /* NUMA nodes sysfs lists */
  char chainPath[CHR_XML_MAX_DEPTH][PATH_MAX]; /* pciFor's walk: here, not on a thread's stack */
};

/* ---- reading sysfs ----------------------------------------------------------------------------- */

/* One small file into buf, trailing blanks cut; 0 when it held printable text. */
static int readSys(const char* dir, const char* file, char* buf, size_t cap) {
  char path[PATH_MAX + 64];
  if (snprintf(path, sizeof(path), "%s/%s", dir, file) >= (int)sizeof(path)) return -1;
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return -1;
  size_t len = 0;
  while (len + 1 < cap) {
    ssize_t n = read(fd, buf + len, cap - 1 - len);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    len += (size_t)n;
  }
  close(fd);
  while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == ' ' || buf[len - 1] == '\t')) len--;
  buf[len] = '\0';
  if (len == 0) return -1;
  for (size_t i = 0; i < len; i++)
    if ((unsigned char)buf[i] < 0x20 || (unsigned char)buf[i] > 0x7e) return -1;
  return 0;
}

static int isHexId(const char* s) { /* 0x and 1 to 8 hex digits */
  if (s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return 0;
  size_t n = strspn(s + 2, "0123456789abcdefABCDEF");
  return n >= 1 && n <= 8 && s[2 + n] == '\0';
}

static int parseDecimal(const char* s, long min, long max, long* out) {
  char* end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end != '\0' || errno != 0 || v < min || v > max) return -1;
  *out = v;
  return 0;
}

static int isCpumap(const char* s) { return s[0] && strspn(s, "0123456789abcdefABCDEF,") == strlen(s); }

/* Sets key from sysfs when the element lacks it and the value passes `valid`. */
static ncclResult_t fillFromSys(struct disc* d, int elem, const char* key, const char* dir, const char* file,
                                int (*valid)(const char*)) {
  char v[SYS_VALUE_MAX];
  if (chrXmlAttr(d->xml, elem, key) || readSys(dir, file, v, sizeof(v)) != 0) return ncclSuccess;
  if (!valid(v)) {
    INFO(NCCL_GRAPH, "topology: %s/%s = \"%.64s\" is not what it should be; skipped", dir, file, v);
    return ncclSuccess;
  }
  return chrXmlSetAttr(d->xml, elem, key, v);
}

/* ---- CPUs ------------------------------------------------------------------------------------- */

static ncclResult_t fillCpu(struct disc* d, int elem, long numa) {
#if defined(__x86_64__) || defined(__i386__)
  if (!chrXmlAttr(d->xml, elem, "arch")) CHECK(chrXmlSetAttr(d->xml, elem, "arch", "x86_64"));
  unsigned a, b, c, dx;
  if (__get_cpuid(0, &a, &b, &c, &dx)) {
    char vendor[13];
    memcpy(vendor, &b, 4);
    memcpy(vendor + 4, &dx, 4);
    memcpy(vendor + 8, &c, 4);
    vendor[12] = '\0';
    int printable = 1;
    for (int i = 0; i < 12; i++) printable &= vendor[i] >= 0x20 && vendor[i] <= 0x7e;
    if (printable && !chrXmlAttr(d->xml, elem, "vendor")) CHECK(chrXmlSetAttr(d->xml, elem, "vendor", vendor));
  }
  if (__get_cpuid(1, &a, &b, &c, &dx)) {
    char text[16];
    unsigned family = ((a >> 8) & 0xf) + (((a >> 20) & 0xff) << 4), model = ((a >> 4) & 0xf) + (((a >> 16) & 0xf) << 4);
    snprintf(text, sizeof(text), "%u", family);
    if (!chrXmlAttr(d->xml, elem, "familyid")) CHECK(chrXmlSetAttr(d->xml, elem, "familyid", text));
    snprintf(text, sizeof(text), "%u", model);
    if (!chrXmlAttr(d->xml, elem, "modelid")) CHECK(chrXmlSetAttr(d->xml, elem, "modelid", text));
  }
#elif defined(__aarch64__)
  if (!chrXmlAttr(d->xml, elem, "arch")) CHECK(chrXmlSetAttr(d->xml, elem, "arch", "arm64"));
#elif defined(__powerpc64__)
  if (!chrXmlAttr(d->xml, elem, "arch")) CHECK(chrXmlSetAttr(d->xml, elem, "arch", "ppc64"));
#endif
  if (numa < 0) return ncclSuccess;
  char dir[PATH_MAX + 64];
  snprintf(dir, sizeof(dir), "%s/devices/system/node/node%ld", d->root, numa);
  return fillFromSys(d, elem, "affinity", dir, "cpumap", isCpumap);
}

/* The <cpu> element of NUMA node `numa`, made (last child of <system>) when there is none. */
static ncclResult_t cpuFor(struct disc* d, long numa, int* out) {
  /* A device without a NUMA node (-1, common in VMs) on a machine of one node belongs to that node. */
  if (numa < 0 && d->systemNumaNodes == 1 && d->nCpus > 0) numa = d->numas[0];
  for (int i = 0; i < d->nCpus; i++)
    if (d->numas[i] == numa) {
      *out = d->cpus[i];
      return ncclSuccess;
    }
  if (d->nCpus == MAX_NUMA + 1) return chrFail(ncclInternalError, "topology: more than %d NUMA nodes", MAX_NUMA);
  int elem;
  CHECK(chrXmlAddChild(d->xml, 0, "cpu", &elem));
  char text[24];
  snprintf(text, sizeof(text), "%ld", numa);
  CHECK(chrXmlSetAttr(d->xml, elem, "numaid", text));
  CHECK(fillCpu(d, elem, numa));
  d->cpus[d->nCpus] = elem;
  d->numas[d->nCpus++] = (int)numa;
  *out = elem;
  return ncclSuccess;
}

static int numaDirCompare(const void* a, const void* b) { return *(const int*)a - *(const int*)b; }

static ncclResult_t discoverCpus(struct disc* d) {
  /* The file's <cpu> elements first: they keep their place, discovery fills what they lack. */
  for (int c = d->xml->nodes[0].firstChild; c >= 0 && d->nCpus < MAX_NUMA; c = d->xml->nodes[c].next) {
    long numa;
    const char* t = strcmp(d->xml->nodes[c].name, "cpu") == 0 ? chrXmlAttr(d->xml, c, "numaid") : NULL;
    if (!t || parseDecimal(t, -1, 1 << 20, &numa) != 0) continue; /* the model names what is wrong */
    d->cpus[d->nCpus] = c;
    d->numas[d->nCpus++] = (int)numa;
  }
  char dir[PATH_MAX + 32];
  snprintf(dir, sizeof(dir), "%s/devices/system/node", d->root);
  DIR* nodes = opendir(dir);
  int found[MAX_NUMA], n = 0;
  if (!nodes) {
    INFO(NCCL_GRAPH, "topology: %s cannot be read (%s): no NUMA nodes", dir, strerror(errno));
  } else {
    struct dirent* e;
    while ((e = readdir(nodes)) != NULL && n < MAX_NUMA) {
      long numa;
      if (strncmp(e->d_name, "node", 4) == 0 && parseDecimal(e->d_name + 4, 0, 1 << 20, &numa) == 0) found[n++] = (int)numa;
    }
    closedir(nodes);
  }
  qsort(found, (size_t)n, sizeof(found[0]), numaDirCompare);
  d->systemNumaNodes = n;
  for (int i = 0; i < n; i++) {
    int elem;
    CHECK(cpuFor(d, found[i], &elem));
    CHECK(fillCpu(d, elem, found[i]));
  }
  if (d->nCpus == 0) { /* no NUMA information at all: one CPU, as NCCL's numaid -1 */
    int elem;
    CHECK(cpuFor(d, -1, &elem));
  }
  return ncclSuccess;
}

/* ---- PCI -------------------------------------------------------------------------------------- */

static int pciByBusId(const struct chrXml* xml, int64_t id) {
  for (int i = 0; i < xml->nNodes; i++) {
    int64_t v;
    const char* t = strcmp(xml->nodes[i].name, "pci") == 0 ? chrXmlAttr(xml, i, "busid") : NULL;
    if (t && chrTopoParseBusId(t, &v) == 0 && v == id) return i;
  }
  return -1;
}

static int validSpeed(const char* s) { return strlen(s) <= 64 && strstr(s, "GT/s") != NULL; }
static int validWidth(const char* s) {
  long v;
  return parseDecimal(s, 1, 64, &v) == 0;
}

/* link_speed / link_width: the lower of the device's and its upstream port's (its sysfs parent). */
static ncclResult_t fillLink(struct disc* d, int elem, const char* path) {
  char parent[PATH_MAX];
  snprintf(parent, sizeof(parent), "%s", path);
  char* slash = strrchr(parent, '/');
  if (slash) *slash = '\0';
  if (!chrXmlAttr(d->xml, elem, "link_speed")) {
    char mine[SYS_VALUE_MAX], up[SYS_VALUE_MAX];
    int haveMine = readSys(path, "max_link_speed", mine, sizeof(mine)) == 0 && validSpeed(mine);
    int haveUp = readSys(parent, "max_link_speed", up, sizeof(up)) == 0 && validSpeed(up);
    const char* pick = haveMine ? mine : haveUp ? up : NULL;
    if (haveMine && haveUp && chrTopoPciBw(up, "1") < chrTopoPciBw(mine, "1")) pick = up;
    if (pick) CHECK(chrXmlSetAttr(d->xml, elem, "link_speed", pick));
  }
  if (!chrXmlAttr(d->xml, elem, "link_width")) {
    char mine[SYS_VALUE_MAX], up[SYS_VALUE_MAX];
    int haveMine = readSys(path, "max_link_width", mine, sizeof(mine)) == 0 && validWidth(mine);
    int haveUp = readSys(parent, "max_link_width", up, sizeof(up)) == 0 && validWidth(up);
    const char* pick = haveMine ? mine : haveUp ? up : NULL;
    if (haveMine && haveUp && atoi(up) < atoi(mine)) pick = up;
    if (pick) CHECK(chrXmlSetAttr(d->xml, elem, "link_width", pick));
  }
  return ncclSuccess;
}

static ncclResult_t fillPci(struct disc* d, int elem, const char* path) {
  static const char* const kIds[] = {"class", "vendor", "device", "subsystem_vendor", "subsystem_device"};
  for (size_t i = 0; i < sizeof(kIds) / sizeof(kIds[0]); i++) CHECK(fillFromSys(d, elem, kIds[i], path, kIds[i], isHexId));
  return fillLink(d, elem, path);
}

static long numaOf(const char* path) {
  char v[SYS_VALUE_MAX];
  long numa;
  if (readSys(path, "numa_node", v, sizeof(v)) != 0 || parseDecimal(v, -1, 1 << 20, &numa) != 0) return -1;
  return numa;
}

/* The <pci> element of bus id `id`: the file's (attributes it lacks filled from sysfs), or a new one
 * placed where sysfs puts it, with the switches above it that the tree lacks. */
static ncclResult_t pciFor(struct disc* d, int64_t id, int* out) {
  char busid[32], link[PATH_MAX + 64];
  chrTopoBusIdText(id, busid, sizeof(busid));
  snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", d->root, busid);
  char* path = realpath(link, NULL);
  int elem = pciByBusId(d->xml, id);
  if (elem >= 0) {
    if (path) CHECK(fillPci(d, elem, path));
    free(path);
    *out = elem;
    return ncclSuccess;
  }
  if (!path) {
    INFO(NCCL_GRAPH, "topology: %s is not in sysfs (%s): placed on the CPU, without attributes", busid, link);
    int cpu;
    CHECK(cpuFor(d, -1, &cpu));
    CHECK(chrXmlAddChild(d->xml, cpu, "pci", out));
    return chrXmlSetAttr(d->xml, *out, "busid", busid);
  }
  /* Up two components at a time: a bus id is a switch (its upstream port), anything else the root
   * complex, i.e. the CPU of the device's NUMA node. chain[0] is the device. */
  char (*chainPath)[PATH_MAX] = d->chainPath;
  int64_t chainId[CHR_XML_MAX_DEPTH];
  int n = 0, parent = -1;
  snprintf(chainPath[0], PATH_MAX, "%s", path);
  chainId[n++] = id;
  free(path);
  for (;;) {
    char up[PATH_MAX];
    snprintf(up, sizeof(up), "%s", chainPath[n - 1]);
    for (int k = 0; k < 2; k++) {
      char* slash = strrchr(up, '/');
      if (slash) *slash = '\0';
    }
    const char* base = strrchr(up, '/') ? strrchr(up, '/') + 1 : up;
    int64_t upId;
    if (chrTopoParseBusId(base, &upId) != 0 || n == CHR_XML_MAX_DEPTH - 2) {
      CHECK(cpuFor(d, numaOf(chainPath[0]), &parent));
      break;
    }
    parent = pciByBusId(d->xml, upId);
    if (parent >= 0) break;
    snprintf(chainPath[n], PATH_MAX, "%s", up);
    chainId[n++] = upId;
  }
  for (int i = n - 1; i >= 0; i--) {
    int e;
    char text[32];
    chrTopoBusIdText(chainId[i], text, sizeof(text));
    CHECK(chrXmlAddChild(d->xml, parent, "pci", &e));
    CHECK(chrXmlSetAttr(d->xml, e, "busid", text));
    CHECK(fillPci(d, e, chainPath[i]));
    parent = e;
  }
  *out = parent;
  return ncclSuccess;
}

/* ---- GPUs and NETs ---------------------------------------------------------------------------- */

static int childNamed(const struct chrXml* xml, int elem, const char* name) {
  for (int c = xml->nodes[elem].firstChild; c >= 0; c = xml->nodes[c].next)
    if (strcmp(xml->nodes[c].name, name) == 0) return c;
  return -1;
}

/* An element named `name` with dev="dev" that is not `except`; -1 when none. */
static int elemWithDev(const struct chrXml* xml, const char* name, int dev, int except) {
  for (int i = 0; i < xml->nNodes; i++) {
    const char* t = i != except && strcmp(xml->nodes[i].name, name) == 0 ? chrXmlAttr(xml, i, "dev") : NULL;
    if (t && atoi(t) == dev) return i;
  }
  return -1;
}

static ncclResult_t setIfAbsent(struct chrXml* xml, int elem, const char* key, long long value) {
  if (chrXmlAttr(xml, elem, key)) return ncclSuccess;
  char text[32];
  snprintf(text, sizeof(text), "%lld", value);
  return chrXmlSetAttr(xml, elem, key, text);
}

static ncclResult_t addGpu(struct disc* d, const struct chrTopoGpuInput* g) {
  char busid[32];
  chrTopoBusIdText(g->busId, busid, sizeof(busid));
  int pci, gpu;
  CHECK(pciFor(d, g->busId, &pci));
  gpu = childNamed(d->xml, pci, "gpu");
  int other = elemWithDev(d->xml, "gpu", g->dev, gpu);
  if (other >= 0) {
    INFO(NCCL_GRAPH, "topology: GPU %d (%s) not added: %s:%d gives dev %d to another GPU", g->dev, busid,
         d->xml->path, d->xml->nodes[other].line, g->dev);
    return ncclSuccess;
  }
  if (!chrXmlAttr(d->xml, pci, "class")) CHECK(chrXmlSetAttr(d->xml, pci, "class", "0x030200"));
  if (gpu < 0) CHECK(chrXmlAddChild(d->xml, pci, "gpu", &gpu));
  CHECK(setIfAbsent(d->xml, gpu, "dev", g->dev));
  CHECK(setIfAbsent(d->xml, gpu, "sm", g->sm));
  if (g->rank >= 0) CHECK(setIfAbsent(d->xml, gpu, "rank", g->rank));
  return setIfAbsent(d->xml, gpu, "gdr", g->gdr ? 1 : 0);
}

static int netByName(const struct chrXml* xml, const char* name) {
  for (int i = 0; i < xml->nNodes; i++) {
    const char* t = strcmp(xml->nodes[i].name, "net") == 0 ? chrXmlAttr(xml, i, "name") : NULL;
    if (t && strcmp(t, name) == 0) return i;
  }
  return -1;
}

static ncclResult_t addNet(struct disc* d, const struct chrTopoNetInput* n) {
  char name[CHR_XML_MAX_STR + 1];
  snprintf(name, sizeof(name), "%s", n->name && n->name[0] ? n->name : "net");
  for (char* c = name; *c; c++)
    if ((unsigned char)*c < 0x20 || *c == '"' || *c == '<' || *c == '>' || (unsigned char)*c > 0x7e) *c = '_';
  int net = netByName(d->xml, name);
  int other = elemWithDev(d->xml, "net", n->dev, net);
  if (other >= 0) {
    INFO(NCCL_GRAPH, "topology: NET %d (%s) not added: %s:%d gives dev %d to another NET", n->dev, name,
         d->xml->path, d->xml->nodes[other].line, n->dev);
    return ncclSuccess;
  }
  if (net < 0) {
    /* The card: the last component of pciPath when it is a PCI address, else a NIC on the CPU. */
    const char* base = n->pciPath ? strrchr(n->pciPath, '/') : NULL;
    int64_t id;
    int parent, nic;
    if (base && chrTopoParseBusId(base + 1, &id) == 0) {
      CHECK(pciFor(d, id, &parent));
      if (!chrXmlAttr(d->xml, parent, "class")) CHECK(chrXmlSetAttr(d->xml, parent, "class", "0x020000"));
    } else {
      CHECK(cpuFor(d, d->nCpus > 0 ? d->numas[0] : -1, &parent));
    }
    nic = childNamed(d->xml, parent, "nic");
    if (nic < 0) CHECK(chrXmlAddChild(d->xml, parent, "nic", &nic));
    CHECK(chrXmlAddChild(d->xml, nic, "net", &net));
    CHECK(chrXmlSetAttr(d->xml, net, "name", name));
  } else {
    /* The file's NET: its card's <pci> gets what it lacks from sysfs, as a discovered one would. */
    int nic = d->xml->nodes[net].parent, card = nic >= 0 ? d->xml->nodes[nic].parent : -1;
    const char* busid = card >= 0 && strcmp(d->xml->nodes[card].name, "pci") == 0 ? chrXmlAttr(d->xml, card, "busid") : NULL;
    int64_t id;
    if (busid && chrTopoParseBusId(busid, &id) == 0) {
      CHECK(pciFor(d, id, &card));
      if (!chrXmlAttr(d->xml, card, "class")) CHECK(chrXmlSetAttr(d->xml, card, "class", "0x020000"));
    }
  }
  CHECK(setIfAbsent(d->xml, net, "dev", n->dev));
  CHECK(setIfAbsent(d->xml, net, "speed", (long long)n->speed));
  CHECK(setIfAbsent(d->xml, net, "port", n->port));
  if (!chrXmlAttr(d->xml, net, "guid")) {
    char text[24];
    snprintf(text, sizeof(text), "0x%llx", (unsigned long long)n->guid);
    CHECK(chrXmlSetAttr(d->xml, net, "guid", text));
  }
  CHECK(setIfAbsent(d->xml, net, "maxconn", n->maxComms));
  return setIfAbsent(d->xml, net, "gdr", n->gdr ? 1 : 0);
}

ncclResult_t chrTopoDiscover(const struct chrTopoDiscoverInput* in, struct chrXml** xml) {
  static const char kEmpty[] = "<system version=\"1\"/>";
  int made = *xml == NULL;
  if (made) CHECK(chrXmlParse("discovered", kEmpty, sizeof(kEmpty) - 1, xml));
  struct disc* d = calloc(1, sizeof(*d));
  if (!d) return chrFail(ncclSystemError, "topology: out of memory");
  d->xml = *xml;
  const char* root = in->sysfsRoot ? in->sysfsRoot : chrParamStr(CHR_P_SYSFS_ROOT);
  snprintf(d->root, sizeof(d->root), "%s", root[0] ? root : "/sys");
  ncclResult_t res = discoverCpus(d);
  for (int i = 0; res == ncclSuccess && i < in->nGpus; i++) res = addGpu(d, &in->gpus[i]);
  for (int i = 0; res == ncclSuccess && i < in->nNets; i++) res = addNet(d, &in->nets[i]);
  free(d);
  if (res != ncclSuccess && made) {
    chrXmlFree(*xml);
    *xml = NULL;
  }
  return res;
}
