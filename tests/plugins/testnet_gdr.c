/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * testnet_gdr.c: "gdrtest", a test NIC with GPUDirect RDMA, so that the GPU path across (acted-out)
 * hosts can be tested on machines without such a NIC. It wraps another net plugin, which does all the
 * network work (TESTNET_GDR_INNER, by default libnccl-net-socket.so beside this library), and adds
 * what a GPUDirect NIC offers: ptrSupport has NCCL_PTR_CUDA, regMr takes device memory, iflush exists.
 *
 * How GPU memory moves: a CUDA registration gets a pinned host mirror of the same size, registered
 * with the inner plugin as host memory. A send copies its bytes device -> mirror (same offset) and
 * sends the mirror; a receive lands in the mirror, and test() copies the bytes that arrived mirror ->
 * device before it reports done. Each copy finishes inside the call, on a non-blocking stream of the
 * region's context: on the legacy stream it would wait behind a persistent kernel that may itself
 * wait for this data. So received data is in GPU memory once test() says done, and iflush (counted)
 * completes at once.
 *
 * What it checks: every isend/irecv/iflush buffer lies inside the region of the handle given with it,
 * registered on that comm; a CUDA registration is device memory inside one allocation. Counters per
 * process (testnet_gdr_stats.h); with TESTNET_GDR_STATS set, the last finalize of a process (or its
 * exit, when some init was never finalized) appends them as one line to that file. Host memory goes
 * to the inner plugin untouched, so with host buffers this plugin behaves exactly as the inner one.
 *
 * Without a GPU (TESTNET_GDR_HOST_AS_CUDA=1): a CUDA registration of host memory is taken as if that
 * memory were a GPU's, and the copies are memcpys, so that a GPUDirect caller's own logic (which
 * buffers it registers as CUDA, its flushes) can be tested on machines without one.
 *
 * Knobs for testing callers (chorus-netcheck's GPU rules above all), read at every use; init refuses
 * a value it does not know:
 *   TESTNET_GDR_FLUSH_COPIES=1   test() leaves the bytes of a GPU receive in the mirror and iflush
 *                                copies them to the GPU: a NIC whose writes are visible only after a
 *                                flush, so a caller that reads before flushing, or flushes the wrong
 *                                buffer or size, sees stale bytes. Still a correct NIC.
 *   TESTNET_GDR_FAULT=noflush    as FLUSH_COPIES, but iflush copies nothing: the flush completes and
 *                                the bytes never reach the GPU (broken)
 *   TESTNET_GDR_FAULT=flush-error  iflush fails with ncclSystemError (broken)
 *   TESTNET_GDR_FAULT=refuse-cuda  regMr(NCCL_PTR_CUDA) fails although ptrSupport has NCCL_PTR_CUDA
 *                                (a claim without support)
 *
 * ABI v12; plugins/net_common builds v11..v8 from it, so NVIDIA's NCCL loads it too. The CUDA driver is
 * opened with dlopen at the first CUDA registration (testnet_gdr_cuda.c): no CUDA header, no link to
 * libcuda.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net_versions.h"
#include "testnet_gdr_cuda.h"
#include "testnet_gdr_stats.h"

#define EXPORT __attribute__((visibility("default")))
#define GDR_INNER_DEFAULT "libnccl-net-socket.so"
#define GDR_NAME_PREFIX "gdrtest-"
#define GDR_MR_MAGIC 0x47445231u  /* "GDR1" */
#define GDR_REQ_MAGIC 0x47445251u /* "GDRQ" */
#define GDR_MAX_RECVS 64          /* buffers of one grouped irecv we can track */
#define GDR_MAX_DEVS 64           /* devices whose prefixed names we keep */

/* ---- logging ------------------------------------------------------------------------------------ */

static _Atomic(ncclDebugLogger_t) logger; /* the host's, from init; NULL before the first init */

void gdrLog(ncclDebugLogLevel level, int line, const char* fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  ncclDebugLogger_t log = atomic_load(&logger);
  if (log != NULL) log(level, NCCL_NET, __FILE__, line, "NET/gdrtest : %s", msg);
  else if (level == NCCL_LOG_WARN) fprintf(stderr, "NET/gdrtest : %s\n", msg);
}

/* ---- counters ----------------------------------------------------------------------------------- */

static struct {
  atomic_llong regHost, regCuda, regRefused;
  atomic_llong sendHostBytes, sendCudaBytes, recvHostBytes, recvCudaBytes;
  atomic_llong flushes, regionErrors;
} counters;
static atomic_int liveContexts; /* inits not yet finalized */

#define COUNT(field, n) atomic_fetch_add_explicit(&counters.field, (long long)(n), memory_order_relaxed)
#define READ(field) atomic_load_explicit(&counters.field, memory_order_relaxed)

EXPORT struct testNetGdrStats testNetGdrStats(void) {
  return (struct testNetGdrStats){.regHost = READ(regHost), .regCuda = READ(regCuda), .regRefused = READ(regRefused),
                                  .sendHostBytes = READ(sendHostBytes), .sendCudaBytes = READ(sendCudaBytes),
                                  .recvHostBytes = READ(recvHostBytes), .recvCudaBytes = READ(recvCudaBytes),
                                  .flushes = READ(flushes), .regionErrors = READ(regionErrors)};
}

/* One line, one write() with O_APPEND: the lines of several processes never interleave. */
static void appendStatsLine(void) {
  const char* path = getenv("TESTNET_GDR_STATS");
  if (path == NULL || *path == '\0') return;
  struct testNetGdrStats s = testNetGdrStats();
  char line[512];
  int len = snprintf(line, sizeof(line),
                     "pid=%ld reg_host=%lld reg_cuda=%lld reg_refused=%lld send_host_bytes=%lld send_cuda_bytes=%lld "
                     "recv_host_bytes=%lld recv_cuda_bytes=%lld flushes=%lld region_errors=%lld\n",
                     (long)getpid(), s.regHost, s.regCuda, s.regRefused, s.sendHostBytes, s.sendCudaBytes,
                     s.recvHostBytes, s.recvCudaBytes, s.flushes, s.regionErrors);
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    GDR_WARN("cannot open TESTNET_GDR_STATS file %s: %s", path, strerror(errno));
    return;
  }
  if (write(fd, line, (size_t)len) != len) GDR_WARN("cannot append to TESTNET_GDR_STATS file %s", path);
  close(fd);
}

/* A process that never finalizes some init (the v8..v10 tables have no finalize) writes at exit. The
 * host's logger may be gone by then: messages go to stderr. */
__attribute__((destructor)) static void writeStatsAtExit(void) {
  if (atomic_load(&liveContexts) <= 0) return;
  atomic_store(&logger, NULL);
  appendStatsLine();
}

/* ---- the inner plugin --------------------------------------------------------------------------- */

static const ncclNet_v12_t* inner; /* set by the first successful init, never changed after */
static pthread_mutex_t innerLock = PTHREAD_MUTEX_INITIALIZER;

/* TESTNET_GDR_INNER, else the socket plugin in this library's own folder. */
static int innerPath(char* path, size_t len) {
  const char* env = getenv("TESTNET_GDR_INNER");
  if (env != NULL && *env != '\0') return snprintf(path, len, "%s", env) < (int)len;
  Dl_info self;
  if (dladdr((void*)&innerPath, &self) == 0 || self.dli_fname == NULL) return 0;
  const char* slash = strrchr(self.dli_fname, '/');
  if (slash == NULL) return snprintf(path, len, "%s", GDR_INNER_DEFAULT) < (int)len;
  return snprintf(path, len, "%.*s/%s", (int)(slash - self.dli_fname), self.dli_fname, GDR_INNER_DEFAULT) < (int)len;
}

static ncclResult_t openInner(void) {
  char path[4096];
  if (!innerPath(path, sizeof(path))) {
    GDR_WARN("cannot name the inner plugin (set TESTNET_GDR_INNER)");
    return ncclSystemError;
  }
  void* lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (lib == NULL) {
    GDR_WARN("cannot open the inner plugin: %s", dlerror());
    return ncclSystemError;
  }
  const ncclNet_v12_t* table = dlsym(lib, "ncclNetPlugin_v12");
  if (table == NULL || table == &chrNetPluginV12) {
    GDR_WARN("inner plugin %s: %s", path, table == NULL ? "no ncclNetPlugin_v12" : "is this plugin itself");
    dlclose(lib);
    return ncclSystemError;
  }
  GDR_INFO("wrapping net plugin %s (%s)", table->name, path);
  inner = table;
  return ncclSuccess;
}

static ncclResult_t loadInner(void) {
  pthread_mutex_lock(&innerLock);
  ncclResult_t res = inner != NULL ? ncclSuccess : openInner();
  pthread_mutex_unlock(&innerLock);
  return res;
}

/* ---- device level ------------------------------------------------------------------------------- */

/* Only init loads the inner plugin; a call before any init is refused, not followed into NULL. */
static ncclResult_t innerLoaded(const char* call) {
  if (inner != NULL) return ncclSuccess;
  GDR_WARN("%s called before init", call);
  return ncclInternalError;
}

/* ---- test knobs (header comment) ---------------------------------------------------------------- */

enum gdrFault { GDR_FAULT_NONE, GDR_FAULT_NOFLUSH, GDR_FAULT_FLUSH_ERROR, GDR_FAULT_REFUSE_CUDA, GDR_FAULT_UNKNOWN };

static enum gdrFault gdrFault(void) {
  const char* v = getenv("TESTNET_GDR_FAULT");
  if (v == NULL || *v == '\0') return GDR_FAULT_NONE;
  if (strcmp(v, "noflush") == 0) return GDR_FAULT_NOFLUSH;
  if (strcmp(v, "flush-error") == 0) return GDR_FAULT_FLUSH_ERROR;
  if (strcmp(v, "refuse-cuda") == 0) return GDR_FAULT_REFUSE_CUDA;
  return GDR_FAULT_UNKNOWN;
}

/* The bytes of a GPU receive wait in the mirror until iflush (which, under noflush, drops them). */
static int flushCopies(void) {
  const char* v = getenv("TESTNET_GDR_FLUSH_COPIES");
  return (v != NULL && strcmp(v, "1") == 0) || gdrFault() == GDR_FAULT_NOFLUSH;
}

static ncclResult_t checkKnobs(void) {
  const char* copies = getenv("TESTNET_GDR_FLUSH_COPIES");
  if (gdrFault() == GDR_FAULT_UNKNOWN) {
    GDR_WARN("TESTNET_GDR_FAULT=%s: not noflush, flush-error or refuse-cuda", getenv("TESTNET_GDR_FAULT"));
    return ncclInvalidUsage;
  }
  if (copies != NULL && *copies != '\0' && strcmp(copies, "0") != 0 && strcmp(copies, "1") != 0) {
    GDR_WARN("TESTNET_GDR_FLUSH_COPIES=%s: not 0 or 1", copies);
    return ncclInvalidUsage;
  }
  return ncclSuccess;
}

static ncclResult_t gdrInit(void** ctx, uint64_t commId, ncclNetCommConfig_v12_t* config, ncclDebugLogger_t log,
                            ncclProfilerCallback_t prof) {
  if (log != NULL) atomic_store(&logger, log);
  ncclResult_t res = checkKnobs();
  if (res != ncclSuccess) return res;
  res = loadInner();
  if (res != ncclSuccess) return res;
  res = inner->init(ctx, commId, config, log, prof);
  if (res == ncclSuccess) atomic_fetch_add(&liveContexts, 1);
  return res;
}

static ncclResult_t gdrFinalize(void* ctx) {
  ncclResult_t res = innerLoaded("finalize");
  if (res != ncclSuccess) return res;
  res = inner->finalize != NULL ? inner->finalize(ctx) : ncclSuccess;
  if (atomic_fetch_sub(&liveContexts, 1) == 1) appendStatsLine();
  return res;
}

static ncclResult_t gdrDevices(int* ndev) {
  ncclResult_t res = innerLoaded("devices");
  return res != ncclSuccess ? res : inner->devices(ndev);
}

static pthread_mutex_t namesLock = PTHREAD_MUTEX_INITIALIZER;
static char* prefixedNames[GDR_MAX_DEVS]; /* under namesLock; kept while the library is loaded */

/* "gdrtest-<inner name>", made once per device. */
static char* prefixedName(int dev, const char* innerName) {
  if (dev < 0 || dev >= GDR_MAX_DEVS) return NULL;
  pthread_mutex_lock(&namesLock);
  if (prefixedNames[dev] == NULL) {
    size_t len = strlen(GDR_NAME_PREFIX) + strlen(innerName ? innerName : "") + 1;
    char* name = malloc(len);
    if (name != NULL) snprintf(name, len, "%s%s", GDR_NAME_PREFIX, innerName ? innerName : "");
    prefixedNames[dev] = name;
  }
  char* name = prefixedNames[dev];
  pthread_mutex_unlock(&namesLock);
  return name;
}

static ncclResult_t gdrGetProperties(int dev, ncclNetProperties_v12_t* props) {
  ncclResult_t res = innerLoaded("getProperties");
  if (res == ncclSuccess) res = inner->getProperties(dev, props);
  if (res != ncclSuccess) return res;
  char* name = prefixedName(dev, props->name);
  if (name == NULL) {
    GDR_WARN("getProperties(%d): no name for this device (out of memory, or more than %d devices)", dev, GDR_MAX_DEVS);
    return ncclInternalError;
  }
  props->name = name;
  props->ptrSupport |= NCCL_PTR_CUDA; /* not NCCL_PTR_DMABUF: regMrDmaBuf refuses */
  return ncclSuccess;
}

static ncclResult_t gdrSetNetAttr(void* ctx, ncclNetAttr_v12_t* attr) {
  ncclResult_t res = innerLoaded("setNetAttr");
  if (res != ncclSuccess) return res;
  return inner->setNetAttr != NULL ? inner->setNetAttr(ctx, attr) : ncclSuccess;
}

/* ---- connections: the inner plugin's comms, unchanged ------------------------------------------- */

static ncclResult_t gdrListen(void* ctx, int dev, void* handle, void** listenComm) {
  ncclResult_t res = innerLoaded("listen");
  return res != ncclSuccess ? res : inner->listen(ctx, dev, handle, listenComm);
}
static ncclResult_t gdrConnect(void* ctx, int dev, void* handle, void** sendComm, ncclNetDeviceHandle_v12_t** devComm) {
  ncclResult_t res = innerLoaded("connect");
  return res != ncclSuccess ? res : inner->connect(ctx, dev, handle, sendComm, devComm);
}
static ncclResult_t gdrAccept(void* listenComm, void** recvComm, ncclNetDeviceHandle_v12_t** devComm) {
  return inner->accept(listenComm, recvComm, devComm);
}
static ncclResult_t gdrCloseSend(void* sendComm) { return inner->closeSend(sendComm); }
static ncclResult_t gdrCloseRecv(void* recvComm) { return inner->closeRecv(recvComm); }
static ncclResult_t gdrCloseListen(void* listenComm) { return inner->closeListen(listenComm); }

/* ---- registration ------------------------------------------------------------------------------- */

struct gdrMr {
  uint32_t magic;
  int type;           /* NCCL_PTR_HOST or NCCL_PTR_CUDA */
  char* base;         /* the registered region: [base, base + size) */
  size_t size;
  void* comm;         /* the comm it was registered on */
  void* innerMh;      /* the inner plugin's registration: of the region (host) or of its mirror (CUDA) */
  char* mirror;       /* CUDA: pinned host memory; mirror[i] stands for base[i] */
  struct gdrCtx* ctx; /* CUDA: the region's context and its stream */
};

static const char* typeName(int type) { return type == NCCL_PTR_CUDA ? "CUDA" : "host"; }

static struct gdrMr* newMr(void* comm, int type, void* data, size_t size) {
  struct gdrMr* m = calloc(1, sizeof(*m));
  if (m == NULL) {
    GDR_WARN("out of memory");
    return NULL;
  }
  *m = (struct gdrMr){.magic = GDR_MR_MAGIC, .type = type, .base = data, .size = size, .comm = comm};
  return m;
}

static ncclResult_t regHost(void* comm, void* data, size_t size, void** mhandle) {
  struct gdrMr* m = newMr(comm, NCCL_PTR_HOST, data, size);
  if (m == NULL) return ncclSystemError;
  ncclResult_t res = inner->regMr(comm, data, size, NCCL_PTR_HOST, &m->innerMh);
  if (res != ncclSuccess) {
    free(m);
    return res;
  }
  COUNT(regHost, 1);
  *mhandle = m;
  return ncclSuccess;
}

static ncclResult_t allocMirror(struct gdrMr* m) {
  void* mirror = NULL;
  ncclResult_t res = gdrCudaHostAlloc(m->ctx, m->size, &mirror);
  m->mirror = mirror;
  return res;
}

static void freeMirror(struct gdrMr* m) {
  if (m->ctx == NULL) { /* TESTNET_GDR_HOST_AS_CUDA */
    free(m->mirror);
    return;
  }
  gdrCudaHostFree(m->ctx, m->mirror);
}

static int hostAsCuda(void) {
  const char* v = getenv("TESTNET_GDR_HOST_AS_CUDA");
  return v != NULL && strcmp(v, "1") == 0;
}

/* TESTNET_GDR_HOST_AS_CUDA: host memory registered as CUDA, with a plain mirror and no context. */
static ncclResult_t regHostAsCuda(void* comm, void* data, size_t size, void** mhandle) {
  struct gdrMr* m = newMr(comm, NCCL_PTR_CUDA, data, size);
  if (m == NULL) return ncclSystemError;
  if (posix_memalign((void**)&m->mirror, 4096, size > 0 ? size : 1) != 0) {
    GDR_WARN("out of memory for a %zu-byte mirror", size);
    free(m);
    return ncclSystemError;
  }
  ncclResult_t res = inner->regMr(comm, m->mirror, size, NCCL_PTR_HOST, &m->innerMh);
  if (res != ncclSuccess) {
    free(m->mirror);
    free(m);
    return res;
  }
  COUNT(regCuda, 1);
  *mhandle = m;
  return ncclSuccess;
}

static ncclResult_t regCuda(void* comm, void* data, size_t size, void** mhandle) {
  if (gdrFault() == GDR_FAULT_REFUSE_CUDA) {
    GDR_WARN("regMr(NCCL_PTR_CUDA) of %p refused (TESTNET_GDR_FAULT=refuse-cuda)", data);
    COUNT(regRefused, 1);
    return ncclSystemError;
  }
  if (hostAsCuda()) return regHostAsCuda(comm, data, size, mhandle);
  const char* missing = NULL;
  if (!gdrCudaUsable(&missing)) {
    GDR_WARN("regMr(NCCL_PTR_CUDA) of %p: no CUDA driver (%s)", data, missing);
    COUNT(regRefused, 1);
    return ncclSystemError;
  }
  void* context = NULL;
  ncclResult_t res = gdrCudaDeviceRegion(data, size, &context);
  if (res != ncclSuccess) {
    COUNT(regRefused, 1);
    return res;
  }
  struct gdrMr* m = newMr(comm, NCCL_PTR_CUDA, data, size);
  if (m == NULL) return ncclSystemError;
  res = gdrCtxAcquire(context, &m->ctx);
  if (res != ncclSuccess) goto fail_free;
  res = allocMirror(m);
  if (res != ncclSuccess) goto fail_release_ctx;
  res = inner->regMr(comm, m->mirror, size, NCCL_PTR_HOST, &m->innerMh);
  if (res != ncclSuccess) goto fail_free_mirror;
  COUNT(regCuda, 1);
  *mhandle = m;
  return ncclSuccess;
fail_free_mirror:
  freeMirror(m);
fail_release_ctx:
  gdrCtxRelease(m->ctx);
fail_free:
  free(m);
  return res;
}

static ncclResult_t gdrRegMr(void* comm, void* data, size_t size, int type, void** mhandle) {
  if (comm == NULL || mhandle == NULL) {
    GDR_WARN("regMr: NULL comm or mhandle");
    return ncclInternalError;
  }
  *mhandle = NULL;
  if (type == NCCL_PTR_HOST) return regHost(comm, data, size, mhandle);
  if (type == NCCL_PTR_CUDA) return regCuda(comm, data, size, mhandle);
  GDR_WARN("regMr: memory type 0x%x is not supported (NCCL_PTR_HOST or NCCL_PTR_CUDA)", type);
  COUNT(regRefused, 1);
  return ncclInvalidArgument;
}

static ncclResult_t gdrRegMrDmaBuf(void* comm, void* data, size_t size, int type, uint64_t offset, int fd,
                                   void** mhandle) {
  if (mhandle != NULL) *mhandle = NULL;
  GDR_WARN("regMrDmaBuf of %p (fd %d): dma-buf is not supported (ptrSupport has no NCCL_PTR_DMABUF)", data, fd);
  COUNT(regRefused, 1);
  return ncclInvalidUsage;
}

static ncclResult_t gdrDeregMr(void* comm, void* mhandle) {
  struct gdrMr* m = mhandle;
  if (m == NULL) return ncclSuccess;
  if (m->magic != GDR_MR_MAGIC) {
    GDR_WARN("deregMr: %p is not a registration of this plugin", mhandle);
    return ncclInternalError;
  }
  ncclResult_t res = inner->deregMr(comm, m->innerMh);
  if (m->type == NCCL_PTR_CUDA) {
    freeMirror(m);
    if (m->ctx != NULL) gdrCtxRelease(m->ctx);
  }
  m->magic = 0;
  free(m);
  return res;
}

static ncclResult_t gdrGetDeviceMr(void* comm, void* mhandle, void** dptrMhandle) {
  struct gdrMr* m = mhandle;
  if (m == NULL || m->magic != GDR_MR_MAGIC || dptrMhandle == NULL) {
    GDR_WARN("getDeviceMr: %p is not a registration of this plugin", mhandle);
    return ncclInternalError;
  }
  *dptrMhandle = NULL;
  return inner->getDeviceMr != NULL ? inner->getDeviceMr(comm, m->innerMh, dptrMhandle) : ncclSuccess;
}

/* ---- the region check --------------------------------------------------------------------------- */

static int regionHolds(const struct gdrMr* m, const void* data, size_t size) {
  uintptr_t p = (uintptr_t)data, base = (uintptr_t)m->base;
  return p >= base && size <= m->size && p - base <= m->size - size;
}

/* A buffer handed to isend/irecv/iflush lies inside the region of its handle, registered on this comm:
 * every registered region is the one used. A zero-byte buffer touches nothing: its address is not
 * checked (the socket plugin takes NULL there). */
static ncclResult_t checkRegion(const char* call, void* comm, void* mhandle, void* data, size_t size) {
  const struct gdrMr* m = mhandle;
  if (m == NULL || m->magic != GDR_MR_MAGIC)
    GDR_WARN("%s: handle %p is not a registration of this plugin", call, mhandle);
  else if (m->comm != comm)
    GDR_WARN("%s: handle %p was registered on comm %p, used on comm %p", call, mhandle, m->comm, comm);
  else if (size > 0 && !regionHolds(m, data, size))
    GDR_WARN("%s: buffer [%p, +%zu) is not inside the %s region [%p, +%zu) of its handle %p", call, data, size,
             typeName(m->type), (void*)m->base, m->size, mhandle);
  else
    return ncclSuccess;
  COUNT(regionErrors, 1);
  return ncclInternalError;
}

/* Where the inner plugin moves the bytes of data: the data itself, or its place in the mirror. */
static void* wireAddress(const struct gdrMr* m, void* data) {
  if (m->type != NCCL_PTR_CUDA) return data;
  if (!regionHolds(m, data, 0)) return m->mirror; /* a zero-byte buffer anywhere: nothing moves */
  return m->mirror + ((char*)data - m->base);
}

/* ---- requests ----------------------------------------------------------------------------------- */

enum gdrReqKind { GDR_REQ_SEND, GDR_REQ_RECV, GDR_REQ_FLUSH };

struct gdrBuf {
  struct gdrMr* mr;
  char* data;    /* the caller's address (device memory for a CUDA region) */
  size_t posted; /* bytes sent, or room posted for a receive */
};

struct gdrReq {
  uint32_t magic;
  enum gdrReqKind kind;
  int n;
  void* inner; /* the inner plugin's request; NULL for a flush */
  struct gdrBuf bufs[];
};

static struct gdrReq* newReq(enum gdrReqKind kind, int n) {
  struct gdrReq* r = calloc(1, sizeof(*r) + (size_t)n * sizeof(struct gdrBuf));
  if (r == NULL) {
    GDR_WARN("out of memory");
    return NULL;
  }
  r->magic = GDR_REQ_MAGIC;
  r->kind = kind;
  r->n = n;
  return r;
}

static void freeReq(struct gdrReq* r) {
  r->magic = 0;
  free(r);
}

/* ---- data path ---------------------------------------------------------------------------------- */

static ncclResult_t gdrIsend(void* sendComm, void* data, size_t size, int tag, void* mhandle, void* phandle,
                             void** request) {
  if (request == NULL) {
    GDR_WARN("isend: NULL request");
    return ncclInternalError;
  }
  *request = NULL;
  ncclResult_t res = checkRegion("isend", sendComm, mhandle, data, size);
  if (res != ncclSuccess) return res;
  struct gdrMr* m = mhandle;
  void* wire = wireAddress(m, data);
  /* The bytes leave from the mirror; if the inner plugin says "not now", the retry copies again. */
  if (m->type == NCCL_PTR_CUDA && (res = gdrCopyAndWait(m->ctx, 0, data, wire, size)) != ncclSuccess) return res;
  struct gdrReq* r = newReq(GDR_REQ_SEND, 1);
  if (r == NULL) return ncclSystemError;
  res = inner->isend(sendComm, wire, size, tag, m->innerMh, phandle, &r->inner);
  if (res != ncclSuccess || r->inner == NULL) {
    freeReq(r);
    return res;
  }
  r->bufs[0] = (struct gdrBuf){.mr = m, .data = data, .posted = size};
  *request = r;
  return ncclSuccess;
}

static ncclResult_t gdrIrecv(void* recvComm, int n, void** data, size_t* sizes, int* tags, void** mhandles,
                             void** phandles, void** request) {
  if (request == NULL || data == NULL || sizes == NULL || mhandles == NULL || n < 1 || n > GDR_MAX_RECVS) {
    GDR_WARN("irecv: bad arguments (n = %d, at most %d)", n, GDR_MAX_RECVS);
    return ncclInternalError;
  }
  void* hint = *request;
  *request = NULL;
  struct gdrReq* r = newReq(GDR_REQ_RECV, n);
  if (r == NULL) return ncclSystemError;
  void* wire[GDR_MAX_RECVS];
  void* innerMh[GDR_MAX_RECVS];
  int anyCuda = 0;
  for (int i = 0; i < n; i++) {
    ncclResult_t res = checkRegion("irecv", recvComm, mhandles[i], data[i], sizes[i]);
    if (res != ncclSuccess) {
      freeReq(r);
      return res;
    }
    struct gdrMr* m = mhandles[i];
    r->bufs[i] = (struct gdrBuf){.mr = m, .data = data[i], .posted = sizes[i]};
    wire[i] = wireAddress(m, data[i]);
    innerMh[i] = m->innerMh;
    anyCuda |= m->type == NCCL_PTR_CUDA;
  }
  /* The hint lets a receive end before all its bytes are in (the core reads flags in the data). The
   * bytes of a GPU buffer reach it only through the copy in test(), which must wait for all of them. */
  r->inner = anyCuda ? NULL : hint;
  ncclResult_t res = inner->irecv(recvComm, n, wire, sizes, tags, innerMh, phandles, &r->inner);
  if (res != ncclSuccess || r->inner == NULL) {
    freeReq(r);
    return res;
  }
  *request = r;
  return ncclSuccess;
}

/* The copies in isend and test() are finished when they return: nothing is left to flush, unless
 * TESTNET_GDR_FLUSH_COPIES left the received bytes in the mirrors for the flush to copy. */
static ncclResult_t gdrIflush(void* recvComm, int n, void** data, int* sizes, void** mhandles, void** request) {
  COUNT(flushes, 1);
  if (request == NULL || data == NULL || sizes == NULL || mhandles == NULL || n < 1 || n > GDR_MAX_RECVS) {
    GDR_WARN("iflush: bad arguments (n = %d, at most %d)", n, GDR_MAX_RECVS);
    return ncclInternalError;
  }
  *request = NULL;
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) {
      GDR_WARN("iflush: buffer %d has a negative size %d", i, sizes[i]);
      return ncclInternalError;
    }
    ncclResult_t res = checkRegion("iflush", recvComm, mhandles[i], data[i], (size_t)sizes[i]);
    if (res != ncclSuccess) return res;
  }
  enum gdrFault fault = gdrFault();
  if (fault == GDR_FAULT_FLUSH_ERROR) {
    GDR_WARN("iflush of %d buffers fails (TESTNET_GDR_FAULT=flush-error)", n);
    return ncclSystemError;
  }
  int copy = flushCopies() && fault != GDR_FAULT_NOFLUSH;
  for (int i = 0; i < n && copy; i++) {
    struct gdrMr* m = mhandles[i];
    if (m->type != NCCL_PTR_CUDA) continue;
    ncclResult_t res = gdrCopyAndWait(m->ctx, 1, data[i], wireAddress(m, data[i]), (size_t)sizes[i]);
    if (res != ncclSuccess) return res;
  }
  struct gdrReq* r = newReq(GDR_REQ_FLUSH, 0);
  if (r == NULL) return ncclSystemError;
  *request = r;
  return ncclSuccess;
}

/* A completed receive: the bytes that arrived in the mirror of each GPU buffer go to the GPU (under
 * TESTNET_GDR_FLUSH_COPIES, only in iflush). */
static ncclResult_t finishRecv(struct gdrReq* r, const int* got) {
  for (int i = 0; i < r->n; i++) {
    struct gdrBuf* b = &r->bufs[i];
    if (got[i] < 0 || (size_t)got[i] > b->posted) {
      GDR_WARN("test: the inner plugin reports %d bytes received into a buffer of %zu", got[i], b->posted);
      return ncclInternalError;
    }
    if (b->mr->type == NCCL_PTR_CUDA) {
      ncclResult_t res = flushCopies() ? ncclSuccess /* iflush copies them */
                                       : gdrCopyAndWait(b->mr->ctx, 1, b->data, wireAddress(b->mr, b->data), (size_t)got[i]);
      if (res != ncclSuccess) return res;
      COUNT(recvCudaBytes, got[i]);
    } else {
      COUNT(recvHostBytes, got[i]);
    }
  }
  return ncclSuccess;
}

static ncclResult_t gdrTest(void* request, int* done, int* sizes) {
  struct gdrReq* r = request;
  if (r == NULL || r->magic != GDR_REQ_MAGIC || done == NULL) {
    GDR_WARN("test: %p is not a request in flight", request);
    return ncclInternalError;
  }
  *done = 0;
  int got[GDR_MAX_RECVS] = {0};
  if (r->kind != GDR_REQ_FLUSH) {
    ncclResult_t res = inner->test(r->inner, done, got);
    if (res != ncclSuccess || !*done) return res; /* on error the request stays: a retry finds it */
    if (r->kind == GDR_REQ_RECV && (res = finishRecv(r, got)) != ncclSuccess) {
      *done = 0;
      freeReq(r);
      return res;
    }
    if (r->kind == GDR_REQ_SEND) {
      if (r->bufs[0].mr->type == NCCL_PTR_CUDA) COUNT(sendCudaBytes, r->bufs[0].posted);
      else COUNT(sendHostBytes, r->bufs[0].posted);
    }
  }
  *done = 1;
  if (sizes != NULL)
    for (int i = 0; i < r->n; i++) sizes[i] = got[i];
  freeReq(r);
  return ncclSuccess;
}

/* ---- the exported table ------------------------------------------------------------------------- */

/* makeVDevice and irecvConsumed stay NULL (the socket plugin has neither; a device-offload inner
 * plugin is not what this NIC acts out). */
const ncclNet_v12_t chrNetPluginV12 = {
    .name = "gdrtest",
    .init = gdrInit,
    .devices = gdrDevices,
    .getProperties = gdrGetProperties,
    .listen = gdrListen,
    .connect = gdrConnect,
    .accept = gdrAccept,
    .regMr = gdrRegMr,
    .regMrDmaBuf = gdrRegMrDmaBuf,
    .deregMr = gdrDeregMr,
    .isend = gdrIsend,
    .irecv = gdrIrecv,
    .iflush = gdrIflush,
    .test = gdrTest,
    .closeSend = gdrCloseSend,
    .closeRecv = gdrCloseRecv,
    .closeListen = gdrCloseListen,
    .getDeviceMr = gdrGetDeviceMr,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = gdrFinalize,
    .setNetAttr = gdrSetNetAttr,
};
CHR_NET_EXPORT_V12();
