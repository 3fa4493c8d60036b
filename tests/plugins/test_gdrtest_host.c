/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_gdrtest_host.c: the gdrtest NIC (testnet_gdr.c) without a GPU: what it must refuse, each with
 * an error code and a WARN through the logger, and its counters and stats line. The GPU side is
 * tests/gpu/test_gdr_testnic.c.
 *
 *   test_gdrtest_host PLUGIN.so STATS_FILE
 *
 * One process, one thread: a loopback connection over the inner plugin, host buffers registered on
 * each comm, one message and its flush; then buffers outside their handle's region (isend, irecv,
 * iflush), a handle of the other comm, a foreign handle and request, a CUDA registration of host
 * memory (refused here whether or not a driver loads: with none there is nothing to mirror with),
 * an unknown memory type and dma-buf. The counters must match, and finalize must append their line
 * to STATS_FILE.
 */
#include <dlfcn.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "plugin/net.h"
#include "gdrtest_check.h"
#include "testnet_gdr_stats.h"

#define BUF_BYTES 65536
#define DEADLINE_S 30


static const ncclNet_v12_t* net;
static int warnings;

static void logger(ncclDebugLogLevel level, unsigned long flags, const char* file, int line, const char* fmt, ...) {
  if (level != NCCL_LOG_WARN) return;
  warnings++;
  va_list ap;
  va_start(ap, fmt);
  fprintf(stderr, "WARN: ");
  vfprintf(stderr, fmt, ap);
  fprintf(stderr, "\n");
  va_end(ap);
}

static void waitDone(void* request, int* sizes) {
  time_t end = time(NULL) + DEADLINE_S;
  int done = 0;
  while (!done) {
    NET(net->test(request, &done, sizes));
    CHECK(time(NULL) < end, "request not done after %d s", DEADLINE_S);
  }
}

struct pair {
  void *send, *recv, *listen;
  char *sendBuf, *recvBuf;
  void *sendMh, *recvMh;
};

static void connectPair(void* ctx, struct pair* p) {
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  NET(net->listen(ctx, 0, handle, &p->listen));
  time_t end = time(NULL) + DEADLINE_S;
  while (p->send == NULL || p->recv == NULL) {
    if (p->send == NULL) NET(net->connect(ctx, 0, handle, &p->send, NULL));
    if (p->recv == NULL) NET(net->accept(p->listen, &p->recv, NULL));
    CHECK(time(NULL) < end, "connection not up after %d s", DEADLINE_S);
  }
  p->sendBuf = malloc(BUF_BYTES);
  p->recvBuf = calloc(1, BUF_BYTES);
  CHECK(p->sendBuf != NULL && p->recvBuf != NULL, "out of memory");
  for (int i = 0; i < BUF_BYTES; i++) p->sendBuf[i] = (char)(i * 7 + 1);
  NET(net->regMr(p->send, p->sendBuf, BUF_BYTES, NCCL_PTR_HOST, &p->sendMh));
  NET(net->regMr(p->recv, p->recvBuf, BUF_BYTES, NCCL_PTR_HOST, &p->recvMh));
}

/* 1000 bytes from offset 10 into offset 20, then the flush of what arrived. */
static void oneMessage(struct pair* p) {
  void *sreq = NULL, *rreq = NULL;
  void* data = p->recvBuf + 20;
  size_t posted = 2000;
  int tag = 0, got = -1;
  while (sreq == NULL) NET(net->isend(p->send, p->sendBuf + 10, 1000, 0, p->sendMh, NULL, &sreq));
  while (rreq == NULL) NET(net->irecv(p->recv, 1, &data, &posted, &tag, &p->recvMh, NULL, &rreq));
  waitDone(sreq, NULL);
  waitDone(rreq, &got);
  CHECK(got == 1000, "received %d bytes, not 1000", got);
  CHECK(memcmp(p->recvBuf + 20, p->sendBuf + 10, 1000) == 0, "the bytes differ");
  void* flush = NULL;
  NET(net->iflush(p->recv, 1, &data, &got, &p->recvMh, &flush));
  int done = 0;
  CHECK(flush != NULL, "iflush gave no request");
  NET(net->test(flush, &done, NULL));
  CHECK(done == 1, "the flush was not done at once");
}

static int refused(ncclResult_t res, void* out, const char* what) {
  CHECK(res != ncclSuccess, "%s was accepted", what);
  CHECK(out == NULL, "%s: refused, but an object came back", what);
  printf("ok   refused: %s (error %d)\n", what, (int)res);
  return 1;
}

/* Buffers outside their handle's region, or with a handle of the other comm: region errors. */
static int regionRefusals(struct pair* p) {
  void* out = NULL;
  int n = 0;
  n += refused(net->isend(p->send, p->sendBuf + BUF_BYTES - 4, 8, 0, p->sendMh, NULL, &out), out,
               "isend running past its region");
  n += refused(net->isend(p->send, p->sendBuf, BUF_BYTES + 1, 0, p->sendMh, NULL, &out), out,
               "isend one byte longer than its region");
  n += refused(net->isend(p->send, p->recvBuf, 8, 0, p->recvMh, NULL, &out), out, "isend with a handle of another comm");
  void* data = p->recvBuf + BUF_BYTES;
  size_t posted = 1;
  int tag = 0, size = 2;
  n += refused(net->irecv(p->recv, 1, &data, &posted, &tag, &p->recvMh, NULL, &out), out, "irecv just past its region");
  data = p->recvBuf + BUF_BYTES - 1;
  n += refused(net->iflush(p->recv, 1, &data, &size, &p->recvMh, &out), out, "iflush running past its region");
  int fake[16] = {0};
  n += refused(net->isend(p->send, p->sendBuf, 8, 0, fake, NULL, &out), out, "isend with a foreign handle");
  return n;
}

/* Registrations that must fail, and objects that are not the plugin's. */
static int otherRefusals(struct pair* p) {
  void* out = NULL;
  int n = 0;
  n += refused(net->regMr(p->recv, p->recvBuf, 4096, NCCL_PTR_CUDA, &out), out, "a CUDA registration of host memory");
  n += refused(net->regMr(p->recv, p->recvBuf, 4096, 0x40, &out), out, "a registration of an unknown memory type");
  n += refused(net->regMrDmaBuf(p->recv, p->recvBuf, 4096, NCCL_PTR_CUDA, 0, 0, &out), out, "a dma-buf registration");
  int fake[16] = {0}, done = 0;
  CHECK(net->test(fake, &done, NULL) != ncclSuccess, "test of a foreign request succeeded");
  CHECK(net->deregMr(p->recv, fake) != ncclSuccess, "deregMr of a foreign handle succeeded");
  printf("ok   refused: test of a foreign request, deregMr of a foreign handle\n");
  return n + 2;
}

static void checkCounters(testNetGdrStatsFn statsOf, int regionErrors) {
  struct testNetGdrStats s = statsOf();
  CHECK(s.regHost == 2 && s.regCuda == 0, "registrations: host %lld, CUDA %lld", s.regHost, s.regCuda);
  CHECK(s.regRefused == 3, "refused registrations: %lld, not 3", s.regRefused);
  CHECK(s.sendHostBytes == 1000 && s.recvHostBytes == 1000, "host bytes sent %lld, received %lld", s.sendHostBytes,
        s.recvHostBytes);
  CHECK(s.sendCudaBytes == 0 && s.recvCudaBytes == 0, "GPU bytes on a host-only run");
  CHECK(s.flushes == 2, "flushes: %lld, not 2", s.flushes);
  CHECK(s.regionErrors == regionErrors, "region errors: %lld, not %d", s.regionErrors, regionErrors);
}

static void checkStatsLine(const char* path) {
  FILE* f = fopen(path, "r");
  CHECK(f != NULL, "finalize wrote no %s", path);
  char line[512], want[64];
  CHECK(fgets(line, sizeof(line), f) != NULL, "%s is empty", path);
  fclose(f);
  snprintf(want, sizeof(want), "pid=%ld reg_host=2 reg_cuda=0 ", (long)getpid());
  CHECK(strncmp(line, want, strlen(want)) == 0, "stats line: %s", line);
  CHECK(strstr(line, " send_host_bytes=1000 send_cuda_bytes=0 recv_host_bytes=1000 recv_cuda_bytes=0 flushes=2 "
                     "region_errors=6\n") != NULL, "stats line: %s", line);
  printf("ok   stats line: %s", line);
}

int main(int argc, char** argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: %s libnccl-net-gdrtest.so STATS_FILE\n", argv[0]);
    return 2;
  }
  void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  CHECK(lib != NULL, "dlopen %s: %s", argv[1], dlerror());
  net = dlsym(lib, "ncclNetPlugin_v12");
  testNetGdrStatsFn statsOf = (testNetGdrStatsFn)dlsym(lib, "testNetGdrStats");
  CHECK(net != NULL && statsOf != NULL, "%s lacks ncclNetPlugin_v12 or testNetGdrStats", argv[1]);
  int ndev = 0;
  CHECK(net->devices(&ndev) != ncclSuccess, "devices() before init succeeded");

  unlink(argv[2]);
  setenv("TESTNET_GDR_STATS", argv[2], 1);
  void* ctx = NULL;
  NET(net->init(&ctx, 1, NULL, logger, NULL));
  struct pair p = {0};
  connectPair(ctx, &p);
  oneMessage(&p);
  int regionErrors = regionRefusals(&p);
  int refusals = regionErrors + otherRefusals(&p);
  CHECK(warnings >= refusals, "%d refusals, %d WARN lines", refusals, warnings);
  checkCounters(statsOf, regionErrors);

  NET(net->deregMr(p.send, p.sendMh));
  NET(net->deregMr(p.recv, p.recvMh));
  NET(net->closeSend(p.send));
  NET(net->closeRecv(p.recv));
  NET(net->closeListen(p.listen));
  NET(net->finalize(ctx));
  checkStatsLine(argv[2]);
  printf("PASS: %d refusals\n", refusals);
  return 0;
}
