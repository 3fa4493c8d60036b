/* SPDX-License-Identifier: BSD-3-Clause */
/* nccl_cases.c: cases, data and reference of the public-API GPU test (nccl_cases.h). */
#include "nccl_cases.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "nccl.h"

static const int typeSizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
static const char* const typeNames[ncclNumTypes] = {"int8",   "uint8", "int32",  "uint32",   "int64",  "uint64",
                                                    "half",   "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};

int ncTypeSize(int type) { return type >= 0 && type < ncclNumTypes ? typeSizes[type] : 0; }
const char* ncTypeName(int type) { return type >= 0 && type < ncclNumTypes ? typeNames[type] : "?"; }
int ncTypeIsFloat(int type) { return type >= ncclFloat16; }
static int isUnsigned(int type) { return type == ncclUint8 || type == ncclUint32 || type == ncclUint64; }
static int isFp8(int type) { return type == ncclFloat8e4m3 || type == ncclFloat8e5m2; }

const char* ncOpName(int op) {
  static const char* const names[OP_COUNT] = {"sum", "prod", "max", "min", "avg", "premulsum(host)", "premulsum(dev)"};
  return op >= 0 && op < OP_COUNT ? names[op] : "?";
}

const char* ncFuncName(int func) {
  static const char* const names[F_COUNT] = {"allreduce", "reducescatter", "allgather", "broadcast",
                                             "reduce",    "send/recv ring", "send/recv pairs", "alltoall"};
  return func >= 0 && func < F_COUNT ? names[func] : "?";
}

/* ---- the small floating types, decoded exactly; small integers encoded by table ---- */

static double decodeMini(uint32_t bits, int ebits, int mbits, int bias, int hasInf) {
  int sign = (bits >> (ebits + mbits)) & 1;
  uint32_t e = (bits >> mbits) & ((1u << ebits) - 1), m = bits & ((1u << mbits) - 1);
  double v;
  if (e == (1u << ebits) - 1 && (hasInf || m == (1u << mbits) - 1)) {
    v = (hasInf && m == 0) ? INFINITY : NAN;
  } else if (e == 0) {
    v = ldexp((double)m, 1 - bias - mbits);
  } else {
    v = ldexp((double)((1u << mbits) + m), (int)e - bias - mbits);
  }
  return sign ? -v : v;
}

static double decodeSmall(int type, uint32_t bits) {
  switch (type) {
    case ncclFloat16: return decodeMini(bits, 5, 10, 15, 1);
    case ncclBfloat16: return decodeMini(bits, 8, 7, 127, 1);
    case ncclFloat8e4m3: return decodeMini(bits, 4, 3, 7, 0);
    default: return decodeMini(bits, 5, 2, 15, 1); /* e5m2 */
  }
}

#define SMALL_MAX 64
static uint16_t smallCode[4][2 * SMALL_MAX + 1]; /* half, bf16, e4m3, e5m2: the code of each integer */
static pthread_once_t tablesOnce = PTHREAD_ONCE_INIT;

static int smallIndex(int type) {
  return type == ncclFloat16 ? 0 : type == ncclBfloat16 ? 1 : type == ncclFloat8e4m3 ? 2 : 3;
}

static void buildTables(void) {
  const int types[4] = {ncclFloat16, ncclBfloat16, ncclFloat8e4m3, ncclFloat8e5m2};
  for (int k = 0; k < 4; k++) {
    int found[2 * SMALL_MAX + 1] = {0};
    uint32_t codes = typeSizes[types[k]] == 2 ? 65536u : 256u;
    for (uint32_t c = 0; c < codes; c++) {
      double v = decodeSmall(types[k], c);
      if (!(v >= -SMALL_MAX && v <= SMALL_MAX) || v != floor(v)) continue;
      int i = (int)v + SMALL_MAX;
      if (!found[i]) { /* the first code: +0 for zero */
        found[i] = 1;
        smallCode[k][i] = (uint16_t)c;
      }
    }
  }
}

static void encode(int type, int v, unsigned char* p) {
  switch (type) {
    case ncclInt8: case ncclUint8: { int8_t x = (int8_t)v; memcpy(p, &x, 1); return; }
    case ncclInt32: case ncclUint32: { int32_t x = v; memcpy(p, &x, 4); return; }
    case ncclInt64: case ncclUint64: { int64_t x = v; memcpy(p, &x, 8); return; }
    case ncclFloat32: { float x = (float)v; memcpy(p, &x, 4); return; }
    case ncclFloat64: { double x = v; memcpy(p, &x, 8); return; }
    default: {
      pthread_once(&tablesOnce, buildTables);
      uint16_t c = smallCode[smallIndex(type)][v + SMALL_MAX];
      if (typeSizes[type] == 2) memcpy(p, &c, 2);
      else p[0] = (unsigned char)c;
      return;
    }
  }
}

static double decode(int type, const unsigned char* p) {
  switch (type) {
    case ncclInt8: { int8_t x; memcpy(&x, p, 1); return x; }
    case ncclUint8: return p[0];
    case ncclInt32: { int32_t x; memcpy(&x, p, 4); return x; }
    case ncclUint32: { uint32_t x; memcpy(&x, p, 4); return x; }
    case ncclInt64: { int64_t x; memcpy(&x, p, 8); return (double)x; }
    case ncclUint64: { uint64_t x; memcpy(&x, p, 8); return (double)x; }
    case ncclFloat32: { float x; memcpy(&x, p, 4); return x; }
    case ncclFloat64: { double x; memcpy(&x, p, 8); return x; }
    default: {
      uint16_t c = 0;
      if (typeSizes[type] == 2) memcpy(&c, p, 2);
      else c = p[0];
      return decodeSmall(type, c);
    }
  }
}

static int scalarValue(int type) { return ncTypeIsFloat(type) ? 2 : 3; }

uint64_t ncScalarBits(int type) {
  uint64_t bits = 0;
  encode(type, scalarValue(type), (unsigned char*)&bits);
  return bits;
}

/* ---- data ---- */

static uint64_t mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/* Small integers whose every partial result is exact in the type (see the header). */
static int valueOf(const struct ncOp* o, int rank, size_t idx) {
  uint64_t h = mix(o->seed ^ mix(((uint64_t)rank << 40) ^ (uint64_t)idx));
  if (o->op == OP_PROD) {
    static const int signedVals[4] = {1, 2, -1, -2};
    return isUnsigned(o->type) ? 1 + (int)(h & 1) : signedVals[h & 3];
  }
  if (isFp8(o->type)) return (int)(h % 5) - 2;
  if (isUnsigned(o->type)) return (int)(h % 5);
  return (int)(h % 7) - 3;
}

void ncLayoutOf(const struct ncOp* o, int n, int r, struct ncLayout* l) {
  const size_t ts = (size_t)typeSizes[o->type], c = o->count, nc = (size_t)n * c;
  memset(l, 0, sizeof(*l));
  size_t bufElems = c; /* the receive buffer (or the one buffer, in place) */
  switch (o->func) {
    case F_ALLREDUCE: case F_RING: l->inElems = c; l->outElems = c; break;
    case F_REDUCESCATTER: l->inElems = nc; l->outElems = c; bufElems = o->inPlace ? nc : c; break;
    case F_ALLGATHER: l->inElems = c; l->outElems = nc; bufElems = nc; break;
    case F_BROADCAST: l->inElems = r == o->root ? c : 0; l->outElems = c; break;
    case F_REDUCE: l->inElems = c; l->outElems = r == o->root ? c : 0; break;
    default: l->inElems = nc; l->outElems = nc; bufElems = nc; break; /* pairs, all-to-all */
  }
  l->regionOff = o->recvOff - NC_GUARD;
  l->regionBytes = bufElems * ts + 2 * NC_GUARD;
  l->outOff = o->recvOff;
  if (!o->inPlace) {
    l->inOff = o->sendOff;
    return;
  }
  l->inRecvArena = 1;
  l->inOff = o->recvOff;
  if (o->func == F_REDUCESCATTER) l->outOff = o->recvOff + (size_t)r * c * ts;
  if (o->func == F_ALLGATHER) l->inOff = o->recvOff + (size_t)r * c * ts;
}

void ncFillInput(const struct ncOp* o, int n, int rank, void* dst, size_t elems) {
  const size_t ts = (size_t)typeSizes[o->type];
  (void)n;
  for (size_t i = 0; i < elems; i++) encode(o->type, valueOf(o, rank, i), (unsigned char*)dst + i * ts);
}

/* The reference of output element j of rank r: exact, or (float average on a rank count that is not a
 * power of two) the exact mean with *tol > 0. */
static double reference(const struct ncOp* o, int n, int r, size_t j, double* tol) {
  const size_t c = o->count;
  *tol = 0;
  switch (o->func) {
    case F_ALLGATHER: return valueOf(o, (int)(j / c), j % c);
    case F_BROADCAST: return valueOf(o, o->root, j);
    case F_RING: return valueOf(o, (r - 1 + n) % n, j);
    case F_PAIRS: case F_ALLTOALL: return valueOf(o, (int)(j / c), (size_t)r * c + j % c);
    default: break;
  }
  size_t idx = o->func == F_REDUCESCATTER ? (size_t)r * c + j : j;
  double acc = 0, absSum = 0;
  for (int k = 0; k < n; k++) {
    double v = valueOf(o, k, idx);
    absSum += fabs(v);
    switch (o->op) {
      case OP_PROD: acc = k == 0 ? v : acc * v; break;
      case OP_MAX: acc = k == 0 || v > acc ? v : acc; break;
      case OP_MIN: acc = k == 0 || v < acc ? v : acc; break;
      case OP_PREMUL_HOST: case OP_PREMUL_DEV: acc += v * scalarValue(o->type); break;
      default: acc += v; break;
    }
  }
  if (o->op != OP_AVG) return acc;
  if (!ncTypeIsFloat(o->type)) return (double)((long long)acc / (long long)n); /* C division: toward zero */
  if ((n & (n - 1)) != 0) {
    static const double eps[ncclNumTypes] = {0, 0, 0, 0, 0, 0, 0x1p-10, 0x1p-23, 0x1p-52, 0x1p-7, 0x1p-3, 0x1p-2};
    *tol = n * eps[o->type] * (4 + 2 * absSum);
  }
  return acc / n;
}

int ncCheck(const struct ncOp* o, int n, int r, const unsigned char* region, char* msg, size_t cap) {
  struct ncLayout l;
  ncLayoutOf(o, n, r, &l);
  const size_t ts = (size_t)typeSizes[o->type];
  for (size_t i = 0; i < NC_GUARD; i++) {
    if (region[i] != NC_POISON || region[l.regionBytes - 1 - i] != NC_POISON) {
      snprintf(msg, cap, "rank %d: a guard byte next to the output was overwritten", r);
      return -1;
    }
  }
  const unsigned char* out = region + (l.outOff - l.regionOff);
  if (l.outElems == 0) { /* reduce, not the root: the buffer is untouched (in place: still the input) */
    for (size_t j = 0; j < o->count; j++) {
      const unsigned char* p = out + j * ts;
      unsigned char want[8];
      if (o->inPlace) encode(o->type, valueOf(o, r, j), want);
      else memset(want, NC_POISON, sizeof(want));
      if (memcmp(p, want, ts) != 0) {
        snprintf(msg, cap, "rank %d (not the root): element %zu of its buffer was changed", r, j);
        return -1;
      }
    }
    return 0;
  }
  for (size_t j = 0; j < l.outElems; j++) {
    double tol = 0, want = reference(o, n, r, j, &tol);
    double got = decode(o->type, out + j * ts);
    if (tol > 0 ? fabs(got - want) <= tol : got == want) continue;
    snprintf(msg, cap, "rank %d: output element %zu is %.9g, expected %.9g%s", r, j, got, want,
             tol > 0 ? " (within tolerance)" : "");
    return -1;
  }
  return 0;
}

void ncPairsOrder(const struct ncOp* o, int n, int r, int* order) {
  for (int i = 0; i < 2 * n; i++) order[i] = i;
  uint64_t h = o->seed ^ (uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull;
  for (int i = 2 * n - 1; i > 0; i--) {
    h = h * 6364136223846793005ull + 1442695040888963407ull;
    int j = (int)((h >> 33) % (uint64_t)(i + 1)), tmp = order[i];
    order[i] = order[j];
    order[j] = tmp;
  }
}

/* ---- the case list ---- */

#define MAX_CASES 3000
static struct ncCase cases[MAX_CASES];
static int nCases;

static size_t align256(size_t x) { return (x + 255) & ~(size_t)255; }

void ncMakeCase(struct ncCase* c, const struct ncOp* ops, int nOps, int n) {
  memset(c, 0, sizeof(*c));
  c->nOps = nOps;
  size_t sendAt = 0, recvAt = NC_GUARD;
  for (int i = 0; i < nOps; i++) {
    struct ncOp o = ops[i];
    const size_t ts = (size_t)typeSizes[o.type], nc = (size_t)n * o.count;
    size_t inBytes = (o.func == F_REDUCESCATTER || o.func >= F_PAIRS ? nc : o.count) * ts;
    size_t bufBytes = (o.func == F_ALLGATHER || o.func >= F_PAIRS || (o.func == F_REDUCESCATTER && o.inPlace) ? nc
                                                                                                                : o.count) * ts;
    o.sendOff = sendAt;
    o.recvOff = recvAt;
    if (!o.inPlace) sendAt = align256(sendAt + inBytes);
    recvAt = align256(recvAt + bufBytes + 2 * NC_GUARD) + NC_GUARD;
    if (sendAt > NC_ARENA || recvAt > NC_ARENA) {
      fprintf(stderr, "test bug: case %s does not fit the arenas\n", ncFuncName(o.func));
      abort();
    }
    c->ops[i] = o;
  }
  int len = 0;
  for (int i = 0; i < nOps && len < (int)sizeof(c->name) - 40; i++) {
    const struct ncOp* o = &c->ops[i];
    len += snprintf(c->name + len, sizeof(c->name) - (size_t)len, "%s%s %s", i ? " + " : "", ncFuncName(o->func),
                    ncTypeName(o->type));
    if (o->func == F_ALLREDUCE || o->func == F_REDUCESCATTER || o->func == F_REDUCE)
      len += snprintf(c->name + len, sizeof(c->name) - (size_t)len, " %s", ncOpName(o->op));
    if (o->func == F_BROADCAST || o->func == F_REDUCE)
      len += snprintf(c->name + len, sizeof(c->name) - (size_t)len, " root %d", o->root);
    len += snprintf(c->name + len, sizeof(c->name) - (size_t)len, " count %zu%s%s", o->count,
                    o->inPlace ? " in place" : "", o->stream ? " (stream 1)" : "");
  }
}

static struct ncOp op(int func, int type, int redop, size_t count, int root, int inPlace) {
  struct ncOp o;
  memset(&o, 0, sizeof(o));
  o.func = func;
  o.type = type;
  o.op = redop;
  o.count = count;
  o.root = root;
  o.inPlace = inPlace;
  return o;
}

static void add(int n, const struct ncOp* ops, int nOps) {
  if (nCases == MAX_CASES) {
    fprintf(stderr, "test bug: more than %d cases\n", MAX_CASES);
    abort();
  }
  struct ncOp seeded[NC_MAX_OPS];
  for (int i = 0; i < nOps; i++) {
    seeded[i] = ops[i];
    seeded[i].seed = mix(0x5eedull + (uint64_t)nCases * 131 + (uint64_t)i);
  }
  ncMakeCase(&cases[nCases++], seeded, nOps, n);
}

static void add1(int n, struct ncOp o) { add(n, &o, 1); }

const struct ncCase* ncCases(int n, int quick, int* count) {
  /* Built once per (n, quick); threads that only read it call this after the first build. */
  static int builtN = -1, builtQuick = -1;
  if (builtN == n && builtQuick == quick) {
    *count = nCases;
    return cases;
  }
  nCases = 0;
  static const int quickTypes[] = {ncclUint8, ncclInt32, ncclFloat16, ncclFloat32, ncclBfloat16, ncclFloat8e5m2};
  const int nTypes = quick ? (int)(sizeof(quickTypes) / sizeof(quickTypes[0])) : ncclNumTypes;
  const size_t small[2] = {1237, 1};
  const int nSmall = quick ? 1 : 2;
#define TYPE(i) (quick ? quickTypes[i] : (i))
  /* Reductions: every type and op, in and out of place. */
  for (int ti = 0; ti < nTypes; ti++)
    for (int o = 0; o < OP_COUNT; o++)
      for (int ip = 0; ip < 2; ip++)
        for (int s = 0; s < nSmall; s++) {
          add1(n, op(F_ALLREDUCE, TYPE(ti), o, small[s], 0, ip));
          add1(n, op(F_REDUCESCATTER, TYPE(ti), o, small[s] == 1 ? 1 : 517, 0, ip));
        }
  for (int ti = 0; ti < nTypes; ti++)
    for (int ip = 0; ip < 2; ip++)
      for (int s = 0; s < nSmall; s++) add1(n, op(F_ALLGATHER, TYPE(ti), OP_SUM, small[s], 0, ip));
  /* Rooted: every root. */
  const int rootTypes[4] = {ncclInt8, ncclFloat16, ncclFloat32, ncclFloat8e5m2};
  for (int root = 0; root < n; root++)
    for (int ip = 0; ip < 2; ip++) {
      for (int k = 0; k < 4; k++)
        for (int s = 0; s < nSmall; s++) add1(n, op(F_BROADCAST, rootTypes[k], OP_SUM, small[s], root, ip));
      const int reduceTypes[3] = {ncclInt32, ncclBfloat16, ncclFloat64};
      for (int k = 0; k < (quick ? 1 : 3); k++)
        for (int o = 0; o < OP_COUNT; o++) add1(n, op(F_REDUCE, reduceTypes[k], o, 1237, root, ip));
      add1(n, op(F_REDUCE, ncclUint8, OP_SUM, 1, root, ip));
    }
  /* Point to point. */
  for (int ti = 0; ti < nTypes; ti++) add1(n, op(F_RING, TYPE(ti), OP_SUM, 1237, 0, 0));
  add1(n, op(F_RING, ncclInt64, OP_SUM, 1, 0, 0));
  add1(n, op(F_PAIRS, ncclFloat32, OP_SUM, 1237, 0, 0));
  add1(n, op(F_PAIRS, ncclUint8, OP_SUM, 3, 0, 0));
  for (int k = 0; k < 4; k++) add1(n, op(F_ALLTOALL, rootTypes[k], OP_SUM, k == 0 ? 1 : 1237, 0, 0));
  /* A few MB: several channels, SIMPLE, messages larger than a connection's 8 slots. */
  const size_t MB = 1u << 20;
  add1(n, op(F_ALLREDUCE, ncclFloat32, OP_SUM, 3 * MB / 4 + 5, 0, 0));
  add1(n, op(F_ALLREDUCE, ncclBfloat16, OP_AVG, 3 * MB / 2 + 1, 0, 1));
  add1(n, op(F_ALLREDUCE, ncclInt32, OP_MAX, 3 * MB / 4, 0, 0));
  add1(n, op(F_ALLREDUCE, ncclFloat16, OP_PREMUL_DEV, 3 * MB / 2, 0, 0));
  add1(n, op(F_ALLREDUCE, ncclFloat8e4m3, OP_SUM, 3 * MB + 3, 0, 1));
  add1(n, op(F_REDUCESCATTER, ncclFloat64, OP_MIN, MB / 8 + 1, 0, 1));
  add1(n, op(F_REDUCESCATTER, ncclUint8, OP_PROD, MB, 0, 0));
  add1(n, op(F_ALLGATHER, ncclInt64, OP_SUM, MB / 8 + 3, 0, 0));
  add1(n, op(F_ALLGATHER, ncclFloat16, OP_SUM, MB / 2, 0, 1));
  add1(n, op(F_BROADCAST, ncclFloat32, OP_SUM, 3 * MB / 4, n - 1, 0));
  add1(n, op(F_REDUCE, ncclInt8, OP_SUM, 3 * MB, n / 2, 1));
  add1(n, op(F_RING, ncclFloat32, OP_SUM, 6 * MB / 4 + 1, 0, 0));
  add1(n, op(F_PAIRS, ncclInt32, OP_SUM, 5 * MB / 4, 0, 0));
  add1(n, op(F_ALLTOALL, ncclUint8, OP_SUM, 5 * MB, 0, 0));
  /* Several calls in one group, on one stream and on two. */
  for (int streams = 1; streams <= 2; streams++) {
    struct ncOp g[5] = {op(F_ALLREDUCE, ncclFloat32, OP_SUM, 100000, 0, 0), op(F_ALLGATHER, ncclInt8, OP_SUM, 777, 0, 0),
                        op(F_REDUCESCATTER, ncclFloat16, OP_MAX, 333, 0, 1),
                        op(F_BROADCAST, ncclUint64, OP_SUM, 5000, n - 1, 0), op(F_RING, ncclInt32, OP_SUM, 10000, 0, 0)};
    for (int i = 0; i < 5; i++) g[i].stream = streams == 2 ? i % 2 : 0;
    add(n, g, 5);
  }
  {
    struct ncOp g[6] = {op(F_ALLREDUCE, ncclBfloat16, OP_PREMUL_DEV, 4099, 0, 0),
                        op(F_REDUCE, ncclInt32, OP_AVG, 2000, n > 1 ? 1 : 0, 1),
                        op(F_ALLREDUCE, ncclFloat64, OP_MIN, MB / 2, 0, 0), op(F_PAIRS, ncclFloat32, OP_SUM, 1000, 0, 0),
                        op(F_ALLREDUCE, ncclInt32, OP_SUM, 5000, 0, 1), op(F_ALLREDUCE, ncclInt32, OP_SUM, 5001, 0, 0)};
    g[1].stream = g[3].stream = 1;
    add(n, g, 6);
    struct ncOp h[3] = {op(F_ALLTOALL, ncclUint8, OP_SUM, 300, 0, 0), op(F_ALLREDUCE, ncclUint32, OP_PROD, 999, 0, 0),
                        op(F_RING, ncclFloat8e4m3, OP_SUM, 100000, 0, 0)};
    add(n, h, 3);
  }
  /* Nothing to move (last: the device state exists by now, so these are no-ops). */
  add1(n, op(F_ALLREDUCE, ncclFloat32, OP_SUM, 0, 0, 0));
  add1(n, op(F_REDUCESCATTER, ncclInt32, OP_SUM, 0, 0, 1));
  add1(n, op(F_ALLGATHER, ncclInt8, OP_SUM, 0, 0, 0));
  add1(n, op(F_BROADCAST, ncclFloat64, OP_SUM, 0, 0, 0));
  add1(n, op(F_REDUCE, ncclFloat16, OP_MAX, 0, n - 1, 0));
  add1(n, op(F_RING, ncclFloat32, OP_SUM, 0, 0, 0));
  add1(n, op(F_ALLTOALL, ncclInt32, OP_SUM, 0, 0, 0));
#undef TYPE
  builtN = n;
  builtQuick = quick;
  *count = nCases;
  return cases;
}
