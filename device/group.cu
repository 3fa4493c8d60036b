/*
 * group.cu: create and destroy the device state of N ranks of one process on one GPU (launch.h).
 *
 * Memory. One device allocation holds every connection: the ring connections of each channel
 * (rank -> its ring successor) and, per point-to-point index, one connection for every ordered pair
 * of ranks (a rank to itself included). A connection is a 256-byte control block (tail and head on
 * 128-byte lines of their own, so the sender's and the receiver's polling do not share a line), the
 * SIMPLE slots, the LL slots. It is all zero at the start: positions, head and tail 0, and LL flags 0,
 * which no step's flag (step + 1) equals. Each rank gets a small device block with its chrDevComm,
 * channel table, point-to-point ends and ring order, and a host-mapped slot area for large plans.
 * The abort and error words of all ranks share one host-mapped page, 64 bytes per rank.
 */
#include <stdlib.h>
#include <string.h>
#include "device/dev_error.h"
#include "device/dev_group.h"

#define CHR_DEV_CTRL_BYTES 256
#define CHR_DEV_ALIGN(x) (((x) + 255) & ~(size_t)255)

static size_t connBytes(const struct chrDevGroupConfig* cfg) {
  return CHR_DEV_CTRL_BYTES + CHR_DEV_ALIGN(CHR_DEV_STEPS * cfg->stepBytes) +
         CHR_DEV_ALIGN((size_t)CHR_DEV_STEPS * (size_t)cfg->llLines * sizeof(union chrDevLLLine));
}

static ncclResult_t checkConfig(const struct chrDevGroupConfig* cfg) {
  if (cfg->nRanks < 1 || cfg->nRanks > 1024) return chrDevFail(ncclInvalidArgument, "group of %d ranks (1..1024)", cfg->nRanks);
  if (cfg->nChannels < 1 || cfg->nChannels > CHR_DEV_MAX_CHANNELS)
    return chrDevFail(ncclInvalidArgument, "%d channels (1..%d)", cfg->nChannels, CHR_DEV_MAX_CHANNELS);
  if (cfg->p2pConns < 0 || cfg->p2pConns > CHR_DEV_P2P_CONNS)
    return chrDevFail(ncclInvalidArgument, "%d point-to-point connection indices (0..%d)", cfg->p2pConns, CHR_DEV_P2P_CONNS);
  if (cfg->stepBytes == 0 || cfg->stepBytes % 16 || cfg->stepBytes > ((size_t)1 << 30))
    return chrDevFail(ncclInvalidArgument, "SIMPLE slot of %zu bytes (a multiple of 16, at most 1 GiB)", cfg->stepBytes);
  if (cfg->llLines < 0 || cfg->llLines > (1 << 20))
    return chrDevFail(ncclInvalidArgument, "LL slot of %d lines (0..%d)", cfg->llLines, 1 << 20);
  if (cfg->ringOrder == NULL) return chrDevFail(ncclInvalidArgument, "no ring order");
  char* seen = (char*)calloc((size_t)cfg->nRanks, 1);
  if (seen == NULL) return chrDevFail(ncclSystemError, "out of memory");
  for (int i = 0; i < cfg->nRanks; i++) {
    int r = cfg->ringOrder[i];
    if (r < 0 || r >= cfg->nRanks || seen[r]) {
      free(seen);
      return chrDevFail(ncclInvalidArgument, "ring order is not a permutation of 0..%d (position %d holds %d)",
                        cfg->nRanks - 1, i, r);
    }
    seen[r] = 1;
  }
  free(seen);
  return ncclSuccess;
}

/* One end of connection `id`, as rank's kernel sees it. */
static struct chrDevConn connEnd(const struct chrDevGroup* g, size_t id, int peer) {
  const size_t bytes = connBytes(&g->cfg);
  char* base = g->data + id * bytes;
  struct chrDevConn c;
  memset(&c, 0, sizeof c);
  c.tail = (uint64_t*)base;
  c.head = (uint64_t*)(base + 128);
  c.buff = base + CHR_DEV_CTRL_BYTES;
  c.ll = g->cfg.llLines > 0
             ? (union chrDevLLLine*)(base + CHR_DEV_CTRL_BYTES + CHR_DEV_ALIGN(CHR_DEV_STEPS * g->cfg.stepBytes))
             : NULL;
  c.step = 0;
  c.stepBytes = g->cfg.stepBytes;
  c.llLines = (uint32_t)g->cfg.llLines;
  c.peer = peer;
  return c;
}

/* Rank r's device block: [chrDevComm][channels][p2p ends][ringOrder], built on the host and copied. */
static ncclResult_t buildRank(struct chrDevGroup* g, int r, cudaStream_t init) {
  ncclResult_t res = ncclSuccess;
  const struct chrDevGroupConfig* cfg = &g->cfg;
  const int n = cfg->nRanks;
  const size_t nEnds = (size_t)cfg->p2pConns * (size_t)n * 2;
  const size_t offChannels = CHR_DEV_ALIGN(sizeof(struct chrDevComm));
  const size_t offP2p = offChannels + CHR_DEV_ALIGN((size_t)cfg->nChannels * sizeof(struct chrDevChannel));
  const size_t offOrder = offP2p + CHR_DEV_ALIGN(nEnds * sizeof(struct chrDevConn));
  const size_t bytes = offOrder + (size_t)n * sizeof(int);
  struct chrDevRank* rk = &g->ranks[r];
  char* img = (char*)calloc(1, bytes);
  if (img == NULL) return chrDevFail(ncclSystemError, "out of memory for rank %d's device comm", r);
  CHR_DEV_CUDA_GOTO(cudaMalloc(&rk->meta, bytes), res, fail_free_img);
  {
    char* dev = (char*)rk->meta;
    struct chrDevComm* comm = (struct chrDevComm*)img;
    comm->rank = r;
    comm->nRanks = n;
    comm->nChannels = cfg->nChannels;
    comm->p2pConns = cfg->p2pConns;
    comm->ringOrder = (const int*)(dev + offOrder);
    comm->abortFlag = g->flagsDev + r * 16;
    comm->error = g->flagsDev + r * 16 + 1;
    comm->channels = (struct chrDevChannel*)(dev + offChannels);
    comm->p2p = nEnds ? (struct chrDevConn*)(dev + offP2p) : NULL;
    const int pos = g->ringPos[r];
    const int next = g->ringOrder[(pos + 1) % n], prev = g->ringOrder[(pos + n - 1) % n];
    struct chrDevChannel* ch = (struct chrDevChannel*)(img + offChannels);
    for (int c = 0; c < cfg->nChannels; c++) {
      ch[c].ring[CHR_RING_SEND] = connEnd(g, (size_t)c * n + (size_t)r, next);
      ch[c].ring[CHR_RING_RECV] = connEnd(g, (size_t)c * n + (size_t)prev, prev);
    }
    const size_t nRing = (size_t)cfg->nChannels * (size_t)n;
    struct chrDevConn* ends = (struct chrDevConn*)(img + offP2p);
    for (int k = 0; k < cfg->p2pConns; k++)
      for (int p = 0; p < n; p++) {
        ends[CHR_DEV_P2P_INDEX(n, k, p, 1)] = connEnd(g, nRing + ((size_t)k * n + (size_t)r) * n + (size_t)p, p);
        ends[CHR_DEV_P2P_INDEX(n, k, p, 0)] = connEnd(g, nRing + ((size_t)k * n + (size_t)p) * n + (size_t)r, p);
      }
    memcpy(img + offOrder, g->ringOrder, (size_t)n * sizeof(int));
    rk->comm = (struct chrDevComm*)dev;
  }
  CHR_DEV_CUDA_GOTO(cudaMemcpyAsync(rk->meta, img, bytes, cudaMemcpyHostToDevice, init), res, fail_free_img);
  /* The image must outlive the copy. */
  CHR_DEV_CUDA_GOTO(cudaStreamSynchronize(init), res, fail_free_img);
  CHR_DEV_CUDA_GOTO(cudaHostAlloc((void**)&rk->workArea, (size_t)CHR_DEV_WORK_SLOTS * CHR_DEV_WORK_SLOT_BYTES,
                                  cudaHostAllocMapped | cudaHostAllocWriteCombined),
                    res, fail_free_img);
  CHR_DEV_CUDA_GOTO(cudaHostGetDevicePointer((void**)&rk->workAreaDev, rk->workArea, 0), res, fail_free_img);
  for (int s = 0; s < CHR_DEV_WORK_SLOTS; s++)
    CHR_DEV_CUDA_GOTO(cudaEventCreateWithFlags(&rk->slotDone[s], cudaEventDisableTiming), res, fail_free_img);
fail_free_img:
  free(img);
  return res;
}

static void freeRank(struct chrDevRank* rk) {
  for (int s = 0; s < CHR_DEV_WORK_SLOTS; s++)
    if (rk->slotDone[s]) cudaEventDestroy(rk->slotDone[s]);
  if (rk->workArea) cudaFreeHost(rk->workArea);
  if (rk->meta) cudaFree(rk->meta);
  memset(rk, 0, sizeof *rk);
}

extern "C" ncclResult_t chrDevGroupDestroy(struct chrDevGroup* g) {
  if (g == NULL) return ncclSuccess;
  int prev = -1;
  cudaGetDevice(&prev);
  cudaSetDevice(g->cfg.cudaDev);
  if (g->ranks)
    for (int r = 0; r < g->cfg.nRanks; r++) freeRank(&g->ranks[r]);
  free(g->ranks);
  if (g->flags) cudaFreeHost((void*)g->flags);
  if (g->data) cudaFree(g->data);
  free(g->ringOrder);
  free(g->ringPos);
  free(g);
  if (prev >= 0) cudaSetDevice(prev);
  return ncclSuccess;
}

extern "C" ncclResult_t chrDevGroupCreate(const struct chrDevGroupConfig* cfg, struct chrDevGroup** out) {
  ncclResult_t res = ncclSuccess;
  if (cfg == NULL || out == NULL) return chrDevFail(ncclInvalidArgument, "chrDevGroupCreate: NULL argument");
  *out = NULL;
  res = checkConfig(cfg);
  if (res != ncclSuccess) return res;
  int prevDev = -1;
  cudaStream_t init = NULL;
  struct chrDevGroup* g = (struct chrDevGroup*)calloc(1, sizeof *g);
  if (g == NULL) return chrDevFail(ncclSystemError, "out of memory");
  g->cfg = *cfg;
  const int n = cfg->nRanks;
  g->ringOrder = (int*)malloc((size_t)n * sizeof(int));
  g->ringPos = (int*)malloc((size_t)n * sizeof(int));
  g->ranks = (struct chrDevRank*)calloc((size_t)n, sizeof(struct chrDevRank));
  if (g->ringOrder == NULL || g->ringPos == NULL || g->ranks == NULL) {
    res = chrDevFail(ncclSystemError, "out of memory for a group of %d ranks", n);
    goto fail_destroy;
  }
  memcpy(g->ringOrder, cfg->ringOrder, (size_t)n * sizeof(int));
  g->cfg.ringOrder = g->ringOrder;
  for (int i = 0; i < n; i++) g->ringPos[g->ringOrder[i]] = i;

  CHR_DEV_CUDA_GOTO(cudaGetDevice(&prevDev), res, fail_destroy);
  CHR_DEV_CUDA_GOTO(cudaSetDevice(cfg->cudaDev), res, fail_destroy);
  /* A private stream for the initial copies: it neither waits for nor delays the user's streams. */
  CHR_DEV_CUDA_GOTO(cudaStreamCreateWithFlags(&init, cudaStreamNonBlocking), res, fail_destroy);
  {
    const size_t nConns = (size_t)cfg->nChannels * n + (size_t)cfg->p2pConns * n * n;
    g->dataBytes = nConns * connBytes(cfg);
    CHR_DEV_CUDA_GOTO(cudaMalloc((void**)&g->data, g->dataBytes), res, fail_destroy);
    CHR_DEV_CUDA_GOTO(cudaMemsetAsync(g->data, 0, g->dataBytes, init), res, fail_destroy);
    CHR_DEV_CUDA_GOTO(cudaHostAlloc((void**)&g->flags, (size_t)n * 64, cudaHostAllocMapped), res, fail_destroy);
    memset((void*)g->flags, 0, (size_t)n * 64);
    CHR_DEV_CUDA_GOTO(cudaHostGetDevicePointer((void**)&g->flagsDev, (void*)g->flags, 0), res, fail_destroy);
  }
  for (int r = 0; r < n; r++) {
    res = buildRank(g, r, init);
    if (res != ncclSuccess) goto fail_destroy;
  }
  CHR_DEV_CUDA_GOTO(cudaStreamSynchronize(init), res, fail_destroy);
  cudaStreamDestroy(init);
  cudaSetDevice(prevDev);
  *out = g;
  return ncclSuccess;

fail_destroy:
  if (init) {
    cudaStreamSynchronize(init);
    cudaStreamDestroy(init);
  }
  chrDevGroupDestroy(g);
  if (prevDev >= 0) cudaSetDevice(prevDev);
  return res;
}

extern "C" void chrDevSetAbort(struct chrDevGroup* g, int rank, uint32_t value) {
  if (g == NULL) return;
  for (int r = 0; r < g->cfg.nRanks; r++)
    if (rank < 0 || rank == r) g->flags[r * 16] = value;
  __atomic_thread_fence(__ATOMIC_SEQ_CST);
}

extern "C" uint32_t chrDevKernelError(struct chrDevGroup* g, int rank) {
  if (g == NULL || rank < 0 || rank >= g->cfg.nRanks) return 0;
  return g->flags[rank * 16 + 1];
}

extern "C" int chrDevApiVersion(void) { return CHR_DEV_API_VERSION; }
