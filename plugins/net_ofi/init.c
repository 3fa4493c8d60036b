/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * init.c: settings, device discovery, init/finalize/devices/getProperties of the libfabric net plugin.
 *
 * Devices are found once per process (first init) and stay until the library is unloaded, because the
 * core may call getProperties at any time. A device is one domain that fi_getinfo offers for a
 * reliable-datagram endpoint with tagged messages. Each domain is asked for three
 * capability sets, richest first: with FI_HMEM and FI_RMA (CUDA buffers, flush by read-back; only
 * where the CUDA driver loads), with FI_RMA only, and with neither, so a provider without GPU support
 * still gives host-memory devices.
 */
#include <dlfcn.h>
#include <sched.h> /* sched_getaffinity, CPU_COUNT (the build defines _GNU_SOURCE) */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "ofi_plugin.h"

ncclDebugLogger_t ofiLogger = NULL;
ofiDev ofiDevs[OFI_MAX_DEVS];
int ofiNDevs = 0;
ofiSettings ofiConf;


int64_t ofiNowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static long envLong(const char* name, long def) {
  long v;
  if (chrPluginEnvLong(name, LONG_MIN, LONG_MAX, def, &v, NULL, 0) != 0)
    OFI_WARN("ignoring %s=\"%s\": not an integer, using %ld", name, getenv(name), def);
  return v;
}

static void envStr(const char* name, char* out, size_t len) {
  if (chrPluginEnvStr(name, out, len) != 0) OFI_WARN("ignoring %s: longer than %zu characters", name, len - 1);
}

static void readSettings(void) {
  envStr("CHORUS_OFI_PROVIDER", ofiConf.provider, sizeof(ofiConf.provider));
  envStr("CHORUS_OFI_DOMAIN", ofiConf.domains, sizeof(ofiConf.domains));
  ofiConf.cuda = envLong("CHORUS_OFI_CUDA", 1) != 0;
  ofiConf.forceFlush = envLong("CHORUS_OFI_FORCE_FLUSH", 0) != 0;
  ofiConf.pingMs = envLong("CHORUS_OFI_PING_MS", 1000);
  if (ofiConf.pingMs < 0) ofiConf.pingMs = 0;
  ofiConf.peerTimeoutMs = envLong("CHORUS_OFI_PEER_TIMEOUT_MS", 5000);
  if (ofiConf.peerTimeoutMs < 0) ofiConf.peerTimeoutMs = 0;
  ofiConf.closeWaitMs = envLong("CHORUS_OFI_CLOSE_WAIT_MS", 1000);
  if (ofiConf.closeWaitMs < 0) ofiConf.closeWaitMs = 0;
  long eps = envLong("CHORUS_OFI_ENDPOINTS", 0);
  if (eps < 0 || eps > OFI_MAX_EPS) {
    OFI_WARN("ignoring CHORUS_OFI_ENDPOINTS=%ld: 1 to %d (0: as the provider suits), using 0", eps, OFI_MAX_EPS);
    eps = 0;
  }
  ofiConf.endpoints = (int)eps;
  long thr = envLong("CHORUS_OFI_PROGRESS_THREADS", -1);
  ofiConf.progressThreads = thr < 0 ? -1 : thr != 0;
}

/* Providers whose data moves on the CPU inside the caller's progress calls (manual progress over
 * kernel sockets): with threads of their own the plugin's endpoints copy in parallel. NICs that move
 * the bytes themselves (efa, verbs, cxi) gain nothing from a thread that polls. */
static int cpuMovesData(const struct fi_info* info) {
  const char* prov = info->fabric_attr->prov_name;
  return prov != NULL && (strstr(prov, "tcp") != NULL || strstr(prov, "sockets") != NULL || strstr(prov, "udp") != NULL);
}

/* CPUs this process may run on. */
static int usableCpus(void) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return CPU_COUNT(&set);
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? (int)n : 1;
}

/* Progress threads and endpoints of a new device: the settings, or (unset) what its provider suits:
 * over tcp, on a process with OFI_THREADS_MIN_CPUS CPUs or more, a thread for each of 4 endpoints,
 * which gives NCCL's two channels per peer a connection and a thread per direction (inside NCCL on
 * 2 GPUs: 1.7x the bandwidth, docs/perf/gpu-2gpu.md). With fewer CPUs the threads take the cores the
 * callers need (2 CPUs: an 8-byte ping-pong took 33-40 us instead of 14), so none. */
#define OFI_THREADS_MIN_CPUS 8
static void pickThreading(ofiDev* dev) {
  dev->threads = ofiConf.progressThreads >= 0 ? ofiConf.progressThreads
                                              : cpuMovesData(dev->info) && usableCpus() >= OFI_THREADS_MIN_CPUS;
  dev->wantEps = ofiConf.endpoints > 0 ? ofiConf.endpoints : dev->threads ? 4 : 1;
  /* Asked for FI_THREAD_DOMAIN (unless CHORUS_OFI_PROGRESS_THREADS=1 asked for more): this domain is
   * opened thread-safe instead, which the providers chosen here offer. */
  if (dev->threads) dev->info->domain_attr->threading = FI_THREAD_SAFE;
}

/* CHORUS_OFI_DOMAIN: comma list of name prefixes ("=name" exact), or "^list" to exclude. Unset: every
 * domain except loopback and docker ones, unless those are all there is. */
static int nameInList(const char* name, const char* list) {
  char buf[sizeof(ofiConf.domains)];
  snprintf(buf, sizeof(buf), "%s", list);
  for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
    if (tok[0] == '=') {
      if (strcmp(name, tok + 1) == 0) return 1;
    } else if (tok[0] != '\0' && strncmp(name, tok, strlen(tok)) == 0) {
      return 1;
    }
  }
  return 0;
}

static int domainWanted(const char* name, int pass) {
  const char* spec = ofiConf.domains;
  if (spec[0] == '^') return !nameInList(name, spec + 1);
  if (spec[0] != '\0') return nameInList(name, spec);
  int local = strncmp(name, "lo", 2) == 0 || strncmp(name, "docker", 6) == 0;
  return pass == 0 ? !local : local;
}

static struct fi_info* makeHints(uint64_t extraCaps) {
  struct fi_info* hints = fi_allocinfo();
  if (hints == NULL) return NULL;
  /* FI_REMOTE_COMM: other hosts (leaves out shm, which only reaches this one). Remote CQ data is not
   * a capability to ask for in 1.17 providers: cq_data_size says (addDevices). */
  hints->caps = FI_TAGGED | FI_SEND | FI_RECV | FI_REMOTE_COMM | extraCaps;
  hints->mode = FI_CONTEXT | FI_CONTEXT2;
  hints->ep_attr->type = FI_EP_RDM;
  /* Every MR mode bit mr.c honours; a provider picks the ones it needs. */
  hints->domain_attr->mr_mode = FI_MR_LOCAL | FI_MR_VIRT_ADDR | FI_MR_ALLOCATED | FI_MR_PROV_KEY | FI_MR_ENDPOINT |
                                ((extraCaps & FI_HMEM) ? FI_MR_HMEM : 0);
  /* Without progress threads the device lock serialises every call; with them, endpoints progress in
   * parallel and registrations come from any thread. */
  hints->domain_attr->threading = ofiConf.progressThreads == 1 ? FI_THREAD_SAFE : FI_THREAD_DOMAIN;
  hints->domain_attr->control_progress = FI_PROGRESS_UNSPEC;
  hints->domain_attr->data_progress = FI_PROGRESS_UNSPEC;
  hints->tx_attr->msg_order = FI_ORDER_NONE; /* sequence numbers in the tags order messages */
  if (ofiConf.provider[0] != '\0') hints->fabric_attr->prov_name = strdup(ofiConf.provider);
  return hints;
}

static int readSysInt(const char* path) {
  FILE* f = fopen(path, "r");
  int v = -1;
  if (f != NULL) {
    if (fscanf(f, "%d", &v) != 1) v = -1;
    fclose(f);
  }
  return v;
}

/* Speed in Mbps: the provider's link attribute, else the interface of the same name, else 10 Gbps. */
static int devSpeed(const struct fi_info* info, const char* name) {
  if (info->nic != NULL && info->nic->link_attr != NULL && info->nic->link_attr->speed > 0) {
    size_t mbps = info->nic->link_attr->speed / 1000000;
    if (mbps > 0) return mbps > INT_MAX ? INT_MAX : (int)mbps;
  }
  char path[160];
  snprintf(path, sizeof(path), "/sys/class/net/%s/speed", name);
  int s = readSysInt(path);
  return s > 0 ? s : 10000;
}

/* PCI device folder: from the provider's bus attributes, else the interface of the same name. */
static char* devPciPath(const struct fi_info* info, const char* name) {
  char path[160];
  if (info->nic != NULL && info->nic->bus_attr != NULL && info->nic->bus_attr->bus_type == FI_BUS_PCI) {
    const struct fi_pci_attr* p = &info->nic->bus_attr->attr.pci;
    snprintf(path, sizeof(path), "/sys/bus/pci/devices/%04x:%02x:%02x.%x", p->domain_id, p->bus_id, p->device_id,
             p->function_id);
    char* r = realpath(path, NULL);
    if (r != NULL) return r;
  }
  snprintf(path, sizeof(path), "/sys/class/net/%s/device", name);
  return realpath(path, NULL); /* NULL for virtual interfaces (lo) */
}

/* The entry to use for one domain: IPv4 addressing before IPv6 (any other format as offered). */
static int better(const struct fi_info* a, const struct fi_info* b) {
  return a->addr_format == FI_SOCKADDR_IN && b->addr_format != FI_SOCKADDR_IN;
}

static ncclResult_t addDevices(struct fi_info* list, int pass, int hmem, int rma) {
  for (struct fi_info* i = list; i != NULL; i = i->next) {
    const char* name = i->domain_attr->name;
    if (name == NULL || !domainWanted(name, pass)) continue;
    int slot = -1;
    for (int d = 0; d < ofiNDevs; d++)
      if (strcmp(ofiDevs[d].name, name) == 0) slot = d;
    if (slot >= 0) {
      ofiDev* dev = &ofiDevs[slot];
      /* A richer capability set found first keeps its entry; the same set may offer a better format. */
      if (dev->hmem == hmem && dev->rma == rma && better(i, dev->info)) {
        struct fi_info* copy = fi_dupinfo(i);
        if (copy == NULL) return ncclSystemError;
        fi_freeinfo(dev->info);
        dev->info = copy;
        pickThreading(dev);
      }
      continue;
    }
    if (ofiNDevs == OFI_MAX_DEVS) break;
    if (strlen(name) >= sizeof(ofiDevs[0].name)) continue;
    ofiDev* dev = &ofiDevs[ofiNDevs];
    memset(dev, 0, sizeof(*dev));
    dev->info = fi_dupinfo(i);
    if (dev->info == NULL) return ncclSystemError;
    dev->index = ofiNDevs;
    snprintf(dev->name, sizeof(dev->name), "%s", name);
    dev->hmem = hmem;
    dev->rma = rma;
    dev->mrMode = (uint64_t)i->domain_attr->mr_mode;
    /* Grouped receives need the isend's tag with each message: remote CQ data of 4 bytes or more. */
    dev->maxRecvs = i->domain_attr->cq_data_size >= 4 ? OFI_MAX_RECVS : 1;
    dev->speedMbps = devSpeed(i, name);
    dev->pciPath = devPciPath(i, name);
    pickThreading(dev);
    pthread_mutex_init(&dev->lock, NULL);
    pthread_mutex_init(&dev->mrLock, NULL);
    ofiNDevs++;
  }
  return ncclSuccess;
}

/* FI_HMEM only says the provider handles device memory of some kind (shm offers it with no GPU at
 * all); CUDA pointers are offered only where the CUDA driver is there too. */
static int cudaDriverPresent(void) {
  void* h = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
  if (h == NULL) return 0;
  dlclose(h);
  return 1;
}

static ncclResult_t findDevices(void) {
  static const uint64_t capSets[3] = {FI_HMEM | FI_RMA | FI_READ | FI_REMOTE_READ, FI_RMA | FI_READ | FI_REMOTE_READ, 0};
  struct fi_info* lists[3] = {NULL, NULL, NULL};
  int lastErr = 0;
  for (int k = 0; k < 3; k++) {
    if (k == 0 && (!ofiConf.cuda || !cudaDriverPresent())) continue;
    struct fi_info* hints = makeHints(capSets[k]);
    if (hints == NULL) {
      OFI_WARN("out of memory allocating fi_info hints");
      return ncclSystemError;
    }
    int rc = fi_getinfo(OFI_LIBFABRIC_VERSION, NULL, NULL, 0, hints, &lists[k]);
    fi_freeinfo(hints);
    if (rc != 0) {
      lists[k] = NULL;
      lastErr = rc;
    }
  }
  ncclResult_t res = ncclSuccess;
  /* Pass 0: the domains asked for (or, unset, every non-loopback one); pass 1: loopback if none. */
  for (int pass = 0; pass < 2 && res == ncclSuccess && ofiNDevs == 0; pass++)
    for (int k = 0; k < 3 && res == ncclSuccess; k++)
      if (lists[k] != NULL) res = addDevices(lists[k], pass, k == 0, k < 2);
  for (int k = 0; k < 3; k++)
    if (lists[k] != NULL) fi_freeinfo(lists[k]);
  if (res != ncclSuccess) {
    OFI_WARN("out of memory copying fi_info");
    return res;
  }
  const char* fiProv = getenv("FI_PROVIDER");
  if (ofiNDevs == 0) {
    OFI_WARN("no libfabric domain with FI_EP_RDM and FI_TAGGED (FI_PROVIDER=\"%s\", CHORUS_OFI_PROVIDER=\"%s\", "
             "CHORUS_OFI_DOMAIN=\"%s\")%s%s",
             fiProv ? fiProv : "", ofiConf.provider, ofiConf.domains, lastErr ? ": fi_getinfo: " : "",
             lastErr ? fi_strerror(-lastErr) : "");
    return ncclSystemError;
  }
  char line[512];
  size_t off = 0;
  line[0] = '\0';
  for (int d = 0; d < ofiNDevs && off < sizeof(line); d++)
    off += (size_t)snprintf(line + off, sizeof(line) - off, " [%d]%s/%s%s", d, ofiDevs[d].info->fabric_attr->prov_name,
                            ofiDevs[d].name, ofiDevs[d].hmem ? "(cuda)" : "");
  OFI_INFO(NCCL_INIT | NCCL_NET, "libfabric %u.%u, using%s", FI_MAJOR(fi_version()), FI_MINOR(fi_version()), line);
  return ncclSuccess;
}

static void takeLogger(ncclDebugLogger_t logFunction) { ofiLogger = logFunction; }

/* Progress threads run the library's code: they stop before it is unloaded (dlclose) or the process
 * exits. */
__attribute__((destructor)) static void stopThreadsAtUnload(void) { ofiStopThreads(); }

static ncclResult_t discover(void) {
  readSettings();
  return findDevices();
}

static chrNetSetup setup = CHR_NET_SETUP_INITIALIZER(takeLogger, discover);

ncclResult_t ofiInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t logFunction,
                     ncclProfilerCallback_t profFunction) {
  if (ctx == NULL) return ncclInternalError;
  *ctx = NULL;
  ncclResult_t res = chrNetSetupOnce(&setup, logFunction);
  if (res != ncclSuccess) return res;
  res = chrNetCtxNew(ctx, commId, config, profFunction);
  if (res != ncclSuccess) OFI_WARN("out of memory allocating the init context");
  return res;
}

ncclResult_t ofiFinalize(void* ctx) {
  if (ctx == NULL) return ncclSuccess;
  ofiConnectForget(ctx);
  free(ctx);
  return ncclSuccess;
}

ncclResult_t ofiDevices(int* ndev) {
  if (ndev == NULL) return ncclInternalError;
  *ndev = ofiNDevs;
  return ncclSuccess;
}

static uint64_t hashName(const char* s) {
  uint64_t h = 1469598103934665603ULL; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ULL;
  return h;
}

ncclResult_t ofiGetProperties(int dev, ncclNetProperties_v12_t* props) {
  if (props == NULL || dev < 0 || dev >= ofiNDevs) {
    OFI_WARN("getProperties: device %d out of range [0,%d)", dev, ofiNDevs);
    return ncclInternalError;
  }
  const ofiDev* d = &ofiDevs[dev];
  memset(props, 0, sizeof(*props));
  props->name = (char*)d->name;
  props->pciPath = d->pciPath;
  props->guid = hashName(d->name) ^ hashName(d->info->fabric_attr->prov_name);
  props->ptrSupport = NCCL_PTR_HOST | (d->hmem ? NCCL_PTR_CUDA : 0);
  props->regIsGlobal = 1; /* registrations live in the domain (mr.c caches them), not in one comm */
  props->forceFlush = ofiConf.forceFlush && d->rma;
  props->speed = d->speedMbps;
  props->port = 0;
  props->latency = 0;
  props->maxComms = 65536; /* connections share one endpoint; ids are OFI_ID_BITS wide */
  props->maxRecvs = d->maxRecvs;
  props->netDeviceType = NCCL_NET_DEVICE_HOST;
  props->netDeviceVersion = 0;
  props->vProps.ndevs = 1;
  props->vProps.devs[0] = dev;
  size_t maxMsg = d->info->ep_attr->max_msg_size;
  props->maxP2pBytes = maxMsg < NCCL_MAX_NET_SIZE_BYTES ? maxMsg : NCCL_MAX_NET_SIZE_BYTES;
  props->maxCollBytes = props->maxP2pBytes;
  props->maxMultiRequestSize = 1;
  props->railId = -1;
  props->planeId = -1;
  return ncclSuccess;
}
