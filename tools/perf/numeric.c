/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * numeric.c: datatype table and conversions (see numeric.h). The small float formats are handled by
 * one generic encoder/decoder parameterised by exponent and mantissa width.
 */
#include "numeric.h"

#include <math.h>
#include <string.h>
#include <strings.h>

static const chrNumType types[ncclNumTypes] = {
    {"int8", ncclInt8, 1, 0, 1, 0, 0, 0, INT8_MAX, 0},
    {"uint8", ncclUint8, 1, 0, 0, 0, 0, 0, UINT8_MAX, 0},
    {"int32", ncclInt32, 4, 0, 1, 0, 0, 0, INT32_MAX, 0},
    {"uint32", ncclUint32, 4, 0, 0, 0, 0, 0, UINT32_MAX, 0},
    {"int64", ncclInt64, 8, 0, 1, 0, 0, 0, INT64_MAX, 0},
    {"uint64", ncclUint64, 8, 0, 0, 0, 0, 0, INT64_MAX, 0},
    {"half", ncclFloat16, 2, 1, 1, 5, 10, 0, 1 << 11, 0x1p-11},
    {"float", ncclFloat32, 4, 1, 1, 8, 23, 0, 1 << 24, 0x1p-24},
    {"double", ncclFloat64, 8, 1, 1, 11, 52, 0, (int64_t)1 << 53, 0x1p-53},
    {"bfloat16", ncclBfloat16, 2, 1, 1, 8, 7, 0, 1 << 8, 0x1p-8},
    {"f8e4m3", ncclFloat8e4m3, 1, 1, 1, 4, 3, 1, 1 << 4, 0x1p-4},
    {"f8e5m2", ncclFloat8e5m2, 1, 1, 1, 5, 2, 0, 1 << 3, 0x1p-3},
};

const chrNumType* chrNumTypeInfo(ncclDataType_t type) {
  if ((int)type < 0 || (int)type >= ncclNumTypes) return NULL;
  return &types[type];
}

int chrNumTypeFromName(const char* name, ncclDataType_t* type) {
  static const struct {
    const char* alias;
    ncclDataType_t type;
  } aliases[] = {
      {"char", ncclInt8},         {"int", ncclInt32},       {"fp16", ncclFloat16},       {"float16", ncclFloat16},
      {"float32", ncclFloat32},   {"fp32", ncclFloat32},    {"float64", ncclFloat64},    {"fp64", ncclFloat64},
      {"bf16", ncclBfloat16},     {"e4m3", ncclFloat8e4m3}, {"e5m2", ncclFloat8e5m2},    {"fp8e4m3", ncclFloat8e4m3},
      {"fp8e5m2", ncclFloat8e5m2}, {"float8e4m3", ncclFloat8e4m3}, {"float8e5m2", ncclFloat8e5m2},
  };
  for (int t = 0; t < ncclNumTypes; t++) {
    if (strcasecmp(name, types[t].name) == 0) {
      *type = (ncclDataType_t)t;
      return 0;
    }
  }
  for (size_t i = 0; i < sizeof(aliases) / sizeof(aliases[0]); i++) {
    if (strcasecmp(name, aliases[i].alias) == 0) {
      *type = aliases[i].type;
      return 0;
    }
  }
  return -1;
}

uint64_t chrNumLoad(const void* buf, size_t index, int size) {
  const unsigned char* p = (const unsigned char*)buf + index * (size_t)size;
  switch (size) {
    case 1: return p[0];
    case 2: { uint16_t v; memcpy(&v, p, 2); return v; }
    case 4: { uint32_t v; memcpy(&v, p, 4); return v; }
    default: { uint64_t v; memcpy(&v, p, 8); return v; }
  }
}

void chrNumStore(void* buf, size_t index, int size, uint64_t bits) {
  unsigned char* p = (unsigned char*)buf + index * (size_t)size;
  switch (size) {
    case 1: p[0] = (unsigned char)bits; break;
    case 2: { uint16_t v = (uint16_t)bits; memcpy(p, &v, 2); break; }
    case 4: { uint32_t v = (uint32_t)bits; memcpy(p, &v, 4); break; }
    default: memcpy(p, &bits, 8); break;
  }
}

/* Small float with E exponent bits and M mantissa bits, IEEE-style bias; finiteOnly selects the
 * e4m3 "fn" variant (all-ones exponent still holds numbers; only S.1111.111 is NaN). */
static uint64_t encodeSmallFloat(double v, int E, int M, int finiteOnly) {
  const int bias = (1 << (E - 1)) - 1;
  const uint64_t signBit = (uint64_t)(signbit(v) ? 1 : 0) << (E + M);
  const uint64_t expOnes = ((uint64_t)1 << E) - 1;
  const uint64_t nanMag = finiteOnly ? (expOnes << M) | (((uint64_t)1 << M) - 1) : (expOnes << M) | ((uint64_t)1 << (M - 1));
  const uint64_t infMag = finiteOnly ? nanMag : expOnes << M;
  const uint64_t maxMag = finiteOnly ? (expOnes << M) | (((uint64_t)1 << M) - 2) : ((expOnes - 1) << M) | (((uint64_t)1 << M) - 1);
  if (isnan(v)) return signBit | nanMag;
  if (isinf(v)) return signBit | infMag;
  double a = fabs(v);
  if (a == 0.0) return signBit;
  int e;
  frexp(a, &e);
  int unbiased = e - 1; /* a is in [2^unbiased, 2^(unbiased+1)) */
  const int minUnbiased = 1 - bias;
  uint64_t mag;
  if (unbiased < minUnbiased) {
    /* Subnormal: multiples of 2^(minUnbiased - M). Rounding up to 2^M lands exactly on the
     * smallest normal number, whose encoding is the same integer. */
    mag = (uint64_t)rint(ldexp(a, M - minUnbiased));
  } else {
    if (unbiased > 4 * bias + 8) return signBit | infMag; /* far out of range; keeps the shift small */
    double q = rint(ldexp(a, M - unbiased)); /* in [2^M, 2^(M+1)] */
    if (q >= ldexp(1.0, M + 1)) {
      q = ldexp(1.0, M);
      unbiased++;
    }
    mag = ((uint64_t)(unbiased + bias) << M) | ((uint64_t)q - ((uint64_t)1 << M));
  }
  if (mag > maxMag) return signBit | infMag;
  return signBit | mag;
}

static double decodeSmallFloat(uint64_t bits, int E, int M, int finiteOnly) {
  const int bias = (1 << (E - 1)) - 1;
  const uint64_t expOnes = ((uint64_t)1 << E) - 1;
  const uint64_t manMask = ((uint64_t)1 << M) - 1;
  int sign = (int)((bits >> (E + M)) & 1);
  uint64_t ex = (bits >> M) & expOnes;
  uint64_t man = bits & manMask;
  double v;
  if (finiteOnly && ex == expOnes && man == manMask) {
    v = NAN;
  } else if (!finiteOnly && ex == expOnes) {
    v = man ? NAN : INFINITY;
  } else if (ex == 0) {
    v = ldexp((double)man, 1 - bias - M);
  } else {
    v = ldexp((double)(man | ((uint64_t)1 << M)), (int)ex - bias - M);
  }
  return sign ? -v : v;
}

static uint64_t truncateToWidth(uint64_t v, int size) {
  return size == 8 ? v : v & ((((uint64_t)1) << (size * 8)) - 1);
}

uint64_t chrNumEncodeInt(ncclDataType_t type, int64_t value) {
  const chrNumType* t = chrNumTypeInfo(type);
  if (t == NULL) return 0;
  if (!t->isFloat) return truncateToWidth((uint64_t)value, t->size);
  return chrNumEncode(type, (double)value);
}

uint64_t chrNumEncode(ncclDataType_t type, double value) {
  const chrNumType* t = chrNumTypeInfo(type);
  if (t == NULL) return 0;
  if (!t->isFloat) {
    if (isnan(value)) return 0;
    double r = trunc(value);
    int64_t i;
    if (t->isSigned || r < 0) {
      i = r >= 0x1p63 ? INT64_MAX : r <= -0x1p63 ? INT64_MIN : (int64_t)r;
    } else {
      uint64_t u = r >= 0x1p64 ? UINT64_MAX : (uint64_t)r;
      return truncateToWidth(u, t->size);
    }
    return truncateToWidth((uint64_t)i, t->size);
  }
  if (type == ncclFloat32) {
    float f = (float)value;
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
  }
  if (type == ncclFloat64) {
    uint64_t b;
    memcpy(&b, &value, 8);
    return b;
  }
  return encodeSmallFloat(value, t->expBits, t->mantBits, t->finiteOnly);
}

int64_t chrNumDecodeInt(ncclDataType_t type, uint64_t bits) {
  const chrNumType* t = chrNumTypeInfo(type);
  if (t == NULL) return 0;
  if (t->isFloat) return (int64_t)chrNumDecode(type, bits);
  bits = truncateToWidth(bits, t->size);
  if (t->isSigned && t->size < 8 && (bits >> (t->size * 8 - 1)) & 1) bits |= ~(uint64_t)0 << (t->size * 8);
  return (int64_t)bits;
}

double chrNumDecode(ncclDataType_t type, uint64_t bits) {
  const chrNumType* t = chrNumTypeInfo(type);
  if (t == NULL) return 0;
  if (!t->isFloat) {
    if (!t->isSigned && t->size == 8) return (double)bits;
    return (double)chrNumDecodeInt(type, bits);
  }
  if (type == ncclFloat32) {
    uint32_t b = (uint32_t)bits;
    float f;
    memcpy(&f, &b, 4);
    return f;
  }
  if (type == ncclFloat64) {
    double d;
    memcpy(&d, &bits, 8);
    return d;
  }
  return decodeSmallFloat(bits, t->expBits, t->mantBits, t->finiteOnly);
}
