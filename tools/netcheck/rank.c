/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rank.c: one rank of chorus-netcheck: load the plugin through Chorus's loader, check the device
 * properties, run the checked traffic and the performance table, then merge the two ranks' tallies
 * (rank 0 prints the report).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "log/log.h"
#include "netcheck.h"

#define NC_HANDLE_GUARD 64
#define NC_GUARD_FILL 0xC3

static void checkProperties(ncRank* r, FILE* out) {
  int ndev = 0;
  ncclResult_t res = chrNetDevices(r->net, &ndev);
  ncCheck(NC_R_PROPS_DEVICES, res == ncclSuccess && ndev >= 1, "devices() returned %d with %d devices: %s", (int)res, ndev,
          res != ncclSuccess ? ncLastError() : "no device");
  if (res != ncclSuccess || ndev < 1) return;
  for (int d = 0; d < ndev; d++) {
    ncclNetProperties_v12_t p;
    res = chrNetGetProperties(r->net, d, &p);
    if (res != ncclSuccess) {
      /* The core refuses maxRecvs / byte limits it cannot use; say which rule that is. */
      const char* e = ncLastError();
      ncRule rule = strstr(e, "maxRecvs") ? NC_R_PROPS_MAXRECVS : strstr(e, "Bytes") ? NC_R_PROPS_VPROPS : NC_R_PROPS_DEVICES;
      ncFail(rule, "getProperties(%d) failed: %s", d, e);
      continue;
    }
    int printable = p.name != NULL && p.name[0] != '\0';
    for (const char* c = p.name; printable && *c; c++)
      if ((unsigned char)*c < 0x20 || (unsigned char)*c > 0x7e) printable = 0;
    ncCheck(NC_R_PROPS_NAME, printable, "device %d has %s name", d, p.name == NULL ? "a NULL" : "an empty or unprintable");
    ncCheck(NC_R_PROPS_SPEED, p.speed > 0, "device %d reports speed %d Mbps", d, p.speed);
    ncCheck(NC_R_PROPS_LATENCY, isfinite(p.latency) && p.latency >= 0, "device %d reports latency %g us", d, (double)p.latency);
    ncCheck(NC_R_PROPS_MAXCOMMS, p.maxComms >= 1 && (d != ncOpt.dev || p.maxComms >= 2 * ncOpt.comms),
            "device %d reports maxComms %d (this check opens %d per rank)", d, p.maxComms, 2 * ncOpt.comms);
    ncCheck(NC_R_PROPS_MAXRECVS, p.maxRecvs >= 1 && p.maxRecvs <= NCCL_NET_MAX_REQUESTS, "device %d reports maxRecvs %d",
            d, p.maxRecvs);
    ncCheck(NC_R_PROPS_PTRSUPPORT, (p.ptrSupport & NCCL_PTR_HOST) && !(p.ptrSupport & ~(NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF)),
            "device %d reports ptrSupport 0x%x%s", d, p.ptrSupport,
            (p.ptrSupport & NCCL_PTR_HOST) ? " (unknown bits)" : " (no NCCL_PTR_HOST: host memory cannot be checked)");
    ncCheck(NC_R_PROPS_REGISGLOBAL, p.regIsGlobal == 0 || p.regIsGlobal == 1, "device %d reports regIsGlobal %d", d,
            p.regIsGlobal);
    int typeOk = (p.netDeviceType == NCCL_NET_DEVICE_HOST && p.netDeviceVersion == 0) ||
                 (p.netDeviceType == NCCL_NET_DEVICE_UNPACK && p.netDeviceVersion == NCCL_NET_DEVICE_UNPACK_VERSION);
    ncCheck(NC_R_PROPS_DEVTYPE, typeOk, "device %d reports netDeviceType %d version 0x%x", d, (int)p.netDeviceType,
            p.netDeviceVersion);
    int vOk = p.vProps.ndevs >= 1 && p.vProps.ndevs <= NCCL_NET_MAX_DEVS_PER_NIC_V12;
    for (int i = 0; vOk && i < p.vProps.ndevs; i++) vOk = p.vProps.devs[i] >= 0 && p.vProps.devs[i] < ndev;
    ncCheck(NC_R_PROPS_VPROPS, vOk, "device %d reports vProps.ndevs %d (devs %d, %d, ...)", d, p.vProps.ndevs,
            p.vProps.devs[0], p.vProps.devs[1]);
    if (d == ncOpt.dev) r->props = p;
    if (out != NULL)
      fprintf(out, "device %d: %s, speed %d Mbps, latency %g us, maxComms %d, maxRecvs %d, ptrSupport 0x%x, regIsGlobal %d%s\n",
              d, p.name ? p.name : "(null)", p.speed, (double)p.latency, p.maxComms, p.maxRecvs, p.ptrSupport,
              p.regIsGlobal, d == ncOpt.dev ? " (used)" : "");
  }
  if (ncOpt.dev >= ndev) ncFail(NC_R_PROPS_DEVICES, "--dev %d, but the plugin has %d devices", ncOpt.dev, ndev);
}

int ncExchangeHandles(ncRank* r, int n, void** listenComms, char (*mine)[NCCL_NET_HANDLE_MAXSIZE],
                      char (*theirs)[NCCL_NET_HANDLE_MAXSIZE]) {
  int ok = 1;
  for (int i = 0; i < n; i++) {
    char buf[NCCL_NET_HANDLE_MAXSIZE + NC_HANDLE_GUARD];
    memset(buf, NC_GUARD_FILL, sizeof(buf));
    listenComms[i] = NULL;
    ncCallClock clk;
    ncCallClockStart(&clk);
    ncclResult_t res = chrNetListen(r->net, ncOpt.dev, buf, &listenComms[i]);
    ncCallClockStop(&clk);
    char who[16];
    snprintf(who, sizeof(who), "rank %d", r->rank);
    ncCheckCall(who, "listen", &clk);
    if (res != ncclSuccess) {
      ncFail(NC_R_CONN_LISTEN, "rank %d: listen failed: %s", r->rank, ncLastError());
      listenComms[i] = NULL;
      ok = 0;
    }
    size_t past = NCCL_NET_HANDLE_MAXSIZE;
    while (past < sizeof(buf) && (unsigned char)buf[past] == NC_GUARD_FILL) past++;
    ncCheck(NC_R_CONN_LISTEN, past == sizeof(buf), "rank %d: listen wrote byte %zu of the %d-byte handle buffer",
            r->rank, past, NCCL_NET_HANDLE_MAXSIZE);
    memcpy(mine[i], buf, NCCL_NET_HANDLE_MAXSIZE);
  }
  /* Tell the other rank whether this side can go on, then swap the handles. */
  int32_t flag = ok, peerFlag = 0;
  if (ncOobSend(r->oob, &flag, sizeof(flag)) != 0 || ncOobSend(r->oob, mine, (size_t)n * NCCL_NET_HANDLE_MAXSIZE) != 0 ||
      ncOobRecv(r->oob, &peerFlag, sizeof(peerFlag), ncOpt.timeoutSec + 60) != 0 ||
      ncOobRecv(r->oob, theirs, (size_t)n * NCCL_NET_HANDLE_MAXSIZE, ncOpt.timeoutSec + 60) != 0) {
    ncFail(NC_R_PEER, "rank %d: the other rank sent no listen handles", r->rank);
    ok = 0;
  }
  if (ok && peerFlag) return 0;
  for (int i = 0; i < n; i++)
    if (listenComms[i] != NULL) chrNetCloseListen(r->net, listenComms[i]);
  return -1;
}

/* Rank 1 ships its tally; rank 0 merges it. */
static void exchangeTally(ncRank* r) {
  size_t len = ncTallySize();
  char* buf = malloc(len);
  if (buf == NULL) return;
  if (r->rank == 1) {
    ncTallyExport(buf);
    uint64_t len64 = len;
    ncOobSend(r->oob, &len64, sizeof(len64));
    ncOobSend(r->oob, buf, len);
  } else {
    uint64_t len64 = 0;
    if (ncOobRecv(r->oob, &len64, sizeof(len64), 120) != 0 || len64 != len || ncOobRecv(r->oob, buf, len, 60) != 0 ||
        ncTallyMerge(buf, len, "rank 1") != 0)
      ncFail(NC_R_PEER, "rank 1 sent no results (it crashed, hung, or runs another netcheck build)");
    else
      ncPass(NC_R_PEER);
  }
  free(buf);
}

int ncRunRank(int rank, int oobFd, const char* peerIp) {
  ncRank r;
  memset(&r, 0, sizeof(r));
  r.rank = rank;
  r.oob = oobFd;
  snprintf(r.peerIp, sizeof(r.peerIp), "%s", peerIp ? peerIp : "127.0.0.1");
  FILE* out = rank == 0 ? stdout : NULL;

  ncclResult_t res = chrNetOpen(0x6e6574636865636bULL + (uint64_t)rank, NULL, NCCL_NET_TRAFFIC_CLASS_UNDEF, &r.net);
  int usable = 0;
  if (res != ncclSuccess || r.net == NULL) {
    ncFail(NC_R_LOAD, "rank %d: %s", rank, res != ncclSuccess ? ncLastError() : "net plugins are disabled (NCCL_NET_PLUGIN=none)");
  } else {
    ncPass(NC_R_LOAD);
    if (out) fprintf(out, "plugin: %s (name %s, ABI v%d)\n", r.net->path, r.net->name, r.net->version);
    checkProperties(&r, out);
    usable = r.props.name != NULL && (r.props.ptrSupport & NCCL_PTR_HOST) && r.props.maxRecvs >= 1;
    r.maxGroup = r.props.maxRecvs > NC_MAX_GROUP ? NC_MAX_GROUP : r.props.maxRecvs;
    if (usable) ncGpuPlan(&r, out);
  }
  if (out) fflush(out);

  /* Both ranks must agree on grouping and on whether to go on at all. */
  int32_t mine[2] = {usable, r.maxGroup}, theirs[2] = {0, 0};
  if (ncOobSend(oobFd, mine, sizeof(mine)) != 0 || ncOobRecv(oobFd, theirs, sizeof(theirs), 120) != 0) {
    ncFail(NC_R_PEER, "rank %d: the other rank did not report after loading the plugin", rank);
    theirs[0] = 0;
  }
  if (theirs[1] < r.maxGroup) r.maxGroup = theirs[1];
  if (usable && theirs[0]) {
    ncTraffic(&r);
    if (ncOpt.perf && ncOobBarrier(oobFd, 120) == 0) ncPerf(&r, out);
  }
  if (r.net != NULL) {
    res = chrNetClose(r.net);
    ncCheck(NC_R_CLOSE, res == ncclSuccess, "rank %d: finalize failed: %s", rank, ncLastError());
  }
  ncGpuClose();
  exchangeTally(&r);
  if (rank != 0) return 0;
  int broken = ncTallyPrint(stdout);
  if (broken) printf("result: FAIL (%d rule%s broken)\n", broken, broken == 1 ? "" : "s");
  else printf("result: PASS\n");
  fflush(stdout);
  return broken ? 1 : 0;
}
