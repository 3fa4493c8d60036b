/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * siphash.h: SipHash-2-4 (Aumasson and Bernstein, 2012), a keyed 64-bit pseudo-random function.
 * Where a value derived from a key travels the network (the bootstrap's join secret), it must not
 * give the key away: a PRF's output tells nothing of its 128-bit key.
 */
#ifndef CHORUS_SIPHASH_H_
#define CHORUS_SIPHASH_H_

#include <stddef.h>
#include <stdint.h>

/* SipHash-2-4 of len bytes at data under the key (k0, k1), as the reference defines it. */
uint64_t chrSipHash24(uint64_t k0, uint64_t k1, const void* data, size_t len);

#endif /* CHORUS_SIPHASH_H_ */
