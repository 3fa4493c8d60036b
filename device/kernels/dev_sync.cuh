/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * dev_sync.cuh: the memory operations the protocols are built from, as explicit PTX so that their
 * ordering does not depend on what the compiler chooses for volatile.
 *
 * SIMPLE: the sender's threads store a slot, the CTA meets at a barrier, then one thread publishes
 * tail with a release store at system scope (a fence.acq_rel.sys followed by the store): by
 * cumulativity through the barrier, every thread's data is visible before tail is. The receiver's
 * thread polls tail with acquire loads and the CTA meets at a barrier before anyone reads the slot,
 * so the reads are ordered after the acquire; slot reads also bypass L1 (ld.global.cg) so no stale
 * line of an earlier use of the slot can be served. System scope keeps the same code right when the
 * peer is another GPU or the host.
 * head: the receiver stores it (relaxed) after the barrier that follows its last read of the slot.
 * Every read's value was consumed (stored elsewhere) before its thread reached that barrier, so no
 * read can still be pending when the sender sees head and overwrites the slot.
 * LL: a line is written with one 16-byte volatile store and read with one 16-byte volatile load;
 * each 8-byte half holds data and flag, and 8-byte accesses are single-copy atomic.
 */
#ifndef CHORUS_DEVICE_DEV_SYNC_CUH_
#define CHORUS_DEVICE_DEV_SYNC_CUH_

#include <stdint.h>
#include "device/kernels/dev_comm.h"

/* Spins between two reads of the host-mapped abort flag (a read crosses PCIe). */
#define CHR_DEV_ABORT_SPINS 4096

__device__ __forceinline__ uint64_t chrLdAcquireSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.acquire.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ uint64_t chrLdRelaxedSys(const uint64_t* p) {
  uint64_t v;
  asm volatile("ld.relaxed.sys.global.u64 %0, [%1];" : "=l"(v) : "l"(p) : "memory");
  return v;
}

__device__ __forceinline__ void chrStReleaseSys(uint64_t* p, uint64_t v) {
  asm volatile("st.release.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void chrStRelaxedSys(uint64_t* p, uint64_t v) {
  asm volatile("st.relaxed.sys.global.u64 [%0], %1;" ::"l"(p), "l"(v) : "memory");
}

__device__ __forceinline__ void chrLLStore(union chrDevLLLine* p, uint64_t data, uint32_t flag) {
  asm volatile("st.volatile.global.v4.u32 [%0], {%1, %2, %3, %4};" ::"l"(p), "r"((uint32_t)data), "r"(flag),
               "r"((uint32_t)(data >> 32)), "r"(flag)
               : "memory");
}

__device__ __forceinline__ void chrLLLoad(const union chrDevLLLine* p, uint32_t* d1, uint32_t* f1, uint32_t* d2,
                                          uint32_t* f2) {
  asm volatile("ld.volatile.global.v4.u32 {%0, %1, %2, %3}, [%4];"
               : "=r"(*d1), "=r"(*f1), "=r"(*d2), "=r"(*f2)
               : "l"(p)
               : "memory");
}

/* Named barrier `id` (1..15; 0 is __syncthreads): it completes once n threads (a multiple of 32)
 * have arrived, and orders memory among them as __syncthreads does. */
__device__ __forceinline__ void chrBarSync(int id, int n) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(n) : "memory");
}

/* Every wait loop counts its spins with one of these and calls poll(): true once the comm is
 * aborted (seen by this thread or another of the CTA), and the loop must give up. */
struct chrDevAbort {
  volatile uint32_t* flag;     /* host-mapped */
  volatile int* cta;           /* shared: some thread of the CTA saw the abort */
  int spins;

  __device__ __forceinline__ bool poll() {
    if (*cta) return true;
    if (++spins < CHR_DEV_ABORT_SPINS) return false;
    spins = 0;
    if (*flag == 0) return false;
    *cta = 1;
    return true;
  }
};

#endif /* CHORUS_DEVICE_DEV_SYNC_CUH_ */
