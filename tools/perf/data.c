/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * data.c: chorus-perf's buffers and its data check (nccl-tests style).
 *
 * Inputs are small integers from a seeded hash, bounded per (type, op, nranks) so that every partial
 * result of a reduction is exactly representable in the type: then the result does not depend on the
 * order in which the library combines the ranks, and can be compared bit for bit with a value
 * computed here. The exception is avg on floating types, which libraries compute as a premultiplied
 * sum (x * (1/n) summed); it is compared with the exact average within a bound (see checkAvg).
 * Data-movement collectives use random bit patterns, compared bit for bit.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "parallel.h"
#include "perf.h"
#ifdef CHORUS_PERF_CUDA
#include "device/memory/vmm_layout.h"

#define VMM_CHUNK (20u << 20) /* PyTorch's expandable segments' chunk for large tensors */

/* bytes of cuMemCreate chunks on the current GPU, laid out as expandable segments (vmm_layout.h);
 * NULL when they cannot be had (what was mapped is freed). *span: the reserved range. */
static void* vmmAlloc(size_t bytes, size_t* span) {
  int dev = 0;
  CUdeviceptr va = 0;
  size_t chunk = 0;
  *span = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return NULL;
  if (chrVmmLayout(dev, bytes, VMM_CHUNK, 1, &va, span, &chunk) != CUDA_SUCCESS) {
    if (va) chrVmmFree(va, *span);
    *span = 0;
    return NULL;
  }
  return (void*)(uintptr_t)va;
}
#endif

#define PERF_SENTINEL_BYTE 0xA5

const char* chrPerfOpName(int op) {
  static const char* names[PERF_NUM_OPS] = {"sum", "prod", "max", "min", "avg", "mulsum"};
  if (op < 0 || op >= PERF_NUM_OPS) return "none";
  return names[op];
}

/* --- buffers ------------------------------------------------------------------------------------ */

int chrPerfBuffersAlloc(chrPerfBuffers* b, chrPerfMem mem, int vmm, size_t sendBytes, size_t recvBytes) {
  memset(b, 0, sizeof(*b));
  b->mem = mem;
  b->sendBytes = sendBytes ? sendBytes : 16;
  b->recvBytes = recvBytes ? recvBytes : 16;
  if (mem == PERF_MEM_HOST) {
    b->send = malloc(b->sendBytes);
    b->recv = malloc(b->recvBytes);
    if (!b->send || !b->recv) goto fail;
    memset(b->send, 0, b->sendBytes);
    memset(b->recv, 0, b->recvBytes);
    return 0;
  }
#ifdef CHORUS_PERF_CUDA
  b->vmm = vmm;
  if (vmm) {
    if ((b->send = vmmAlloc(b->sendBytes, &b->sendSpan)) == NULL) goto fail;
    if ((b->recv = vmmAlloc(b->recvBytes, &b->recvSpan)) == NULL) goto fail;
  } else {
    if (cudaMalloc(&b->send, b->sendBytes) != cudaSuccess) goto fail;
    if (cudaMalloc(&b->recv, b->recvBytes) != cudaSuccess) goto fail;
  }
  if (cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking) != cudaSuccess) goto fail;
  b->hostStage = malloc(b->sendBytes > b->recvBytes ? b->sendBytes : b->recvBytes);
  if (!b->hostStage) goto fail;
  if (cudaMalloc(&b->scratch, PERF_SCRATCH_BYTES) != cudaSuccess) goto fail;
  b->scratchBytes = PERF_SCRATCH_BYTES;
  /* The per-thread default stream (chorus-perf.cmake): never a device-wide wait, which would
   * deadlock against the kernel of another rank of this process that waits for this one. */
  cudaMemset(b->send, 0, b->sendBytes);
  cudaMemset(b->recv, 0, b->recvBytes);
  if (cudaStreamSynchronize(cudaStreamPerThread) != cudaSuccess) goto fail;
  return 0;
#else
  fprintf(stderr, "chorus-perf: -M cuda needs a build with CHORUS_PERF_CUDA\n");
  return 1;
#endif
fail:
  fprintf(stderr, "chorus-perf: cannot allocate %zu + %zu bytes of %s memory\n", b->sendBytes, b->recvBytes,
          mem == PERF_MEM_HOST ? "host" : vmm ? "device (cuMemCreate)" : "device");
  chrPerfBuffersFree(b);
  return 1;
}

void chrPerfBuffersFree(chrPerfBuffers* b) {
  if (b->mem == PERF_MEM_HOST) {
    free(b->send);
    free(b->recv);
  }
#ifdef CHORUS_PERF_CUDA
  else if (b->vmm) {
    if (b->send) chrVmmFree((CUdeviceptr)(uintptr_t)b->send, b->sendSpan);
    if (b->recv) chrVmmFree((CUdeviceptr)(uintptr_t)b->recv, b->recvSpan);
  } else {
    if (b->send) cudaFree(b->send);
    if (b->recv) cudaFree(b->recv);
  }
  if (b->mem != PERF_MEM_HOST) {
    if (b->scratch) cudaFree(b->scratch);
    if (b->stream) cudaStreamDestroy(b->stream);
    free(b->hostStage);
  }
#endif
  memset(b, 0, sizeof(*b));
}

int chrPerfSync(chrPerfBuffers* b) {
#ifdef CHORUS_PERF_CUDA
  if (b->mem == PERF_MEM_CUDA) {
    cudaError_t e = cudaStreamSynchronize(b->stream);
    if (e != cudaSuccess) {
      fprintf(stderr, "chorus-perf: cudaStreamSynchronize: %s\n", cudaGetErrorString(e));
      return 1;
    }
  }
#endif
  (void)b;
  return 0;
}

/* --- patterns ----------------------------------------------------------------------------------- */

static uint64_t mix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

static uint64_t hashOf(const chrPerfPattern* p, int rank, size_t k) {
  return mix64(p->seed ^ mix64(((uint64_t)(unsigned)rank << 40) ^ (uint64_t)k));
}

int chrPerfMulsumScalar(int rank) { return (rank & 1) ? 2 : 1; }

void chrPerfPatternInit(chrPerfPattern* p, ncclDataType_t type, int op, int nranks, uint64_t seed) {
  const chrNumType* t = chrNumTypeInfo(type);
  memset(p, 0, sizeof(*p));
  p->type = type;
  p->op = op;
  p->nranks = nranks;
  p->seed = seed;
  p->active = nranks;
  if (op < 0) return; /* data movement: random bits, see patternBits */
  if (op == PERF_PROD) {
    /* Factors in {-2,-1,1,2} on at most 4 ranks per element, 1 elsewhere: |product| <= 16, a power
     * of two times a sign, exact in every type. */
    p->amp = 2;
    p->active = nranks < 4 ? nranks : 4;
    return;
  }
  /* L: the largest magnitude every partial result may reach. Floats: the exact-integer range.
   * Integers wrap, which is exact for sum, mulsum, max and min; but avg divides the (wrapped) sum,
   * so there the sum must not wrap. */
  int64_t limit = t->isFloat ? t->exactInt : (op == PERF_AVG ? t->exactInt : (int64_t)1 << 20);
  if (op == PERF_MAX || op == PERF_MIN) limit = (int64_t)nranks * 100; /* no partial sums */
  int64_t scale = op == PERF_MULSUM ? 2 : 1;
  int64_t amp = limit / ((int64_t)nranks * scale);
  if (amp > 100) amp = 100;
  if (amp < 1) amp = 1;
  if (t->isFloat && amp > t->exactInt) amp = t->exactInt;
  int64_t active = limit / (amp * scale);
  if (active > nranks) active = nranks;
  if (active < 1) active = 1;
  p->amp = (int)amp;
  p->active = (int)active;
}

int64_t chrPerfPatternValue(const chrPerfPattern* p, int rank, size_t k) {
  const chrNumType* t = chrNumTypeInfo(p->type);
  int isUnsigned = !t->isFloat && !t->isSigned;
  int isActive = p->active >= p->nranks || ((size_t)rank + k) % (size_t)p->nranks < (size_t)p->active;
  if (!isActive) return p->op == PERF_PROD ? 1 : 0;
  uint64_t h = hashOf(p, rank, k);
  if (p->op == PERF_PROD) {
    static const int factors[4] = {-2, -1, 1, 2};
    return isUnsigned ? 1 + (int64_t)(h & 1) : factors[h & 3];
  }
  if (isUnsigned) return (int64_t)(h % (uint64_t)(p->amp + 1));
  return (int64_t)(h % (uint64_t)(2 * p->amp + 1)) - p->amp;
}

/* Bit pattern of element k of rank's send buffer. */
static uint64_t patternBits(const chrPerfPattern* p, int rank, size_t k) {
  if (p->op < 0) {
    const chrNumType* t = chrNumTypeInfo(p->type);
    uint64_t bits = hashOf(p, rank, k);
    if (t->size < 8) bits &= (((uint64_t)1) << (t->size * 8)) - 1;
    /* No NaN patterns: a library may legitimately canonicalise them in transit. Clearing the top
     * exponent bit leaves a finite number in every float format. */
    if (t->isFloat && isnan(chrNumDecode(p->type, bits))) bits &= ~((uint64_t)1 << (t->size * 8 - 2));
    return bits;
  }
  return chrNumEncodeInt(p->type, chrPerfPatternValue(p, rank, k));
}

/* --- fill --------------------------------------------------------------------------------------- */

struct fillJob {
  void* dst;
  const chrPerfPattern* p;
  int rank, ts;
};

static int64_t fillRange(void* arg, size_t from, size_t to) {
  const struct fillJob* f = (const struct fillJob*)arg;
  for (size_t k = from; k < to; k++) chrNumStore(f->dst, k, f->ts, patternBits(f->p, f->rank, k));
  return 0;
}

int chrPerfFillInputs(chrPerfBuffers* b, const chrPerfShape* s, const chrPerfPattern* p, int rank, void* send,
                      void* recv) {
  int ts = chrNumTypeInfo(p->type)->size;
  if (b->mem == PERF_MEM_HOST) {
    if (s->recvElems) memset(recv, PERF_SENTINEL_BYTE, s->recvElems * (size_t)ts);
    struct fillJob f = {send, p, rank, ts};
    chrPerfForRange(s->sendElems, fillRange, &f);
    return 0;
  }
#ifdef CHORUS_PERF_CUDA
  if (s->recvElems && cudaMemset(recv, PERF_SENTINEL_BYTE, s->recvElems * (size_t)ts) != cudaSuccess) return 1;
  struct fillJob f = {b->hostStage, p, rank, ts};
  chrPerfForRange(s->sendElems, fillRange, &f);
  if (s->sendElems &&
      cudaMemcpy(send, b->hostStage, s->sendElems * (size_t)ts, cudaMemcpyHostToDevice) != cudaSuccess)
    return 1;
  return cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess ? 0 : 1;
#else
  return 1;
#endif
}

#define PERF_TIMED_BYTE 0x3C

int chrPerfFillTimed(chrPerfBuffers* b, const chrPerfShape* s, int typeSize, void* send) {
  const size_t bytes = s->sendElems * (size_t)typeSize;
  if (b->mem == PERF_MEM_HOST) {
    if (bytes) memset(send, PERF_TIMED_BYTE, bytes);
    return 0;
  }
#ifdef CHORUS_PERF_CUDA
  if (bytes && cudaMemsetAsync(send, PERF_TIMED_BYTE, bytes, cudaStreamPerThread) != cudaSuccess) return 1;
  return cudaStreamSynchronize(cudaStreamPerThread) == cudaSuccess ? 0 : 1;
#else
  return 1;
#endif
}

/* --- check -------------------------------------------------------------------------------------- */

/* avg on a float type: the library may compute sum(x * (1/n)): 1/n rounds (u), each product rounds
 * (u), and the n-1 additions round (u each, relative to a partial sum bounded by sum|x|/n). So
 * |result - exact| <= (n+1) u sum|x| / n; we allow (n+2) u sum|x| / n, plus n times the smallest
 * subnormal for products that fall below the normal range. */
static int avgWithinBound(ncclDataType_t type, uint64_t got, double exact, double absSum, int n) {
  const chrNumType* t = chrNumTypeInfo(type);
  double v = chrNumDecode(type, got);
  if (isnan(v)) return 0;
  int bias = (1 << (t->expBits - 1)) - 1;
  double tiny = ldexp(1.0, 1 - bias - t->mantBits);
  double tol = (n + 2) * t->unitRoundoff * absSum / n + n * tiny;
  return fabs(v - exact) <= tol;
}

struct checkJob {
  const chrPerfColl* c;
  const chrPerfShape* s;
  const chrPerfPattern* p;
  int rank, root;
  const void* host;
};

/* Wrong elements among output elements [from, to). */
static int64_t checkRange(void* arg, size_t from, size_t to) {
  const struct checkJob* cj = (const struct checkJob*)arg;
  const chrPerfPattern* p = cj->p;
  const chrNumType* t = chrNumTypeInfo(p->type);
  const int ts = t->size, n = p->nranks;
  int64_t wrong = 0;
  for (size_t j = from; j < to; j++) {
    int srcRank = 0;
    size_t k = 0;
    chrPerfSrcKind kind = cj->c->source(cj->s, cj->rank, n, cj->root, j, &srcRank, &k);
    if (kind == PERF_SRC_NONE) continue;
    uint64_t got = chrNumLoad(cj->host, j, ts);
    if (kind == PERF_SRC_COPY) {
      wrong += got != patternBits(p, srcRank, k);
      continue;
    }
    /* Reduce over the ranks, exactly: the values are bounded (see chrPerfPatternInit). */
    uint64_t iacc = p->op == PERF_PROD ? 1 : 0;
    double facc = p->op == PERF_PROD ? 1.0 : 0.0, absSum = 0;
    for (int r = 0; r < n; r++) {
      int64_t v = chrPerfPatternValue(p, r, k);
      if (r == 0 && (p->op == PERF_MAX || p->op == PERF_MIN)) {
        iacc = (uint64_t)v;
        facc = (double)v;
        continue;
      }
      switch (p->op) {
        case PERF_SUM:
        case PERF_AVG: iacc += (uint64_t)v; facc += (double)v; absSum += fabs((double)v); break;
        case PERF_MULSUM:
          iacc += (uint64_t)(v * chrPerfMulsumScalar(r));
          facc += (double)(v * chrPerfMulsumScalar(r));
          break;
        case PERF_PROD: iacc *= (uint64_t)v; facc *= (double)v; break;
        case PERF_MAX: if (v > (int64_t)iacc) iacc = (uint64_t)v; if ((double)v > facc) facc = (double)v; break;
        case PERF_MIN: if (v < (int64_t)iacc) iacc = (uint64_t)v; if ((double)v < facc) facc = (double)v; break;
      }
    }
    uint64_t expect;
    if (t->isFloat) {
      if (p->op == PERF_AVG) {
        wrong += !avgWithinBound(p->type, got, facc / n, absSum, n);
        continue;
      }
      expect = chrNumEncode(p->type, facc);
    } else {
      if (p->op == PERF_AVG) {
        /* The sum cannot wrap (bounded values), so the type's division is C's: toward zero. */
        int64_t sum = (int64_t)iacc;
        iacc = (uint64_t)(sum / n);
      }
      expect = chrNumEncodeInt(p->type, (int64_t)iacc);
    }
    wrong += got != expect;
  }
  return wrong;
}

int64_t chrPerfCheckOutputs(chrPerfBuffers* b, const chrPerfColl* c, const chrPerfShape* s, const chrPerfPattern* p,
                            int rank, int root, const void* recv) {
  const void* host = recv;
#ifdef CHORUS_PERF_CUDA
  if (b->mem == PERF_MEM_CUDA) {
    const int ts = chrNumTypeInfo(p->type)->size;
    if (s->recvElems &&
        cudaMemcpy(b->hostStage, recv, s->recvElems * (size_t)ts, cudaMemcpyDeviceToHost) != cudaSuccess)
      return (int64_t)s->recvElems;
    host = b->hostStage;
  }
#else
  (void)b;
#endif
  struct checkJob cj = {c, s, p, rank, root, host};
  return chrPerfForRange(s->recvElems, checkRange, &cj);
}
