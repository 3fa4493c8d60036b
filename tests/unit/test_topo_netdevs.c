/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_topo_netdevs.c: a GPU rank's net device list ordered by the topology (chrNetDevsFromTopo,
 * transport/net_devs.h) on the real machines' files of tests/data/topologies, and the cases that
 * keep the plugin's order. Usage: test_topo_netdevs DATA_DIR (unit.topo_netdevs). Each check is an
 * exact device list: entry c is the plugin device of the NIC NCCL gives the GPU for channel c, with
 * whether GPUDirect RDMA may be used with it. And NCCL_CROSS_NIC=0's rails (chrNetRailsFromTopo):
 * every link's two ends on one NIC index.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_test_util.h"
#include "topo_test_util.h"
#include "log/log.h"
#include "topo/topo_model.h"
#include "topo/topo_nic.h"
#include "topo/topo_paths.h"
#include "transport/net_devs.h"

static const char* dataDir;

/* The file completed as test_topo does (GPUs and NETs added by bus id order where it has none),
 * built with the configuration's settings (NCCL_NETDEVS_POLICY from the environment). */
static struct chrTopoSystem* loadReal(const char* file, const struct chrTopoFillOptions* fill) {
  return topoTestLoadFile(dataDir, file, fill, NULL);
}

static int64_t gpuBusId(const struct chrTopoSystem* sys, int dev) {
  for (int i = 0; i < sys->count[CHR_TOPO_GPU]; i++) {
    const struct chrTopoNode* n = &sys->nodes[sys->list[CHR_TOPO_GPU][i]];
    int64_t id;
    if (n->dev == dev && chrTopoParseBusId(chrTopoNodeBusId(sys, sys->list[CHR_TOPO_GPU][i]), &id) == 0) return id;
  }
  fprintf(stderr, "no GPU dev %d with a bus id\n", dev);
  exit(1);
}

static void listText(const struct chrNetDevs* d, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < d->n && used < size; i++)
    used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", d->dev[i]);
}

/* What the plugin's order gives a rank before the topology is asked: 3 devices, 0 1 2. */
static const struct chrNetDevs kBefore = {.dev = {0, 1, 2}, .n = 3};

/* GPU dev `gpu` of `sys` with `nPlugin` plugin devices: filled (`want` = "a,b,..") or, want NULL,
 * left as kBefore. */
static void expectList(const char* what, const struct chrTopoSystem* sys, int gpu, int nPlugin, const char* want) {
  struct chrNetDevs d = kBefore;
  int filled = chrNetDevsFromTopo(sys, gpuBusId(sys, gpu), nPlugin, &d);
  char got[256];
  listText(&d, got, sizeof(got));
  if (want)
    EXPECT(filled == 1 && strcmp(got, want) == 0, "%s GPU %d: filled %d, devs %s, want %s", what, gpu, filled, got, want);
  else
    EXPECT(filled == 0 && memcmp(&d, &kBefore, sizeof(d)) == 0, "%s GPU %d: filled %d, devs %s, want 0,1,2 kept", what,
           gpu, filled, got);
}

static void gdrText(const struct chrNetDevs* d, char* out, size_t size) {
  size_t used = 0;
  out[0] = '\0';
  for (int i = 0; i < d->n && used < size; i++)
    used += (size_t)snprintf(out + used, size - used, "%s%d", i ? "," : "", d->gdr[i]);
}

/* The GPUDirect bits of each entry (CHR_NET_GDR_WRITE 1 | CHR_NET_GDR_READ 2 | CHR_NET_GDR_NOFLUSH 4):
 * `want` = "a,b,..". */
static void expectGdr(const char* what, const struct chrTopoSystem* sys, int gpu, int nPlugin, const char* want) {
  struct chrNetDevs d = kBefore;
  int filled = chrNetDevsFromTopo(sys, gpuBusId(sys, gpu), nPlugin, &d);
  char got[256];
  gdrText(&d, got, sizeof(got));
  EXPECT(filled == 1 && strcmp(got, want) == 0, "%s GPU %d: filled %d, GPUDirect %s, want %s", what, gpu, filled, got,
         want);
}

/* NCCL_NET_GDR_LEVEL and NCCL_NET_GDR_READ, as the topology's rule reads them, change the bits. */
static void caseGdrSettings(void) {
  struct chrTopoFillOptions fill = {.sm = 90, .netSpeed = 400000};
  /* sm 90, no C2C: the GPU orders the NIC's writes, so no flush unless NCCL_NET_FORCE_FLUSH=1 */
  const char* settings[][3] = {{"NCCL_NET_GDR_LEVEL", "LOC", "0"}, {"NCCL_NET_GDR_READ", "0", "5"},
                               {"NCCL_NET_GDR_LEVEL", "SYS", "7"}, {"NCCL_NET_FORCE_FLUSH", "1", "3"}};
  for (int i = 0; i < 4; i++) {
    setenv(settings[i][0], settings[i][1], 1);
    chrConfigReload();
    struct chrTopoSystem* sys = loadReal("azure-ndv5-topo.xml", &fill);
    char what[64];
    snprintf(what, sizeof(what), "NDv5 %s=%s", settings[i][0], settings[i][1]);
    expectGdr(what, sys, 3, 8, settings[i][2]);
    chrTopoFree(sys);
    unsetenv(settings[i][0]);
  }
  chrConfigReload();
  /* NDv2's one NIC is PHB or SYS from every GPU: GPUDirect only when the level allows it. */
  struct chrTopoFillOptions fill2 = {.sm = 70, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv2-topo.xml", &fill2);
  expectGdr("NDv2", sys, 0, 1, "0");
  chrTopoFree(sys);
}

static void caseNdv5(void) {
  struct chrTopoFillOptions fill = {.sm = 90, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv5-topo.xml", &fill);
  for (int g = 0; g < 8; g++) {
    char want[8];
    snprintf(want, sizeof(want), "%d", g); /* GPU and NIC n share switch n: PIX, one NIC per GPU */
    expectList("NDv5", sys, g, 8, want);
    expectGdr("NDv5", sys, g, 8, "7"); /* PIX, sm 90: the NIC reads and writes GPU memory, no flush */
  }
  chrTopoFree(sys);
}

static void caseP4d(void) {
  const char* files[] = {"aws-p4d.24xlarge-topo.xml", "aws-p4de.24xlarge-topo.xml"};
  struct chrTopoFillOptions fill = {.sm = 80, .netSpeed = 400000};
  for (int f = 0; f < 2; f++) {
    struct chrTopoSystem* sys = loadReal(files[f], &fill);
    for (int g = 0; g < 8; g++) {
      char want[8];
      snprintf(want, sizeof(want), "%d", g / 2); /* GPUs 2k and 2k+1 share the PIX NIC k */
      expectList(files[f], sys, g, 4, want);
      expectGdr(files[f], sys, g, 4, "3"); /* sm 80: every receive flushed */
    }
    chrTopoFree(sys);
  }
}

static const struct chrTopoFillOptions kP5Fill = {.sm = 90, .netSpeed = 100000, .leafClass = "0x020000",
                                                  .gpuPerSwitch = 1};

static void caseP5(void) {
  struct chrTopoSystem* sys = loadReal("aws-p5.48xlarge-topo.xml", &kP5Fill);
  for (int g = 0; g < 8; g++) {
    char want[32];
    snprintf(want, sizeof(want), "%d,%d,%d,%d", 4 * g, 4 * g + 1, 4 * g + 2, 4 * g + 3); /* its switch's 4 EFA */
    expectList("p5", sys, g, 32, want);
    expectGdr("p5", sys, g, 32, "7,7,7,7");
  }
  /* A NET whose dev is past the plugin's devices: the plugin's order stays. */
  expectList("p5 with 4 plugin devices", sys, 1, 4, NULL);
  expectList("p5 with 4 plugin devices", sys, 0, 4, "0,1,2,3");
  chrTopoFree(sys);
}

static void caseP5Max2(void) {
  setenv("NCCL_NETDEVS_POLICY", "MAX:2", 1);
  chrConfigReload();
  struct chrTopoSystem* sys = loadReal("aws-p5.48xlarge-topo.xml", &kP5Fill);
  expectList("p5 MAX:2", sys, 0, 32, "0,1");
  expectList("p5 MAX:2", sys, 1, 32, "4,5");
  expectList("p5 MAX:2", sys, 7, 32, "28,29");
  chrTopoFree(sys);
  unsetenv("NCCL_NETDEVS_POLICY");
  chrConfigReload();
}

static void caseNdv2(void) {
  struct chrTopoFillOptions fill = {.sm = 70, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv2-topo.xml", &fill);
  for (int g = 0; g < 8; g++) expectList("NDv2", sys, g, 1, "0"); /* the single NIC, PHB or SYS */
  chrTopoFree(sys);
}

/* A bus id not in the file: kept, with an INFO line that names it. */
static void caseNotInFile(void) {
  char log[600];
  testPath(log, sizeof(log), "info.log");
  setenv("NCCL_DEBUG", "INFO", 1);
  setenv("NCCL_DEBUG_SUBSYS", "INIT,NET", 1);
  setenv("NCCL_DEBUG_FILE", log, 1);
  chrLogReset();
  struct chrTopoFillOptions fill = {.sm = 90, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv5-topo.xml", &fill);
  struct chrNetDevs d = kBefore;
  int64_t missing = 0xab1f0; /* 0000:ab:1f.0 is no device of the file */
  int filled = chrNetDevsFromTopo(sys, missing, 8, &d);
  EXPECT(filled == 0 && memcmp(&d, &kBefore, sizeof(d)) == 0, "a bus id not in the file changed the list (%d)", filled);
  chrTopoFree(sys);
  unsetenv("NCCL_DEBUG_FILE");
  unsetenv("NCCL_DEBUG");
  unsetenv("NCCL_DEBUG_SUBSYS");
  chrLogReset();
  char* text = readWholeFile(log);
  EXPECT(text && strstr(text, "NCCL INFO GPU 0000:ab:1f.0: not in the topology; net devices keep the plugin's order"),
         "no INFO line for the missing GPU in:\n%s", text ? text : "(no log)");
  free(text);
}

/* NETs without dev are left out of the model (as NCCL does): the GPU reaches no NET, the list stays. */
static void caseNoDev(void) {
  static const char kXml[] =
      "<system version=\"1\">\n"
      " <cpu numaid=\"0\" arch=\"x86_64\" vendor=\"GenuineIntel\" familyid=\"6\" modelid=\"143\">\n"
      "  <pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "   <pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "    <gpu dev=\"0\" sm=\"90\" gdr=\"1\"/>\n"
      "   </pci>\n"
      "   <pci busid=\"0000:03:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "    <nic><net name=\"mlx5_0\" speed=\"400000\" gdr=\"1\"/><net name=\"mlx5_1\" speed=\"400000\"/></nic>\n"
      "   </pci>\n"
      "  </pci>\n"
      " </cpu>\n"
      "</system>\n";
  struct chrTopoSystem* sys = topoTestLoadText("nodev.xml", kXml, NULL);
  EXPECT(sys->count[CHR_TOPO_NET] == 0, "%d NETs, want none", sys->count[CHR_TOPO_NET]);
  expectList("NETs without dev", sys, 0, 2, NULL);
  chrTopoFree(sys);
}

/* NCCL_CROSS_NIC=0: a sender on any GPU, toward a peer on an identical host at any GPU, sends on
 * every channel and point-to-point index through the device the peer receives on (its own list):
 * one rail per link. The lists carry the sender's GPUDirect bits; an unknown address falls back to
 * the sender's own list. `wantGdr`: the bits of sender GPU `gpuA` toward the rail of GPU `gpuB`. */
static void expectRails(const char* what, const struct chrTopoSystem* sys, int nGpus, int nPlugin, int gpuA, int gpuB,
                        const char* wantGdr) {
  for (int g = 0; g < nGpus; g++) {
    struct chrNetRails rails;
    memset(&rails, 0, sizeof(rails));
    int listed = chrNetRailsFromTopo(sys, gpuBusId(sys, g), nPlugin, &rails);
    EXPECT(listed == nGpus, "%s: sender GPU %d lists %d rails, want %d", what, g, listed, nGpus);
    struct chrNetDevs own = kBefore;
    chrNetDevsFromTopo(sys, gpuBusId(sys, g), nPlugin, &own);
    for (int peer = 0; peer < nGpus; peer++) {
      struct chrNetDevs recv = kBefore;
      chrNetDevsFromTopo(sys, gpuBusId(sys, peer), nPlugin, &recv);
      const struct chrNetDevs* send = chrNetDevsToward(&own, &rails, gpuBusId(sys, peer));
      for (int c = 0; c < 2 * CHR_NET_MAX_DEVS; c++)
        for (int p2p = 0; p2p < 2; p2p++) {
          int s = chrNetDevFor(send, c, p2p, 3, 12), r = chrNetDevFor(&recv, c, p2p, 3, 12);
          EXPECT(s == r, "%s: GPU %d to a peer's GPU %d, channel %d%s: sends on dev %d, the peer receives on %d", what,
                 g, peer, c, p2p ? " (p2p)" : "", s, r);
        }
    }
    EXPECT(chrNetDevsToward(&own, &rails, 0xab1f0) == &own, "%s: an unknown peer address left GPU %d's own list", what,
           g);
    if (g == gpuA) {
      char got[256];
      gdrText(chrNetDevsToward(&own, &rails, gpuBusId(sys, gpuB)), got, sizeof(got));
      EXPECT(strcmp(got, wantGdr) == 0, "%s: GPU %d toward GPU %d's rail: GPUDirect %s, want %s", what, gpuA, gpuB, got,
             wantGdr);
    }
  }
}

static void caseRails(void) {
  struct chrTopoFillOptions ndv5 = {.sm = 90, .netSpeed = 400000};
  struct chrTopoSystem* sys = loadReal("azure-ndv5-topo.xml", &ndv5);
  expectRails("NDv5", sys, 8, 8, 7, 7, "7"); /* its own PIX NIC */
  expectRails("NDv5", sys, 8, 8, 7, 0, "0"); /* GPU 0's NIC, across the CPUs: no GPUDirect */
  chrTopoFree(sys);
  struct chrTopoFillOptions p4d = {.sm = 80, .netSpeed = 400000};
  sys = loadReal("aws-p4d.24xlarge-topo.xml", &p4d);
  expectRails("p4d", sys, 8, 4, 1, 0, "3"); /* GPUs 0 and 1 share NIC 0 */
  chrTopoFree(sys);
  sys = loadReal("aws-p5.48xlarge-topo.xml", &kP5Fill);
  expectRails("p5", sys, 8, 32, 0, 0, "7,7,7,7");
  chrTopoFree(sys);
}

/* chrTopoNeedFlush on a GPU tied to its CPU by C2C, whose NICs it reaches over C2C (P2C) with
 * NCCL_NET_GDR_LEVEL=SYS: from sm 90 no flush, below it (an sm 80 copy of the file) and with
 * NCCL_NET_FORCE_FLUSH=1 a flush of every receive. */
static void caseFlushRule(void) {
  static const char kXml[] =
      "<system version=\"1\">\n"
      " <cpu numaid=\"0\" arch=\"arm64\" vendor=\"ARM\">\n"
      "  <pci busid=\"0000:01:00.0\" class=\"0x060400\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "   <pci busid=\"0000:02:00.0\" class=\"0x030200\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "    <gpu dev=\"0\" sm=\"SM\" gdr=\"1\"><c2c bw=\"40000\" count=\"10\"/></gpu>\n"
      "   </pci>\n"
      "  </pci>\n"
      "  <pci busid=\"0000:04:00.0\" class=\"0x020700\" link_speed=\"32.0 GT/s PCIe\" link_width=\"16\">\n"
      "   <nic><net name=\"mlx5_0\" dev=\"0\" speed=\"400000\" gdr=\"1\"/></nic>\n"
      "  </pci>\n"
      " </cpu>\n"
      "</system>\n";
  const struct {
    const char* sm;
    int force, want;
  } cases[] = {{"90", 0, 0}, {"80", 0, 1}, {"90", 1, 1}};
  setenv("NCCL_NET_GDR_LEVEL", "SYS", 1);
  for (int i = 0; i < 3; i++) {
    if (cases[i].force) setenv("NCCL_NET_FORCE_FLUSH", "1", 1);
    chrConfigReload();
    char xml[sizeof(kXml)];
    snprintf(xml, sizeof(xml), "%s", kXml);
    memcpy(strstr(xml, "sm=\"SM\"") + 4, cases[i].sm, 2);
    struct chrTopoSystem* sys = topoTestLoadText("c2c", xml, NULL);
    const int gpu = sys->list[CHR_TOPO_GPU][0], net = sys->list[CHR_TOPO_NET][0];
    const int got = chrTopoNeedFlush(sys, gpu, net);
    EXPECT(got == cases[i].want, "sm %s, NCCL_NET_FORCE_FLUSH=%d, path %s: flush %d, want %d", cases[i].sm,
           cases[i].force, chrTopoPathName(chrTopoPathOf(sys, gpu, net)->type), got, cases[i].want);
    chrTopoFree(sys);
    unsetenv("NCCL_NET_FORCE_FLUSH");
  }
  unsetenv("NCCL_NET_GDR_LEVEL");
  chrConfigReload();
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  dataDir = argv[1];
  isolateConfig();
  chrConfigReload();
  caseNdv5();
  caseP4d();
  caseP5();
  caseP5Max2();
  caseNdv2();
  caseGdrSettings();
  caseNotInFile();
  caseNoDev();
  caseRails();
  caseFlushRule();
  return finishTest();
}
