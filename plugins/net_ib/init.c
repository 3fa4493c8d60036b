/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c: settings, device and port discovery, properties.
 *
 * Discovery runs once per process, at the first init: every RDMA device, every ACTIVE port whose link
 * layer is InfiniBand or Ethernet (RoCE) and that NCCL_IB_HCA takes becomes one plugin device. IB
 * ports route by LID; RoCE ports by the GID gid_select.c picks (NCCL_IB_GID_INDEX, NCCL_IB_ADDR_FAMILY).
 * No device at all (no RDMA hardware, no kernel support, NCCL_IB_DISABLE=1) is not an error: init
 * succeeds, devices() reports 0 and the core moves on to its next net plugin.
 *
 * GPU memory (NCCL_PTR_CUDA) is offered where a peer-memory driver is loaded (one check for the
 * process: peermem.c) or the device registers dma-bufs (probed per device; NCCL_PTR_DMABUF only then).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib_plugin.h"

ncclDebugLogger_t ibLogger;
ibDev ibDevs[IB_MAX_DEVS];
int ibNDevs;
ibSettings ibConf;

/* ---------------------------------------------------------------- settings */

static ncclResult_t envInt(const char* name, long lo, long hi, long def, int* out) {
  long v;
  char err[256];
  if (chrPluginEnvLong(name, lo, hi, def, &v, err, sizeof(err)) != 0) {
    IB_WARN("%s", err);
    return ncclInvalidUsage;
  }
  *out = (int)v;
  return ncclSuccess;
}

static ncclResult_t readSettings(void) {
  int connectMs = 0, flushOff = 0;
  if (envInt("NCCL_IB_QPS_PER_CONNECTION", 1, IB_MAX_QPS, 1, &ibConf.qpsPerConn) != ncclSuccess ||
      envInt("NCCL_IB_TIMEOUT", 1, 31, 20, &ibConf.timeout) != ncclSuccess ||
      envInt("NCCL_IB_RETRY_CNT", 0, 7, 7, &ibConf.retryCnt) != ncclSuccess ||
      envInt("NCCL_IB_SL", 0, 15, 0, &ibConf.sl) != ncclSuccess ||
      envInt("NCCL_IB_TC", 0, 255, 0, &ibConf.tc) != ncclSuccess ||
      envInt("NCCL_IB_PKEY", 0, 65535, 0, &ibConf.pkeyIndex) != ncclSuccess ||
      envInt("CHORUS_IB_CONNECT_TIMEOUT_MS", 100, 3600000, 60000, &connectMs) != ncclSuccess ||
      envInt("NCCL_GDR_FLUSH_DISABLE", 0, 1, 0, &flushOff) != ncclSuccess)
    return ncclInvalidUsage;
  ibConf.connectTimeoutMs = connectMs;
  ibConf.gdrFlush = !flushOff;
  return ncclSuccess;
}

/* ---------------------------------------------------------------- discovery */

static int mtuBytes(enum ibv_mtu m) { return 128 << (int)m; }

/* Port speed in Mbps from the verbs width and speed codes (per lane Gbps x lanes). */
static int portSpeedMbps(const struct ibv_port_attr* pa) {
  int lanes;
  switch (pa->active_width) {
    case 1: lanes = 1; break;
    case 2: lanes = 4; break;
    case 4: lanes = 8; break;
    case 8: lanes = 12; break;
    case 16: lanes = 2; break;
    default: lanes = 1; break;
  }
  int laneMbps;
  switch (pa->active_speed) {
    case 1: laneMbps = 2500; break;   /* SDR */
    case 2: laneMbps = 5000; break;   /* DDR */
    case 4: laneMbps = 10000; break;  /* QDR */
    case 8: laneMbps = 10000; break;  /* FDR10 */
    case 16: laneMbps = 14000; break; /* FDR */
    case 32: laneMbps = 25000; break; /* EDR */
    case 64: laneMbps = 50000; break; /* HDR */
    case 128: laneMbps = 100000; break; /* NDR */
    default: laneMbps = 10000; break;
  }
  return lanes * laneMbps;
}

/* The RoCE GID of (ctx, port): NCCL_IB_GID_INDEX or the choice of gid_select.c. */
static int chooseGid(ibDev* d, const struct ibv_port_attr* pa) {
  long requested;
  char err[256];
  if (chrPluginEnvLong("NCCL_IB_GID_INDEX", -1, 65535, -1, &requested, err, sizeof(err)) != 0) {
    IB_WARN("%s", err);
    return -1;
  }
  int family = AF_UNSPEC;
  const char* fam = getenv("NCCL_IB_ADDR_FAMILY");
  if (fam != NULL && fam[0] != '\0') {
    chrSockErr e;
    if (chrSockParseFamily(fam, &family, &e) != ncclSuccess) {
      IB_WARN("NCCL_IB_ADDR_FAMILY=\"%s\": %s", fam, e.msg);
      return -1;
    }
  }
  int n = pa->gid_tbl_len > 256 ? 256 : pa->gid_tbl_len;
  ibGidEntry* table = calloc((size_t)(n > 0 ? n : 1), sizeof(*table));
  if (table == NULL) return -1;
  int used = 0;
  for (int i = 0; i < n; i++) {
    struct ibv_gid_entry ge;
    if (ibv_query_gid_ex(d->ctx, (uint32_t)d->port, (uint32_t)i, &ge, 0) != 0) continue; /* empty slots fail */
    table[used].index = i;
    table[used].type = ge.gid_type == IBV_GID_TYPE_ROCE_V2   ? IB_GID_TYPE_ROCE_V2
                       : ge.gid_type == IBV_GID_TYPE_ROCE_V1 ? IB_GID_TYPE_ROCE_V1
                                                             : IB_GID_TYPE_IB;
    memcpy(table[used].raw, ge.gid.raw, 16);
    used++;
  }
  int pick = ibGidChoose(table, used, (int)requested, family, err, sizeof(err));
  if (pick < 0) {
    IB_WARN("%s: %s; port skipped", d->fullName, err);
    free(table);
    return -1;
  }
  d->gidIndex = table[pick].index;
  memcpy(d->gid.raw, table[pick].raw, 16);
  free(table);
  return 0;
}

/* Can this device register dmabufs? Asking with fd -1 fails with EBADF where the call is supported
 * and with EOPNOTSUPP / EPROTONOSUPPORT where it is not. */
static int probeDmabuf(struct ibv_pd* pd) {
  const char* e = getenv("NCCL_DMABUF_ENABLE");
  if (e != NULL && atoi(e) == 0) return 0;
  errno = 0;
  struct ibv_mr* mr = ibv_reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
  if (mr != NULL) {
    ibv_dereg_mr(mr);
    return 1;
  }
  return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT && errno != ENOSYS;
}

static void addPorts(struct ibv_device* device, const ibHcaFilter* filter, int peerMem) {
  const char* devName = ibv_get_device_name(device);
  struct ibv_context* ctx = ibv_open_device(device);
  if (ctx == NULL) {
    IB_INFO(NCCL_INIT | NCCL_NET, "cannot open %s: %s; skipped", devName, strerror(errno));
    return;
  }
  struct ibv_device_attr da;
  if (ibv_query_device(ctx, &da) != 0) {
    IB_INFO(NCCL_INIT | NCCL_NET, "cannot query %s: %s; skipped", devName, strerror(errno));
    ibv_close_device(ctx);
    return;
  }
  int kept = 0;
  struct ibv_pd* pd = NULL;
  for (int port = 1; port <= da.phys_port_cnt && ibNDevs < IB_MAX_DEVS; port++) {
    struct ibv_port_attr pa;
    if (ibv_query_port(ctx, (uint8_t)port, &pa) != 0) continue;
    if (pa.state != IBV_PORT_ACTIVE) continue;
    int link = pa.link_layer == IBV_LINK_LAYER_ETHERNET ? IB_LINK_ETHERNET
               : (pa.link_layer == IBV_LINK_LAYER_INFINIBAND || pa.link_layer == IBV_LINK_LAYER_UNSPECIFIED) ? IB_LINK_IB
                                                                                                             : 0;
    if (link == 0) continue;
    if (!ibHcaMatch(filter, devName, port)) {
      IB_INFO(NCCL_INIT | NCCL_NET, "%s:%d left out by NCCL_IB_HCA", devName, port);
      continue;
    }
    ibDev* d = &ibDevs[ibNDevs];
    memset(d, 0, sizeof(*d));
    snprintf(d->name, sizeof(d->name), "%s", devName);
    snprintf(d->fullName, sizeof(d->fullName), "%s:%d", devName, port);
    d->ctx = ctx;
    d->port = port;
    d->linkLayer = link;
    d->lid = pa.lid;
    d->mtu = pa.active_mtu;
    d->speedMbps = portSpeedMbps(&pa);
    d->guid = be64toh(da.node_guid) + (uint64_t)(port - 1);
    d->maxQpWr = da.max_qp_wr;
    if (link == IB_LINK_IB && pa.lid == 0) {
      IB_INFO(NCCL_INIT | NCCL_NET, "%s has no LID yet (subnet manager?); skipped", d->fullName);
      continue;
    }
    if (link == IB_LINK_ETHERNET && chooseGid(d, &pa) != 0) continue;
    if (pd == NULL) pd = ibv_alloc_pd(ctx);
    if (pd == NULL) {
      IB_WARN("%s: ibv_alloc_pd failed: %s; device skipped", devName, strerror(errno));
      break;
    }
    d->pd = pd;
    d->dmabuf = probeDmabuf(pd);
    d->peerMem = peerMem;
    char path[PATH_MAX];
    snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", devName);
    d->pciPath = realpath(path, NULL);
    char g[INET6_ADDRSTRLEN] = "-";
    if (link == IB_LINK_ETHERNET) inet_ntop(AF_INET6, d->gid.raw, g, sizeof(g));
    IB_INFO(NCCL_INIT | NCCL_NET, "[%d] %s %s, LID %u, GID[%d] %s, MTU %d, %d Mbps%s%s", ibNDevs, d->fullName,
            link == IB_LINK_IB ? "InfiniBand" : "RoCE", d->lid, link == IB_LINK_ETHERNET ? d->gidIndex : -1, g,
            mtuBytes(d->mtu), d->speedMbps, d->dmabuf ? ", dmabuf" : "", d->peerMem ? ", peer memory" : "");
    ibNDevs++;
    kept++;
  }
  if (kept == 0) {
    if (pd) ibv_dealloc_pd(pd);
    ibv_close_device(ctx);
  }
}

/* The address listen sockets bind to: the first interface NCCL_SOCKET_IFNAME takes. */
static ncclResult_t findSetupInterface(void) {
  const char* spec = getenv("NCCL_SOCKET_IFNAME");
  chrSockIf ifs[8];
  int n = 0;
  chrSockErr err = {{0}, 0};
  if (chrSockFindInterfaces(spec, AF_UNSPEC, ifs, 8, &n, &err) != ncclSuccess || n == 0) {
    IB_WARN("no network interface for connection setup (NCCL_SOCKET_IFNAME=\"%s\")%s%s", spec ? spec : "",
            err.msg[0] ? ": " : "", err.msg);
    return ncclSystemError;
  }
  ibConf.ifAddr = ifs[0].addr;
  snprintf(ibConf.ifName, sizeof(ibConf.ifName), "%s", ifs[0].name);
  return ncclSuccess;
}

static ncclResult_t discover(void) {
  ncclResult_t res = readSettings();
  if (res != ncclSuccess) return res;
  ibHcaFilter filter;
  char err[256];
  if (ibHcaParse(getenv("NCCL_IB_HCA"), &filter, err, sizeof(err)) != 0) {
    IB_WARN("%s", err);
    return ncclInvalidUsage;
  }
  ibNDevs = 0;
  const char* disable = getenv("NCCL_IB_DISABLE");
  if (disable != NULL && atoi(disable) != 0) {
    IB_INFO(NCCL_INIT | NCCL_NET, "disabled by NCCL_IB_DISABLE=%s: 0 devices", disable);
    return ncclSuccess;
  }
  int n = 0;
  errno = 0;
  struct ibv_device** list = ibv_get_device_list(&n);
  if (list == NULL || n == 0) {
    IB_INFO(NCCL_INIT | NCCL_NET, "no RDMA device found%s%s: 0 devices", errno ? ": " : "", errno ? strerror(errno) : "");
    if (list) ibv_free_device_list(list);
    return ncclSuccess;
  }
  /* CHORUS_TEST_IB_PEERMEM_ROOT: a test's fake tree in place of / (README, settings). */
  char found[PATH_MAX];
  int peerMem = ibPeerMemFind(getenv("CHORUS_TEST_IB_PEERMEM_ROOT"), found, sizeof(found));
  if (peerMem) IB_INFO(NCCL_INIT | NCCL_NET, "peer-memory driver loaded (%s): GPU memory registers with ibv_reg_mr", found);
  for (int i = 0; i < n; i++) addPorts(list[i], &filter, peerMem);
  ibv_free_device_list(list);
  if (ibNDevs == 0) {
    IB_INFO(NCCL_INIT | NCCL_NET, "%d RDMA device(s) but no active port that NCCL_IB_HCA=\"%s\" takes: 0 devices", n,
            getenv("NCCL_IB_HCA") ? getenv("NCCL_IB_HCA") : "");
    return ncclSuccess;
  }
  res = findSetupInterface();
  if (res != ncclSuccess) {
    ibNDevs = 0; /* without a setup socket no connection can be made */
    return res;
  }
  char a[CHR_SOCK_ADDR_STRLEN];
  IB_INFO(NCCL_INIT | NCCL_NET, "%d device(s); %d QP(s) per connection; setup over %s %s; flush of GPU receives %s", ibNDevs,
          ibConf.qpsPerConn, ibConf.ifName, chrSockAddrToString(&ibConf.ifAddr, a, sizeof(a)),
          ibConf.gdrFlush ? "on" : "off (NCCL_GDR_FLUSH_DISABLE=1)");
  return ncclSuccess;
}

static void takeLogger(ncclDebugLogger_t logFunction) {
  ibLogger = logFunction;
  chrSockSetLogger(logFunction);
}

static chrNetSetup setup = CHR_NET_SETUP_INITIALIZER(takeLogger, discover);

/* Traffic classes: NCCL_IB_TC applies to every connection, whatever the communicator's config. */
ncclResult_t ibInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                    ncclProfilerCallback_t profFunction) {
  if (ctx == NULL) return ncclInternalError;
  *ctx = NULL;
  ncclResult_t res = chrNetSetupOnce(&setup, logFunction);
  if (res != ncclSuccess) return res;
  res = chrNetCtxNew(ctx, commId, config, profFunction);
  if (res != ncclSuccess) IB_WARN("out of memory allocating the init context");
  return res;
}

ncclResult_t ibFinalize(void* ctx) {
  ibConnectForget(ctx);
  free(ctx);
  return ncclSuccess;
}

ncclResult_t ibDevices(int* ndev) {
  if (ndev == NULL) return ncclInternalError;
  *ndev = ibNDevs;
  return ncclSuccess;
}

ncclResult_t ibGetProperties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL) return ncclInternalError;
  if (dev < 0 || dev >= ibNDevs) {
    IB_WARN("getProperties: device %d does not exist (%d devices)", dev, ibNDevs);
    return ncclInvalidArgument;
  }
  const ibDev* d = &ibDevs[dev];
  memset(props, 0, sizeof(*props));
  props->name = (char*)d->fullName;
  props->pciPath = d->pciPath;
  props->guid = d->guid;
  props->ptrSupport = NCCL_PTR_HOST | (ibDevTakesGpu(d) ? NCCL_PTR_CUDA : 0) | (d->dmabuf ? NCCL_PTR_DMABUF : 0);
  props->regIsGlobal = 0;
  /* 0, as NCCL's verbs plugin off Data-Direct NICs: a core may skip iflush where the GPU needs no
   * flush (NCCL does from sm 90, off C2C paths); Chorus's calls it after every GPU receive. iflush
   * reads back whenever it is asked (flush.c). */
  props->forceFlush = 0;
  props->speed = d->speedMbps;
  props->port = d->port;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = 1;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = NCCL_NET_DEVICE_INVALID_VERSION;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = MAX_NET_SIZE; /* sizes travel as 32-bit immediates and come back to test() as int */
  props->maxCollBytes = MAX_COLLNET_SIZE;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}
