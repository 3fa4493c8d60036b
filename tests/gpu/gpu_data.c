/* SPDX-License-Identifier: BSD-3-Clause */
/* gpu_data.c: test data and comparison (gpu_data.h). */
#include "gpu_data.h"

#include <stdio.h>
#include <string.h>
#include "exec/float_convert.h"
#include "nccl.h"

uint64_t chrTestRand(uint64_t* state) {
  uint64_t x = *state;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  *state = x;
  return x * 0x2545F4914F6CDD1Dull;
}

int chrTestTypeSize(int type) {
  static const int sizes[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return type >= 0 && type < 12 ? sizes[type] : 0;
}

const char* chrTestTypeName(int type) {
  static const char* names[] = {"int8", "uint8", "int32", "uint32", "int64", "uint64",
                                "half", "float", "double", "bfloat16", "f8e4m3", "f8e5m2"};
  return type >= 0 && type < 12 ? names[type] : "?";
}

int chrTestTypeIsFloat(int type) { return type >= ncclFloat16; }

/* A value of the form sign * 1.m * 2^(e - bias) with e in [lo, hi]: moderate magnitudes, so sums
 * and products of a few ranks mostly stay finite but still round. */
static uint64_t moderate(uint64_t r, int mantBits, int expBits, int lo, int hi) {
  uint64_t mant = r & ((1ull << mantBits) - 1);
  uint64_t e = (uint64_t)lo + (r >> 20) % (uint64_t)(hi - lo + 1);
  uint64_t sign = (r >> 40) & 1;
  return (sign << (mantBits + expBits)) | (e << mantBits) | mant;
}

void chrTestFill(void* p, int type, size_t count, uint64_t* rng, int specials) {
  static const uint16_t halfSpecial[] = {0x7e00, 0x7c00, 0xfc00, 0x8000, 0x0000, 0x0001, 0x83ff, 0x7bff, 0xfbff};
  static const uint16_t bf16Special[] = {0x7fc0, 0x7f80, 0xff80, 0x8000, 0x0000, 0x0001, 0x807f, 0x7f7f};
  static const uint32_t f32Special[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x7f7fffffu};
  static const uint64_t f64Special[] = {0x7ff8000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                        0x8000000000000000ull, 0x0000000000000001ull, 0x7fefffffffffffffull};
  static const uint8_t e4m3Special[] = {0x7f, 0xff, 0x7e, 0xfe, 0x80, 0x00, 0x01, 0x87};
  static const uint8_t e5m2Special[] = {0x7e, 0x7c, 0xfc, 0x7b, 0xfb, 0x80, 0x01, 0x83};
#define PICK(arr) arr[(r >> 8) % (sizeof(arr) / sizeof(arr[0]))]
  for (size_t i = 0; i < count; i++) {
    uint64_t r = chrTestRand(rng);
    int special = specials && (r % 61) == 0;
    switch (type) {
      case ncclInt8:
      case ncclUint8: ((uint8_t*)p)[i] = (uint8_t)(r >> 32); break;
      case ncclInt32:
      /* Buffers may be misaligned on purpose: every store of more than a byte goes through memcpy. */
      case ncclUint32: {
        uint32_t u = (uint32_t)(r >> 32);
        memcpy((char*)p + 4 * i, &u, 4);
        break;
      }
      case ncclInt64:
      case ncclUint64: memcpy((char*)p + 8 * i, &r, 8); break;
      case ncclFloat16:
      case ncclBfloat16: {
        uint16_t u = type == ncclFloat16 ? (special ? PICK(halfSpecial) : (uint16_t)moderate(r, 10, 5, 8, 20))
                                         : (special ? PICK(bf16Special) : (uint16_t)moderate(r, 7, 8, 120, 132));
        memcpy((char*)p + 2 * i, &u, 2);
        break;
      }
      case ncclFloat32: {
        uint32_t u = special ? PICK(f32Special) : (uint32_t)moderate(r, 23, 8, 120, 132);
        memcpy((char*)p + 4 * i, &u, 4);
        break;
      }
      case ncclFloat64: {
        uint64_t u = special ? PICK(f64Special) : moderate(r, 52, 11, 1016, 1030);
        if (!special) u = (u & ~((1ull << 40) - 1)) | (chrTestRand(rng) >> 24); /* fill the low mantissa bits */
        memcpy((char*)p + 8 * i, &u, 8);
        break;
      }
      case ncclFloat8e4m3: ((uint8_t*)p)[i] = special ? PICK(e4m3Special) : (uint8_t)moderate(r, 3, 4, 4, 10); break;
      case ncclFloat8e5m2: ((uint8_t*)p)[i] = special ? PICK(e5m2Special) : (uint8_t)moderate(r, 2, 5, 12, 18); break;
      default: break;
    }
  }
#undef PICK
}

void chrTestFillBytes(void* p, size_t bytes, uint64_t* rng) {
  size_t i = 0;
  for (; i + 8 <= bytes; i += 8) {
    uint64_t r = chrTestRand(rng);
    memcpy((char*)p + i, &r, 8);
  }
  uint64_t r = chrTestRand(rng);
  for (; i < bytes; i++, r >>= 8) ((uint8_t*)p)[i] = (uint8_t)r;
}

uint64_t chrTestScalar(int type, uint64_t* rng) {
  uint64_t bits = 0;
  chrTestFill(&bits, type, 1, rng, 0);
  if (!chrTestTypeIsFloat(type)) bits &= 0xff; /* small integer scalars keep products readable */
  return bits;
}

static int isNan(const uint8_t* p, int type) {
  uint16_t h;
  uint32_t f;
  uint64_t d;
  switch (type) {
    case ncclFloat16: memcpy(&h, p, 2); return (h & 0x7fff) > 0x7c00;
    case ncclBfloat16: memcpy(&h, p, 2); return (h & 0x7fff) > 0x7f80;
    case ncclFloat32: memcpy(&f, p, 4); return (f & 0x7fffffffu) > 0x7f800000u;
    case ncclFloat64: memcpy(&d, p, 8); return (d & 0x7fffffffffffffffull) > 0x7ff0000000000000ull;
    case ncclFloat8e4m3: return (p[0] & 0x7f) == 0x7f;
    case ncclFloat8e5m2: return (p[0] & 0x7f) > 0x7c;
    default: return 0;
  }
}

int64_t chrTestCompare(const void* got, const void* want, int type, size_t count) {
  const int size = chrTestTypeSize(type);
  const uint8_t* g = (const uint8_t*)got;
  const uint8_t* w = (const uint8_t*)want;
  if (memcmp(g, w, count * (size_t)size) == 0) return -1;
  for (size_t i = 0; i < count; i++) {
    const uint8_t* a = g + i * (size_t)size;
    const uint8_t* b = w + i * (size_t)size;
    if (memcmp(a, b, (size_t)size) == 0) continue;
    if (chrTestTypeIsFloat(type) && isNan(a, type) && isNan(b, type)) continue;
    return (int64_t)i;
  }
  return -1;
}

void chrTestFormat(const void* p, int type, char* buf, size_t len) {
  uint64_t bits = 0;
  memcpy(&bits, p, (size_t)chrTestTypeSize(type));
  double v = 0;
  switch (type) {
    case ncclInt8: v = (int8_t)bits; break;
    case ncclUint8: v = (uint8_t)bits; break;
    case ncclInt32: v = (int32_t)bits; break;
    case ncclUint32: v = (uint32_t)bits; break;
    case ncclInt64: v = (double)(int64_t)bits; break;
    case ncclUint64: v = (double)bits; break;
    case ncclFloat16: v = chrHalfToFloat((uint16_t)bits); break;
    case ncclFloat32: { float f; memcpy(&f, &bits, 4); v = f; break; }
    case ncclFloat64: memcpy(&v, &bits, 8); break;
    case ncclBfloat16: v = chrBf16ToFloat((uint16_t)bits); break;
    case ncclFloat8e4m3: v = chrFp8e4m3ToFloat((uint8_t)bits); break;
    case ncclFloat8e5m2: v = chrFp8e5m2ToFloat((uint8_t)bits); break;
    default: break;
  }
  snprintf(buf, len, "%.9g (0x%llx)", v, (unsigned long long)bits);
}
