/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo.c: the topology module (core/topo/) on real machines' files and on broken ones.
 * Usage: test_topo CASE DATA_DIR   (DATA_DIR: tests/data/topologies; test_topo.cmake registers each
 * CASE as unit.topo_CASE). Each case asserts the values NCCL's rules give for that machine
 * (docs/design.md, "Topology"), so a change of rule or parser shows as a named wrong value.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config_test_util.h"
#include "topo_test_util.h"
#include "nccl.h"
#include "log/log.h"
#include "topo/topo_discover.h"
#include "topo/topo_nic.h"
#include "topo/topo_paths.h"
#include "topo/topo_report.h"

static const char* dataDir;

/* NCCL's defaults, as chrTopoSettingsRead gives them with nothing set. */
static const struct chrTopoSettings kDefaults = {.gdrLevel = -1, .gdrRead = -2, .gdrC2c = 1, .policy = CHR_NETDEVS_AUTO,
                                                 .pxnC2c = 1};

static struct chrTopoSystem* loadReal(const char* file, int sm, const struct chrTopoFillOptions* more,
                                      const struct chrTopoSettings* settings) {
  struct chrTopoFillOptions fill = {.sm = sm, .netSpeed = 400000}; /* 50 GB/s: PCIe is the narrower */
  if (more) fill = *more;
  return topoTestLoadFile(dataDir, file, &fill, settings ? settings : &kDefaults);
}

static struct chrTopoSystem* loadText(const char* text, const struct chrTopoSettings* settings) {
  return topoTestLoadText("inline.xml", text, settings ? settings : &kDefaults);
}

static int gpuByDev(const struct chrTopoSystem* sys, int dev) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++)
    if (sys->nodes[sys->list[CHR_TOPO_GPU][i]].dev == dev) return sys->list[CHR_TOPO_GPU][i];
  fprintf(stderr, "no GPU dev %d\n", dev);
  exit(1);
}

static int netByDev(const struct chrTopoSystem* sys, int dev) {
  for (int i = 0; i < sys->count[CHR_TOPO_NET]; i++)
    if (sys->nodes[sys->list[CHR_TOPO_NET][i]].dev == dev) return sys->list[CHR_TOPO_NET][i];
  fprintf(stderr, "no NET dev %d\n", dev);
  exit(1);
}

static int netDevFor(const struct chrTopoSystem* sys, int gpuDev, int channel) {
  int net = chrTopoNetForChannel(sys, gpuByDev(sys, gpuDev), channel);
  return net < 0 ? -1 : sys->nodes[net].dev;
}

static const struct chrTopoPath* gpuNet(const struct chrTopoSystem* sys, int gpuDev, int netDev) {
  return chrTopoPathOf(sys, gpuByDev(sys, gpuDev), netByDev(sys, netDev));
}

static int gdr(const struct chrTopoSystem* sys, int gpuDev, int netDev, int read) {
  return chrTopoCheckGdr(sys, gpuByDev(sys, gpuDev), netByDev(sys, netDev), read);
}

/* The NIC under the same switch as GPU dev g, for p4d (GPUs 2k, 2k+1 share NIC k) */
static void caseP4d(void) {
  const char* files[] = {"aws-p4d.24xlarge-topo.xml", "aws-p4de.24xlarge-topo.xml"};
  for (int f = 0; f < 2; f++) {
    struct chrTopoSystem* sys = loadReal(files[f], 80, NULL, NULL);
    EXPECT(sys->count[CHR_TOPO_GPU] == 8 && sys->count[CHR_TOPO_NET] == 4, "%s: %d GPUs, %d NETs", files[f],
           sys->count[CHR_TOPO_GPU], sys->count[CHR_TOPO_NET]);
    EXPECT(sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw == 10.0f, "Skylake (model 85) SYS bw %g, want 10",
           sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw);
    for (int g = 0; g < 8; g++) {
      int own = g / 2;
      for (int c = 0; c < 4; c++) EXPECT(netDevFor(sys, g, c) == own, "%s: GPU %d channel %d uses NET %d, want %d",
                                         files[f], g, c, netDevFor(sys, g, c), own);
      const struct chrTopoPath* p = gpuNet(sys, g, own);
      EXPECT(p->type == CHR_PATH_PIX && p->bw == 12.0f, "GPU %d -> own NIC: %s %g, want PIX 12", g,
             chrTopoPathName(p->type), p->bw);
      EXPECT(gdr(sys, g, own, 1) && gdr(sys, g, own, 0), "GPU %d: GDR read %d write %d, want both", g,
             gdr(sys, g, own, 1), gdr(sys, g, own, 0));
      int other = own ^ 1; /* the other switch of the same socket */
      EXPECT(gpuNet(sys, g, other)->type == CHR_PATH_PHB, "GPU %d -> NIC %d: %s, want PHB", g, other,
             chrTopoPathName(gpuNet(sys, g, other)->type));
      EXPECT(gpuNet(sys, g, (own + 2) % 4)->type == CHR_PATH_SYS, "GPU %d -> other socket's NIC: %s", g,
             chrTopoPathName(gpuNet(sys, g, (own + 2) % 4)->type));
      EXPECT(!gdr(sys, g, other, 0), "GPU %d: GDR to a PHB NIC", g);
    }
    chrTopoFree(sys);
  }
}

/* NDv5: one NIC per GPU on a Gen5 switch: PIX at 48 GB/s, every GPU its own rail, GDR on. */
static void caseNdv5(void) {
  struct chrTopoFillOptions fill = {.sm = 90, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv5-topo.xml", 90, &fill, NULL);
  EXPECT(sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw == 22.0f, "Sapphire Rapids SYS bw %g, want 22",
         sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw);
  int used = 0;
  for (int g = 0; g < 8; g++) {
    int net = netDevFor(sys, g, 0);
    EXPECT(net == g, "GPU %d uses NET %d, want %d (GPU and NIC n share switch n in bus id order)", g, net, g);
    EXPECT(netDevFor(sys, g, 1) == net, "GPU %d changes NIC on channel 1", g);
    used |= 1 << net;
    const struct chrTopoPath* p = gpuNet(sys, g, g);
    EXPECT(p->type == CHR_PATH_PIX && p->bw == 48.0f, "GPU %d: %s %g, want PIX 48", g, chrTopoPathName(p->type), p->bw);
    EXPECT(gdr(sys, g, g, 1) && gdr(sys, g, g, 0), "GPU %d: GDR off", g);
  }
  EXPECT(used == 0xff, "NICs used: 0x%x, want all 8", used);
  chrTopoFree(sys);
}

/* NDv2: no switches, one NIC on NUMA 0: PHB from NUMA 0's GPUs, SYS from NUMA 1's; GDR off. */
static void caseNdv2(void) {
  struct chrTopoSystem* sys = loadReal("azure-ndv2-topo.xml", 70, NULL, NULL);
  for (int g = 0; g < 8; g++) {
    int want = g < 4 ? CHR_PATH_PHB : CHR_PATH_SYS;
    EXPECT(gpuNet(sys, g, 0)->type == want, "GPU %d: %s, want %s", g, chrTopoPathName(gpuNet(sys, g, 0)->type),
           chrTopoPathName(want));
    EXPECT(!gdr(sys, g, 0, 0) && !gdr(sys, g, 0, 1), "GPU %d: GDR on", g);
    EXPECT(netDevFor(sys, g, 3) == 0, "GPU %d: channel 3 on NET %d", g, netDevFor(sys, g, 3));
  }
  chrTopoFree(sys);
}

/* NDv4: two GPUs and two NICs per switch: each GPU its own NIC of the two; AMD SYS 16. */
static void caseNdv4(void) {
  struct chrTopoSystem* sys = loadReal("azure-ndv4-topo.xml", 80, NULL, NULL);
  EXPECT(sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw == 16.0f, "AMD SYS bw %g", sys->nodes[sys->list[CHR_TOPO_CPU][0]].sysBw);
  /* Bus ids: GPU 0001/0002 with NIC 0101/0102 on one switch, ...: GPU dev d, NET dev d by bus id order. */
  for (int g = 0; g < 8; g++) {
    EXPECT(netDevFor(sys, g, 0) == g, "GPU %d uses NET %d, want %d", g, netDevFor(sys, g, 0), g);
    EXPECT(gpuNet(sys, g, g)->type == CHR_PATH_PIX && gpuNet(sys, g, g ^ 1)->type == CHR_PATH_PIX,
           "GPU %d: the switch's NICs are not both PIX", g);
    EXPECT(gpuNet(sys, g, g)->bw == 24.0f, "GPU %d: bw %g, want 24 (\"16 GT/s\" x16)", g, gpuNet(sys, g, g)->bw);
  }
  chrTopoFree(sys);
}

/* p5: 4 EFA per switch, GPUs not in the file: channels cycle over the switch's 4 NICs (AUTO, ALL);
 * MAX:2 over 2. */
static void caseP5(void) {
  struct chrTopoFillOptions fill = {.sm = 90, .netSpeed = 100000, .leafClass = "0x020000", .gpuPerSwitch = 1};
  struct chrTopoSystem* sys = loadReal("aws-p5.48xlarge-topo.xml", 90, &fill, NULL);
  EXPECT(sys->count[CHR_TOPO_GPU] == 8 && sys->count[CHR_TOPO_NET] == 32, "%d GPUs %d NETs", sys->count[CHR_TOPO_GPU],
         sys->count[CHR_TOPO_NET]);
  for (int g = 0; g < 8; g++)
    for (int c = 0; c < 8; c++) {
      int want = 4 * g + c % 4;
      EXPECT(netDevFor(sys, g, c) == want, "GPU %d channel %d: NET %d, want %d", g, c, netDevFor(sys, g, c), want);
      EXPECT(gpuNet(sys, g, want)->type == CHR_PATH_PIX && gdr(sys, g, want, 0), "GPU %d NET %d not PIX+GDR", g, want);
    }
  /* "32 GT/s PCIe/s" reads as Gen5 by prefix: x16 = 48. */
  EXPECT(chrTopoPathOf(sys, gpuByDev(sys, 0), sys->nodes[netByDev(sys, 0)].cpu)->type == CHR_PATH_PHB, "GPU 0 -> CPU");
  chrTopoFree(sys);
  struct chrTopoSettings s = kDefaults;
  s.policy = CHR_NETDEVS_MAX;
  s.policyMax = 2;
  sys = loadReal("aws-p5.48xlarge-topo.xml", 90, &fill, &s);
  for (int c = 0; c < 4; c++) EXPECT(netDevFor(sys, 1, c) == 4 + c % 2, "MAX:2 GPU 1 channel %d: NET %d", c, netDevFor(sys, 1, c));
  chrTopoFree(sys);
  s.policy = CHR_NETDEVS_ALL;
  sys = loadReal("aws-p5.48xlarge-topo.xml", 90, &fill, &s);
  for (int c = 0; c < 4; c++) EXPECT(netDevFor(sys, 1, c) == 4 + c, "ALL GPU 1 channel %d: NET %d", c, netDevFor(sys, 1, c));
  chrTopoFree(sys);
}

/* NCv4: GPUs and the net given by the file; the socket NIC hangs off CPU 0 with gdr="0". g5: no
 * classes, so offline nothing is a GPU or NIC. */
static void caseNcv4(void) {
  struct chrTopoSystem* sys = loadReal("azure-ncv4-topo.xml", 80, NULL, NULL);
  EXPECT(sys->count[CHR_TOPO_GPU] == 4 && sys->count[CHR_TOPO_NET] == 1, "%d GPUs %d NETs", sys->count[CHR_TOPO_GPU],
         sys->count[CHR_TOPO_NET]);
  for (int g = 0; g < 4; g++) {
    EXPECT(sys->nodes[gpuByDev(sys, g)].rank == g, "GPU %d rank %d", g, sys->nodes[gpuByDev(sys, g)].rank);
    int want = g == 0 ? CHR_PATH_PHB : CHR_PATH_SYS;
    EXPECT(gpuNet(sys, g, 0)->type == want, "GPU %d -> eth0: %s", g, chrTopoPathName(gpuNet(sys, g, 0)->type));
    EXPECT(!gdr(sys, g, 0, 0), "GPU %d: GDR with a gdr=0 NIC", g);
    EXPECT(netDevFor(sys, g, 0) == 0, "GPU %d: NET %d", g, netDevFor(sys, g, 0));
  }
  chrTopoFree(sys);
  sys = loadReal("aws-g5.48xlarge-topo.xml", 80, NULL, NULL);
  EXPECT(sys->count[CHR_TOPO_GPU] == 0 && sys->count[CHR_TOPO_NET] == 0 && sys->count[CHR_TOPO_CPU] == 2,
         "g5: %d GPUs %d NETs", sys->count[CHR_TOPO_GPU], sys->count[CHR_TOPO_NET]);
  chrTopoFree(sys);
}

/* NCCL_NET_GDR_LEVEL and NCCL_NET_GDR_READ, given directly and through the environment. */
static void caseGdr(void) {
  struct chrTopoSettings s = kDefaults;
  struct { const char* text; int level; } levels[] = {{"", -1},  {"LOC", CHR_PATH_LOC}, {"PHB", CHR_PATH_PHB},
                                                      {"0", CHR_PATH_LOC}, {"1", CHR_PATH_PIX}, {"2", CHR_PATH_PXB},
                                                      {"3", CHR_PATH_PHB}, {"4", CHR_PATH_SYS}, {"7", CHR_PATH_SYS}};
  for (size_t i = 0; i < sizeof(levels) / sizeof(levels[0]); i++) {
    int level = -5;
    EXPECT(chrTopoParseGdrLevel(levels[i].text, &level) == ncclSuccess && level == levels[i].level,
           "NCCL_NET_GDR_LEVEL=%s -> %d, want %d", levels[i].text, level, levels[i].level);
  }
  int level;
  EXPECT(chrTopoParseGdrLevel("phb", &level) == ncclInvalidUsage, "lower-case names are not NCCL's");
  EXPECT(strstr(chrThreadLastError(), "NCCL_NET_GDR_LEVEL=\"phb\""), "message: %s", chrThreadLastError());
  /* p4d: GPU 0's NICs: 0 PIX, 1 PHB, 2 SYS. */
  int want[][3] = {{CHR_PATH_LOC, 0, 0}, {CHR_PATH_PIX, 1, 0}, {CHR_PATH_PHB, 1, 1}, {CHR_PATH_SYS, 1, 1}};
  for (int i = 0; i < 4; i++) {
    s.gdrLevel = want[i][0];
    struct chrTopoSystem* sys = loadReal("aws-p4d.24xlarge-topo.xml", 80, NULL, &s);
    EXPECT(gdr(sys, 0, 0, 0) == want[i][1] && gdr(sys, 0, 1, 0) == want[i][2],
           "level %s: GDR to NIC 0 %d, NIC 1 %d; want %d %d", chrTopoPathName(want[i][0]), gdr(sys, 0, 0, 0),
           gdr(sys, 0, 1, 0), want[i][1], want[i][2]);
    /* Below PHB a path GPUDirect may not use goes through the CPU: PIX becomes PHB at level LOC. */
    EXPECT(gpuNet(sys, 0, 0)->type == (want[i][0] == CHR_PATH_LOC ? CHR_PATH_PHB : CHR_PATH_PIX), "level %s: path %s",
           chrTopoPathName(want[i][0]), chrTopoPathName(gpuNet(sys, 0, 0)->type));
    chrTopoFree(sys);
  }
  /* Read side: sm < 80 without NVLink peers: no; NCCL_NET_GDR_READ=1: yes; 0: no even on sm 90. */
  s = kDefaults;
  struct chrTopoSystem* sys = loadReal("aws-p4d.24xlarge-topo.xml", 70, NULL, &s);
  EXPECT(!gdr(sys, 0, 0, 1) && gdr(sys, 0, 0, 0), "sm 70: read %d write %d, want 0 1", gdr(sys, 0, 0, 1), gdr(sys, 0, 0, 0));
  chrTopoFree(sys);
  s.gdrRead = 1;
  sys = loadReal("aws-p4d.24xlarge-topo.xml", 70, NULL, &s);
  EXPECT(gdr(sys, 0, 0, 1), "sm 70 with NCCL_NET_GDR_READ=1: read off");
  chrTopoFree(sys);
  s.gdrRead = 0;
  sys = loadReal("aws-p4d.24xlarge-topo.xml", 90, NULL, &s);
  EXPECT(!gdr(sys, 0, 0, 1) && gdr(sys, 0, 0, 1) == 0 && gdr(sys, 0, 0, 0), "NCCL_NET_GDR_READ=0: read on");
  chrTopoFree(sys);
  /* Through the configuration. */
  setenv("NCCL_NET_GDR_LEVEL", "PHB", 1);
  setenv("NCCL_NET_GDR_READ", "0", 1);
  setenv("NCCL_NETDEVS_POLICY", "max:3", 1);
  chrConfigReload();
  EXPECT(chrTopoSettingsRead(&s) == ncclSuccess && s.gdrLevel == CHR_PATH_PHB && s.gdrRead == 0 &&
             s.policy == CHR_NETDEVS_MAX && s.policyMax == 3,
         "settings from the environment: level %d read %d policy %d/%d", s.gdrLevel, s.gdrRead, s.policy, s.policyMax);
  /* A bad value fails at load, with its reason, and is not applied (AUTO, the default, stands). */
  setenv("NCCL_NETDEVS_POLICY", "MAX:0", 1);
  chrConfigReload();
  chrClearLastError();
  EXPECT(chrConfigValidate() == ncclInvalidUsage && strstr(chrThreadLastError(), "NCCL_NETDEVS_POLICY='MAX:0'") &&
             strstr(chrThreadLastError(), "MAX:N (N from 1 to 256)"),
         "MAX:0 at load: %s", chrThreadLastError());
  EXPECT(chrTopoSettingsRead(&s) == ncclSuccess && s.policy == CHR_NETDEVS_AUTO, "MAX:0 applied: policy %d", s.policy);
  int policy, max;
  EXPECT(chrTopoParseNetDevsPolicy("MAX:0", &policy, &max) == ncclInvalidUsage &&
             strstr(chrThreadLastError(), "NCCL_NETDEVS_POLICY=\"MAX:0\""),
         "MAX:0 parsed: %s", chrThreadLastError());
  unsetenv("NCCL_NET_GDR_LEVEL");
  unsetenv("NCCL_NET_GDR_READ");
  unsetenv("NCCL_NETDEVS_POLICY");
  chrConfigReload();
}

/* PXN, NVB and P2C on small files written here: what the published files do not exercise. */
static const char* kPxnXml =
    "<system version=\"1\">\n"
    " <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n"
    "  <pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
    "   <pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
    "    <gpu dev=\"0\" sm=\"90\" gdr=\"1\"><nvlink target=\"fffffff:ffff:ff\" count=\"18\" tclass=\"0x068000\"/></gpu>\n"
    "   </pci>\n"
    "   <pci busid=\"0000:03:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
    "    <nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" gdr=\"1\"/></nic>\n"
    "   </pci>\n"
    "  </pci>\n"
    " </cpu>\n"
    " <cpu numaid=\"1\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n"
    "  <pci busid=\"0000:81:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
    "   <gpu dev=\"1\" sm=\"90\" gdr=\"1\"><nvlink target=\"fffffff:ffff:ff\" count=\"18\" tclass=\"0x068000\"/></gpu>\n"
    "  </pci>\n"
    " </cpu>\n"
    "</system>\n";

static void casePxn(void) {
  struct chrTopoSettings s = kDefaults;
  struct chrTopoSystem* sys = loadText(kPxnXml, &s);
  const struct chrTopoPath* p = gpuNet(sys, 1, 0);
  EXPECT(p->type == CHR_PATH_PXN && p->via == gpuByDev(sys, 0), "GPU 1 -> NET 0: %s via %d, want PXN via GPU 0",
         chrTopoPathName(p->type), p->via);
  EXPECT(p->bw == 48.0f, "PXN bw %g, want 48 (GPU 0's PCIe)", p->bw);
  EXPECT(gdr(sys, 1, 0, 1), "PXN: GDR judged on GPU 0's PIX path");
  EXPECT(chrTopoPathOf(sys, netByDev(sys, 0), gpuByDev(sys, 1))->type == CHR_PATH_SYS, "receives never use PXN");
  EXPECT(chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 1))->type == CHR_PATH_NVL, "GPU 0 -> 1 over the NVSwitch");
  EXPECT(chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 1))->bw == 18 * 20.6f, "NVLink bw %g",
         chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 1))->bw);
  chrTopoFree(sys);
  s.pxnDisable = 1;
  sys = loadText(kPxnXml, &s);
  EXPECT(gpuNet(sys, 1, 0)->type == CHR_PATH_SYS, "NCCL_PXN_DISABLE=1: %s", chrTopoPathName(gpuNet(sys, 1, 0)->type));
  chrTopoFree(sys);

  /* NVB: 0 - 1 - 2 by direct NVLinks; 0 reaches 2 through 1 unless NCCL_NVB_DISABLE. */
  char nvb[2048];
  snprintf(nvb, sizeof(nvb),
           "<system version=\"1\"><cpu numaid=\"0\">"
           "<pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"80\">"
           "<nvlink target=\"0000:02:00.0\" count=\"4\"/></gpu></pci>"
           "<pci busid=\"0000:02:00.0\" class=\"0x030200\"><gpu dev=\"1\" sm=\"80\">"
           "<nvlink target=\"0000:01:00.0\" count=\"4\"/><nvlink target=\"0000:03:00.0\" count=\"4\"/></gpu></pci>"
           "<pci busid=\"0000:03:00.0\" class=\"0x030200\"><gpu dev=\"2\" sm=\"80\">"
           "<nvlink target=\"0000:02:00.0\" count=\"4\"/></gpu></pci>"
           "</cpu></system>");
  s = kDefaults;
  sys = loadText(nvb, &s);
  p = chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 2));
  EXPECT(p->type == CHR_PATH_NVB && p->bw == 80.0f, "GPU 0 -> 2: %s %g, want NVB 80", chrTopoPathName(p->type), p->bw);
  chrTopoFree(sys);
  s.nvbDisable = 1;
  sys = loadText(nvb, &s);
  EXPECT(chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 2))->type == CHR_PATH_PHB, "NCCL_NVB_DISABLE=1: %s",
         chrTopoPathName(chrTopoPathOf(sys, gpuByDev(sys, 0), gpuByDev(sys, 2))->type));
  chrTopoFree(sys);

  /* P2C: a GPU on C2C to its CPU, a NIC on that CPU's root complex. */
  const char* p2c = "<system version=\"1\"><cpu numaid=\"0\" arch=\"arm64\">"
                    "<pci busid=\"0009:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\">"
                    "<c2c bw=\"22500\" count=\"10\"/></gpu></pci>"
                    "<pci busid=\"0000:01:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">"
                    "<nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\"/></nic></pci></cpu></system>";
  s = kDefaults;
  sys = loadText(p2c, &s);
  EXPECT(gpuNet(sys, 0, 0)->type == CHR_PATH_P2C && gdr(sys, 0, 0, 0), "C2C GPU -> NIC: %s gdr %d, want P2C 1",
         chrTopoPathName(gpuNet(sys, 0, 0)->type), gdr(sys, 0, 0, 0));
  EXPECT(gpuNet(sys, 0, 0)->bw == 48.0f, "P2C bw %g, want 48", gpuNet(sys, 0, 0)->bw);
  chrTopoFree(sys);
  s.gdrC2c = 0;
  sys = loadText(p2c, &s);
  EXPECT(!gdr(sys, 0, 0, 0) && gpuNet(sys, 0, 0)->type == CHR_PATH_PHB, "NCCL_NET_GDR_C2C=0: gdr %d path %s",
         gdr(sys, 0, 0, 0), chrTopoPathName(gpuNet(sys, 0, 0)->type));
  chrTopoFree(sys);
}

/* PCIe and NVLink bandwidth rules. */
static void caseBandwidth(void) {
  struct { const char* speed; const char* width; float bw; } cases[] = {
      {"8 GT/s", "16", 12}, {"16 GT/s", "16", 24}, {"16.0 GT/s PCIe", "16", 24}, {"16.0 GT/s", "16", 12},
      {"32 GT/s PCIe/s", "16", 48}, {"32.0 GT/s PCIe", "16", 48}, {"64.0 GT/s PCIe", "16", 96},
      {"", "0", 12}, {NULL, NULL, 12}, {"32.0 GT/s PCIe", "8", 24}, {"2.5 GT/s", "1", 0.1875f}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    EXPECT(chrTopoPciBw(cases[i].speed, cases[i].width) == cases[i].bw, "'%s' x%s: %g, want %g",
           cases[i].speed ? cases[i].speed : "(none)", cases[i].width ? cases[i].width : "(none)",
           chrTopoPciBw(cases[i].speed, cases[i].width), cases[i].bw);
  EXPECT(chrTopoNvlinkBw(70) == 20.0f && chrTopoNvlinkBw(86) == 12.0f && chrTopoNvlinkBw(90) == 20.6f &&
             chrTopoNvlinkBw(100) == 40.1f && chrTopoNvlinkBw(60) == 18.0f,
         "NVLink per-link bandwidths");
}

/* Report text of a model, without its first line (which names the file). */
static char* reportOf(const struct chrTopoSystem* sys) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  chrTopoReport(sys, "x", 8, f);
  fclose(f);
  return text;
}

static void caseRoundTrip(void) {
  const char* files[] = {"aws-p4d.24xlarge-topo.xml", "aws-p5.48xlarge-topo.xml", "azure-ndv2-topo.xml",
                         "azure-ndv4-topo.xml", "azure-ndv5-topo.xml", "azure-ncv4-topo.xml", "aws-g5.48xlarge-topo.xml"};
  struct chrTopoFillOptions fill = {.sm = 80, .netSpeed = 200000, .leafClass = "0x020000", .gpuPerSwitch = 1};
  for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
    struct chrTopoSystem* a = loadReal(files[f], 80, &fill, NULL);
    char dump1[512], dump2[512];
    testPath(dump1, sizeof(dump1), "dump1.xml");
    testPath(dump2, sizeof(dump2), "dump2.xml");
    EXPECT(chrXmlWriteFile(a->xml, dump1) == ncclSuccess, "write %s", files[f]);
    struct chrXml* xml = NULL;
    struct chrTopoSystem* b = NULL;
    EXPECT(chrXmlLoad(dump1, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &b) == ncclSuccess,
           "%s: its dump does not load: %s", files[f], chrThreadLastError());
    if (!b) continue;
    char *ra = reportOf(a), *rb = reportOf(b);
    EXPECT(strcmp(ra, rb) == 0, "%s: the model read back differs:\n%s\n---\n%s", files[f], ra, rb);
    EXPECT(a->nNodes == b->nNodes && a->xml->nNodes == b->xml->nNodes, "%s: %d/%d nodes, %d/%d elements", files[f],
           a->nNodes, b->nNodes, a->xml->nNodes, b->xml->nNodes);
    EXPECT(chrXmlWriteFile(b->xml, dump2) == ncclSuccess, "write again");
    char *t1 = readWholeFile(dump1), *t2 = readWholeFile(dump2);
    EXPECT(t1 && t2 && strcmp(t1, t2) == 0, "%s: writing what was read back changes the text", files[f]);
    free(t1);
    free(t2);
    free(ra);
    free(rb);
    chrTopoFree(a);
    chrTopoFree(b);
  }
}

/* Text that must fail: the line the message names and a word of the reason. */
static void expectBad(const char* what, const char* text, size_t len, int line, const char* why) {
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  ncclResult_t res = chrXmlParse("bad.xml", text, len, &xml);
  if (res == ncclSuccess) res = chrTopoBuild(xml, &kDefaults, &sys);
  char where[32];
  snprintf(where, sizeof(where), "bad.xml:%d: ", line);
  const char* err = chrThreadLastError();
  EXPECT(res == ncclInvalidUsage, "%s: result %d, want ncclInvalidUsage", what, (int)res);
  EXPECT(strncmp(err, where, strlen(where)) == 0 && strstr(err, why), "%s: message '%s', want '%s...%s'", what, err,
         where, why);
  chrTopoFree(sys);
}

#define BAD(what, text, line, why) expectBad(what, text, strlen(text), line, why)

static void caseMalformed(void) {
  const char* ok = "<?xml version=\"1.0\"?>\n<!-- c -->\n<system version=\"1\"><!-- c --><cpu numaid=\"0\">"
                   "<weird a='1'><pci busid=\"0000:01:00.0\"/></weird></cpu></system>\n<!-- end -->\n";
  struct chrXml* xml = NULL;
  EXPECT(chrXmlParse("ok.xml", ok, strlen(ok), &xml) == ncclSuccess && xml->nNodes == 2,
         "prolog, comments and an unknown element: %s", chrThreadLastError());
  chrXmlFree(xml);
  /* What NCCL's reader lets through and this format gives no meaning to: skipped (an INFO each). */
  const char* lenient =
      "<!-- first -->\n<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<!DOCTYPE system [ <!ELEMENT system ANY> <!ATTLIST system version CDATA \"1\"> ]>\n"
      "<system version=\"1\" version=\"2\">text <?pi x?><![CDATA[ <cpu> ]]>\n"
      "  <cpu numaid=\"0\" numaid=\"7\" arch=\"x86_64\">more text &amp; so on\n"
      "    <pci busid=\"0000:01:00.0\" class=\"0x030200\"><gpu dev=\"0\" sm=\"90\" sm=\"70\">\n"
      "      <nvlink target=\"0000:99:00.0\" count=\"18\"/></gpu></pci>\n"
      "  </cpu>\n</system>\ntrailing text\n";
  xml = NULL;
  struct chrTopoSystem* sys = NULL;
  EXPECT(chrXmlParse("lenient.xml", lenient, strlen(lenient), &xml) == ncclSuccess &&
             chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "what NCCL accepts: %s", chrThreadLastError());
  if (sys) {
    /* The first of two attributes counts; the nvlink without tclass to a device not in the file is an
     * NVSwitch link (18 x 20.6 on sm 90). */
    int g = sys->list[CHR_TOPO_GPU][0];
    EXPECT(sys->nodes[g].sm == 90 && sys->nodes[sys->list[CHR_TOPO_CPU][0]].id == 0, "first attribute: sm %d",
           sys->nodes[g].sm);
    EXPECT(!strcmp(chrXmlAttr(sys->xml, 0, "version"), "1") && sys->xml->nodes[0].nAttrs == 1, "second version kept");
    EXPECT(sys->count[CHR_TOPO_NVS] == 1 && sys->nodes[g].links[1].type == CHR_LINK_NVL &&
               sys->nodes[g].links[1].bw > 370.7f && sys->nodes[g].links[1].bw < 370.9f,
           "nvlink without tclass: %d NVSwitches", sys->count[CHR_TOPO_NVS]);
    chrTopoFree(sys);
  }
  char path[1024];
  snprintf(path, sizeof(path), "%s/aws-p4d.24xlarge-topo.xml", dataDir);
  char* full = readWholeFile(path);
  char* cut = strstr(full, "<!-- Switch 2 begins -->");
  expectBad("truncated", full, (size_t)(cut - full), 30, "ends inside <pci> (opened at line 30)");
  free(full);
  BAD("version 2", "<system version=\"2\">\n</system>", 1, "only version 1");
  BAD("no version", "\n<system>\n</system>", 2, "needs version=\"1\"");
  BAD("graph file", "<graphs version=\"1\"></graphs>", 1, "NCCL_GRAPH_FILE");
  BAD("gpu under system", "<system version=\"1\">\n <gpu dev=\"0\"/>\n</system>", 2, "<gpu> inside <system>");
  BAD("net under pci", "<system version=\"1\"><cpu numaid=\"0\">\n<pci busid=\"0000:01:00.0\"><net dev=\"0\"/></pci></cpu></system>",
      2, "<net> inside <pci>");
  BAD("bad close", "<system version=\"1\">\n<cpu numaid=\"0\">\n</pci></system>", 3, "</pci> where </cpu> was expected");
  BAD("unterminated quote", "<system version=\"1\">\n<cpu numaid=\"0>\n</cpu></system>", 2, "not terminated");
  BAD("unquoted", "<system version=1></system>", 1, "must be quoted");
  BAD("unterminated DOCTYPE", "<?xml version=\"1.0\"?>\n<!DOCTYPE system [ <!ELEMENT system ANY> \n<system version=\"1\"/>",
      2, "not terminated by '>'");
  BAD("unterminated CDATA", "<system version=\"1\">\n<![CDATA[ x </system>", 2, "not terminated by ']]>'");
  BAD("unterminated PI", "<system version=\"1\">\n<?pi </system>", 2, "not terminated by '?>'");
  BAD("nvlink without target", "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\">"
      "<gpu dev=\"0\" sm=\"80\">\n<nvlink count=\"4\"/></gpu></pci></cpu></system>", 2, "needs a target");
  BAD("empty", "  \n\n", 3, "no <system> element");
  expectBad("nul", "<system version=\"1\">\n\0</system>", 31, 2, "NUL");
  BAD("after root", "<system version=\"1\"/>\n<system version=\"1\"/>", 2, "after the closing");
  BAD("long value", "<system version=\"1\"><cpu numaid=\"0\" affinity=\""
      "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
      "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff"
      "ffffffffffffffffffffffffffffffffffffffffffffffffffffff\"/></system>", 1, "longer than 255");
  BAD("missing busid", "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci class=\"0x060400\"/></cpu></system>", 3,
      "needs a busid");
  BAD("bad busid", "<system version=\"1\"><cpu numaid=\"0\">\n<pci busid=\"0000:1:00.0\"/></cpu></system>", 2,
      "is not dddd:bb:dd.f");
  BAD("missing numaid", "<system version=\"1\">\n<cpu/></system>", 2, "needs a numaid");
  BAD("sm not a number", "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\">\n"
      "<gpu dev=\"0\" sm=\"x\"/></pci></cpu></system>", 2, "sm=\"x\" is not an integer");
  BAD("nvlink to nothing", "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\" class=\"0x030200\">"
      "<gpu dev=\"0\" sm=\"80\">\n<nvlink target=\"0000:09:00.0\" count=\"4\" tclass=\"0x030200\"/></gpu></pci></cpu></system>",
      2, "names no GPU");
  BAD("pcilink to nothing", "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\">\n"
      "<pcilink target=\"0000:02:00.0\"/></pci></cpu></system>", 2, "names no PCI switch");
  BAD("two nets dev 0", "<system version=\"1\"><cpu numaid=\"0\"><nic><net dev=\"0\"/>\n<net dev=\"0\"/></nic></cpu></system>",
      2, "dev=\"0\" is used twice");
  BAD("two busids", "<system version=\"1\"><cpu numaid=\"0\"><pci busid=\"0000:01:00.0\"/>\n"
      "<pci busid=\"0000:01:00.0\"/></cpu></system>", 2, "is used twice");
  /* 300 nested elements: refused at the 33rd, without recursion. */
  size_t cap = 300 * 40 + 64, len = 0;
  char* deep = malloc(cap);
  len += (size_t)snprintf(deep + len, cap - len, "<system version=\"1\"><cpu numaid=\"0\">\n");
  for (int i = 0; i < 300; i++) len += (size_t)snprintf(deep + len, cap - len, "<pci busid=\"0000:%02x:00.0\">", i & 0xff);
  expectBad("300 nested", deep, len, 2, "nested more than 32 deep");
  free(deep);
  /* 300 elements side by side: NCCL's 256. */
  cap = 300 * 60 + 64;
  len = 0;
  char* wide = malloc(cap);
  len += (size_t)snprintf(wide + len, cap - len, "<system version=\"1\"><cpu numaid=\"0\">\n");
  for (int i = 0; i < 300; i++) len += (size_t)snprintf(wide + len, cap - len, "<pci busid=\"0000:%02x:%02x.0\"/>\n", i / 32, i % 32);
  len += (size_t)snprintf(wide + len, cap - len, "</cpu></system>");
  expectBad("300 elements", wide, len, 256, "more than 256 elements");
  free(wide);
}

/* ---- discovery ------------------------------------------------------------------------------- */

/* A file of the fake sysfs tree (folders made as needed). */
static void fakeFile(const char* root, const char* rel, const char* content) {
  char path[2048];
  snprintf(path, sizeof(path), "%s/%s", root, rel);
  mkdir(root, 0755);
  for (char* p = path + strlen(root) + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  FILE* f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "cannot write %s\n", path);
    exit(1);
  }
  fputs(content, f);
  fclose(f);
}

/* A PCI device at devices/<rel> with bus/pci/devices/<its bus id> pointing to it. */
static void fakePci(const char* root, const char* rel, const char* cls, const char* speed, const char* width) {
  char file[2400], link[2048], target[1024];
  const char* bdf = strrchr(rel, '/') + 1;
  snprintf(file, sizeof(file), "devices/%s/class", rel);
  fakeFile(root, file, cls);
  snprintf(file, sizeof(file), "devices/%s/max_link_speed", rel);
  fakeFile(root, file, speed);
  snprintf(file, sizeof(file), "devices/%s/max_link_width", rel);
  fakeFile(root, file, width);
  snprintf(file, sizeof(file), "devices/%s/numa_node", rel);
  fakeFile(root, file, "0\n");
  snprintf(file, sizeof(file), "bus/pci/devices/%s/x", bdf);
  fakeFile(root, file, ""); /* makes bus/pci/devices/ */
  snprintf(link, sizeof(link), "%s/bus/pci/devices/%s", root, bdf);
  snprintf(file, sizeof(file), "%s/x", link);
  unlink(file);
  rmdir(link);
  snprintf(target, sizeof(target), "../../../devices/%s", rel);
  if (symlink(target, link) != 0) {
    fprintf(stderr, "cannot link %s\n", link);
    exit(1);
  }
}

/* One CPU, a PCIe switch (upstream 0000:01:00.0 under root port 0000:00:01.0) with a GPU-class device
 * (0000:03:00.0) and a NIC (0000:04:00.0) behind a Gen3 downstream port. */
static void makeFakeSys(const char* root) {
  fakeFile(root, "devices/system/node/node0/cpumap", "000000ff\n");
  fakeFile(root, "devices/system/node/possible", "0\n");
  const char* sw = "pci0000:00/0000:00:01.0/0000:01:00.0";
  char rel[512];
  fakePci(root, "pci0000:00/0000:00:01.0", "0x060400\n", "16.0 GT/s PCIe\n", "16\n");
  fakePci(root, sw, "0x060400\n", "16.0 GT/s PCIe\n", "16\n");
  snprintf(rel, sizeof(rel), "devices/%s/vendor", sw);
  fakeFile(root, rel, "0x1000\n");
  snprintf(rel, sizeof(rel), "%s/0000:02:00.0", sw);
  fakePci(root, rel, "0x060400\n", "16.0 GT/s PCIe\n", "16\n");
  snprintf(rel, sizeof(rel), "%s/0000:02:00.0/0000:03:00.0", sw);
  fakePci(root, rel, "0x030200\n", "16.0 GT/s PCIe\n", "16\n");
  snprintf(rel, sizeof(rel), "%s/0000:02:01.0", sw);
  fakePci(root, rel, "0x060400\n", "8.0 GT/s PCIe\n", "16\n");
  snprintf(rel, sizeof(rel), "%s/0000:02:01.0/0000:04:00.0", sw);
  fakePci(root, rel, "0x020000\n", "16.0 GT/s PCIe\n", "16\n");
}

static char* fullReport(const struct chrTopoSystem* sys, int channels) {
  char* text = NULL;
  size_t len = 0;
  FILE* f = open_memstream(&text, &len);
  chrTopoReport(sys, "discovered", channels, f);
  fclose(f);
  return text;
}

static const struct chrTopoGpuInput kFakeGpu = {.busId = 0x3000 /* 0000:03:00.0 */, .dev = 0, .sm = 80, .rank = 0,
                                                .gdr = 1};

/* The fake tree gives a known report; the dump reads back to the same; odd values are skipped. */
static void caseDiscover(void) {
  char root[512];
  testPath(root, sizeof(root), "sys");
  makeFakeSys(root);
  char nicPath[1024];
  snprintf(nicPath, sizeof(nicPath), "/sys/devices/pci0000:00/0000:00:01.0/0000:01:00.0/0000:02:01.0/0000:04:00.0");
  struct chrTopoNetInput net = {.name = "mlx5_0", .pciPath = nicPath, .dev = 0, .speed = 100000, .port = 1, .gdr = 1,
                                .guid = 0x1234, .maxComms = 65536};
  struct chrTopoDiscoverInput in = {.sysfsRoot = root, .nGpus = 1, .gpus = &kFakeGpu, .nNets = 1, .nets = &net};
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  EXPECT(chrTopoDiscover(&in, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "fake tree: %s", chrThreadLastError());
  if (!sys) return;
  char* report = fullReport(sys, 4);
  const char* want =
      "topology discovered cpus 1 switches 1 gpus 1 nics 1 nets 1 nvswitches 0\n"
      "gpu 0 rank 0 busid 0000:03:00.0 sm 80 gdr 1 numa 0\n"
      "gpu 0 channels 0 0 0 0\n"
      "gpu 0 net 0 name mlx5_0 busid 0000:04:00.0 path PIX bw 12.00 gdr_read 1 gdr_write 1\n";
  EXPECT(strcmp(report, want) == 0, "fake tree report:\n%s--- want:\n%s", report, want);
  /* The XML: the root port skipped, the switch on the CPU, link speeds the lower of device and port. */
  int sw = -1, nic = -1;
  for (int i = 0; i < sys->xml->nNodes; i++) {
    const char* b = chrXmlAttr(sys->xml, i, "busid");
    if (b && !strcmp(b, "0000:01:00.0")) sw = i;
    if (b && !strcmp(b, "0000:04:00.0")) nic = i;
    EXPECT(!b || strcmp(b, "0000:00:01.0") != 0, "the root port is an element");
  }
  EXPECT(sw >= 0 && !strcmp(sys->xml->nodes[sys->xml->nodes[sw].parent].name, "cpu") &&
             !strcmp(chrXmlAttr(sys->xml, sw, "vendor"), "0x1000"),
         "switch element");
  EXPECT(nic >= 0 && !strcmp(chrXmlAttr(sys->xml, nic, "link_speed"), "8.0 GT/s PCIe"), "NIC link speed %s",
         nic >= 0 ? chrXmlAttr(sys->xml, nic, "link_speed") : "-");
  EXPECT(!strcmp(chrXmlAttr(sys->xml, sys->xml->nodes[0].firstChild, "affinity"), "000000ff"), "cpu affinity");
  /* The dump reads back to the same report. */
  char dump[512];
  testPath(dump, sizeof(dump), "discovered.xml");
  struct chrXml* back = NULL;
  struct chrTopoSystem* sys2 = NULL;
  EXPECT(chrXmlWriteFile(sys->xml, dump) == ncclSuccess && chrXmlLoad(dump, &back) == ncclSuccess &&
             chrTopoBuild(back, &kDefaults, &sys2) == ncclSuccess,
         "dump read back: %s", chrThreadLastError());
  if (sys2) {
    char* again = fullReport(sys2, 4);
    EXPECT(strcmp(report, again) == 0, "dump read back:\n%s", again);
    free(again);
    chrTopoFree(sys2);
  }
  free(report);
  chrTopoFree(sys);

  /* Odd values: a class that is not hex, binary bytes, a NUMA node that is no number, an id file that
   * is a folder, a NIC whose bus id sysfs lacks, one without pciPath: skipped, never fatal. */
  fakePci(root, "pci0000:00/0000:05:00.0", "garbage\n", "\x01\x02\xff GT/s\n", "999\n");
  fakeFile(root, "devices/pci0000:00/0000:05:00.0/numa_node", "zero\n");
  fakeFile(root, "devices/pci0000:00/0000:05:00.0/vendor/x", "");
  fakeFile(root, "devices/pci0000:00/0000:05:00.0/device", "0x12345678901\n");
  struct chrTopoNetInput nets[4] = {net,
                                    {.name = "odd", .pciPath = "/sys/devices/pci0000:00/0000:05:00.0", .dev = 1, .speed = 25000},
                                    {.name = "gone", .pciPath = "/sys/devices/pci0000:00/0000:99:00.0", .dev = 2, .speed = 25000},
                                    {.name = "eth0\"<x>", .pciPath = NULL, .dev = 3, .speed = 0}};
  in.nNets = 4;
  in.nets = nets;
  xml = NULL;
  sys = NULL;
  EXPECT(chrTopoDiscover(&in, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "odd values: %s", chrThreadLastError());
  if (sys) {
    EXPECT(sys->count[CHR_TOPO_NET] == 4 && sys->count[CHR_TOPO_GPU] == 1 && sys->count[CHR_TOPO_CPU] == 1,
           "odd values: %d NETs %d GPUs %d CPUs", sys->count[CHR_TOPO_NET], sys->count[CHR_TOPO_GPU],
           sys->count[CHR_TOPO_CPU]);
    int odd = netByDev(sys, 1), named = netByDev(sys, 3);
    const char* cls = chrXmlAttr(sys->xml, sys->xml->nodes[sys->xml->nodes[sys->nodes[odd].elem].parent].parent, "class");
    EXPECT(cls && !strcmp(cls, "0x020000"), "odd NIC class %s (sysfs's is garbage)", cls ? cls : "(none)");
    EXPECT(!strcmp(chrTopoNodeAttr(sys, named, "name"), "eth0__x_"), "name %s", chrTopoNodeAttr(sys, named, "name"));
    chrTopoFree(sys);
  }

  /* Fusion: the file places the GPU under a switch of its own and gives the NET a speed; discovery
   * keeps both and adds what the file lacks (the GPU's <gpu>, the NIC's class and its Gen3 link). */
  char file[4096];
  snprintf(file, sizeof(file),
           "<system version=\"1\">\n<cpu numaid=\"0\">\n<pci busid=\"ffff:ff:01.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
           "<pci busid=\"0000:03:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\"/>\n"
           "<pci busid=\"0000:04:00.0\"><nic><net name=\"mlx5_0\" speed=\"400000\"/></nic></pci>\n</pci>\n</cpu>\n</system>\n");
  xml = NULL;
  sys = NULL;
  in.nNets = 1;
  in.nets = &net;
  EXPECT(chrXmlParse("fuse.xml", file, strlen(file), &xml) == ncclSuccess && chrTopoDiscover(&in, &xml) == ncclSuccess &&
             chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "fusion: %s", chrThreadLastError());
  if (sys) {
    report = fullReport(sys, 1);
    const char* fused =
        "topology discovered cpus 1 switches 1 gpus 1 nics 1 nets 1 nvswitches 0\n"
        "gpu 0 rank 0 busid 0000:03:00.0 sm 80 gdr 1 numa 0\n"
        "gpu 0 channels 0\n"
        "gpu 0 net 0 name mlx5_0 busid 0000:04:00.0 path PIX bw 12.00 gdr_read 1 gdr_write 1\n";
    EXPECT(strcmp(report, fused) == 0, "fused report:\n%s--- want:\n%s", report, fused);
    free(report);
    chrTopoFree(sys);
  }
}

/* This machine: discovery must not fail and must be quick (no GPU here is fine). */
static void caseDiscoverLocal(void) {
  struct chrTopoDiscoverInput in = {0};
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ncclResult_t res = chrTopoDiscover(&in, &xml);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  EXPECT(res == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess, "this machine: %s",
         chrThreadLastError());
  EXPECT(ms < 500, "discovery took %.1f ms", ms);
  if (sys) {
    EXPECT(sys->count[CHR_TOPO_CPU] >= 1, "no CPU");
    fprintf(stderr, "this machine: %d CPUs, %d switches in %.2f ms\n", sys->count[CHR_TOPO_CPU],
            sys->count[CHR_TOPO_PCI], ms);
  }
  chrTopoFree(sys);
  /* A root that does not exist: one CPU of NUMA id -1, still no failure. */
  in.sysfsRoot = "/nonexistent/sys";
  xml = NULL;
  sys = NULL;
  EXPECT(chrTopoDiscover(&in, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess &&
             sys->count[CHR_TOPO_CPU] == 1 && sys->nodes[sys->list[CHR_TOPO_CPU][0]].id == -1,
         "no sysfs: %s", chrThreadLastError());
  chrTopoFree(sys);
}

/* Files that are not files, or too big. */
static void caseFiles(void) {
  char big[512], dir[512];
  testPath(big, sizeof(big), "big.xml");
  testPath(dir, sizeof(dir), "adir.xml");
  int fd = open(big, O_CREAT | O_WRONLY | O_TRUNC, 0644);
  EXPECT(fd >= 0 && ftruncate(fd, 100 << 20) == 0, "cannot make a 100 MB file");
  if (fd >= 0) close(fd);
  mkdir(dir, 0755);
  struct { const char* path; const char* why; } cases[] = {
      {big, "at most 1048576 bytes"}, {dir, "not a regular file"}, {"/dev/null", "not a regular file"},
      {"/nonexistent/topo.xml", "cannot open"}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    struct chrXml* xml = NULL;
    ncclResult_t res = chrXmlLoad(cases[i].path, &xml);
    EXPECT(res == ncclInvalidUsage && strstr(chrThreadLastError(), cases[i].path) && strstr(chrThreadLastError(), cases[i].why),
           "%s: result %d, message '%s'", cases[i].path, (int)res, chrThreadLastError());
  }
}

/* NCCL_TOPO_FILE at communicator init: a bad file fails init with its file:line; a good one is
 * written back by rank NCCL_TOPO_DUMP_FILE_RANK only. */
static ncclResult_t initOneRank(void) {
  ncclUniqueId id;
  ncclComm_t comm = NULL;
  chrConfigReload();
  if (ncclGetUniqueId(&id) != ncclSuccess) return ncclSystemError;
  ncclResult_t res = ncclCommInitRank(&comm, 1, id, 0);
  if (res == ncclSuccess) ncclCommDestroy(comm);
  return res;
}

static void caseInit(void) {
  char bad[512], dump[512], good[1024];
  testPath(bad, sizeof(bad), "bad.xml");
  testPath(dump, sizeof(dump), "dump.xml");
  snprintf(good, sizeof(good), "%s/azure-ncv4-topo.xml", dataDir);
  writeTestFile("bad.xml", "<system version=\"1\">\n<cpu numaid=\"0\">\n<gpu dev=\"0\"/>\n</cpu></system>\n");
  setenv("CHORUS_TRANSPORT", "shm", 1);
  setenv("NCCL_TOPO_FILE", bad, 1);
  ncclResult_t res = initOneRank();
  char where[600];
  snprintf(where, sizeof(where), "%s:3: <gpu> inside <cpu>", bad);
  EXPECT(res == ncclInvalidUsage && strstr(ncclGetLastError(NULL), where), "bad NCCL_TOPO_FILE: init %d, '%s'",
         (int)res, ncclGetLastError(NULL));
  setenv("NCCL_TOPO_FILE", good, 1);
  setenv("NCCL_TOPO_DUMP_FILE", dump, 1);
  setenv("NCCL_TOPO_DUMP_FILE_RANK", "1", 1);
  res = initOneRank();
  EXPECT(res == ncclSuccess, "good NCCL_TOPO_FILE: init %d, %s", (int)res, ncclGetLastError(NULL));
  EXPECT(access(dump, F_OK) != 0, "rank 0 wrote the dump of rank 1");
  setenv("NCCL_TOPO_DUMP_FILE_RANK", "0", 1);
  res = initOneRank();
  struct chrXml* xml = NULL;
  struct chrTopoSystem* sys = NULL;
  EXPECT(res == ncclSuccess && chrXmlLoad(dump, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "the dump does not load: %s", chrThreadLastError());
  EXPECT(sys && sys->count[CHR_TOPO_GPU] == 4 && sys->count[CHR_TOPO_NET] == 1, "the dump's model differs");
  chrTopoFree(sys);
  /* Without a file the dump is the discovered topology. */
  unsetenv("NCCL_TOPO_FILE");
  unlink(dump);
  res = initOneRank();
  xml = NULL;
  sys = NULL;
  EXPECT(res == ncclSuccess && chrXmlLoad(dump, &xml) == ncclSuccess && chrTopoBuild(xml, &kDefaults, &sys) == ncclSuccess,
         "the discovered dump does not load: %s", chrThreadLastError());
  EXPECT(sys && sys->count[CHR_TOPO_CPU] >= 1, "the discovered dump has no CPU");
  chrTopoFree(sys);
  unsetenv("NCCL_TOPO_DUMP_FILE");
  unsetenv("NCCL_TOPO_DUMP_FILE_RANK");
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s p4d|ndv5|ndv2|ndv4|p5|ncv4|gdr|pxn|bandwidth|roundtrip|malformed|files|init|discover|discover_local DATA_DIR\n", argv[0]);
    return 2;
  }
  dataDir = argv[2];
  isolateConfig();
  const struct { const char* name; void (*run)(void); } cases[] = {
      {"p4d", caseP4d}, {"ndv5", caseNdv5}, {"ndv2", caseNdv2}, {"ndv4", caseNdv4}, {"p5", caseP5},
      {"ncv4", caseNcv4}, {"gdr", caseGdr}, {"pxn", casePxn}, {"bandwidth", caseBandwidth},
      {"roundtrip", caseRoundTrip}, {"malformed", caseMalformed}, {"files", caseFiles}, {"init", caseInit},
      {"discover", caseDiscover}, {"discover_local", caseDiscoverLocal}};
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
    if (strcmp(argv[1], cases[i].name) == 0) {
      cases[i].run();
      return finishTest();
    }
  fprintf(stderr, "unknown case %s\n", argv[1]);
  return 2;
}
