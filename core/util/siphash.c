/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * siphash.c: SipHash-2-4, written from the paper's description (siphash.h): the state is four
 * 64-bit words; each 8-byte little-endian word of the message goes through 2 rounds, the last word
 * carries the length in its top byte, and 4 rounds finish.
 */
#include "util/siphash.h"

static inline uint64_t rotl(uint64_t x, int b) { return (x << b) | (x >> (64 - b)); }

#define SIP_ROUND(v0, v1, v2, v3) \
  do {                            \
    v0 += v1;                     \
    v1 = rotl(v1, 13);            \
    v1 ^= v0;                     \
    v0 = rotl(v0, 32);            \
    v2 += v3;                     \
    v3 = rotl(v3, 16);            \
    v3 ^= v2;                     \
    v0 += v3;                     \
    v3 = rotl(v3, 21);            \
    v3 ^= v0;                     \
    v2 += v1;                     \
    v1 = rotl(v1, 17);            \
    v1 ^= v2;                     \
    v2 = rotl(v2, 32);            \
  } while (0)

static uint64_t load64(const unsigned char* p, size_t n) {
  uint64_t w = 0;
  for (size_t i = 0; i < n; i++) w |= (uint64_t)p[i] << (8 * i);
  return w;
}

uint64_t chrSipHash24(uint64_t k0, uint64_t k1, const void* data, size_t len) {
  const unsigned char* p = data;
  uint64_t v0 = k0 ^ 0x736f6d6570736575ull, v1 = k1 ^ 0x646f72616e646f6dull;
  uint64_t v2 = k0 ^ 0x6c7967656e657261ull, v3 = k1 ^ 0x7465646279746573ull;
  size_t whole = len & ~(size_t)7;
  for (size_t i = 0; i < whole; i += 8) {
    uint64_t m = load64(p + i, 8);
    v3 ^= m;
    SIP_ROUND(v0, v1, v2, v3);
    SIP_ROUND(v0, v1, v2, v3);
    v0 ^= m;
  }
  uint64_t last = load64(p + whole, len - whole) | ((uint64_t)(len & 0xff) << 56);
  v3 ^= last;
  SIP_ROUND(v0, v1, v2, v3);
  SIP_ROUND(v0, v1, v2, v3);
  v0 ^= last;
  v2 ^= 0xff;
  for (int r = 0; r < 4; r++) SIP_ROUND(v0, v1, v2, v3);
  return v0 ^ v1 ^ v2 ^ v3;
}
