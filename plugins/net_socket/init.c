/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c: settings, device discovery, init/finalize/devices/getProperties of the TCP net plugin.
 *
 * Devices are found once per process (first init) and stay until the library is unloaded, because the
 * core may call getProperties at any time. Each init() returns its own small context (v11+: one per
 * communicator); the per-process inits of v8..v10 share one legacy context.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "socket_plugin.h"

ncclDebugLogger_t nsLogger = NULL;
nsDev nsDevs[NS_MAX_DEVS];
int nsNDevs = 0;
nsSettings nsConf;

/* Integer setting from the environment; `def` when unset, empty or not a number. */
static long envLong(const char* name, long def) {
  long v;
  if (chrPluginEnvLong(name, LONG_MIN, LONG_MAX, def, &v, NULL, 0) != 0)
    NS_WARN("ignoring %s=\"%s\": not an integer, using %ld", name, getenv(name), def);
  return v;
}

static void readSettings(void) {
  long nThreads = envLong("NCCL_SOCKET_NTHREADS", 0);
  long perThread = envLong("NCCL_NSOCKS_PERTHREAD", 1);
  if (nThreads < 0 || nThreads > NS_MAX_THREADS) {
    NS_WARN("NCCL_SOCKET_NTHREADS=%ld out of range [0,%d], using %d", nThreads, NS_MAX_THREADS,
            nThreads < 0 ? 0 : NS_MAX_THREADS);
    nThreads = nThreads < 0 ? 0 : NS_MAX_THREADS;
  }
  if (perThread < 1) {
    NS_WARN("NCCL_NSOCKS_PERTHREAD=%ld must be >= 1, using 1", perThread);
    perThread = 1;
  }
  long threadsForProduct = nThreads > 0 ? nThreads : 1;
  if (threadsForProduct * perThread > NS_MAX_SOCKS) {
    long fixed = NS_MAX_SOCKS / threadsForProduct;
    NS_WARN("NCCL_SOCKET_NTHREADS*NCCL_NSOCKS_PERTHREAD = %ld*%ld exceeds %d sockets, using %ld sockets per thread",
            nThreads, perThread, NS_MAX_SOCKS, fixed);
    perThread = fixed;
  }
  nsConf.nThreads = (int)nThreads;
  nsConf.nSocksPerThread = (int)perThread;
  long eager = envLong("CHORUS_SOCKET_EAGER_BYTES", 16384);
  nsConf.eagerBytes = eager < 0 ? 0 : (size_t)eager;
  nsConf.connectTimeoutMs = envLong("CHORUS_SOCKET_CONNECT_TIMEOUT_MS", 30000);
  nsConf.helloTimeoutMs = envLong("CHORUS_SOCKET_HELLO_TIMEOUT_MS", 5000);
  long buf = envLong("CHORUS_SOCKET_BUFSIZE", 0);
  nsConf.sockBuf = (buf < 0 || buf > INT_MAX) ? 0 : (int)buf;
  long link = envLong("CHORUS_SOCKET_LINK_TIMEOUT_MS", 0);
  if (link < 0 || link > 3600L * 1000) {
    NS_WARN("CHORUS_SOCKET_LINK_TIMEOUT_MS=%ld out of range [0, 3600000], using 0 (the kernel's own)", link);
    link = 0;
  }
  nsConf.linkTimeoutMs = (int)link;
}

static int readSpeed(const char* ifname) {
  char path[128];
  snprintf(path, sizeof(path), "/sys/class/net/%s/speed", ifname);
  FILE* f = fopen(path, "r");
  int speed = -1;
  if (f != NULL) {
    if (fscanf(f, "%d", &speed) != 1) speed = -1;
    fclose(f);
  }
  return speed > 0 ? speed : 10000;
}

static char* readPciPath(const char* ifname) {
  char path[128];
  snprintf(path, sizeof(path), "/sys/class/net/%s/device", ifname);
  return realpath(path, NULL); /* NULL for virtual interfaces (lo, veth, bridges) */
}

static ncclResult_t findDevices(void) {
  const char* spec = getenv("NCCL_SOCKET_IFNAME");
  const char* famName = getenv("NCCL_SOCKET_FAMILY");
  int family = AF_UNSPEC;
  chrSockErr err = {{0}};
  if (famName != NULL && chrSockParseFamily(famName, &family, &err) != ncclSuccess) {
    NS_WARN("NCCL_SOCKET_FAMILY=\"%s\": %s", famName, err.msg);
    return ncclInvalidArgument;
  }
  chrSockIf ifs[NS_MAX_DEVS * 2];
  int n = 0;
  ncclResult_t res = chrSockFindInterfaces(spec, family, ifs, NS_MAX_DEVS * 2, &n, &err);
  if (res != ncclSuccess) {
    NS_WARN("finding interfaces (NCCL_SOCKET_IFNAME=\"%s\") failed: %s", spec ? spec : "", err.msg);
    return res;
  }
  nsNDevs = 0;
  for (int i = 0; i < n && nsNDevs < NS_MAX_DEVS; i++) {
    int dup = 0; /* one device per interface: its first (IPv4 first) address */
    for (int d = 0; d < nsNDevs; d++)
      if (strcmp(nsDevs[d].name, ifs[i].name) == 0) dup = 1;
    if (dup) continue;
    nsDev* dev = &nsDevs[nsNDevs++];
    memcpy(dev->name, ifs[i].name, sizeof(dev->name));
    dev->name[sizeof(dev->name) - 1] = '\0';
    dev->addr = ifs[i].addr;
    dev->speed = readSpeed(dev->name);
    dev->pciPath = readPciPath(dev->name);
  }
  if (nsNDevs == 0) {
    NS_WARN("no usable network interface found (NCCL_SOCKET_IFNAME=\"%s\", NCCL_SOCKET_FAMILY=\"%s\")",
            spec ? spec : "", famName ? famName : "");
    return ncclSystemError;
  }
  char line[512];
  size_t off = 0;
  line[0] = '\0';
  for (int d = 0; d < nsNDevs && off < sizeof(line); d++) {
    char a[CHR_SOCK_ADDR_STRLEN];
    off += (size_t)snprintf(line + off, sizeof(line) - off, " [%d]%s:%s", d, nsDevs[d].name,
                            chrSockAddrToString(&nsDevs[d].addr, a, sizeof(a)));
  }
  NS_INFO(NCCL_INIT | NCCL_NET, "using%s; %d thread(s) x %d socket(s) per connection%s", line, nsConf.nThreads,
          nsConf.nSocksPerThread, nsConf.nThreads == 0 ? " (inline progress)" : "");
  return ncclSuccess;
}

static void takeLogger(ncclDebugLogger_t logFunction) {
  nsLogger = logFunction;
  chrSockSetLogger(logFunction);
}

static ncclResult_t discover(void) {
  readSettings();
  return findDevices();
}

static chrNetSetup setup = CHR_NET_SETUP_INITIALIZER(takeLogger, discover);

ncclResult_t nsInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                    ncclProfilerCallback_t profFunction) {
  if (ctx == NULL) return ncclInternalError;
  *ctx = NULL;
  ncclResult_t res = chrNetSetupOnce(&setup, logFunction);
  if (res != ncclSuccess) return res;
  res = chrNetCtxNew(ctx, commId, config, profFunction);
  if (res != ncclSuccess) NS_WARN("out of memory allocating the init context");
  return res;
}

ncclResult_t nsFinalize(void* ctx) {
  if (ctx == NULL) return ncclSuccess;
  nsConnectForget(ctx);
  free(ctx);
  return ncclSuccess;
}

ncclResult_t nsDevices(int* ndev) {
  if (ndev == NULL) return ncclInternalError;
  *ndev = nsNDevs;
  return ncclSuccess;
}

ncclResult_t nsGetProperties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL || dev < 0 || dev >= nsNDevs) {
    NS_WARN("getProperties: device %d out of range [0,%d)", dev, nsNDevs);
    return ncclInternalError;
  }
  memset(props, 0, sizeof(*props));
  props->name = nsDevs[dev].name;
  props->pciPath = nsDevs[dev].pciPath;
  props->guid = (uint64_t)dev;
  props->ptrSupport = NCCL_PTR_HOST;
  props->regIsGlobal = 0;
  props->forceFlush = 0;
  props->speed = nsDevs[dev].speed;
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536;
  props->maxRecvs = NS_MAX_RECVS;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  props->maxP2pBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = NCCL_MAX_NET_SIZE_BYTES;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}
