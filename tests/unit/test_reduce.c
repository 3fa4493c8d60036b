/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_reduce: chrReduce / chrReducePost / chrRedOpFromBuiltin / chrRedOpPreMulSum for every datatype
 * and every kind, against a reference computed here from first principles:
 *  - integers: 128-bit arithmetic truncated to the type's width (wrap-around), signed or unsigned
 *    comparison;
 *  - float types: operands decoded by bit fields (test_reduce_ref.h), the step computed in double and
 *    rounded once to float (exactly the float result: double has more than 2*24+2 bits, so the double
 *    rounding is harmless for + and *), then encoded by nearest search with ties to even;
 *  - double: C double arithmetic (there is nothing wider that rounds exactly the same).
 * Random inputs mix zeros, negatives, subnormals, huge values, inf/NaN and the integer extremes.
 * Every shape is exercised: src0 NULL, two outputs, in place on either source, counts 0, 1, odd and
 * vector-tail sizes, buffers at odd byte addresses, guard bytes around every output.
 *
 * Run with --bench to print the bandwidth of chrReduce (float sum, 8 MiB, one core) against memcpy.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "exec/reduce.h"
#include "test_reduce_ref.h"

#include "test_expect.h"

/* ---- random numbers ---- */
static uint64_t rngState = 0x243f6a8885a308d3ull;
static uint64_t rnd(void) {
  rngState ^= rngState << 13;
  rngState ^= rngState >> 7;
  rngState ^= rngState << 17;
  return rngState * 0x2545f4914f6cdd1dull;
}

/* ---- type descriptions (the test's own, not the library's) ---- */
enum { CLS_INT, CLS_F32, CLS_F64, CLS_SMALL };
typedef struct {
  ncclDataType_t type;
  const char* name;
  int size;
  int cls;
  int isSigned;
  RefFmt* fmt;
} TypeInfo;

static const TypeInfo kTypes[] = {
    {ncclInt8, "int8", 1, CLS_INT, 1, NULL},         {ncclUint8, "uint8", 1, CLS_INT, 0, NULL},
    {ncclInt32, "int32", 4, CLS_INT, 1, NULL},       {ncclUint32, "uint32", 4, CLS_INT, 0, NULL},
    {ncclInt64, "int64", 8, CLS_INT, 1, NULL},       {ncclUint64, "uint64", 8, CLS_INT, 0, NULL},
    {ncclFloat16, "half", 2, CLS_SMALL, 1, &refHalf}, {ncclFloat32, "float", 4, CLS_F32, 1, NULL},
    {ncclFloat64, "double", 8, CLS_F64, 1, NULL},    {ncclBfloat16, "bfloat16", 2, CLS_SMALL, 1, &refBf16},
    {ncclFloat8e4m3, "f8e4m3", 1, CLS_SMALL, 1, &refE4m3}, {ncclFloat8e5m2, "f8e5m2", 1, CLS_SMALL, 1, &refE5m2},
};
#define NTYPES (sizeof kTypes / sizeof kTypes[0])

static const char* kKindNames[] = {"sum", "prod", "max", "min", "premulsum", "sumpostdiv"};

static uint64_t widthMask(const TypeInfo* t) { return t->size == 8 ? ~0ull : ((1ull << (8 * t->size)) - 1); }

static uint64_t loadBits(const TypeInfo* t, const uint8_t* p) {
  uint64_t v = 0;
  memcpy(&v, p, (size_t)t->size); /* little-endian host */
  return v;
}
static void storeBits(const TypeInfo* t, uint8_t* p, uint64_t v) { memcpy(p, &v, (size_t)t->size); }

/* Value of an element of a float type. */
static double valueOf(const TypeInfo* t, uint64_t bits) {
  if (t->cls == CLS_SMALL) return refDecode(t->fmt, (uint32_t)bits);
  if (t->cls == CLS_F32) {
    float f;
    uint32_t u = (uint32_t)bits;
    memcpy(&f, &u, 4);
    return f;
  }
  double d;
  memcpy(&d, &bits, 8);
  return d;
}

/* Bits of a float-type result; v is already rounded to float for F32/SMALL. */
static uint64_t bitsOf(const TypeInfo* t, double v) {
  if (t->cls == CLS_SMALL) return refEncode(t->fmt, v);
  if (t->cls == CLS_F32) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
  }
  uint64_t b;
  memcpy(&b, &v, 8);
  return b;
}

static int isNanBits(const TypeInfo* t, uint64_t bits) { return t->cls != CLS_INT && isnan(valueOf(t, bits)); }

/* Round a double step result as the type's arithmetic does: to float for everything but double. */
static double roundStep(const TypeInfo* t, double v) { return t->cls == CLS_F64 ? v : (double)(float)v; }

/* ---- the reference step ---- */
typedef unsigned __int128 u128;
typedef __int128 i128;

static i128 intValue(const TypeInfo* t, uint64_t bits) {
  int w = 8 * t->size;
  if (!t->isSigned) return (i128)bits;
  if (w < 64 && (bits >> (w - 1)) & 1) return (i128)bits - ((i128)1 << w);
  if (w == 64) return (i128)(int64_t)bits;
  return (i128)bits;
}

static uint64_t refStep(const TypeInfo* t, chrRedKind kind, int hasA, uint64_t a, uint64_t b, uint64_t s) {
  if (t->cls == CLS_INT) {
    i128 va = intValue(t, a), vb = intValue(t, b), vs = intValue(t, s);
    u128 r;
    if (!hasA) {
      r = kind == chrRedPreMulSum ? (u128)vb * (u128)vs : (u128)vb;
    } else {
      switch (kind) {
        case chrRedProd: r = (u128)va * (u128)vb; break;
        case chrRedMax: r = va > vb ? (u128)va : (u128)vb; break;
        case chrRedMin: r = va < vb ? (u128)va : (u128)vb; break;
        case chrRedPreMulSum: r = (u128)va + (u128)vb * (u128)vs; break;
        default: r = (u128)va + (u128)vb; break;
      }
    }
    return (uint64_t)r & widthMask(t);
  }
  double da = valueOf(t, a), db = valueOf(t, b), ds = valueOf(t, s);
  if (!hasA) return kind == chrRedPreMulSum ? bitsOf(t, roundStep(t, db * ds)) : b;
  switch (kind) {
    case chrRedProd: return bitsOf(t, roundStep(t, da * db));
    case chrRedMax:
      if (isnan(da) || isnan(db)) return bitsOf(t, NAN);
      return da > db ? a : b;
    case chrRedMin:
      if (isnan(da) || isnan(db)) return bitsOf(t, NAN);
      return da < db ? a : b;
    case chrRedPreMulSum: return bitsOf(t, roundStep(t, da + roundStep(t, db * ds)));
    default: return bitsOf(t, roundStep(t, da + db));
  }
}

/* ---- input generation ---- */
static uint64_t genSmall(const TypeInfo* t) {
  RefFmt* f = t->fmt;
  uint32_t sign = (rnd() & 1) ? refSignBit(f) : 0;
  uint32_t mmask = (1u << f->mbits) - 1;
  switch (rnd() % 10) {
    case 0: { /* specials */
      uint32_t sp[] = {0, 1, mmask, 1u << f->mbits, f->maxFinite, f->maxFinite - 1,
                       f->e4m3 ? 0x7fu : refInfCode(f), refNanCode(f)};
      return sp[rnd() % (sizeof sp / sizeof sp[0])] | sign;
    }
    case 1: return rnd() & ((1u << refBits(f)) - 1); /* any code */
    case 2: return (rnd() & mmask) | sign;          /* subnormal */
    default: {                                       /* moderate: exponent within bias +-3 */
      uint32_t e = (uint32_t)(f->bias + (int)(rnd() % 7) - 3);
      return ((e << f->mbits) | (rnd() & mmask)) | sign;
    }
  }
}

static uint64_t genFloat(const TypeInfo* t) {
  int f32 = t->cls == CLS_F32;
  double sign = (rnd() & 1) ? -1.0 : 1.0;
  double v;
  switch (rnd() % 10) {
    case 0: {
      const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0,
                           f32 ? 3.4028234663852886e38 : 1.7976931348623157e308,
                           f32 ? 1.401298464324817e-45 : 4.9406564584124654e-324,
                           f32 ? 1.1754942106924411e-38 : 2.2250738585072009e-308};
      v = sp[rnd() % (sizeof sp / sizeof sp[0])] * (rnd() & 1 ? -1 : 1);
      break;
    }
    case 1: return rnd() & widthMask(t); /* any bit pattern */
    case 2: v = sign * ldexp((double)(rnd() % 1000000), f32 ? -149 : -1074); break; /* subnormal */
    case 3: v = sign * ldexp((double)(rnd() & 0xffffff), f32 ? 104 : 1000); break;  /* huge */
    default: v = sign * (double)(int64_t)(rnd() % 2000000) / 1024.0 * ldexp(1.0, (int)(rnd() % 20) - 10); break;
  }
  return bitsOf(t, f32 ? (double)(float)v : v);
}

static uint64_t genInt(const TypeInfo* t) {
  uint64_t m = widthMask(t);
  uint64_t minv = t->isSigned ? (1ull << (8 * t->size - 1)) : 0;
  switch (rnd() % 6) {
    case 0: {
      uint64_t sp[] = {0, 1, m /* -1 or max */, minv, (minv - 1) & m, (minv + 1) & m, 2, m - 1};
      return sp[rnd() % 8] & m;
    }
    case 1: return (uint64_t)((int64_t)(rnd() % 11) - 5) & m;
    default: return rnd() & m;
  }
}

static uint64_t genElem(const TypeInfo* t) {
  switch (t->cls) {
    case CLS_INT: return genInt(t);
    case CLS_SMALL: return genSmall(t);
    default: return genFloat(t);
  }
}

/* PreMulSum scalars worth trying, as bits of the type. */
static int scalarsFor(const TypeInfo* t, uint64_t* out) {
  int n = 0;
  if (t->cls == CLS_INT) {
    out[n++] = 1;
    out[n++] = 2;
    out[n++] = widthMask(t); /* -1 or max */
    out[n++] = 0;
    out[n++] = rnd() & widthMask(t);
    return n;
  }
  const double vals[] = {1.0, 2.0, 0.5, -1.5, 1.0 / 3.0, 1e-3, 300.0};
  for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) out[n++] = bitsOf(t, roundStep(t, vals[i]));
  out[n++] = genElem(t);
  out[n++] = genElem(t);
  if (t->cls == CLS_SMALL) out[n++] = 1; /* smallest subnormal */
  return n;
}

/* ---- one chrReduce call in one shape, checked ---- */
enum {
  SH_OUT,         /* dst0 = f(src0, src1) */
  SH_OUT2,        /* dst0 = dst1 = f(src0, src1) */
  SH_ONE,         /* dst0 = pre(src1) */
  SH_ONE2,        /* dst0 = dst1 = pre(src1) */
  SH_INPLACE_A,   /* dst0 == src0 */
  SH_INPLACE_B,   /* dst0 == src1 */
  SH_INPLACE_A2,  /* dst0 == src0, dst1 separate */
  SH_ONE_INPLACE, /* src0 NULL, dst0 == src1 */
  SH_OUT_DST1_B,  /* dst0 separate, dst1 == src1 */
  SH_COUNT
};

#define GUARD 16
#define GUARD_BYTE 0xa5

typedef struct {
  uint8_t* base;
  uint8_t* p;
  size_t bytes;
} Buf;

static void bufInit(Buf* b, size_t bytes, size_t misalign) {
  b->base = (uint8_t*)malloc(bytes + 2 * GUARD + 64);
  b->p = b->base + GUARD + misalign;
  b->bytes = bytes;
  memset(b->base, GUARD_BYTE, bytes + 2 * GUARD + 64);
}
static int bufGuardsOk(const Buf* b) {
  for (uint8_t* q = b->base; q < b->p; q++)
    if (*q != GUARD_BYTE) return 0;
  for (size_t i = 0; i < GUARD; i++)
    if (b->p[b->bytes + i] != GUARD_BYTE) return 0;
  return 1;
}

static void runShape(const TypeInfo* t, const chrRedOp* op, uint64_t scalarBits, int shape, size_t count,
                     size_t misalign) {
  size_t sz = (size_t)t->size, bytes = count * sz;
  Buf A, B, D0, D1;
  bufInit(&A, bytes, misalign);
  bufInit(&B, bytes, (misalign * 3) % 8);
  bufInit(&D0, bytes, (misalign + 1) % 8);
  bufInit(&D1, bytes, (misalign + 5) % 8);
  uint64_t* want = (uint64_t*)malloc(sizeof(uint64_t) * (count + 1) * 3);
  uint64_t* ina = want + count + 1;
  uint64_t* inb = ina + count + 1;
  int hasA = !(shape == SH_ONE || shape == SH_ONE2 || shape == SH_ONE_INPLACE);
  for (size_t i = 0; i < count; i++) {
    uint64_t a = genElem(t), b = genElem(t);
    /* Half the time make the operands close in magnitude so sums really round (and cancel). */
    if (t->cls != CLS_INT && (rnd() & 1)) b = a ^ (rnd() & 7) ^ ((rnd() & 1) ? (uint64_t)1 << (8 * sz - 1) : 0);
    storeBits(t, A.p + i * sz, a);
    storeBits(t, B.p + i * sz, b);
    want[i] = refStep(t, op->kind, hasA, a, b, scalarBits);
    ina[i] = a;
    inb[i] = b;
  }
  void *d0 = D0.p, *d1 = NULL;
  const void *s0 = A.p, *s1 = B.p;
  switch (shape) {
    case SH_OUT: break;
    case SH_OUT2: d1 = D1.p; break;
    case SH_ONE: s0 = NULL; break;
    case SH_ONE2: s0 = NULL; d1 = D1.p; break;
    case SH_INPLACE_A: d0 = A.p; break;
    case SH_INPLACE_B: d0 = B.p; break;
    case SH_INPLACE_A2: d0 = A.p; d1 = D1.p; break;
    case SH_ONE_INPLACE: s0 = NULL; d0 = B.p; break;
    case SH_OUT_DST1_B: d1 = B.p; break;
  }
  chrReduce(op, d0, d1, s0, s1, count);
  for (int o = 0; o < 2; o++) {
    uint8_t* out = o == 0 ? (uint8_t*)d0 : (uint8_t*)d1;
    if (out == NULL) continue;
    for (size_t i = 0; i < count; i++) {
      uint64_t got = loadBits(t, out + i * sz);
      int ok = isNanBits(t, want[i]) ? isNanBits(t, got) : got == want[i];
      EXPECT(ok, "%s %s shape %d count %zu misalign %zu scalar 0x%llx out%d [%zu] a 0x%llx b 0x%llx: got 0x%llx want 0x%llx",
             t->name, kKindNames[op->kind], shape, count, misalign, (unsigned long long)scalarBits, o, i,
             (unsigned long long)ina[i], (unsigned long long)inb[i], (unsigned long long)got, (unsigned long long)want[i]);
      if (!ok) break;
    }
  }
  EXPECT(bufGuardsOk(&A) && bufGuardsOk(&B) && bufGuardsOk(&D0) && bufGuardsOk(&D1),
         "%s %s shape %d count %zu: write outside the buffers", t->name, kKindNames[op->kind], shape, count);
  if (shape == SH_ONE || shape == SH_OUT) { /* the unused buffer is untouched */
    for (size_t i = 0; i < bytes; i++) EXPECT(D1.p[i] == GUARD_BYTE, "dst1 written though NULL");
  }
  free(want);
  free(A.base);
  free(B.base);
  free(D0.base);
  free(D1.base);
}

static const size_t kCounts[] = {0, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 63, 64, 65, 127, 257, 1001, 4099};
#define NCOUNTS (sizeof kCounts / sizeof kCounts[0])

static void testAllShapes(const TypeInfo* t, const chrRedOp* op, uint64_t scalarBits) {
  for (int shape = 0; shape < SH_COUNT; shape++)
    for (size_t c = 0; c < NCOUNTS; c++) runShape(t, op, scalarBits, shape, kCounts[c], (c + (size_t)shape) % 4);
}

static void testReduce(void) {
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const TypeInfo* t = &kTypes[ti];
    const ncclRedOp_t builtins[] = {ncclSum, ncclProd, ncclMax, ncclMin};
    for (int k = 0; k < 4; k++) {
      chrRedOp op;
      EXPECT(chrRedOpFromBuiltin(builtins[k], t->type, 4, &op) == ncclSuccess, "FromBuiltin %s", t->name);
      EXPECT(op.kind == (chrRedKind)k && op.type == t->type, "FromBuiltin kind %s %d", t->name, k);
      testAllShapes(t, &op, 0);
    }
    uint64_t scalars[16];
    int ns = scalarsFor(t, scalars);
    for (int i = 0; i < ns; i++) {
      chrRedOp op;
      EXPECT(chrRedOpPreMulSum(t->type, &scalars[i], &op) == ncclSuccess, "PreMulSum %s", t->name);
      EXPECT(op.kind == chrRedPreMulSum, "PreMulSum kind");
      if (t->cls == CLS_INT) {
        EXPECT(op.scalarAsDouble == (double)intValue(t, scalars[i]), "%s scalarAsDouble", t->name);
      } else {
        double want = valueOf(t, scalars[i]);
        EXPECT(op.scalarAsDouble == want || (isnan(want) && isnan(op.scalarAsDouble)), "%s scalarAsDouble %g vs %g",
               t->name, op.scalarAsDouble, want);
      }
      for (size_t b = (size_t)t->size; b < 8; b++) EXPECT(op.scalar.bytes[b] == 0, "scalar padding");
      testAllShapes(t, &op, scalars[i]);
    }
    /* SumPostDiv steps are sums. */
    chrRedOp op;
    memset(&op, 0, sizeof op);
    op.type = t->type;
    op.kind = chrRedSumPostDiv;
    op.divisor = 3;
    testAllShapes(t, &op, 0);
  }
}

/* ---- chrReducePost ---- */
static void testPost(void) {
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const TypeInfo* t = &kTypes[ti];
    size_t sz = (size_t)t->size;
    const uint64_t divisors[] = {1, 2, 3, 7, 8, 100};
    for (size_t di = 0; di < sizeof divisors / sizeof divisors[0]; di++) {
      for (int inplace = 0; inplace < 2; inplace++) {
        size_t count = 1 + di * 37;
        Buf S, D;
        bufInit(&S, count * sz, di % 4);
        bufInit(&D, count * sz, (di + 1) % 4);
        uint64_t* want = (uint64_t*)malloc(sizeof(uint64_t) * count);
        uint64_t d = divisors[di];
        for (size_t i = 0; i < count; i++) {
          uint64_t x = genElem(t);
          storeBits(t, S.p + i * sz, x);
          if (t->cls == CLS_INT) {
            /* Truncating division from magnitudes: q = sign * (|x| / d). */
            i128 v = intValue(t, x);
            u128 mag = v < 0 ? (u128)(-v) : (u128)v;
            u128 q = mag / d;
            want[i] = (uint64_t)(v < 0 ? (u128)(-(i128)q) : q) & widthMask(t);
          } else {
            want[i] = bitsOf(t, roundStep(t, valueOf(t, x) / (double)d));
          }
        }
        chrRedOp op;
        memset(&op, 0, sizeof op);
        op.type = t->type;
        op.kind = chrRedSumPostDiv;
        op.divisor = d;
        uint8_t* dst = inplace ? S.p : D.p;
        chrReducePost(&op, dst, S.p, count);
        for (size_t i = 0; i < count; i++) {
          uint64_t got = loadBits(t, dst + i * sz);
          int ok = isNanBits(t, want[i]) ? isNanBits(t, got) : got == want[i];
          EXPECT(ok, "post %s / %llu [%zu]: got 0x%llx want 0x%llx", t->name, (unsigned long long)d, i,
                 (unsigned long long)got, (unsigned long long)want[i]);
        }
        /* Other kinds copy. */
        op.kind = chrRedMax;
        memset(D.p, 0, count * sz);
        chrReducePost(&op, D.p, S.p, count);
        EXPECT(memcmp(D.p, S.p, count * sz) == 0, "post copy %s", t->name);
        chrReducePost(&op, S.p, S.p, count);
        chrReducePost(&op, D.p, S.p, 0);
        EXPECT(bufGuardsOk(&S) && bufGuardsOk(&D), "post %s: write outside the buffers", t->name);
        free(want);
        free(S.base);
        free(D.base);
      }
    }
  }
}

/* ---- ncclAvg through chrRedOpFromBuiltin, as an n-rank chain ---- */

/* Unit roundoff (half an ulp, relative) of each float type, and half its smallest subnormal step. */
static double unitRoundoff(const TypeInfo* t) {
  if (t->cls == CLS_F64) return ldexp(1.0, -53);
  if (t->cls == CLS_F32) return ldexp(1.0, -24);
  return ldexp(1.0, -(t->fmt->mbits + 1));
}
static double halfSubnormalStep(const TypeInfo* t) {
  if (t->cls == CLS_F64) return ldexp(1.0, -1074); /* half of it is not a double: use the whole step */
  if (t->cls == CLS_F32) return ldexp(1.0, -150);
  return ldexp(1.0, 1 - t->fmt->bias - t->fmt->mbits - 1);
}

static void testAvg(void) {
  const int rankCounts[] = {1, 2, 3, 4, 5, 7, 8, 16};
  const size_t count = 513;
  for (size_t ti = 0; ti < NTYPES; ti++) {
    const TypeInfo* t = &kTypes[ti];
    size_t sz = (size_t)t->size;
    for (size_t ri = 0; ri < sizeof rankCounts / sizeof rankCounts[0]; ri++) {
      int n = rankCounts[ri];
      chrRedOp op;
      EXPECT(chrRedOpFromBuiltin(ncclAvg, t->type, n, &op) == ncclSuccess, "avg %s", t->name);
      if (t->cls == CLS_INT) {
        EXPECT(op.kind == chrRedSumPostDiv && op.divisor == (uint64_t)n, "avg %s is SumPostDiv", t->name);
      } else {
        EXPECT(op.kind == chrRedPreMulSum, "avg %s is PreMulSum", t->name);
        uint64_t sb = 0;
        memcpy(&sb, op.scalar.bytes, sz);
        double wantScalar = t->cls == CLS_F64 ? 1.0 / n : valueOf(t, bitsOf(t, (double)(float)(1.0 / n)));
        EXPECT(valueOf(t, sb) == wantScalar && op.scalarAsDouble == wantScalar, "avg %s scalar for %d ranks", t->name, n);
      }
      uint8_t* ranks = (uint8_t*)malloc(count * sz * (size_t)n);
      uint8_t* acc = (uint8_t*)malloc(count * sz + 1) + 1; /* odd address on purpose */
      /* Inputs: finite, |x| <= max/4 so that no partial sum overflows (ints: |x| <= max/n, so the sum
       * fits the type and integer division is exact to compare). */
      for (int r = 0; r < n; r++) {
        for (size_t i = 0; i < count; i++) {
          uint64_t x;
          for (;;) {
            x = genElem(t);
            if (t->cls == CLS_INT) {
              i128 v = intValue(t, x);
              i128 lim = (t->isSigned ? ((i128)1 << (8 * sz - 1)) : ((i128)1 << (8 * sz))) / n - 1;
              if (v <= lim && v >= -lim) break;
              x = (uint64_t)((v % (lim + 1))) & widthMask(t);
              break;
            }
            double v = valueOf(t, x);
            double max = t->cls == CLS_SMALL ? t->fmt->table[t->fmt->maxFinite]
                         : t->cls == CLS_F32 ? 3.4028234663852886e38 : 1.7976931348623157e308;
            if (isfinite(v) && fabs(v) <= max / 4) break;
          }
          storeBits(t, ranks + ((size_t)r * count + i) * sz, x);
        }
      }
      /* The chain an executor runs: acc = pre(rank0); acc = acc + pre(rank r); post. */
      chrReduce(&op, acc, NULL, NULL, ranks, count);
      for (int r = 1; r < n; r++) chrReduce(&op, acc, NULL, acc, ranks + (size_t)r * count * sz, count);
      chrReducePost(&op, acc, acc, count);
      for (size_t i = 0; i < count; i++) {
        uint64_t got = loadBits(t, acc + i * sz);
        if (t->cls == CLS_INT) {
          i128 sum = 0;
          for (int r = 0; r < n; r++) sum += intValue(t, loadBits(t, ranks + ((size_t)r * count + i) * sz));
          i128 q = sum / n; /* the sum fits; C division truncates, as the API promises */
          EXPECT(got == ((uint64_t)q & widthMask(t)), "avg %s n=%d [%zu]: got %lld want %lld", t->name, n, i,
                 (long long)intValue(t, got), (long long)q);
          continue;
        }
        double sum = 0, sumAbs = 0;
        for (int r = 0; r < n; r++) {
          double v = valueOf(t, loadBits(t, ranks + ((size_t)r * count + i) * sz));
          sum += v; /* exact enough: double has >= 29 more bits than any type here but double */
          sumAbs += fabs(v);
        }
        /* Error bound. With u the type's unit roundoff and S = sum|x|/n: the scalar 1/n is off by at
         * most u relative (rounded once to float, then to the type: <= u + 2^-24); each of the n
         * products x*s is rounded to float (2^-24 relative), and each of the n steps rounds a partial
         * sum of magnitude <= S(1+u)^n to the type (u relative, or half a subnormal step absolute).
         * So |got - avg| <= S*((n+1)*u + (n+1)*2^-24)*(1+u)^n + n*halfSub. For double, also the
         * reference's own rounding of the sum (n*2^-53*sum|x|/n) is covered by the same terms. */
        double u = unitRoundoff(t);
        double S = sumAbs / n;
        double tol = S * ((n + 1) * u + (n + 1) * ldexp(1.0, -24)) * pow(1 + u, n) + n * halfSubnormalStep(t);
        if (t->cls == CLS_F64) tol = S * (2 * n + 2) * u * 1.01 + n * halfSubnormalStep(t);
        double g = valueOf(t, got), avg = sum / n;
        EXPECT(fabs(g - avg) <= tol, "avg %s n=%d [%zu]: got %.17g want %.17g tol %g", t->name, n, i, g, avg, tol);
      }
      free(ranks);
      free(acc - 1);
    }
  }
}

static void testTypesAndErrors(void) {
  for (size_t ti = 0; ti < NTYPES; ti++) {
    EXPECT(chrTypeSize(kTypes[ti].type) == (size_t)kTypes[ti].size, "size %s", kTypes[ti].name);
    EXPECT(strcmp(chrTypeName(kTypes[ti].type), kTypes[ti].name) == 0, "name %s", kTypes[ti].name);
  }
  EXPECT(chrTypeSize(ncclNumTypes) == 0 && chrTypeSize((ncclDataType_t)-1) == 0, "invalid type size");
  EXPECT(chrTypeName(ncclNumTypes) != NULL, "invalid type name");
  chrRedOp op;
  float one = 1.0f;
  EXPECT(chrRedOpFromBuiltin(ncclSum, ncclNumTypes, 2, &op) == ncclInvalidArgument, "bad type");
  EXPECT(chrRedOpFromBuiltin(ncclNumOps, ncclFloat, 2, &op) == ncclInvalidArgument, "bad op");
  EXPECT(chrRedOpFromBuiltin(ncclAvg, ncclFloat, 0, &op) == ncclInvalidArgument, "bad nranks");
  EXPECT(chrRedOpFromBuiltin(ncclAvg, ncclFloat, 2, NULL) == ncclInvalidArgument, "NULL out");
  EXPECT(chrRedOpPreMulSum(ncclNumTypes, &one, &op) == ncclInvalidArgument, "bad type");
  EXPECT(chrRedOpPreMulSum(ncclFloat, NULL, &op) == ncclInvalidArgument, "NULL scalar");
  /* Behaviour stated in reduce.h: NaN propagation in max/min, signed vs unsigned. */
  chrRedOp mx;
  chrRedOpFromBuiltin(ncclMax, ncclFloat, 2, &mx);
  float a[2] = {NAN, 1.0f}, b[2] = {1.0f, NAN}, r[2];
  chrReduce(&mx, r, NULL, a, b, 2);
  EXPECT(isnan(r[0]) && isnan(r[1]), "max propagates NaN");
  chrRedOpFromBuiltin(ncclMax, ncclInt8, 2, &mx);
  int8_t ia = -1, ib = 1, ir;
  chrReduce(&mx, &ir, NULL, &ia, &ib, 1);
  EXPECT(ir == 1, "int8 max signed");
  chrRedOpFromBuiltin(ncclMax, ncclUint8, 2, &mx);
  chrReduce(&mx, &ir, NULL, &ia, &ib, 1);
  EXPECT((uint8_t)ir == 0xff, "uint8 max unsigned");
}

/* ---- --bench ---- */
static double nowSec(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Fill a buffer with moderate values of the type (no NaN, no subnormals, which would time the
 * CPU's slow paths rather than our loops): a tiled pattern of 4096 random elements. */
static void fillBenign(const TypeInfo* t, uint8_t* buf, size_t bytes) {
  size_t sz = (size_t)t->size, pat = 4096;
  for (size_t i = 0; i < pat && i * sz < bytes; i++) {
    double v = (double)(int)(rnd() % 2001 - 1000) / 64.0;
    uint64_t bits = t->cls == CLS_INT ? (uint64_t)(int64_t)v : bitsOf(t, roundStep(t, v));
    storeBits(t, buf + i * sz, bits);
  }
  for (size_t off = pat * sz; off < bytes; off += pat * sz)
    memcpy(buf + off, buf, bytes - off < pat * sz ? bytes - off : pat * sz);
}

static void bench(void) {
  const size_t bytes = 8u << 20;
  uint8_t *a = (uint8_t*)aligned_alloc(64, bytes), *b = (uint8_t*)aligned_alloc(64, bytes),
          *d = (uint8_t*)aligned_alloc(64, bytes);
  memset(a, 1, bytes);
  memset(d, 0, bytes);
  const int iters = 20;
  double best = 1e9;
  for (int rep = 0; rep < 5; rep++) {
    double t0 = nowSec();
    for (int i = 0; i < iters; i++) memcpy(d, a, bytes);
    double t = (nowSec() - t0) / iters;
    if (t < best) best = t;
  }
  printf("memcpy 8 MiB: %6.2f GB/s of output (%6.2f GB/s read+write)\n", bytes / best / 1e9, 2 * bytes / best / 1e9);
  const struct { ncclDataType_t type; ncclRedOp_t op; } cases[] = {
      {ncclFloat, ncclSum},   {ncclFloat, ncclMax},  {ncclDouble, ncclSum}, {ncclInt32, ncclSum},
      {ncclHalf, ncclSum},    {ncclBfloat16, ncclSum}, {ncclFloat8e4m3, ncclSum}, {ncclFloat8e5m2, ncclSum},
      {ncclInt8, ncclProd},   {ncclInt64, ncclMax},  {ncclFloat, ncclAvg},  {ncclHalf, ncclAvg}};
  static const char* opNames[] = {"sum", "prod", "max", "min", "avg"};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    const TypeInfo* t = NULL;
    for (size_t ti = 0; ti < NTYPES; ti++)
      if (kTypes[ti].type == cases[c].type) t = &kTypes[ti];
    chrRedOp op;
    chrRedOpFromBuiltin(cases[c].op, cases[c].type, 4, &op);
    size_t count = bytes / chrTypeSize(cases[c].type);
    for (int mode = 0; mode < 3; mode++) { /* out of place, in place, two outputs */
      best = 1e9;
      for (int rep = 0; rep < 5; rep++) {
        fillBenign(t, a, bytes);
        fillBenign(t, b, bytes);
        double t0 = nowSec();
        for (int i = 0; i < iters; i++)
          chrReduce(&op, mode == 1 ? a : d, mode == 2 ? b : NULL, a, b, count);
        double tm = (nowSec() - t0) / iters;
        if (tm < best) best = tm;
      }
      static const char* modes[] = {"out     ", "in-place", "2 outs  "};
      printf("chrReduce %-8s %-4s %s 8 MiB: %6.2f GB/s of output (%6.2f GB/s read+write)\n",
             chrTypeName(cases[c].type), opNames[cases[c].op], modes[mode], bytes / best / 1e9,
             (mode == 2 ? 4 : 3) * bytes / best / 1e9);
    }
  }
  free(a);
  free(b);
  free(d);
}

int main(int argc, char** argv) {
  refFmtInit(&refHalf);
  refFmtInit(&refBf16);
  refFmtInit(&refE4m3);
  refFmtInit(&refE5m2);
  if (argc > 1 && strcmp(argv[1], "--bench") == 0) {
    bench();
    return 0;
  }
  testTypesAndErrors();
  testReduce();
  testPost();
  testAvg();
  if (failures) {
    fprintf(stderr, "test_reduce: %d failures\n", failures);
    return 1;
  }
  return 0;
}
