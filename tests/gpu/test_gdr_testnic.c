/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gdr_testnic.c: the gdrtest NIC (tests/plugins/testnet_gdr.c) on GPU memory, driven directly
 * through its v12 table, as a core's proxy would.
 *
 *   test_gdr_testnic PLUGIN.so        (exits 77, SKIP, without a CUDA device)
 *
 * One connection over the inner plugin (loopback); the main thread connects and sends, a second thread
 * accepts, receives and flushes. The receiving thread never calls the CUDA runtime, so it has no
 * current context: the plugin must use the region's own. Each message is one step in lock-step
 * (barriers): the main thread fills the buffers, both sides move the message, then the main thread
 * reads the receive buffer back and checks the bytes sent and the guard bytes after them.
 *
 * Messages: device -> device at several sizes and offsets (0 bytes, 1, odd, a whole buffer), host ->
 * device, device -> host, host -> host, a grouped receive of a device and a host buffer, and one while
 * a host function holds the legacy stream (a persistent kernel would): the plugin's copies must not
 * wait for it. Then what must be refused, each with an error code and a WARN through the logger:
 * buffers outside their handle's region (isend, irecv, iflush), a handle of another comm, CUDA
 * registrations of host memory (pageable and pinned), past the end of an allocation, an unknown memory
 * type, and dma-buf. Last, the plugin's counters (testNetGdrStats) must match what was moved.
 */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin/net.h"
#include "gdrtest_check.h"
#include "testnet_gdr_stats.h"

#define SKIP 77
#define BUF_BYTES (4u << 20)
#define GUARD 0xEE
#define DEADLINE_S 30.0

#define CUDA(call)                                                                     \
  do {                                                                                 \
    cudaError_t e_ = (call);                                                           \
    CHECK(e_ == cudaSuccess, "%s: %s", #call, cudaGetErrorString(e_));                 \
  } while (0)

static const ncclNet_v12_t* net;
static atomic_int warnings;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN && level != NCCL_LOG_INFO) return;
  if (level == NCCL_LOG_WARN) atomic_fetch_add(&warnings, 1);
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "%s: ", level == NCCL_LOG_WARN ? "WARN" : "INFO");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static unsigned char pattern(size_t i) { return (unsigned char)(i * 131u + 7u); }

/* ---- the buffers: one device and one host buffer on each side, registered on that side's comm ---- */

enum { DEV = 0, HOST = 1 };
struct side {
  void* comm;
  char* buf[2]; /* DEV: cudaMalloc'd; HOST: malloc'd */
  void* mh[2];
};
static struct side sender, receiver;

static void registerSide(struct side* s) {
  CUDA(cudaMalloc((void**)&s->buf[DEV], BUF_BYTES));
  s->buf[HOST] = malloc(BUF_BYTES);
  CHECK(s->buf[HOST] != NULL, "out of memory");
  NET(net->regMr(s->comm, s->buf[DEV], BUF_BYTES, NCCL_PTR_CUDA, &s->mh[DEV]));
  NET(net->regMr(s->comm, s->buf[HOST], BUF_BYTES, NCCL_PTR_HOST, &s->mh[HOST]));
}

/* ---- one message: where it leaves from, where it lands ------------------------------------------ */

struct part {
  int kind;      /* DEV or HOST */
  size_t offset; /* into the side's buffer of that kind */
};
struct message {
  const char* name;
  int n;                  /* 1, or 2 for a grouped receive (tags 1 and 2) */
  struct part from[2];    /* sender's buffers (message i is sent with tag i + 1 when n = 2) */
  struct part to[2];      /* receiver's buffers */
  size_t size[2];         /* bytes sent */
  size_t posted[2];       /* room posted for the receive (>= size) */
  int holdLegacyStream;   /* a host function blocks the legacy stream while the message moves */
};

static struct testNetGdrStats expected;
static pthread_barrier_t step;
static const struct message* current;

static void* waitRequest(void* request, int* sizes, const char* what) {
  double end = now() + DEADLINE_S;
  int done = 0;
  while (!done) {
    CHECK(net->test(request, &done, sizes) == ncclSuccess, "test of %s failed", what);
    CHECK(now() < end, "%s not done after %.0f s", what, DEADLINE_S);
  }
  return NULL;
}

static void sendMessage(const struct message* m) {
  void* requests[2] = {NULL, NULL};
  for (int i = 0; i < m->n; i++) {
    char* data = sender.buf[m->from[i].kind] + m->from[i].offset;
    double end = now() + DEADLINE_S;
    while (requests[i] == NULL) { /* NULL: not now, post again */
      NET(net->isend(sender.comm, data, m->size[i], m->n == 1 ? 0 : i + 1, sender.mh[m->from[i].kind], NULL, &requests[i]));
      CHECK(now() < end, "%s: isend not accepted after %.0f s", m->name, DEADLINE_S);
    }
  }
  for (int i = 0; i < m->n; i++) {
    int size = -1;
    waitRequest(requests[i], &size, "isend");
    CHECK(size == (int)m->size[i], "%s: send %d reported %d bytes, not %zu", m->name, i, size, m->size[i]);
    if (m->from[i].kind == DEV) expected.sendCudaBytes += (long long)m->size[i];
    else expected.sendHostBytes += (long long)m->size[i];
  }
}

static void receiveMessage(const struct message* m) {
  void* data[2];
  size_t posted[2];
  int tags[2], sizes[2] = {-1, -1};
  void* mh[2];
  for (int i = 0; i < m->n; i++) {
    data[i] = receiver.buf[m->to[i].kind] + m->to[i].offset;
    posted[i] = m->posted[i];
    tags[i] = m->n == 1 ? 0 : i + 1;
    mh[i] = receiver.mh[m->to[i].kind];
  }
  void* request = NULL;
  double end = now() + DEADLINE_S;
  while (request == NULL) {
    NET(net->irecv(receiver.comm, m->n, data, posted, tags, mh, NULL, &request));
    CHECK(now() < end, "%s: irecv not accepted after %.0f s", m->name, DEADLINE_S);
  }
  waitRequest(request, sizes, "irecv");
  for (int i = 0; i < m->n; i++) {
    CHECK(sizes[i] == (int)m->size[i], "%s: receive %d reported %d bytes, not %zu", m->name, i, sizes[i], m->size[i]);
    if (m->to[i].kind == DEV) expected.recvCudaBytes += (long long)m->size[i];
    else expected.recvHostBytes += (long long)m->size[i];
  }
  /* A flush of what arrived: the data is in GPU memory already, so it completes at its first test. */
  void* flush = NULL;
  NET(net->iflush(receiver.comm, m->n, data, sizes, mh, &flush));
  expected.flushes++;
  CHECK(flush != NULL, "%s: iflush gave no request", m->name);
  int done = 0;
  NET(net->test(flush, &done, NULL));
  CHECK(done == 1, "%s: the flush was not done at once", m->name);
}

/* The receiving thread: accepts, then receives each message the main thread steps it through. */
static void* receiverMain(void* listenComm) {
  double end = now() + DEADLINE_S;
  while (receiver.comm == NULL) {
    NET(net->accept(listenComm, &receiver.comm, NULL));
    CHECK(now() < end, "accept not done after %.0f s", DEADLINE_S);
  }
  pthread_barrier_wait(&step); /* accepted */
  pthread_barrier_wait(&step); /* the main thread registered both sides */
  for (;;) {
    pthread_barrier_wait(&step); /* a message is ready, or current is NULL: done */
    if (current == NULL) return NULL;
    receiveMessage(current);
    pthread_barrier_wait(&step); /* received */
  }
}

/* ---- the legacy stream held, as a persistent kernel would hold it ------------------------------- */

#define HOLD_S 10.0
static atomic_int legacyReleased;
static atomic_int heldTooLong;

/* Bounded, so that a plugin whose copies wait for the legacy stream fails the test instead of hanging. */
static void CUDART_CB holdLegacyStream(void* arg) {
  double end = now() + HOLD_S;
  while (!atomic_load(&legacyReleased) && now() < end) usleep(100);
  if (!atomic_load(&legacyReleased)) atomic_store(&heldTooLong, 1);
}

/* ---- checking the bytes -------------------------------------------------------------------------- */

static void fillBuffers(void) {
  unsigned char* host = malloc(BUF_BYTES);
  CHECK(host != NULL, "out of memory");
  for (size_t i = 0; i < BUF_BYTES; i++) host[i] = pattern(i);
  CUDA(cudaMemcpy(sender.buf[DEV], host, BUF_BYTES, cudaMemcpyHostToDevice));
  memcpy(sender.buf[HOST], host, BUF_BYTES);
  free(host);
  CUDA(cudaMemset(receiver.buf[DEV], GUARD, BUF_BYTES));
  memset(receiver.buf[HOST], GUARD, BUF_BYTES);
}

static void checkArrived(const struct message* m, int i) {
  size_t size = m->size[i], room = m->posted[i];
  unsigned char* got = malloc(room + 1);
  CHECK(got != NULL, "out of memory");
  const char* landed = receiver.buf[m->to[i].kind] + m->to[i].offset;
  if (m->to[i].kind == DEV) CUDA(cudaMemcpy(got, landed, room, cudaMemcpyDeviceToHost));
  else memcpy(got, landed, room);
  for (size_t j = 0; j < size; j++)
    CHECK(got[j] == pattern(m->from[i].offset + j), "%s: buffer %d byte %zu is 0x%02x, sent 0x%02x", m->name, i, j,
          got[j], pattern(m->from[i].offset + j));
  for (size_t j = size; j < room; j++)
    CHECK(got[j] == GUARD, "%s: buffer %d byte %zu past the %zu sent was written", m->name, i, j, size);
  free(got);
}

static void runMessage(const struct message* m) {
  fillBuffers();
  atomic_store(&legacyReleased, 0);
  if (m->holdLegacyStream) CUDA(cudaLaunchHostFunc(0, holdLegacyStream, NULL));
  current = m;
  pthread_barrier_wait(&step);
  sendMessage(m);
  pthread_barrier_wait(&step);
  atomic_store(&legacyReleased, 1);
  CUDA(cudaDeviceSynchronize());
  CHECK(!atomic_load(&heldTooLong), "%s: the message moved only after the legacy stream was let go (%.0f s)", m->name,
        HOLD_S);
  for (int i = 0; i < m->n; i++) checkArrived(m, i);
  printf("ok   %s\n", m->name);
}

#define ONE(nm, fk, fo, tk, to, sz, room) {nm, 1, {{fk, fo}}, {{tk, to}}, {sz}, {room}, 0}
static const struct message messages[] = {
    ONE("device -> device, 0 bytes", DEV, 0, DEV, 0, 0, 64),
    ONE("device -> device, 1 byte at odd offsets", DEV, 5, DEV, 3, 1, 1),
    ONE("device -> device, 4095 bytes", DEV, 4096, DEV, 100, 4095, 8192),
    ONE("device -> device, 1 MiB + 3", DEV, 17, DEV, 0, (1u << 20) + 3, 2u << 20),
    ONE("device -> device, the whole buffer", DEV, 0, DEV, 0, BUF_BYTES, BUF_BYTES),
    ONE("host -> device, 64 KiB", HOST, 7, DEV, 9, 65536, 65536 + 32),
    ONE("device -> host, 64 KiB", DEV, 9, HOST, 7, 65536, 65536 + 32),
    ONE("host -> host, 1000 bytes", HOST, 0, HOST, 1, 1000, 1000),
    {"grouped receive: device and host buffers", 2, {{DEV, 256}, {HOST, 512}}, {{DEV, 1024}, {HOST, 2048}},
     {300000, 5000}, {300000, 6000}, 0},
    {"device -> device while the legacy stream is held", 1, {{DEV, 0}}, {{DEV, 0}}, {2u << 20}, {2u << 20}, 1},
};

/* ---- what must be refused ------------------------------------------------------------------------ */

static void expectRefused(ncclResult_t res, void* out, const char* what, int* refusals) {
  CHECK(res != ncclSuccess, "%s was accepted", what);
  CHECK(out == NULL, "%s: refused, but an object came back", what);
  (*refusals)++;
  printf("ok   refused: %s (error %d)\n", what, (int)res);
}

static void checkRegionRefusals(int* refusals) {
  void* out = NULL;
  char* dev = sender.buf[DEV];
  expectRefused(net->isend(sender.comm, dev + BUF_BYTES - 10, 20, 0, sender.mh[DEV], NULL, &out), out,
                "isend past the end of its device region", refusals);
  expectRefused(net->isend(sender.comm, sender.buf[HOST], 8, 0, sender.mh[DEV], NULL, &out), out,
                "isend of a host buffer with a device handle", refusals);
  expectRefused(net->isend(sender.comm, sender.buf[HOST], BUF_BYTES + 1, 0, sender.mh[HOST], NULL, &out), out,
                "isend one byte longer than its host region", refusals);
  expectRefused(net->isend(sender.comm, receiver.buf[DEV], 8, 0, receiver.mh[DEV], NULL, &out), out,
                "isend with a handle of another comm", refusals);
  void* data = receiver.buf[DEV] + BUF_BYTES;
  size_t posted = 1;
  int tag = 0, size = 2;
  expectRefused(net->irecv(receiver.comm, 1, &data, &posted, &tag, &receiver.mh[DEV], NULL, &out), out,
                "irecv just past its device region", refusals);
  data = receiver.buf[DEV] + BUF_BYTES - 1;
  expectRefused(net->iflush(receiver.comm, 1, &data, &size, &receiver.mh[DEV], &out), out,
                "iflush running past its device region", refusals);
  expected.flushes++;
  expected.regionErrors = *refusals;
}

static void checkRegistrationRefusals(int* refusals) {
  int before = *refusals;
  void* out = NULL;
  char* pinned = NULL;
  CUDA(cudaMallocHost((void**)&pinned, 4096));
  expectRefused(net->regMr(receiver.comm, receiver.buf[HOST], 4096, NCCL_PTR_CUDA, &out), out,
                "a CUDA registration of pageable host memory", refusals);
  expectRefused(net->regMr(receiver.comm, pinned, 4096, NCCL_PTR_CUDA, &out), out,
                "a CUDA registration of pinned host memory", refusals);
  expectRefused(net->regMr(receiver.comm, receiver.buf[DEV], BUF_BYTES + (4u << 20), NCCL_PTR_CUDA, &out), out,
                "a CUDA registration past the end of its allocation", refusals);
  expectRefused(net->regMr(receiver.comm, receiver.buf[DEV], 4096, 0x40, &out), out,
                "a registration of an unknown memory type", refusals);
  expectRefused(net->regMrDmaBuf(receiver.comm, receiver.buf[DEV], 4096, NCCL_PTR_CUDA, 0, 0, &out), out,
                "a dma-buf registration", refusals);
  CUDA(cudaFreeHost(pinned));
  expected.regRefused = *refusals - before;
}

/* ---- setup, the run, the counters ---------------------------------------------------------------- */

static void* connectBoth(void* ctx, pthread_t* thread) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  void* listenComm = NULL;
  NET(net->listen(ctx, 0, handle, &listenComm));
  CHECK(pthread_create(thread, NULL, receiverMain, listenComm) == 0, "pthread_create");
  double end = now() + DEADLINE_S;
  while (sender.comm == NULL) {
    NET(net->connect(ctx, 0, handle, &sender.comm, NULL));
    CHECK(now() < end, "connect not done after %.0f s", DEADLINE_S);
  }
  pthread_barrier_wait(&step); /* accepted */
  return listenComm;
}

static void checkProperties(void) {
  int ndev = 0;
  NET(net->devices(&ndev));
  CHECK(ndev >= 1, "no device");
  ncclNetProperties_v12_t props;
  NET(net->getProperties(0, &props));
  CHECK(props.ptrSupport & NCCL_PTR_CUDA, "ptrSupport 0x%x lacks NCCL_PTR_CUDA", props.ptrSupport);
  CHECK(!(props.ptrSupport & NCCL_PTR_DMABUF), "ptrSupport 0x%x has NCCL_PTR_DMABUF", props.ptrSupport);
  CHECK(strncmp(props.name, "gdrtest-", 8) == 0, "device name %s", props.name);
  printf("device 0: %s, ptrSupport 0x%x, maxRecvs %d\n", props.name, props.ptrSupport, props.maxRecvs);
  CHECK(props.maxRecvs >= 2, "maxRecvs %d: no grouped receive", props.maxRecvs);
}

static void checkCounters(testNetGdrStatsFn statsOf) {
  struct testNetGdrStats s = statsOf();
  printf("counters: reg_host=%lld reg_cuda=%lld refused=%lld send_host=%lld send_cuda=%lld recv_host=%lld "
         "recv_cuda=%lld flushes=%lld region_errors=%lld\n", s.regHost, s.regCuda, s.regRefused, s.sendHostBytes,
         s.sendCudaBytes, s.recvHostBytes, s.recvCudaBytes, s.flushes, s.regionErrors);
#define SAME(f) CHECK(s.f == expected.f, "counter " #f " is %lld, expected %lld", s.f, expected.f)
  SAME(regHost);
  SAME(regCuda);
  SAME(regRefused);
  SAME(sendHostBytes);
  SAME(sendCudaBytes);
  SAME(recvHostBytes);
  SAME(recvCudaBytes);
  SAME(flushes);
  SAME(regionErrors);
#undef SAME
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s libnccl-net-gdrtest.so\n", argv[0]);
    return 2;
  }
  int ndev = 0;
  cudaError_t e = cudaGetDeviceCount(&ndev);
  if (e != cudaSuccess || ndev == 0) {
    printf("SKIP: no CUDA device (%s)\n", e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    return SKIP;
  }
  CUDA(cudaSetDevice(0));
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL, "dlopen %s: %s", argv[1], dlerror());
  net = dlsym(lib, "ncclNetPlugin_v12");
  testNetGdrStatsFn statsOf = (testNetGdrStatsFn)dlsym(lib, "testNetGdrStats");
  CHECK(net != NULL && statsOf != NULL, "%s lacks ncclNetPlugin_v12 or testNetGdrStats", argv[1]);

  void* ctx = NULL;
  NET(net->init(&ctx, 0x6764727465737431ull, NULL, logger, NULL));
  checkProperties();
  pthread_barrier_init(&step, NULL, 2);
  pthread_t thread;
  void* listenComm = connectBoth(ctx, &thread);
  registerSide(&sender);
  registerSide(&receiver);
  expected.regCuda = 2;
  expected.regHost = 2;
  pthread_barrier_wait(&step); /* registered */

  for (size_t i = 0; i < sizeof(messages) / sizeof(messages[0]); i++) runMessage(&messages[i]);
  current = NULL;
  pthread_barrier_wait(&step);
  CHECK(pthread_join(thread, NULL) == 0, "pthread_join");

  int refusals = 0;
  checkRegionRefusals(&refusals);
  checkRegistrationRefusals(&refusals);
  CHECK(atomic_load(&warnings) >= refusals, "%d refusals but %d WARN lines", refusals, atomic_load(&warnings));
  checkCounters(statsOf);

  for (int k = DEV; k <= HOST; k++) {
    NET(net->deregMr(sender.comm, sender.mh[k]));
    NET(net->deregMr(receiver.comm, receiver.mh[k]));
  }
  NET(net->closeSend(sender.comm));
  NET(net->closeRecv(receiver.comm));
  NET(net->closeListen(listenComm));
  NET(net->finalize(ctx));
  CUDA(cudaFree(sender.buf[DEV]));
  CUDA(cudaFree(receiver.buf[DEV]));
  printf("PASS: %zu messages, %d refusals\n", sizeof(messages) / sizeof(messages[0]), refusals);
  return 0;
}
