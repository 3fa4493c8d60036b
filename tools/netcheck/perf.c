/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * perf.c: chorus-netcheck's bandwidth and latency table.
 *
 * Bandwidth: rank 0 streams to rank 1 over 1 comm and over --comms comms at once, --depth requests
 * in flight per comm, for a few message sizes (512 KiB is NCCL's usual net step). The clock runs on
 * rank 0 from the first isend until rank 1 says (side channel) that its last receive completed.
 * Latency: 8-byte ping-pong over one comm each way, half the round trip. Every cell is measured
 * --perf-reps times and the best counts (on a shared host the others are noise). With --baseline the same
 * cells are measured over raw TCP (tools/bench/tcp_stream.c) between the same two processes, right
 * before the plugin's, so both run on the same link under the same load.
 * Receives check the reported size; payloads are not checked here (traffic.c does that).
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netcheck.h"
#include "tcp_stream.h"

static const size_t perfSizes[] = {64 << 10, 512 << 10, 2 << 20};
#define NC_PERF_NSIZES (sizeof(perfSizes) / sizeof(perfSizes[0]))
#define NC_PERF_MAXSIZE (2 << 20)
#define NC_LAT_ITERS 1000
#define NC_PERF_REPS ncOpt.perfReps /* each cell is measured this many times; the best counts */

typedef struct {
  void* comm;
  void* listen;
  char handle[NCCL_NET_HANDLE_MAXSIZE];
  char* buf;
  void* mh;
  void* req[NC_MAX_DEPTH];
  int up;
} ncPipe;

typedef struct {
  ncRank* r;
  ncPipe send[NC_MAX_COMMS], recv[NC_MAX_COMMS];
  int depth;
  int failed;
} ncPerfCtx;

static int setup(ncPerfCtx* p) {
  ncRank* r = p->r;
  int K = ncOpt.comms;
  void* listens[NC_MAX_COMMS];
  char mine[NC_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE], theirs[NC_MAX_COMMS][NCCL_NET_HANDLE_MAXSIZE];
  if (ncExchangeHandles(r, K, listens, mine, theirs) != 0) return -1;
  for (int k = 0; k < K; k++) {
    p->recv[k].listen = listens[k];
    memcpy(p->send[k].handle, theirs[k], NCCL_NET_HANDLE_MAXSIZE);
  }
  double start = ncNow();
  for (int left = 2 * K; left > 0;) {
    for (int k = 0; k < K; k++) {
      ncclNetDeviceHandle_v12_t* dh = NULL;
      if (!p->send[k].up) {
        if (chrNetConnect(r->net, ncOpt.dev, p->send[k].handle, &p->send[k].comm, &dh) != ncclSuccess) goto fail;
        if (p->send[k].comm) p->send[k].up = 1, left--;
      }
      if (!p->recv[k].up) {
        if (chrNetAccept(r->net, p->recv[k].listen, &p->recv[k].comm, &dh) != ncclSuccess) goto fail;
        if (p->recv[k].comm) p->recv[k].up = 1, left--;
      }
    }
    if (ncNow() - start > ncOpt.timeoutSec) {
      ncFail(NC_R_CONN_COMPLETE, "rank %d: the connections of the performance phase did not complete in %.0f s", r->rank,
             ncOpt.timeoutSec);
      return -1;
    }
    sched_yield();
  }
  /* Buffers: rank 0 sends on every comm and receives pongs on comm 0; rank 1 the other way round. */
  for (int k = 0; k < K; k++) {
    ncPipe* pipes[2] = {&p->send[k], &p->recv[k]};
    for (int j = 0; j < 2; j++) {
      int isSend = j == 0;
      int used = (r->rank == 0) == isSend || k == 0;
      if (!used) continue;
      size_t len = (size_t)p->depth * NC_PERF_MAXSIZE;
      if (posix_memalign((void**)&pipes[j]->buf, 4096, len) != 0) return -1;
      memset(pipes[j]->buf, 0x3c, len);
      if (chrNetRegMr(r->net, pipes[j]->comm, pipes[j]->buf, len, NCCL_PTR_HOST, &pipes[j]->mh) != ncclSuccess) goto fail;
    }
  }
  return 0;
fail:
  ncFail(NC_R_CALL_RC, "rank %d, performance phase: %s", r->rank, ncLastError());
  return -1;
}

static void teardown(ncPerfCtx* p) {
  for (int k = 0; k < ncOpt.comms; k++) {
    ncPipe* pipes[2] = {&p->send[k], &p->recv[k]};
    for (int j = 0; j < 2; j++) {
      ncPipe* q = pipes[j];
      if (q->mh) chrNetDeregMr(p->r->net, q->comm, q->mh);
      if (q->comm) {
        ncclResult_t res = j == 0 ? chrNetCloseSend(p->r->net, q->comm) : chrNetCloseRecv(p->r->net, q->comm);
        ncCheck(NC_R_CLOSE, res == ncclSuccess, "close in the performance phase returned %d: %s", (int)res, ncLastError());
      }
      if (q->listen) chrNetCloseListen(p->r->net, q->listen);
      free(q->buf);
      memset(q, 0, sizeof(*q));
    }
  }
}

/* Post one isend/irecv, retrying a NULL request. Returns the request or NULL on failure. */
static void* post(ncPerfCtx* p, ncPipe* q, int isSend, char* data, size_t size) {
  double since = ncNow();
  for (;;) {
    void* req = NULL;
    ncclResult_t res;
    if (isSend) {
      res = chrNetIsend(p->r->net, q->comm, data, size, p->r->rank, q->mh, NULL, &req);
    } else {
      int tag = 1 - p->r->rank;
      res = chrNetIrecv(p->r->net, q->comm, 1, (void**)&data, &size, &tag, &q->mh, NULL, &req);
    }
    if (res != ncclSuccess) {
      ncFail(NC_R_CALL_RC, "rank %d, performance phase: %s failed: %s", p->r->rank, isSend ? "isend" : "irecv", ncLastError());
      return NULL;
    }
    if (req != NULL) return req;
    if (ncNow() - since > ncOpt.timeoutSec) {
      ncFail(NC_R_PROGRESS, "rank %d, performance phase: %s returned NULL for %.0f s", p->r->rank,
             isSend ? "isend" : "irecv", ncOpt.timeoutSec);
      return NULL;
    }
    sched_yield();
  }
}

/* Test once; -1 on failure, else done. */
static int testOnce(ncPerfCtx* p, void* req, int isSend, size_t expect) {
  int done = 0, size = -1;
  if (chrNetTest(p->r->net, req, &done, &size) != ncclSuccess) {
    ncFail(NC_R_CALL_RC, "rank %d, performance phase: test failed: %s", p->r->rank, ncLastError());
    return -1;
  }
  if (done && !isSend) ncCheck(NC_R_TEST_SIZE, size == (int)expect, "performance phase: test() reported %d bytes, %zu were sent", size, expect);
  return done;
}

/* One bandwidth cell: nc comms, nMsgs each of `size` bytes. Rank 0 returns seconds, rank 1 0; -1 on failure. */
static double bwCell(ncPerfCtx* p, size_t size, int nc, int nMsgs) {
  int isSend = p->r->rank == 0;
  if (ncOobBarrier(p->r->oob, 60) != 0) return -1;
  double t0 = ncNow(), lastProgress = t0;
  int posted[NC_MAX_COMMS] = {0}, done[NC_MAX_COMMS] = {0}, ok = 1, left = nc;
  while (left > 0 && ok) {
    int progress = 0;
    for (int k = 0; k < nc && ok; k++) {
      ncPipe* q = isSend ? &p->send[k] : &p->recv[k];
      if (done[k] == nMsgs) continue;
      while (posted[k] < nMsgs && posted[k] - done[k] < p->depth) {
        int slot = posted[k] % p->depth;
        q->req[slot] = post(p, q, isSend, q->buf + (size_t)slot * NC_PERF_MAXSIZE, size);
        if (q->req[slot] == NULL) {
          ok = 0;
          break;
        }
        posted[k]++;
        progress = 1;
      }
      while (ok && done[k] < posted[k]) { /* completions in order: the oldest first */
        int d = testOnce(p, q->req[done[k] % p->depth], isSend, size);
        if (d < 0) ok = 0;
        if (d != 1) break;
        done[k]++;
        progress = 1;
        if (done[k] == nMsgs) left--;
      }
    }
    double now = ncNow();
    if (progress) lastProgress = now;
    else if (now - lastProgress > ncOpt.timeoutSec) {
      ncFail(NC_R_PROGRESS, "rank %d, performance phase: no request completed for %.0f s (%zu-byte messages, %d comms)",
             p->r->rank, ncOpt.timeoutSec, size, nc);
      ok = 0;
    } else {
      sched_yield();
    }
  }
  /* Rank 1 answers with its status once everything arrived; rank 0 stops the clock on it. */
  char status = (char)ok, peer = 0;
  if (isSend) {
    if (ncOobRecv(p->r->oob, &peer, 1, ncOpt.timeoutSec + 60) != 0) peer = 0;
  } else {
    ncOobSend(p->r->oob, &status, 1);
  }
  double t1 = ncNow();
  if (isSend) ncOobSend(p->r->oob, &status, 1);
  else if (ncOobRecv(p->r->oob, &peer, 1, ncOpt.timeoutSec + 60) != 0) peer = 0;
  if (!ok || !peer) return -1;
  return isSend ? t1 - t0 : 0;
}

static int waitReq(ncPerfCtx* p, void* req, int isSend, size_t expect) {
  double since = ncNow();
  for (;;) {
    int d = testOnce(p, req, isSend, expect);
    if (d < 0) return -1;
    if (d == 1) return 0;
    sched_yield(); /* the peer may need this core (a spinning rank starves it on a small host) */
    if (ncNow() - since > ncOpt.timeoutSec) {
      ncFail(NC_R_PROGRESS, "rank %d, latency test: a request did not complete in %.0f s", p->r->rank, ncOpt.timeoutSec);
      return -1;
    }
  }
}

/* 8-byte ping-pong: rank 0 pings on its send comm 0, rank 1 answers on its send comm 0. */
static double latency(ncPerfCtx* p) {
  const size_t size = 8;
  const int warm = 50;
  int client = p->r->rank == 0;
  ncPipe* out = &p->send[0];
  ncPipe* in = &p->recv[0];
  if (ncOobBarrier(p->r->oob, 60) != 0) return -1;
  void* rreq = post(p, in, 0, in->buf, size);
  if (rreq == NULL) return -1;
  double t0 = ncNow();
  for (int i = 0; i < warm + NC_LAT_ITERS; i++) {
    if (i == warm) t0 = ncNow();
    if (client) {
      void* sreq = post(p, out, 1, out->buf, size);
      if (sreq == NULL || waitReq(p, sreq, 1, size) != 0 || waitReq(p, rreq, 0, size) != 0) return -1;
      if (i + 1 < warm + NC_LAT_ITERS && (rreq = post(p, in, 0, in->buf, size)) == NULL) return -1;
    } else {
      if (waitReq(p, rreq, 0, size) != 0) return -1;
      if (i + 1 < warm + NC_LAT_ITERS && (rreq = post(p, in, 0, in->buf, size)) == NULL) return -1;
      void* sreq = post(p, out, 1, out->buf, size);
      if (sreq == NULL || waitReq(p, sreq, 1, size) != 0) return -1;
    }
  }
  return client ? (ncNow() - t0) / NC_LAT_ITERS / 2 * 1e6 : 0;
}

static int msgsFor(size_t size, int nc, int depth) {
  size_t n = ncOpt.perfBytes / size / (size_t)nc;
  if (n < (size_t)depth * 2) n = (size_t)depth * 2;
  return (int)n;
}

/* Raw TCP cells over one stream between the same two processes. Fills gbps[] and *latUs (rank 0). */
static int rawTcp(ncPerfCtx* p, double* gbps, double* latUs) {
  int fd = -1, lfd = -1, port = 0;
  int32_t port32 = 0;
  if (p->r->rank == 1) {
    lfd = tcpsListen(ncOpt.tcpAddr ? ncOpt.tcpAddr : "127.0.0.1", &port);
    port32 = lfd < 0 ? -1 : port;
    if (ncOobSend(p->r->oob, &port32, sizeof(port32)) != 0 || lfd < 0) goto fail;
    fd = tcpsAccept(lfd, 30);
  } else {
    if (ncOobRecv(p->r->oob, &port32, sizeof(port32), 60) != 0 || port32 <= 0) goto fail;
    fd = tcpsConnect(p->r->peerIp, port32, 30);
  }
  if (fd < 0) goto fail;
  for (size_t i = 0; i < NC_PERF_NSIZES; i++) {
    size_t total = (size_t)msgsFor(perfSizes[i], 1, p->depth) * perfSizes[i];
    for (int rep = 0; rep < NC_PERF_REPS; rep++) {
      double sec = tcpsStream(&fd, 1, p->r->rank == 0, perfSizes[i], total);
      if (sec < 0) goto fail;
      if (p->r->rank == 0 && (double)total / sec / 1e9 > gbps[i]) gbps[i] = (double)total / sec / 1e9;
    }
  }
  *latUs = -1;
  for (int rep = 0; rep < NC_PERF_REPS; rep++) {
    double us = tcpsPingPong(fd, p->r->rank == 0, 8, NC_LAT_ITERS);
    if (us < 0) goto fail;
    if (*latUs < 0 || us < *latUs) *latUs = us;
  }
  close(fd);
  if (lfd >= 0) close(lfd);
  return *latUs < 0 ? -1 : 0;
fail:
  if (fd >= 0) close(fd);
  if (lfd >= 0) close(lfd);
  return -1;
}

void ncPerf(ncRank* r, FILE* out) {
  ncPerfCtx* p = calloc(1, sizeof(*p));
  if (p == NULL) return;
  p->r = r;
  p->depth = ncOpt.depth > NC_MAX_DEPTH ? NC_MAX_DEPTH : ncOpt.depth;
  int K = ncOpt.comms;
  double tcp[NC_PERF_NSIZES] = {0}, cell[NC_PERF_NSIZES][2] = {{0}}, tcpLat = -1, lat = -1;
  int ok = setup(p) == 0;
  int32_t mine = ok, theirs = 0; /* go on only if both sides are connected */
  if (ncOobSend(r->oob, &mine, sizeof(mine)) != 0 || ncOobRecv(r->oob, &theirs, sizeof(theirs), ncOpt.timeoutSec + 60) != 0)
    theirs = 0;
  ok = ok && theirs;
  if (ncOpt.baseline && ok && rawTcp(p, tcp, &tcpLat) != 0) {
    if (out) fprintf(out, "raw TCP baseline failed (see above); no baseline column\n");
    memset(tcp, 0, sizeof(tcp));
  }
  for (size_t i = 0; ok && i < NC_PERF_NSIZES; i++) {
    int ncs[2] = {1, K};
    for (int j = 0; j < 2 && ok; j++) {
      int n = msgsFor(perfSizes[i], ncs[j], p->depth);
      for (int rep = 0; rep < NC_PERF_REPS && ok; rep++) {
        double sec = bwCell(p, perfSizes[i], ncs[j], n);
        if (sec < 0) ok = 0;
        else if (r->rank == 0 && (double)perfSizes[i] * n * ncs[j] / sec / 1e9 > cell[i][j])
          cell[i][j] = (double)perfSizes[i] * n * ncs[j] / sec / 1e9;
      }
    }
  }
  for (int rep = 0; rep < NC_PERF_REPS && ok; rep++) {
    double us = latency(p);
    if (us < 0) ok = 0;
    else if (lat < 0 || us < lat) lat = us;
  }
  if (out != NULL) {
    fprintf(out, "bandwidth, rank 0 -> rank 1, GB/s (1e9 B/s), %d requests in flight per comm, %zu MiB per cell, best of %d:\n",
            p->depth, ncOpt.perfBytes >> 20, NC_PERF_REPS);
    char hdr[32];
    snprintf(hdr, sizeof(hdr), "%d comms", K);
    fprintf(out, "  %-10s %18s %10s %10s\n", "size", ncOpt.baseline ? "raw TCP 1 stream" : "", "1 comm", hdr);
    for (size_t i = 0; i < NC_PERF_NSIZES; i++) {
      char sz[32], t[32];
      snprintf(sz, sizeof(sz), "%zu KiB", perfSizes[i] >> 10);
      if (ncOpt.baseline && tcp[i] > 0) snprintf(t, sizeof(t), "%.2f", tcp[i]);
      else snprintf(t, sizeof(t), "%s", ncOpt.baseline ? "-" : "");
      fprintf(out, "  %-10s %18s %10.2f %10.2f\n", sz, t, cell[i][0], cell[i][1]);
    }
    if (lat >= 0) fprintf(out, "latency, 8-byte ping-pong, half round trip, best of %d x %d: plugin %.1f us", NC_PERF_REPS, NC_LAT_ITERS, lat);
    else fprintf(out, "latency: not measured (the performance phase failed)");
    if (ncOpt.baseline && tcpLat > 0) fprintf(out, ", raw TCP %.1f us", tcpLat);
    fprintf(out, "\n");
    fflush(out);
  }
  teardown(p);
  free(p);
}
